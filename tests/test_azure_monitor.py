"""Azure Monitor metrics (az monitor metrics list / the batch API, JSON) read as counters across
servers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fuzzing.strategies import azure_metrics
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

from conftest import first_finding_row

VMS = [f"vm-web-0{k}" for k in range(5)]


def test_a_folder_of_az_outputs_a_vm_each_reads_as_a_fleet(tmp_path):
    folder = tmp_path / "azure"
    folder.mkdir()
    for k, vm in enumerate(VMS):
        (folder / f"{vm}.json").write_text(json.dumps(azure_metrics(vm, busy_from=150 if k == 3 else None, k=k),
                                                      indent=2))
    files = classify([str(folder)]).files["counters"]
    assert len(files) == 5
    cs = load_counters(files)
    assert cs.servers == VMS and cs.interval == 60 and cs.n_points == 240  # the resource's name, from its id
    assert cs.counters == ["Percentage CPU", "Available Memory Bytes", "Disk Read Bytes{LUN=0}",
                           "Disk Read Bytes{LUN=1}"]  # a dimension's value tells its series apart
    assert cs.values[3, 0, 149] == 12 + (149 * 7 + 3) % 5 and cs.values[3, 0, 150] == 52 + (150 * 7 + 3) % 5
    assert cs.values[0, 3, 5] == 2e6 + 1e4 * (5 % 3)
    assert any(n.endswith("Disk Read Bytes in Bytes, Percentage CPU in Percent") for n in cs.notes), cs.notes
    first = first_finding_row(folder)
    assert "| vm-web-03: Percentage CPU at another level since 2026-11-28 12:30:00 UTC" in first, first


def test_the_batch_api_several_aggregations_and_errors(tmp_path):
    """The batch API's answer (a resource id per entry); a metric with two aggregations is a
    counter each; a metric Azure answered with an error is partial data, said."""
    docs = [azure_metrics(vm, samples=60, k=k) for k, vm in enumerate(VMS[:3])]
    for d in docs:
        for dp in d["value"][0]["timeseries"][0]["data"]:
            dp["maximum"] = dp["average"] + 5
    docs[1]["value"][1]["errorCode"] = "Throttled"
    docs[1]["value"][1]["errorMessage"] = "Too many requests"
    docs[1]["value"][1]["timeseries"] = []
    batch = {"values": [{"resourceid": d["value"][0]["id"].split("/providers/Microsoft.Insights")[0],
                         "value": [{**m, "id": None} for m in d["value"]]} for d in docs]}
    p = tmp_path / "batch.json"
    p.write_text(json.dumps(batch))
    cs = load_counters([p])
    assert cs.servers == VMS[:3]
    assert {"Percentage CPU (average)", "Percentage CPU (maximum)"} <= set(cs.counters)
    c = cs.counters.index("Percentage CPU (maximum)")
    assert np.allclose(cs.values[:, c], cs.values[:, cs.counters.index("Percentage CPU (average)")] + 5)
    assert any(n.startswith("partial data: batch.json: Azure Monitor answered 1 metric with an error: Available "
                            "Memory Bytes: Too many requests") for n in cs.notes), cs.notes


def test_damaged_azure_outputs(tmp_path):
    d = azure_metrics("vm-1", samples=30)
    d["value"][0]["timeseries"][0]["data"][3]["timeStamp"] = None
    d["value"][0]["timeseries"][0]["data"][4]["average"] = "busy"
    d["value"][2] = "?"
    p = tmp_path / "vm-1.json"
    p.write_text(json.dumps(d) + "\n" + json.dumps(azure_metrics("vm-2", samples=30))[:500] + "\n")
    cs = load_counters([p])
    assert cs.servers == ["vm-1"] and "Percentage CPU" in cs.counters
    assert any("vm-1.json: 4 records that are no Azure Monitor metric, series or point skipped" in n
               for n in cs.notes), cs.notes  # two points, a metric, the cut line
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"value": [{**azure_metrics("vm-3")["value"][0], "timeseries": []}]}))
    with pytest.raises(InputError, match=r"empty\.json: no Azure Monitor metric with a value"):
        load_counters([empty])
