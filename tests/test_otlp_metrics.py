"""OpenTelemetry metrics (OTLP JSON, the collector's file exporter) read as counters across servers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fuzzing.strategies import otlp_metrics_lines
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

from conftest import first_finding_row

T0 = 1_795_860_000  # 2026-11-28 10:00:00 UTC


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("delta", [False, True])
def test_the_file_exporters_metrics_read_as_counters_and_the_busy_host_named(tmp_path, delta):
    p = _write(tmp_path / "metrics.json", otlp_metrics_lines(samples=200, busy_from=120, delta=delta))
    assert classify([str(p)]).files["counters"] == [p]
    cs = load_counters([p])
    assert cs.servers == ["web-00", "web-01", "web-02", "web-03"] and cs.interval == 10
    assert cs.kinds == ["shop"] * 4 and cs.kind_column == "service.name"
    # a gauge per attribute set (the one-valued cpu attribute left off), a monotonic sum as its
    # rate (cumulative: from point to point; delta: over its own interval), an up-down sum a level
    assert sorted(cs.counters) == ["rate(system.network.io)", "system.cpu.utilization{state=idle}",
                                   "system.cpu.utilization{state=user}", "system.memory.usage"], cs.counters
    io = cs.values[:, cs.counters.index("rate(system.network.io)"), :]
    assert np.nanmedian(io) == pytest.approx(100_300, rel=0.01)  # (1e6 + ~3,000) bytes per 10 s
    assert np.isnan(io[:, 0]).all() != delta  # a cumulative series' first point has no rate; a delta's has
    assert any("1 metric of histograms or summaries left out: http.server.duration" in n for n in cs.notes)
    first = first_finding_row(p)
    assert "| web-01: system.cpu.utilization{state=" in first and "since 2026-11-28 10:20:00 UTC" in first, first


def test_damaged_exports(tmp_path):
    lines = otlp_metrics_lines(samples=40)
    lines[5] = lines[5][:100]  # a line cut
    doc = json.loads(lines[7])
    del doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["gauge"]["dataPoints"][0]["timeUnixNano"]
    lines[7] = json.dumps(doc)
    cs = load_counters([_write(tmp_path / "m.json", lines)])
    assert cs.n_points == 40
    assert any("m.json: 2 records that are no OTLP metric or data point" in n for n in cs.notes), cs.notes
    only = [json.dumps({"resourceMetrics": [{"resource": {}, "scopeMetrics": [{"metrics": [
        {"name": "h", "histogram": {"dataPoints": [{"timeUnixNano": "1", "count": "1", "sum": 1}]}}]}]}]})]
    p = _write(tmp_path / "hist.json", only)
    with pytest.raises(InputError) as err:
        load_counters([p])
    assert str(err.value) == f"{p}: no gauge or sum data point in these OTLP metrics"
