"""Datadog metrics (its query API's JSON answers) read as counters across servers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fuzzing.strategies import datadog_query
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

from conftest import first_finding_row


def test_query_answers_read_as_a_fleet_by_host(tmp_path):
    p = tmp_path / "dd.json"
    p.write_text("".join(json.dumps(a) + "\n" for a in datadog_query(busy_from=150)))
    assert classify([str(p)]).files["counters"] == [p]
    cs = load_counters([p])
    assert cs.servers == [f"web-{h}" for h in range(5)] and cs.interval == 60 and cs.start == 1_795_860_000
    # the host tag is the server; the device tag tells the disk's series apart
    assert cs.counters == ["system.cpu.user", "system.disk.in_use{device=/dev/sda}", "system.disk.in_use{device=/dev/sdb}"]
    cpu = cs.values[:, 0, :]
    assert cpu[2, 149] == 15 + (149 * 7 + 2) % 5 and cpu[2, 150] == 55 + (150 * 7 + 2) % 5
    assert np.isnan(cpu[:, 22]).all()  # a null: a missing sample
    assert cs.values[4, 2, 3] == pytest.approx(0.5)
    first = first_finding_row(p)
    assert "| web-2: system.cpu.user at another level since 2026-11-28 12:30:00 UTC" in first, first


def test_damaged_answers_and_an_error(tmp_path):
    answers = datadog_query(hosts=3, samples=30)
    answers[0]["series"][1]["pointlist"][4] = ["soon", 3]
    answers[1]["series"][0] = {"metric": "system.disk.in_use"}
    error = {"status": "error", "res_type": "time_series", "series": [], "query": "avg:system.cpu.user{*} by {host}",
             "error": "Rate limit of 300 requests in 3600 seconds reached."}
    p = tmp_path / "dd.json"
    p.write_text(json.dumps(answers[0]) + "\n" + json.dumps(error) + "\n" + json.dumps(answers[1])[:200] + "\n")
    cs = load_counters([p])
    assert cs.servers == ["web-0", "web-1", "web-2"] and cs.counters == ["system.cpu.user"]
    assert "dd.json: 2 records that are no Datadog series or point skipped" in cs.notes, cs.notes  # a point, the cut line
    assert any(n.startswith("partial data: dd.json: Datadog answered 1 query with an error: Rate limit") for n in cs.notes)
    only = tmp_path / "limited.json"
    only.write_text(json.dumps(error))
    with pytest.raises(InputError, match=r"limited\.json: no Datadog series with a point .*: Rate limit of 300"):
        load_counters([only])
