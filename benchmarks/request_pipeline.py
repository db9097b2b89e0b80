"""Request pipeline from a kernel + UST trace: reading, execution graph, critical paths and
features, beside babeltrace2's C reader on the same trace; peak memory at 5 M and 10 M events.

Targets (issue 4): >= 5 M events with >= 20,000 requests; the paper needed 29.31 s for the
feature extraction of ~45,000 requests; peak memory bounded by the chunk size plus the graph.
"""

from __future__ import annotations

from .common import babeltrace2_dummy_seconds, child_peak_rss, row, webserver_trace

PAPER_FEATURE_S = 29.31

CODE = """
import time
from analysis.pipeline import read_once
from analysis.execgraph import GraphBuilder
from analysis.requests import MarkerRequests
from analysis.features import extract_features
t0 = time.perf_counter()
res = read_once([{path!r}], [GraphBuilder(), MarkerRequests()])
t1 = time.perf_counter()
graphs, req = res.results
ft = extract_features(graphs, req)
t2 = time.perf_counter()
g = next(iter(graphs.values()))
print(res.reader.events_read, len(req), g.n_intervals, g.nbytes, t1 - t0, t2 - t1)
"""


def measure(requests: int):
    path = webserver_trace(requests)
    out, wall, rss = child_peak_rss(CODE.format(path=str(path)))
    events, nreq, nint, gbytes, t_read, t_feat = out.split()
    return path, int(events), int(nreq), int(nint), int(gbytes), float(t_read), float(t_feat), rss


def run(quick: bool = False) -> None:
    main_size = 4_000 if quick else 50_000
    path, events, nreq, nint, gbytes, t_read, t_feat, rss = measure(main_size)
    total = t_read + t_feat
    row(f"trace: {nreq:,} requests", f"{events:,} events")
    row("read + execution graph", f"{t_read:.1f} s", f"{events / t_read:,.0f} events/s; {nint:,} intervals, "
        f"{gbytes / 2**20:,.0f} MiB")
    row("critical paths + features of every request", f"{t_feat:.1f} s",
        f"{nreq / t_feat:,.0f} requests/s")
    row("total", f"{total:.1f} s", f"{events / total:,.0f} events/s end to end")
    bt = babeltrace2_dummy_seconds(path)
    if bt is not None:
        row("babeltrace2 -o dummy, same trace", f"{bt:.1f} s",
            f"{events / bt:,.0f} events/s; ours end to end at {bt / total:.2f}x its speed")
    row("paper: feature extraction of ~45,000 requests", f"{PAPER_FEATURE_S:.1f} s",
        f"ours for {nreq:,}: {total:.1f} s ({PAPER_FEATURE_S / total:.1f}x faster)")
    row("peak RSS (this run)", f"{rss / 2**20:,.0f} MiB")
    sizes = [(2_000, "~0.3 M"), (8_000, "~1.3 M")] if quick else [(31_000, "~5 M"), (62_000, "~10 M")]
    for n, label in sizes:
        _, events, nreq, nint, gbytes, t_read, t_feat, rss = measure(n)
        row(f"peak RSS, {label} events ({events:,}, {nreq:,} requests)", f"{rss / 2**20:,.0f} MiB",
            f"graph {gbytes / 2**20:,.0f} MiB, {nint:,} intervals; {t_read + t_feat:.1f} s")
