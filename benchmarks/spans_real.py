"""Real spans (OnlineBoutique, ../shared/real_data): about ten minutes of spans read and diagnosed.

Whole processes, side by side in one run: ``perftriage report`` on consecutive one-minute span
files (gzip CSV, about 120,000 spans) with an incident time (call trees, CloudDiag, what changed
per service and pod), beside ``zcat`` of the same files (decompressing alone). Target (issue 16):
under 3 s.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

from .common import ROOT, row

DATA = Path(os.environ.get("PERFTRIAGE_SHARED", ROOT.parent / "shared")) / "real_data" / "onlineboutique-2022-08-22"
MINUTES = ["07_10", "07_11", "07_12", "07_18", "07_19", "07_26", "07_27"]


def run(quick: bool = False) -> None:
    files = [DATA / "trace" / f"{m}_trace.csv.gz" for m in (MINUTES[:2] if quick else MINUTES)]
    if not all(f.is_file() for f in files):
        row("OnlineBoutique spans", "missing", str(DATA))
        return
    spans = sum(max(0, sum(1 for _ in gzip.open(f)) - 1) for f in files)
    t = time.perf_counter()
    for f in files:
        subprocess.run(["zcat", str(f)], check=True, stdout=subprocess.DEVNULL)
    z = time.perf_counter() - t
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", *map(str, files), "--incident-time", "07:09:43",
                          "-q", "-o", os.devnull], capture_output=True, text=True, cwd=ROOT)
    dt = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    row(f"{len(files)} minutes, {spans:,} spans: zcat", f"{z:.2f} s")
    row("  perftriage report --incident-time (whole process)", f"{dt:.2f} s",
        f"{spans / dt:,.0f} spans/s; target < 3 s for ~120,000: {'met' if dt < 3 or spans < 100_000 else 'NOT MET'}")
