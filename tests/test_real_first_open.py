"""The real kernel traces opened with no options: units cut from the trace, the recorded process
named with where its time went, clipped units and the system's background kept out of the
comparisons, thread metrics derived from the trace, and no number a reader cannot believe."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from perftriage.analysis.execgraph import tasks
from perftriage.analysis.threads.deviation import ThreadParams
from perftriage.analysis.triage import Options, run_triage

from conftest import ROOT, needs_bt2, real_trace

# trace -> the process it was recorded for, and the state that dominates its critical path
RECORDED = {
    "tracevizlab-wget-k-20180802-115043": ("wget", "waiting for the network"),
    "tracevizlab-wget-k-20180802-115406": ("wget", "waiting for the network"),
    "tracevizlab-cat-kern-ust": ("cat", "waiting for the network"),
    "tracevizlab-apt": ("apt", "running on a CPU"),
    # genKernelTraces forks 2673, which the scheduler names multithread from then on (no exec event
    # in this trace: a rename); a process goes by the last name the trace shows
    "tc-many-threads": ("multithread", "running on a CPU"),
}
_RESULTS = {}
HUGE_RATIO = re.compile(r"\b\d{5,}(\.\d+)?x\b|\d(\.\d+)?e\+\d+x")


def triage(name):
    if name not in _RESULTS:
        _RESULTS[name] = run_triage([real_trace(name)], Options(threads=ThreadParams(replicates=60)))
    return _RESULTS[name]


def texts(res):
    for f in res.findings:
        yield f.title
        yield from f.evidence
        for t in f.tables:
            for row in t.rows:
                yield " ".join(str(c) for c in row)


@needs_bt2
@pytest.mark.parametrize("name", sorted(RECORDED))
def test_no_options_names_the_recorded_process_and_where_its_time_went(name):
    res = triage(name)
    proc, state = RECORDED[name]
    assert any(n.startswith("no request markers in ") and "--units" in n for n in res.report.notes)
    first = [f for f in res.findings if f.title.startswith(f"{proc} spent ")]
    assert first, [f.title for f in res.findings]
    assert state in first[0].title.split(",")[0]
    assert first[0].severity == "warning"
    # the plain words come first, the method's terms after
    assert first[0].evidence[-1].startswith("details: critical-path states")


@needs_bt2
@pytest.mark.parametrize("name", sorted(RECORDED))
def test_clipped_and_background_units_are_never_outliers(name):
    res = triage(name)
    req = res.requests
    span, role = req.fields["span"], req.fields["role"]
    out = res.outliers
    if out is not None:
        assert len(out) == len(req)
        assert (span[out] == "whole").all() and not np.isin(role[out], tasks.BACKGROUND).any()
        labels = res.cluster_labels
        assert (labels[~np.isin(np.arange(len(req)), res.compared)] == -2).all()
        why = res.why_short
        assert all(why[i] for i in np.flatnonzero(labels == -2))  # says why it was not compared
    else:
        assert any("too few for outlier detection" in n for n in res.report.notes)
    # the slowest-units table lists whole units only
    for f in res.findings:
        if f.title.startswith("Slowest "):
            assert "longer than the trace" not in " ".join(" ".join(map(str, r)) for r in f.tables[0].rows)


@needs_bt2
@pytest.mark.parametrize("name", sorted(RECORDED))
def test_thread_metrics_by_default_without_the_background(name):
    res = triage(name)
    ts = res.thread_series
    assert ts is not None and ts.source == "kernel trace"
    if ts.n_threads < 3:  # a trace of a few hundred ms: few threads active over 10 windows of 10 ms
        assert any("at least 3 are needed to compare them" in n for n in res.report.notes)
        return
    names = set(ts.groups["pool"])
    assert not any(n.startswith(("lttng", "kworker", "ksoftirqd", "rcu_", "migration")) for n in names), names
    if res.threads is not None:
        for r in res.threads.results:
            for rk in r.ranking:
                assert not any(r.names[i].startswith("lttng") for i in rk.items)


@needs_bt2
@pytest.mark.parametrize("name", sorted(RECORDED))
def test_no_ratio_against_nothing(name):
    res = triage(name)
    bad = [t for t in texts(res) if HUGE_RATIO.search(t)]
    assert not bad, bad[:3]


@needs_bt2
def test_background_on_request_compares_everything():
    res = run_triage([real_trace("tracevizlab-wget-k-20180802-115043")],
                     Options(background=True, thread_metrics=False))
    role = res.requests.fields["role"]
    notes = " ".join(res.report.notes)
    assert np.isin(role, tasks.BACKGROUND).any()
    assert "are background" not in notes  # nothing left out for being background


@needs_bt2
def test_report_cli_on_a_trace_without_markers():
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(real_trace("tracevizlab-wget-k-20180802-115406")),
                        "--format", "json", "--replicates", "50"], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["findings"][0]["title"].startswith("wget spent ")
    assert "No findings" not in r.stdout
    table = next(f for f in rep["findings"] if f["title"] == "Processes in the trace")
    assert table["evidence"][0].endswith("; where the time of the one above went, along its critical path")
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(real_trace("tracevizlab-wget-k-20180802-115406")),
                        "--units", "markers", "--no-thread-metrics", "-q"], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0 and "wget spent" not in r.stdout
