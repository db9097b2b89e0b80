"""Amazon CloudWatch metrics (aws cloudwatch get-metric-data / get-metric-statistics JSON) read as
counters across servers."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from fuzzing.strategies import cloudwatch_metric_data
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

from conftest import ROOT, first_finding_row

INSTANCES = [f"i-0{h:02d}a7c3e9b1f5d2{h:02d}" for h in range(6)]


def _write(path, doc):
    path.write_text(json.dumps(doc, indent=1))
    return path


@pytest.mark.parametrize("labels,counters", [
    ("dynamic", ["CPUUtilization", "NetworkIn", "StatusCheckFailed"]),  # ${PROP('Dim.InstanceId')} ${PROP('MetricName')}
    ("search", ["cpu", "net", "check"])])  # a SEARCH per metric: series labelled by instance alone, the Id the metric
def test_get_metric_data_of_a_fleet_reads_each_instance_as_a_server(tmp_path, labels, counters):
    p = _write(tmp_path / "cw.json", cloudwatch_metric_data(busy_from=200, labels=labels))
    assert classify([str(p)]).files["counters"] == [p]
    cs = load_counters([p])
    assert cs.servers == INSTANCES and cs.counters == counters and cs.interval == 300 and cs.n_points == 288
    assert cs.start == 1_795_860_000  # newest first in the file: read in time order
    cpu = cs.values[:, 0, :]
    assert cpu[2, 0] == 20 + 2 and cpu[2, 199] == 20 + (199 * 7 + 2) % 6 and cpu[2, 200] == 45 + 20 + (200 * 7 + 2) % 6
    assert any("the server is word 1 of the labels (i-000a7c3e9b1f5d200, " in n for n in cs.notes), cs.notes
    first = first_finding_row(p)
    assert f"| {INSTANCES[2]}: {counters[0]} at another level since 2026-11-29 02:40:00 UTC" in first, first


def test_get_metric_statistics_one_file_an_instance(tmp_path):
    """get-metric-statistics gives one metric of one instance (its dimension is not in the output):
    the file is the server, each statistic a counter, the unit said; its points in no order."""
    folder = tmp_path / "cpu"
    folder.mkdir()
    rng = np.random.default_rng(2)
    for h, inst in enumerate(INSTANCES[:4]):
        points = [{"Timestamp": f"2026-11-27T{i // 12:02d}:{i % 12 * 5:02d}:00+00:00",
                   "Average": 30 + rng.normal(0, 1) + (35 if h == 3 and i >= 200 else 0),
                   "Maximum": 60 + rng.normal(0, 2), "Unit": "Percent"} for i in range(288)]
        rng.shuffle(points)
        _write(folder / f"{inst}.json", {"Label": "CPUUtilization", "Datapoints": points})
    files = classify([str(folder)]).files["counters"]
    assert len(files) == 4
    cs = load_counters(files)
    assert cs.servers == INSTANCES[:4] and cs.counters == ["CPUUtilization (Average)", "CPUUtilization (Maximum)"]
    assert cs.interval == 300 and cs.n_points == 288 and np.isfinite(cs.values).all()
    assert any(n.endswith(": CPUUtilization in Percent") for n in cs.notes), cs.notes
    first = first_finding_row(folder)
    assert f"| {INSTANCES[3]}: CPUUtilization (Average) at another level since 2026-11-27 16:40:00 UTC" in first, first


def test_partial_damaged_and_unlabelled_metric_data(tmp_path):
    doc = cloudwatch_metric_data(hosts=4, samples=60)
    res = doc["MetricDataResults"]
    res[0]["StatusCode"] = "PartialData"  # the rest behind a NextToken
    res[1]["Values"] = res[1]["Values"][:-5]  # a series whose values and times do not pair
    res[2]["Timestamps"] = res[2]["Timestamps"][:10] + [None] + res[2]["Timestamps"][11:]
    res[3]["Values"][4] = "high"
    doc["Messages"] = [{"Code": "MaxMetricsExceeded", "Value": "The maximum number of metrics was exceeded"}]
    p = _write(tmp_path / "cw.json", doc)
    cs = load_counters([p])
    assert INSTANCES[0] in cs.servers and INSTANCES[1] in cs.servers and len(cs.servers) == 4
    notes = " | ".join(cs.notes)
    assert "partial data: cw.json: CloudWatch gave 1 series in part only (StatusCode not Complete" in notes, notes
    assert "cw.json: 1 series or point that is no CloudWatch metric data skipped" in notes
    assert "cw.json: 1 point without a time skipped" in notes
    assert "CloudWatch said: MaxMetricsExceeded The maximum number of metrics was exceeded" in notes
    # labels that name no server (each query's default label, the metric's name): the file's server,
    # two series of one label told apart by their Id
    plain = {"MetricDataResults": [{"Id": sid, "Label": "CPUUtilization", "StatusCode": "Complete",
                                    "Timestamps": [f"2026-11-27T10:{m:02d}:00Z" for m in range(30)],
                                    "Values": [float(m % 4 + k) for m in range(30)]} for k, sid in enumerate(("a", "b"))]}
    cs = load_counters([_write(tmp_path / "web-07.json", plain)])
    assert cs.servers == ["web-07"] and cs.counters == ["CPUUtilization (a)", "CPUUtilization (b)"]
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(cloudwatch_metric_data(hosts=2, samples=10))[:300])
    with pytest.raises(InputError) as e:
        load_counters([cut])
    assert str(e.value).startswith(str(cut)) and "\n" not in str(e.value)
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(p)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 4, out.stderr  # partial data
