"""Reading CTF into columnar chunks: the C decoder and the Python decoder beside babeltrace2's C
core (`babeltrace2 -o dummy`) on the same traces in one run, with each reader's peak memory at
two trace sizes (it must not grow with the trace; for the C decoder, the reading process's: its
decoding child adds about 100 MiB, babeltrace2 and the decoder's buffers), and the C decoder in
two processes, the stream files shared out (split.py). Target: the C decoder at >= 0.7x babeltrace2."""

from __future__ import annotations

import os

from .common import ROOT, babeltrace2_dummy_seconds, child_peak_rss, row, webserver_trace

CODE = """
import os, time
os.environ['PERFTRIAGE_READER'] = {decoder!r}
from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.spec import ReadSpec
from perftriage.analysis.execgraph.events import GRAPH_EVENTS, GRAPH_FIELDS
spec = ReadSpec(fields=dict(GRAPH_FIELDS), events=list(GRAPH_EVENTS))  # what the execution graph reads
t = time.perf_counter()
n = 0
r = CtfReader({paths!r}, spec, decoders={decoders})
for c in r.chunks():
    n += len(c)
print(n, r.events_read, time.perf_counter() - t, r.native, "processes" in r.decoder_name)
"""


def _read(paths, decoder, decoders=1):
    out, _, rss = child_peak_rss(CODE.format(paths=[str(p) for p in paths], decoder=decoder, decoders=decoders))
    n, read, secs, native, split = out.split()
    return int(n), int(read), float(secs), rss, native == "True", split == "True"


def _compare(label, path):
    bt = babeltrace2_dummy_seconds(path)
    c = _read([path], "")
    c2 = _read([path], "", decoders=2)
    py = _read([path], "python")
    n, read = py[0], py[1]
    row(label, f"{read:,} events decoded", f"{n:,} kept for the graph")
    if bt is not None:
        row("  babeltrace2 -o dummy (C, decodes every field)", f"{bt:.2f} s", f"{read / bt:,.0f} events/s")
    split = "C decoder, 2 processes (stream files shared out)" if c2[5] else "C decoder, 2 allowed (1 used: < 64 MiB)"
    for name, (_, _, secs, rss, native, _) in (("C decoder", c), (split, c2), ("Python decoder", py)):
        if name.startswith("C decoder") and not native:
            row("  C decoder", "not built", "make setup builds it (gcc, python3-dev, libbabeltrace2-dev)")
            continue
        ratio = f"; {bt / secs:.2f}x babeltrace2" if bt else ""
        row(f"  {name}", f"{secs:.2f} s", f"{read / secs:,.0f} events/s{ratio}; peak RSS {rss / 2**20:,.0f} MiB")
    if c[4]:
        row("  C decoder against the Python decoder", f"{py[2] / c[2]:.2f}x", "faster")
        row("  2 decoding processes against 1", f"{c[2] / c2[2]:.2f}x", "faster (the stream files shared out)")


def _startup(real) -> None:
    """`perftriage info` on the smallest real trace against importing bt2 and numpy alone, whole
    processes, median of 5 each, interleaved (target: the first within 0.3 s of the second)."""
    import statistics
    import subprocess
    import sys
    import time

    trace = real / "tracevizlab-php-ust"
    if not trace.is_dir():
        return
    runs = {"import": [], "info": []}
    for _ in range(5):
        for name, cmd in (("import", [sys.executable, "-c", "import bt2, numpy"]),
                          ("info", [sys.executable, "-m", "perftriage", "info", str(trace)])):
            t = time.perf_counter()
            subprocess.run(cmd, capture_output=True, check=False)
            runs[name].append(time.perf_counter() - t)
    imp, info = statistics.median(runs["import"]), statistics.median(runs["info"])
    row("start-up: python -c 'import bt2, numpy'", f"{imp:.2f} s", "")
    row("  perftriage info tracevizlab-php-ust (1,871 events)", f"{info:.2f} s",
        f"{info - imp:+.2f} s over the imports (target: within 0.3 s)")


def run(quick: bool = False) -> None:
    sizes = [2_000, 4_000] if quick else [25_000, 50_000]
    for requests in sizes:
        _compare(f"{requests:,}-request trace", webserver_trace(requests))
    real = ROOT.parent / "shared" / "real_traces"
    for name in ("tracevizlab-apt", "tc-many-threads"):
        if (real / name).is_dir():
            _compare(f"real trace {name}", real / name)
    _startup(real)
    if os.environ.get("PERFTRIAGE_READER"):
        row("PERFTRIAGE_READER is set", os.environ["PERFTRIAGE_READER"], "(each reader above sets its own)")
