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
    # rate (cumulative: from point to point; delta: over its own interval), an up-down sum a level,
    # a histogram its count's rate and its mean
    assert sorted(cs.counters) == ["http.server.duration.mean", "rate(http.server.duration.count)",
                                   "rate(system.network.io)", "system.cpu.utilization{state=idle}",
                                   "system.cpu.utilization{state=user}", "system.memory.usage"], cs.counters
    io = cs.values[:, cs.counters.index("rate(system.network.io)"), :]
    assert np.nanmedian(io) == pytest.approx(100_300, rel=0.01)  # (1e6 + ~3,000) bytes per 10 s
    assert np.isnan(io[:, 0]).all() != delta  # a cumulative series' first point has no rate; a delta's has
    # 10 requests more every 10 s, 5 ms more in all: 1 a second, 0.5 ms each
    assert np.nanmedian(cs.values[:, cs.counters.index("rate(http.server.duration.count)"), :]) == pytest.approx(1)
    assert np.nanmedian(cs.values[:, cs.counters.index("http.server.duration.mean"), :]) == pytest.approx(0.5)
    assert any("1 metric of histograms or summaries read as their count's rate (rate(NAME.count)) and their mean "
               "over each interval (NAME.mean): http.server.duration" in n for n in cs.notes), cs.notes
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
    # (a histogram without its temporality: neither cumulative nor delta, not read)
    assert str(err.value) == f"{p}: no gauge, sum or histogram data point in these OTLP metrics"


def test_delta_histograms_and_summaries_read_as_their_rate_and_mean(tmp_path):
    """A delta exponential histogram (each point its interval's count and sum) and a summary
    (cumulative): each its count's rate and its mean; a point without its sum adds to the count's
    rate only."""
    def point(t, count, total, start=None):
        dp = {"timeUnixNano": str((T0 + t) * 10**9), "count": str(count), "attributes": []}
        if total is not None:
            dp["sum"] = total
        if start is not None:
            dp["startTimeUnixNano"] = str((T0 + start) * 10**9)
        return dp

    lines = []
    for i in range(1, 40):
        t = 10 * i
        lines.append(json.dumps({"resourceMetrics": [{"resource": {"attributes": [
            {"key": "host.name", "value": {"stringValue": "api-1"}}]}, "scopeMetrics": [{"metrics": [
                {"name": "rpc.duration", "exponentialHistogram": {"aggregationTemporality": 1, "dataPoints": [
                    point(t, 20, None if i == 7 else 20 * (3.0 if i >= 30 else 1.5), start=t - 10)]}},
                {"name": "db.latency", "summary": {"dataPoints": [point(t, 5 * i, 10.0 * i)]}}]}]}]}))
    cs = load_counters([_write(tmp_path / "h.json", lines)])
    assert sorted(cs.counters) == ["db.latency.mean", "rate(db.latency.count)", "rate(rpc.duration.count)",
                                   "rpc.duration.mean"]
    mean = cs.values[0, cs.counters.index("rpc.duration.mean")]
    assert mean[0] == pytest.approx(1.5) and mean[-1] == pytest.approx(3.0) and np.isnan(mean[6])  # no sum there
    assert np.nanmedian(cs.values[0, cs.counters.index("rate(rpc.duration.count)")]) == pytest.approx(2.0)
    assert np.nanmedian(cs.values[0, cs.counters.index("db.latency.mean")]) == pytest.approx(2.0)  # 10 ms / 5
