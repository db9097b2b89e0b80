"""Apache SkyWalking's traces (its query API's queryTrace answers) read as request spans."""

from __future__ import annotations

import json

import numpy as np

from fuzzing.strategies import skywalking_traces
from perftriage.analysis.inputs import classify
from perftriage.analysis.spans import read_spans
from perftriage.analysis.spans.table import ROOT

from conftest import first_finding_row


def test_query_trace_answers_read_as_call_trees_across_segments(tmp_path):
    p = tmp_path / "traces.json"
    p.write_text("".join(json.dumps(a) + "\n" for a in skywalking_traces(traces=400, slow_from=200)))
    assert classify([str(p)]).files["spans"] == [p]
    t = read_spans([p])
    assert len(t) == 1600 and t.problems.total() == 0
    assert sorted(t.services) == ["cart", "frontend"]
    assert {"cart-0@10.0.1.0", "cart-1@10.0.1.1", "frontend-0@10.0.0.0"} <= set(t.replicas)
    roots = np.flatnonzero(t.parent == ROOT)
    assert len(roots) == 400 and {t.methods[m] for m in t.method[roots]} == {"frontend:GET:/cart"}
    # a segment's first span under the Exit span its ref names, in the calling service's segment
    entry = np.flatnonzero(np.array([t.methods[m] == "cart:GET:/items" for m in t.method]))
    assert {t.methods[m] for m in t.method[t.parent[entry]]} == {"frontend:/items"}
    redis = np.flatnonzero(np.array([t.methods[m] == "cart:Redis/GET" for m in t.method]))
    assert {t.methods[m] for m in t.method[t.parent[redis]]} == {"cart:GET:/items"}  # within its own segment
    assert int(t.error.sum()) == 20
    first = first_finding_row(p)
    assert "cart" in first and "cart-1@10.0.1.1" in first, first


def test_spans_of_a_json_array_and_damaged_ones(tmp_path):
    spans = [s for a in skywalking_traces(traces=10) for s in a["data"]["trace"]["spans"]]
    spans[2] = {**spans[2], "startTime": "soon"}
    spans[5] = "?"
    p = tmp_path / "spans.json"
    p.write_text(json.dumps(spans))
    t = read_spans([p])
    assert len(t) == 38 and t.problems.unparsable == 2, t.problems
