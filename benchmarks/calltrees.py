"""One million spans (OTLP JSON) through CloudDiag: read, assemble call trees, categorise, RPCA.

Two layouts of the same spans: one ExportTraceServiceRequest per line holding 64 requests with
their spans grouped by resource (what a collector's batch processor writes), and one request per
line with a resource per span (the worst case for a reader: a resource to name per span). Each
run in a fresh process, with its peak memory. Beside them, the JSON parsers alone on the
collector file, side by side: Python's json, orjson, msgspec into Python objects, and msgspec
into the reader's typed structs (what perftriage uses), and the read by two processes (what a
machine of two cores does: analysis/spans/halves.py) beside the read by one (--jobs 1). Target
(issue 21): read and diagnosed in under 4 s. Then the same kind of spans as a Jaeger export and as
Zipkin v2 JSON, each read by the reader's structs and by json's whole document (the readers'
fallback, what they did before), side by side in fresh processes: time and peak memory; and as
an Alibaba call-graph table of rpcids (spans/rpc_ids.py): read, diagnosed, the pair it names.
"""

from __future__ import annotations

import shutil

from .common import CACHE, child_peak_rss, row

CODE = r"""
import time
from perftriage.analysis.spans import read_spans
from perftriage.analysis.calltrees.trees import build_call_trees
from perftriage.analysis.calltrees.clouddiag import diagnose
t0 = time.perf_counter()
st = read_spans([{path!r}])
t1 = time.perf_counter()
import resource
child_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # the reading child's, if one read
trees = build_call_trees(st)
t2 = time.perf_counter()
diag = diagnose(trees)
t3 = time.perf_counter()
top = diag.ranking[0] if diag.ranking else None
n_spans, n_cat, nbytes = len(st), len(trees.categories), st.nbytes
del st, trees, diag  # the peak is the first run's: the second read starts from what the first began with
t4 = time.perf_counter()
read_spans([{path!r}], jobs=1)
t5 = time.perf_counter()
print("stages", t1 - t0, t2 - t1, t3 - t2, n_spans, n_cat, nbytes,
      (top.method_name + "@" + top.replica_name) if top else "-", t5 - t4, child_peak)
"""

PARSE = r"""
import json, time
lines = open({path!r}, "rb").read().splitlines()
out = []
def timed(decode):
    t = time.perf_counter()
    for line in lines:
        decode(line)
    return time.perf_counter() - t
out.append(("json", timed(json.loads)))
try:
    import orjson
    out.append(("orjson", timed(orjson.loads)))
except ImportError:
    out.append(("orjson", -1))
import msgspec
out.append(("msgspec", timed(msgspec.json.Decoder().decode)))
from perftriage.analysis.spans.otlp import _DECODER
out.append(("msgspec-typed", timed(_DECODER.decode)))
print(" ".join(f"{{k}}={{v}}" for k, v in out))
"""


JSON_READ = r"""
import time
from pathlib import Path
from perftriage.analysis.spans import {module} as reader
from perftriage.analysis.spans.table import SpanBuilder
b = SpanBuilder()
t = time.perf_counter()
reader.{function}(Path({path!r}), b)
print("read", time.perf_counter() - t, len(b.finish()))
"""


def json_docs(requests: int) -> dict:
    """The generated spans of ``requests`` requests as a Jaeger export and as Zipkin v2 JSON (cached)."""
    import json

    from perftriage.analysis.spans import read_spans

    folder = spans_file(requests)
    out = {"jaeger": folder / "spans.jaeger.json", "zipkin": folder / "spans.zipkin.json"}
    if all(p.exists() for p in out.values()):
        return out
    sp = read_spans([folder / "spans.otlp.jsonl"])
    hexid = [f"{int(x) & (2**64 - 1):016x}" for x in sp.span]
    traces, zipkin = {}, []
    for i in range(len(sp)):
        t, par, rep = int(sp.trace[i]), int(sp.parent[i]), int(sp.replica[i])
        service, op = sp.services[int(sp.service[i])], sp.methods[int(sp.method[i])].split(":", 1)[-1]
        start, dur = int(sp.start[i]) // 1000, int(sp.end[i] - sp.start[i]) // 1000
        tr = traces.setdefault(t, {"traceID": sp.traces[t], "spans": [], "processes": {}})
        tr["processes"][f"p{rep}"] = {"serviceName": service, "tags": [
            {"key": "hostname", "type": "string", "value": sp.replicas[rep]}]}
        tr["spans"].append({"traceID": sp.traces[t], "spanID": hexid[i], "operationName": op,
                            "references": [{"refType": "CHILD_OF", "traceID": sp.traces[t], "spanID": hexid[par]}]
                            if par >= 0 else [], "startTime": start, "duration": dur, "processID": f"p{rep}",
                            "tags": [{"key": "span.kind", "type": "string", "value": "server"},
                                     {"key": "http.method", "type": "string", "value": "GET"}],
                            "logs": [], "warnings": None, "flags": 1})
        zipkin.append({"traceId": sp.traces[t], "id": hexid[i], **({"parentId": hexid[par]} if par >= 0 else {}),
                       "name": op, "timestamp": start, "duration": dur, "kind": "SERVER",
                       "localEndpoint": {"serviceName": service, "ipv4": "10.0.0.1", "port": 8080},
                       "remoteEndpoint": {"ipv4": "10.0.0.2", "port": 33000},
                       "annotations": [{"timestamp": start, "value": "ws"}],
                       "tags": {"k8s.pod.name": sp.replicas[rep], "http.method": "GET"}})
    out["jaeger"].write_text(json.dumps({"data": list(traces.values()), "total": 0, "limit": 0, "offset": 0,
                                         "errors": None}))
    out["zipkin"].write_text(json.dumps(zipkin))
    return out


def rpc_table(requests: int):
    """The generated spans of ``requests`` requests as an Alibaba v2022 call-graph table (cached):
    rpcids by each span's place in its tree, every call logged by its callee (minus its time) and,
    below the root, by its caller too; times in ms from the first span, to the µs."""
    from collections import defaultdict

    from perftriage.analysis.spans import read_spans

    folder = spans_file(requests)
    out = folder / "CallGraph_0.csv"
    if out.exists():
        return out
    sp = read_spans([folder / "spans.otlp.jsonl"])
    kids = defaultdict(list)
    for i in sorted(range(len(sp)), key=lambda i: int(sp.start[i])):
        kids[int(sp.parent[i])].append(i)
    t0, rows = int(sp.start.min()), ["timestamp,traceid,service,rpc_id,um,uminstanceid,rpctype,interface,dm,dminstanceid,rt\n"]
    stack = [(i, "0") for i in kids[-1]]
    while stack:
        i, rpc = stack.pop()
        tid, ms = sp.traces[int(sp.trace[i])], (int(sp.start[i]) - t0) / 1e6
        rt, op = (int(sp.end[i]) - int(sp.start[i])) / 1e6, sp.methods[int(sp.method[i])].split(":", 1)[-1]
        callee, pod = sp.services[int(sp.service[i])], sp.replicas[int(sp.replica[i])]
        p = int(sp.parent[i])
        if p >= 0:
            rows.append(f"{ms:.3f},{tid},S,{rpc},{sp.services[int(sp.service[p])]},{sp.replicas[int(sp.replica[p])]},rpc,"
                        f"{op},{callee},{pod},{rt:.3f}\n")
        rows.append(f"{ms:.3f},{tid},S,{rpc},{'USER' if p < 0 else sp.services[int(sp.service[p])]},,rpc,{op},{callee},"
                    f"{pod},{-rt:.3f}\n")
        stack += [(k, f"{rpc}.{n}") for n, k in enumerate(kids[i], 1)]
    out.write_text("".join(rows))
    return out


def spans_file(requests: int, seed: int = 5, batch: int = 1):
    from perftriage.analysis.sim.microservices import MicroConfig, write_microservice_sample

    path = CACHE / (f"microservices-{requests}-s{seed}" + (f"-b{batch}" if batch > 1 else ""))
    if not (path / "ground_truth.json").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        if path.exists():
            shutil.rmtree(path)
        write_microservice_sample(path, MicroConfig(requests=requests, seed=seed, scenario="replica", write_log=False,
                                                    otlp_batch=batch))
    return path


def run(quick: bool = False) -> None:
    import json

    requests = 10_000 if quick else 185_000  # 5.4 spans per request: about a million spans
    for batch, label in ((64, "collector batches (64 requests a line, spans grouped by resource)"),
                         (1, "one request a line, a resource per span")):
        folder = spans_file(requests, batch=batch)
        truth = json.loads((folder / "ground_truth.json").read_text())
        path = folder / "spans.otlp.jsonl"
        if batch > 1:
            out, _, _ = child_peak_rss(PARSE.format(path=str(path)))
            parsers = dict(kv.split("=") for kv in out.split())
            base = float(parsers["json"])
            row(f"JSON parsers alone on {path.stat().st_size / 1e6:.0f} MB", "",
                "  ".join(f"{k} {float(v):.2f} s ({float(v) / base:.2f}x)" for k, v in parsers.items()
                          if float(v) >= 0))
        out, wall, peak = child_peak_rss(CODE.format(path=str(path)))
        parts = out.split()
        t_read, t_trees, t_diag = map(float, parts[1:4])
        n_spans, n_cat, nbytes = int(parts[4]), int(parts[5]), int(parts[6])
        top, t_one, child = parts[7], float(parts[8]), int(parts[9])
        row(f"{n_spans:,} spans of {requests:,} requests: {label}", f"{path.stat().st_size / 1e6:.0f} MB OTLP JSON",
            f"{n_cat} categories")
        row("  read into the span table", f"{t_read:.2f} s", f"{n_spans / t_read / 1e3:.0f} k spans/s; by one process "
            f"(--jobs 1) {t_one:.2f} s: {t_one / t_read:.2f}x")
        row("  call trees and categories", f"{t_trees:.2f} s", f"{requests / t_trees / 1e3:.0f} k requests/s")
        row("  RPCA and ranking (all categories)", f"{t_diag:.2f} s", "")
        total = t_read + t_trees + t_diag
        row("  total", f"{total:.2f} s", f"target < 4 s: {'met' if total < 4 else 'NOT MET'}")
        row("  peak memory (process)", f"{peak / 2**20:.0f} MiB", f"span table {nbytes / 2**20:.0f} MiB; "
            + (f"the child that read half the file {child / 2**20:.0f} MiB at its peak (a fork: the pages it "
               "shared with this process are counted in both)" if child else "no reading child (one process read it)"))
        slow = {f"{m.replace('.', ':', 1)}@{r}" for m, r in truth["slow_pairs"]}
        row("  first pair", top, "injected" if top in slow else f"NOT injected ({', '.join(sorted(slow))})")
    requests = 10_000 if quick else 100_000
    path = rpc_table(requests)
    truth = json.loads((path.parent / "ground_truth.json").read_text())
    slow = {f"{m.replace('.', ':', 1)}@{r}" for m, r in truth["slow_pairs"]}
    out, _, peak = child_peak_rss(CODE.format(path=str(path)))
    parts = out.split()
    t_read, t_trees, t_diag, n_spans = float(parts[1]), float(parts[2]), float(parts[3]), int(parts[4])
    row(f"{n_spans:,} spans of {requests:,} requests as an Alibaba call-graph table of rpcids "
        f"({path.stat().st_size / 1e6:.0f} MB)", "", "")
    row("  read into the span table", f"{t_read:.2f} s", f"{n_spans / t_read / 1e3:.0f} k spans/s; peak "
        f"{peak / 2**20:,.0f} MiB")
    row("  call trees, RPCA and ranking", f"{t_trees + t_diag:.2f} s", "")
    row("  first pair", parts[7], "injected" if parts[7] in slow else f"NOT injected ({', '.join(sorted(slow))})")
    for fmt, path in json_docs(requests).items():
        runs = []
        for function in ("read", "_read_any"):  # the structs, json's whole document
            out, _, peak = child_peak_rss(JSON_READ.format(module=fmt, function=function, path=str(path)))
            _, t, n = out.split()[:3]
            runs.append((float(t), peak, int(n)))
        (ts, ps, ns), (tj, pj, nj) = runs
        row(f"{ns:,} spans as {fmt.capitalize()} JSON ({path.stat().st_size / 1e6:.0f} MB), read", "", "")
        row("  by the reader's structs", f"{ts:.2f} s", f"peak {ps / 2**20:,.0f} MiB")
        row("  by json's whole document", f"{tj:.2f} s", f"peak {pj / 2**20:,.0f} MiB")
        row("  structs against json", f"{ts / tj:.2f}x", f"memory {ps / pj:.2f}x; same spans: {ns == nj}")
