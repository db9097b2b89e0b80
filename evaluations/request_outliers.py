"""Request outliers and clusters against the simulator's ground truth (several seeds, cause
mixes and sizes, default settings, no per-seed tuning): precision and recall of the outliers
against the injected anomalous requests, adjusted Rand index of the clusters against the causes.

Targets (issue 5): precision >= 0.95, recall >= 0.95, ARI >= 0.9.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

from perftriage.analysis.requests.outlier_analysis import analyze_requests
from perftriage.analysis.sim.sample import write_webserver_sample
from perftriage.analysis.sim.webserver import DEFAULT_MIX, WebServerConfig
from perftriage.analysis.triage import Options, run_triage

MIXES = {
    "default": DEFAULT_MIX,
    "heavy": {k: 2 * v for k, v in DEFAULT_MIX.items()},
    "three causes": {"write_heavy": 0.03, "slow_disk": 0.02, "connect_retry": 0.01},
}


def cases(quick: bool):
    if quick:
        return [("default", 1, 2500)]
    return [("default", s, 6000) for s in (1, 2, 3)] + [("heavy", 4, 6000), ("three causes", 5, 6000),
                                                        ("default", 6, 2500), ("default", 7, 20000)]


def evaluate(path: Path) -> dict:
    res = run_triage([path], Options())
    ft = res.features
    truth = {r["rid"]: r["cause"] for r in json.loads((path / "ground_truth.json").read_text())["requests"]}
    cause = np.array([truth[int(q.split("rid=")[1])] for q in ft.fields["querystring"]])
    t = time.perf_counter()
    ra = analyze_requests(ft)
    dt = time.perf_counter() - t
    y = cause != "normal"
    out = ra.outliers.outlier
    tp = int((out & y).sum())
    precision = tp / max(1, int(out.sum()))
    recall = tp / max(1, int(y.sum()))
    both = out & y
    ari = adjusted_rand_score(cause[both], ra.clusters.label[both]) if both.sum() > 1 else float("nan")
    return {"requests": len(ft), "anomalous": int(y.sum()), "outliers": int(out.sum()), "precision": precision,
            "recall": recall, "ari": ari, "k": ra.clusters.k, "causes": len(set(cause[y])), "seconds": dt,
            "eps": ra.outliers.params.get("eps")}


def run(quick: bool = False) -> bool:
    tmp = Path(tempfile.mkdtemp(prefix="perftriage-eval-"))
    rows = []
    try:
        print(f"  {'mix':<13} {'seed':>4} {'requests':>8} {'anomalous':>9} {'outliers':>8} {'precision':>9} "
              f"{'recall':>7} {'ARI':>6} {'k':>3}/{'causes':<6} {'eps ms':>7}")
        for mix, seed, n in cases(quick):
            out = tmp / f"{mix.replace(' ', '-')}-{seed}-{n}"
            write_webserver_sample(out, WebServerConfig(requests=n, seed=seed, mix=dict(MIXES[mix])))
            r = evaluate(out)
            rows.append(r)
            print(f"  {mix:<13} {seed:>4} {r['requests']:>8,} {r['anomalous']:>9,} {r['outliers']:>8,} "
                  f"{r['precision']:>9.3f} {r['recall']:>7.3f} {r['ari']:>6.3f} {r['k']:>3}/{r['causes']:<6} "
                  f"{r['eps']:>7.3g}")
            shutil.rmtree(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    p = float(np.mean([r["precision"] for r in rows]))
    rc = float(np.mean([r["recall"] for r in rows]))
    ari = float(np.nanmean([r["ari"] for r in rows]))
    worst = min(min(r["precision"], r["recall"]) for r in rows)
    print(f"  mean: precision {p:.3f}, recall {rc:.3f}, ARI {ari:.3f}; worst single precision/recall {worst:.3f}")
    ok = p >= 0.95 and rc >= 0.95 and ari >= 0.9
    print(f"  targets precision >= 0.95, recall >= 0.95, ARI >= 0.9: {'met' if ok else 'NOT MET'}")
    return ok
