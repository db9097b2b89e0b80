"""Deviating threads (paper 003): inputs, Förstner–Moonen distance, bootstrap p-values, the
recursive ranking, short excursions, the recorder and the pane."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from scipy.linalg import eigh

from perftriage.analysis.errors import InputError
from perftriage.analysis.sim.threadpool import PoolConfig, write_threadpool_sample
from perftriage.analysis.threads.covariance import covariances, fm_matrix, scale_of
from perftriage.analysis.threads.deviation import ThreadParams, analyse_level, rank_dendrogram
from perftriage.analysis.threads.pvclust import _fit
from perftriage.analysis.threads.series import read_csv
from perftriage.analysis.threads.topdown import top_down

from conftest import ROOT, needs_bt2, real_trace


def test_forstner_distance_matches_the_definition_and_its_invariances():
    rng = np.random.default_rng(1)
    mats = []
    for _ in range(4):
        x = rng.normal(size=(200, 5)) @ rng.normal(size=(5, 5))
        mats.append(np.cov(x, rowvar=False))
    cov = np.array(mats)
    D = fm_matrix(cov)
    for a in range(4):
        for b in range(4):
            lam = eigh(cov[b], cov[a], eigvals_only=True)
            assert D[a, b] == pytest.approx(np.sqrt((np.log(lam) ** 2).sum()), rel=1e-9)
    assert np.allclose(D, D.T) and np.allclose(np.diag(D), 0)
    # a change of units of the metrics (any invertible linear map) changes nothing
    A = np.diag([1e6, 1.0, 3.0, 1e-3, 7.0]) @ rng.normal(size=(5, 5))
    D2 = fm_matrix(np.array([A @ c @ A.T for c in cov]))
    assert np.allclose(D, D2, rtol=1e-6)


def test_singular_covariances_are_regularised_and_said():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(100, 3))
    const = x.copy()
    const[:, 2] = 5.0  # a metric that never moves in this thread
    cv = covariances([x, const, x * 2], scale_of(np.vstack([x, const])))
    assert cv.regularised == [1] and (1, 2) in cv.constant
    assert np.isfinite(fm_matrix(cv.cov)).all()


def test_ranking_follows_the_papers_worked_example():
    # Fig. 1: machine4 joins machines 1-3 at 2.5; machine2 joins 1+3 at 0.55; 1 and 3 merge low.
    # (The paper's own arithmetic is inconsistent there: it calls a difference of 0.3 "less than"
    # 0.25; with 1 and 3 merging at 0.2 every condition it lists is false at machine1/2/3.)
    Z = np.array([[0, 2, 0.2, 2], [1, 4, 0.55, 3], [3, 5, 2.5, 4]], dtype=float)
    ranking = rank_dendrogram(Z, np.full(3, 95.0), 80.0, np.zeros(4))
    assert [items for items, _ in ranking] == [[3]]
    # with a poor fit (AU < 80) below a tall enough node, the descent goes on into machine2
    ranking = rank_dendrogram(Z, np.array([95.0, 50.0, 95.0]), 80.0, np.zeros(4))
    assert [items for items, _ in ranking] == [[3]]  # heights under maxheight/4: still stops


def test_au_fit_recovers_known_values():
    # BP_r generated from v, c: z_r = v sqrt(r) + c / sqrt(r)
    from scipy.stats import norm

    r = np.array([0.5, 0.7, 0.9, 1.1, 1.3])
    v, c = 1.2, -0.4
    bp = 1 - norm.cdf(v * np.sqrt(r) + c / np.sqrt(r))
    au, bpf, se = _fit(bp[:, None], r, 10_000)
    assert au[0] == pytest.approx(1 - norm.cdf(v - c), abs=1e-6)
    assert bpf[0] == pytest.approx(1 - norm.cdf(v + c), abs=1e-6)


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    out = tmp_path_factory.mktemp("pool") / "lt"
    truth = write_threadpool_sample(out, PoolConfig(seed=7, deviations={
        "2:1": "memory_leak", "2:6": "io_leak", "5:3": "cpu_spike", "5:8": "io_leak"}))
    return out, truth


def test_csv_forms_read_the_same(tmp_path, pool):
    out, _ = pool
    ts = read_csv(out / "threads.csv")
    assert ts.n_threads == 80 and ts.levels() == ["wave", "thread"]
    assert ts.metrics == ["CPU", "VirtualBytes", "PrivateBytes", "Handles", "MicroThreads"]
    # narrow (time, thread, wave, metric, value) and wide (time, thread:metric...) of 3 threads
    sel = [0, 1, 2]
    narrow = ["time,thread,wave,metric,value"]
    wide_cols = {}
    for i in sel:
        for t, row in zip(ts.times(i), ts.samples(i)):
            for m, v in zip(ts.metrics, row):
                narrow.append(f"{t:.0f},{ts.ids[i]},{ts.groups['wave'][i]},{m},{v:.6g}")
                wide_cols.setdefault(f"{t:.0f}", {})[f"{ts.ids[i]}:{m}"] = f"{v:.6g}"
    (tmp_path / "narrow.csv").write_text("\n".join(narrow) + "\n")
    header = ["time"] + [f"{ts.ids[i]}:{m}" for i in sel for m in ts.metrics]
    lines = [",".join(header)] + [",".join([t] + [d[h] for h in header[1:]]) for t, d in wide_cols.items()]
    (tmp_path / "wide.csv").write_text("\n".join(lines) + "\n")
    for name in ("narrow.csv", "wide.csv"):
        other = read_csv(tmp_path / name)
        assert other.ids == [ts.ids[i] for i in sel]
        assert sorted(other.metrics) == sorted(ts.metrics)
        j = [other.metrics.index(m) for m in ts.metrics]
        assert np.allclose(other.samples(1)[:, j], ts.samples(1), rtol=1e-5)


@pytest.mark.parametrize("content,message", [
    ("", "empty"),
    ("time,thread,CPU\n", "no data rows"),
    ("when,thread,CPU\n1,2,3\n", "no time column"),
    ("time,thread,name\n1,2,x\n", "no numeric metric"),
])
def test_bad_thread_csv_gives_one_clear_line(tmp_path, content, message):
    p = tmp_path / "t.csv"
    p.write_text(content)
    with pytest.raises(InputError) as e:
        read_csv(p)
    assert message in str(e.value) and str(p) in str(e.value)


def test_top_down_finds_the_injected_deviations(pool):
    out, truth = pool
    ts = read_csv(out / "threads.csv")
    td = top_down(ts, ThreadParams(replicates=200))
    top = td.results[0]
    assert top.level == "wave" and top.boot.replicates == 200
    ranked_waves = {top.names[i] for i in top.ranked_items()}
    assert "W3" in ranked_waves  # two leaks
    found = set()
    for res in td.results[1:]:
        found |= {res.names[i] for i in res.ranked_items()}
    leaks_w3 = {d["thread"] for d in truth["deviating"] if d["wave"] == "W3"}
    assert leaks_w3 <= found
    # the metric named is the one injected
    res = next(r for r in td.results if r.within == {"wave": "W3"})
    for r in res.ranking:
        kind = next(d["kind"] for d in truth["deviating"] if d["thread"] == res.names[r.items[0]])
        assert r.metrics[0][0] == {"memory_leak": "VirtualBytes", "io_leak": "Handles"}[kind]


def test_a_cpu_spike_is_found_by_the_moving_window(pool):
    out, truth = pool
    ts = read_csv(out / "threads.csv")
    spike = next(d for d in truth["deviating"] if d["kind"] == "cpu_spike")
    res = analyse_level(ts, "thread", {"wave": spike["wave"]}, ThreadParams(replicates=50))
    hit = [r for r in res.ranking if res.names[r.items[0]] == spike["thread"]]
    assert hit and hit[0].how == "window" and hit[0].metrics[0][0] == "CPU"
    assert abs(hit[0].window_time - (spike["start"] + spike["end"]) / 2) < 15
    without = analyse_level(ts, "thread", {"wave": spike["wave"]}, ThreadParams(replicates=50, windows=False))
    assert spike["thread"] not in {without.names[i] for i in without.ranked_items()}


def test_median5_network_is_the_median():
    from perftriage.analysis.threads.deviation import median5

    rng = np.random.default_rng(3)
    for vals in (rng.normal(size=(5, 400, 3)), rng.integers(0, 3, size=(5, 400, 3)).astype(float)):  # ties too
        assert np.array_equal(median5(*vals), np.median(vals, axis=0))


def test_a_late_leak_in_one_thread_is_found_by_its_long_departure():
    # a handle leak to 125% of its maximum over the last 10% of the run in one thread of a
    # ten-thread wave: hardly a change of the thread's covariance, diluted ten times in its
    # wave's, but a level far from every other thread for the rest of the run
    from perftriage.analysis.sim.threadpool import pool_series

    ts, _ = pool_series(PoolConfig(seed=12, deviations={}))
    i = ts.ids.index(next(t for t, w in zip(ts.ids, ts.groups["wave"]) if w == "W4"))
    x = ts.values[ts.lo[i]:ts.hi[i], 3]
    start = int(0.9 * len(x))
    x[start:] = np.maximum(x[start:], x[start] + (1.25 * x[:start].max() - x[start]) * np.linspace(0, 1, len(x) - start))
    params = ThreadParams(replicates=100)
    res = analyse_level(ts, "thread", {"wave": "W4"}, params)
    hit = [r for r in res.ranking if res.names[r.items[0]] == ts.ids[i]]
    assert [r.how for r in hit] == ["departure"] and hit[0].metrics[0][0] == "Handles"
    assert res.ranked_items() == [res.names.index(ts.ids[i])]  # nothing else
    off = analyse_level(ts, "thread", {"wave": "W4"}, ThreadParams(replicates=100, departure=float("inf")))
    assert ts.ids[i] not in {off.names[k] for k in off.ranked_items()}
    waves = analyse_level(ts, "wave", params=params)
    assert [waves.names[k] for k in waves.ranked_items()] == ["W4"]
    r = waves.ranking[0]
    assert r.how == "departure" and f"in its thread {ts.ids[i]}" in r.metrics[0][1]
    # how long it is held: the leak's windows beyond the bar, of all the run's
    held = re.search(r"over (\d+) of (\d+) windows of", hit[0].metrics[0][1])
    assert held and 1 <= int(held[1]) <= 0.15 * int(held[2]), hit[0].metrics[0][1]


def test_a_thread_held_apart_from_the_first_sample_to_the_last_is_said_so(tmp_path):
    """One worker of eight does twice the others' I/O from start to end, varying as much as they
    do: its covariance is theirs (the dendrogram ranks none), its level is apart in every window,
    and the finding says throughout, not over the two windows its score needs."""
    rng = np.random.default_rng(0)
    lines = ["time,thread,process,cpu,io,wait"]
    for i in range(300):
        for t in range(8):
            lines.append(f"{1767225600 + i * 0.5:.1f},w{t},app,{rng.normal(0.3, 0.05):.3f},"
                         f"{rng.normal(70 if t == 3 else 40, 5):.1f},{rng.normal(0.1, 0.02):.3f}")
    (tmp_path / "threads.csv").write_text("\n".join(lines) + "\n")
    ts = read_csv(tmp_path / "threads.csv")
    res = analyse_level(ts, "thread", params=ThreadParams(replicates=100))
    assert [(res.names[r.items[0]], r.how) for r in res.ranking] == [("w3", "departure")]
    line = res.ranking[0].metrics[0][1]
    assert "in all 30 windows" in line and "over 2 " not in line, line
    from perftriage.analysis.threads.topdown import level_findings

    f = next(f for f in level_findings(res, ts) if "w3" in f.title)
    assert any("the dendrogram and the window check ranked none" in e for e in f.evidence), f.evidence


def _bursty_pool(tmp_path, odd: bool, seed: int = 3):
    """Six workers sampled every 10 ms over 2 s, each serving under one request per window: their
    disk wait 0 or a burst (a sync every 20th request), their waits for a CPU now and then; with
    ``odd``, worker w3 syncs a file on every request as well: its disk wait 2% higher in every
    window, varying as the others' do."""
    rng = np.random.default_rng(seed)
    lines = ["time,thread,process,cpu,disk_wait,preempted"]
    for i in range(200):
        for t in range(6):
            disk = (rng.uniform(0.3, 0.5) if rng.random() < 0.45 else 0.0) + (2.0 if odd and t == 3 else 0.0)
            pre = rng.uniform(0.5, 1.5) if rng.random() < 0.1 else rng.uniform(0, 0.2)
            lines.append(f"{1767225600 + i * 0.01:.2f},w{t},srv,{rng.normal(4, 0.8):.2f},{disk:.2f},{pre:.2f}")
    (tmp_path / "threads.csv").write_text("\n".join(lines) + "\n")
    return read_csv(tmp_path / "threads.csv")


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_a_worker_held_apart_in_a_bursty_pool_is_found_by_its_run_mean(tmp_path, seed):
    """Window by window, the other workers' bursts hold as much over the two windows a late leak
    needs, and the habit bar of the median worker hid the worker that syncs on every request (a
    2 s perf recording, io mode: not ranked); its mean over the run stands tens of units from the
    others', which end the run within a few percent of one another. A healthy pool of the same
    bursts ranks nothing."""
    ts = _bursty_pool(tmp_path, odd=True, seed=seed)
    res = analyse_level(ts, "thread", params=ThreadParams(replicates=100))
    assert [(res.names[r.items[0]], r.how) for r in res.ranking] == [("w3", "departure")], res.ranking
    line = res.ranking[0].metrics[0]
    assert line[0] == "disk_wait" and "over the whole run (its windows' mean)" in line[1], line
    healthy = analyse_level(_bursty_pool(tmp_path, odd=False, seed=seed), "thread", params=ThreadParams(replicates=100))
    assert healthy.ranking == [], [(healthy.names[r.items[0]], r.how, r.metrics) for r in healthy.ranking]


def test_a_run_departure_is_told_by_the_share_of_time_that_moved_most():
    """The worker sleeping 2 ms more per request (a fresh perf recording): its disk wait 0.40%
    against 0.17% over the run is 23 units away, its sleep 16.9% against 3.9% 6.6 units; both past
    the bar, the finding leads with the sleep (13 points of its time), not the disk wait (0.23);
    a metric that is no share of time keeps the furthest in units."""
    from perftriage.analysis.threads.deviation import Departure, held_departures

    def pool():
        out = []
        for i in range(6):
            d = Departure(1.0, 0, 5, 0.0, 0.0, 2, of=19)
            far = i == 3
            zs = np.array([23.0, 6.6]) if far else np.array([1.0, 0.8])
            level = np.array([0.40, 16.9]) if far else np.array([0.17, 3.9])
            d.run = Departure(float(zs[0]), 0, 95, float(level[0]), 0.17, 10 if far else 0, of=19, whole=True,
                              each=(zs, level, np.array([0.17, 3.9]), np.array([10, 0]) if far else np.zeros(2)))
            out.append(d)
        return out

    dep = pool()
    ratio, _ = held_departures(dep, ThreadParams(), shares=[True, True])
    assert list(np.flatnonzero(ratio > 1)) == [3] and dep[3].whole
    assert (dep[3].metric, dep[3].level, dep[3].others) == (1, 16.9, 3.9)
    dep = pool()
    held_departures(dep, ThreadParams(), shares=[False, True])  # the disk wait counted in calls, say
    assert dep[3].metric == 0


def test_healthy_wave_ranks_nothing(pool):
    out, truth = pool
    ts = read_csv(out / "threads.csv")
    res = analyse_level(ts, "thread", {"wave": "W1"}, ThreadParams(replicates=50))
    assert res.ranking == []


def test_record_threads_from_proc(tmp_path):
    code = ("import threading, time\n"
            "def spin():\n    t = time.time()\n    while time.time() - t < 3: pass\n"
            "ts = [threading.Thread(target=spin) for _ in range(3)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n")
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(0.3)
        out = tmp_path / "rec.csv"
        r = subprocess.run([sys.executable, "-m", "perftriage", "record", "threads", "--pid", str(proc.pid),
                            "--interval", "0.2", "--duration", "1.2", "-o", str(out)], capture_output=True, text=True,
                           cwd=ROOT)
        assert r.returncode == 0, r.stderr
        ts = read_csv(out)
        assert ts.n_threads >= 4 and "CPU" in ts.metrics and "VoluntarySwitches" in ts.metrics
        assert ts.units["CPU"] == "%" and ts.units["ResidentBytes"] == "bytes"  # written CPU(%), ResidentBytes(bytes)
        busy = [ts.samples(i)[:, ts.metrics.index("CPU")].mean() for i in range(ts.n_threads)]
        assert sorted(busy)[-1] > 20  # the spinning threads use CPU
        assert not any(p.name.startswith(".rec.csv.partial") for p in tmp_path.iterdir())
    finally:
        proc.wait()
    r = subprocess.run([sys.executable, "-m", "perftriage", "record", "threads", "--pid", "999999999", "-o",
                        str(tmp_path / "x.csv")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3 and "no such process" in r.stderr


def test_report_and_sample_from_the_cli(tmp_path):
    out = tmp_path / "pool"
    r = subprocess.run([sys.executable, "-m", "perftriage", "sample", "--system", "threads", "--out", str(out),
                        "--deviations", "1:4=memory_leak"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    truth = json.loads((out / "ground_truth.json").read_text())
    tid = truth["deviating"][0]["thread"]
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(out), "--replicates", "50"],
                       capture_output=True, text=True, cwd=ROOT, env={**os.environ, "NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    assert f"Thread {tid} in wave W2: VirtualBytes mean " in r.stdout
    assert "Wave W2: VirtualBytes mean " in r.stdout and "`replicates=50`" in r.stdout


async def test_threads_pane_drill_down_and_views(pool):
    from perftriage.analysis.triage import Options
    from perftriage.tui.app import PerftriageApp
    from perftriage.tui.panes.threads import ThreadsPane
    from perftriage.tui.widgets.row_table import RowTable

    out, truth = pool
    app = PerftriageApp([str(out)], Options(threads=ThreadParams(replicates=50)))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one("#tabs").active == "threads"
        pane = app.query_one(ThreadsPane)
        table = app.query_one("#th-table", RowTable)
        assert table.has_focus and pane.current.level == "wave"
        assert table.source.cells(0)[1] == "W3" and table.source.cells(0)[0] == "1"
        assert table.check_action("select", ()) is True  # a wave opens its threads
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert pane.current.level == "thread" and pane.current.within == {"wave": "W3"}
        assert table.check_action("select", ()) is not True  # threads are the lowest level: no enter offered
        assert [c.title for c in table.columns][:3] == ["#", "thread", "by"]  # no count of threads of a thread
        assert len(table.source.cells(0)) == len(table.columns)
        text = str(pane.view_body.render())
        assert "majority" in text and "VirtualBytes" in text
        await pilot.press("v", "v")
        assert "AU" in str(pane.view_body.render())
        await pilot.press("escape")
        await pilot.pause()
        assert pane.current.level == "wave"


async def test_the_walk_comes_level_by_level_and_keeps_the_level_the_user_went_into(pool, monkeypatch):
    """While the walk goes down, each analysed level comes at once; the user who went into a
    wave meanwhile stays there when the rest of the walk (and the end) comes."""
    import time

    from perftriage.analysis.triage import Options
    from perftriage.tui.app import PerftriageApp
    from perftriage.tui.panes.threads import ThreadsPane

    async def wait_for(pilot, cond, timeout=60.0):
        t0 = time.monotonic()
        while not cond():
            assert time.monotonic() - t0 < timeout, "timed out"
            await pilot.pause(0.05)

    out, _ = pool
    monkeypatch.setenv("PERFTRIAGE_PART_DELAY", "0.7")  # the child holds after each level
    app = PerftriageApp([str(out)], Options(threads=ThreadParams(replicates=50)))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(ThreadsPane)
        await wait_for(pilot, lambda: pane.current is not None)
        assert app.running and len(app.result.threads.results) == 1  # the top level, the walk going on
        await pilot.press("4")
        pane.table.focus()
        await pilot.press("enter")  # into W3, the first ranked wave
        await wait_for(pilot, lambda: pane.current.level == "thread")
        await pilot.press("j")
        await pilot.pause(0.1)
        row = pane.row
        assert app.running and row == 1
        await wait_for(pilot, lambda: not app.running)
        assert len(app.result.threads.results) > 2  # the rest of the walk came
        assert pane.current.level == "thread" and pane.current.within == {"wave": "W3"} and pane.row == row
        assert pane.current in app.result.threads.results


@needs_bt2
@pytest.mark.parametrize("trace", ["sample", "tracevizlab-wget-k-20180802-115043"])
def test_thread_metrics_from_a_kernel_trace(trace):
    from perftriage.analysis.ctf.pipeline import read_once
    from perftriage.analysis.execgraph.builder import GraphBuilder
    from perftriage.analysis.execgraph.graph import RS, RU
    from perftriage.analysis.threads.from_trace import METRICS, thread_series_from_graphs

    path = ROOT / "sample_traces" / "webserver" if trace == "sample" else real_trace(trace)
    graphs = read_once([path], [GraphBuilder()]).results[0]
    ts = thread_series_from_graphs(graphs)
    assert ts.metrics == list(METRICS) and ts.n_threads >= 10
    v = ts.values
    cpu, blk, pre = v[:, 0], v[:, 2], v[:, 3]
    assert (cpu >= 0).all() and (cpu + blk + pre <= 100 + 1e-6).all() and (v[:, 1] >= 0).all()
    # a thread's CPU over its windows is the running time the graph has for it in those windows
    g = next(iter(graphs.values()))
    i = int(np.argmax([ts.samples(k)[:, 0].sum() for k in range(ts.n_threads)]))
    tid = int(ts.ids[i])
    t = ts.times(i)
    width = (t[1] - t[0]) * 1e9
    a, z = int(round(t[0] * 1e9 - width / 2)), int(round(t[-1] * 1e9 + width / 2))
    sl = g.intervals_of(tid)
    s, e, st = g.iv_start[sl], g.iv_end[sl], g.iv_state[sl]
    run = ((np.minimum(e, z) - np.maximum(s, a)).clip(0) * ((st == RU) | (st == RS))).sum()
    assert abs((ts.samples(i)[:, 0] / 100 * width).sum() - run) <= 0.01 * run + 1e-3 * width
    # the groups make a top-down walk: processes, thread names, threads
    assert "process" in ts.levels() and ts.levels()[-1] == "thread"


@needs_bt2
def test_report_ranks_threads_from_the_kernel_trace():
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(ROOT / "sample_traces" / "webserver"),
                          "--thread-metrics", "--replicates", "100", "--format", "json", "-q"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    threads = [f for f in rep["findings"] if f["analysis"] == "threads"]
    assert any("Thread pools, top down" in f["title"] for f in threads)
    from perftriage.analysis.threads.from_trace import METRICS

    ranked = [f for f in threads if "Thread pools" not in f["title"]]
    # each titled by what moved, in the metric's unit: "Process x: CPU rose to 7.5% from 1.11% for 3.13 s"
    assert ranked and all(any(f": {m} " in f["title"] for m in METRICS) for f in ranked)
    assert not any(re.search(r"\d{5,}(\.\d)?x", f["title"] + " ".join(f["evidence"])) for f in ranked)
    assert any("per-thread metrics from the kernel trace" in n for n in rep["notes"])


def _fm_ways():
    """The bootstrap's two ways to many distances: the component-wise series in numpy and the C
    kernel (skipped where it is not built: no C compiler)."""
    from perftriage.analysis.threads import covariance as cv

    c = cv._fm_module()
    return [pytest.param(cv.fm_condensed_fast, id="series"),
            pytest.param(lambda cov: cv.fm_condensed_c(cov, c), id="c",
                         marks=pytest.mark.skipif(c is None, reason="the C kernel (_fm.c) is not built here"))]


@pytest.mark.parametrize("fm_condensed_fast", _fm_ways())
def test_fast_fm_distances_match_the_exact_ones(fm_condensed_fast):
    from perftriage.analysis.threads.covariance import fm_pairs

    rng = np.random.default_rng(4)
    B, k, p = 30, 12, 5
    base = rng.normal(size=(p, 40))
    base = base @ base.T / 40
    X = np.linalg.cholesky(base) @ rng.normal(size=(B, k, p, 300))
    cov = X @ np.swapaxes(X, -1, -2) / 300
    cov[:, :2] *= 2.5  # far pairs (exact path) beside near ones (series)
    cov[:, 2, 0, 0] *= 6
    # near-singular matrices (one metric almost proportional to another, plus the ridge): their
    # small eigenvalues must stay accurate relative to themselves
    for t in (3, 7):
        v = rng.normal(size=(B, 300))
        w = np.stack([v, *rng.normal(size=(3, B, 300)), 2 * v + 1e-3 * rng.normal(size=(B, 300))], axis=1)
        cov[:, t] = w @ np.swapaxes(w, -1, -2) / 300 + 1e-6 * np.eye(p)
    i, j = np.triu_indices(k, 1)
    ref = np.stack([fm_pairs(c, i, j) for c in cov])  # exact: one LAPACK problem per pair
    got = fm_condensed_fast(cov)
    assert got.shape == ref.shape == (B, k * (k - 1) // 2)
    assert np.max(np.abs(got - ref) / ref) < 1e-3


def test_the_c_distance_kernel_is_built_where_there_is_a_compiler():
    # make setup builds _fm.c where gcc exists; without it the bootstrap runs 2x slower, silently
    import shutil

    from perftriage.analysis.threads import covariance as cv

    if shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    assert cv._fm_module() is not None


@pytest.mark.parametrize("kernel", ["c", "numpy"])
def test_fm_distances_of_many_metrics_and_few_threads_equal_the_exact_ones(kernel, monkeypatch):
    # the bootstrap's batches by the C kernel, and without it on both sides of the choice between
    # the component-wise series and LAPACK (few threads of many metrics: LAPACK; many threads of
    # few metrics: the series)
    from perftriage.analysis.threads import covariance as cv
    from perftriage.analysis.threads.covariance import fm_condensed, fm_pairs

    if kernel == "numpy":
        monkeypatch.setattr(cv, "_fm_module", lambda: None)
    elif cv._fm_module() is None:
        pytest.skip("the C kernel (_fm.c) is not built here")
    rng = np.random.default_rng(5)
    for B, k, p in ((50, 4, 21), (50, 12, 5), (3, 3, 2), (4, 3, 1)):
        base = rng.normal(size=(p, p))
        X = rng.normal(size=(B, k, 20 * p, p)) @ base
        cov = np.swapaxes(X, -1, -2) @ X / (20 * p)
        i, j = np.triu_indices(k, 1)
        ref = np.stack([fm_pairs(c, i, j) for c in cov])
        got = fm_condensed(cov)
        assert got.shape == ref.shape == (B, len(i))
        assert np.max(np.abs(got - ref) / ref) < 1e-3


def test_bootstrap_block_sums_keep_the_covariance_of_metrics_far_above_their_spread():
    # a timestamp-like metric (1e9 moving by ~1) and a byte count: rebuilt from the block sums
    # the bootstrap resamples, each thread's covariance must equal numpy's of its samples
    # (raw sums lost it to cancellation: eigenvalues of -1e15 x the trace, 15x slower bootstraps)
    from perftriage.analysis.threads.covariance import cov_from_moments
    from perftriage.analysis.threads.pvclust import block_moments

    rng = np.random.default_rng(6)
    groups = []
    for _ in range(3):
        x = rng.normal(size=(40, 3)) @ rng.normal(size=(3, 3))
        x[:, 0] += 1.7e9
        x[:, 1] = x[:, 1] * 1e3 + 4e12
        groups.append([x[:25], x[25:]])
    scale = np.array([1.0, 1e3, 1.0])
    n, s1, s2 = block_moments(groups, scale, blocks=10)
    got = cov_from_moments(n.sum(axis=1), s1.sum(axis=1), s2.sum(axis=1))
    for g, c in zip(groups, got):
        ref = np.cov(np.concatenate(g) / scale, rowvar=False)
        assert np.allclose(c, ref, rtol=1e-6, atol=1e-9 * np.abs(ref).max())


@pytest.mark.parametrize("fm_condensed_fast", _fm_ways())
def test_fast_fm_distances_of_nearly_equal_matrices_keep_their_relative_accuracy(fm_condensed_fast):
    # bootstrap replicates of similar threads: distances of 1e-4; the series must keep them to
    # 1e-6 relative (checked against LAPACK's generalized eigenvalues, pair by pair)

    rng = np.random.default_rng(8)
    B, k, p = 6, 8, 5
    base = rng.normal(size=(p, 40))
    base = base @ base.T / 40
    R = rng.normal(size=(B, k, p, p))
    cov = base * (1 + 1e-4 * rng.normal(size=(B, k, 1, 1))) + 1e-5 * R @ np.swapaxes(R, -1, -2)
    i, j = np.triu_indices(k, 1)
    got = fm_condensed_fast(cov)
    for b in range(B):
        ref = [np.sqrt((np.log(eigh(cov[b, q], cov[b, o], eigvals_only=True)) ** 2).sum()) for o, q in zip(i, j)]
        assert np.median(ref) < 1e-3
        assert np.max(np.abs(got[b] - ref) / ref) < 1e-6


def test_walk_looks_inside_groups_that_do_not_deviate_as_a_whole(tmp_path):
    # the CPU spike in W6 hardly moves its wave's mean: the wave is ranked by its thread's
    # excursion (among all threads), named; the walk ranks what drilling into every wave ranks
    from perftriage.analysis.threads.topdown import top_down

    out = tmp_path / "pool"
    write_threadpool_sample(out, PoolConfig(seed=1, deviations={"1:4": "memory_leak", "5:2": "cpu_spike"}))
    ts = read_csv(out / "threads.csv")
    params = ThreadParams(replicates=100)
    walk = top_down(ts, params)
    every = top_down(ts, params, drill_all=True)
    top = walk.results[0]
    w6 = next(r for r in top.ranking if top.names[r.items[0]] == "W6")
    assert w6.how == "window" and w6.metrics[0][1].startswith("in its thread 2138: ")

    def ranked(td):
        return {(tuple(r.within.values()), r.names[i]) for r in td.results[1:] for i in r.ranked_items()}

    assert (("W6",), "2138") in ranked(walk)
    assert ranked(walk) == ranked(every) and len(walk.results) < len(every.results)


def test_jacobi_eigenvalues_match_lapack():
    from perftriage.analysis.threads.covariance import jacobi_eigvals

    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 5, 9))
    S = X @ np.swapaxes(X, -1, -2) / 9
    S[:5] = np.diag([1.0, 2.0, 3.0, 4.0, 5.0])  # already diagonal: done after the first check
    S[5:10] = np.eye(5) * 1e-9 + np.eye(5)[::-1] * 1e-12  # tiny off-diagonals
    S[10:20] = np.eye(5) + 0.3 * (S[10:20] - np.eye(5)) / np.abs(S[10:20]).max()  # near the identity
    got = np.sort(jacobi_eigvals([[S[:, i, j].copy() for j in range(5)] for i in range(5)]), axis=0).T
    assert np.allclose(got, np.linalg.eigvalsh(S), rtol=1e-9, atol=1e-15)


@needs_bt2
async def test_threads_pane_shows_threads_derived_from_the_kernel_trace():
    from perftriage.analysis.triage import Options
    from perftriage.tui.app import PerftriageApp
    from perftriage.tui.panes.threads import Overview, ThreadsPane

    app = PerftriageApp([str(ROOT / "sample_traces" / "webserver")],
                        Options(thread_windows=0.0, threads=ThreadParams(replicates=30)))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        pane = app.query_one(ThreadsPane)
        # the top lists the comparisons of alike abstractions: apache2's processes among
        # themselves, mysqld's threads among themselves (never mysqld against an apache2 worker)
        top = pane.current
        assert isinstance(top, Overview) and len(pane.table.source) == len(app.result.threads.results) >= 2
        compared = [(r.level, r.within) for r in top.entries]
        assert ("process", {"program": "apache2"}) in compared
        assert ("thread", {"process": "mysqld[1400]", "pool": "mysqld"}) in compared
        assert "metrics from the kernel trace" in " ".join(app.result.report.notes)
        app.action_tab("threads")
        await pilot.pause()
        pane.table.focus()
        await pilot.press("enter")  # the first comparison opens: its abstractions, ranked first
        await pilot.pause()
        assert pane.current is top.entries[0] and len(pane.table.source) == top.entries[0].k > 10
        # an apache2 worker is one thread: nothing alike inside, so the footer offers no enter there
        assert pane.table.check_action("select", ()) is not True
        await pilot.press("escape")
        await pilot.pause()
        assert pane.current is top


def test_covariances_no_ridge_mends_still_give_factors():
    """Matrices of wildly different magnitudes (a time column taken for a metric) or with NaN made
    np.linalg.cholesky fail even after the ridge: an internal error on a damaged file."""
    from perftriage.analysis.threads.covariance import safe_cholesky

    good = np.array([[2.0, 0.5], [0.5, 1.0]])
    wild = np.array([[3e36, 3e36], [3e36, 3e36 * (1 + 1e-17)]])
    nan = np.array([[np.nan, 0.0], [0.0, 1.0]])
    L = safe_cholesky(np.stack([good, wild, nan]))
    assert np.allclose(L[0] @ L[0].T, good)
    assert np.isfinite(L).all() and (np.diagonal(L, axis1=1, axis2=2) > 0).all()


def test_progress_says_which_analysis_of_how_many_and_which_bootstrap_scale(pool):
    ts = read_csv(pool[0] / "threads.csv")
    said = []
    top_down(ts, ThreadParams(replicates=50, workers=2), progress=lambda text, frac: said.append((text, frac)))
    assert said[0][0].startswith("analysis 1 of 1+: waves")
    scales = [t for t, _ in said if "scale " in t]
    assert scales and "scale 10 of 10 done (2 processes, 50 replicates each)" in scales[-1]
    n = max(int(t.split(" of ")[1].split(":")[0].rstrip("+")) for t, _ in said)
    assert n >= 2 and f"analysis {n} of {n}:" in said[-1][0]  # the drill-down's analyses are counted
    for i in range(1, n + 1):  # within an analysis the fraction only grows, from 0 to at most 0.9
        fr = [f for t, f in said if t.startswith(f"analysis {i} of ")]
        assert fr == sorted(fr) and 0 <= fr[0] and fr[-1] <= 0.9


def test_each_level_is_published_as_the_walk_goes_down(pool):
    from perftriage.analysis.triage import Options, run_triage

    seen = []

    def publish(part, result):
        if part == "threads":
            seen.append((len(result.threads.results), len(result.report.findings)))

    result = run_triage([pool[0] / "threads.csv"], Options(), publish=publish)
    n = len(result.threads.results)
    assert n > 1
    # the top level first, then one more analysis each time, then the same with the findings
    assert [k for k, _ in seen] == [*range(1, n + 1), n]
    assert seen[-1][1] > seen[-2][1] == seen[0][1]  # the findings come with the whole walk


def test_a_metric_one_thread_never_reports_raises_no_warning():
    """Found by the fuzz suite: numpy's 'Mean of empty slice' reached the user's terminal."""
    import warnings

    from perftriage.analysis.threads.deviation import departure_scores

    rng = np.random.default_rng(0)
    groups = [[rng.normal(size=(200, 2))] for _ in range(4)]
    groups[1][0][:, 0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = departure_scores(groups, ThreadParams())
    assert len(scores) == 4 and scores[0] is not None


def test_a_spread_reads_as_steadier_constant_or_varying_more_in_the_metrics_units():
    from perftriage.analysis.threads.deviation import explain

    # five abstractions, two metrics: #0 is steady on CPU and constant on Handles, #1 varies more
    means = np.array([[50.0, 3.0], [50.0, 3.0], [50.5, 3.1], [49.5, 2.9], [50.2, 3.0]])
    stds = np.array([[0.1, 0.0], [20.0, 0.5], [5.0, 0.5], [5.2, 0.45], [4.8, 0.55]])
    units = {"CPU": "%", "Handles": "open files"}
    steady = dict(explain([0], [2, 3, 4], means, stds, ["CPU", "Handles"], units))
    assert steady["CPU"] == ["steadier: std 0.1% against 5% for the others (50x less)"]
    assert steady["Handles"] == ["constant, where the others vary (std 0.5 open files)"]
    wild = dict(explain([1], [2, 3, 4], means, stds, ["CPU", "Handles"], units))
    assert wild["CPU"] == ["varies more: std 20% against 5% for the others (4.0x)"]


def test_the_walk_drills_only_where_three_threads_can_be_compared():
    """Four waves of ten threads and four 'waves' of one thread each, one of them far off: it is
    ranked at the top, but nothing below it can be compared (a process of one thread: a pool of
    one, a thread alone), so the walk spends no drill there (on the webserver sample's kernel
    trace such drills took six of the eight, twelve analyses of one abstraction)."""
    from perftriage.analysis.sim.threadpool import pool_series
    from perftriage.analysis.threads.series import build

    ts0, _ = pool_series(PoolConfig(seed=21, deviations={}))
    waves = ts0.groups["wave"]
    keep, wave_of = [], {}
    for w in ("W1", "W2", "W3", "W4"):
        for i in (i for i, x in enumerate(waves) if x == w):
            keep.append(i)
            wave_of[i] = w
    for w in ("W5", "W6", "W7", "W8"):
        i = next(i for i, x in enumerate(waves) if x == w)
        keep.append(i)
        wave_of[i] = "S" + w[1:]
    times, keys, vals, groups = [], [], [], []
    for i in keep:
        v = ts0.samples(i).copy()
        if wave_of[i] == "S5":
            v[len(v) // 3:, 0] *= 6  # its CPU far above everyone's for the last two thirds
        times.append(ts0.times(i))
        keys += [ts0.ids[i]] * len(v)
        groups += [wave_of[i]] * len(v)
        vals.append(v)
    ts = build(np.concatenate(times), keys, {"wave": groups}, np.vstack(vals), ts0.metrics, "test")
    td = top_down(ts, ThreadParams(replicates=50))
    top = td.results[0]
    assert top.level == "wave" and "S5" in {top.names[i] for i in top.ranked_items()}
    assert [r.within for r in td.results[1:] if r.within.get("wave", "").startswith("S")] == []
    assert all(len(m) >= 3 for r in td.results[1:] for m in [top.members[top.names.index(r.within["wave"])]])


def test_pool_names_drop_the_threads_number():
    from perftriage.analysis.threads.from_trace import pool_name

    assert [pool_name(n) for n in ("pool-1-thread-3", "pool-1-thread-12", "worker-7", "mysqld", "Chrome_ChildIOT",
                                   "kworker/0:1", "1234")] == ["pool-1-thread", "pool-1-thread", "worker", "mysqld",
                                                               "Chrome_ChildIOT", "kworker/0", "1234"]


def test_only_alike_abstractions_are_compared_where_the_series_has_kinds():
    """A kernel trace's processes and pools (ThreadSeries.kinds): four processes of program
    'web' are compared among themselves, the eight 'w' threads of the one 'db' process among
    themselves; db is never ranked against a web process, its pool 'w' never against its 'io'
    thread, the lone 'cron' process never compared at all. One web process and one w thread
    deviate and are ranked where they belong."""
    from perftriage.analysis.sim.threadpool import pool_series
    from perftriage.analysis.threads.series import build
    from perftriage.analysis.threads.topdown import topdown_findings

    ts0, _ = pool_series(PoolConfig(seed=33, deviations={}))
    layout = ([("web", "web[10]", "web")] + [("web", f"web[{p}]", "web") for p in (11, 12, 13)]
              + [("db", "db[20]", "w")] * 8 + [("db", "db[20]", "io"), ("cron", "cron[30]", "cron")])
    times, keys, vals, cols = [], [], [], {"program": [], "process": [], "pool": []}
    for i, (prog, proc, pool) in enumerate(layout):
        v = ts0.samples(i).copy()
        if proc == "web[12]" or (pool == "w" and i == 7):
            v[len(v) // 3:, 0] *= 6  # CPU far up for the last two thirds
        if prog == "db":
            v[:, 0] += 40  # the database runs hotter than any web process: no deviation of its own
        times.append(ts0.times(i))
        keys += [ts0.ids[i]] * len(v)
        vals.append(v)
        for name, x in zip(("program", "process", "pool"), (prog, proc, pool)):
            cols[name] += [x] * len(v)
    ts = build(np.concatenate(times), keys, cols, np.vstack(vals), ts0.metrics, "test")
    ts.kinds = {"process": "program", "pool": "pool"}
    td = top_down(ts, ThreadParams(replicates=50))
    compared = {(r.level, tuple(sorted(r.within.items()))): r for r in td.results}
    web = compared[("process", (("program", "web"),))]
    w = compared[("thread", (("pool", "w"), ("process", "db[20]")))]
    assert set(compared) == {("process", (("program", "web"),)), ("thread", (("pool", "w"), ("process", "db[20]")))}
    assert sorted(web.names) == ["web[10]", "web[11]", "web[12]", "web[13]"] and "web[12]" in {
        web.names[i] for i in web.ranked_items()}
    assert len(w.names) == 8 and ts0.ids[7] in {w.names[i] for i in w.ranked_items()}
    titles = " ".join(f.title for f in topdown_findings(td))
    assert "db[20]" not in {n for r in td.results if r.level == "process" for n in r.names}
    assert "in program web" in titles and "in process db[20], pool w" in titles and "cron" not in titles


def test_workers_that_each_serve_in_turn_are_no_departures():
    """Twelve workers, each busy (CPU 50%) for its own tenth of the run and idle otherwise, as
    prefork workers serve requests in turn: every one departs from the others' median for 10%
    of the run, so departing is their habit and none is ranked for it (on the webserver
    sample's apache2 workers 19 of 32 were); one that stays busy three times as long still is."""
    from perftriage.analysis.threads.series import build

    rng = np.random.default_rng(5)
    n, k = 600, 12
    times, keys, vals = [], [], []
    for i in range(k):
        cpu = 1 + rng.normal(0, 0.2, n)
        a = i * n // 20 + n // 10
        cpu[a:a + n // 10] = 50 + rng.normal(0, 2, n // 10)
        if i == 11:
            cpu[a:a + 3 * n // 10] = 50 + rng.normal(0, 2, 3 * n // 10)
        other = rng.normal(10, 1, (n, 2))
        times.append(np.arange(n, dtype=float))
        keys += [f"t{i}"] * n
        vals.append(np.column_stack([cpu, other]))
    ts = build(np.concatenate(times), keys, {"pool": ["w"] * (n * k)}, np.vstack(vals), ["CPU", "A", "B"], "test")
    res = analyse_level(ts, "thread", params=ThreadParams(replicates=30))
    dz = np.array([d.z for d in res.departures])
    assert (dz > ThreadParams().departure).sum() >= 10  # beyond the plain bar: nearly all of them
    departing = [res.names[r.items[0]] for r in res.ranking if r.how == "departure"]
    assert departing in ([], ["t11"]) and "t11" in {res.names[i] for i in res.ranked_items()}, res.ranking


def test_a_csv_of_processes_and_pools_compares_only_alike_ones(tmp_path):
    """The same rule for a CSV (`perftriage record threads`, or a user's): processes by the
    program they run (pid taken off: '1234:web', 'web[1235]'...), each pool on its own; a column
    called 'group' stays a level of alike abstractions, as the paper's waves."""
    from perftriage.analysis.threads.series import program_of

    assert [program_of(p) for p in ("1234:nginx", "nginx[1234]", "nginx-3", "1234", "Web Content[1717]")] == [
        "nginx", "nginx", "nginx", "", "Web Content"]
    rng = np.random.default_rng(8)
    rows = ["time,process,pool,thread,CPU,Mem"]
    layout = [(f"{1230 + p}:web", "web", f"{1230 + p}") for p in range(4)] + \
             [("2000:db", "w", f"{2001 + t}") for t in range(6)] + [("2000:db", "io", "2010")]
    for proc, pool, tid in layout:
        for t in range(400):
            cpu = 5 + rng.normal(0, 0.5) + (60 if proc.startswith("2000") else 0)
            if (tid == "1232" or tid == "2003") and t > 150:
                cpu *= 4
            rows.append(f"{1.7e9 + t},{proc},{pool},{tid},{cpu:.3f},{100 + rng.normal(0, 1):.3f}")
    path = tmp_path / "threads.csv"
    path.write_text("\n".join(rows) + "\n")
    ts = read_csv(path)
    assert ts.kinds == {"pool": "pool", "process": "program"}
    td = top_down(ts, ThreadParams(replicates=30))
    got = {(r.level, tuple(sorted(r.within.items()))): {r.names[i] for i in r.ranked_items()} for r in td.results}
    assert "1232:web" in got[("process", (("program", "web"),))]
    assert "2003" in got[("thread", (("pool", "w"), ("process", "2000:db")))]
    assert not any(r.level == "process" and "2000:db" in r.names for r in td.results)
    # 'group' is no pool of its own kind: its groups are compared with one another
    path.write_text(path.read_text().replace("time,process,pool,thread", "time,process,group,thread", 1))
    assert "pool" not in read_csv(path).kinds
    # processes named by their pid only: nothing tells their programs apart, all alike
    path.write_text(re.sub(r",(\d+):(web|db),", r",\1,", path.read_text()))
    assert "process" not in read_csv(path).kinds and len(set(read_csv(path).groups["process"])) == 5


def test_a_level_held_is_said_before_a_few_bursts_over_zero():
    """Recorded from /proc: a spinning thread's CPU 59.5% against 1% (std 45 against 2), its minor
    faults 0.32 against 0 (a few bursts, std 4 against 0). Both sit at the floor's 100 units (the
    others hardly differ on either); the finding leads with the CPU, the level it holds."""
    from perftriage.analysis.threads.deviation import explain

    metrics = ["MinorFaults", "CPU", "Handles"]
    means = np.array([[0.318, 59.5, 5.0]] + [[0.0, 1.0 + 0.01 * i, 5.0] for i in range(8)])
    stds = np.array([[3.98, 45.1, 0.0]] + [[0.0, 2.01, 0.0] for _ in range(8)])
    out = explain([0], list(range(1, 9)), means, stds, metrics)
    assert [m for m, _ in out][:2] == ["CPU", "MinorFaults"]


def test_metric_names_with_their_unit_give_the_unit(tmp_path):
    """CPU(%) and Resident [bytes]: the metric is CPU, its unit %, and a finding says 59.5%; two
    names that would both become CPU stay whole."""
    rows = ["time,thread,CPU(%),Resident [bytes],Queue"] + [f"{t},{k},{5 + k},{1e6 * (k + 1)},{k}"
                                                            for t in range(30) for k in range(4)]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    ts = read_csv(path)
    assert ts.metrics == ["CPU", "Resident", "Queue"] and ts.units == {"CPU": "%", "Resident": "bytes"}
    assert ts.unit("CPU") == "%" and ts.unit("Resident") == " bytes" and ts.unit("Queue") == ""
    path.write_text("\n".join(r.replace("Resident [bytes]", "CPU(ms)") for r in rows) + "\n")
    assert read_csv(path).metrics == ["CPU(%)", "CPU(ms)", "Queue"]
    # a unit as the name's suffix: the name kept whole, its unit known; a name that only ends in
    # letters of a unit (steps, nbytes) has none
    path.write_text("\n".join(r.replace("CPU(%),Resident [bytes],Queue", "cpu_percent,rss_bytes,syscalls_per_s")
                              for r in rows) + "\n")
    ts = read_csv(path)
    assert ts.metrics == ["cpu_percent", "rss_bytes", "syscalls_per_s"]
    assert [ts.unit(m) for m in ts.metrics] == ["%", " bytes", "/s"]
    path.write_text("\n".join(r.replace("CPU(%),Resident [bytes],Queue", "steps,nbytes,Queue") for r in rows) + "\n")
    assert read_csv(path).units == {}


@needs_bt2
def test_hosts_of_different_roles_are_not_compared():
    """The two-hosts sample: web-01 and db-01 do different work (apache2 and mysqld run most on
    them): no machine level analysis, the web host's apache2 workers and the db host's mysqld
    threads each compared among themselves."""
    from perftriage.analysis.ctf.pipeline import read_once
    from perftriage.analysis.execgraph.builder import GraphBuilder
    from perftriage.analysis.threads.from_trace import thread_series_from_graphs

    graphs = read_once([ROOT / "sample_traces" / "two-hosts"], [GraphBuilder()]).results[0]
    ts = thread_series_from_graphs(graphs)
    # one host of each name stem: each's role is the program it ran most
    assert ts.levels()[0] == "machine" and set(ts.groups["role"]) == {"apache2", "mysqld"}
    td = top_down(ts, ThreadParams(replicates=30))
    assert not any(r.level == "machine" for r in td.results)
    within = [r.within for r in td.results]
    assert {"machine": "web-01", "program": "apache2"} in within
    assert {"machine": "db-01", "process": "mysqld[1400]", "pool": "mysqld"} in within

    # hosts named each its own way, three running the web server and one the database: the three
    # are compared as machines (their names said nothing, so each was a kind of its own before);
    # numbered names with a stem in common are a role by their names
    web, db = graphs["web-01"], graphs["db-01"]
    for hosts, roles in (({"alpha": web, "bravo": web, "charlie": web, "delta": db},
                          {"alpha": "apache2", "bravo": "apache2", "charlie": "apache2", "delta": "mysqld"}),
                         ({"web-1": web, "web-2": web, "web-3": web, "delta": db},
                          {"web-1": "web", "web-2": "web", "web-3": "web", "delta": "mysqld"})):
        ts = thread_series_from_graphs(hosts)
        assert dict(zip(ts.groups["machine"], ts.groups["role"])) == roles
        td = top_down(ts, ThreadParams(replicates=30))
        machines = [r for r in td.results if r.level == "machine"]
        assert len(machines) == 1 and sorted(machines[0].names) == sorted(h for h in hosts if h != "delta")


async def test_a_process_with_several_pools_lists_them_and_enter_analyses_one(tmp_path):
    """Three processes of program srv, each with an http pool and a db pool of three threads:
    the processes are compared among themselves; enter on one lists its two pools (each compared
    on its own, not against the other), enter on a pool not analysed yet analyses its threads."""
    from perftriage.analysis.triage import Options
    from perftriage.tui.app import PerftriageApp
    from perftriage.tui.panes.threads import Overview, ThreadsPane

    rng = np.random.default_rng(4)
    rows = ["time,process,pool,thread,CPU(%),Queue"]
    tid = 1000
    for p in range(3):
        for pool, level in (("http", 20), ("db", 60)):
            for _ in range(3):
                tid += 1
                rows += [f"{1.7e9 + t},{300 + p}:srv,{pool},{tid},{level + rng.normal(0, 2):.2f},{rng.normal(5, 1):.2f}"
                         for t in range(300)]
    rows += [f"{1.7e9 + t},400:cron,cron,{2000 + k},{rng.normal(1, 0.1):.2f},0" for k in range(2) for t in range(300)]
    path = tmp_path / "threads.csv"
    path.write_text("\n".join(rows) + "\n")
    app = PerftriageApp([str(path)], Options(threads=ThreadParams(replicates=30)))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        pane = app.query_one(ThreadsPane)
        top = pane.current
        assert isinstance(top, Overview)
        procs = next(e for e in top.entries if not isinstance(e, tuple) and e.level == "process")
        assert procs.within == {"program": "srv"} and sorted(procs.names) == ["300:srv", "301:srv", "302:srv"]
        pane.table.focus()
        pane.table.cursor = top.entries.index(procs)
        await pilot.press("enter")
        await pilot.pause()
        assert pane.current is procs
        await pilot.press("enter")  # into a process: its two pools, each its own comparison
        await pilot.pause()
        inside = pane.current
        assert isinstance(inside, Overview) and inside.about in procs.names
        listed = [e if isinstance(e, tuple) else (e.level, e.within) for e in inside.entries]
        assert sorted(w["pool"] for _, w in listed) == ["db", "http"] and all(lv == "thread" for lv, _ in listed)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        res = pane.current
        assert res.level == "thread" and res.within == dict(listed[0][1]) and res.k == 3
        await pilot.press("escape")
        await pilot.pause()
        assert pane.current is inside


@pytest.mark.parametrize("narrow", [False, True])
def test_a_thread_id_names_one_thread_within_its_machine_and_process(tmp_path, narrow):
    """Thread 7 on host a and thread 7 on host b, a JVM's pool-1-thread-1 in two processes: two
    threads each, not one whose samples interleave (the same tids on several traced hosts were
    one thread); ids stay what the file says, each thread's samples in time order."""
    rows = ["time,host,process,thread," + ("metric,value" if narrow else "CPU")]
    for t in range(50):
        for host, proc, thread, cpu in (("a", "100:java", "7", 10), ("b", "100:java", "7", 90),
                                        ("a", "100:java", "pool-1-thread-1", 20), ("a", "200:java", "pool-1-thread-1", 70)):
            rows.append(f"{t},{host},{proc},{thread}," + (f"CPU,{cpu + t % 3}" if narrow else f"{cpu + t % 3}"))
    path = tmp_path / "threads.csv"
    path.write_text("\n".join(rows) + "\n")
    ts = read_csv(path)
    assert ts.n_threads == 4 and sorted(ts.ids) == ["7", "7", "pool-1-thread-1", "pool-1-thread-1"]
    for i in range(ts.n_threads):
        t = ts.time[ts.lo[i]:ts.hi[i]]
        v = ts.values[ts.lo[i]:ts.hi[i], 0]
        assert len(t) == 50 and np.all(np.diff(t) > 0) and np.ptp(v) == 2  # one thread's own samples
    who = {(ts.groups["machine"][i], ts.groups["process"][i], ts.ids[i]): ts.values[ts.lo[i], 0]
           for i in range(ts.n_threads)}
    assert who == {("a", "100:java", "7"): 10, ("b", "100:java", "7"): 90,
                   ("a", "100:java", "pool-1-thread-1"): 20, ("a", "200:java", "pool-1-thread-1"): 70}
    # a request's thread (its host, its tid) is its host's thread of that id
    (b,) = ts.threads_of("7", "b")
    assert ts.groups["machine"][b] == "b" and len(ts.threads_of("7")) == 2 and not ts.threads_of("7", "c")


def test_factorize_gives_what_np_unique_gives():
    from perftriage.analysis.threads.series import _factorize

    rng = np.random.default_rng(3)
    for vals in ([], ["b", "a", "b", "c"], ["7", "12", "7", "100"], [str(x) for x in rng.integers(0, 500, 5000)]):
        a = np.asarray(vals, dtype=object)
        u, i = _factorize(a)
        if len(a):
            u1, i1 = np.unique(a, return_inverse=True)
            assert list(u) == list(u1) and np.array_equal(i, i1.ravel())
        else:
            assert len(u) == 0 and len(i) == 0


@pytest.mark.parametrize("form", ["long", "narrow", "wide"])
def test_a_large_thread_csv_reads_the_same_through_polars(tmp_path, monkeypatch, form):
    """Thread CSVs from 8 MiB on are read by polars' columnar reader (2 million rows: 2.5 s
    against 11 s): the same series, notes and kinds as the csv module's path; a file with an
    empty cell or a short row goes the careful way, which says what it skipped."""
    import perftriage.analysis.threads.series as series

    rng = np.random.default_rng(5)
    if form == "wide":
        rows = ["time," + ",".join(f"{t}:CPU(%),{t}:Queue" for t in range(6))]
        rows += [f"{1.7e9 + k}," + ",".join(f"{rng.normal(50, 5):.3f},{rng.normal(3, 1):.3f}" for _ in range(6))
                 for k in range(200)]
    else:
        rows = ["time,host,process,thread," + ("metric,value" if form == "narrow" else "CPU(%),Queue,state")]
        for k in range(200):
            for h in ("a", "b"):
                for t in range(4):
                    cpu, q = rng.normal(50, 5), rng.normal(3, 1)
                    if form == "narrow":
                        rows += [f"{1.7e9 + k},{h},10:srv,{t},CPU(%),{cpu:.3f}", f"{1.7e9 + k},{h},10:srv,{t},Queue,{q:.3f}"]
                    else:
                        rows.append(f"{1.7e9 + k},{h},10:srv,{t},{cpu:.3f},{q:.3f},R")
    path = tmp_path / "threads.csv"
    path.write_text("\n".join(rows) + "\n")

    def both(p):
        monkeypatch.setattr(series, "POLARS_FROM_BYTES", 1 << 62)
        careful = read_csv(p)
        monkeypatch.setattr(series, "POLARS_FROM_BYTES", 0)
        calls = []
        real = series._columns_fast
        monkeypatch.setattr(series, "_columns_fast", lambda *a: calls.append(r := real(*a)) or r)
        fast = read_csv(p)
        monkeypatch.setattr(series, "_columns_fast", real)
        return careful, fast, calls[0] is not None

    careful, fast, took = both(path)
    assert took
    assert careful.ids == fast.ids and careful.groups == fast.groups and careful.metrics == fast.metrics
    assert careful.units == fast.units and careful.kinds == fast.kinds and careful.notes == fast.notes
    assert np.array_equal(careful.time, fast.time) and np.array_equal(careful.values, fast.values, equal_nan=True)
    if form == "long":
        assert "column 'state' is not numeric: ignored" in fast.notes and fast.n_threads == 8
        # an empty cell and a short row: the careful path reads it, says it, whatever the size
        path.write_text("\n".join(rows[:5] + [rows[5].rsplit(",", 3)[0] + ",,1,R", "1,a"] + rows[6:]) + "\n")
        careful, fast, took = both(path)
        assert not took and fast.notes == careful.notes and "1 row with fewer fields than the header skipped" in fast.notes
        assert np.array_equal(careful.values, fast.values, equal_nan=True) and np.isnan(fast.values).any()


@pytest.mark.parametrize("apart,said", [(1.0, False), (4.0, True)])
def test_a_thread_found_by_a_stretch_also_says_a_level_it_holds_apart(apart, said):
    """A thread ranked for a short CPU burst (the window check) that also holds another metric
    apart all along says so, from LEVEL_APART spreads of the others' means (a worker spinning 4x
    as long per request was said only by a rise of its preemptions); a metric a little apart,
    as one in twenty of a pool is by chance, is not."""
    from perftriage.analysis.sim.threadpool import pool_series
    from perftriage.analysis.threads.deviation import analyse_level
    from perftriage.analysis.threads.series import build

    ts0, _ = pool_series(PoolConfig(seed=33, deviations={}))
    times, keys, vals = [], [], []
    for i in range(ts0.n_threads):
        v = ts0.samples(i).copy()
        if i == 3:
            n = len(v)
            v[n // 2: n // 2 + 10, 0] += 6 * v[:, 0].std()  # a short CPU burst
            v[:, 1] += apart * v[:, 1].std()  # and its second metric held apart all along
        times.append(ts0.times(i))
        keys += [ts0.ids[i]] * len(v)
        vals.append(v)
    ts = build(np.concatenate(times), keys, {}, np.vstack(vals), ts0.metrics, "test")
    res = analyse_level(ts, "thread", params=ThreadParams(replicates=50))
    r = next(r for r in res.ranking if r.items == [3])
    assert r.how == "window" and r.metrics[0][0] == ts0.metrics[0] and "rose to" in r.metrics[0][1]
    level = [text for m, text in r.metrics if m == ts0.metrics[1]]
    assert (level and level[0].startswith("mean ") and "against" in level[0]) if said else not level


def test_a_count_that_moved_once_is_not_said_to_vary():
    """One worker of six never mapped memory during the run, the others' count moved once in 200
    windows (std 0.0141): with the resolution's step (1 in 200 samples: std 0.071), 'constant,
    where the others vary' is not said, and its real difference leads; without it, it led."""
    from perftriage.analysis.threads.deviation import explain

    means = np.array([[0.0, 4.4], [0.0, 3.5], [-0.005, 3.5], [0.0, 3.4], [0.0, 3.6], [0.0, 3.5]])
    stds = np.array([[0.0, 1.0], [0.0141, 0.9], [0.0705, 1.0], [0.0, 1.1], [0.0, 1.0], [0.0, 0.9]])
    metrics = ["Mappings", "CPU"]
    before = explain([0], [1, 2, 3, 4, 5], means, stds, metrics)
    assert before[0][0] == "Mappings" and "constant" in before[0][1][0]
    after = explain([0], [1, 2, 3, 4, 5], means, stds, metrics, step_std=np.array([1 / np.sqrt(200), 0.0]))
    assert after[0][0] == "CPU" and after[0][1][0].startswith("mean 4.4")
    assert not any(m == "Mappings" and parts for m, parts in after)


def test_a_level_only_metric_is_left_out_of_the_distances_only():
    from perftriage.analysis.sim.threadpool import pool_series
    from perftriage.analysis.threads.deviation import _level_inputs, abstractions

    ts, _ = pool_series(PoolConfig(seed=33, deviations={}))
    li = _level_inputs(ts, "thread", *abstractions(ts, "thread"))
    assert list(li.dist) == list(range(len(li.metrics)))
    ts.level_only = (ts.metrics[1],)
    li = _level_inputs(ts, "thread", *abstractions(ts, "thread"))
    assert ts.metrics[1] in li.metrics and li.metrics.index(ts.metrics[1]) not in li.dist
    assert len(li.dist) == len(li.metrics) - 1


def test_a_stretch_in_a_file_with_unbounded_times_is_said_without_a_warning():
    """A damaged file's times (inf, 1e308 beside -1e308): a window's length is left unsaid, and
    no numpy warning reaches the terminal (found by the damaged-inputs evaluation)."""
    import warnings

    from perftriage.analysis.threads.deviation import _at, _length

    class R:
        members = [[0]]

    class T:
        def __init__(self, t):
            self.t = np.asarray(t, float)

        def times(self, i):
            return self.t

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for t in ([0.0, np.inf, np.inf, 2.0], [-1e308, 1e308, -1e308], [np.inf, np.inf]):
            assert _length(T(t), R(), 0, -1, 10) is None or "s" in _length(T(t), R(), 0, -1, 10)
            assert _at(T(t), R(), 0, -1, 1).startswith(" around ")
        assert _length(T([0.0, 1.0, 2.0]), R(), 0, -1, 10) == "10 s"
        assert _at(T([1e300]), R(), 0, -1, 0) == " around t = 1e+300 s"
        # a time since a start (a perf trace on its boot clock): as the requests' times read, not t = 62654.6 s
        assert _at(T([62654.594, 62654.6]), R(), 0, -1, 1) == " around +17:24:14.600"
        assert _at(T([1_534_187_150.157]), R(), 0, -1, 0) == " around 19:05:50.157 UTC"


def test_a_thread_past_both_stretch_bars_goes_by_the_one_it_passes_further():
    # one thread of a ten-thread wave with a short CPU spike (the moving window's, just past its
    # bar) and a handle leak over the last tenth of the run (far past the departure's): the
    # leak leads the finding, the spike is said after it; without the leak, the spike leads
    from perftriage.analysis.sim.threadpool import pool_series

    def wave(leak: bool):
        ts, _ = pool_series(PoolConfig(seed=12, deviations={}))
        i = ts.ids.index(next(t for t, w in zip(ts.ids, ts.groups["wave"]) if w == "W4"))
        x = ts.values[ts.lo[i]:ts.hi[i]]
        n = len(x)
        x[n // 4:n // 4 + 10, 0] = 80.0  # CPU, from about 39%
        if leak:  # Handles ramping to 125% of their maximum over the last tenth (the test above's)
            h, start = x[:, 3], int(0.9 * n)
            h[start:] = np.maximum(h[start:], h[start] + (1.25 * h[:start].max() - h[start]) * np.linspace(0, 1, n - start))
        res = analyse_level(ts, "thread", {"wave": "W4"}, ThreadParams(replicates=50))
        return res, next(r for r in res.ranking if res.names[r.items[0]] == ts.ids[i])

    res, r = wave(leak=True)
    assert r.how == "departure" and r.headline.startswith("Handles held at ")
    assert [m for m, _ in r.metrics][:2] == ["Handles", "CPU"] and "rose to 72.5 from" in r.metrics[1][1]
    assert res.window_z[r.items[0]] > res.params.window_z  # the spike passed its bar too
    res, r = wave(leak=False)
    assert r.how == "window" and r.headline.startswith("CPU rose to 72.5 from")


def test_a_level_one_step_of_a_count_apart_is_not_said():
    # net mappings counted from the trace's start: one munmap before the first window reads -1
    # against the others' 0 all along, one step of the count's resolution; two steps are said
    from perftriage.analysis.threads.covariance import resolution_step
    from perftriage.analysis.threads.deviation import explain

    samples = [np.zeros((200, 2)) for _ in range(6)]
    for x in samples:
        x[:, 1] = np.random.default_rng(len(samples)).normal(50, 5, 200)  # a metric without a resolution
    samples[0][:, 0] = -1
    step = resolution_step(samples, quantum=True)
    assert step[0] == 1 and step[1] == 0
    # a rate at 0 between bursts of 1,774-2,048 (pidstat's kB_wr/s): its least departure, no quantum
    bursts = [np.zeros((40, 1)) for _ in range(3)]
    bursts[0][::3, 0] = [1774.26, 1792.0, 2048.0, 1804.0] * 3 + [1808.0, 1792.0]
    assert resolution_step(bursts)[0] == 1774.26 and resolution_step(bursts, quantum=True)[0] == 0
    means = np.array([x.mean(axis=0) for x in samples])
    stds = np.array([x.std(axis=0) for x in samples])
    args = ([0], [1, 2, 3, 4, 5], means, stds, ["Mappings", "Other"], {"Mappings": "net mappings"})
    assert explain(*args)[0][0] == "Mappings"  # without the step: said, at the floor's units
    assert all(m != "Mappings" for m, _ in explain(*args, step=step))
    means[0, 0] = -2
    said = dict(explain(*args, step=step))
    assert said["Mappings"][0].startswith("mean -2 net mappings against 0 net mappings")


def test_a_counts_move_by_one_step_is_no_short_excursion():
    # open files held at 1 by every thread of a wave; one thread's at 2 for 20 samples is one step
    # of the count (an apache2 worker's 'rose to 2 from 1' on the webserver sample), at 3 two
    from perftriage.analysis.sim.threadpool import pool_series

    def wave(peak: float):
        ts, _ = pool_series(PoolConfig(seed=12, deviations={}))
        rows = [k for k, w in enumerate(ts.groups["wave"]) if w == "W4"]
        for k in rows:
            ts.values[ts.lo[k]:ts.hi[k], 4] = 1.0  # MicroThreads: a count most samples hold...
            ts.values[ts.lo[k] + 100:ts.hi[k]:150, 4] = 2.0  # ...moving by its step, one sample at a time
        i = rows[3]
        start = ts.lo[i] + (ts.hi[i] - ts.lo[i]) // 3
        ts.values[start:start + 20, 4] = peak
        res = analyse_level(ts, "thread", {"wave": "W4"}, ThreadParams(replicates=50))
        return res, res.names.index(ts.ids[i])

    res, k = wave(2.0)
    e = res.excursions[k]
    assert res.metrics[e.metric] != "MicroThreads" and e.z < res.params.window_z
    assert all(r.how != "window" for r in res.ranking)
    res, k = wave(3.0)
    e = res.excursions[k]
    assert e.z > res.params.window_z and res.metrics[e.metric] == "MicroThreads" and e.level > 2


def _steady_wave(units: dict, level: float, sd: float, odd):
    """The simulator's wave W4, its threads' CPU steady at ``level`` (+- ``sd``), in ``units``;
    ``odd(ts, i)`` changes its fourth thread's (row i). The analysis of the wave's threads, and
    that thread's name."""
    from perftriage.analysis.sim.threadpool import pool_series

    ts, _ = pool_series(PoolConfig(seed=12, deviations={}))
    ts.units = units
    rng = np.random.default_rng(0)
    rows = [k for k, w in enumerate(ts.groups["wave"]) if w == "W4"]
    for k in rows:
        ts.values[ts.lo[k]:ts.hi[k], 0] = np.abs(level + rng.normal(0, sd, ts.hi[k] - ts.lo[k]))
    odd(ts, rows[3])
    return analyse_level(ts, "thread", {"wave": "W4"}, ThreadParams(replicates=50)), ts.ids[rows[3]]


def test_a_share_of_time_rising_by_a_few_points_is_no_short_excursion():
    # a healthy pool's worker preempted 3 ms in 54 ms by the host's kernel threads (0.1% -> 5.8%)
    # stood out 10x among still workers; a share of time (%) moves 10 points or it is no excursion
    def wave(rise: float, units: dict):
        def spike(ts, i):
            start = ts.lo[i] + (ts.hi[i] - ts.lo[i]) // 3
            ts.values[start:start + 10, 0] += rise

        res, odd = _steady_wave(units, 30.0, 0.5, spike)  # CPU steady at 30% in every thread of the wave
        e = res.excursions[res.names.index(odd)]
        return (res.metrics[e.metric] if e.z > res.params.window_z else None,
                [res.names[r.items[0]] == odd for r in res.ranking if r.how == "window"])

    assert wave(6.0, {}) == ("CPU", [True])  # a number of no known unit: the others' stillness decides
    assert wave(6.0, {"CPU": "%"}) == (None, [])
    assert wave(15.0, {"CPU": "%"})[0] == "CPU"  # (ranked by the dendrogram already)


def test_a_run_held_apart_by_under_a_point_of_its_time_is_not_ranked():
    # a healthy pool's worker preempted 0.76% of its time over the run against 0.35% for the others,
    # who lie that close together: far apart in their units, under a point of its time
    def wave(level: float, units: dict):
        def apart(ts, i):
            ts.values[ts.lo[i]:ts.hi[i], 0] += level - 0.35

        res, odd = _steady_wave(units, 0.35, 0.02, apart)
        return [(res.names[r.items[0]] == odd, res.metrics[res.departures[r.items[0]].metric])
                for r in res.ranking if r.how == "departure"]

    assert wave(0.76, {}) == [(True, "CPU")]  # a number of no known unit: the others' closeness decides
    assert wave(0.76, {"CPU": "%"}) == []
    assert wave(3.35, {"CPU": "%"}) == [(True, "CPU")]


def test_shares_of_time_apart_are_said_by_how_much_time_moved():
    # a worker napping 2 ms per request: Sleep 20% against 3.6% (+5 sd) is what it does, more
    # than its waits for a CPU at 0.77% against 0.19% (+6 sd, the others steadier there); a rate
    # (another unit) keeps its place among the three said
    from perftriage.analysis.threads.deviation import explain

    metrics = ["Preempted", "Sleep", "Syscalls", "CPU"]
    units = {"Preempted": "%", "Sleep": "%", "Syscalls": "calls/s", "CPU": "%"}
    means = np.array([[0.77, 20.0, 770.0, 3.0]] + [[0.19 + 0.09 * d, 3.6 + 3.0 * d, 543 + 60 * d, 3.0 + 0.1 * d]
                                                   for d in (-1, -0.5, 0, 0.5, 1)])
    stds = np.array([[1.3, 15.0, 360.0, 1.0]] + [[0.36, 13.0, 235.0, 1.0]] * 5)
    by_z = [m for m, _ in explain([0], [1, 2, 3, 4, 5], means, stds, metrics)]
    assert by_z[:2] == ["Preempted", "Sleep"]  # without units: the sd alone
    said = explain([0], [1, 2, 3, 4, 5], means, stds, metrics, units)
    assert [m for m, _ in said] == ["Sleep", "Preempted", "Syscalls"]
    assert said[0][1][0].startswith("mean 20% against 3.6% for the others")


def test_a_share_of_time_and_its_complement_keep_the_order_of_their_sd():
    # a spinning worker: CPU +8.7 points (+23 sd) and Blocked -8.8 points (-18 sd) moved alike,
    # one the other's complement: CPU, set further apart, stays first
    from perftriage.analysis.threads.deviation import explain

    metrics, units = ["Blocked", "CPU"], {"Blocked": "%", "CPU": "%"}
    means = np.array([[87.4, 12.3]] + [[96.2 + 0.5 * d, 3.63 + 0.4 * d] for d in (-1, -0.5, 0, 0.5, 1)])
    stds = np.array([[3.0, 2.0]] + [[2.0, 1.0]] * 5)
    said = explain([0], [1, 2, 3, 4, 5], means, stds, metrics, units)
    assert [m for m, _ in said] == ["CPU", "Blocked"], said


def _graph(threads: dict, intervals: dict):
    """A one-host execution graph from {tid: (pid, comm)} and {tid: [(start, end, state)]}."""
    from perftriage.analysis.execgraph.graph import ExecGraph, ThreadInfo

    tids = sorted(intervals)
    rows = [(t, s, e, st) for t in tids for s, e, st in intervals[t]]
    lo = np.searchsorted([r[0] for r in rows], tids, "left")
    hi = np.searchsorted([r[0] for r in rows], tids, "right")
    n = len(rows)
    return ExecGraph("h", 0, 10**9, np.array(tids), lo, hi, np.array([r[1] for r in rows], np.int64),
                     np.array([r[2] for r in rows], np.int64), np.array([r[3] for r in rows], np.int8),
                     np.zeros(n, np.int8), np.full(n, -1, np.int64), np.full(n, -1, np.int64),
                     np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), [],
                     threads={t: ThreadInfo(t, pid=p, comm=c) for t, (p, c) in threads.items()})


def test_what_ran_while_a_thread_waited_for_a_cpu():
    # worker 11 (pid 10) waits 0-4 ms and 10-12 ms; meanwhile the backup job (pid 50) runs 0-3 ms,
    # its own process's thread 12 runs 3-5 ms, the tracer (perf, pid 60) 10-11.5 ms; the idle task
    # is no one; what ran outside the waits (20-30 ms) is not counted
    from perftriage.analysis.execgraph.graph import BP, RU
    from perftriage.analysis.threads.contention import cpu_waits

    ms = 1_000_000
    threads = {11: (10, "worker-1"), 12: (10, "worker-2"), 50: (50, "backup"), 60: (60, "perf")}
    g = _graph(threads, {0: [(0, 30 * ms, RU)],
                         11: [(0, 4 * ms, BP), (4 * ms, 10 * ms, RU), (10 * ms, 12 * ms, BP)],
                         12: [(3 * ms, 5 * ms, RU)], 50: [(0, 3 * ms, RU), (20 * ms, 30 * ms, RU)],
                         60: [(10 * ms, 11_500_000, RU)]})
    waits = cpu_waits({"h": g}, {"h": [11]})
    waited, who = waits.takers("h", 11, 0, 30 * ms)
    assert waited == 6 * ms
    assert who == [("backup[50]", 3 * ms), ("perf[60] (the tracer)", 1_500_000),
                   ("its own process's other threads", 1 * ms)]
    assert waits.takers("h", 11, 9 * ms, 30 * ms) == (2 * ms, [("perf[60] (the tracer)", 1_500_000)])
    line = waits.words("h", 11, 0, 30 * ms, "over the trace")
    assert line == ("while it waited for a CPU (6 ms over the trace), the CPUs ran backup[50] 3 ms, "
                    "perf[60] (the tracer) 1.5 ms, its own process's other threads 1 ms")
    assert waits.words("h", 11, 5 * ms, 9 * ms) is None  # it did not wait there


def test_a_thread_ranked_for_its_waits_for_a_cpu_is_told_what_ran_then():
    # a five-sample burst of one thread's waits for a CPU: its finding asks what ran in the window
    # that found it (the half window, which the burst fills), and says so; another metric leading
    # asks nothing
    from perftriage.analysis.sim.threadpool import pool_series
    from perftriage.analysis.threads.topdown import level_findings

    ts, _ = pool_series(PoolConfig(seed=12, deviations={}))
    ts.metrics = ["Preempted"] + list(ts.metrics[1:])
    i = ts.ids.index(next(t for t, w in zip(ts.ids, ts.groups["wave"]) if w == "W4"))
    x = ts.values[ts.lo[i]:ts.hi[i]]
    x[len(x) // 4:len(x) // 4 + 5, 0] = 95.0
    res = analyse_level(ts, "thread", {"wave": "W4"}, ThreadParams(replicates=50))
    r = next(r for r in res.ranking if res.names[r.items[0]] == ts.ids[i])
    e = res.excursions[r.items[0]]
    assert r.how == "window" and r.metrics[0][0] == "Preempted" and e.window == res.params.window // 2
    asked = []

    def takers(t, a, b, where):
        asked.append((t, a, b, where))
        return "while it waited for a CPU, the CPUs ran backup[50]"

    f = next(f for f in level_findings(res, ts, takers) if ts.ids[i] in f.subject)
    assert "while it waited for a CPU, the CPUs ran backup[50]" in f.evidence
    step = float(np.median(np.diff(ts.times(i))))
    (t, a, b, where), = asked
    assert t == i and abs((b - a) - e.window * step) < 1e-6 * step
    first = e.sample - e.window // 2  # the window's first sample (samples are their windows' middles)
    assert (a, b) == (ts.times(i)[first] - step / 2, ts.times(i)[first + e.window - 1] + step / 2)
    assert abs(first - len(x) // 4) <= 1  # the burst's
    assert f"for {e.window} samples" in r.metrics[0][1]  # the words say the window that found it
    asked.clear()
    ts.metrics = ["CPU"] + list(ts.metrics[1:])
    res = analyse_level(ts, "thread", {"wave": "W4"}, ThreadParams(replicates=50))
    level_findings(res, ts, takers)
    assert not asked


@pytest.mark.parametrize("busy_preempted, ranked", [(0.3, False), (3.0, True)])
def test_a_cluster_set_apart_by_under_a_point_of_its_time_is_not_ranked(busy_preempted, ranked):
    """Three idle threads of nine, never preempted, where the six busy ones are preempted 0.5% of
    their time (std 0.3): the dendrogram sets them apart by how their metrics move, but what it
    says of them (Preempted 0.01% against 0.51%) is under a point of the thread's time and nothing
    to act on: not ranked, and the note says why (the webserver sample's five idle mysqld
    threads, 'Preempted steadier: std 0.006% against 0.6%', were ranked). Preempted 2.5% of the
    busy ones' time against 0.01% is a point and more: ranked."""
    from perftriage.analysis.threads.series import build

    rng = np.random.default_rng(3)
    n, k = 400, 9
    times, keys, vals = [], [], []
    for i in range(k):
        pre = np.abs(rng.normal(0.5, busy_preempted, n)) if i < 6 else np.abs(rng.normal(0.01, 0.005, n))
        times.append(np.arange(n, dtype=float))
        keys += [f"t{i}"] * n
        vals.append(np.column_stack([30 + rng.normal(0, 3, n), pre, rng.normal(100, 10, n)]))
    ts = build(np.concatenate(times), keys, {"pool": ["w"] * (n * k)}, np.vstack(vals),
               ["CPU", "Preempted", "Syscalls"], "test")
    ts.units.update({"CPU": "%", "Preempted": "%", "Syscalls": "calls/s"})
    res = analyse_level(ts, "thread", params=ThreadParams(replicates=50))
    got = [sorted(r.items) for r in res.ranking]
    left_out = [n for n in res.notes if "left out: what sets it apart moves under 1 point" in n]
    if ranked:
        assert got == [[6, 7, 8]] and re.match(r"Preempted mean 0\.01\d*% against 2\.\d+%", res.ranking[0].headline) \
            and not left_out, (got, res.notes)
    else:
        assert got == [] and len(left_out) == 1, res.notes
        said = re.search(r"\((t\d\+t\d\+t\d): Preempted mean 0\.01\d*% against 0\.5\d+% for the others", left_out[0])
        assert said and sorted(said.group(1).split("+")) == ["t6", "t7", "t8"], left_out


def test_a_share_of_time_that_moved_under_a_point_is_said_after_one_that_moved_more():
    """A sleeping worker's disk wait, 0.63% against 0.02%, its waits for a CPU and for an
    interrupt, each apart by many sd (the others hardly differ) and under a point of its time,
    filled the three metrics said, and its sleep, 17% against 3% (+5 sd: the others' sleep
    varies), was not said at all; with the floor of a point (ThreadParams.run_share) the sleep is
    said first and the three after it."""
    from perftriage.analysis.threads.deviation import explain

    tiny = [[0.63, 0.02], [0.45, 0.01], [0.30, 0.02]]  # (the worker's mean, the others')
    means = np.array([[t[0] for t in tiny] + [17.0]] + [[t[1] + 0.005 * k for t in tiny] + [s]
                                                        for k, s in enumerate([1.0, 6.0, 2.5, 4.0, 0.5])])
    stds = np.array([[0.2, 0.2, 0.2, 5.0]] + [[0.01, 0.01, 0.01, 2.0]] * 5)
    metrics = ["Disk wait", "Preempted", "IRQ wait", "Sleep"]
    units = dict.fromkeys(metrics, "%")
    before = explain([0], [1, 2, 3, 4, 5], means, stds, metrics, units)
    after = explain([0], [1, 2, 3, 4, 5], means, stds, metrics, units, floor=1.0)
    assert "Sleep" not in [m for m, _ in before]
    assert [m for m, _ in after][0] == "Sleep" and after[0][1][0].startswith("mean 17% against 2.8")
