"""Real fleet counters (ASD, ../shared/real_data): flagged points and intervals against expert labels, beside a robust z-score.

ASD: 12 production servers x 19 counters, one point every 5 minutes, 15 labelled days (the test
part). The test part's folder is given to ``perftriage`` as a user would, its files as they are
(one per server, rows numbered, not timed: ``--interval 5m``); the points it flags (``CounterAnalysis.over_time``)
are scored against the labels: point-level precision / recall / F1 over all (server, time)
points, and interval-level (a labelled segment is found when a flagged point falls in it; a
flagged interval is right when it overlaps a labelled segment). Beside it, in the evaluation
only, the simple baseline a user could run: a per-series robust z-score (median and 1.4826 x MAD
over the series, the mean absolute deviation where the MAD is 0), a point flagged when any
counter has |z| > 3.5. Targets: F1 at least 1.5x the baseline's, every labelled server named.
"""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

import numpy as np

from perftriage.analysis.triage import Options, run_triage

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("PERFTRIAGE_SHARED", ROOT.parent / "shared")) / "real_data" / "asd"
STEP = 300  # seconds between two rows (the publishers: one point every 5 minutes)


def load():
    X, L = [], []
    for n in range(1, 13):
        X.append(np.loadtxt(gzip.open(DATA / "test" / f"omi-{n}_test.csv.gz", "rt"), delimiter=",", skiprows=1)[:, 1:])
        L.append(np.loadtxt(gzip.open(DATA / "test_label" / f"omi-{n}_test_label.csv.gz", "rt"), delimiter=",",
                            skiprows=1)[:, 1].astype(bool))
    return np.stack(X), np.stack(L)  # (S, T, C), (S, T)


def baseline(X: np.ndarray, k: float = 3.5) -> np.ndarray:
    med = np.median(X, axis=1, keepdims=True)
    mad = 1.4826 * np.median(np.abs(X - med), axis=1, keepdims=True)
    mean_ad = 1.2533 * np.mean(np.abs(X - med), axis=1, keepdims=True)
    scale = np.where(mad > 0, mad, mean_ad)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(scale > 0, np.abs(X - med) / scale, 0.0)
    return (z > k).any(axis=2)


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    idx = np.flatnonzero(mask)
    if not len(idx):
        return []
    cuts = np.flatnonzero(np.diff(idx) > 1)
    return [(int(idx[a]), int(idx[b])) for a, b in zip(np.r_[0, cuts + 1], np.r_[cuts, len(idx) - 1])]


def scores(pred: np.ndarray, lab: np.ndarray) -> dict:
    tp, fp, fn = (pred & lab).sum(), (pred & ~lab).sum(), (~pred & lab).sum()
    p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    found = total = right = flagged = 0
    named = []
    for s in range(len(lab)):
        segs, ivs = runs(lab[s]), runs(pred[s])
        total += len(segs)
        found += sum(1 for a, b in segs if pred[s, a:b + 1].any())
        flagged += len(ivs)
        ok = sum(1 for a, b in ivs if lab[s, a:b + 1].any())
        right += ok
        if ok:
            named.append(s + 1)
    ip, ir = right / max(flagged, 1), found / max(total, 1)
    return {"p": p, "r": r, "f1": 2 * p * r / max(p + r, 1e-9), "ip": ip, "ir": ir,
            "if1": 2 * ip * ir / max(ip + ir, 1e-9), "named": named, "intervals": flagged}


def run(quick: bool = False) -> bool:
    if not DATA.is_dir():
        print(f"  {DATA} missing: not evaluated")
        return False
    X, L = load()
    S, T, C = X.shape
    # the test part's files as a user gives them: one per server, rows numbered, 5 minutes apart
    t0 = time.perf_counter()
    res = run_triage([DATA / "test"], Options(counter_interval=STEP))
    dt = time.perf_counter() - t0
    ca = res.counters
    ot = ca.over_time
    order = [ca.cs.server_index(f"omi-{s + 1}_test") for s in range(S)]
    k0 = int(round((0 - ca.cs.start) / ca.cs.interval))
    pred = ot.flagged[order][:, k0:k0 + T]
    ours, base = scores(pred, L), scores(baseline(X), L)
    pad = sorted({int(ca.cs.servers[sd.server].split("-")[1]) for sd in ca.servers})
    print(f"ASD test part: {S} servers x {C} counters x {T:,} points, {int(L.sum()):,} labelled points in "
          f"{sum(len(runs(l)) for l in L)} segments; perftriage report {dt:.1f} s")
    print(f"  {'':<28} {'point P':>8} {'R':>6} {'F1':>6}   {'interval P':>10} {'R':>6} {'F1':>6}  intervals  servers named")
    for name, sc in (("perftriage (over time)", ours), ("robust z-score |z| > 3.5", base)):
        print(f"  {name:<28} {sc['p']:>8.3f} {sc['r']:>6.3f} {sc['f1']:>6.3f}   {sc['ip']:>10.3f} {sc['ir']:>6.3f} "
              f"{sc['if1']:>6.3f}  {sc['intervals']:>9}  {len(sc['named'])}/12: {', '.join(map(str, sc['named']))}")
    # what a reader meets first: the intervals in the order the report and the app list them
    ranked = []
    for iv in ot.intervals:
        s = order.index(iv.server)
        a, b = max(iv.start - k0, 0), min(iv.end - k0, T - 1)
        ranked.append(bool(L[s, a:b + 1].any()) if a <= b else False)
    firsts = ", ".join(f"first {k}: {sum(ranked[:k])}/{min(k, len(ranked))}" for k in (ca.params.over_time.max_intervals,
                                                                                       25, 50, 100))
    print(f"  perftriage's intervals in a labelled segment, as ranked (the first are the report's findings): {firsts}")
    own = [lc for lc in ot.changes if not lc.shared]
    right = sum(bool(L[order.index(lc.server), max(lc.start - k0, 0):min(lc.end - k0, T - 1) + 1].any()) for lc in own)
    print(f"  level changes (a series beyond z over one long stretch, said apart from the intervals): {len(own)}, "
          f"{right} in a labelled segment")
    print(f"  PAD's server view (X >= {ca.params.server_x:g}) names: {', '.join(f'omi-{n}' for n in pad) or 'none'}")
    ratio = ours["f1"] / max(base["f1"], 1e-9)
    met = ratio >= 1.5 and len(ours["named"]) == 12
    print(f"  target point F1 >= 1.5x the baseline's ({ratio:.1f}x) and all 12 servers named "
          f"({len(ours['named'])}): {'met' if met else 'NOT MET'}")
    return met
