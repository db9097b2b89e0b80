"""Deviating threads at the paper's case-study scale: 320 threads x 5 metrics x 8,000 samples.

The load test has 8 waves of 40 threads. Timed: the wave level (8 abstractions of 40 threads
each) and the thread level inside every wave (40 threads, 8 times: the whole drill-down), each
split into covariances, distances, clustering, bootstrap (1,000 replicates per scale, 10 scales)
and ranking. Target (issue 7): distances + clustering + bootstrap + ranking under 20 s for the
analysis the tool runs (the top-down walk); drilling into every wave regardless is printed too.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from perftriage.analysis.sim.threadpool import PoolConfig, pool_series
from perftriage.analysis.threads.deviation import ThreadParams, analyse_level
from perftriage.analysis.units import count_of

from .common import ROOT, child_peak_rss, row


def series(waves: int, threads: int, samples: int):
    cfg = PoolConfig(waves=waves, threads_per_wave=threads, samples=samples, seed=3,
                     deviations={"2:5": "memory_leak", "6:11": "io_leak", "4:20": "cpu_spike"})
    return pool_series(cfg)[0]


def run(quick: bool = False) -> None:
    waves, threads, samples = (4, 10, 1000) if quick else (8, 40, 8000)
    t0 = time.perf_counter()
    ts = series(waves, threads, samples)
    row(f"{ts.n_threads} threads x {len(ts.metrics)} metrics x {samples:,} samples",
        f"{len(ts.time):,} samples", f"generated in {time.perf_counter() - t0:.1f} s")
    params = ThreadParams(replicates=1000)
    total: dict[str, float] = {}
    t0 = time.perf_counter()
    top = analyse_level(ts, "wave", params=params)
    wall_top = time.perf_counter() - t0
    for k, v in top.timings.items():
        total[k] = total.get(k, 0.0) + v
    row(f"wave level ({top.k} abstractions)", f"{wall_top:.2f} s",
        ", ".join(f"{k} {v:.2f}" for k, v in top.timings.items()))
    # the walk as the tool runs it (report, app): the wave level, then the threads of the ranked
    # waves and of the waves where the screen finds something that could rank
    from perftriage.analysis.threads.topdown import top_down  # noqa: PLC0415

    t0 = time.perf_counter()
    td = top_down(ts, params)
    wall_walk = time.perf_counter() - t0
    walk_core = sum(r.timings.get(k, 0.0) for r in td.results for k in ("distances", "clustering", "bootstrap",
                                                                        "ranking"))
    drilled = [", ".join(r.within.values()) for r in td.results[1:]]
    row("the walk: wave level + the waves where something could rank", f"{wall_walk:.2f} s",
        f"into {', '.join(drilled) or '-'}; distances + clustering + bootstrap + ranking {walk_core:.2f} s: "
        f"target < 20 s {'met' if walk_core < 20 else 'NOT MET'}")
    # every wave's threads (one deviating thread among 40 rarely moves its wave: the whole
    # drill-down is the stricter cost)
    t0 = time.perf_counter()
    ranked_waves = list(top.names)
    ranked = 0
    for w in ranked_waves:
        res = analyse_level(ts, "thread", {"wave": w}, params=params)
        ranked += len(res.ranking)
        for k, v in res.timings.items():
            total[k] = total.get(k, 0.0) + v
    wall_threads = time.perf_counter() - t0
    row(f"thread level in all {len(ranked_waves)} waves ({threads} threads each)", f"{wall_threads:.2f} s",
        f"{count_of(ranked, 'threads')} ranked; waves {', '.join(ranked_waves) or '-'}")
    for k in ("covariances", "distances", "clustering", "bootstrap", "ranking"):
        row(f"  {k} (all levels)", f"{total.get(k, 0.0):.2f} s")
    core = sum(total.get(k, 0.0) for k in ("distances", "clustering", "bootstrap", "ranking"))
    row("every wave (more than the walk): distances + clustering + bootstrap + ranking", f"{core:.2f} s",
        f"{'under' if core < 20 else 'over'} 20 s (the target is the walk's, above); wall with windows and covariances "
        f"{wall_top + wall_threads:.1f} s")
    distance_kernels(quick)
    pidstat_read(quick)
    row("  why", "", f"one {threads}-thread bootstrap: {threads * (threads - 1) // 2} distances (5x5 generalized "
        f"eigenvalues) x {params.replicates * 10:,} replicates, in {os.cpu_count()} worker processes")


def pidstat_report(path, processes: int, seconds: int) -> int:
    """A pidstat -t -h report of ``processes`` x 9 threads for ``seconds``, each interval's rows
    those of the committed recording's first (tests/data/pidstat), ids renumbered. Its lines."""
    import gzip  # noqa: PLC0415

    src = gzip.decompress((ROOT / "tests" / "data" / "pidstat" / "pidstat-h.txt.gz").read_bytes()).decode().split("\n")
    tmpl = [ln.split() for ln in src[3:13]]
    n = 0
    with open(path, "w") as f:
        f.write(src[0] + "\n\n" + src[2] + "\n")
        for t in range(seconds):
            clock = f"{10 + t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"
            for p in range(processes):
                for i, w in enumerate(tmpl):
                    w = list(w)
                    w[0] = clock
                    if w[2] != "-":
                        w[2] = str(20000 + p * 100)
                    if w[3] != "-":
                        w[3] = str(20000 + p * 100 + i)
                    f.write("  ".join(w) + "\n")
                    n += 1
    return n


def pidstat_read(quick: bool = False) -> None:
    """Reading a whole host's pidstat report (pidstat.py): the rows as numbers in flat arrays,
    not a dict per row (2.6 s and 589 MB for 300,000 lines before, 1.2 s and 204 MB after)."""
    import tempfile  # noqa: PLC0415

    processes, seconds = (10, 120) if quick else (50, 600)
    with tempfile.TemporaryDirectory(prefix="perftriage-bench-") as tmp:
        path = Path(tmp) / "pidstat.txt"
        lines = pidstat_report(path, processes, seconds)
        size = path.stat().st_size
        out, dt, peak = child_peak_rss(
            "from perftriage.analysis.threads.pidstat import read_pidstat\n"
            f"ts = read_pidstat({str(path)!r})\nprint(ts.n_threads, len(ts.time))")
        base, _, base_peak = child_peak_rss("import numpy\nfrom perftriage.analysis.threads import series\nprint(0, 0)")
    threads, samples = out.split()
    row(f"pidstat report, {processes * 9} threads x {seconds} s", f"{dt:.2f} s",
        f"{lines:,} lines ({size / 2**20:.0f} MiB) -> {threads} threads, {int(samples):,} samples; peak "
        f"{peak / 2**20:.0f} MiB, {(peak - base_peak) / 2**20:.0f} MiB over the interpreter with numpy "
        f"({(peak - base_peak) / size:.1f}x the file)")


def distance_kernels(quick: bool = False) -> None:
    """The bootstrap's distances per batch of 50 replicates, side by side: the C kernel (what
    :func:`fm_condensed` runs where it is built), the way it picks without it (LAPACK or the
    component-wise series, by the shape) and the component-wise series always (a few threads of
    many metrics, a wide CSV, made the series 6x slower than LAPACK)."""
    import numpy as np  # noqa: PLC0415

    from perftriage.analysis.threads import covariance as cv  # noqa: PLC0415

    kernel = cv._fm_module()
    ways = [("C kernel", (lambda cov: cv.fm_condensed_c(cov, kernel)) if kernel else None),
            ("numpy's choice", cv.fm_condensed_numpy), ("series always", cv.fm_condensed_fast)]
    rng = np.random.default_rng(0)
    for k, p, far in ((4, 21, False), (4, 5, False), (12, 5, False), (40, 5, False), (12, 12, False), (33, 6, True)):
        # threads alike (one mixing of the metrics for all: the simulator's pools), or each its
        # own (real threads: of the webserver sample's 33 threads x 6 kernel metrics 94% of the
        # pairs have eigenvalues beyond [0.25, 4])
        base = rng.normal(size=(k, p, p) if far else (p, p))
        X = rng.normal(size=(50, k, 30 * p, p)) @ base
        cov = np.swapaxes(X, -1, -2) @ X / (30 * p)
        times = {}
        for name, f in ways:
            if f is None:
                continue
            best = float("inf")
            for _ in range(2 if quick else 5):
                t0 = time.perf_counter()
                f(cov)
                best = min(best, time.perf_counter() - t0)
            times[name] = best
        first = next(iter(times))
        row(f"  distances of 50 replicates, {k} threads x {p} metrics{', each its own' if far else ''}",
            f"{times[first] * 1e3:.1f} ms",
            f"{first}; " + ", ".join(f"{n} {t * 1e3:.1f} ms: {t / times[first]:.2f}x"
                                     for n, t in times.items() if n != first))
    if kernel is None:
        row("  C kernel", "", "not built here (no C compiler): numpy's choice is what runs")
