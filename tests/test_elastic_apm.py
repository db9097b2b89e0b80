"""Elastic APM's transactions and spans, as Elasticsearch gives them back, read as request spans."""

from __future__ import annotations

import json

import numpy as np

from fuzzing.strategies import elastic_apm_documents
from perftriage.analysis.inputs import classify
from perftriage.analysis.spans import read_spans
from perftriage.analysis.spans.table import ROOT

from conftest import first_finding_row


def _dotted(d: dict, prefix: str = "") -> dict:
    """A document's fields flattened, as Kibana's fields API gives them ("trace.id")."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_dotted(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def test_a_search_of_apm_documents_reads_as_call_trees_and_the_slow_host_is_named(tmp_path):
    docs = elastic_apm_documents(traces=400, slow_from=200)
    p = tmp_path / "apm.json"
    p.write_text(json.dumps({"took": 5, "hits": {"total": {"value": len(docs)}, "hits": [
        {"_index": ".ds-traces-apm-default", "_source": d} for d in docs]}}))
    assert classify([str(p)]).files["spans"] == [p]
    t = read_spans([p])
    assert len(t) == 1600 and t.problems.total() == 0
    assert sorted(t.services) == ["cart", "frontend"] and {"web-0", "web-1", "cart-0", "cart-1"} == set(t.replicas)
    assert {"frontend:GET /cart", "frontend:GET cart", "cart:GET /items", "cart:SELECT FROM items"} == set(t.methods)
    roots = np.flatnonzero(t.parent == ROOT)
    assert len(roots) == 400 and {t.methods[m] for m in t.method[roots]} == {"frontend:GET /cart"}
    items = np.flatnonzero(np.array([t.methods[m] == "cart:GET /items" for m in t.method]))
    assert {t.methods[m] for m in t.method[t.parent[items]]} == {"frontend:GET cart"}  # under the call that reached it
    assert int(t.error.sum()) == 16  # event.outcome failure
    assert any("apm.json: 8 Elastic APM documents other than transactions and spans (errors, metrics) left out" in n
               for n in t.notes), t.notes
    first = first_finding_row(p)
    assert "cart" in first and "cart-1" in first, first


def test_documents_one_a_line_with_dotted_fields_and_damage(tmp_path):
    docs = [_dotted(d) for d in elastic_apm_documents(traces=20)]
    lines = [json.dumps({"_source": d}) for d in docs]
    lines[3] = lines[3][:50]  # cut
    docs[5].pop("transaction.duration.us", None)
    docs[5].pop("span.duration.us", None)
    lines[5] = json.dumps(docs[5])
    docs[6].pop("trace.id")  # no trace: not read as one of its own
    lines[6] = json.dumps(docs[6])
    p = tmp_path / "apm.ndjson"
    p.write_text("\n".join(lines) + "\n")
    assert classify([str(p)]).files["spans"] == [p]
    t = read_spans([p])
    assert t.problems.unparsable == 3, t.problems
    assert len(t) == 80 - 3 and sorted(t.services) == ["cart", "frontend"] and len(t.traces) == 20
