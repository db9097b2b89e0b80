"""Real pod metrics (OnlineBoutique, ../shared/real_data): does an unusual interval name the injected pod when the fault hits?

The metric folder of the development data (one CSV per pod, one row a minute, Go time strings,
plus the edge latencies and the frontend's) is given to ``perftriage`` as a user would, whole.
The pods are not peers (ten different services): what finds a fault is each pod against its own
recent past. Scored against the fault list (24 faults, 03:53-07:53 UTC, one at a time), over the
faults' period (03:51 to 08:05):

- a fault is **found** when an unusual interval of the injected pod starts from two minutes
  before the injection to ten minutes after it, or to two minutes before the next fault's
  injection when that comes first (the data show a fault for 3-7 minutes; an interval that began
  long before says nothing of this fault, one that began as the next fault hit is the next
  fault's); it is **named first** when, of
  the pods' intervals starting then, the highest ranked is the injected pod's;
- an interval of a pod is **right** when it starts so near a fault on that pod.

Beside it, the baseline a user could run: per pod and counter, a robust z-score over the period
(median and 1.4826 x MAD), an interval where any counter has |z| > 3.5. Target: at least half the
faults found and named first, interval precision above the baseline's.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

import numpy as np

from perftriage.analysis.spans.k8s import service_of_pod
from perftriage.analysis.timeparse import parse_iso_ns
from perftriage.analysis.triage import run_triage

from .counters_real import runs

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("PERFTRIAGE_SHARED", ROOT.parent / "shared")) / "real_data" / "onlineboutique-2022-08-22"
WINDOW = 600  # seconds after the injection in which a fault shows
LEAD = 120  # an interval may start this much before it (one-minute rows, clocks a little apart)
PERIOD = (1661140260, 1661155500)  # 03:51 to 08:05 UTC: the faults' period (none after 07:53)


def faults():
    doc = json.loads((DATA / "2022-08-22-fault_list.json").read_text())
    return sorted(((int(f["inject_timestamp"]), f["inject_pod"], f["inject_type"]) for h in doc for f in doc[h]))


def baseline_intervals(pods: list[str]) -> list[tuple[str, float, float, float]]:
    """(pod, from, to, peak |z|) of the robust z-score baseline over the period."""
    out = []
    for pod in pods:
        path = DATA / "metric" / f"{pod}_metric.csv.gz"
        with gzip.open(path, "rt") as f:
            f.readline()  # the header
            rows = [ln.strip().split(",") for ln in f]
        # the Time column (adservice's TimeStamp is wrong, README)
        t = np.array([parse_iso_ns(r[0]) / 1e9 for r in rows])
        X = np.array([[float(x) if x not in ("", "NaN") else np.nan for x in r[3:]] for r in rows])
        keep = (t >= PERIOD[0]) & (t <= PERIOD[1])
        t, X = t[keep], X[keep]
        with np.errstate(all="ignore"):
            med = np.nanmedian(X, axis=0)
            mad = 1.4826 * np.nanmedian(np.abs(X - med), axis=0)
            z = np.where(mad > 0, np.abs(X - med) / np.where(mad > 0, mad, 1), 0.0)
        z = np.nan_to_num(z)
        for a, b in runs((z > 3.5).any(axis=1)):
            out.append((pod, float(t[a]), float(t[b]), float(z[a:b + 1].max())))
    out.sort(key=lambda x: -x[3] * np.sqrt(1 + (x[2] - x[1]) / 60))
    return out


def _until(fl, i: int) -> float:
    """The latest start of an interval about fault ``i``: WINDOW after it, or where the next
    fault's own window opens (faults come 7 to 34 minutes apart: an interval that starts after
    the next injection is that fault's)."""
    end = fl[i][0] + WINDOW
    return min(end, fl[i + 1][0] - LEAD) if i + 1 < len(fl) else end


def score(intervals, fl, pods) -> dict:
    """intervals: (pod, from, to, ...) ranked; only pods' intervals within the period count."""
    ivs = [iv for iv in intervals if iv[0] in pods and iv[2] >= PERIOD[0] and iv[1] <= PERIOD[1]]
    found = first = 0
    per = []
    for i, (t, pod, kind) in enumerate(fl):
        hits = [iv for iv in ivs if t - LEAD <= iv[1] <= _until(fl, i)]
        ok = any(iv[0] == pod for iv in hits)
        top = bool(hits) and hits[0][0] == pod
        found += ok
        first += top
        per.append((t, pod, kind, ok, top))
    right = sum(1 for iv in ivs if any(iv[0] == pod and t - LEAD <= iv[1] <= _until(fl, i)
                                       for i, (t, pod, _) in enumerate(fl)))
    return {"found": found, "first": first, "n": len(fl), "intervals": len(ivs),
            "precision": right / max(len(ivs), 1), "per": per}


def run(quick: bool = False) -> bool:
    if not (DATA / "metric").is_dir():
        print(f"  {DATA / 'metric'} missing: not evaluated")
        return False
    fl = faults()
    t0 = time.perf_counter()
    res = run_triage([DATA / "metric"])
    dt = time.perf_counter() - t0
    ca = res.counters
    cs, ot = ca.cs, ca.over_time
    pods = names = [s for s in cs.servers if (DATA / "metric" / f"{s}_metric.csv.gz").exists()]  # the PodName column
    ours = [(iv.about or cs.servers[iv.server], cs.start + iv.start * cs.interval, cs.start + (iv.end + 1) * cs.interval)
            for iv in ot.intervals if not iv.twin]  # a twin: the same calls said by the other view
    a, b = score(ours, fl, names), score(baseline_intervals(names), fl, names)
    print(f"OnlineBoutique metric folder: {len(cs.servers)} servers ({len(pods)} pods) x {len(cs.counters)} counters x "
          f"{cs.n_points:,} points; perftriage report {dt:.1f} s; {len(fl)} faults, 03:53-07:53")
    print(f"  {'':<30} {'found':>7} {'named first':>12} {'intervals':>10} {'interval P':>11}")
    for name, sc in (("perftriage (over time)", a), ("robust z-score |z| > 3.5", b)):
        print(f"  {name:<30} {sc['found']:>3}/{sc['n']:<3} {sc['first']:>8}/{sc['n']:<3} {sc['intervals']:>10} "
              f"{sc['precision']:>11.3f}")
    kinds = sorted({k for _, _, k in fl})
    print("  by fault type (perftriage found / named first / faults): " + ", ".join(
        f"{k} {sum(1 for *_, kk, ok, _ in a['per'] if kk == k and ok)}/"
        f"{sum(1 for *_, kk, _, top in a['per'] if kk == k and top)}/{sum(1 for *_, kk in fl if kk == k)}"
        for k in kinds))
    missed = [f"{time.strftime('%H:%M', time.gmtime(t))} {service_of_pod(p) or p} {k}"
              for t, p, k, ok, _ in a["per"] if not ok]
    print(f"  not found: {', '.join(missed) or 'none'}")
    met = a["first"] >= a["n"] / 2 and a["precision"] > b["precision"]
    print(f"  target: half the faults named first ({a['first']}/{a['n']}) and interval precision above the "
          f"baseline's ({a['precision']:.3f} vs {b['precision']:.3f}): {'met' if met else 'NOT MET'}")
    return met
