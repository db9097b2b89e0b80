"""Graphite's render API output (JSON or CSV) read as counters across servers."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from fuzzing.strategies import csv_bytes, graphite_series
from perftriage.analysis.counters.graphite import server_part
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

from conftest import first_finding_row


@pytest.mark.parametrize("form", ["json", "csv"])
def test_render_output_reads_as_a_fleet_and_the_busy_host_named(tmp_path, form):
    series = graphite_series(samples=120, busy_from=80)
    p = tmp_path / f"render.{form}"
    if form == "json":
        p.write_text(json.dumps(series))
    else:
        p.write_bytes(csv_bytes([[s["target"], time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)),
                                  "" if v is None else str(v)] for s in series for v, t in s["datapoints"]]))
    assert classify([str(p)]).files["counters"] == [p]
    cs = load_counters([p])
    assert cs.servers == ["web00", "web01", "web02", "web03"] and cs.interval == 60 and cs.n_points == 120
    assert sorted(cs.counters) == ["servers.cpu.system", "servers.cpu.user", "servers.memory.used"]
    assert int(np.isnan(cs.values).sum()) == 4 * 3 * 7  # the nulls (every 17th point): missing, not zero
    assert any("the server is part 2 of their paths (web00, web01, web02, web03)" in n for n in cs.notes)
    assert any("read as UTC" in n for n in cs.notes) == (form == "csv")
    first = first_finding_row(p)
    assert "| web01: servers.cpu.user at another level since 2026-11-28 11:20:00 UTC" in first, first


def test_which_part_of_a_path_names_the_server():
    metrics = ("cpu.user", "cpu.system", "load.shortterm")
    # hosts named without digits: the earliest part that varies while the rest repeats
    assert server_part([f"servers.{h}.{m}" for h in ("alpha", "beta", "gamma") for m in metrics]) == 1
    # the host last, its metric before it: the part whose values look like hosts' names
    assert server_part([f"{m}.web-{h}" for h in range(3) for m in metrics]) == 2
    assert server_part([f"collectd.ip-10-0-0-{h}.{m}" for h in range(3) for m in metrics]) == 1
    # two parts make a grid (every host has both disks): the one of hosts' names
    assert server_part([f"disk.{d}.web-{h}.ops" for d in ("sda", "sdb") for h in range(3)]) == 2
    assert server_part([f"servers.web01.{m}" for m in metrics]) is None  # one host
    assert server_part(["sumSeries(servers.*.cpu.user)", "averageSeries(servers.*.load)"]) is None


def test_damaged_render_output(tmp_path):
    series = graphite_series(samples=30)
    series[2]["datapoints"] = "none"
    series[3]["datapoints"][4] = [1.0]
    p = tmp_path / "render.json"
    p.write_text(json.dumps(series))
    cs = load_counters([p])
    assert any("render.json: 2 series or points that are no Graphite series" in n for n in cs.notes), cs.notes
    rows = [[s["target"], time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)), "" if v is None else str(v)]
            for s in graphite_series(samples=30) for v, t in s["datapoints"]]
    rows[7][1] = "2026-11-28 10:0"  # a time cut: its row counted, the others read
    csv_file = tmp_path / "render.csv"
    csv_file.write_bytes(csv_bytes(rows))
    cc = load_counters([csv_file])
    assert cc.n_points == 30 and any("render.csv: 1 row that is no PATH,TIME,VALUE" in n for n in cc.notes), cc.notes
    bad = tmp_path / "bad.json"
    bad.write_text('[{"target": "a.b", "datapoints": [[1, 1795860000]]}, {"target"')
    with pytest.raises(InputError) as err:
        load_counters([bad])
    assert str(err.value).startswith(f"{bad}: not valid JSON"), err.value
