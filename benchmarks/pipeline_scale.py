"""perftriage report end to end on 5,000 / 50,000 / 150,000 requests, --jobs 1 against --jobs 2
side by side in one run: wall time, peak memory, bytes per event, and the stages (from the
triage's own progress). Targets (issue 19, this machine, 2 cores): 50,000 requests in under 13 s
wall, 150,000 in under 40 s and linear; peak under 40 bytes per event at 50,000. The peak is the
analysing process's; the C decoder's child process peaked at about 110 MiB RSS on the 50k trace."""

from __future__ import annotations

from .common import babeltrace2_dummy_seconds, child_peak_rss, row, webserver_trace

CODE = """
import time, json
t0 = time.perf_counter()
from perftriage.analysis.triage import Options, run_triage
from perftriage.analysis.findings import render
stages = {{}}
cur = [None, time.perf_counter()]
def progress(p):
    now = time.perf_counter()
    if p.stage != cur[0]:
        if cur[0] is not None:
            stages[cur[0]] = stages.get(cur[0], 0.0) + now - cur[1]
        cur[0], cur[1] = p.stage, now
res = run_triage([{path!r}], Options(jobs={jobs}, keep_graphs=False), progress=progress)  # as perftriage report
now = time.perf_counter()
if cur[0] is not None:
    stages[cur[0]] = stages.get(cur[0], 0.0) + now - cur[1]
text = render(res.report, "md")
stages["report"] = time.perf_counter() - now
print(json.dumps({{"events": res.summary.events, "requests": len(res.requests), "wall": time.perf_counter() - t0,
                  "stages": stages}}))
"""


def measure(path, jobs: int) -> dict:
    import json

    out, wall, peak = child_peak_rss(CODE.format(path=str(path), jobs=jobs))
    m = json.loads(out.splitlines()[-1])
    m["process"] = wall  # with the interpreter's start and imports
    m["peak"] = peak
    return m


def run(quick: bool = False) -> None:
    sizes = [1_000, 2_000, 4_000] if quick else [5_000, 50_000, 150_000]
    per_request = {}
    for requests in sizes:
        path = webserver_trace(requests)
        one, two = measure(path, 1), measure(path, 2)
        ev = two["events"]
        row(f"{two['requests']:,} requests, {ev:,} events", "", "")
        for label, m in (("--jobs 1", one), ("--jobs 2", two)):
            row(f"  {label}", f"{m['process']:.1f} s", f"peak {m['peak'] / 2**20:,.0f} MiB, "
                f"{m['peak'] / max(ev, 1):,.0f} bytes/event")
        row("  --jobs 2 against --jobs 1", f"{one['process'] / two['process']:.2f}x", "")
        stages = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(two["stages"].items(), key=lambda kv: -kv[1])[:6])
        row("  stages (--jobs 2)", "", stages)
        bt = babeltrace2_dummy_seconds(path)
        if bt is not None:
            row("  babeltrace2 -o dummy alone", f"{bt:.1f} s", f"perftriage end to end at {bt / two['process']:.2f}x")
        per_request[requests] = two["process"] / max(two["requests"], 1)
    if len(per_request) > 2:  # the two largest: start-up (imports, ~1 s) weighs on the smallest
        lo, hi = sorted(per_request)[-2:]
        row(f"linearity: time per request at {hi:,} over {lo:,}", f"{per_request[hi] / per_request[lo]:.2f}x",
            "(1.0: linear)")
