"""Counters across servers (PAD, paper 004): readers and alignment, comparative analysis, change
points, correlation, threshold rules, the CLI and the Counters pane."""

from __future__ import annotations

import json
import shutil
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from perftriage.analysis.counters.comparative import within
from perftriage.analysis.counters.correlation import correlate
from perftriage.analysis.counters.findings import analyse_counters, counter_findings
from perftriage.analysis.counters.params import CounterParams
from perftriage.analysis.counters.onset import find_onset
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.counters.rules import evaluate, read_rules
from perftriage.analysis.counters.stats import nanmedian
from perftriage.analysis.counters.table import Piece, RawCounters, align, from_cube
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify
from perftriage.analysis.sim.fleet import AFFECTED, FleetConfig, fleet_counters

from conftest import ROOT, SHARED

SAMPLE = ROOT / "sample_traces" / "fleet"


def _write(path, text):
    path.write_text(text)
    return path


def test_long_wide_prometheus_and_an_export_give_the_same_aligned_cube(tmp_path):
    rng = np.random.default_rng(1)
    t0, d = 1_700_000_000, 60
    servers, counters = ["a", "b", "c"], ["cpu", "mem"]
    v = rng.normal(50, 5, (3, 2, 10))
    # b samples 20 s late (a clock offset under d/2), c starts one interval late, a misses a sample
    offs = {"a": 0, "b": 20, "c": 0}
    first = {"a": 0, "b": 0, "c": 1}
    wide, long_ = ["time,server,cpu,mem"], ["timestamp,instance,metric,value"]
    prom = []
    for i, s in enumerate(servers):
        series = {c: [] for c in counters}
        for k in range(first[s], 10):
            t = t0 + k * d + offs[s]
            cells = [f"{v[i, j, k]:.6f}" if not (s == "a" and k == 4 and j == 1) else "" for j in range(2)]
            wide.append(f"{t},{s},{cells[0]},{cells[1]}")
            for j, c in enumerate(counters):
                if cells[j]:
                    long_.append(f"{t * 1000},{s},{c},{cells[j]}")  # ms
                    series[c].append([t, cells[j]])
        for c in counters:
            prom.append({"metric": {"__name__": c, "instance": s}, "values": series[c]})
    cw = load_counters([_write(tmp_path / "wide.csv", "\n".join(wide) + "\n")])
    cl = load_counters([_write(tmp_path / "long.csv", "\n".join(long_) + "\n")])
    doc = {"status": "success", "data": {"resultType": "matrix", "result": prom}}
    cp = load_counters([_write(tmp_path / "prom.json", json.dumps(doc))])
    # VictoriaMetrics' export: a series a line, its values and their times in ms apart; its last
    # line cut (a download stopped), a series lost and said
    from fuzzing.strategies import series_export

    export = [json.dumps(x) for x in series_export(prom)]
    cv = load_counters([_write(tmp_path / "export.jsonl", "\n".join(export + [export[0][:50]]) + "\n")])
    assert any("1 line that is no JSON (cut or damaged): its series left out" in n for n in cv.notes), cv.notes
    # the common period starts with c (one interval late): 9 points
    assert cw.n_points == 9 and cw.start == t0 + d and cw.interval == d
    for cs in (cl, cp, cv):
        assert sorted(cs.servers) == servers and sorted(cs.counters) == counters and cs.n_points == 9
        for s in servers:
            for c in counters:
                a = cw.values[cw.servers.index(s), cw.counters.index(c)]
                b = cs.values[cs.servers.index(s), cs.counters.index(c)]
                assert np.allclose(a, b, equal_nan=True), (s, c)
    a = cw.values[cw.servers.index("a"), cw.counters.index("mem")]
    assert np.isnan(a[3]) and np.isfinite(a).sum() == 8  # the missing sample stays missing
    assert np.allclose(cw.values[1, 0], v[1, 0, 1:], atol=1e-5)  # b's late samples on the grid
    assert any("cut" in n for n in cw.notes) and any("no sample" in n for n in cw.notes)


@pytest.mark.parametrize("seed", range(6))
def test_alignment_matches_a_sample_by_sample_reference(seed):
    """Pieces as readers deliver them (whole rows in order, whole rows shuffled, one counter per
    piece, overlapping files, two samples near one grid point, missing cells) in any order: the
    cube and the count of samples that fell where one was are what placing each sample in turn
    gives (the nearest in a piece wins, a later piece overwrites)."""
    rng = np.random.default_rng(seed)
    S, C, T, d, t0 = 4, 5, 30, 10.0, 1_000_000.0
    srv_all = np.repeat(np.arange(S, dtype=np.int32), T)
    time_all = t0 + d * np.tile(np.arange(T), S) + rng.uniform(-3, 3, S * T)
    vals_all = rng.normal(size=(S * T, C))
    vals_all[rng.random(vals_all.shape) < 0.1] = np.nan
    pieces = [Piece(srv_all, time_all, np.arange(C, dtype=np.int32), vals_all)]  # whole, in order
    o = rng.permutation(S * T)[: S * T // 2]  # whole rows, shuffled, some near other samples' points
    pieces.append(Piece(srv_all[o], time_all[o] + rng.choice([0.0, 4.0], len(o)), np.arange(C, dtype=np.int32),
                        rng.normal(size=(len(o), C))))
    for c in rng.choice(C, 2, replace=False):  # one counter a piece, with a near-duplicate sample
        o = np.r_[rng.permutation(S * T)[: S * T // 3], 7]
        pieces.append(Piece(srv_all[o], time_all[o] + np.r_[np.zeros(len(o) - 1), 2.0],
                            np.array([c], np.int32), rng.normal(size=(len(o), 1))))
    o = np.arange(T // 3, T)  # a second file of one server's rows, in order, over the first's
    pieces.append(Piece(srv_all[o], time_all[o], np.arange(C, dtype=np.int32), rng.normal(size=(len(o), C))))
    pieces = [pieces[i] for i in rng.permutation(len(pieces))]
    cs = align(RawCounters([f"s{i}" for i in range(S)], [f"c{j}" for j in range(C)], pieces, "mem"), interval=d)
    ref, dup = np.full(cs.values.shape, np.nan), 0
    for p in pieces:
        k = np.rint((p.time - cs.start) / d).astype(int)
        frac = np.abs((p.time - cs.start) / d - k)
        best = {}
        for i in range(len(k)):
            if 0 <= k[i] < cs.n_points:
                key = (int(p.server[i]), int(k[i]))
                if key in best:
                    dup += len(p.counters)
                if key not in best or frac[i] < frac[best[key]]:
                    best[key] = i
        whole = len(p.counters) == C
        for (s, kk), i in best.items():
            if whole:
                dup += bool(np.isfinite(ref[s, :, kk]).any())
            else:
                dup += int(np.isfinite(ref[s, p.counters, kk]).sum())
            ref[s, p.counters, kk] = p.values[i]
    assert np.array_equal(cs.values, ref, equal_nan=True)
    said = [n for n in cs.notes if "already had one" in n]
    assert (int(said[0].split()[0].replace(",", "")) if said else 0) == dup


def test_a_counter_without_any_sample_is_named_in_the_notes(tmp_path):
    """A column empty on every server (an exporter that never filled it) is named; the share of
    empty cells counts the servers that are kept only."""
    rows = ["time,server,cpu,never,mem"] + [f"{1_700_000_000 + 60 * k},web-{s},{k % 7},,{s + k % 3}"
                                            for k in range(40) for s in range(3)]
    cs = load_counters([_write(tmp_path / "c.csv", "\n".join(rows) + "\n")])
    assert "1 counter without a single sample: never" in cs.notes
    assert "120 of 360 grid cells (33.3%) have no sample" in cs.notes
    rows[1:] = [r.replace(",,", ",1,") if r.split(",")[1] == "web-1" else r for r in rows[1:]]
    filled = load_counters([_write(tmp_path / "d.csv", "\n".join(rows) + "\n")])
    assert not any("without a single sample" in n for n in filled.notes)


@pytest.mark.parametrize("text,problem", [
    ("", "empty"),
    ("time,server,cpu\n", "no data rows"),
    ("idx,m1,m2\n", "no data rows"),  # numbered rows: no reader takes a header alone, still told
    ("trace_id,span_id,parent_id,service,operation,start,duration\n\n", "no data rows"),  # spans
    ("time,host,counter,value\n1700000000,a,cpu,high\n", "value column is not numeric"),
    ("when,what\n1,2\n", "unrecognised"),
])
def test_bad_counter_files_say_which_file_and_what(tmp_path, text, problem):
    from perftriage.analysis.triage import run_triage

    p = _write(tmp_path / "bad.csv", text)
    with pytest.raises(InputError) as e:
        run_triage([p])
    assert str(p) in str(e.value) and problem in str(e.value) and "\n" not in str(e.value)


def test_prometheus_server_label_and_bad_json(tmp_path):
    doc = {"data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "up", "job": "node", "pod": "p1"}, "values": [[1, "1"], [2, "1"], [3, "0"]]},
        {"metric": {"__name__": "up", "job": "node", "pod": "p2"}, "values": [[1, "1"], [2, "1"], [3, "1"]]}]}}
    p = _write(tmp_path / "q.json", json.dumps(doc))
    with pytest.raises(InputError, match="instance"):
        load_counters([p])
    cs = load_counters([p], server_label="pod")
    assert cs.servers == ["p1", "p2"] and cs.counters == ["up"] and cs.n_points == 3  # job: one value
    bad = _write(tmp_path / "bad.json", '{"data": {"resultType": "matrix", "result": [')
    with pytest.raises(InputError, match="not valid JSON"):
        load_counters([bad])


def test_prometheus_names_keep_the_labels_that_tell_series_apart_and_counters_become_rates(tmp_path):
    def series(name, inst, values, **labels):
        return {"metric": {"__name__": name, "instance": inst, "job": "node", **labels},
                "values": [[t, str(v)] for t, v in values]}
    result = [series("node_cpu_seconds_total", i, [(0, 100), (10, 105), (20, 115), (30, 4)], mode=m)
              for i in ("a:9100", "b:9100") for m in ("idle", "user")]
    result += [series("node_load1", i, [(0, 1), (10, 2), (20, 3), (30, 4)]) for i in ("a:9100", "b:9100")]
    p = _write(tmp_path / "q.json", json.dumps({"data": {"resultType": "matrix", "result": result}}))
    cs = load_counters([p])
    assert cs.counters == ['rate(node_cpu_seconds_total{mode="idle"})', 'rate(node_cpu_seconds_total{mode="user"})',
                           "node_load1"]
    rate = cs.values[0, 0]
    # 5 then 10 per 10 s; at 30 s the counter restarted: 4 counted from zero
    assert cs.n_points == 4 and np.isnan(rate[0]) and np.allclose(rate[1:], [0.5, 1.0, 0.4])
    assert np.allclose(cs.values[0, 2], [1, 2, 3, 4])
    assert any("rates per second" in n and "node_cpu_seconds_total" in n for n in cs.notes)


def test_comparative_x_by_hand():
    # 4 servers x 1 counter x 5 points; server 3 sits at 10, the others at 0, 1, 2
    v = np.array([[0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [2, 2, 2, 2, 2], [10, 10, 10, 10, 10]], float)[:, None, :]
    cs = from_cube(v, ["s0", "s1", "s2", "s3"], ["x"])
    cp = within(cs, paper_x=True)
    gm, gs = np.median(v), np.std(v)
    assert cp.global_median[0] == gm and np.isclose(cp.global_std[0], gs)
    assert np.allclose(cp.server_x[:, 0], np.abs(np.array([0, 1, 2, 10]) - gm) / gs)
    assert cp.top_servers(1)[0][:2] == (3, 0)
    assert np.allclose(cp.time_x[:, 0], np.abs(1.5 - gm) / gs)  # median over servers at each point


def test_nanmedian_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 6, 31))
    x[rng.random(x.shape) < 0.1] = np.nan
    x[0, 0, :] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for axis in (0, 1, 2):
            assert np.allclose(nanmedian(x, axis), np.nanmedian(x, axis=axis), equal_nan=True)


@pytest.mark.parametrize("t0", [40, 150])
def test_onset_of_a_ramp_and_a_step(t0):
    rng = np.random.default_rng(t0)
    t = np.arange(300.0)
    ramp = rng.normal(0, 1, 300) + np.where(t >= t0, (t - t0) * 0.3, 0)
    step = rng.normal(0, 1, 300) + np.where(t >= t0, 3.0, 0)
    o = find_onset(ramp)
    assert o.kind == "ramp" and abs(o.index - t0) <= 2 and o.gain > 0.9
    o = find_onset(step)
    assert o.kind == "step" and abs(o.index - t0) <= 2 and 2.5 < o.after - o.before < 3.5
    assert find_onset(rng.normal(0, 1, 300)).gain < 0.1


@pytest.mark.parametrize("t0", [70, 180])
def test_onset_of_a_level_that_jumps_then_keeps_growing(t0):
    """Timeouts of a server whose work piles up: a few a minute for hours, then hundreds and
    rising. A hinge alone dated it from ~60 points before (to reach the jump), a step late."""
    rng = np.random.default_rng(t0)
    t = np.arange(288.0)
    y = rng.poisson(0.3, 288) + np.where(t >= t0, 900 + (t - t0) * 25 + rng.normal(0, 30, 288), 0)
    o = find_onset(y)
    assert abs(o.index - t0) <= 1 and o.gain > 0.95 and o.before < 2
    # the fleet's median keeps its daily swing: there a jump-and-slope is not tried
    assert find_onset(y, jump=False).index < t0 - 10


@pytest.mark.parametrize("kind", ["stuck_rng", "hot_partition"])
def test_injected_server_is_ranked_first_and_dated(kind):
    cs, truth = fleet_counters(FleetConfig(seed=2, incidents={kind: {"server": 9, "start": 0.35}}))
    ca = analyse_counters(cs)
    s, c, x = ca.comparative.top_servers(1)[0]
    assert cs.servers[s] == "silo-10" and cs.counters[c] in AFFECTED[kind] and x > 2.5
    assert ca.servers[0].server == s and len(ca.servers) == 1
    assert abs(ca.servers[0].onset.index - truth["incidents"][0]["start_index"]) <= 2
    f = counter_findings(ca)[0]
    assert f.subject == "silo-10" and "since" in f.title and f.severity in ("warning", "critical")
    view = f.tables[1]  # PAD's server view of the top counter: the server beside the others
    assert view.columns[1] == "silo-10" and [r[0] for r in view.rows][:3] == ["mean", "median", "std"]


def test_healthy_fleet_reports_no_server():
    cs, _ = fleet_counters(FleetConfig(seed=7))
    assert analyse_counters(cs).servers == []


def test_correlation_pearson_spearman_and_lag():
    rng = np.random.default_rng(3)
    T = 400
    base = rng.normal(0, 1, (5, T))
    v = np.stack([base, np.exp(base / 10), base + rng.normal(0, 50, (5, T)),
                  np.roll(base, 5, axis=1)], axis=1)  # linear self, monotonic, noise, lagged by 5
    v[:, 3, :5] = base[:, :1]
    cs = from_cube(v, [f"s{i}" for i in range(5)], ["x", "expx", "noise", "later"])
    r = correlate(cs, 0, server=0)
    by = {cs.counters[row.counter]: row for row in r.rows}
    assert by["expx"].spearman > 0.99 and abs(by["noise"].pearson) < 0.9
    assert by["later"].lag == 5 and by["later"].lag_r > 0.95
    assert "noise" not in {cs.counters[x.counter] for x in r.strong()}
    rf = correlate(cs, 0)  # over the fleet
    assert {cs.counters[x.counter] for x in rf.strong()} >= {"expx"} and rf.cells == 5 * T


@pytest.mark.parametrize("server", [None, 1])
def test_correlation_coefficients_are_pearson_and_spearman_by_definition(server):
    """With ties (integer counters), gaps and cells where the counter of interest has none, every
    coefficient equals scipy's pearsonr / spearmanr on the cells the counter of interest has, each
    other counter's gaps at its mean over them (over the fleet: every cell, fewer than max_cells)."""
    from scipy.stats import pearsonr, spearmanr  # noqa: PLC0415

    rng = np.random.default_rng(11)
    S, C, T = 4, 6, 300
    base = rng.normal(0, 1, (S, 1, T))
    v = base + rng.normal(0, 1, (S, C, T)) * np.linspace(0.1, 3, C)[None, :, None]
    v[:, 2] = np.round(v[:, 2])  # ties
    v[:, 3] = np.round(v[:, 3] * 0.3) + 100.0  # many ties, far from 0
    v[rng.random(v.shape) < 0.03] = np.nan
    cs = from_cube(v, [f"s{i}" for i in range(S)], [f"c{j}" for j in range(C)])
    r = correlate(cs, 0, server=server)
    y = v[:, 0, :] if server is None else v[server, 0][None]
    x = v if server is None else v[server][None]
    ok = np.isfinite(y)
    assert r.cells == int(ok.sum())
    for row in r.rows:
        xc = x[:, row.counter, :][ok]
        xc = np.where(np.isnan(xc), np.nanmean(xc), xc)
        assert row.pearson == pytest.approx(pearsonr(xc, y[ok])[0], abs=1e-12)
        assert row.spearman == pytest.approx(spearmanr(xc, y[ok])[0], abs=1e-12)


def test_a_counter_without_samples_is_not_correlated_and_says_so():
    """Asked to correlate a counter a server never reported (or no server did): no coefficients,
    no numpy warning on the terminal, a finding that says why."""
    rng = np.random.default_rng(2)
    v = rng.normal(size=(4, 3, 60))
    v[1, 0, :] = np.nan  # x never reported by b
    v[:, 2, :] = np.nan  # z by nobody
    cs = from_cube(v, ["a", "b", "c", "d"], ["x", "y", "z"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = correlate(cs, 0, server=1)
        assert r.rows == [] and r.cells == 0 and r.notes == ["x has 0 samples on b: too few to correlate (3 at least)"]
        assert correlate(cs, 2).notes == ["z has 0 samples over the fleet: too few to correlate (3 at least)"]
        assert len(correlate(cs, 0).rows) == 2  # over the fleet x has samples
        ca = analyse_counters(cs, CounterParams(correlate=("x@b", "z")))
        titles = [f.title for f in counter_findings(ca)]
    assert "x on b: 0 samples, too few to correlate" in titles
    assert "z over the fleet: 0 samples, too few to correlate" in titles


PAPER_XML = """<ThresholdConfig>
  <PerformanceCounter Name="Runtime.GC.PercentOfTimeInGC">
    <Rule AppliesTo="DetailView">
      <Statistic >Any</Statistic >
      <ExpectedValue >15</ExpectedValue >
      <ComparisonOperator>GreaterThan </ComparisonOperator >
    </Rule >
  </PerformanceCounter >
  <PerformanceCounter Name="MessageQueue.NumQueuedMsgs">
    <Rule AppliesTo="TimeView">
      <Statistic >Average</Statistic >
      <ExpectedValue >5</ExpectedValue >
      <ComparisonOperator>GreaterThan </ComparisonOperator >
    </Rule >
  </PerformanceCounter >
</ThresholdConfig >
"""


def test_rules_in_the_papers_xml_and_in_toml(tmp_path):
    v = np.zeros((3, 2, 6))
    v[1, 0, 4] = 20  # GC above 15 once, on s1 at point 4
    v[:, 1, 2] = [4, 6, 8]  # queued messages: fleet mean 6 at point 2
    cs = from_cube(v, ["s0", "s1", "s2"], ["Runtime.GC.PercentOfTimeInGC", "MessageQueue.NumQueuedMsgs"])
    xml_rules = read_rules(_write(tmp_path / "rules.xml", PAPER_XML))
    toml_rules = read_rules(_write(tmp_path / "rules.toml", (SAMPLE / "rules.toml").read_text()))
    for rules in (xml_rules, toml_rules[:2]):
        viol, notes = evaluate(cs, rules)
        assert not notes and len(viol) == 2
        gc, q = viol
        assert gc.n == 1 and gc.items[0] == (1, 4, 20.0)
        assert q.n == 1 and q.items[0] == (-1, 2, 6.0)
    viol, notes = evaluate(cs, toml_rules)
    assert any("no counter matches" in n for n in notes)


@pytest.mark.parametrize("text,problem", [
    ("[[rule]]\ncounter='x'\nview='nowhere'\nvalue=1\n", "view must be"),
    ("[[rule]]\ncounter='x'\n", "give value"),
    ("[[rule]]\ncounter='x'\nvalue=1\nop='about'\n", "unknown comparison"),
    ("<ThresholdConfig><PerformanceCounter Name='x'><Rule AppliesTo='Sideways'/></PerformanceCounter>"
     "</ThresholdConfig>", "AppliesTo"),
    ("[[rule]\n", "not valid TOML"),
])
def test_bad_rules_say_which_rule(tmp_path, text, problem):
    p = _write(tmp_path / "r.toml", text)
    with pytest.raises(InputError) as e:
        read_rules(p)
    assert str(p) in str(e.value) and problem in str(e.value)


def test_report_on_the_committed_sample_names_its_incidents():
    truth = json.loads((SAMPLE / "ground_truth.json").read_text())
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(SAMPLE), "--format", "json", "-q",
                          "--reference", str(ROOT / "sample_traces" / "fleet-baseline")],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    subjects = [f["subject"] for f in rep["findings"] if "deviates from the fleet" in f["title"]]
    injected = {i["servers"][0] for i in truth["incidents"] if i["kind"] != "buffer_leak"}
    assert set(subjects) == injected
    titles = " ".join(f["title"] for f in rep["findings"])
    assert "threshold:" in titles and "differ from the reference" in titles


async def test_counters_pane_views_and_correlations():
    from perftriage.analysis.triage import Options
    from perftriage.tui.app import PerftriageApp
    from perftriage.tui.panes.counters import VIEWS, CountersPane
    from perftriage.tui.widgets.row_table import RowTable

    app = PerftriageApp([str(SAMPLE)], Options())
    async with app.run_test(size=(140, 45)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one("#tabs").active == "counters"
        pane = app.query_one(CountersPane)
        table = app.query_one("#co-table", RowTable)
        assert table.source.cells(0)[1] == "silo-07"
        # 'since' is each counter's own onset: silo-07's GC time rose after its latency did
        from perftriage.analysis.counters.comparative import server_onset

        cs = pane.ca.cs
        since = {}
        for row in range(8):
            cells = table.source.cells(row)
            if cells[1] == "silo-07":
                o = server_onset(cs, cs.servers.index("silo-07"), cs.counters.index(cells[2]))
                assert cells[4] == (cs.time_label(o.index) if o is not None else "")
                since[cells[2]] = cells[4]
        assert since["Runtime.GC.PercentOfTimeInGC"] != since["Requests.Latency.P50ms"]
        await pilot.pause(0.2)
        assert "max&#160;per&#160;server" in app.export_screenshot() or "max per server" in app.export_screenshot()
        table.focus()
        # an interval's row shows the time around it until the user picks a view, the others the servers
        marked = next(r for r, m in enumerate(pane.row_marks) if m is not None)
        for row, view in ((marked, "time view"), (0, "server view"), (marked, "time view"), (0, "server view")):
            table.focus_row(row)
            await pilot.pause(0.05)
            assert pane.view_name == view, row
        for view in VIEWS[1:4]:
            await pilot.press("v")
            assert VIEWS[pane.view] == view
        await pilot.pause(0.2)
        assert "silo-25" in app.export_screenshot()  # sparklines list every server
        await pilot.press("v")
        await pilot.pause(0.2)
        assert VIEWS[pane.view] == "statistics" and "q95" in app.export_screenshot()
        table.focus_row(marked)  # the view picked stays on an interval's row
        await pilot.pause(0.05)
        assert VIEWS[pane.view] == "statistics"
        table.focus_row(0)
        await pilot.pause(0.05)
        await pilot.press("c")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.pause(0.2)
        assert VIEWS[pane.view] == "correlations" and "Pearson" in app.export_screenshot() and pane.corr is not None


@pytest.mark.parametrize("n", [1, 2, 3, 7, 12, 25, 37, 100, 999])
@pytest.mark.parametrize("width", [30, 72, 140])
def test_server_view_ticks_are_whole_servers(n, width):
    """The server view's x axis names servers 1..n by whole numbers (twelve servers had ticks at
    3.8 and 6.5), the first and the last among them, no closer than about 12 columns."""
    from perftriage.tui.panes.counters import _server_ticks

    at, labels = _server_ticks(n, width)
    assert at[0] == 1 and at[-1] == n and at == sorted(set(at)) and labels == [str(x) for x in at]
    assert all(isinstance(x, int) for x in at) and len(at) <= max(2, width // 12 + 1)
    gaps = np.diff(at)
    assert n == 1 or gaps.min() >= gaps.max() / 2  # the last gap no less than half a step


def test_the_aiops_metric_export_is_read_as_long_counters(tmp_path):
    """timestamp, cmdb_id (the pod), kpi_name, value: before, no server column was recognised
    and the file was not a counter file perftriage reads."""
    rows = ["timestamp,cmdb_id,kpi_name,value"]
    rows += [f"{1647705600 + 60 * k},frontend-{s},{c},{50 + (s == 4 and 40 <= k < 50) * 30 + k % 3}"
             for k in range(120) for s in range(5) for c in ("cpu", "mem")]
    p = _write(tmp_path / "kpi_container.csv", "\n".join(rows) + "\n")
    cs = load_counters([p])
    assert sorted(cs.servers) == [f"frontend-{s}" for s in range(5)] and sorted(cs.counters) == ["cpu", "mem"]
    assert cs.n_points == 120 and cs.interval == 60


def test_one_file_per_server_without_a_server_column_is_that_servers(tmp_path, monkeypatch):
    """Exports per host (web-01.csv: time and counters, no server column) read as a fleet: each
    file the server named after it, epoch and ISO times aligned, the same cube as one wide file
    with a server column; thread metrics and text stay what they are."""
    import datetime as dt
    import gzip

    import perftriage.analysis.triage  # noqa: F401 (registers every kind of file, as a run does)
    from perftriage.analysis.inputs import sniff_file

    rng = np.random.default_rng(5)
    t0, d = 1_700_000_000, 60
    v = rng.normal(50, 5, (3, 2, 12))
    wide = ["time,server,cpu,mem"]
    folder = tmp_path / "fleet"
    folder.mkdir()
    for i, name in enumerate(["web-01", "web-02", "db-1"]):
        own = ["timestamp,cpu,mem"]
        for k in range(12):
            t = t0 + k * d
            stamp = dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat() if i == 1 else str(t)
            cells = [f"{v[i, 0, k]:.6f}", "" if (i == 2 and k == 5) else f"{v[i, 1, k]:.6f}"]
            own.append(f"{stamp},{cells[0]},{cells[1]}")
            wide.append(f"{t},{name},{cells[0]},{cells[1]}")
        text = "\n".join(own) + "\n"
        if i == 2:  # gzip'd, and an empty cell: the careful path
            (folder / f"{name}.csv.gz").write_bytes(gzip.compress(text.encode()))
        else:
            _write(folder / f"{name}.csv", text)
    files = sorted(folder.iterdir())
    assert all(sniff_file(f) == "counters" for f in files)
    cs = load_counters(files)
    ref = load_counters([_write(tmp_path / "wide.csv", "\n".join(wide) + "\n")])
    assert sorted(cs.servers) == sorted(ref.servers) == ["db-1", "web-01", "web-02"]
    order = [cs.servers.index(s) for s in ref.servers]
    assert cs.start == ref.start and cs.interval == ref.interval == d
    np.testing.assert_allclose(cs.values[order][:, [cs.counters.index(c) for c in ref.counters]], ref.values,
                               equal_nan=True)
    assert np.isnan(cs.values[cs.servers.index("db-1"), cs.counters.index("mem"), 5])
    assert any(n.startswith("3 files without a server column: each is the server named after it") for n in cs.notes)
    import perftriage.analysis.counters.readers as readers

    monkeypatch.setattr(readers, "POLARS_FROM_BYTES", 0)  # the large files' columnar reader: the same
    big = load_counters(files)
    assert big.servers == cs.servers and np.array_equal(big.values, cs.values, equal_nan=True)

    # not counters: thread metrics (per-thread columns), a log with text, a lone time column
    threads = _write(tmp_path / "threads.csv", "time,worker:101,worker:102\n0,1.5,2.5\n1,1.0,2.0\n")
    assert sniff_file(threads) == "threads"
    log = _write(tmp_path / "log.csv", "time,level,message\n1700000000,INFO,started\n1700000060,WARN,slow\n")
    assert sniff_file(log) is None
    lone = _write(tmp_path / "times.csv", "time\n1700000000\n1700000060\n")
    assert sniff_file(lone) is None


def test_numbered_rows_are_read_with_the_users_interval_and_told_as_times_since_the_start(tmp_path, monkeypatch):
    """Datasets published without timestamps (ASD, SMD: a server's file, 'idx' numbering its rows):
    read only with the time between rows given; times since the start, never a 1970 clock."""
    import gzip

    import perftriage.analysis.counters.readers as readers
    import perftriage.analysis.triage  # noqa: F401 (registers every kind of file, as a run does)
    from perftriage.analysis.counters.findings import analyse_counters, counter_findings
    from perftriage.analysis.inputs import sniff_file

    rng = np.random.default_rng(8)
    folder = tmp_path / "asd"
    folder.mkdir()
    for s in range(6):
        v = rng.normal(0.5, 0.02, (400, 3))
        if s == 2:
            v[250:280] += 0.4  # an incident on one server, rows 250-279
        lines = ["idx,m1,m2,m3"] + [f"{k},{a:.2f},{b:.2f},{c:.2f}" for k, (a, b, c) in enumerate(v)]
        text = "\n".join(lines) + "\n"
        if s == 5:
            (folder / f"srv-{s}.csv.gz").write_bytes(gzip.compress(text.encode()))
        else:
            _write(folder / f"srv-{s}.csv", text)
    files = sorted(folder.iterdir())
    assert all(sniff_file(f) == "counters" for f in files)
    with pytest.raises(InputError, match=r"srv-0\.csv: its rows are numbered \(idx\), not timed: give the time "
                                         r"between two rows, e\.g\. --interval 5m"):
        load_counters(files)
    cs = load_counters(files, row_interval=300)
    assert cs.numbered and cs.interval == 300 and cs.n_points == 400 and cs.start == 0
    assert any(n.startswith("rows numbered, not timed: 5 min apart") for n in cs.notes)
    monkeypatch.setattr(readers, "POLARS_FROM_BYTES", 0)
    assert np.array_equal(load_counters(files, row_interval=300).values, cs.values, equal_nan=True)
    fs = counter_findings(analyse_counters(cs))
    hit = next(f for f in fs if f.subject == "srv-2" and " from +20:50:00 (row 250)" in f.title)  # at another level
    assert "to +23:15:00 (row 279)" in hit.title and "1970" not in " ".join(f.title + " ".join(f.evidence) for f in fs)

    # not numbered rows: a gap in the numbers, a text cell; numbered and timed files together: refused
    gap = _write(tmp_path / "gap.csv", "idx,a,b\n0,1,2\n2,1,2\n3,1,2\n")
    text = _write(tmp_path / "text.csv", "index,a,b\n0,1,x\n1,1,y\n2,1,z\n")
    assert sniff_file(gap) is None and sniff_file(text) is None
    timed = _write(tmp_path / "web-01.csv", "time,m1,m2,m3\n1700000000,1,2,3\n1700000300,1,2,3\n")
    with pytest.raises(InputError, match="its rows are numbered, while .*web-01.csv has times: they cannot be aligned"):
        load_counters([files[0], timed], row_interval=300)


def test_files_without_a_header_read_as_the_published_ones(tmp_path):
    """Counters published without a header (SMD's machine-1-1.txt: numbers from the first line):
    the real ASD test files with their header and idx column taken off give the same counters
    (m1..m19, numbered from 1 as the labels number them) and the same findings as the files as
    published; a first column of unix times is their times; without times, --interval is asked."""
    import gzip

    import perftriage.analysis.triage  # noqa: F401 (registers every kind of file, as a run does)
    from perftriage.analysis.inputs import sniff_file

    asd = SHARED / "real_data" / "asd" / "test"
    if not asd.is_dir():
        pytest.fail(f"{asd} is missing: the tests expect ../shared/real_data beside the clone")
    published = sorted(asd.glob("omi-*_test.csv.gz"))[:6]
    bare = tmp_path / "bare"
    bare.mkdir()
    for f in published:
        lines = gzip.decompress(f.read_bytes()).decode().splitlines()[1:]
        (bare / f.name.replace(".csv.gz", ".txt")).write_text("\n".join(ln.split(",", 1)[1] for ln in lines) + "\n")
    files = sorted(bare.iterdir())
    assert all(sniff_file(f) == "counters" for f in files)
    with pytest.raises(InputError, match=r"omi-1\w*_test\.txt: has no header and no time column: .* --interval 5m"):
        load_counters(files)
    cs, ref = load_counters(files, row_interval=300), load_counters(published, row_interval=300)
    assert cs.counters == ref.counters == [f"m{k}" for k in range(1, 20)] and cs.servers == ref.servers
    assert cs.numbered and np.array_equal(cs.values, ref.values, equal_nan=True)
    assert "6 files without a header (omi-10_test.txt, omi-11_test.txt, omi-12_test.txt, ...): columns read as " \
           "counters m1..m19 (numbered from 1)" in cs.notes
    titles = [f.title for f in counter_findings(analyse_counters(cs))]
    assert titles == [f.title for f in counter_findings(analyse_counters(ref))] and len(titles) > 3
    # plain numbers are read whole by numpy's parser (_headerless_numbers): the same as row by row
    import perftriage.analysis.counters.readers as readers

    assert readers._headerless_numbers(files[0]) is not None
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(readers, "_headerless_numbers", lambda path: None)
        slow = load_counters(files, row_interval=300)
    assert slow.counters == cs.counters and np.array_equal(slow.values, cs.values, equal_nan=True)
    # a first column of unix times, a damaged cell, a row of another width
    rows = [f"{1_700_000_000 + 60 * k},{k % 5},{'x' if k == 7 else k}" for k in range(300)]
    timed = _write(tmp_path / "web-01.txt", "\n".join(rows[:50] + ["1,2"] + rows[50:]) + "\n")
    assert sniff_file(timed) == "counters"
    cs = load_counters([timed])
    assert not cs.numbered and cs.start == 1_700_000_000 and cs.interval == 60 and cs.counters == ["m1", "m2"]
    assert np.isnan(cs.values[0, 1, 7]) and cs.values[0, 1, 8] == 8
    assert any("web-01.txt: 1 row with another number of fields than most skipped" in n for n in cs.notes)
    assert readers._headerless_numbers(timed) is None  # the careful path said so
    plain = _write(tmp_path / "web-02.txt", "\n".join(r.replace(",x", ",7") for r in rows) + "\n")
    assert readers._headerless_numbers(plain) is not None
    cs = load_counters([plain])
    assert cs.start == 1_700_000_000 and cs.interval == 60 and cs.counters == ["m1", "m2"] and cs.values[0, 1, 7] == 7
    # a growing counter first is no clock: its steps are uneven
    grow = _write(tmp_path / "db-01.txt", "\n".join(f"{2_000_000_000 + k * k},{k % 3}" for k in range(100)) + "\n")
    with pytest.raises(InputError, match="has no header and no time column"):
        load_counters([grow])
    assert load_counters([grow], row_interval=60).counters == ["m1", "m2"]


def test_pod_metrics_with_go_times_read_as_a_fleet_of_pods(tmp_path):
    """The real OnlineBoutique metric folder (Nezha's collector, written in Go): a PodName column,
    times as Go prints them ('2022-08-22 03:51:19.607158889 +0000 UTC m=+0.113112869'), and a
    second time column, TimeStamp, that is 200,000,000 s wrong in adservice's file: the pods are
    the servers, Time their times, and no time column a counter."""
    import perftriage.analysis.triage  # noqa: F401 (registers every kind of file, as a run does)
    from perftriage.analysis.inputs import sniff_file

    folder = SHARED / "real_data" / "onlineboutique-2022-08-22" / "metric"
    if not folder.is_dir():
        pytest.fail(f"{folder} is missing: the tests expect ../shared/real_data beside the clone")
    files = sorted(folder.glob("*_metric.csv.gz"))
    assert len(files) == 10 and all(sniff_file(f) == "counters" for f in files)
    cs = load_counters(files)
    assert sorted(cs.servers) == sorted(f.name.removesuffix("_metric.csv.gz") for f in files)
    assert "CpuUsageRate(%)" in cs.counters and not {"Time", "TimeStamp"} & set(cs.counters)
    assert cs.start == pytest.approx(1661140279.6, abs=60)
    # the collector's minute is 59.99995 s by its clock's jitter: a minute, and times on whole seconds
    assert cs.interval == 60 and cs.time_label(217) == "+3:37:00"
    ad = cs.server_index(next(s for s in cs.servers if s.startswith("adservice")))
    assert np.isfinite(cs.values[ad, cs.counters.index("CpuUsageRate(%)")]).mean() > 0.95  # on the others' clock
    # the same in a file written here: offsets other than UTC, the zone's name, no monotonic part
    p = _write(tmp_path / "pods.csv", "Time,TimeStamp,PodName,cpu\n" + "\n".join(
        f"2022-08-22 0{5 + k // 60}:{k % 60:02d}:00.5 +0200 CEST,{k},web-{s},{k % 3}" for k in range(90) for s in (1, 2, 3))
        + "\n")
    cs = load_counters([p])
    assert cs.counters == ["cpu"] and cs.servers == ["web-1", "web-2", "web-3"]
    assert cs.start == pytest.approx(1661137200.5) and cs.interval == 60


def test_a_server_is_known_by_its_kind_from_its_name():
    from perftriage.analysis.counters.peers import role

    kinds = {"web-01": "web", "web01.prod.example.com:9100": "web", "omi-12": "omi", "machine-1-3": "machine",
             "cartservice-579f59597d-wc2lz": "cartservice", "node-exporter-x7k2p": "node-exporter",
             "destination_50": "destination", "db-a": "db", "kafka-0": "kafka", "front_service": "front_service",
             "10.0.0.1:9100": "", "[::1]:9090": "", "cafe": "cafe", "db1": "db"}
    assert {n: role(n) for n in kinds} == kinds


def test_pods_of_different_services_are_not_compared_with_one_another():
    """The real OnlineBoutique pods are ten different services: adservice's JVM holds eight times
    the memory of the Go pods every minute of the day. That is no finding: the pods are not
    compared by level (PAD's server view), the note says why, and the intervals over time stay."""
    folder = SHARED / "real_data" / "onlineboutique-2022-08-22" / "metric"
    if not folder.is_dir():
        pytest.fail(f"{folder} is missing: the tests expect ../shared/real_data beside the clone")
    cs = load_counters(sorted(folder.glob("*_metric.csv.gz")))
    ca = analyse_counters(cs)
    assert ca.servers == [] and not np.isfinite(ca.comparative.server_x).any()
    assert any("the 10 servers are not peers: their usual levels differ more from one another than each one's "
               "varies over time" in n for n in ca.notes)
    titles = [f.title for f in counter_findings(ca)]
    assert not any("deviates from" in t for t in titles) and len(ca.over_time.intervals) > 50
    assert any("unusual from" in t for t in titles[:3])
    f = next(f for f in counter_findings(ca) if "unusual from" in f.title and "peers" not in " ".join(f.evidence))
    assert any("against the other servers' movement at the same time" in e for e in f.evidence)


def test_servers_of_two_kinds_are_compared_within_their_kind():
    """Eight web servers and four databases: the databases hold eight times the memory of the web
    servers, which is what they are; db-03 holds a quarter more than the other databases, which
    is the finding. Named all alike (one kind), the fleet is one and db-03 is found as before."""
    rng = np.random.default_rng(7)
    T = 200
    names = [f"web-{k:02d}" for k in range(1, 9)] + [f"db-{k:02d}" for k in range(1, 5)]
    v = np.stack([rng.normal([[30], [2000]], [[3], [50]], (2, T)) for _ in range(8)]
                 + [rng.normal([[60], [16000 if k != 3 else 20000]], [[3], [200]], (2, T)) for k in range(1, 5)])
    cs = from_cube(v, names, ["cpu", "mem"])
    ca = analyse_counters(cs)
    assert [cs.servers[sd.server] for sd in ca.servers] == ["db-03"]
    assert ("servers grouped by name into 2 kinds (web: 8, db: 4): each compared with its own kind only "
            "(--all-peers: all with all)") in ca.notes
    # all with all, as PAD does (--all-peers): a database's memory against the web servers' median
    pad = analyse_counters(cs, CounterParams(all_peers=True))
    db3 = names.index("db-03")
    assert pad.comparative.ref_median[db3, 1] < 2500 < 15000 < ca.comparative.ref_median[db3, 1] and not pad.notes
    f = counter_findings(ca)[0]
    assert f.title.startswith("db-03 deviates from the db servers: mem")
    assert re.fullmatch(r"mem: median 19,9\d\d on db-03 against 1[56],\d{3} on the other db servers \(X = [\d.]+\)",
                        f.evidence[0])
    # over time, each kind against its own kind at the same time: the web servers' load triples
    # for ten points, all of them at once; a database is not unusual for it (against all the
    # others at once, whose median is a web server's, each database would be)
    x = v.copy()
    x[:8, 0, 100:110] += 60
    ot = analyse_counters(from_cube(x, names, ["cpu", "mem"])).over_time
    assert ot.alone is not None and not ot.alone.any()
    assert not [names[i.server] for i in ot.intervals if i.start <= 109 and i.end >= 100]
    x[names.index("db-02"), 0, 100:110] += 60  # one database alone: unusual against the databases
    ot = analyse_counters(from_cube(x, names, ["cpu", "mem"])).over_time
    assert [names[i.server] for i in ot.intervals if i.start <= 109 and i.end >= 100] == ["db-02"]
    # one kind of server, one fleet: the web servers alone, one of them far off
    w = from_cube(v[:8].copy(), names[:8], ["cpu", "mem"])
    w.values[2, 1] += 1000
    ca = analyse_counters(w)
    assert ca.peers.whole_fleet and [w.servers[sd.server] for sd in ca.servers] == ["web-03"]
    assert counter_findings(ca)[0].title.startswith("web-03 deviates from the fleet: mem")
    # the databases known by their addresses only: a kind too, called so (not 'the fleet')
    named = names[:8] + [f"10.0.0.{k}:9100" for k in range(1, 5)]
    ca = analyse_counters(from_cube(v, named, ["cpu", "mem"]))
    assert ("servers grouped by name into 2 kinds (web: 8, named by address: 4): each compared with its own kind "
            "only (--all-peers: all with all)") in ca.notes
    f = counter_findings(ca)[0]
    assert f.title.startswith("10.0.0.3:9100 deviates from the servers named by address: mem")
    assert "on the other servers named by address (X = " in f.evidence[0]


def test_a_damaged_cell_is_a_missing_sample_and_a_column_of_text_no_counter(tmp_path):
    import perftriage.analysis.triage  # noqa: F401 (registers every kind of file, as a run does)
    from perftriage.analysis.inputs import sniff_file

    rows = [f"{k},{k % 7},{'x' if k == 3 else k * 2},{'oops' if k % 10 == 0 else k}" for k in range(200)]
    f = _write(tmp_path / "web-01.csv", "idx,cpu,mem,gc\n" + "\n".join(rows) + "\n")
    assert sniff_file(f) == "counters"  # a damaged cell among its first rows: still counters
    cs = load_counters([f], row_interval=60)
    assert cs.counters == ["cpu", "mem"]  # gc: one cell in ten is text: no counter
    mem = cs.values[0, cs.counters.index("mem")]
    assert np.isnan(mem[3]) and np.isfinite(np.delete(mem, 3)).all() and mem[4] == 8
    assert "web-01.csv: column 'mem': 1 cell not a number (e.g. 'x') read as missing" in cs.notes
    assert "web-01.csv: column 'gc' is not numeric: ignored" in cs.notes


def test_wide_csv_fast_path_equals_the_careful_one(tmp_path, monkeypatch):
    import perftriage.analysis.counters.readers as readers

    rng = np.random.default_rng(5)
    lines = ["Time,Server,cpu,mem,q"]
    for s in ("x", "y", "z"):
        for k in range(20):
            v = rng.normal(10, 2, 3)
            lines.append(f"{1_700_000_000 + 60 * k},{s},{v[0]:.5f},{'nan' if k == 7 else f'{v[1]:.5f}'},{v[2]:.5f}")
    p = _write(tmp_path / "w.csv", "\n".join(lines) + "\n")
    fast = load_counters([p])
    monkeypatch.setattr(readers, "_read_wide_fast", lambda *a: None)
    slow = load_counters([p])
    assert fast.servers == slow.servers and fast.counters == slow.counters
    assert np.array_equal(fast.values, slow.values, equal_nan=True) and np.isnan(fast.values[0, 1, 7])


def test_a_counter_column_named_twice_is_kept_and_said(tmp_path):
    for blank in ("", "1"):  # the careful path (an empty cell) and numpy's fast one
        p = _write(tmp_path / f"d{blank}.csv", "time,server,cpu,cpu\n" + "".join(
            f"{1_700_000_000 + 60 * k},{s},{k},{blank if k == 0 and s == 'a' else 10 + k}\n"
            for s in "abc" for k in range(4)))
        cs = load_counters([p])
        assert cs.counters == ["cpu", "cpu (2)"]
        assert cs.values[cs.servers.index("b"), 1, 2] == 12 and any("named twice" in n for n in cs.notes)


def test_an_extreme_server_cannot_hide_in_the_spread_it_inflates():
    # the paper's X divides by a std that server 3 itself inflates: 2.2, under the threshold;
    # against the other servers only, it stands 11 of their standard deviations away
    v = np.array([[0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [2, 2, 2, 2, 2], [10, 10, 10, 10, 10]], float)[:, None, :]
    cs = from_cube(v, ["s0", "s1", "s2", "s3"], ["x"])
    paper, robust = within(cs, paper_x=True), within(cs)
    assert paper.server_x[3, 0] < 2.5
    assert robust.server_x[3, 0] == pytest.approx(abs(10 - 1) / np.std([0, 1, 2] * 5))
    assert robust.server_x[:3, 0].max() < 2.5
    ca = analyse_counters(cs)
    assert [cs.servers[sd.server] for sd in ca.servers] == ["s3"]
    f = counter_findings(ca)[0]
    assert f.evidence[0] == "x: median 10 on s3 against 1 on the other servers (X = 11.0)"  # plain words first
    assert "the other servers' std" in f.evidence[-1] and f.evidence[-1].startswith("details: ")
    assert f.tables[0].columns[3] == "others' median"


def _fleet_with(days: int, event=None, per_day: int = 96, servers: int = 8, counters: int = 5, seed: int = 4):
    rng = np.random.default_rng(seed)
    T = days * per_day
    t = np.arange(T)
    daily = 0.3 * np.sin(2 * np.pi * t / per_day)
    v = np.round(0.5 + daily[None, None, :] + rng.normal(0, 0.03, (servers, counters, T)), 2)
    if event is not None:
        srv, c_from, c_to, a, b, size = event
        v[srv, c_from:c_to, a:b] += size
    return from_cube(v, [f"srv-{i}" for i in range(servers)], [f"c{i}" for i in range(counters)], start=1.6e9,
                     interval=86400 / per_day)


def test_an_interval_on_one_server_with_its_start_end_and_counters():
    from perftriage.analysis.counters.over_time import detect_over_time

    cs = _fleet_with(4, event=([2], 1, 3, 200, 212, 0.6))
    ot = detect_over_time(cs)
    assert ot.seasonal and ot.period == 96
    hits = [iv for iv in ot.intervals if iv.server == 2]
    assert len(hits) == 1 and abs(hits[0].start - 200) <= 1 and abs(hits[0].end - 211) <= 1
    assert {c for c, *_ in hits[0].counters} == {1, 2}
    # nothing else stands out: the daily cycle is taken out (noise may graze the threshold once)
    assert all(iv.server == 2 for iv in ot.intervals if iv.peak_z > 6 or iv.points > 2)


def test_a_fleet_wide_event_is_seen_against_each_servers_history():
    from perftriage.analysis.counters.over_time import detect_over_time

    cs = _fleet_with(4, event=(slice(None), 0, 3, 250, 270, 0.8))
    ot = detect_over_time(cs)
    assert {iv.server for iv in ot.intervals if iv.start <= 260 <= iv.end} == set(range(8))
    f = [x for x in counter_findings(analyse_counters(cs)) if "unusual from" in x.title][0]
    assert any("fleet-wide event" in e for e in f.evidence)


def test_many_servers_at_once_without_own_history_are_not_said_seen_against_it():
    """Two days: every series is judged against the others at the same time only. Five servers
    leaving at once, each on counters of its own (a slow service slowing its callers), overlap:
    the finding says so, and does not claim a comparison with their own history it did not make."""
    cs = _fleet_with(2, counters=8)
    v = np.array(cs.values, dtype=float)
    for s in range(5):
        v[s, s:s + 2, 100:110] += 3.0
    cs = from_cube(v, cs.servers, cs.counters, start=cs.start, interval=cs.interval)
    found = [x for x in counter_findings(analyse_counters(cs)) if "unusual from" in x.title]
    assert {x.subject for x in found} >= {f"srv-{s}" for s in range(5)}
    lines = [e for e in found[0].evidence if "servers have an interval overlapping" in e]
    assert lines and lines[0].startswith("5 of 8 servers") and "many servers moved at once" in lines[0]
    assert not any("own history" in e for x in found for e in x.evidence)


def test_a_counter_that_jumps_at_every_burst_does_not_bury_an_incident():
    """A latency that sits still, then jumps at bursts (15% of the points, on every server: a MAD
    of nearly nothing) is beyond z at every burst; its z is scaled down until a tenth of its points
    are, so the incident on srv-2 (two counters, points 200-211) is the first interval, among few."""
    from perftriage.analysis.counters.over_time import detect_over_time
    from perftriage.analysis.counters.params import TimeParams

    cs = _fleet_with(4, event=([2], 1, 3, 200, 212, 0.6))
    v = cs.values.copy()
    rng = np.random.default_rng(3)
    shape = (v.shape[0], v.shape[2])
    v[:, 4] = np.where(rng.random(shape) < 0.15, rng.uniform(0.05, 0.5, shape), 0.003 + rng.normal(0, 1e-4, shape))
    cs = from_cube(v, cs.servers, cs.counters, start=cs.start, interval=cs.interval)
    ot = detect_over_time(cs)
    first = ot.intervals[0]
    assert (first.server, first.start) == (2, 200) and abs(first.end - 211) <= 1
    assert len(ot.intervals) < 20
    assert len(detect_over_time(cs, TimeParams(tail=1.0)).intervals) > 100  # not scaled: a burst is an interval


def test_one_sample_of_one_counter_is_no_interval_unless_beyond_anything_before():
    """A scrape's glitch: one counter jumps at one sample, now on one server, now on another, the
    same size every time: none of these points is an interval (nor flagged). A lone sample stays
    one where three counters leave at once, or where it is beyond anything its series did."""
    from perftriage.analysis.counters.over_time import detect_over_time
    from perftriage.analysis.counters.params import TimeParams

    cs = _fleet_with(4, event=([2], 1, 3, 200, 212, 0.6))
    v = cs.values.copy()
    glitches = [(s, 30 + 37 * i) for i, s in enumerate([0, 3, 5, 0, 6, 3, 7, 1, 5])]
    for s, k in glitches:
        v[s, 4, k] += 2.0
    v[4, 0:3, 300] += 0.8  # three counters at one sample
    v[1, 3, 330] += 5.0  # one counter, once, beyond anything before
    cs = from_cube(v, cs.servers, cs.counters, start=cs.start, interval=cs.interval)
    ot = detect_over_time(cs)
    spans = {(iv.server, iv.start, iv.end) for iv in ot.intervals}
    assert not any(iv.start <= k <= iv.end and iv.server == s for s, k in glitches for iv in ot.intervals)
    assert not any(ot.flagged[s, k] for s, k in glitches)
    assert (4, 300, 300) in spans and (1, 330, 330) in spans
    assert any(iv.server == 2 and iv.start == 200 for iv in ot.intervals)
    # without the rule each glitch is an interval of its own
    old = detect_over_time(cs, TimeParams(lone_point=False))
    assert all(any(iv.server == s and iv.start == k == iv.end for iv in old.intervals) for s, k in glitches)


def test_a_count_that_sits_still_and_moves_once_is_an_interval():
    """A thread count at 50 on every server for days, 80 on srv-1 for ten points: its one move was
    taken for the series' resolution (30) and its usual departure (30), z 0.5, no interval."""
    from perftriage.analysis.counters.over_time import detect_over_time

    v = np.full((6, 3, 400), 50.0)
    v[:, 2] = np.round(np.random.default_rng(1).normal(10, 1, (6, 400)), 1)  # one counter that does vary
    v[1, :2, 200:210] = 80.0
    cs = from_cube(v, [f"srv-{i}" for i in range(6)], ["threads", "pool", "cpu"], start=1.6e9, interval=60)
    ot = detect_over_time(cs)
    hits = [(iv.server, iv.start, iv.end) for iv in ot.intervals]
    assert (1, 200, 209) in hits and all(s == 1 for s, *_ in hits if _[0] <= 205 <= _[1])


def test_a_fleet_of_one_counter_flags_a_server_on_it_alone():
    """CPU only: two counters at once could never be, and a server 8 sigma up for ten points
    (under the 12 that flags one counter alone) went unseen."""
    from perftriage.analysis.counters.over_time import detect_over_time

    rng = np.random.default_rng(2)
    v = rng.normal(50, 2, (6, 1, 400))
    v[3, 0, 100:110] += 16
    cs = from_cube(v, [f"srv-{i}" for i in range(6)], ["cpu"], start=1.6e9, interval=60)
    ot = detect_over_time(cs)
    assert ot.min_counters == 1
    assert any(iv.server == 3 and iv.start <= 102 and iv.end >= 107 for iv in ot.intervals)


@pytest.mark.parametrize("length,found", [(300, True), (40, True), (15, False)])
def test_one_counter_held_at_another_level_for_a_while_is_a_level_change(length, found):
    """Six servers' ten counters of noise (SMD's form: values in [0, 1], rows a minute apart),
    server 3's m8 two whole ranges up for ``length`` points of 3,000 (1% to 10% of the data): no
    interval takes one counter under `strong` (12) alone and no tail scales it, so it was said
    nowhere. One level change of that counter now, from its start to its end, where it held 24
    points or more; a short one (15 points) is not one (a queue's spike of a quarter of an hour)."""
    from perftriage.analysis.counters.over_time import detect_over_time
    from perftriage.analysis.counters.params import TimeParams

    v = np.random.default_rng(1).random((6, 10, 3000))
    v[3, 7, 2000:2000 + length] += 2
    cs = from_cube(v, [f"machine-1-{i + 1}" for i in range(6)], [f"m{j + 1}" for j in range(10)], start=1.6e9,
                   interval=60)
    ca = analyse_counters(cs)
    changes = [(lc.server, lc.start, lc.end, [c for c, *_ in lc.counters]) for lc in ca.over_time.changes]
    if not found:
        assert changes == [] and not counter_findings(ca), changes
        return
    ((s, a, b, cols),) = changes
    assert s == 3 and cols == [7] and abs(a - 2000) <= 3 and abs(b - (2000 + length - 1)) <= 3, changes
    first = counter_findings(ca)[0]
    assert first.subject == "machine-1-4" and first.title.startswith("machine-1-4: m8 at another level from ")
    assert not detect_over_time(cs, TimeParams(short_stretch=0)).changes  # as it was: said nowhere


@pytest.mark.parametrize("days,frac", [(4, 0.3), (2, 0.6), (4, 0.15)])
def test_an_incident_still_running_at_the_end_is_one_level_change(days, frac):
    """srv-5's two counters up for the last part of the data, the triage case (it is still going
    on): beyond z at more than a tenth of the points, the tail's scaling cut it into pieces (a
    third of the data) or hid it (60% of two days: its median is the new level, PAD's view under
    its threshold: no finding at all). Now one finding, from its start to the end of the data."""
    T = days * 96
    a = int(T * (1 - frac))
    cs = _fleet_with(days, event=([5], 1, 3, a, T, 0.6))
    ca = analyse_counters(cs)
    changes = ca.over_time.changes
    assert len(changes) == 1 and changes[0].server == 5 and changes[0].end == T - 1
    assert abs(changes[0].start - a) <= 3 and {c for c, *_ in changes[0].counters} == {1, 2}
    f = [x for x in counter_findings(ca) if "at another level" in x.title]
    assert len(f) == 1 and f[0].subject == "srv-5" and "to the end of the data" in f[0].title
    assert not any(x.subject == "srv-5" and "unusual from" in x.title and "c1" in x.title for x in counter_findings(ca))


@pytest.mark.parametrize("frac", [0.2, 0.4, 0.45, 0.5, 0.55])
def test_a_server_away_from_its_peers_for_much_of_an_hour_is_one_level_change_from_its_start(frac):
    """One node of twelve at twice the others' CPU for the last part of an hour (30 s points, no
    days: peers only). Its difference to them spreads twice as wide as the others' over the hour,
    so against that spread it was robust z 3 at 45%: nothing was said, and at 40% only 9 minutes
    of its 24. Measured in how far the peers lie from one another, one level change, from its
    start to the end of the data; the other nodes, none."""
    rng = np.random.default_rng(1)
    v = np.stack([0.4 + 0.1 * rng.random((12, 120)), 0.6 + 0.05 * rng.random((12, 120))], axis=1)
    a = int(round(120 * (1 - frac)))
    v[3, 0, a:] += 0.4
    cs = from_cube(v, [f"node-{i:02d}" for i in range(12)], ["cpu", "mem"], start=1.767e9, interval=30)
    changes = analyse_counters(cs).over_time.changes
    assert len(changes) == 1 and changes[0].server == 3 and changes[0].end == 119, changes
    assert abs(changes[0].start - a) <= 1 and [c for c, *_ in changes[0].counters] == [0]


@pytest.mark.parametrize("days,a,b,side", [(4, 0, 115, "after"), (4, 150, 260, "before and after"),
                                           (4, 268, 384, "before")])
def test_a_level_change_says_where_the_other_level_was(days, a, b, side):
    """From the start of the data, a long departure in the middle, to the end: the level
    elsewhere is said as the level after, before and after, before (the Counters pane uses the
    same words: it said 'elsewhere' for the first two)."""
    cs = _fleet_with(days, event=([5], 1, 3, a, b, 0.6))
    ca = analyse_counters(cs)
    (lc,) = ca.over_time.changes
    assert lc.server == 5 and abs(lc.start - a) <= 3 and abs(lc.end - (b - 1)) <= 3
    assert lc.other_side(cs.n_points) == side
    (f,) = [x for x in counter_findings(ca) if "at another level" in x.title]
    assert any(" there, " in e and f" {side}; its peers " in e for e in f.evidence), f.evidence


def test_bursts_and_a_fleet_wide_change_are_no_server_level_change():
    """A latency that jumps at 15% of the points, here and there, is no level change; a counter
    at another level on every server at once is the fleet's: one finding, not eight."""
    from perftriage.analysis.counters.over_time import detect_over_time

    cs = _fleet_with(6)
    v = cs.values.copy()
    rng = np.random.default_rng(3)
    shape = (v.shape[0], v.shape[2])
    v[:, 4] = np.where(rng.random(shape) < 0.15, rng.uniform(0.05, 0.5, shape), 0.003 + rng.normal(0, 1e-4, shape))
    v[:, 0, 460:] += 0.6 + 0.05 * np.arange(8)[:, None]  # every server, each by about as much
    v[2, 2, 440:] += 0.6  # and srv-2's own, which sharing the fleet's does not hide
    cs = from_cube(v, cs.servers, cs.counters, start=cs.start, interval=cs.interval)
    ot = detect_over_time(cs)
    assert not any(c == 4 for lc in ot.changes for c, *_ in lc.counters)
    ca = analyse_counters(cs)
    f = [x for x in counter_findings(ca) if "at another level" in x.title]
    assert len(f) == 2
    assert [x.severity for x in f if x.title.startswith("c0 at another level on 8 of 8 servers")] == ["info"]
    assert [x.severity for x in f if x.title.startswith("srv-2: c2 at another level since")] == ["warning"]


def test_less_than_three_days_is_judged_against_peers_only():
    from perftriage.analysis.counters.over_time import detect_over_time

    cs = _fleet_with(2, event=(slice(None), 0, 3, 100, 120, 0.8))
    ot = detect_over_time(cs)
    assert not ot.seasonal and any("against its peers only" in n for n in ot.notes)
    assert not ot.intervals  # everyone moved together: no peer left behind, and no history to judge by


def test_a_weak_fit_gives_no_date_in_the_title():
    cs = _fleet_with(4, event=([5], 0, 4, 0, 384, 0.9))  # apart from the start: no change point to fit
    ca = analyse_counters(cs)
    sd = next(sd for sd in ca.servers if cs.servers[sd.server] == "srv-5")
    f = next(x for x in counter_findings(ca) if x.subject == "srv-5" and "deviates" in x.title)
    if sd.onset is not None and sd.onset.gain < ca.params.min_gain:
        assert " since " not in f.title and any("no reliable date" in e for e in f.evidence)
    else:
        assert sd.onset is None or " since " in f.title


def test_large_csv_columnar_reader_equals_the_numpy_one(tmp_path, monkeypatch):
    """Gaps written as numpy and Python write them ('nan', here in a column's first rows, where a
    reader that infers types takes the column for text) are read by the columnar reader too."""
    import perftriage.analysis.counters.readers as readers

    rng = np.random.default_rng(5)
    lines = ["timestamp,server," + ",".join(f"c{i}" for i in range(6))]
    for k in range(300):
        for s in range(5):
            cells = [f"{v:.3f}" for v in rng.normal(10, 2, 6)]
            if k < 40:
                cells[2] = "nan" if s else "NaN"
            lines.append(f"{1_700_000_000 + 60 * k},srv-{s}," + ",".join(cells))
    p = tmp_path / "long.csv"
    p.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(readers, "POLARS_FROM_BYTES", 0)
    calls = []
    real = readers._read_polars
    monkeypatch.setattr(readers, "_read_polars", lambda *a: calls.append(1) or real(*a))
    a = readers.load_counters([p])
    assert calls and real(p, lines[0].split(","), 0, 1, list(range(2, 8))) is not None  # polars read it
    monkeypatch.setattr(readers, "POLARS_FROM_BYTES", 1 << 62)
    b = readers.load_counters([p])
    assert a.servers == b.servers and a.counters == b.counters and (a.start, a.interval) == (b.start, b.interval)
    assert np.array_equal(a.values, b.values, equal_nan=True)


@pytest.mark.parametrize("gz", [False, True])
def test_large_long_csv_columnar_reader_equals_the_csv_one(tmp_path, monkeypatch, gz):
    """A long CSV (time, server, counter, value; gaps empty or 'nan', names padded, rows in any
    order) through polars gives the cube the csv module's path gives; ISO times are left to it."""
    import gzip

    import perftriage.analysis.counters.readers as readers

    rng = np.random.default_rng(9)
    lines = ["timestamp,instance,metric,value"]
    for k in rng.permutation(200):
        for s in range(4):
            for c in ("cpu", 'mem{kind="rss"}', "io"):
                v = "" if rng.random() < 0.02 else "nan" if rng.random() < 0.02 else f"{rng.normal(10, 2):.3f}"
                name = '"' + c.replace('"', '""') + '"'  # quoted as CSV quotes: mem{kind="rss"}
                lines.append(f"{1_700_000_000_000 + 60_000 * int(k)}, srv-{s} ,{name},{v}")
    text = "\n".join(lines) + "\n"
    p = tmp_path / ("long.csv.gz" if gz else "long.csv")
    p.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    calls = []
    real = readers._read_long_fast
    monkeypatch.setattr(readers, "_read_long_fast", lambda *a: calls.append(real(*a)) or calls[-1])
    monkeypatch.setattr(readers, "POLARS_FROM_BYTES", 0)
    a = readers.load_counters([p])
    assert calls and calls[0] is not None  # polars read it
    monkeypatch.setattr(readers, "POLARS_FROM_BYTES", 1 << 62)
    b = readers.load_counters([p])
    assert a.servers == b.servers == ["srv-0", "srv-1", "srv-2", "srv-3"]
    assert a.counters == b.counters == ["cpu", "io", 'mem{kind="rss"}']
    assert (a.start, a.interval, a.n_points) == (b.start, b.interval, b.n_points) == (1_700_000_000.0, 60.0, 200)
    assert np.array_equal(a.values, b.values, equal_nan=True) and np.isnan(a.values).any()
    iso = tmp_path / "iso.csv"
    iso.write_text("time,host,name,value\n" + "".join(f"2024-01-01T00:{m:02d}:00Z,h{s},cpu,{m + s}\n"
                                                      for m in range(30) for s in range(3)))
    monkeypatch.setattr(readers, "POLARS_FROM_BYTES", 0)
    calls.clear()
    assert readers.load_counters([iso]).n_points == 30 and calls == [None]  # the careful path read it


def test_the_other_servers_median_skips_missing_samples_as_the_definition_does():
    """Each server's others' median from one sort, with samples missing here and there (and a
    position missing everywhere): equal to the median of the rest with NaN skipped."""
    from perftriage.analysis.counters.over_time import others_median

    rng = np.random.default_rng(3)
    for S in (2, 3, 4, 5, 8, 13):
        for share in (0.0, 0.1, 0.5, 0.9):
            v = rng.normal(size=(S, 3, 40))
            v[rng.random(v.shape) < share] = np.nan
            if share:
                v[:, 0, 0] = np.nan
            v[:, 1, :3] = 0.5  # ties
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = np.stack([np.nanmedian(np.delete(v, s, axis=0), axis=0) for s in range(S)])
            assert np.allclose(others_median(v), want, equal_nan=True), (S, share)


@pytest.mark.parametrize("layout", ["wide", "long"])
def test_a_row_without_a_time_is_left_out_with_a_note_by_both_csv_paths(tmp_path, monkeypatch, layout):
    """An empty time cell (a truncated export, a hand-edited file): its row is left out and said,
    by the csv module's path (small files) as by polars' (large ones); the rest is read alike."""
    import perftriage.analysis.counters.readers as readers

    rng = np.random.default_rng(11)
    if layout == "wide":
        lines = ["time,server,cpu,mem"] + [f"{'' if (k, s) == (7, 1) else 1_700_000_000 + 60 * k},srv-{s},"
                                           f"{rng.normal(10, 2):.3f},{rng.normal(50, 5):.3f}"
                                           for k in range(60) for s in range(3)]
    else:
        lines = ["time,server,counter,value"] + [f"{'' if (k, s, c) == (7, 1, 'mem') else 1_700_000_000 + 60 * k},"
                                                 f"srv-{s},{c},{rng.normal(10, 2):.3f}"
                                                 for k in range(60) for s in range(3) for c in ("cpu", "mem")]
    p = tmp_path / f"{layout}.csv"
    p.write_text("\n".join(lines) + "\n")
    got = []
    for size in (1 << 62, 0):  # the csv module's path, then polars'
        monkeypatch.setattr(readers, "POLARS_FROM_BYTES", size)
        got.append(readers.load_counters([p]))
    for t in got:
        assert any("1 sample with a time that is not a finite number" in n for n in t.notes), t.notes
        assert t.n_points == 60 and t.servers == ["srv-0", "srv-1", "srv-2"]
        assert np.isnan(t.values[1, :, 7]).sum() == (2 if layout == "wide" else 1)  # that row's samples only
        assert np.isfinite(t.values).sum() == t.values.size - (2 if layout == "wide" else 1)
    assert np.array_equal(got[0].values, got[1].values, equal_nan=True)
    blank = tmp_path / "blank.csv"
    blank.write_text("\n".join(lines[:1] + [",".join([""] + line.split(",")[1:]) for line in lines[1:]]) + "\n")
    for size in (1 << 62, 0):
        monkeypatch.setattr(readers, "POLARS_FROM_BYTES", size)
        with pytest.raises(InputError, match="blank.csv: the time column holds no time"):
            readers.load_counters([blank])


def _short(servers: int, per_server_counters: bool = False, spike: bool = True, seed: int = 1):
    """A day and a half at one point a minute: a daily swing (amplitude 10, noise 1) and, with
    ``spike``, 10 minutes 30 above on every counter of the first server."""
    rng = np.random.default_rng(seed)
    T = 2160
    t = np.arange(T)
    v = 50 + 10 * np.sin(2 * np.pi * t / 1440) + rng.normal(0, 1, (servers, 3, T))
    if spike:
        v[0, :, 1000:1010] += 30
    if not per_server_counters:
        return from_cube(v, [f"h{i}" for i in range(servers)], ["x", "y", "z"], start=1.6e9, interval=60)
    w = np.full((servers, 3 * servers, T), np.nan)  # each host its own counters (h0.x, ...): no peers
    for s in range(servers):
        w[s, 3 * s:3 * s + 3] = v[s]
    return from_cube(w, [f"h{i}" for i in range(servers)], [f"h{s}.{c}" for s in range(servers) for c in "xyz"],
                     start=1.6e9, interval=60)


@pytest.mark.parametrize("servers,own", [(1, False), (2, False), (4, True)])
def test_series_without_peers_or_days_are_judged_against_the_hour_before(servers, own):
    """Fewer than three days and nothing to compare with at the same time (one or two servers, or
    counters only one server has): each point against the level of the hour before it. The
    spike is an interval, said so; the daily swing alone is none."""
    from perftriage.analysis.counters.over_time import detect_over_time

    ot = detect_over_time(_short(servers, own))
    assert [(iv.server, iv.start, iv.end) for iv in ot.intervals] == [(0, 1000, 1009)]
    assert any("against their level in the hour before" in n for n in ot.notes)
    cs = _short(servers, own)
    f = next(x for x in counter_findings(analyse_counters(cs)) if "unusual from" in x.title)
    assert "(against its level in the hour before; robust z" in f.evidence[1]
    assert detect_over_time(_short(servers, own, spike=False)).intervals == []


@pytest.mark.parametrize("servers,seed,rise,start,length", [(1, 0, 40, 840, 120), (1, 0, 40, 840, 30), (2, 1, 40, 840, 30),
                                                             (1, 2, -40, 300, 120), (1, 1, 60, 600, 240)])
def test_a_step_without_peers_is_judged_against_the_level_before_it_to_its_end(servers, seed, rise, start, length):
    """A day of one-minute points of one host (or two: no peers), its counters swinging with the
    day; one counter 40 higher (13 noise sds) for half an hour to four hours. Against the hour
    before, the step was unusual for its first hour only, and its return, the hour after it ended,
    was said instead where the day's swing made it the sharper move (half an hour at +14:00 said
    as '+15:00 to +15:59'). Against the last usual hour's level: one level change, the step's."""
    rng = np.random.default_rng(seed)
    t = np.arange(1440)
    v = 50 + 20 * np.sin(2 * np.pi * t / 1440 + seed) + rng.normal(0, 3, (servers, 10, 1440))
    v[0, 3, start:start + length] += rise
    cs = from_cube(v, [f"h{i}" for i in range(servers)], [f"c{j}" for j in range(10)], start=1.7e9, interval=60)
    ot = analyse_counters(cs).over_time
    said = [(lc.server, lc.start, lc.end, [c for c, *_ in lc.counters]) for lc in ot.changes]
    said += [(iv.server, iv.start, iv.end, [c for c, *_ in iv.counters]) for iv in ot.intervals]
    assert len(said) == 1 and said[0][0] == 0 and said[0][3] == [3], said
    assert abs(said[0][1] - start) <= 3 and abs(said[0][2] - (start + length - 1)) <= 3, said


def _incident_window(step: bool, seed: int = 5, blip: bool = False):
    """15 minutes at one point a second of one host's table of ten services' metrics (RCAEval's
    form: SERVICE_METRIC columns), 8% noise; with ``step``, emailservice's CPU 0.9 higher and its
    latencies three times as long from +10:00."""
    rng = np.random.default_rng(seed)
    svcs = ["ad", "cart", "checkout", "currency", "email", "frontend", "payment", "catalog", "reco", "shipping"]
    mets = ["cpu", "mem", "latency-50", "latency-90", "diskio"]
    base = rng.uniform(0.05, 1.0, (len(svcs), len(mets))) * np.array([0.3, 3e8, 0.05, 0.1, 1e4])
    v = base[..., None] * (1 + 0.08 * rng.standard_normal((len(svcs), len(mets), 900)))
    if step:
        v[4, 0, 600:] += 0.9
        v[4, 2:4, 600:] *= 3
    if blip:  # one second of it, and of its latencies, alone
        v[4, 0, 300] += 0.9
        v[4, 2:4, 300] *= 3
    return from_cube(v.reshape(1, -1, 900), ["data"], [f"{s}service_{m}" for s in svcs for m in mets],
                     start=1_692_569_000, interval=1)


def test_one_hosts_incident_window_of_minutes_is_judged_against_its_quarter_before():
    """Under four hours of data (an incident's window) and no peers: each point against the level
    of the quarter of the data before it, where four hours were needed and nothing was found, a
    series counting where it stays beyond z for 3 points (a second's blip is none); the host's own
    noise is no 'fleet median' (one server's median is its value)."""
    cs = _incident_window(step=True)
    findings = counter_findings(analyse_counters(cs))
    assert findings[0].title.startswith("data: emailservice_cpu, ") and "(+10:00)" in findings[0].title, \
        [f.title for f in findings]
    assert {"emailservice_latency-50", "emailservice_latency-90"} <= set(re.findall(r"[\w-]+service_[\w-]+",
                                                                                    findings[0].title))
    assert not any("fleet's median" in f.title for f in findings), [f.title for f in findings]
    quiet = counter_findings(analyse_counters(_incident_window(step=False)))
    assert quiet == [], [f.title for f in quiet]
    # a second of it alone is no incident of a quarter of an hour (it stays beyond z for 3 points to count)
    blip = counter_findings(analyse_counters(_incident_window(step=False, blip=True)))
    assert blip == [], [f.title for f in blip]
    from perftriage.analysis.counters.over_time import detect_over_time

    assert any("against their level in the 3.8 min before" in n for n in detect_over_time(cs).notes)


def test_a_tiny_move_of_a_still_counter_is_no_incident():
    """A node's memory at 11.3% for the first minutes, 11.44% after, on a server whose difference
    to its peers otherwise sits still to the thousandth: robust z in the hundreds, a move of 1%
    of its level. Under half a percent of the usual level is never a deviation; a 2-point jump is."""
    from perftriage.analysis.counters.over_time import detect_over_time

    rng = np.random.default_rng(5)
    T = 1440
    v = 11.44 + 0.2 * np.linspace(0, 1, T)[None, None, :] + rng.normal(0, 0.001, (4, 2, T))
    v[0, :, :8] -= 0.14
    v[1, :, 700:710] += 2.0
    cs = from_cube(np.round(v, 4), ["n0", "n1", "n2", "n3"], ["mem", "mem2"], start=1.6e9, interval=60)
    found = [(cs.servers[iv.server], iv.start, iv.end) for iv in detect_over_time(cs).intervals]
    assert found == [("n1", 700, 709)], found
    from perftriage.analysis.counters.params import TimeParams

    off = [(cs.servers[iv.server], iv.start) for iv in detect_over_time(cs, TimeParams(relative_floor=0)).intervals]
    assert ("n0", 0) in off  # without the floor, the first minutes are an incident


def test_a_server_of_its_own_kind_that_did_not_move_is_not_the_others_incident():
    """Five servers of five kinds (levels 10 to 5,000: no peers), judged against the others'
    movement at the same time. The other four move together for ten minutes: the still one is
    not flagged for it (its difference to them moved, not it); one that moves alone is."""
    from perftriage.analysis.counters.over_time import detect_over_time
    from perftriage.analysis.counters.peers import find_peers

    rng = np.random.default_rng(7)
    T, levels = 1440, np.array([10.0, 50.0, 200.0, 1000.0, 5000.0])
    v = levels[:, None, None] * (1 + rng.normal(0, 0.002, (5, 3, T)))
    v[1:, :, 300:310] *= 1.5  # the other four together
    v[2, :, 900:910] *= 1.5  # one alone
    names = ["db", "cache", "web", "queue", "store"]
    cs = from_cube(v, names, ["a", "b", "c"], start=1.6e9, interval=60)
    peers = find_peers(cs.servers, cs.values, cs.counters)
    assert not peers.compared.any()
    ot = detect_over_time(cs, peers=peers)
    assert not [iv for iv in ot.intervals if iv.server == 0], [(iv.server, iv.start) for iv in ot.intervals]
    assert any(iv.server == 2 and iv.start == 900 for iv in ot.intervals)


SADF = ROOT / "tests" / "data" / "sadf"


def test_sadf_exports_read_as_counters_of_their_hosts():
    """sadf -d's sections (CPU, memory, load, I/O, network interfaces, disks; tests/data/sadf):
    each its header, the hostname the server, an activity's instances as counters of their own
    (%user of all CPUs, rxkB/s[eth0], %util[vda])."""
    from perftriage.analysis.counters.readers import load_counters
    from perftriage.analysis.inputs import sniff_file

    files = sorted(SADF.glob("web-0*.csv.gz"))
    assert [sniff_file(f) for f in files] == ["counters"] * 4
    cs = load_counters(files)
    assert cs.servers == ["web-01", "web-02", "web-03", "web-04"] and cs.values.shape[2] == 40
    for c in ("%user", "%idle", "kbmemused", "ldavg-1", "bwrtn/s", "%util[vda]", "rxkB/s[lo]"):
        assert c in cs.counters, c
    assert not any(c.startswith("%user[") for c in cs.counters)  # sar -u without -P: all CPUs only
    user = cs.values[:, cs.counters.index("%user"), :]
    assert np.nanmedian(user[2]) > 80 > 5 > np.nanmedian(user[[0, 1, 3]])  # the two spinning loops
    assert cs.interval == 1.0


def test_a_fleet_of_sadf_exports_names_its_busy_server_and_no_absurd_z():
    """The four recordings as a fleet: one machine at four times, its memory levels drifted, so
    not peers by default (said) and nothing deviates; compared anyway (--all-peers), the one with
    the spinning loops deviates first. A count of blocked tasks that sat at 0 while the others'
    median went to 0.5 for a second was 'robust z 249999998976.0' against a resolution of 1e-12:
    no z beyond a million is said now."""
    files = [str(f) for f in sorted(SADF.glob("web-0*.csv.gz"))]
    for extra, first in (([], None), (["--all-peers"], "web-03 deviates from the fleet")):
        out = subprocess.run([sys.executable, "-m", "perftriage", "report", *files, *extra, "--format", "json", "-q"],
                             capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert out.returncode == 0, out.stderr
        rep = json.loads(out.stdout)
        if first is None:
            assert any("are not peers" in n for n in rep["notes"])
            assert not any("deviates from the fleet" in f["title"] for f in rep["findings"])
        else:
            assert rep["findings"][0]["title"].startswith(first)
        zs = [float(z) for f in rep["findings"] for e in f["evidence"] for z in re.findall(r"robust z ([\d.e+]+)", e)]
        assert zs and max(zs) < 1e6 if extra else max(zs, default=0) < 1e6, zs


def test_damaged_sadf_exports(tmp_path):
    """A cut export keeps its whole rows (the cut one left out, said); a row of another width is
    left out and said; no header (not known for sadf's then: a CSV without a time column), or no
    rows under it: one line naming the file."""
    import gzip

    from perftriage.analysis.counters.readers import load_counters
    from perftriage.analysis.errors import InputError

    text = gzip.decompress((SADF / "web-01.csv.gz").read_bytes()).decode()
    cut = tmp_path / "web-01.csv"
    cut.write_text(text[: len(text) // 3])
    cs = load_counters([cut])
    assert any("last line is cut" in n for n in cs.notes) and "%user" in cs.counters
    lines = text.split("\n")
    lines[5] = lines[5] + ";7"
    wide = tmp_path / "web-02.csv"
    wide.write_text("\n".join(lines))
    assert any("1 row with another number of fields than their header skipped" in n for n in load_counters([wide]).notes)
    commas = tmp_path / "web-04.csv"  # a German or French locale's decimal commas
    commas.write_text("\n".join(ln if ln.startswith("#") else re.sub(r"(\d)\.(\d\d)\b", r"\1,\2", ln)
                                for ln in text.split("\n")))
    a, b = load_counters([SADF / "web-01.csv.gz"]), load_counters([commas])
    assert a.counters == b.counters and np.array_equal(a.values, b.values, equal_nan=True)
    for body, words in (("\n".join(lines[1:]), "needs a time column"), (lines[0] + "\n", "no rows under a header")):
        bad = tmp_path / "web-03.csv"
        bad.write_text(body)
        with pytest.raises(InputError, match=words) as e:
            load_counters([bad])
        assert "web-03.csv" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.skipif(shutil.which("sadf") is None, reason="sysstat's sadf is not installed (make test installs it)")
def test_a_sar_archive_is_read_through_sadf(tmp_path):
    """A sysstat archive as copied from its host (/var/log/sysstat/saDD; here gzip-compressed):
    exported by sadf into a temporary file (not beside it), its activities read as counters; a
    cut archive keeps its whole records and says what sadf said; a file that only starts like an
    archive is one line naming it."""
    import gzip

    from perftriage.analysis.counters.readers import load_counters
    from perftriage.analysis.errors import InputError
    from perftriage.analysis.inputs import sniff_file

    archive = ROOT / "tests" / "data" / "sar" / "sa-busy.gz"
    assert sniff_file(archive) == "counters"
    cs = load_counters([archive])
    assert cs.servers == ["vm"] and cs.values.shape[2] == 40
    for c in ("%user", "cswch/s", "kbswpfree", "%util[vda]", "runq-sz"):
        assert c in cs.counters, c
    assert np.nanmedian(cs.values[0, cs.counters.index("%user")]) > 80
    raw = gzip.decompress(archive.read_bytes())
    cut = tmp_path / "sa27"
    cut.write_bytes(raw[: len(raw) // 2])
    part = load_counters([cut])
    assert 0 < part.values.shape[2] < 40 and any("End of system activity file unexpected" in n for n in part.notes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sa27"]  # nothing written beside it
    bad = tmp_path / "sa28"
    bad.write_bytes(raw[:2] + b"\0" * 200)
    with pytest.raises(InputError, match="sadf cannot read this sysstat archive") as e:
        load_counters([bad])
    assert "sa28" in str(e.value) and "\n" not in str(e.value)


def test_a_server_of_its_own_kind_within_its_own_spread_did_not_move():
    """As above, the still server noisier (2% of its level, a node's network traffic minute to
    minute) and 3% off its level while the other four move together: within its own spread, so
    not flagged for their move (4% off its usual 34.2k bytes/s was OnlineBoutique's frontend's
    node at the data's first rows, the others' nodes then at 0.2M, not 5M); a move of its own,
    well beyond that spread, is."""
    from perftriage.analysis.counters.over_time import detect_over_time
    from perftriage.analysis.counters.peers import find_peers

    rng = np.random.default_rng(7)
    T, levels = 1440, np.array([10.0, 50.0, 200.0, 1000.0, 5000.0])
    v = levels[:, None, None] * (1 + rng.normal(0, 0.002, (5, 3, T)))
    v[0] = levels[0] * (1 + rng.normal(0, 0.02, (3, T)))
    v[1:, :, 300:310] *= 1.5  # the other four together
    v[0, :, 300:310] = levels[0] * 1.03  # within its own spread
    v[0, :, 900:910] *= 1.5  # its own move
    cs = from_cube(v, ["db", "cache", "web", "queue", "store"], ["a", "b", "c"], start=1.6e9, interval=60)
    peers = find_peers(cs.servers, cs.values, cs.counters)
    assert not peers.compared.any()
    ot = detect_over_time(cs, peers=peers)
    mine = [iv.start for iv in ot.intervals if iv.server == 0]
    assert not [s for s in mine if 290 <= s <= 310], mine
    assert 900 in mine, mine


def test_a_server_of_its_own_kind_keeps_its_own_daily_deviation_where_it_sits_in_its_range():
    """Four days of five kinds: the first has a daily cycle, and on the third day reads its
    peak's level at its trough's hour. Within its own range (not moved, for the others' part),
    but against its day's profile it is far: that, its own, is flagged."""
    from perftriage.analysis.counters.over_time import detect_over_time
    from perftriage.analysis.counters.peers import find_peers

    rng = np.random.default_rng(3)
    T, levels = 4 * 1440, np.array([100.0, 50.0, 200.0, 1000.0, 5000.0])
    v = levels[:, None, None] * (1 + rng.normal(0, 0.002, (5, 2, T)))
    v[0] += 50 * np.sin(2 * np.pi * np.arange(T) / 1440)
    trough = 2 * 1440 + 1080
    v[0, :, trough:trough + 10] = 150 + rng.normal(0, 0.2, (2, 10))
    cs = from_cube(v, ["db", "cache", "web", "queue", "store"], ["a", "b"], start=1.6e9, interval=60)
    peers = find_peers(cs.servers, cs.values, cs.counters)
    assert not peers.compared.any()
    ot = detect_over_time(cs, peers=peers)
    assert ot.seasonal
    assert any(iv.server == 0 and trough - 2 <= iv.start <= trough + 2 for iv in ot.intervals), \
        [(iv.server, iv.start) for iv in ot.intervals]


def test_alibabas_node_table_is_a_fleet_of_nodes_timed_in_milliseconds(tmp_path):
    """Alibaba's 2021 NodeTable (timestamp, nodeid, cpu_utilization, memory_utilization): nodes
    named by a hash, times in ms from the start (0, 30,000, ...) with no date. Read as 30 s apart,
    not 8 hours (a note says so); the hashes say no kind (one fleet, not ten kinds of one); the node
    whose CPU left the others' level for its last third is named."""
    from perftriage.analysis.counters.peers import role

    rng = np.random.default_rng(2)
    lines = ["timestamp,nodeid,cpu_utilization,memory_utilization\n"]
    for i in range(120):
        for k in range(12):
            bad = k == 3 and i >= 80
            lines.append(f"{30_000 * i},{k * 7919 + 13:064x},{0.4 + 0.1 * rng.random() + 0.4 * bad},"
                         f"{0.6 + 0.05 * rng.random() + 0.3 * bad}\n")
    p = tmp_path / "Node_0.csv"
    p.write_text("".join(lines))
    cs = load_counters([p])
    assert cs.interval == 30 and cs.n_points == 120
    assert any("Node_0.csv: times from 0 to 3,570,000 by 30,000, no dates: read as milliseconds since the start" in n
               for n in cs.notes)
    assert role(f"{13:064x}") == "" and role("3f2504e0-4f89-11d3-9a0c-0305e82c3301") == "" and role("web-01") == "web"
    ca = analyse_counters(cs)
    assert ca.peers.whole_fleet
    first = counter_findings(ca)[0]
    assert first.subject == f"{3 * 7919 + 13:064x}", first.title
    # no date: told as times since the start, not as 1970-01-01 00:40:00 UTC
    assert not cs.dated and cs.when(80) == "+40:00" and "1970" not in " ".join([first.title, *first.evidence])
    assert "since +40:00" in first.title, first.title


def _containers_of_three_services(long: bool = False, blank: bool = False) -> str:
    """Alibaba's 2021 MSResource table, shaped: containers named by a hash, their service in msname,
    their node in nodeid; three services at three levels of CPU and memory; one MS_2 container's CPU
    at half again its peers' for the last 40 of 120 points. ``long``: (timestamp, msinstanceid,
    msname, metric, value) rows; ``blank``: one empty memory cell."""
    rng = np.random.default_rng(5)
    level = {"MS_1": (0.2, 0.5), "MS_2": (0.6, 0.3), "MS_3": (0.05, 0.8)}
    lines = ["timestamp,msinstanceid,msname,metric,value\n" if long else
             "timestamp,msname,msinstanceid,nodeid,cpu_utilization,memory_utilization\n"]
    for i in range(120):
        for svc, (cpu, mem) in level.items():
            for r in range(5):
                name, node = f"{hash((svc, r)) & (2**64 - 1):016x}{r:048x}", f"{r * 31 + len(svc):016x}"
                c = cpu + rng.normal(0, 0.01) + 0.3 * (svc == "MS_2" and r == 3 and i >= 80)
                m = "" if blank and i == 7 and r == 1 else f"{mem + rng.normal(0, 0.01):.4f}"
                lines += [f"{30_000 * i},{name},{svc},cpu_utilization,{c:.4f}\n",
                          f"{30_000 * i},{name},{svc},memory_utilization,{m or 'nan'}\n"] if long else \
                    [f"{30_000 * i},{svc},{name},{node},{c:.4f},{m}\n"]
    return "".join(lines)


@pytest.mark.parametrize("form", ["careful", "numpy", "polars", "long", "long polars"])
def test_a_column_naming_each_servers_kind_makes_the_peer_groups(tmp_path, monkeypatch, form):
    """Containers named by a hash say no kind; their service is in a column of its own (Alibaba's
    msname; service, app, job...). The three services sit at three levels: one fleet by name, they
    were no peers and nothing was compared (the MS_2 container that left its peers was not said);
    grouped by that column, each is compared with its own service's containers and that one is
    named first. The node column is no counter, and neither is the kind column."""
    from perftriage.analysis.counters import readers

    if "polars" in form:
        monkeypatch.setattr(readers, "POLARS_FROM_BYTES", 0)
    p = tmp_path / "MSResource_0.csv"
    p.write_text(_containers_of_three_services(long="long" in form, blank=form == "careful"))
    cs = load_counters([p])
    assert cs.counters == ["cpu_utilization", "memory_utilization"] and len(cs.servers) == 15
    assert cs.kind_column == "msname" and sorted(set(cs.kinds)) == ["MS_1", "MS_2", "MS_3"]
    assert not any("not numeric" in n for n in cs.notes), cs.notes
    ca = analyse_counters(cs)
    assert ("servers grouped by their msname column into 3 kinds (MS_1: 5, MS_2: 5, MS_3: 5): each compared with its "
            "own kind only (--all-peers: all with all)") in ca.notes
    bad = next(s for s in cs.servers if s.endswith(f"{3:048x}") and cs.kinds[cs.servers.index(s)] == "MS_2")
    first = counter_findings(ca)[0]
    assert first.subject == bad, first.title
    assert any("its peers 0.6" in e for e in first.evidence), first.evidence
    # without the column (the same table less msname) the hashes make one fleet of no peers
    lines = [ln.split(",") for ln in p.read_text().splitlines()]
    k = lines[0].index("msname")
    p.write_text("".join(",".join(c for j, c in enumerate(ln) if j != k) + "\n" for ln in lines))
    cs = load_counters([p])
    assert cs.kinds is None
    ca = analyse_counters(cs)
    assert any("the 15 servers are not peers" in n for n in ca.notes)
    assert not counter_findings(ca) or counter_findings(ca)[0].subject != bad


def test_a_kind_column_with_one_value_leaves_the_names_to_say_the_kinds(tmp_path):
    """A scrape job that every server shares says nothing: web and database servers grouped by
    name, as without the column. A server given two kinds is of the one most of its rows give, with
    a note."""
    rng = np.random.default_rng(3)
    names = [f"web-{k:02d}" for k in range(1, 7)] + [f"db-{k:02d}" for k in range(1, 5)]
    lines = ["time,host,job,cpu,mem\n"]
    for i in range(100):
        for n in names:
            job = "api" if n == "db-04" and i == 50 else "node"
            lines.append(f"{1_700_000_000 + 60 * i},{n},{job},{rng.normal(30, 3):.2f},"
                         f"{rng.normal(16000 if n[0] == 'd' else 2000, 50):.0f}\n")
    p = tmp_path / "fleet.csv"
    p.write_text("".join(lines))
    cs = load_counters([p])
    assert cs.kind_column == "job" and cs.kinds == ["node"] * 10
    assert ("1 server of two kinds or more in column 'job' (e.g. db-04: node, api): each taken to be of the kind most "
            "of its rows give") in cs.notes
    ca = analyse_counters(cs)
    assert ("servers grouped by name into 2 kinds (db: 4, web: 6): each compared with its own kind only "
            "(--all-peers: all with all)") in ca.notes


def test_a_prometheus_label_naming_each_servers_kind_makes_the_peer_groups(tmp_path):
    """Servers known by their addresses only, scraped by two jobs (web, db): each job's servers
    are a kind, and the job is no part of the counters' names (node_load1, not node_load1{job="db"}
    for some servers and node_load1{job="web"} for others, which no server shared); the database
    whose load is a third above the other databases' is named. A server that two jobs scrape
    (blackbox probes and node): no kind from the job."""
    rng = np.random.default_rng(9)
    result = []
    for job, n, level in (("web", 6, 1.0), ("db", 4, 6.0)):
        for k in range(n):
            bad = job == "db" and k == 2
            for name, scale in (("node_load1", level * (1.35 if bad else 1)), ("node_memory_Active_bytes", 1e9)):
                vals = [[1_700_000_000 + 60 * i, f"{rng.normal(scale, 0.03 * scale):.4f}"] for i in range(100)]
                result.append({"metric": {"__name__": name, "instance": f"10.0.{int(job == 'db')}.{k + 1}:9100",
                                          "job": job}, "values": vals})
    p = tmp_path / "q.json"
    p.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
    cs = load_counters([p])
    assert cs.counters == ["node_load1", "node_memory_Active_bytes"] and cs.kind_column == "job"
    assert [cs.kinds[cs.servers.index(f"10.0.1.{k}:9100")] for k in (1, 2)] == ["db", "db"]
    ca = analyse_counters(cs)
    assert ("servers grouped by their job column into 2 kinds (db: 4, web: 6): each compared with its own kind only "
            "(--all-peers: all with all)") in ca.notes
    first = counter_findings(ca)[0]
    assert first.subject == "10.0.1.3:9100" and "deviates from the db servers" in first.title, first.title
    # one instance probed by a second job: the job names no kind; it stays in the names where it differs
    result.append({"metric": {"__name__": "probe_success", "instance": "10.0.0.1:9100", "job": "blackbox"},
                   "values": [[1_700_000_000 + 60 * i, "1"] for i in range(100)]})
    p.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
    cs = load_counters([p])
    assert cs.kinds is None and 'node_load1{job="db"}' in cs.counters
    # what a running Prometheus gave (prometheus_api: a RawCounters with the kinds) keeps them
    t = np.arange(50.0) * 60 + 1_700_000_000
    raw = RawCounters(["a", "b", "c", "d"], ["load"], [Piece(np.full(50, s, np.int32), t, np.array([0], np.int32),
                                                             np.ones((50, 1))) for s in range(4)],
                      "http://prometheus:9090", [], kinds=["web", "web", "db", ""], kind_column="job")
    cs = load_counters([], servers=[raw])
    assert cs.kinds == ["web", "web", "db", ""] and cs.kind_column == "job"


def _fleet_csv(path, skip=lambda k, i: False, every=lambda k: 1, T: int = 240) -> None:
    """Eight web servers, three counters every minute for ``T`` minutes; ``skip(k, i)``: server
    web-0k sends nothing at minute i; ``every(k)``: it samples every so many minutes."""
    rng = np.random.default_rng(1)
    lines = ["time,host,cpu,mem,rps"]
    for i in range(T):
        for k in range(1, 9):
            if skip(k, i) or i % every(k):
                continue
            lines.append(f"{1767225600 + 60 * i},web-{k:02d},{rng.normal(40, 4):.1f},{rng.normal(2000, 30):.0f},"
                         f"{rng.normal(100, 8):.1f}")
    path.write_text("\n".join(lines) + "\n")


def test_a_server_that_stopped_sending_is_said_and_does_not_cut_the_others_data(tmp_path):
    """web-05 sends nothing for the last hour of four (a crashed host): PAD's common period (to the
    earliest end) cut every server's last hour and nothing was said; now the period is the
    others', web-05's last hour is empty, and it is the first finding. A gap in the middle and a
    late start are said too (the late start as information)."""
    p = tmp_path / "fleet.csv"
    _fleet_csv(p, skip=lambda k, i: k == 5 and i >= 180)
    cs = load_counters([p])
    assert cs.n_points == 240 and len(cs.servers) == 8
    s = cs.servers.index("web-05")
    assert np.isnan(cs.values[s, :, 180:]).all() and not np.isnan(cs.values[s, :, :180]).any()
    assert any(n.startswith("1 server sampled over well less than the others' period (web-05: until 179 min in)")
               for n in cs.notes), cs.notes
    f = counter_findings(analyse_counters(cs))[0]
    assert f.title == ("web-05 stopped sending samples at 2026-01-01 03:00:00 UTC (+3:00:00): none in the last 60 min "
                       "of the data") and f.severity == "warning", f.title
    assert "while all the other servers sent theirs" in f.evidence[0]
    assert f.target["server"] == "web-05" and f.target["from_s"] == cs.seconds(180)
    # a silence in the middle (20 minutes) and a late start (the first half hour) of two others
    _fleet_csv(p, skip=lambda k, i: (k == 5 and 100 <= i < 120) or (k == 7 and i < 30))
    cs = load_counters([p])
    assert cs.n_points == 240  # the late one does not cut the others' first half hour either
    titles = {f.title: f.severity for f in counter_findings(analyse_counters(cs))}
    assert titles["web-05 sent no samples for 20 min, from 2026-01-01 01:40:00 UTC (+1:40:00)"] == "warning"
    assert titles["web-07 began sending samples at 2026-01-01 00:30:00 UTC (+0:30:00), 30 min after the start of "
                  "the data"] == "info"


def test_no_silence_where_a_server_samples_less_often_or_the_whole_fleet_stopped(tmp_path):
    """A server sampled every five minutes among servers sampled every minute misses four points
    in five by design; an hour when the collection stopped for everyone is no server's silence;
    a server with two stray samples in the period is left out, with a note."""
    p = tmp_path / "fleet.csv"
    _fleet_csv(p, every=lambda k: 5 if k == 3 else 1, skip=lambda k, i: 60 <= i < 120 and k != 8)
    ca = analyse_counters(load_counters([p]))
    assert ca.silences == [], ca.silences
    _fleet_csv(p, skip=lambda k, i: k == 4 and i not in (7, 200))
    cs = load_counters([p])
    assert "web-04" not in cs.servers and cs.n_points == 240
    assert "1 server with fewer than 3 samples in the common period left out (web-04)" in cs.notes


def test_a_servers_departure_over_many_counters_is_one_level_change_dated_by_its_strongest():
    """The bundled fleet: silo-07's stuck placement from point 86 (its actor counts back hours
    before its memory) and silo-18's hot partition from point 115, each one level change from its
    incident's start to the end of the data, where one finding per counter's window said silo-07
    three times (from 07:10, 09:20 and 19:05) and silo-18 not at all."""
    cs = load_counters([ROOT / "sample_traces" / "fleet" / "counters.csv"])
    own = [lc for lc in analyse_counters(cs).over_time.changes if lc.own and not lc.shared]
    by = {cs.servers[lc.server]: lc for lc in own}
    assert len(own) == 2 and set(by) == {"silo-07", "silo-18"}, [(cs.servers[lc.server], lc.start) for lc in own]
    assert abs(by["silo-07"].start - 86) <= 2 and abs(by["silo-18"].start - 115) <= 2
    assert all(lc.end == cs.n_points - 1 and len(lc.counters) >= 3 for lc in own)


def _totals_csv(path, seed=1, names=("bytes_recv_total", "net_errors_total")):
    """8 servers' bytes received since boot (uptimes apart by hundreds of GB; web-02 restarts at
    point 100), an error total that moves now and then, a CPU gauge, a constant memory_total and a
    buffer pool leaking on every server; web-05 receives three times as much from point 160 of 240."""
    rng = np.random.default_rng(seed)
    lines = [f"time,host,{names[0]},{names[1]},cpu_usage_idle,mem_total,buffers_in_use"]
    for s in range(8):
        total, err = rng.uniform(1e9, 5e11), int(rng.integers(0, 50))
        for k in range(240):
            rate = 2e6 * (1 + 0.1 * rng.standard_normal()) * (3 if s == 5 and k >= 160 else 1)
            total = rate * 60 if s == 2 and k == 100 else total + rate * 60
            err += int(rng.random() < 0.03)
            lines.append(f"{1767225600 + 60 * k},web-{s:02d},{total:.0f},{err},{rng.uniform(60, 80):.1f},16000000000,"
                         f"{1000 + 5 * k + s}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("names", [("bytes_recv_total", "net_errors_total"), ("net_bytes_recv", "net.err_in")])
def test_totals_that_only_grow_are_compared_by_their_rate(tmp_path, names):
    """Totals since each server's boot compare uptimes: read as the fleet's levels, the 8 servers
    were 'not peers' (bytes received medians 15 GB .. 428 GB) and web-05 receiving three times as
    much was not said. Read as rates per second (named as totals, they rise and fall only at a
    restart), web-05 is found from the point it changed; the gauges stay levels, a leak too (it
    grows as a total does, but is not named one). Telegraf's fields (net_bytes_recv, err_in) are
    named as totals as much as OpenMetrics' _total."""
    cs = load_counters([_totals_csv(tmp_path / "net.csv", names=names)])
    assert cs.counters == [f"rate({names[0]})", f"rate({names[1]})", "cpu_usage_idle", "mem_total",
                           "buffers_in_use"]
    assert any(n.startswith("2 counters named and growing as totals") for n in cs.notes), cs.notes
    r = cs.values[:, 0, :]
    assert np.isnan(r[:, 0]).all() and np.nanmedian(r[:5]) == pytest.approx(2e6, rel=0.05)
    assert r[2, 100] == pytest.approx(2e6, rel=0.5)  # the restart: its value since zero, not a negative rise
    assert np.nanmedian(r[5, 160:]) == pytest.approx(6e6, rel=0.05)
    first = counter_findings(analyse_counters(cs))[0]
    assert first.title.startswith(f"web-05: rate({names[0]}) at another level since 2026-01-01 02:40:00 UTC"), \
        first.title


def test_a_level_that_falls_or_never_moves_is_no_total():
    from perftriage.analysis.counters.cumulative import grows, per_second

    rng = np.random.default_rng(0)
    walk = np.cumsum(rng.normal(0, 1, (4, 100)), axis=1) + 1000  # a queue, memory in use: falls often
    assert not grows(walk, "queue_len") and not grows(walk, "queue_total")
    assert not grows(np.full((4, 100), 16e9), "mem_total")  # never moves: a level, whatever its name
    rare = np.cumsum(rng.random((4, 100)) < 0.03, axis=1).astype(float)  # errors: a rise now and then
    assert grows(rare, "errors_total") and not grows(rare, "errors")
    slipping = np.cumsum(np.abs(rng.normal(5, 1, (4, 100))), axis=1)
    assert grows(slipping, "bytes_total") and not grows(slipping, "bytes")  # (a leak grows so too)
    assert grows(slipping, "net_bytes_recv") and grows(slipping, "diskio.read_bytes{name=sda}")  # Telegraf's totals
    assert not grows(slipping, "buffers_in_use") and not grows(walk, "bytes_recv")  # a level, whatever its name
    slipping[1, 50] = slipping[1, 49] * 0.9  # a small fall: a level slipping back, no restart
    assert not grows(slipping, "bytes_total")
    x = np.array([[10.0, 20.0, np.nan, 50.0, 5.0, 15.0]])
    assert np.allclose(per_second(x, 10.0), [[np.nan, 1.0, np.nan, 1.5, 0.5, 1.0]], equal_nan=True)


def test_rows_of_a_server_id_a_time_and_numbers_without_a_header(tmp_path):
    """Alibaba's cluster-trace-v2018 machine_usage.csv as published: no header, a row per sample
    (machine_id, time_stamp in seconds from the trace's start, 7 counters, mem_gps and mkpi
    empty), each machine about every 10 s; its columns get their names, empty columns none, and
    a busy machine is found. Another width: the counters numbered m1.. after the id and the time;
    a row cut short is skipped, said."""
    rng = np.random.default_rng(4)
    rows = []
    for m in range(1, 9):
        for k in range(240):
            cpu = rng.normal(40, 4) + (45 if m == 4 and k >= 160 else 0)
            rows.append(f"m_{m},{386640 + 10 * k + int(rng.integers(0, 3))},{cpu:.0f},{rng.normal(80, 2):.0f},,,"
                        f"{rng.normal(30, 3):.2f},{rng.normal(30, 3):.2f},{int(rng.integers(1, 6))}")
    rng.shuffle(rows)  # the published file is sorted by machine, then time: any order reads alike
    p = tmp_path / "machine_usage.csv"
    p.write_text("\n".join(rows) + "\n")
    assert classify([str(p)]).files["counters"] == [p]
    cs = load_counters([p])
    assert cs.servers == sorted(cs.servers) and len(cs.servers) == 8 and cs.interval == 10
    assert cs.counters == ["cpu_util_percent", "mem_util_percent", "net_in", "net_out", "disk_io_percent"]
    assert any("read as Alibaba's cluster-trace-v2018 machine_usage (machine_id, time_stamp" in n for n in cs.notes)
    first = counter_findings(analyse_counters(cs))[0]
    assert first.title.startswith("m_4: cpu_util_percent at another level since +"), first.title
    other = tmp_path / "fleet.csv"
    other.write_text("".join(f"web-{s:02d},{1767225600 + 60 * k},{rng.normal(10, 1):.2f},{rng.normal(50, 5):.1f}\n"
                             for k in range(60) for s in range(4)) + "web-01,1767229260,3\n")
    cs = load_counters([other])
    assert cs.servers == ["web-00", "web-01", "web-02", "web-03"] and cs.counters == ["m1", "m2"] and cs.dated
    assert any("1 row with another number of fields than most skipped" in n for n in cs.notes), cs.notes
    assert any("the first column read as the server, the second as the time, the others as counters m1..m2" in n
               for n in cs.notes)


@pytest.mark.parametrize("form", ["series joined by time", "series as rows"])
def test_grafanas_csv_of_a_panel_reads_each_series_as_its_servers(tmp_path, form):
    """A Grafana panel's CSV (Inspect > Data > Download CSV) of a Prometheus query: its series
    named by label sets, as columns beside Time or as rows (Series, Time, Value). Each series is
    its instance's (the file was one server whose counters were the label sets; the columns'
    'instance="10.0.0.1:9100"' took it for thread metrics); a label with one value over the series
    (job) is left off, one that tells them apart within a server (mode) kept; 10.0.0.3's load 3
    higher from a time is the first finding."""
    import csv as _csv
    import datetime as dt

    rng = np.random.default_rng(6)
    hosts = [f"10.0.0.{i}:9100" for i in range(1, 7)]
    series = [(h, m) for h in hosts for m in ("idle", "user")]
    names = [f'node_load1{{instance="{h}", job="node", mode="{m}"}}' for h, m in series]
    t0 = dt.datetime(2026, 11, 1)
    cells = {(s, k): rng.normal(1.0, 0.1) + (3 if series[s] == ("10.0.0.3:9100", "user") and k >= 150 else 0)
             for s in range(len(series)) for k in range(200)}
    p = tmp_path / "node_load1-data-2026-11-01 01_40_00.csv"
    with p.open("w", newline="") as f:
        w = _csv.writer(f, quoting=_csv.QUOTE_ALL)
        when = [(t0 + dt.timedelta(seconds=30 * k)).strftime("%Y-%m-%d %H:%M:%S") for k in range(200)]
        if form == "series as rows":
            w.writerow(["Series", "Time", "Value"])
            w.writerows([names[s], when[k], f"{cells[s, k]:.3f}"] for s in range(len(series)) for k in range(200))
        else:
            w.writerow(["Time", *names])
            w.writerows([when[k], *(f"{cells[s, k]:.3f}" for s in range(len(series)))] for k in range(200))
    assert classify([str(p)]).files.get("counters") == [p]
    cs = load_counters([p])
    assert cs.servers == hosts and sorted(cs.counters) == ['node_load1{mode="idle"}', 'node_load1{mode="user"}']
    assert cs.n_points == 200 and cs.interval == 30
    assert any("series named by label sets (Grafana's CSV of a panel): each one's server from its label 'instance', "
               "6 servers" in n for n in cs.notes), cs.notes
    assert any("its times carry no zone (Grafana writes them in the browser's): read as UTC" in n for n in cs.notes)
    first = counter_findings(analyse_counters(cs))[0]
    assert first.title.startswith('10.0.0.3:9100: node_load1{mode="user"} at another level since 2026-11-01 01:15'), \
        first.title


def test_label_sets_are_parsed_as_written():
    from perftriage.analysis.labelsets import label_set

    assert label_set('up{instance="a:1", job="n"}') == ("up", {"instance": "a:1", "job": "n"})
    assert label_set('{pod="x", q="say \\"hi\\", then, go"}') == ("", {"pod": "x", "q": 'say "hi", then, go'})
    assert label_set("web-01") is None and label_set("cpu{x}") is None and label_set('a{b="c" d="e"}') is None


@pytest.mark.parametrize("gaps, interval", [((14.962, 14.985), 15.0), ((15.002, 15.004), 15.0), ((7.5, 7.5), 7.5),
                                            ((59.99995, 59.99995), 60.0), ((0.25, 0.25), 0.25),
                                            ((14.6, 14.6), 14.6)])
def test_the_interval_leaves_a_collectors_jitter_out(gaps, interval):
    """typeperf's 15 s come as 14.97 s or 15.003 s, the milliseconds of its times drifting: 15 s,
    where the grid was 14.972 s and told so; an interval that is no whole second stays."""
    from perftriage.analysis.counters.table import detect_interval

    t = np.cumsum(np.resize(np.array(gaps), 100))
    raw = RawCounters(["a"], ["x"], [Piece(np.zeros(100, np.int32), t, np.array([0], np.int32), np.ones((100, 1)))])
    assert detect_interval(raw) == interval
