"""Application Insights' requests and dependencies, as the Azure portal exports a Log Analytics
query, read as request spans."""

from __future__ import annotations

import numpy as np

from fuzzing.strategies import app_insights_rows, csv_bytes
from perftriage.analysis.inputs import classify
from perftriage.analysis.spans import read_spans
from perftriage.analysis.spans.table import ROOT
from perftriage.analysis.timeparse import parse_iso_ns

from conftest import first_finding_row


def test_a_portal_export_reads_as_call_trees_and_the_slow_instance_is_named(tmp_path):
    p = tmp_path / "query_data.csv"
    p.write_bytes(csv_bytes(app_insights_rows(slow_from=750)))
    assert classify([str(p)]).files["spans"] == [p]
    t = read_spans([p])
    assert len(t) == 4500 and t.problems.total() == 0
    assert sorted(t.services) == ["cart", "frontend"] and {"cart-0", "cart-1", "frontend-2"} <= set(t.replicas)
    roots = np.flatnonzero(t.parent == ROOT)  # the root request's parent is the trace's own id: none of its spans
    assert len(roots) == 1500 and {t.methods[m] for m in t.method[roots]} == {"frontend:GET /cart"}
    first = first_finding_row(p)
    assert "cart" in first and "cart-1" in first, first


def test_a_us_locales_twelve_hour_times():
    """The portal writes "11/27/2026, 10:00:00.123 AM" (en-US): month first, 12 AM midnight, 12 PM noon."""
    base = parse_iso_ns("2026-11-27T00:00:00Z")
    assert parse_iso_ns("11/27/2026, 12:00:00.250 AM") == base + 250_000_000
    assert parse_iso_ns("11/27/2026, 12:30:05 PM") == base + (12 * 3600 + 30 * 60 + 5) * 10**9
    assert parse_iso_ns("11/27/2026 1:02 pm") == base + (13 * 3600 + 2 * 60) * 10**9
    for bad in ("13/27/2026, 10:00:00 AM", "11/27/2026, 13:00:00 PM"):
        try:
            parse_iso_ns(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} read as a time")
