"""Real spans (OnlineBoutique, ../shared/real_data): about ten minutes of spans read and diagnosed.

Whole processes, side by side in one run: ``perftriage report`` on consecutive one-minute span
files (gzip CSV, about 120,000 spans) with an incident time (call trees, CloudDiag, what changed
per service and pod), beside ``zcat`` of the same files (decompressing alone). Target (issue 16):
under 3 s. Then a large span CSV (the day's spans written out several times over, trace ids and
times shifted) read by the csv module's rows and by polars' columns (span_csv._read_polars), side
by side: time and peak memory of each read in a fresh process.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import ROOT, child_peak_rss, row

READ = """
import perftriage.analysis.spans.span_csv as span_csv
from perftriage.analysis.spans import read_spans
span_csv.POLARS_FROM_BYTES = {limit}
print(len(read_spans([{path!r}])))
"""


def _large_csv(path: Path, copies: int) -> int:
    """The day's spans ``copies`` times over in one CSV, each copy's trace ids and times its own."""
    n = 0
    with open(path, "w") as out:
        out.write("TraceID,SpanID,ParentID,PodName,OperationName,StartTimeUnixNano,EndTimeUnixNano,Duration\n")
        for k in range(copies):
            for f in sorted((DATA / "trace").glob("*_trace.csv.gz")):
                with gzip.open(f, "rt") as g:
                    next(g)
                    for line in g:
                        a = line.rstrip("\n").split(",")
                        if len(a) != 8 or not a[5].isdigit() or not a[6].isdigit():
                            continue
                        a[0] = f"{a[0][:-2]}{k:02d}"
                        a[5], a[6] = str(int(a[5]) + k * 5 * 3600 * 10**9), str(int(a[6]) + k * 5 * 3600 * 10**9)
                        out.write(",".join(a) + "\n")
                        n += 1
    return n

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
    with tempfile.TemporaryDirectory(prefix="perftriage-bench-") as tmp:
        big = Path(tmp) / "spans.csv"
        n = _large_csv(big, 1 if quick else 3)
        runs = {}
        for what, limit in (("the csv module's rows", 1 << 62), ("polars' columns", 0)):
            out, t, peak = child_peak_rss(READ.format(limit=limit, path=str(big)))
            runs[what] = (t, peak, out.split()[0])
        (tc, pc, nc), (tp, pp, np_) = runs.values()
        row(f"a span CSV of {n:,} spans ({big.stat().st_size / 2**20:,.0f} MiB), read", "", "")
        for what, (t, peak, got) in runs.items():
            row(f"  by {what}", f"{t:.2f} s", f"peak {peak / 2**20:,.0f} MiB, {int(got):,} spans")
        row("  columns against rows", f"{tp / tc:.2f}x", f"memory {pp / pc:.2f}x; same spans: {nc == np_}")
