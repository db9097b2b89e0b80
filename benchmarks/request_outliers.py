"""Outliers + clusters + n-grams of 50,000 requests, stage by stage, beside the paper's timings
(outlier detection 5.69 s, clustering 0.04 s, n-gram analysis 17.59 s on a 6-core machine).

Target (issue 5): under 3 s in total on this machine.
"""

from __future__ import annotations

import subprocess
import sys
import time

from perftriage.analysis.requests.clusters import ClusterParams, cluster_outliers
from perftriage.analysis.requests.features import read_features, to_csv
from perftriage.analysis.requests.ngrams import distinctive_ngrams
from perftriage.analysis.requests.outliers import detect_outliers

from .common import CACHE, row, webserver_trace

PAPER = {"outliers": 5.69, "clustering": 0.04, "ngrams": 17.59}


def features(requests: int):
    csv = CACHE / f"features-{requests}.csv"
    if not csv.exists():
        from perftriage.analysis.triage import Options, run_triage

        res = run_triage([webserver_trace(requests)], Options(min_requests_for_outliers=10**9))
        csv.write_text(to_csv(res.features))
    return read_features(csv)


def run(quick: bool = False) -> None:
    n = 4_000 if quick else 50_000
    ft = features(n)
    t0 = time.perf_counter()
    out = detect_outliers(ft)
    t1 = time.perf_counter()
    cl = cluster_outliers(ft, out.outlier)
    t2 = time.perf_counter()
    distinctive_ngrams(ft.syscalls, cl.label, cl.k)
    t3 = time.perf_counter()
    stages = {"outliers": t1 - t0, "clustering": t2 - t1, "ngrams": t3 - t2}
    row(f"{len(ft):,} requests, {int(ft.syscalls.lengths().sum()):,} system calls",
        f"{out.n_outliers:,} outliers", f"k = {cl.k}")
    for name, dt in stages.items():
        row(f"  {name}", f"{dt:.2f} s", f"paper {PAPER[name]:.2f} s ({PAPER[name] / max(dt, 1e-9):.1f}x)")
    total = sum(stages.values())
    paper = sum(PAPER.values())
    row("total", f"{total:.2f} s", f"paper {paper:.2f} s ({paper / total:.1f}x); target < 3 s: "
        f"{'met' if total < 3 else 'NOT MET'}")
    # k-means threads, side by side in this run: one (the default) against every core, on an idle
    # machine and with the other core busy (a host under triage is busy by definition)
    def clustering(threads):
        t = time.perf_counter()
        cluster_outliers(ft, out.outlier, ClusterParams(threads=threads))
        return time.perf_counter() - t

    for load in ("idle", "other core busy"):
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load != "idle" else None
        try:
            one, every = clustering(1), clustering(None)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        row(f"  k-means, {load}", f"one thread {one:.2f} s", f"every core {every:.2f} s ({every / max(one, 1e-9):.1f}x)")
