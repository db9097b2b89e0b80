"""A fleet of 8 traced hosts (4 web hosts and their databases): perftriage report run here and on
a Dask LocalCluster of 2 worker processes (--scheduler), side by side in one run: wall time, the
client's peak memory, and whether the findings are the same. On one 2-core machine the cluster
cannot do much better than the local run, which already decodes beside the analysis; the figure
says what the distributed path costs (set-up, graphs sent back) against what it spreads."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

from .common import CACHE, ROOT, child_peak_rss, row

CODE = """
import json, sys
from perftriage.analysis.triage import Options, run_triage
from perftriage.analysis.findings import render
res = run_triage([{path!r}], Options(scheduler={scheduler!r}, keep_graphs=False))  # as perftriage report
doc = json.loads(render(res.report, "json"))
doc.pop("created", None)
print(json.dumps({{"events": res.summary.events, "requests": len(res.requests), "hosts": len(res.summary.per_host_events),
                  "report": doc}}))
"""


def fleet(pairs: int, requests: int):
    from perftriage.analysis.sim.sample import write_host_pairs

    path = CACHE / f"fleet{2 * pairs}-{requests}"
    if not all((path / f"pair-{i}" / "ground_truth.json").exists() for i in range(1, pairs + 1)):
        CACHE.mkdir(parents=True, exist_ok=True)
        if path.exists():
            shutil.rmtree(path)
        write_host_pairs(path, pairs, requests)
    return path


def run(quick: bool = False) -> None:
    path = fleet(4, 500 if quick else 5_000)
    start = time.perf_counter()
    cluster = subprocess.Popen([sys.executable, "-c", (
        "import signal, sys\n"
        "from distributed import LocalCluster\n"
        "if __name__ == '__main__':\n"
        "    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=':0')\n"
        "    print(c.scheduler_address, flush=True)\n"
        "    sys.stdin.read()\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        address = cluster.stdout.readline().strip()
        row("LocalCluster of 2 worker processes started", f"{time.perf_counter() - start:.1f} s", address)
        results = {}
        first = True
        for label, scheduler in (("here", None), ("--scheduler", address), ("here, again", None),
                                 ("--scheduler, again", address)):
            out, wall, peak = child_peak_rss(CODE.format(path=str(path), scheduler=scheduler))
            m = json.loads(out.splitlines()[-1])
            results[label] = m
            if first:
                row(f"{m['hosts']} hosts, {m['requests']:,} requests, {m['events']:,} events", "", "")
                first = False
            row(f"  report, {label}", f"{wall:.1f} s", f"client peak {peak / 2**20:,.0f} MiB")
        same = results["here"]["report"] == results["--scheduler"]["report"]
        row("findings on the cluster equal the local run's", "yes" if same else "NO", "")
    finally:
        cluster.stdin.close()
        cluster.wait(timeout=60)
