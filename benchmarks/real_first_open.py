"""The real kernel traces opened with no options (issue 15): the whole report as a user runs it.

Per trace of ../shared/real_traces with a kernel part, and the perf recording of tests/data/perf, whole processes side by side in one run:
``babeltrace2 -o dummy`` (the C tool reading everything), ``perftriage report --units markers
--no-thread-metrics`` (reading and building the graph: what a trace costs before any analysis),
and ``perftriage report`` with no options (processes or threads as units, where their time went,
outliers, thread metrics from the trace with 1,000 bootstrap replicates). The ratio of the last
two is what the analyses add to the read.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from .common import ROOT, babeltrace2_dummy_seconds, row

SHARED = Path(os.environ.get("PERFTRIAGE_SHARED", ROOT.parent / "shared"))
TRACES = ["tracevizlab-wget-k-20180802-115406", "tracevizlab-wget-k-20180802-115043", "tracevizlab-cat-kern-ust",
          "tc-many-threads", "tracevizlab-apt"]


def _report(trace: Path, *args: str) -> float:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(trace), "-q", "-o", os.devnull, *args],
                         capture_output=True, text=True, cwd=ROOT)
    dt = time.perf_counter() - t
    if out.returncode not in (0, 4):
        raise RuntimeError(out.stderr)
    return dt


def run(quick: bool = False) -> None:
    for name in TRACES[:2] if quick else [*TRACES, "perf: tests/data/perf/threadpool"]:
        trace = ROOT / name.split(": ")[1] if name.startswith("perf: ") else SHARED / "real_traces" / name
        if not trace.is_dir():
            row(name, "missing", f"{trace} not found")
            continue
        c = babeltrace2_dummy_seconds(trace)
        read = _report(trace, "--units", "markers", "--no-thread-metrics")
        full = _report(trace)
        row(name, "")
        row("  babeltrace2 -o dummy", f"{c:.2f} s" if c is not None else "-")
        row("  report, read + graph only", f"{read:.2f} s")
        row("  report, no options", f"{full:.2f} s",
            f"{full / read:.1f}x the read alone; {full / c:.1f}x babeltrace2" if c else f"{full / read:.1f}x the read")
