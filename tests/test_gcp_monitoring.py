"""Google Cloud Monitoring time series (timeSeries.list JSON) read as counters across servers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fuzzing.strategies import gcp_time_series
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

from conftest import first_finding_row

T0 = 1_795_860_000


def test_time_series_of_gce_instances_read_as_a_fleet(tmp_path):
    p = tmp_path / "ts.json"
    p.write_text(json.dumps(gcp_time_series(busy_from=150)))
    assert classify([str(p)]).files["counters"] == [p]
    cs = load_counters([p])
    # the agent's series give only their instance's id: named as compute's series name it
    assert cs.servers == [f"web-{h}" for h in range(5)] and cs.interval == 60 and cs.start == T0
    # the domain left off the type; a label with one value over a type's series left off its name
    assert cs.counters == ["instance/cpu/utilization", "rate(instance/network/received_bytes_count)",
                           "rate(disk/operation_count)"]
    rx = cs.values[:, 1, :]  # a DELTA: each minute's bytes over its minute
    assert rx[2, 7] == pytest.approx((600_000 + 6_000 * ((7 + 2) % 4)) / 60)
    ops = cs.values[:, 2, :]  # CUMULATIVE: from each point to the next, the first without one
    assert np.isnan(ops[:, 0]).all() and ops[3, 8] == pytest.approx((1200 + 60 * (8 % 3)) / 60)
    assert np.isfinite(cs.values[:, :, 1:]).all()
    assert "ts.json: 1 metric of distributions left out: https/total_latencies" in cs.notes
    first = first_finding_row(p)
    assert "| web-1: instance/cpu/utilization at another level since 2026-11-28 12:30:00 UTC" in first, first


def test_damaged_time_series_are_skipped_or_one_line(tmp_path):
    doc = gcp_time_series(hosts=3, samples=30)
    ts = doc["timeSeries"]
    ts[0]["points"][3]["value"] = {"doubleValue": "high"}
    ts[1]["points"][4]["interval"] = {"startTime": "2026-11-28T10:00:00Z"}  # no end
    ts[2]["metric"] = {}
    lines = tmp_path / "pages.json"  # pages one a line, the last cut
    page = json.dumps(doc)
    lines.write_text(page + "\n" + page[: len(page) // 2] + "\n")
    cs = load_counters([lines])
    assert cs.servers == ["web-0", "web-1", "web-2"]
    # the three damaged, and the cut page
    assert any("pages.json: 4 series or points that are no Cloud Monitoring time series or point with a number "
               "skipped" in n for n in cs.notes), cs.notes
    only = tmp_path / "latencies.json"
    only.write_text(json.dumps({"timeSeries": doc["timeSeries"][-1:]}))
    with pytest.raises(InputError, match=r"latencies\.json: no point of a Cloud Monitoring time series with a "
                                         r"number \(distributions only\)"):
        load_counters([only])
