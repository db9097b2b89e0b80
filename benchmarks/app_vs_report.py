"""The app against perftriage report on every sample, side by side in one run: wall time until
everything is analysed and peak memory (the app: its own process plus the analysing child;
the report: its process). Target (issue 20): the app within 10% of the report's time and memory.
Also the app's first screen after launch (target: within 1 s)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from .common import PEAK_SNIPPET, ROOT, row

REPORT = PEAK_SNIPPET + """
import json, sys, time
t0 = time.perf_counter()
from perftriage.cli import main
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    main(["report", "-q", *{args!r}])
print(json.dumps({{"wall": time.perf_counter() - t0, "peak": _peak_rss()}}))
"""

APP = PEAK_SNIPPET + """
import asyncio, json, time
t0 = time.perf_counter()
from perftriage.analysis.triage_process import TriageProcess
early = TriageProcess()  # as perftriage open does: first of all
from perftriage.cli.options import triage_options
from perftriage.cli.main import build_parser
args = build_parser().parse_args(["open", *{args!r}])
opts = triage_options(args)
early.send(args.paths, opts)
from perftriage.tui.app import PerftriageApp
first = None

async def go():
    global first
    app = PerftriageApp(args.paths, opts)
    app.start_early(early)  # as run_app does
    async with app.run_test(size=(80, 24)) as pilot:
        first = time.perf_counter() - t0  # the first screen is composed and mounted
        while app.running or app.result is None:
            await pilot.pause(0.02)
        return app
app = asyncio.run(go())
print(json.dumps({{"wall": time.perf_counter() - t0, "first": first, "peak": _peak_rss(),
                  "child": app.process.peak_rss if app.process else 0}}))
"""

CASES = [["sample_traces/webserver"], ["sample_traces/two-hosts"], ["sample_traces/fleet"],
         ["sample_traces/microservices"], ["../shared/real_traces/tracevizlab-apt", "--thread-metrics"]]


def _run(code: str) -> dict:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    m = json.loads(out.stdout.strip().splitlines()[-1])
    m["process"] = time.perf_counter() - t
    return m


def run(quick: bool = False) -> None:
    cases = CASES[:2] if quick else CASES
    for args in cases:
        rep, app = _run(REPORT.format(args=args)), _run(APP.format(args=args))
        row(" ".join(a.replace("sample_traces/", "").replace("../shared/real_traces/", "") for a in args), "", "")
        row("  perftriage report", f"{rep['process']:.2f} s", f"peak {rep['peak'] / 2**20:,.0f} MiB")
        app_peak = app["peak"] + app["child"]
        row("  the app, until all is shown", f"{app['process']:.2f} s",
            f"peak {app_peak / 2**20:,.0f} MiB (app {app['peak'] / 2**20:,.0f} + analysis {app['child'] / 2**20:,.0f}); "
            f"first screen {app['first']:.2f} s")
        row("  app against report", f"{app['process'] / rep['process']:.2f}x", f"memory {app_peak / rep['peak']:.2f}x")
