"""Span readers (OTLP, Jaeger, Zipkin, span CSV, CloudDiag log), call trees and their categories,
Robust PCA, CloudDiag's diagnosis and the baseline comparison."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perftriage.analysis.calltrees.clouddiag import DiagParams, diagnose, span_self_time
from perftriage.analysis.calltrees.compare import compare
from perftriage.analysis.calltrees.rpca import column_cosines, rpca
from perftriage.analysis.calltrees.trees import build_call_trees
from perftriage.analysis.errors import InputError
from perftriage.analysis.sim.microservices import MicroConfig, write_microservice_sample
from perftriage.analysis.spans import read_spans, sniff_format
from perftriage.analysis.spans.ids import to_id64
from perftriage.analysis.spans.table import MISSING_PARENT

from conftest import ROOT

T0 = 1_767_225_600_000_000_000

# one request: web:home -> (auth:verify, db:query -> db:fetch), times in ns
CALLS = [  # span, parent, service, operation, replica, start, end
    (1, None, "web", "home", "web-1", 0, 10_000_000),
    (2, 1, "auth", "verify", "auth-2", 1_000_000, 3_000_000),
    (3, 1, "db", "query", "db-1", 4_000_000, 9_000_000),
    (4, 3, "db", "fetch", "db-1", 5_000_000, 8_000_000),
]
SHAPE = "web:home(auth:verify,db:query(db:fetch))"


def _otlp(path, calls=CALLS, trace="4bf92f3577b34da6a3ce929d0e0e4736"):
    res = {}
    for s, p, svc, op, rep, a, b in calls:
        res.setdefault((svc, rep), []).append({
            "traceId": trace, "spanId": f"{s:016x}", "parentSpanId": f"{p:016x}" if p else "", "name": op,
            "startTimeUnixNano": str(T0 + a), "endTimeUnixNano": str(T0 + b)})
    doc = {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": svc}},
        {"key": "service.instance.id", "value": {"stringValue": rep}}]},
        "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]} for (svc, rep), spans in res.items()]}
    path.write_text(json.dumps(doc) + "\n")
    return path


def _jaeger(path):
    procs, spans = {}, []
    for s, p, svc, op, rep, a, b in CALLS:
        pid = f"p{len(procs) + 1}" if (svc, rep) not in procs else procs[(svc, rep)]
        procs[(svc, rep)] = pid
        spans.append({"traceID": "abc123", "spanID": f"{s:016x}", "operationName": op, "processID": pid,
                      "references": [{"refType": "CHILD_OF", "traceID": "abc123", "spanID": f"{p:016x}"}] if p else [],
                      "startTime": (T0 + a) // 1000, "duration": (b - a) // 1000})
    doc = {"data": [{"traceID": "abc123", "spans": spans, "processes": {
        pid: {"serviceName": svc, "tags": [{"key": "hostname", "type": "string", "value": rep}]}
        for (svc, rep), pid in procs.items()}}], "total": 0, "limit": 0, "offset": 0, "errors": None}
    path.write_text(json.dumps(doc))
    return path


def _zipkin(path):
    spans = [{"traceId": "abc123", "id": f"{s:016x}", **({"parentId": f"{p:016x}"} if p else {}), "name": op,
              "timestamp": (T0 + a) // 1000, "duration": (b - a) // 1000, "kind": "SERVER",
              "localEndpoint": {"serviceName": svc, "ipv4": "10.0.0.1"}, "tags": {"k8s.pod.name": rep}}
             for s, p, svc, op, rep, a, b in CALLS]
    path.write_text(json.dumps(spans))
    return path


def _csv(path, header="trace_id,span_id,parent_span_id,service_name,pod,operation_name,start_time_us,duration_ms"):
    lines = [header]
    for s, p, svc, op, rep, a, b in CALLS:
        lines.append(f"t1,{s},{p or ''},{svc},{rep},{op},{(T0 + a) // 1000},{(b - a) / 1e6}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _log(path, drift=None):
    """The CloudDiag log; ``drift``: per-replica clock offsets (ns) that reorder timestamps."""
    drift = drift or {}
    lines = []
    for s, p, svc, op, rep, a, b in CALLS:
        d = drift.get(rep, 0)
        mid = "req-1" if p is None else str(s)
        caller = "" if p is None else ("req-1" if p == 1 else str(p))
        lines.append((T0 + a + d, f"{rep},{T0 + a + d},req-1,{mid},{caller},{svc}.{op},invoke"))
        lines.append((T0 + b + d, f"{rep},{T0 + b + d},req-1,{mid},{caller},{svc}.{op},return"))
    lines.sort()
    path.write_text("\n".join(text for _, text in lines) + "\n")
    return path


@pytest.mark.parametrize("make,fmt", [(_otlp, "otlp"), (_jaeger, "jaeger"), (_zipkin, "zipkin"), (_csv, "span-csv"),
                                      (_log, "clouddiag-log")])
def test_every_format_gives_the_same_call_tree(tmp_path, make, fmt):
    p = make(tmp_path / f"spans.{fmt}")
    assert sniff_format(p, p.read_bytes()[:65536]) == fmt
    st = read_spans([p])
    assert len(st) == 4 and st.problems.total() == 0
    trees = build_call_trees(st)
    assert len(trees.categories) == 1
    cat = trees.categories[0]
    assert cat.shape == SHAPE
    assert [st.methods[m] for m in cat.methods] == ["web:home", "auth:verify", "db:query", "db:fetch"]
    assert cat.depths == [0, 1, 1, 2] and cat.parents == [-1, 0, 0, 2]
    reps = sorted(st.replicas)
    assert reps == ["auth-2", "db-1", "web-1"]
    # durations survive the unit conversions (µs formats lose nothing here: times are whole µs)
    assert sorted((st.duration // 1000).tolist()) == [2000, 3000, 5000, 10000]
    # self times: web 10-2-5 = 3 ms, db:query 5-3 = 2 ms
    self_t = dict(zip((st.methods[m] for m in st.method), span_self_time(st) // 1_000_000))
    assert self_t == {"web:home": 3, "auth:verify": 2, "db:query": 2, "db:fetch": 3}


def test_clock_drift_cannot_reorder_calls(tmp_path):
    # the auth host runs 50 ms behind and db 30 ms ahead: in the log, auth's invocation comes before
    # the request started and db's after it ended; the tree comes from the mids all the same
    p = _log(tmp_path / "calls.log", drift={"auth-2": -50_000_000, "db-1": 30_000_000})
    text = p.read_text().splitlines()
    assert text[0].startswith("auth-2") and "invoke" in text[0]
    st = read_spans([p])
    trees = build_call_trees(st)
    assert [c.shape for c in trees.categories] == [SHAPE]
    # every duration comes from one host's clock: unchanged by the drift
    assert sorted((st.duration // 1_000_000).tolist()) == [2, 3, 5, 10]


def test_categories_ignore_child_order_in_time(tmp_path):
    # the same tree with auth:verify called after db:query: same category
    later = [CALLS[0], (2, 1, "auth", "verify", "auth-1", 9_000_000, 9_500_000), CALLS[2], CALLS[3]]
    a = _otlp(tmp_path / "a.json", CALLS, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
    b = _otlp(tmp_path / "b.json", later, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
    # and a different tree: db:fetch twice
    other = CALLS + [(5, 3, "db", "fetch", "db-2", 8_000_000, 8_500_000)]
    c = _otlp(tmp_path / "c.json", other, "cccccccccccccccccccccccccccccccc")
    trees = build_call_trees(read_spans([a, b, c]))
    shapes = sorted((cat.shape, cat.size) for cat in trees.categories)
    assert shapes == [("web:home(auth:verify,db:query(db:fetch))", 2),
                      ("web:home(auth:verify,db:query(db:fetch,db:fetch))", 1)]


def test_broken_spans_are_counted_not_fatal(tmp_path):
    rows = ["trace_id,span_id,parent_id,service,host,name,start_ns,end_ns",
            f"t1,1,,web,h1,home,{T0},{T0 + 10}",
            f"t1,2,1,db,h2,query,{T0 + 1},{T0 + 5}",
            f"t1,2,1,db,h2,query,{T0 + 1},{T0 + 6}",  # duplicate id, other times: a conflict
            f"t1,3,99,db,h2,query,{T0 + 1},{T0 + 5}",  # orphan: parent 99 is not in t1
            f"t1,4,1,db,h2,query,{T0 + 9},{T0 + 2}",  # negative duration
            f"t2,7,8,db,h2,a,{T0},{T0 + 1}",  # 7 -> 8 -> 7: a cycle
            f"t2,8,7,db,h2,b,{T0},{T0 + 1}",
            f"t3,9,,db,h2,a,{T0},{T0 + 1}",
            "t3,10,9,db,h2,a,notatime,1",  # unreadable
            "t3,11",  # short row
            ]
    p = tmp_path / "spans.csv"
    p.write_text("\n".join(rows) + "\n")
    st = read_spans([p])
    pr = st.problems
    assert (pr.duplicates, pr.orphans, pr.negative, pr.cycles, pr.unparsable) == (1, 1, 1, 2, 2)
    assert len(st) == 7
    assert (st.duration >= 0).all()
    assert (st.parent == MISSING_PARENT).sum() == 3
    trees = build_call_trees(st)
    # t1 has an orphan, t2 has no root: both left out; t3 is a one-call tree
    assert trees.incomplete == 2
    assert sorted(c.shape for c in trees.categories) == ["db:a"]
    assert any("do not form one call tree" in n for n in trees.notes)


@pytest.mark.parametrize("content,message", [
    (b"", "empty"),
    (b'{"resourceSpans": [', "not valid JSON"),
    (b"trace_id,span_id,start_ns\n1,2,3\n", "lacks"),
])
def test_bad_span_files_give_one_clear_line(tmp_path, content, message):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(InputError) as e:
        if content.startswith(b"trace_id"):
            from perftriage.analysis.spans import span_csv
            from perftriage.analysis.spans.table import SpanBuilder

            span_csv.read(p, SpanBuilder())
        else:
            from perftriage.analysis.triage import run_triage

            run_triage([p])
    text = str(e.value)
    assert message in text and str(p) in text and "\n" not in text


def test_columns_mapping_names_unusual_headers(tmp_path):
    p = _csv(tmp_path / "x.csv", header="req,sid,psid,svc,box,what,begin_us,took_ms")
    from perftriage.analysis.spans import span_csv
    from perftriage.analysis.spans.table import SpanBuilder

    b = SpanBuilder()
    span_csv.read(p, b, {"trace": "req", "span": "sid", "parent": "psid", "replica": "box", "name": "what",
                         "start": "begin_us", "duration": "took_ms"})
    st = b.finish()
    assert [c.shape for c in build_call_trees(st).categories] == [SHAPE]
    assert sorted(st.replicas) == ["auth-2", "db-1", "web-1"]


def _aiops_csv(path, slow_pod: str = "cartservice-1"):
    """Spans as the AIOps challenge exports them (no service column: the pod is cmdb_id; times in
    ms), frontend calling cartservice on two pods, one of them slow from request 200 on."""
    rng = np.random.default_rng(5)
    rows = ["timestamp,cmdb_id,span_id,trace_id,duration,type,status_code,operation_name,parent_span"]
    for i in range(300):
        tid, root, child = f"{i + 1:032x}", f"{2 * i + 1:016x}", f"{2 * i + 2:016x}"
        ts, cart = 1647705600000 + i * 200, f"cartservice-{i % 2}"
        d = int(rng.integers(2, 6)) + (20 if i >= 200 and cart == slow_pod else 0)
        rows.append(f"{ts},frontend-{i % 3},{root},{tid},{d + 3},rpc,0,hipstershop.Frontend/Recv.,")
        rows.append(f"{ts + 1},{cart},{child},{tid},{d},rpc,0,hipstershop.CartService/GetCart,{root}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_aiops_span_csv_is_read_with_its_pods_and_the_slow_pod_named(tmp_path):
    """cmdb_id is the pod (its service from its name), parent_span the parent: the report names the
    slow pod. Before, every span was service '' on replica '?', and comparing the requests before
    and after crashed on calls with no time between two pods (an empty group)."""
    from perftriage.analysis.triage import run_triage

    res = run_triage([_aiops_csv(tmp_path / "trace_jaeger-span.csv")])
    assert sorted(res.spans.services) == ["cartservice", "frontend"]
    assert "cartservice-1" in res.spans.replicas and "?" not in res.spans.replicas
    first = res.report.findings[0]
    assert "cartservice" in first.title and "cartservice-1" in first.subject and "cartservice-0" not in first.title
    assert not any("no service nor replica" in n for n in res.report.notes)


def test_a_span_csv_without_service_or_parent_columns_says_so(tmp_path):
    from perftriage.analysis.triage import run_triage

    p = tmp_path / "spans.csv"
    p.write_text("trace_id,span_id,start_ms,duration_ms\n" + "".join(f"t{i},{i + 1:016x},{1000 + i},5\n"
                                                                        for i in range(30)))
    notes = run_triage([p]).report.notes
    assert any(n.startswith("spans.csv: no parent column") and "--columns parent=COLUMN" in n for n in notes)
    assert any(n.startswith("spans.csv: no service nor replica column") and "--columns service=COLUMN" in n
               for n in notes)
    assert any(n.startswith("spans.csv: no operation column") and "--columns name=COLUMN" in n for n in notes)


def _same_table(a, b) -> None:
    for k in ("trace", "span", "parent", "method", "service", "replica", "start", "end", "traces", "methods",
              "services", "replicas", "error"):
        assert np.array_equal(np.asarray(getattr(a, k), object), np.asarray(getattr(b, k), object)), k
    assert a.problems.lines() == b.problems.lines() and a.notes == b.notes


ROWS = [  # (trace, span, parent, pod, operation, start ns, end ns)
    ("T1", "00000000000000a1", "Root", "cart-6d9f8b7c5-x2kq9", "GetCart", 1661140374351773094, 1661140374352773094),
    ("T1", " 00000000000000A2", "00000000000000a1 ", "redis-cart-0", "HGET", 1661140374351800000, 1661140374351900000),
    ("T2", "ffffffffffffffff", "", "cart-6d9f8b7c5-q7zzz", "GetCart", 1661140374361773094, 1661140374362773094),
    ("T2", "0123456789abcdef0123456789abcdef", "ffffffffffffffff", "frontend-1", "", 1661140374361800000,
     1661140374361900000),
    ("T3", "00000000000000b1", "0000000000000000", "frontend-1", "Recv", 1661140374371773094, 1661140374372773094),
    ("T3", "00000000000000b2", "NULL", "", "Recv", 1661140374371773095, 1661140374372773094),
]


@pytest.mark.parametrize("variant", ["comma", "tab", "blank lines", "duration", "no service", "no parent",
                                     "gzip", "decimal ids", "ragged", "iso times", "a time beyond int64",
                                     "cut while written", "gzip cut short", "otel status", "http status",
                                     "error flag", "status and decimal ids"])
def test_large_span_csvs_columnar_path_reads_what_the_row_paths_read(tmp_path, monkeypatch, variant):
    """A large span CSV is read by polars a batch at a time (span_csv._read_polars); the table is the
    csv module's, row for row, strings coded in the same order (pods to services merged, roots
    as 'root', '', zeros or 'null', ids with spaces or upper case, 128-bit ids cut to their low 64
    bits); a file it cannot read whole (decimal ids, a ragged row, ISO times, a time beyond int64
    nanoseconds, a last row cut short) is read by the row paths instead, with what they say of
    it; a gzip file cut short is refused alike."""
    import gzip

    import perftriage.analysis.spans.span_csv as span_csv

    sep = "\t" if variant == "tab" else ","
    header = ["trace_id", "span_id", "parent_span_id", "pod", "operation", "start_ns",
              "duration_ns" if variant == "duration" else "end_ns"]
    rows = []
    for k in range(40):  # several batches of 16 rows
        for t, sid, par, pod, op, st, en in ROWS:
            sid = str(int(sid, 16) % 10**12 + k) if variant == "decimal ids" else sid
            st, en = st + k * 10**9, en + k * 10**9
            last = str(en - st) if variant == "duration" else str(en)
            if variant == "iso times" and k == 39:
                st = "2022-08-22T04:32:54.351Z"
            if variant == "a time beyond int64" and k == 20:
                st = 99999999999999999999
            rows.append([f"{t}-{k}", sid, "" if variant == "decimal ids" else par, pod, op, str(st), last])
    if variant == "no service":
        header[3], rows = "status", [r[:3] + ["ok"] + r[4:] for r in rows]
    if variant == "no parent":
        header, rows = header[:2] + header[3:], [r[:2] + r[3:] for r in rows]
    failing = 0  # rows whose status says the span failed
    if "status" in variant or variant == "error flag":
        name, values = {"otel status": ("status_code", ("STATUS_CODE_ERROR", "STATUS_CODE_UNSET")),
                        "http status": ("http.status_code", ("503", "200")),
                        "error flag": ("error", ("true", "")),
                        "status and decimal ids": ("otel.status_code", ("ERROR", "OK"))}[variant]
        header = header + [name]
        rows = [r + [values[0] if i % 7 == 3 else values[1]] for i, r in enumerate(rows)]
        failing = sum(1 for i in range(len(rows)) if i % 7 == 3)
        if variant == "status and decimal ids":  # the row path reads the status too
            rows = [[r[0], str(int(r[1].strip(), 16) % 10**12)] + r[2:] for r in rows]
    lines = [sep.join(header)] + [sep.join(r) for r in rows]
    if variant == "blank lines":
        lines[5:5], lines[30:30] = [""], ["", ""]
    if variant == "ragged":
        lines[17] = lines[17].rsplit(",", 1)[0]  # a row cut short
    body = ("\n".join(lines) + "\n").encode()
    if variant == "cut while written":  # a column read by neither path last, the last row cut before it
        body = ("\n".join(f"{line}{sep}{'status' if i == 0 else 'ok'}" for i, line in enumerate(lines))
                + "\n").encode()[:-4]
    p = tmp_path / ("spans.csv.gz" if "gzip" in variant else "spans.csv")
    p.write_bytes(gzip.compress(body)[:-40] if variant == "gzip cut short" else gzip.compress(body)
                  if variant == "gzip" else body)
    if variant == "gzip cut short":
        with pytest.raises(InputError) as rows_said:
            read_spans([p])
        monkeypatch.setattr(span_csv, "POLARS_FROM_BYTES", 0)
        with pytest.raises(InputError) as columns_said:
            read_spans([p])
        assert str(columns_said.value) == str(rows_said.value) and str(p) in str(rows_said.value)
        return
    rows_read = read_spans([p])
    monkeypatch.setattr(span_csv, "POLARS_FROM_BYTES", 0)
    monkeypatch.setattr(span_csv, "POLARS_BATCH", 16)
    columnar = span_csv._read_polars
    took = []
    monkeypatch.setattr(span_csv, "_read_polars", lambda *a: took.append(columnar(*a)) or took[-1])
    both = read_spans([p])
    _same_table(both, rows_read)
    assert took == [variant not in ("decimal ids", "ragged", "iso times", "a time beyond int64", "cut while written",
                                    "status and decimal ids")]
    assert len(both) == 240 - (variant in ("ragged", "cut while written")) - (variant == "a time beyond int64") * 6
    if failing:
        assert int(both.error.sum()) == failing  # what the status column says, whichever path read it
    elif variant not in ("no service", "cut while written"):
        assert both.error is None  # no status column: nothing known of errors


def _jaeger_variants():
    """Jaeger documents as exports have them and as they come damaged."""
    from fuzzing.strategies import jaeger_doc

    def edit(f):
        doc = jaeger_doc()
        f(doc)
        return doc

    spans = lambda d: d["data"][0]["spans"]  # noqa: E731
    return {
        "export": edit(lambda d: spans(d)[1]["tags"].append({"key": "error", "type": "bool", "value": True})),
        "a bare list of traces": jaeger_doc()["data"],
        "fields missing or null": edit(lambda d: (spans(d)[0].pop("spanID"), spans(d)[1].update(duration=None),
                                                  spans(d)[2].pop("operationName"), spans(d)[-1].pop("startTime"))),
        "FOLLOWS_FROM first": edit(lambda d: spans(d)[1]["references"].insert(
            0, {"refType": "FOLLOWS_FROM", "spanID": "00000000000000ff"})),
        "processes and tags missing or null": edit(lambda d: (d["data"][0].pop("processes"),
                                                              d["data"][1]["processes"]["p1"].update(tags=None),
                                                              d["data"][1]["processes"]["p1"].pop("serviceName"))),
        "a span that is not an object": edit(lambda d: spans(d).append(5)),
        "spans null": edit(lambda d: d["data"][0].update(spans=None)),
    }


def _structs_and_json(reader, path, doc):
    """``doc`` written to ``path`` and read by ``reader``'s structs and by json's whole document
    (its ``_read_any``): the two tables, checked the same."""
    from perftriage.analysis.spans.table import SpanBuilder

    path.write_text(json.dumps(doc))
    built = []
    for read in (reader.read, reader._read_any):
        b = SpanBuilder()
        read(path, b)
        built.append(b.finish())
    _same_table(*built)
    return built


@pytest.mark.parametrize("name", list(_jaeger_variants()))
def test_jaeger_structs_read_what_json_reads(tmp_path, name):
    """Jaeger JSON is decoded into structs that skip a span's tags and logs (make bench,
    calltrees: 542,375 spans in 4.2 s and 1.1 GB against 9.2 s and 1.9 GB for json's whole
    document); the table is json's, span for span, problems counted alike, a document the
    structs do not fit read as json reads it."""
    from perftriage.analysis.spans import jaeger

    built = _structs_and_json(jaeger, tmp_path / "traces.json", _jaeger_variants()[name])
    assert name != "export" or int(built[0].error.sum()) == 1  # its error tag, read by both
    assert len(built[0]) >= 6 and (name != "fields missing or null" or built[0].problems.unparsable == 3)


@pytest.mark.parametrize("form", ["one a line", "a search's hits", "an array", "elasticdump, a line cut"])
def test_jaeger_span_documents_read_as_the_uis_export(tmp_path, form):
    """Jaeger's spans as its Elasticsearch / OpenSearch storage gives them back, one document per
    span with its process inline (were 'unrecognised input'): the same table as the UI's export of
    the same traces, span for span; a line cut short is counted as a problem."""
    from fuzzing.strategies import jaeger_doc, jaeger_span_documents

    ui = jaeger_doc()
    spans = ui["data"][0]["spans"]
    spans[1]["tags"] = [{"key": "error", "type": "bool", "value": True}]
    docs = jaeger_span_documents(ui)
    (tmp_path / "ui.json").write_text(json.dumps(ui))
    p = tmp_path / "jaeger-span-2026-01-01.json"
    if form == "one a line":
        p.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    elif form == "a search's hits":
        p.write_text(json.dumps({"took": 3, "hits": {"total": {"value": len(docs)},
                                                    "hits": [{"_index": "jaeger-span-2026-01-01", "_source": d}
                                                             for d in docs]}}))
    elif form == "an array":
        p.write_text(json.dumps(docs))
    else:
        lines = [json.dumps({"_index": "jaeger-span-2026-01-01", "_id": str(i), "_source": d})
                 for i, d in enumerate(docs)]
        p.write_text("\n".join(lines) + "\n" + lines[0][:40] + "\n")
    assert sniff_format(p, p.read_bytes()[:65536]) == "jaeger-docs"
    got, want = read_spans([p]), read_spans([tmp_path / "ui.json"])
    if form == "elasticdump, a line cut":
        assert got.problems.unparsable == 1 and "a line cut or damaged" in got.problems.details[0]
        got.problems.unparsable, got.problems.details = want.problems.unparsable, want.problems.details
    _same_table(got, want)
    assert int(got.error.sum()) == 1 and {"fe-1", "cart-0", "redis-0"} <= set(got.replicas)


def _zipkin_variants():
    from fuzzing.strategies import zipkin_doc

    def edit(f):
        doc = zipkin_doc()
        f(doc)
        return doc

    return {
        "export": edit(lambda d: d[1]["tags"].update(error="timeout")),
        "a list of traces": [zipkin_doc()[:3], zipkin_doc()[3:]],
        "fields missing or null": edit(lambda d: (d[0].pop("id"), d[1].update(duration=None), d[2].pop("name"),
                                                  d[-1].pop("timestamp"), d[3].update(parentId=None))),
        "tags and endpoints missing, null or odd": edit(lambda d: (d[0].pop("tags"), d[1].update(tags=None),
                                                                  d[2].update(localEndpoint=[1]),
                                                                  d[3]["localEndpoint"].pop("port"))),
        "a span that is not an object": edit(lambda d: d.append(5)),
    }


def test_zipkin_v1_spans_read_as_zipkins_conversion_reads_them(tmp_path):
    """Zipkin v1 JSON (endpoints in annotations; were read with no service at all): a span both
    sides recorded is the caller's client span and the callee's server span under it, the server
    half keeping the id so that the callee's own calls stay its children; a local span is its
    component's; times from the annotations where the span has none; an error binary annotation
    fails the server half; the structs and json's whole document agree."""
    from perftriage.analysis.spans import zipkin

    def ep(service, ip):
        return {"serviceName": service, "ipv4": ip, "port": 80}

    fe, cart = ep("frontend", "10.0.0.1"), ep("cart", "10.0.0.2")
    t = 1767225600000000
    doc = [
        {"traceId": "a1", "id": "a1", "name": "get /", "timestamp": t, "duration": 9000,
         "annotations": [{"timestamp": t, "value": "sr", "endpoint": fe}, {"timestamp": t + 9000, "value": "ss",
                                                                          "endpoint": fe}]},
        {"traceId": "a1", "id": "b2", "parentId": "a1", "name": "getcart",  # shared, no span timestamp
         "annotations": [{"timestamp": t + 1000, "value": "cs", "endpoint": fe},
                         {"timestamp": t + 1300, "value": "sr", "endpoint": cart},
                         {"timestamp": t + 6700, "value": "ss", "endpoint": cart},
                         {"timestamp": t + 7000, "value": "cr", "endpoint": fe}],
         "binaryAnnotations": [{"key": "error", "value": "timeout", "endpoint": cart}]},
        {"traceId": "a1", "id": "c3", "parentId": "b2", "name": "hget", "timestamp": t + 2000, "duration": 1000,
         "annotations": [{"timestamp": t + 2000, "value": "cs", "endpoint": cart},
                         {"timestamp": t + 3000, "value": "cr", "endpoint": cart}]},
        {"traceId": "a1", "id": "d4", "parentId": "b2", "name": "render", "timestamp": t + 4000, "duration": 500,
         "binaryAnnotations": [{"key": "lc", "value": "template", "endpoint": cart}]},
    ]
    sp = _structs_and_json(zipkin, tmp_path / "v1.json", doc)[0]
    rows = {(sp.services[sp.service[i]], sp.methods[sp.method[i]].split(":", 1)[1]): i for i in range(len(sp))}
    assert sorted(rows) == [("cart", "getcart"), ("cart", "hget"), ("cart", "render"), ("frontend", "get /"),
                            ("frontend", "getcart")]
    client, server = rows["frontend", "getcart"], rows["cart", "getcart"]
    assert sp.parent[server] == client and sp.parent[client] == rows["frontend", "get /"]
    assert sp.parent[rows["cart", "hget"]] == server and sp.parent[rows["cart", "render"]] == server
    assert (sp.start[client], sp.end[client]) == ((t + 1000) * 1000, (t + 7000) * 1000)
    assert (sp.start[server], sp.end[server]) == ((t + 1300) * 1000, (t + 6700) * 1000)
    assert sp.error.tolist() == [i == server for i in range(len(sp))]
    assert sp.replicas[sp.replica[server]] == "10.0.0.2:80" and sp.problems.unparsable == 0


@pytest.mark.parametrize("name", list(_zipkin_variants()))
def test_zipkin_structs_read_what_json_reads(tmp_path, name):
    """Zipkin v2 JSON is decoded into structs that skip annotations and remote endpoints; the
    table is json's, span for span, problems counted alike."""
    from perftriage.analysis.spans import zipkin

    built = _structs_and_json(zipkin, tmp_path / "spans.json", _zipkin_variants()[name])
    assert len(built[0]) >= 6
    assert name != "export" or int(built[0].error.sum()) == 1  # its error tag, read by both
    assert built[0].problems.unparsable == {"fields missing or null": 3, "tags and endpoints missing, null or odd": 1,
                                            "a span that is not an object": 1}.get(name, 0)


def _linked_spans(gaps_ms: dict, tail: dict | None = None, from_request: int = 0, every: dict | None = None):
    """Requests of a frontend calling five services and a checkout calling three: each call a client
    span in the caller and a server span in the callee, its time between them ``gaps_ms[(caller,
    callee)]`` (2 ms unless said) from request ``from_request`` on; ``tail``: a link whose calls take
    120 ms more one time in five; ``every``: a link called in one request in so many only."""
    from perftriage.analysis.spans.table import SpanBuilder

    rng = np.random.default_rng(3)
    b = SpanBuilder()
    links = [("frontend", s) for s in ("cart", "catalog", "currency", "ads", "checkout")] + \
        [("checkout", s) for s in ("payment", "email", "shipping")]
    sid = 0
    for r in range(300):
        t0 = 10**12 + r * 50_000_000
        sid += 1
        root = sid
        b.add(f"t{r}", root, None, "frontend", "Recv", "frontend-1", t0, t0 + 400_000_000)
        served = {"frontend": root}  # each service's server span in this request: its calls' parent
        for caller, callee in links:
            gap = (gaps_ms.get((caller, callee), 2.0) if r >= from_request else 2.0) * float(np.exp(rng.normal(0, 0.1)))
            if every and r % every.get((caller, callee), 1):
                continue
            if tail and (caller, callee) in tail and r % 5 == 0:
                gap += 120
            server_ms = 3.0
            sid += 1
            client = sid
            b.add(f"t{r}", client, served[caller], caller, f"call {callee}", f"{caller}-1", t0 + 1000,
                  t0 + 1000 + int((gap + server_ms) * 1e6))
            sid += 1
            served[callee] = sid
            b.add(f"t{r}", sid, client, callee, "serve", f"{callee}-7d9f8b7c5-x2kq9", t0 + 1000 + int(gap / 2 * 1e6),
                  t0 + 1000 + int((gap / 2 + server_ms) * 1e6))
    return b.finish()


def test_slow_links_name_the_pod_behind_them_or_the_caller_short_of_cpu():
    """Without a baseline: a network delay on one pod makes every link into it far slower between
    client and server than the other links (named as the callee); a caller short of CPU makes
    every link out of it slower (named as the caller); a healthy system, and a busy link whose
    tail is long but whose median is the others', name nothing."""
    from perftriage.analysis.calltrees.findings import slow_link_findings
    from perftriage.analysis.calltrees.slow_links import slow_links

    delayed = slow_links(_linked_spans({("frontend", "cart"): 150.0}))
    first = delayed.suspects[0]
    assert (first.service, first.role, len(first.slow), first.links) == ("cart", "callee", 1, 1)
    f = slow_link_findings(delayed)[0]
    assert f.title.startswith("calls into cart (cart-7d9f8b7c5-x2kq9) take 1") and "other links 2" in f.title
    assert f.target == {"kind": "method", "method": "frontend:call cart"} and f.severity == "critical"
    starved = slow_links(_linked_spans({("checkout", s): 200.0 for s in ("payment", "email", "shipping")}))
    first = starved.suspects[0]
    assert (first.service, first.role, len(first.slow), first.links) == ("checkout", "caller", 3, 3)
    assert "checkout's calls to other services take 2" in slow_link_findings(starved)[0].title
    healthy = slow_links(_linked_spans({}))
    assert not healthy.suspects and len(healthy.links) == 8 and slow_link_findings(healthy) == []
    said = slow_links(_linked_spans({}, tail={("frontend", "currency")}))
    assert not said.suspects and "frontend -> currency" in said.why
    # a delay from request 280 of 300 on: the link's median is the others', its calls from then on are slow
    late = slow_links(_linked_spans({("frontend", "cart"): 150.0}, from_request=280))
    first = late.suspects[0]
    assert (first.service, first.role) == ("cart", "callee")
    link = first.slow[0]
    assert link.calls_after == 20 and link.since_ns == 10**12 + 280 * 50_000_000 + 1000 and link.before_ms < 3
    title = slow_link_findings(late)[0].title
    assert " from +0:16:54 on (median, its one link; " in title and " ms before; other links " in title
    assert not slow_links(_linked_spans({("frontend", "cart"): 150.0}, from_request=297)).suspects  # 3 calls after


def test_a_link_of_few_calls_slow_from_a_time_is_named():
    """A payment service called in one request in ten (30 calls), 150 ms between client and server
    from request 230 on (7 calls): the exact p of its step is 1 / C(30, 7) at best, which 1e-6
    with 8 links counted refuses whatever the delay; the bar for a link of few calls names it; the
    same link healthy, or slow in its last 3 calls only, names nothing."""
    from perftriage.analysis.calltrees.slow_links import slow_links

    few = {("checkout", "payment"): 10}
    late = slow_links(_linked_spans({("checkout", "payment"): 150.0}, from_request=230, every=few))
    link = next(x for x in late.links if x.callee_service == "payment")
    assert link.calls == 30 and link.slow and link.calls_after == 7 and link.before_ms < 3 and link.median_ms > 100
    assert late.suspects[0].service == "payment" and late.params["links_few_alpha"] == 1e-4
    strict = slow_links(_linked_spans({("checkout", "payment"): 150.0}, from_request=230, every=few), few_alpha=1e-6)
    assert not strict.suspects
    assert not slow_links(_linked_spans({}, every=few)).suspects
    assert not slow_links(_linked_spans({("checkout", "payment"): 150.0}, from_request=270, every=few)).suspects


def test_slow_links_are_said_where_the_comparison_over_time_names_nothing():
    """A comparison over time that names no service (the time given inside the fault, say) leaves
    the report to the links as they are, as where nothing was compared; one that names a service
    or a method keeps them out of the findings (the links view still has them)."""
    from perftriage.analysis.calltrees.what_changed import ChangeDiagnosis, ChangeParams
    from perftriage.analysis.inputs import Inputs
    from perftriage.analysis.calltrees.slow_links import slow_links
    from perftriage.analysis.triage import Options, TriageResult, _say_links

    links = slow_links(_linked_spans({("frontend", "cart"): 150.0}))
    for suspects, said in (([], True), (["a suspect"], False)):
        result = TriageResult(Inputs([]), Options(), links=links)
        result.change = ChangeDiagnosis(ChangeParams(), "at a time", 0, 100, 100, suspects, [])
        _say_links(result)
        titles = [f.title for f in result.report.findings]
        assert result.links is not None and result.links.suspects[0].service == "cart"
        assert any(t.startswith("calls into cart") for t in titles) == said


def test_hex_ids_of_digits_only_do_not_collide_with_letters():
    assert to_id64("0000000000000011") != to_id64("000000000000000b")
    assert to_id64("0000000000000011") == 0x11
    assert to_id64("17") == 17  # CloudDiag mids are decimal


def test_rpca_separates_low_rank_from_sparse_errors():
    rng = np.random.default_rng(3)
    m, n = 300, 8
    L0 = rng.normal(5, 1, (m, 2)) @ rng.uniform(0.5, 1.5, (2, n))
    E0 = np.zeros((m, n))
    rows = rng.choice(m, 30, replace=False)
    E0[rows, 5] = rng.uniform(20, 40, 30)
    r = rpca(L0 + E0)
    assert r.converged
    assert np.linalg.matrix_rank(r.L, tol=1e-3 * np.linalg.norm(r.L, 2)) <= 3
    big = np.abs(r.E[:, 5]) > 5
    assert set(np.flatnonzero(big)) == set(rows)
    beta = column_cosines(L0 + E0, r.L)
    assert beta.argmin() == 5 and beta[5] < 0.9 and np.delete(beta, 5).min() > 0.99


@pytest.fixture(scope="module")
def micro(tmp_path_factory):
    base = tmp_path_factory.mktemp("micro")
    out = {}
    for name, cfg in {"replica": MicroConfig(requests=1500, seed=21, scenario="replica"),
                      "method": MicroConfig(requests=1500, seed=22, scenario="method"),
                      "none": MicroConfig(requests=1500, seed=23, scenario="none")}.items():
        truth = write_microservice_sample(base / name, cfg)
        out[name] = (base / name, truth)
    return out


def _truth_pairs(truth, hosts=False):
    """The injected pairs as perftriage names them; the CloudDiag log names the host, not the replica."""
    return {(m.replace(".", ":", 1), truth["replica_hosts"][r] if hosts else r) for m, r in truth["slow_pairs"]}


@pytest.mark.parametrize("scenario", ["replica", "method"])
def test_diagnosis_ranks_the_injected_pair_first(micro, scenario):
    folder, truth = micro[scenario]
    for f in (folder / "spans.otlp.jsonl", folder / "clouddiag-log" / "calls.log"):
        diag = diagnose(build_call_trees(read_spans([f])))
        ranked = [(p.method_name, p.replica_name) for p in diag.ranking]
        expected = _truth_pairs(truth, hosts=f.suffix == ".log")
        assert ranked and ranked[0] in expected, (f.name, ranked[:3])
        # the pairs flagged are the injected ones (nothing else is slow in this data)
        assert set(ranked) <= expected
        top = diag.ranking[0]
        assert top.min_beta < diag.params.beta
        if scenario == "replica":  # slower than the method's other replicas
            assert top.ratio > 1.5
        else:  # slow on every replica, from the incident on: the onset is found
            start = truth["incident_start_ns"]
            run = truth["requests"] / truth["config"]["rate"] * 1e9
            assert abs(top.onset_ns - start) < 0.05 * run
            assert top.after_share > 0.8 and top.before_share < 0.1
            if f.suffix != ".log":  # one finding for the method, not one per replica
                from perftriage.analysis.calltrees.findings import diagnosis_findings

                titles = [x.title for x in diagnosis_findings(diag)]
                assert titles[0].startswith(f"{top.method_name} is slow on every replica since ")
                assert not any(t.startswith(f"{top.method_name} is slow on ") for t in titles[1:])


def test_no_anomaly_flags_nothing(micro):
    diag = diagnose(build_call_trees(read_spans([micro["none"][0] / "spans.otlp.jsonl"])))
    assert diag.ranking == []
    assert all(r.beta is None or r.beta.min() >= diag.params.beta for r in diag.categories)


def test_total_times_are_the_papers_inclusive_times(micro):
    trees = build_call_trees(read_spans([micro["replica"][0] / "spans.otlp.jsonl"]))
    total = diagnose(trees, DiagParams(times="total"))
    own = diagnose(trees)
    assert (total.method_time == trees.spans.duration).all()
    assert (own.method_time <= trees.spans.duration).all() and (own.method_time < trees.spans.duration).any()


def test_alpha_skips_regular_categories(micro):
    trees = build_call_trees(read_spans([micro["replica"][0] / "spans.otlp.jsonl"]))
    diag = diagnose(trees, DiagParams(alpha=10.0))
    assert not any(r.analysed for r in diag.categories) and diag.ranking == []
    assert all("alpha" in r.reason or "fewer" in r.reason for r in diag.categories)


def test_comparison_against_a_baseline(micro):
    ref = build_call_trees(read_spans([micro["none"][0] / "spans.otlp.jsonl"]))
    folder, truth = micro["replica"]
    cur = build_call_trees(read_spans([folder / "spans.otlp.jsonl"]))
    cmp = compare(ref, cur)
    slower = {c.name for c in cmp.slower("methods")}
    assert slower and slower <= {m for m, _ in _truth_pairs(truth)}
    reps = {c.name for c in cmp.slower("replicas") if c.ratio > 1.5}
    assert reps == {f"{m} @ {r}" for m, r in _truth_pairs(truth)}
    # nothing changes between two baselines
    same = compare(ref, ref)
    assert same.slower("methods") == [] and same.slower("categories") == []


def test_committed_sample_is_diagnosed():
    folder = ROOT / "sample_traces" / "microservices"
    truth = json.loads((folder / "ground_truth.json").read_text())
    diag = diagnose(build_call_trees(read_spans([folder / "spans.otlp.jsonl"])))
    assert (diag.ranking[0].method_name, diag.ranking[0].replica_name) in _truth_pairs(truth)


@pytest.mark.parametrize("seed", [22, 29, 36, 43])
def test_one_method_slower_on_every_replica_leads_the_report(tmp_path, seed):
    """One method 1.5x slower on every replica from some time on, a small part of each request:
    the requests as a whole show no clear change, nor does CloudDiag's comparison of replicas;
    its calls' own time does, dated within a second of the injection, and the requests are
    compared there: the report leads with the method where they name no service, else with the
    service they name (29: catalog, for catalog:search) and the method follows. Healthy systems
    get no such finding."""
    from perftriage.analysis.triage import run_triage

    truth = write_microservice_sample(tmp_path / "m", MicroConfig(requests=3000, seed=seed, scenario="method",
                                                                   slowdown=1.5, write_log=False))
    res = run_triage([tmp_path / "m" / "spans.otlp.jsonl"])
    method = truth["slow_method"].replace(".", ":", 1)
    m = res.change.method
    assert m.method == method and abs(m.at_ns - truth["incident_start_ns"]) < 10**9 and 1.25 < m.ratio < 1.75
    assert len(m.replicas) == len(truth["slow_pairs"]) and all(a > b for _, _, b, _, a in m.replicas)
    said = next(f for f in res.findings if f.title.startswith(f"{method} took "))
    assert said.parameters["method_alpha"] == 1e-6 and said.parameters["method_steady"] == 3.0  # what decided it
    assert f"on all {len(m.replicas)} replicas" in said.title
    if res.change.suspects:
        assert res.findings[0].title.startswith(method.split(":")[0] + " changed most") and said.severity == "warning"
    else:
        assert res.findings[0] is said and said.severity == "critical"
    assert "calls to " + method in res.change.how
    write_microservice_sample(tmp_path / "h", MicroConfig(requests=3000, seed=seed + 1000, scenario="none",
                                                          write_log=False))
    healthy = run_triage([tmp_path / "h" / "spans.otlp.jsonl"])
    assert healthy.change is None or healthy.change.method is None
    assert not any(" took " in f.title and "as long from" in f.title for f in healthy.findings)


@pytest.mark.parametrize("request_ms, named", [(170.0, False), (8.0, True)])
def test_a_method_step_is_named_only_where_it_matters_to_its_requests(request_ms, named):
    """A cart's GetCart stepping from 1.1 to 1.5 ms from one minute on (a real OnlineBoutique
    cart does so from minute to minute) in requests of 170 ms adds 0.2% to them: a habit, not
    named; in requests of 8 ms (5%) it is, and the finding says what it adds."""
    from perftriage.analysis.calltrees.what_changed import method_split
    from perftriage.analysis.spans.table import SpanBuilder

    rng = np.random.default_rng(7)
    b = SpanBuilder()
    n = 1200
    for r in range(n):
        t0 = 10**12 + r * 100_000_000  # one request every 100 ms, the step at the middle
        own_ms = (1.1 if r < n // 2 else 1.5) * float(np.exp(rng.normal(0, 0.05)))
        total = int(request_ms * 1e6 * float(np.exp(rng.normal(0, 0.05))))
        b.add(f"t{r}", 2 * r + 1, None, "frontend", "Recv", "frontend-1", t0, t0 + total)
        b.add(f"t{r}", 2 * r + 2, 2 * r + 1, "cart", "GetCart", "cart-1", t0 + 1000, t0 + 1000 + int(own_ms * 1e6))
    got = method_split(b.finish())
    if not named:
        assert isinstance(got, str) and "cart:GetCart, 1.3" in got and "adds 0.2% to its requests' time" in got
        return
    assert got.method == "cart:GetCart" and 1.3 < got.ratio < 1.45 and 0.04 < got.share < 0.06
    assert abs(got.at_ns - (10**12 + n // 2 * 100_000_000)) < 10**9 and got.params["method_min_added"] == 0.005


def test_a_method_slower_on_one_replica_from_a_time_gives_the_time():
    """GetCart twice as long on cart-3 of three from the middle on, its median over all replicas
    barely moved (two calls in three are as before): the split of cart-3's calls gives the time,
    named with the replica and what its other replicas did; the same calls with no step give none."""
    from perftriage.analysis.calltrees.findings import _method_change_finding
    from perftriage.analysis.calltrees.what_changed import ChangeDiagnosis, ChangeParams, method_split
    from perftriage.analysis.spans.table import SpanBuilder

    def spans(step: float):
        rng = np.random.default_rng(5)
        b = SpanBuilder()
        n = 1500
        for r in range(n):
            t0 = 10**12 + r * 100_000_000
            replica = f"cart-{r % 3 + 1}"
            slow = step if replica == "cart-3" and r >= n // 2 else 1.0
            own_ms = 1.1 * slow * float(np.exp(rng.normal(0, 0.05)))
            total = int(8e6 * float(np.exp(rng.normal(0, 0.05))))
            b.add(f"t{r}", 2 * r + 1, None, "frontend", "Recv", "frontend-1", t0, t0 + total)
            b.add(f"t{r}", 2 * r + 2, 2 * r + 1, "cart", "GetCart", replica, t0 + 1000,
                  t0 + 1000 + int(own_ms * 1e6))
        return b.finish()

    got = method_split(spans(2.0))
    assert not isinstance(got, str), got
    assert got.method == "cart:GetCart" and got.replica == "cart-3" and 1.8 < got.ratio < 2.2
    assert abs(got.at_ns - (10**12 + 750 * 100_000_000)) < 10**9
    assert [r[0] for r in got.replicas][0] == "cart-3" and len(got.replicas) == 3
    assert got.methods == 2 and got.tested == 5  # Recv and GetCart, and GetCart's three replicas
    assert got.headline().startswith("cart:GetCart took 2.0") and " as long on cart-3 from " in got.headline()
    assert got.headline().endswith("(1.00x at the median of its 2 other replicas)")
    diagnosis = ChangeDiagnosis(ChangeParams(), "", got.at_ns, 0, 0, [], [], method=got)
    finding = _method_change_finding(diagnosis, {}, lead=True)
    assert finding.evidence[0].startswith("cart:GetCart on cart-3: its own time (its callees' left out) median 1.1")
    assert "the calls of cart:GetCart on cart-3" in finding.evidence[-1]
    assert isinstance(method_split(spans(1.0)), str)


@pytest.mark.parametrize("request_ms, named", [(170.0, False), (8.0, True)])
def test_a_slower_replica_is_named_only_where_it_matters_to_its_requests(request_ms, named):
    """cart-3 1.35x slower than cart-1 and cart-2 at a 1.1 ms method: in requests of 170 ms it
    adds 0.2% to them, which a replica's usual spread can be; in requests of 8 ms (5%) it is
    named, and the finding says what it adds."""
    from perftriage.analysis.calltrees.findings import slow_replica_findings
    from perftriage.analysis.calltrees.slow_replicas import slow_replicas
    from perftriage.analysis.spans.table import SpanBuilder

    rng = np.random.default_rng(11)
    b = SpanBuilder()
    for r in range(1500):
        t0 = 10**12 + r * 10_000_000
        replica = f"cart-{r % 3 + 1}"
        own_ms = (1.5 if replica == "cart-3" else 1.1) * float(np.exp(rng.normal(0, 0.05)))
        total = int(request_ms * 1e6 * float(np.exp(rng.normal(0, 0.05))))
        b.add(f"t{r}", 2 * r + 1, None, "frontend", "Recv", "frontend-1", t0, t0 + total)
        b.add(f"t{r}", 2 * r + 2, 2 * r + 1, "cart", "GetCart", replica, t0 + 1000, t0 + 1000 + int(own_ms * 1e6))
    slow = slow_replicas(b.finish())
    if not named:
        assert slow == []
        return
    assert [s.replica for s in slow] == ["cart-3"] and 0.04 < slow[0].methods[0][6] < 0.06
    assert "it adds 5." in slow_replica_findings(slow)[0].evidence[0]


@pytest.mark.parametrize("seed", [85, 92])
def test_a_replica_slower_than_its_peers_is_named_where_clouddiag_flags_nothing(tmp_path, seed):
    """One cart replica 1.5x slower at its methods, a small part of their categories' requests:
    Robust PCA flags no pair; its calls against its peers' name it first, with each method's
    medians; healthy systems and a method slow on every replica get no such finding."""
    from perftriage.analysis.calltrees.slow_replicas import slow_replicas
    from perftriage.analysis.triage import run_triage

    truth = write_microservice_sample(tmp_path / "r", MicroConfig(requests=3000, seed=seed, scenario="replica",
                                                                   slowdown=1.5, write_log=False))
    res = run_triage([tmp_path / "r" / "spans.otlp.jsonl"])
    replica = truth["slow_pairs"][0][1]
    assert not res.diagnosis.ranking
    first = res.findings[0]
    assert first.title.startswith(f"{replica} is slower than its 2 peers")
    ratio = float(first.title.split(" took ")[1].split("x")[0])
    assert first.severity == ("critical" if ratio >= 1.5 else "warning") and ratio > 1.25
    for method, _ in truth["slow_pairs"]:  # each slow method, its medians there and on the peers
        assert any(e.startswith(method.replace(".", ":", 1) + ": its own time") for e in first.evidence), method
    assert first.parameters["replica_alpha"] == 1e-6
    for scenario, s in (("none", seed + 1000), ("method", seed)):
        write_microservice_sample(tmp_path / scenario, MicroConfig(requests=3000, seed=s, scenario=scenario,
                                                                   slowdown=1.5, write_log=False))
        assert slow_replicas(read_spans([tmp_path / scenario / "spans.otlp.jsonl"])) == []


def _span_set(sp):
    """Each span as (trace, span, its parent's span id, method, replica, start, end), sorted:
    tables compared whatever order their readers built them in."""
    parent = [int(sp.span[p]) if p >= 0 else -1 for p in sp.parent.tolist()]
    return sorted(zip([sp.traces[t] for t in sp.trace.tolist()], sp.span.tolist(), parent,
                      [sp.methods[m] for m in sp.method.tolist()], [sp.replicas[r] for r in sp.replica.tolist()],
                      sp.start.tolist(), sp.end.tolist()))


@pytest.mark.parametrize("form", ["batches", "trace", "batches-odd-span"])
def test_grafana_tempo_traces_read_as_otlp(tmp_path, form):
    """A trace as Grafana Tempo gives it: 'batches' for 'resourceSpans' (its API v1, Grafana's
    trace download, with the old 'instrumentationLibrarySpans'), or wrapped in 'trace' (API v2):
    the same spans as the collector's OTLP lines. A span the typed decoder refuses (a number for
    a name) sends the document span by span, the same spans still."""
    src = ROOT / "sample_traces" / "microservices" / "spans.otlp.jsonl"
    reqs = [json.loads(line) for line in src.read_text().splitlines()[:200]]
    groups = [g for q in reqs for g in q["resourceSpans"]]
    plain = tmp_path / "plain.otlp.jsonl"
    plain.write_text("\n".join(json.dumps(q) for q in reqs) + "\n")
    if form == "trace":
        doc = {"trace": {"resourceSpans": groups}}
    else:
        doc = {"batches": [{"resource": g["resource"], "instrumentationLibrarySpans": g["scopeSpans"]} for g in groups]}
    if form == "batches-odd-span":
        doc["batches"][0]["instrumentationLibrarySpans"][0]["spans"][0]["name"] = 7
    tempo = tmp_path / "trace-1f2e.json"
    tempo.write_text(json.dumps(doc))
    assert sniff_format(tempo, tempo.read_bytes()[:65536]) == "otlp"
    a, b = read_spans([plain]), read_spans([tempo])
    assert len(a) == len(b) == sum(len(s["spans"]) for g in groups for s in g["scopeSpans"])
    if form != "batches-odd-span":
        assert _span_set(a) == _span_set(b)
    else:
        assert sorted(b.span.tolist()) == sorted(a.span.tolist()) and "7" in "".join(b.methods)


def test_trainticket_spans_a_child_before_its_parent_and_few_requests(tmp_path):
    # Nezha's TrainTicket minutes (the OnlineBoutique form: ParentID root, Duration in us):
    # a span may come before its parent; with two requests, what changed is not compared and
    # the note says why once (three searches, one reason)
    from perftriage.analysis.triage import run_triage

    head = "TraceID,SpanID,ParentID,PodName,OperationName,StartTimeUnixNano,EndTimeUnixNano,Duration\n"
    gw, seat, order = ("ts-gateway-service-6f6cfc45b-h5m2n", "ts-seat-service-5c95b49cff-tdsdz",
                       "ts-order-service-5b67c48447-mv5hb")
    rows = []
    for t, trace in enumerate(("898fbabdd1894463575af052c4cd7982", "950a9e7e1989eda57078d48616555bc3")):
        s0 = 1674982159219000000 + t * 10**9
        rows += [f"{trace},{t}a,root,{gw},/*,{s0},{s0 + 28_160_000},28160",
                 f"{trace},{t}c,{t}b,{order},/api/v1/orderservice/order/tickets,{s0 + 2_000_000},{s0 + 9_000_000},7000",
                 f"{trace},{t}b,{t}a,{seat},HTTP POST,{s0 + 1_000_000},{s0 + 10_000_000},9000"]
    (tmp_path / "08_50_trace.csv").write_text(head + "\n".join(rows) + "\n")
    sp = read_spans([tmp_path / "08_50_trace.csv"])
    assert len(sp.traces) == 2 and int((sp.parent == -1).sum()) == 2
    trees = build_call_trees(sp)
    assert [(c.size, c.width) for c in trees.categories] == [(2, 3)]  # one shape: gateway, seat, order
    notes = run_triage([tmp_path]).report.notes
    note = next(n for n in notes if n.startswith("what changed: not compared"))
    assert note.count("2 requests: too few to find when they changed") == 1, note
