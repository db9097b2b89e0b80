"""AWS X-Ray traces (batch-get-traces output, or segment documents) read as request spans."""

from __future__ import annotations

import json

import numpy as np

from fuzzing.strategies import xray_segments
from perftriage.analysis.inputs import classify
from perftriage.analysis.spans import read_spans
from perftriage.analysis.spans.table import ROOT

from conftest import first_finding_row


def _batch(path, **kw):
    path.write_text(json.dumps({"Traces": xray_segments(**kw), "UnprocessedTraceIds": []}))
    return path


def test_batch_get_traces_output_reads_as_call_trees_and_the_slow_instance_is_named(tmp_path):
    p = _batch(tmp_path / "traces.json", traces=400, slow_from=200)
    assert classify([str(p)]).files["spans"] == [p]
    t = read_spans([p])
    assert len(t) == 2000 and t.problems.total() == 0
    assert sorted(t.services) == ["DynamoDB", "cart", "frontend"]
    assert {"i-0front0", "i-0front1", "i-0cart0", "i-0cart1"} <= set(t.replicas)
    # a segment's operation is its request (numbers in the path as {n}), a call out its target
    assert {"frontend:GET /cart/{n}", "frontend:GET cart.internal", "cart:GET /items/{n}", "cart:DynamoDB.GetItem",
            "DynamoDB:DynamoDB"} == set(t.methods)
    # one tree per trace: frontend -> its call -> cart -> its DynamoDB call -> DynamoDB's inferred segment
    roots = np.flatnonzero(t.parent == ROOT)
    assert len(roots) == 400 and {t.methods[m] for m in t.method[roots]} == {"frontend:GET /cart/{n}"}
    db = np.flatnonzero(t.service == t.services.index("DynamoDB"))
    call = t.parent[db]
    assert {t.methods[m] for m in t.method[call]} == {"cart:DynamoDB.GetItem"}
    assert {t.methods[m] for m in t.method[t.parent[t.parent[call]]]} == {"frontend:GET cart.internal"}
    # the throttled DynamoDB calls (fault) failed: the caller's call and the inferred segment
    assert int(t.error.sum()) == 80
    first = first_finding_row(p)
    assert "cart" in first and "i-0cart1" in first, first


def test_segment_documents_one_a_line_and_damaged_ones(tmp_path):
    """Segment documents as the SDKs send them (one a line) read as the batch's do; a segment still
    in progress is left out and said, a line that is no JSON or a segment without times counted."""
    docs = [json.loads(s["Document"]) for t in xray_segments(traces=20) for s in t["Segments"]]
    lines = [json.dumps(d) for d in docs]
    lines[3] = lines[3][:40]  # a line cut
    busy = dict(docs[5], in_progress=True)
    busy.pop("end_time")
    lines[5] = json.dumps(busy)
    timeless = dict(docs[7])
    timeless.pop("start_time")
    lines[7] = json.dumps(timeless)
    p = tmp_path / "segments.jsonl"
    p.write_text("\n".join(lines) + "\n")
    assert classify([str(p)]).files["spans"] == [p]
    t = read_spans([p])
    assert t.problems.unparsable == 2, t.problems
    assert any("segments.jsonl: 1 X-Ray segment still in progress (no end time) left out" == n for n in t.notes), \
        t.notes
    whole = read_spans([_batch(tmp_path / "batch.json", traces=20)])
    # lost: a frontend's segment and its call (line 3), a DynamoDB segment (5), a cart's and its call (7)
    assert len(t) == len(whole) - 5


def _streamed(docs: list[dict]) -> list[dict]:
    """The documents as an SDK streams a long request's: each segment's subsegments sent as
    documents of their own (type subsegment, their trace and parent ids beside), nested ones too."""
    out = []

    def send(sub: dict, parent: str, trace: str) -> None:
        inner = sub.get("subsegments", [])
        out.append({**{k: v for k, v in sub.items() if k != "subsegments"}, "type": "subsegment",
                    "trace_id": trace, "parent_id": parent})
        for s in inner:
            send(s, sub["id"], trace)

    for d in docs:
        out.append({k: v for k, v in d.items() if k != "subsegments"})
        for s in d.get("subsegments", []):
            send(s, d["id"], d["trace_id"])
    return out


def test_subsegments_sent_on_their_own_are_their_segments_service_and_replica(tmp_path):
    docs = [json.loads(s["Document"]) for t in xray_segments(traces=40, slow_from=20) for s in t["Segments"]]
    for d in docs:  # a level more: the DynamoDB call under a span of the cart's own
        for s in d.get("subsegments", []):
            if s["name"] == "DynamoDB":
                d["subsegments"] = [{"id": "c" + s["id"][1:], "name": "load", "start_time": s["start_time"],
                                     "end_time": s["end_time"], "subsegments": [s]}]
    whole = tmp_path / "nested.jsonl"
    whole.write_text("".join(json.dumps(d) + "\n" for d in docs))
    streamed = _streamed(docs)
    assert len(streamed) == len(docs) + 3 * 40  # the frontend's call, the cart's load and its DynamoDB call
    p = tmp_path / "streamed.jsonl"
    p.write_text("".join(json.dumps(d) + "\n" for d in streamed[::-1]))  # a parent after its children
    t, w = read_spans([p]), read_spans([whole])
    assert t.problems.total() == 0 and len(t) == len(w) == 40 * 6
    assert sorted(t.services) == sorted(w.services) == ["DynamoDB", "cart", "frontend"]
    assert sorted(t.methods) == sorted(w.methods) and "cart:DynamoDB.GetItem" in t.methods
    assert sorted(t.replicas) == sorted(w.replicas)
    calls = np.flatnonzero(np.array([t.methods[m] == "cart:DynamoDB.GetItem" for m in t.method]))
    assert {t.replicas[r] for r in t.replica[calls]} == {"i-0cart0", "i-0cart1"}
    assert {t.methods[m] for m in t.method[t.parent[calls]]} == {"cart:load"}
    # a subsegment whose segment is not in the inputs: of its own name, read all the same
    orphan = dict(streamed[1], parent_id="ffffffffffffffff", id="eeeeeeeeeeeeeeee")
    q = tmp_path / "orphan.jsonl"
    q.write_text(json.dumps(orphan) + "\n")
    o = read_spans([q])
    assert len(o) == 1 and o.services == [orphan["name"]], (o.services, orphan)
