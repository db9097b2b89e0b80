"""The app against perftriage report on every sample, side by side in one run: wall time from
launch until everything is shown (the app's screen) or written (the report), and to the
process's exit; peak memory (the app: its own process's peak plus the analysing child's,
and the highest of their sum sampled every 5 ms, what they hold at the same moment; the report:
its process), each the best of three runs alternated, and once at 50,000 requests.
Target (issue 20): the app within 10% of the report's time and memory. Also the app's first
screen after launch (target: within 1 s), the longest its status line went unchanged while it
analysed and the request list after reading ended (targets: 2 s each)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from .common import PEAK_SNIPPET, ROOT, row, webserver_trace

REPORT = PEAK_SNIPPET + """
import json, sys, time
t0 = time.perf_counter()
from perftriage.cli import main
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["report", "-q", *{args!r}])
assert code in (0, 4) and "## Findings" in out.getvalue(), code  # written in full (4: partial data)
print(json.dumps({{"wall": time.perf_counter() - t0, "done_at": time.time(), "peak": _peak_rss()}}))
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
import threading
together = 0  # the app's and its child's resident memory at the same moment, highest sampled

def _rss(pid):
    try:
        with open(f"/proc/{{pid}}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # the child has exited
        pass
    return 0

def _sample():
    global together
    while True:
        together = max(together, _rss("self") + _rss(early.proc.pid))
        time.sleep(0.005)

threading.Thread(target=_sample, daemon=True).start()
from perftriage.tui.app import PerftriageApp
first = None
stall = 0.0  # the longest time the status line (stage, share done, elapsed) went unchanged
read_end = shown = None  # when the first stage after reading began; when the request list came

async def go():
    global first, stall, read_end, shown
    app = PerftriageApp(args.paths, opts)
    app.start_early(early)  # as run_app does
    async with app.run_test(size=(80, 24)) as pilot:
        first = time.time()  # the first screen is composed and mounted
        status, changed, reading = None, time.time(), False
        while app.running or app.result is None:
            # not pilot.pause(): it waits for a repaint each time, 1.2 s of the app's CPU on the
            # webserver sample, taken from the analysing child on two cores
            await asyncio.sleep(0.02)
            now = time.time()
            text = str(app.query_one("#status").content)
            if text != status:
                stall, status, changed = max(stall, now - changed), text, now
            stage = app._progress.stage if app._progress is not None else ""
            reading = reading or stage.startswith("reading")
            if reading and read_end is None and stage and not stage.startswith("reading"):
                read_end = now
            if shown is None and "requests" in app.parts:
                shown = now
        stall = max(stall, time.time() - changed)
        await pilot.pause(0)  # the result drawn: its messages handled, the screen updated
        return app, time.time()
app, done_at = asyncio.run(go())
import resource
own = resource.getrusage(resource.RUSAGE_SELF)  # the app's CPU: what it takes from the analysing child
print(json.dumps({{"wall": time.perf_counter() - t0, "done_at": done_at, "first_at": first, "peak": _peak_rss(),
                  "child": app.process.peak_rss if app.process else 0, "together": together, "cpu": own.ru_utime + own.ru_stime, "stall": stall,
                  "list_after_read": shown - read_end if shown is not None and read_end is not None else None}}))
"""

CASES = [["sample_traces/webserver"], ["sample_traces/two-hosts"], ["sample_traces/fleet"],
         ["sample_traces/microservices"], ["../shared/real_traces/tracevizlab-apt", "--thread-metrics"]]


def _run(code: str) -> dict:
    launch, t = time.time(), time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    m = json.loads(out.stdout.strip().splitlines()[-1])
    m["process"] = time.perf_counter() - t  # to the process's exit
    m["until"] = m["done_at"] - launch  # to the report written, or the app's screen showing all
    if "first_at" in m:
        m["first"] = m["first_at"] - launch
    return m


def run(quick: bool = False) -> None:
    cases = [(args, 1 if quick else 3) for args in (CASES[:2] if quick else CASES)]
    if not quick:  # the scale where the app's memory mattered (the graphs it used to hold): one run each
        cases.append(([str(webserver_trace(50_000).relative_to(ROOT))], 1))
    for args, repeats in cases:
        # report and app alternately, ``repeats`` times: the best of each (the machine is shared;
        # a single run of either varied by 1.3x from one minute to the next)
        reps, apps = [], []
        for _ in range(repeats):
            reps.append(_run(REPORT.format(args=args)))
            apps.append(_run(APP.format(args=args)))
        rep = min(reps, key=lambda m: m["until"])
        app = min(apps, key=lambda m: m["until"])
        rep_peak = min(m["peak"] for m in reps)
        app_peak = min(m["peak"] + m["child"] for m in apps)
        together = min(m["together"] for m in apps)
        name = " ".join(a.replace("sample_traces/", "").replace("../shared/real_traces/", "")
                        .replace("bench-traces/", "") for a in args)
        row(name + (f" (best of {repeats} runs each, alternated)" if repeats > 1 else ""), "", "")
        row("  perftriage report, until written", f"{rep['until']:.2f} s",
            f"peak {rep_peak / 2**20:,.0f} MiB" + _spread(reps))
        row("  the app, until all is shown", f"{app['until']:.2f} s",
            f"peak {app_peak / 2**20:,.0f} MiB (app {app['peak'] / 2**20:,.0f} + analysis {app['child'] / 2**20:,.0f}); "
            f"first screen {min(m['first'] for m in apps):.2f} s; its own CPU {min(m['cpu'] for m in apps):.2f} s"
            + _spread(apps))
        row("  app against report", f"{app['until'] / rep['until']:.2f}x",
            f"memory {app_peak / rep_peak:.2f}x ({together / rep_peak:.2f}x at the same moment; its analysing child alone "
            f"{min(m['child'] for m in apps) / rep_peak:.2f}x); to the process's exit "
            f"{app['process'] / rep['process']:.2f}x ({app['process']:.2f} s against {rep['process']:.2f} s)")
        lists = [m["list_after_read"] for m in apps if m["list_after_read"] is not None]
        row("  the app's screen while it analyses", f"{max(m['stall'] for m in apps):.2f} s",
            "longest without a change of its status line (target 2 s); the request list shown "
            + (f"{max(lists):.2f} s after reading ended (target 2 s)" if lists else "- (no trace read)")
            + ", the worst of the runs")


def _spread(runs: list[dict]) -> str:
    times = sorted(m["until"] for m in runs)
    return f"; runs {', '.join(f'{t:.2f}' for t in times)} s" if len(times) > 1 else ""
