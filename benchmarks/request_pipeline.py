"""Request pipeline from a kernel + UST trace: reading, execution graph, critical paths and
features, beside babeltrace2's C reader on the same trace; peak memory at 5 M and 10 M events;
the same for two traced hosts (the database on its own host: packets matched, clocks fitted,
paths across).

Targets (issue 4): >= 5 M events with >= 20,000 requests; the paper needed 29.31 s for the
feature extraction of ~45,000 requests; peak memory bounded by the chunk size plus the graph.
"""

from __future__ import annotations

from .common import babeltrace2_dummy_seconds, child_peak_rss, row, webserver_trace

PAPER_FEATURE_S = 29.31

CODE = """
import time
from perftriage.analysis.ctf.pipeline import read_once
from perftriage.analysis.execgraph.builder import GraphBuilder
from perftriage.analysis.requests.markers import MarkerRequests
from perftriage.analysis.requests.features import extract_features

class Builder(GraphBuilder):
    def finish(self):
        global read_peak
        read_peak = _peak_rss()  # every chunk read, the graph not yet laid out
        return super().finish()

t0 = time.perf_counter()
res = read_once([{path!r}], [Builder(), MarkerRequests()])
t1 = time.perf_counter()
graphs, req = res.results
graph_peak = _peak_rss()
ft = extract_features(graphs, req)
t2 = time.perf_counter()
fbytes = sum(a.nbytes for a in (ft.durations, ft.counts, ft.syscalls.values, ft.syscalls.offsets,
                                ft.state_seq.values, ft.state_seq.offsets))
gb = sum(x.nbytes for x in graphs.values())
print(res.reader.events_read, len(req), sum(x.n_intervals for x in graphs.values()), gb, t1 - t0, t2 - t1, read_peak,
      graph_peak, fbytes)
"""


def measure(requests: int, db_host: str = ""):
    path = webserver_trace(requests, db_host=db_host)
    out, wall, rss = child_peak_rss(CODE.format(path=str(path)))
    events, nreq, nint, gbytes, t_read, t_feat, read_peak, graph_peak, fbytes = out.split()
    return dict(path=path, events=int(events), requests=int(nreq), intervals=int(nint), graph=int(gbytes),
                t_read=float(t_read), t_feat=float(t_feat), read_peak=int(read_peak), graph_peak=int(graph_peak),
                features=int(fbytes), peak=rss)


def _mib(b: int) -> str:
    return f"{b / 2**20:,.0f} MiB"


def run(quick: bool = False) -> None:
    main_size = 4_000 if quick else 50_000
    m = measure(main_size)
    events, nreq, t_read, t_feat = m["events"], m["requests"], m["t_read"], m["t_feat"]
    total = t_read + t_feat
    row(f"trace: {nreq:,} requests", f"{events:,} events")
    row("read + execution graph", f"{t_read:.1f} s", f"{events / t_read:,.0f} events/s; {m['intervals']:,} intervals, "
        f"{_mib(m['graph'])}")
    row("critical paths + features of every request", f"{t_feat:.1f} s",
        f"{nreq / t_feat:,.0f} requests/s")
    row("total", f"{total:.1f} s", f"{events / total:,.0f} events/s end to end")
    bt = babeltrace2_dummy_seconds(m["path"])
    if bt is not None:
        row("babeltrace2 -o dummy, same trace", f"{bt:.1f} s",
            f"{events / bt:,.0f} events/s; ours end to end at {bt / total:.2f}x its speed")
    row("paper: feature extraction of ~45,000 requests", f"{PAPER_FEATURE_S:.1f} s",
        f"ours for {nreq:,}: {total:.1f} s ({PAPER_FEATURE_S / total:.1f}x faster)")
    row("peak RSS (this run)", _mib(m["peak"]))
    # memory against trace size: while reading, memory holds chunks (the graph's rows wait in a
    # temporary file); then the graph is laid out, then the features are made
    sizes = [(2_000, "~0.3 M"), (8_000, "~1.3 M")] if quick else [(31_000, "~5 M"), (62_000, "~10 M")]
    for n, label in sizes:
        m = measure(n)
        rest = m["peak"] - m["graph"] - m["features"]
        row(f"{label} events ({m['events']:,}, {m['requests']:,} requests): peak RSS", _mib(m["peak"]),
            f"while reading {_mib(m['read_peak'])}; graph {_mib(m['graph'])} ({m['intervals']:,} intervals), "
            f"peak with the graph {_mib(m['graph_peak'])}; features {_mib(m['features'])}; "
            f"peak - graph - features {_mib(rest)}; {m['t_read'] + m['t_feat']:.1f} s")
    # two traced hosts: the same web server with its database on a second host (packets with
    # their headers matched between the hosts, clocks fitted, critical paths across)
    n = 2_000 if quick else 31_000
    m = measure(n, db_host="db-01")
    one = measure(n)
    row(f"two hosts ({m['events']:,} events, {m['requests']:,} requests)", f"{m['t_read'] + m['t_feat']:.1f} s",
        f"peak RSS {_mib(m['peak'])}, while reading {_mib(m['read_peak'])}, graphs {_mib(m['graph'])}; "
        f"one host, same requests ({one['events']:,} events): {one['t_read'] + one['t_feat']:.1f} s, "
        f"{_mib(one['peak'])}")
