"""``--scheduler``: the traces of a fleet read host by host on a real Dask cluster (a LocalCluster
of worker processes), the critical paths walked there in batches; the findings equal a local run's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import ROOT, needs_bt2

distributed = pytest.importorskip("distributed")

from perftriage.analysis.ctf.hosts import host_groups  # noqa: E402
from perftriage.analysis.ctf.pipeline import read_once  # noqa: E402
from perftriage.analysis.ctf.summary import EventCounter  # noqa: E402
from perftriage.analysis.distributed import Cluster  # noqa: E402
from perftriage.analysis.errors import InputError, TraceReadError  # noqa: E402
from perftriage.analysis.execgraph.builder import GraphBuilder  # noqa: E402
from perftriage.analysis.requests.features import extract_features  # noqa: E402
from perftriage.analysis.requests.markers import BUILTIN_MARKERS, MarkerRequests  # noqa: E402
from perftriage.analysis.sim.sample import write_host_pairs  # noqa: E402

pytestmark = needs_bt2
TWO_HOSTS = ROOT / "sample_traces" / "two-hosts"


@pytest.fixture(scope="module")
def scheduler():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def eight_hosts(tmp_path_factory):
    out = tmp_path_factory.mktemp("fleet") / "eight-hosts"
    write_host_pairs(out, pairs=4, requests=250)
    return out


def report(*args) -> tuple[int, dict | None, str]:
    p = subprocess.run([sys.executable, "-m", "perftriage", "report", "-q", "--format", "json", *map(str, args)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    doc = json.loads(p.stdout) if p.returncode in (0, 4) and p.stdout else None
    if doc is not None:
        doc.pop("created", None)
    return p.returncode, doc, p.stderr


def test_host_groups_name_hosts_as_one_reader_of_all_traces_does(tmp_path):
    groups = host_groups([TWO_HOSTS])
    assert sorted(groups) == ["db-01", "web-01"]
    assert len(groups["web-01"]) == 2 and all("web-01" in p for p in groups["web-01"])  # kernel + user space
    # two kernel traces with one hostname are two machines: named after their folders, as a local read names them
    for name in ("a", "b"):
        shutil.copytree(TWO_HOSTS / "db-01", tmp_path / name / "db-01")
    groups = host_groups([tmp_path])
    summary = read_once([tmp_path], [EventCounter()]).results[0]
    assert sorted(groups) == sorted(summary.hosts) == ["db-01 (a)", "db-01 (b)"]


def test_two_hosts_report_on_the_cluster_equals_the_local_one(scheduler):
    rc_local, local, _ = report(TWO_HOSTS)
    rc, remote, err = report("--scheduler", scheduler, TWO_HOSTS)
    assert rc == rc_local == 0, err
    assert remote == local
    assert any("hosts web-01 and db-01" in n and "waits followed across the two hosts" in n for n in remote["notes"])


def test_eight_host_fleet_on_the_cluster_equals_the_local_run(scheduler, eight_hosts):
    rc_local, local, _ = report(eight_hosts)
    rc, remote, err = report("--scheduler", scheduler, eight_hosts)
    assert rc == rc_local == 0, err
    assert remote == local
    matched = [n for n in remote["notes"] if "packets matched" in n]
    assert len(matched) == 4 and all(f"web-0{i} and db-0{i}" in " ".join(matched) for i in range(1, 5))
    assert any(f["analysis"] == "clusters" for f in remote["findings"])


def test_a_report_on_request_markers_leaves_the_graphs_on_the_workers(scheduler, monkeypatch):
    from perftriage.analysis.distributed import ClusterGraphs
    from perftriage.analysis.execgraph.graph import ExecGraph
    from perftriage.analysis.triage import Options, run_triage

    fetched = []
    real = ClusterGraphs.graphs

    def counted(self):
        if not self.fetched:  # brought from the workers now
            fetched.append(sorted(self.facts))
        return real(self)

    monkeypatch.setattr(ClusterGraphs, "graphs", counted)
    res = run_triage([TWO_HOSTS], Options(scheduler=scheduler, keep_graphs=False))  # as perftriage report
    assert fetched == [] and res.graphs == {}
    assert any("hosts web-01 and db-01" in n and "waits followed" in n for n in res.report.notes)
    assert len(res.requests) == 600 and res.analysis is not None
    kept = run_triage([TWO_HOSTS], Options(scheduler=scheduler))  # as the app, which walks paths later
    assert fetched == [["db-01", "web-01"]]
    assert type(kept.graphs) is dict and all(isinstance(g, ExecGraph) for g in kept.graphs.values())
    assert list(kept.graphs) == list(run_triage([TWO_HOSTS], Options(findings=False)).graphs)  # in the same order


def test_features_walked_in_batches_on_the_workers_equal_the_local_walk(scheduler, eight_hosts):
    graphs, requests = read_once([eight_hosts], [GraphBuilder(), MarkerRequests()]).results
    local = extract_features(graphs, requests)
    with Cluster(scheduler) as cluster:
        passed = cluster.read([eight_hosts], BUILTIN_MARKERS)
        summary, remote_graphs, remote_requests = passed.results
        import perftriage.analysis.distributed as d

        d.BATCH_REQUESTS, saved = 97, d.BATCH_REQUESTS  # many batches, of uneven sizes
        try:
            ft = cluster.features(remote_requests)
        finally:
            d.BATCH_REQUESTS = saved
    assert list(remote_graphs) == list(graphs) and len(graphs) == 8
    assert summary.events == sum(summary.per_host_events.values()) and len(summary.per_host_events) == 8
    assert np.array_equal(remote_requests.id, requests.id) and np.array_equal(remote_requests.start, requests.start)
    for name in ("durations", "counts", "total"):
        assert np.array_equal(getattr(ft, name), getattr(local, name)), name
    for name in ("syscalls", "state_seq"):
        a, b = getattr(ft, name), getattr(local, name)
        assert a.vocab == b.vocab and a.values.dtype == b.values.dtype
        assert np.array_equal(a.values, b.values) and np.array_equal(a.offsets, b.offsets)
    assert ft.fields.keys() == local.fields.keys() and "elsewhere_host" in ft.fields
    assert (ft.fields["elsewhere_host"] != "").sum() > 50  # slow_db: paths that spent most time on a db host
    for k in ft.fields:
        assert np.array_equal(ft.fields[k], local.fields[k]), k


def test_a_damaged_host_trace_gives_the_same_partial_data_as_locally(scheduler, tmp_path):
    trace = tmp_path / "two-hosts"
    shutil.copytree(TWO_HOSTS, trace)
    stream = max((trace / "db-01" / "kernel").glob("channel0_*"), key=lambda p: p.stat().st_size)
    data = stream.read_bytes()
    stream.write_bytes(data[: len(data) * 2 // 3 + 5])  # cut inside a packet
    rc_local, local, _ = report(trace)
    rc, remote, err = report("--scheduler", scheduler, trace)
    assert rc == rc_local and remote == local
    assert any("partial data" in n and "channel0_" in n for n in remote["notes"])


def test_a_trace_the_workers_cannot_open_is_one_line_naming_it(scheduler, tmp_path):
    trace = tmp_path / "two-hosts"
    shutil.copytree(TWO_HOSTS, trace)
    for f in (trace / "db-01" / "kernel").glob("channel0_*"):
        f.write_bytes(b"\0" * 16)
    rc_local, _, err_local = report(trace)
    rc, _, err = report("--scheduler", scheduler, trace)
    assert rc == rc_local != 0
    assert err.strip() == err_local.strip() and len(err.strip().splitlines()) == 1 and "db-01" in err


def test_errors_from_workers_reach_the_client_whole():
    import pickle

    e = pickle.loads(pickle.dumps(TraceReadError("/t/kernel", "cut short", 12)))
    assert (type(e), str(e), e.path, e.problem, e.events_read) == (TraceReadError, "/t/kernel: cut short", "/t/kernel",
                                                                   "cut short", 12)
    e = pickle.loads(pickle.dumps(InputError("/t", "bad")))
    assert str(e) == "/t: bad" and e.path == "/t"


def test_unreachable_scheduler_and_bad_address_are_one_line():
    t0 = time.monotonic()
    rc, _, err = report("--scheduler", "tcp://127.0.0.1:9", "--scheduler-timeout", "1.5", TWO_HOSTS)
    assert rc != 0 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err
    assert len(err.strip().splitlines()) == 1
    assert time.monotonic() - t0 < 8  # gave up after 1.5 s (the default is 10)
    rc, _, err = report("--scheduler", "not an address", TWO_HOSTS)
    assert rc == 2 and "--scheduler" in err


async def test_the_app_opens_a_fleet_read_on_the_cluster(scheduler, eight_hosts):
    from perftriage.analysis.triage import Options
    from perftriage.tui.app import PerftriageApp
    from perftriage.tui.panes.requests import RequestsPane

    app = PerftriageApp([str(eight_hosts)], Options(scheduler=scheduler))
    async with app.run_test() as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.load_error is None
        assert sorted(app.result.graphs) == sorted([f"web-0{i}" for i in range(1, 5)] + [f"db-0{i}" for i in range(1, 5)])
        pane = app.query_one(RequestsPane)
        assert pane.table is not None and len(pane.table) == 1000
        assert app.result.features is not None and "elsewhere_host" in app.result.features.fields
