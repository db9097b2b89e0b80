"""Per-request features on the simulator's ground truth and on real traces; CSV export/import."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from perftriage.analysis.errors import InputError
from perftriage.analysis.execgraph.graph import BLOCKED
from perftriage.analysis.requests import critical_path
from perftriage.analysis.requests.critical_path import STATES, PathFinder
from perftriage.analysis.requests.features import PUBLISHED_STATES, extract_features, read_features, to_csv
from perftriage.analysis.triage import Options, run_triage

from conftest import REAL_TRACE_EVENTS, ROOT, needs_bt2, real_trace

SAMPLE = ROOT / "sample_traces" / "webserver"


@pytest.fixture(scope="module")
def sample_result():
    if not (SAMPLE / "ground_truth.json").exists():
        pytest.fail("sample_traces/webserver is missing")
    return run_triage([SAMPLE])


def causes_of(ft):
    truth = {r["rid"]: r["cause"] for r in json.loads((SAMPLE / "ground_truth.json").read_text())["requests"]}
    return np.array([truth[int(q.split("rid=")[1])] for q in ft.fields["querystring"]])


@needs_bt2
def test_every_request_gets_a_path_that_sums_to_its_duration(sample_result):
    ft = sample_result.features
    assert len(ft) == 2500
    assert np.array_equal(ft.durations.sum(axis=1), ft.total)
    assert (ft.total > 0).all()
    assert (ft.counts.sum(axis=1) >= 1).all()
    # the state sequence has one entry per segment
    assert np.array_equal(ft.state_seq.lengths(), ft.counts.sum(axis=1))


@needs_bt2
@pytest.mark.parametrize("cause,state", [("slow_disk", "BD"), ("cpu_contention", "BP"), ("connect_retry", "BN"),
                                         ("write_heavy", "BN"), ("normal", "RU")])
def test_injected_causes_show_in_the_expected_state(sample_result, cause, state):
    ft = sample_result.features
    causes = causes_of(ft)
    rows = np.flatnonzero(causes == cause)
    assert len(rows) >= 10
    share = ft.durations[rows] / ft.total[rows, None]
    median_share = np.median(share, axis=0)
    assert ft.states[int(np.argmax(median_share))] == state, dict(zip(ft.states, median_share.round(2)))


@needs_bt2
def test_lock_contention_path_runs_through_the_lock_holders(sample_result):
    # every wait of a lock-contention request inside fcntl was ended by another PHP worker (the
    # holder releasing the lock), and the critical path covers that wait with the holder's work
    ft = sample_result.features
    g = sample_result.graphs["web-01"]
    pf = PathFinder(g)
    fcntl_id = g.syscall_names.index("fcntl")
    rows = np.flatnonzero(causes_of(ft) == "lock_contention")
    waits = followed = 0
    for i in rows:
        tid, t0, t1 = int(ft.tid[i]), int(ft.start[i]), int(ft.end[i])
        sl = g.intervals_of(tid)
        m = ((g.iv_state[sl] == BLOCKED) & (g.iv_syscall[sl] == fcntl_id) & (g.iv_start[sl] >= t0)
             & (g.iv_end[sl] <= t1))
        if not m.any():
            continue
        s = pf.path(tid, t0, t1).segments(g)
        for a, b, waker in zip(g.iv_start[sl][m], g.iv_end[sl][m], g.iv_waker[sl][m]):
            waits += 1
            assert g.comm(int(waker)) == "apache2" and int(waker) != tid
            inside = (s.start >= a) & (s.end <= b)
            if (s.tid[inside] != tid).all() and (s.tid[inside] == waker).any():
                followed += 1
    assert waits >= 50
    assert followed == waits
    # and their system calls are dominated by fcntl
    fcntl = ft.syscalls.vocab.index("fcntl")
    n_fcntl = np.array([(ft.syscalls.row(i) == fcntl).sum() for i in rows])
    assert np.median(n_fcntl) >= 200


@needs_bt2
def test_csv_round_trip(sample_result, tmp_path):
    ft = sample_result.features
    p = tmp_path / "f.csv"
    p.write_text(to_csv(ft))
    back = read_features(p)
    assert back.states == list(STATES)
    assert np.array_equal(back.durations, ft.durations)
    assert np.array_equal(back.counts, ft.counts)
    assert np.array_equal(back.total, ft.total)
    assert all(back.syscalls.names(i) == ft.syscalls.names(i) for i in range(0, len(ft), 97))
    assert all(back.state_seq.names(i) == ft.state_seq.names(i) for i in range(0, len(ft), 97))
    assert list(back.fields["uri"][:5]) == list(ft.fields["uri"][:5])


@needs_bt2
def test_cli_features_then_report_on_the_csv(tmp_path):
    out = tmp_path / "features.csv"
    r = subprocess.run([sys.executable, "-m", "perftriage", "features", str(SAMPLE), "-o", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert out.read_text().splitlines()[0].startswith("id,kind,host,pid,tid,start_ns,end_ns,TT_ns,RU_ns,RS_ns,BP_ns")
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(out)], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "Slowest requests (imported features)" in r.stdout
    assert "BN" in r.stdout and "/checkout.php" in r.stdout


def test_import_errors_name_the_file(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("id,foo,bar\n1,2,3\n")
    with pytest.raises(InputError, match="no state duration columns") as e:
        read_features(bad)
    assert str(bad) in str(e.value)
    bad.write_text("id,RU_ms,RS_ms\n1,2\n")
    with pytest.raises(InputError, match="row 2 has 2 columns"):
        read_features(bad)
    bad.write_text("id,RU_ms,RS_ms\n1,2,abc\n")
    with pytest.raises(InputError, match="not a number"):
        read_features(bad)
    bad.write_text("id,RU_ms,RS_ms\n")
    with pytest.raises(InputError, match="no rows"):
        read_features(bad)


def test_units_by_suffix_and_bare_names(tmp_path):
    p = tmp_path / "f.csv"
    p.write_text("id,RU_ms,BD_us,BN\n7,1.5,250,2\n")
    ft = read_features(p)
    assert ft.states == ["RU", "BD", "BN"]
    assert ft.durations[0].tolist() == [1.5e6, 250e3, 2e6]  # bare names are milliseconds
    assert ft.total[0] == 1.5e6 + 250e3 + 2e6
    assert any("milliseconds" in n for n in ft.notes)


def test_published_form(tmp_path):
    # the shape of github.com/qfournier/request_analysis data/<pid>_*.csv
    (tmp_path / "15403_times.csv").write_text(
        "15403_12_1558061203352552595,0,11543827,296340801,0,57584588,23171272,132770325,0,0,0,521410813\n"
        "15403_12_1558061203873994946,0,1218267,16356346,0,6868424,49736,3023459,0,0,0,27516232\n")
    (tmp_path / "15403_count.csv").write_text("15403_12_1,0,10,12,0,3,1,4,0,0,0,521410813\n"
                                              "15403_12_2,0,5,6,0,1,1,2,0,0,0,27516232\n")
    (tmp_path / "15403_syscalls.csv").write_text("a,read,write,\nb,fcntl,fcntl,fcntl,\n")
    ft = read_features(tmp_path / "15403_times.csv")
    assert ft.states == list(PUBLISHED_STATES)
    assert len(ft) == 2 and ft.total.tolist() == [521410813, 27516232]
    assert np.allclose(ft.durations.sum(axis=1), ft.total)
    assert ft.counts[0].tolist() == [0, 10, 12, 0, 3, 1, 4, 0, 0, 0]
    assert ft.syscalls.names(1) == ["fcntl", "fcntl", "fcntl"]
    assert ft.pid.tolist() == [15403, 15403] and ft.tid.tolist() == [12, 12]


@needs_bt2
@pytest.mark.parametrize("name", sorted(REAL_TRACE_EVENTS))
def test_real_traces_thread_lifetimes_never_crash_and_cover(name):
    res = run_triage([real_trace(name)], Options(units="threads"))
    ft = res.features
    if "kernel" not in {t.domain for t in res.summary.traces}:
        assert ft is None  # UST only: no kernel graph, no thread units
        return
    assert len(ft) == len(res.requests) > 0
    assert np.array_equal(ft.durations.sum(axis=1), ft.total)


@needs_bt2
@pytest.mark.parametrize("name", ["tracevizlab-wget-k-20180802-115043", "tracevizlab-wget-k-20180802-115406"])
def test_wget_lifetime_is_dominated_by_network_waits(name):
    res = run_triage([real_trace(name)], Options(units="threads"))
    ft = res.features
    rows = [i for i in range(len(ft)) if ft.fields["comm"][i] == "wget" and ft.fields["span"][i] == "whole"]
    assert len(rows) == 1
    state, share = ft.dominant(rows[0])
    assert state == "BN" and share > 0.5


@needs_bt2
def test_many_threads_every_lifetime_gets_a_path():
    res = run_triage([real_trace("tc-many-threads")], Options(units="threads"))
    ft = res.features
    complete = ft.fields["span"] == "whole"
    assert complete.sum() > 7000  # ~8,000 short threads forked and exited
    assert (ft.counts[complete].sum(axis=1) >= 1).all()
    assert np.array_equal(ft.durations[complete].sum(axis=1), ft.total[complete])
    # the findings say where the time went in words a ticket reader follows, not state codes
    slowest = next(f for f in res.findings if f.title == "Slowest threads")
    assert slowest.evidence[1].startswith("where the time goes, all threads together, along their critical paths: "
                                          "running on a CPU "), slowest.evidence
    assert slowest.evidence[2].startswith("the slowest: running on a CPU ") and " 0%" not in slowest.evidence[1]
    process = next(f for f in res.findings if f.title.startswith("multithread spent "))
    assert process.evidence[0].startswith("multithread (pid 2673, 8,001 threads) on wilbrod")


@needs_bt2
def test_syscall_units(sample_result):
    res = run_triage([SAMPLE], Options(units="syscall:connect", thread_metrics=False))  # threads: test_threads
    ft = res.features
    assert len(ft) > 50 and set(ft.kind) == {"syscall:connect"}
    # every refused connect blocks on the network for seconds
    assert np.median(ft.durations[:, STATES.index("BN")] / ft.total) > 0.9


GRAPH_COLUMNS = ("tids", "thread_lo", "thread_hi", "iv_start", "iv_end", "iv_state", "iv_block", "iv_waker",
                 "iv_syscall", "sc_tid", "sc_entry", "sc_exit", "sc_id")


def _graphs(path, chunk, monkeypatch=None):
    from perftriage.analysis.ctf.pipeline import read_once
    from perftriage.analysis.execgraph.builder import GraphBuilder

    return read_once([path], [GraphBuilder()], chunk_events=chunk).results[0]


@needs_bt2
@pytest.mark.parametrize("trace", ["sample", "tracevizlab-wget-k-20180802-115043", "tc-many-threads"])
def test_graph_does_not_depend_on_chunking(trace):
    """Intervals merged per chunk, interrupt stacks carried between chunks, rows laid out from the
    temporary file: small chunks give the same graph as one big one."""
    path = SAMPLE if trace == "sample" else real_trace(trace)
    small, big = _graphs(path, 1_000), _graphs(path, 1 << 22)
    assert small.keys() == big.keys()
    for host in big:
        a, b = small[host], big[host]
        assert a.n_intervals > 0
        for name in GRAPH_COLUMNS:
            assert np.array_equal(getattr(a, name), getattr(b, name)), (host, name)


@needs_bt2
def test_graph_without_a_temporary_folder(monkeypatch):
    """No writable temporary folder: the rows wait in memory and the graph is the same."""
    import perftriage.analysis.execgraph.store as store

    ref = _graphs(SAMPLE, 5_000)["web-01"]

    def no_tmp(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.tempfile, "TemporaryFile", no_tmp)
    g = _graphs(SAMPLE, 5_000)["web-01"]
    for name in GRAPH_COLUMNS:
        assert np.array_equal(getattr(g, name), getattr(ref, name)), name


def test_wake_contexts_carry_interrupt_stacks_between_chunks():
    """Nested interrupts on two CPUs, stray exits, wake-ups at every depth: cutting the rows into
    chunks anywhere gives every wake-up the context it gets from the rows taken whole."""
    from perftriage.analysis.execgraph.contexts import wake_contexts

    rng = np.random.default_rng(3)
    n = 400
    seq = np.arange(n, dtype=np.int64)
    cpu = rng.integers(0, 2, n)
    is_wake = rng.random(n) < 0.4
    i_exit = rng.random(n) < 0.45
    i_ctx = rng.choice([1, 2, 3, 100, 103, 1000 + 11, 1000 + 4], n).astype(np.int64)
    wi, ii = np.flatnonzero(is_wake), np.flatnonzero(~is_wake)
    whole = wake_contexts({}, 0, seq[wi], cpu[wi], seq[ii], cpu[ii], i_ctx[ii], i_exit[ii])
    assert (whole > 0).any() and (whole == 0).any()
    for cuts in ([50], [1, 2, 3, 200, 399], list(range(0, n, 7))):
        stacks: dict = {}
        got = []
        bounds = [0, *cuts, n]
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            w = wi[(wi >= lo) & (wi < hi)]
            i = ii[(ii >= lo) & (ii < hi)]
            got.append(wake_contexts(stacks, 0, seq[w], cpu[w], seq[i], cpu[i], i_ctx[i], i_exit[i]))
        assert np.array_equal(np.concatenate(got), whole), cuts


@needs_bt2
def test_wget_dns_wait_follows_the_local_resolver():
    # wget asks systemd-resolved over the loopback device: its wait for the answer is the
    # resolver's work (matched by the packets' skb addresses); the download stays BN
    g = _graphs(real_trace("tracevizlab-wget-k-20180802-115043"), 1 << 17)["arnaud-desktop"]
    wget = next(t for t, info in g.threads.items() if info.comm == "wget")
    resolver = next(t for t, info in g.threads.items() if info.comm == "systemd-resolve")
    sl = g.intervals_of(wget)
    pf = PathFinder(g)
    seg = pf.path(wget, int(g.iv_start[sl.start]), int(g.iv_end[sl.stop - 1])).segments(g)
    on_resolver = seg.tid == resolver
    assert on_resolver.any() and (seg.state[on_resolver] != STATES.index("BN")).any()
    dur = seg.durations()
    assert dur[STATES.index("BN")] > 0.5 * dur.sum()


def _same_features(a, b):
    for k in ("durations", "counts", "total"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    for k in ("syscalls", "state_seq"):
        x, y = getattr(a, k), getattr(b, k)
        assert np.array_equal(x.values, y.values) and np.array_equal(x.offsets, y.offsets), k
    assert a.fields.keys() == b.fields.keys()
    for k in a.fields:
        assert np.array_equal(np.asarray(a.fields[k]), np.asarray(b.fields[k])), k
    assert a.notes == b.notes


needs_walk = pytest.mark.skipif(critical_path._walk_module() is None, reason="the C walk is not built here")


@needs_bt2
@needs_walk
@pytest.mark.parametrize("case", ["webserver", "two-hosts", "tc-many-threads", "tracevizlab-apt",
                                  "tracevizlab-wget-k-20180802-115406"])
def test_the_c_walk_and_the_python_walk_give_the_same_features(case):
    """The batched features: paths walked in C give the same sums, counts, sequences, system calls
    and other hosts reached as the Python walk (PathFinder.path), request by request: on one host,
    across two hosts through packets and clock fits, and on real traces (thread lifetimes, wget's
    network waits)."""
    path = ROOT / "sample_traces" / case if case in ("webserver", "two-hosts") else real_trace(case)
    res = run_triage([path], Options(units="auto" if case in ("webserver", "two-hosts") else "threads"))
    t = res.requests
    python = extract_features(res.graphs, t, compiled=False)
    _same_features(res.features, python)
    in_c = critical_path.walk_many(critical_path.finders(res.graphs), t.host, t.tid.astype(np.int64),
                                   t.start.astype(np.int64), t.end.astype(np.int64)).in_c
    assert in_c == len(t)  # every path walked in C, those crossing hosts through packets too
    if case == "two-hosts":
        assert "elsewhere_host" in python.fields and (python.fields["elsewhere_ns"] > 0).sum() > 100


@needs_bt2
def test_segments_of_one_path_equal_the_batch():
    """Path.segments (the request detail view) and the Python walk's batch (one shared Path,
    materialised at once) agree on every segment of a request."""
    res = run_triage([SAMPLE])
    g = res.graphs["web-01"]
    t = res.requests
    fs = critical_path.finders(res.graphs)
    m = critical_path.walk_many(fs, t.host, t.tid.astype(np.int64), t.start.astype(np.int64),
                                t.end.astype(np.int64), compiled=False).python
    for i in range(0, len(t), 97):
        s = fs["web-01"].path(int(t.tid[i]), int(t.start[i]), int(t.end[i])).segments(g)
        rows = m.req == i
        assert np.array_equal(s.start, m.start[rows]) and np.array_equal(s.end, m.end[rows])
        assert np.array_equal(s.state, m.state[rows]) and np.array_equal(s.tid, m.tid[rows])
