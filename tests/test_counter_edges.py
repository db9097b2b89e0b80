"""Counters that name a caller and a callee (edge latencies, one file per side that measures them):
their unusual intervals are about the service called, said once for both sides, in plain words."""

from __future__ import annotations

import gzip
import re
from dataclasses import replace

import numpy as np

from perftriage.analysis.counters.edges import find_edges
from perftriage.analysis.counters.findings import analyse_counters, counter_findings, over_time_findings
from perftriage.analysis.counters.table import from_cube

from conftest import SHARED

PODS = ["frontend-6d4b9c7f5-x2k8q", "checkout-7f5c9d8b4-q2w4z", "cart-5b7d9c6f4-m8n2p",
        "payment-9c6d7f5b8-t4v6x"]
EDGES = ["frontend_checkout", "frontend_cart", "checkout_cart", "checkout_payment"]
POD_COUNTERS = ["cpu", "latency"]


def _mesh(days: float, events=(), seed: int = 3, interval: float = 300.0):
    """Four pods (their own counters) and the two views of the four call edges (latencies in
    seconds, rounded to the millisecond as a mesh exports them). ``events``: (edge, side, from,
    to, added seconds); side "caller" (only the callers' view), "callee" or "both"."""
    rng = np.random.default_rng(seed)
    T = int(days * 86400 / interval)
    servers = PODS + ["source_50", "destination_50"]
    counters = POD_COUNTERS + EDGES
    v = np.full((len(servers), len(counters), T), np.nan)
    v[:4, 0] = np.round(20 + rng.normal(0, 2, (4, T)), 1)
    v[:4, 1] = np.round(0.05 + rng.normal(0, 0.004, (4, T)), 3)
    base = 0.005 + np.abs(rng.normal(0, 0.0007, (len(EDGES), T)))
    # the callers' view: the time on the wire too; each side its own sampling noise
    v[4, 2:] = np.round(base + 0.001 + np.abs(rng.normal(0, 0.0007, base.shape)), 3)
    v[5, 2:] = np.round(base + np.abs(rng.normal(0, 0.0007, base.shape)), 3)
    for edge, side, a, b, add in events:
        c = 2 + EDGES.index(edge)
        if side in ("caller", "both"):
            v[4, c, a:b] += add
        if side in ("callee", "both"):
            v[5, c, a:b] += add
    return from_cube(v, servers, counters, start=1.66e9, interval=interval)


def _view_findings(cs):
    return [f for f in counter_findings(analyse_counters(cs)) if "calls into it" in f.title]


def test_edge_counters_their_ends_and_the_sides_of_the_views():
    cs = _mesh(1)
    e = find_edges(cs)
    assert e is not None and [cs.servers[s] for s in e.views] == ["source_50", "destination_50"]
    assert {cs.counters[c]: ends for c, ends in e.ends.items()} == {
        "frontend_checkout": (PODS[0], PODS[1]), "frontend_cart": (PODS[0], PODS[2]),
        "checkout_cart": (PODS[1], PODS[2]), "checkout_payment": (PODS[1], PODS[3])}
    assert e.sides == {4: "caller", 5: "callee"}
    # a callee with two replicas is named by its workload (the edge does not say which pod)
    v = np.asarray(cs.values)
    two = from_cube(np.concatenate([v[:4], v[3:4], v[4:]]), PODS + ["payment-9c6d7f5b8-k2m4n", "source_50",
                                                                     "destination_50"], cs.counters)
    assert {two.counters[c]: ends for c, ends in find_edges(two).ends.items()}["checkout_payment"] == (PODS[1],
                                                                                                      "payment")
    # counters with an underscore that name no two servers are no edges: no views
    plain = from_cube(np.random.default_rng(1).normal(size=(4, 2, 50)), PODS, ["cpu_user", "mem_used"])
    assert find_edges(plain) is None


def test_a_network_delay_into_a_service_names_it_once_and_says_where_the_time_goes():
    """Less than three days: the views are judged against each other, which is what a delay
    between the two sides moves. One finding (not one per view), about the callee."""
    cs = _mesh(1, events=[("checkout_payment", "caller", 200, 206, 0.3)], interval=60)
    found = _view_findings(cs)
    assert len(found) == 1, [f.title for f in found]
    f = found[0]
    assert f.subject == PODS[3] and f.title.startswith(f"{PODS[3]}: calls into it unusual")
    assert f.evidence[0].startswith(f"calls into {PODS[3]} from {PODS[1]} left their usual level "
                                    "(source_50: as the callers measure them; the other side's view is destination_50)")
    assert any(e.startswith("checkout_payment: the callers waited longer while the callee's own measure did not move")
               for e in f.evidence)
    assert any(re.search(r"robust z [\d.]+\); destination_50: 0\.00\d, usually 0\.00\d$", e) for e in f.evidence)
    ot = analyse_counters(cs).over_time
    shown = [iv for iv in ot.intervals if iv.about]
    assert len(shown) == 2 and sum(iv.twin for iv in shown) == 1
    assert cs.servers[next(iv for iv in shown if not iv.twin).server] == "source_50"  # the callers' side kept


def test_a_slow_service_is_named_before_its_callers_that_wait_for_it():
    """Four days (each view against its own history too): payment slow, as both sides measure it,
    and checkout, which calls it, slow as long: the finding is about payment, checkout waiting."""
    cs = _mesh(4, events=[("checkout_payment", "both", 700, 706, 0.4), ("frontend_checkout", "both", 700, 706, 0.45)])
    found = _view_findings(cs)
    assert found and found[0].subject == PODS[3], [f.title for f in found]
    ev = found[0].evidence
    assert f"the calls into {PODS[1]}, which calls it, moved at the same time: they wait for it" in ev[0]
    assert any("checkout_payment" in e.split(": ")[0] and "the callee measures the rise too: the time goes in the "
               "callee" in e for e in ev)
    assert not any(f.subject == PODS[1] for f in found)


def test_without_views_intervals_are_their_servers_own():
    cs = _mesh(1, events=[("checkout_payment", "caller", 200, 206, 0.3)], interval=60)
    keep = [i for i, s in enumerate(cs.servers) if not s.endswith("_50")]
    pods = from_cube(np.asarray(cs.values)[keep][:, :2], [cs.servers[i] for i in keep], cs.counters[:2],
                     start=cs.start, interval=cs.interval)
    ot = analyse_counters(pods).over_time
    assert ot.edges is None and not any(iv.about or iv.twin for iv in ot.intervals)


def test_onlineboutique_edge_files_name_the_delayed_service(tmp_path):
    """The real metric folder (../shared/real_data): the network delay injected into
    currencyservice at 05:27:06 shows only on the calls into it, as its callers measure them."""
    import pytest  # noqa: PLC0415

    folder = SHARED / "real_data" / "onlineboutique-2022-08-22" / "metric"
    if not folder.is_dir():
        pytest.skip("no real OnlineBoutique metrics here")
    from perftriage.analysis.triage import run_triage  # noqa: PLC0415

    ca = run_triage([folder]).counters
    cs, ot = ca.cs, ca.over_time
    t = 1661146026  # 05:27:06 UTC
    near = [iv for iv in ot.intervals if not iv.twin and abs(cs.start + iv.start * cs.interval - t) <= 180]
    assert near and near[0].about.startswith("currencyservice-"), [(cs.servers[i.server], i.about) for i in near]
    every = replace(ot, params=replace(ot.params, max_intervals=len(ot.intervals)))  # not only the first 12
    f = next(f for f in over_time_findings(every, cs)
             if f.subject == near[0].about and f.target.get("from_s") == cs.start + near[0].start * cs.interval)
    assert f.title.startswith(f"{near[0].about}: calls into it unusual")
    assert any("the callee's own measure did not move" in e for e in f.evidence)
    # 06:35:39, productcatalogservice's CPU consumed: recommendationservice, which calls it, rose
    # with it (its own latency ranks higher); productcatalog comes first, recommendation waits
    t = 1661150139
    near = [iv for iv in ot.intervals if not iv.twin and -120 <= cs.start + iv.start * cs.interval - t <= 300]
    who = [iv.about or cs.servers[iv.server] for iv in near]
    assert who[0].startswith("productcatalogservice-"), who
    rec = next(iv for iv in near if cs.servers[iv.server].startswith("recommendationservice-"))
    assert rec.waits_for.startswith("productcatalogservice-")
    with gzip.open(folder / "source_50.csv.gz", "rt") as fh:
        assert "frontend_currencyservice" in fh.readline()


def _write_mesh(folder, cs) -> None:
    """One CSV per server (a time column and its own counters), as a metric exporter writes them."""
    v = np.asarray(cs.values)
    t = cs.start + np.arange(cs.n_points) * cs.interval
    for s, name in enumerate(cs.servers):
        cols = [c for c in range(len(cs.counters)) if np.isfinite(v[s, c]).any()]
        lines = ["timestamp," + ",".join(cs.counters[c] for c in cols)]
        lines += [f"{t[k]:.0f}," + ",".join(f"{v[s, c, k]:g}" for c in cols) for k in range(cs.n_points)]
        (folder / f"{name}.csv").write_text("\n".join(lines) + "\n")


async def test_the_counters_pane_shows_the_service_called_and_plots_the_view(tmp_path):
    from perftriage.analysis.triage import Options  # noqa: PLC0415
    from perftriage.tui.app import PerftriageApp  # noqa: PLC0415
    from perftriage.tui.panes.counters import CountersPane  # noqa: PLC0415

    _write_mesh(tmp_path, _mesh(1, events=[("checkout_payment", "caller", 200, 206, 0.3)], interval=60))
    app = PerftriageApp([str(tmp_path)], Options())
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        pane = app.query_one(CountersPane)
        cs = pane.ca.cs
        rows = [pane.table.source.cells(r) for r in range(len(pane.items))]
        mine = [r for r, cells in enumerate(rows) if cells[1] == PODS[3] and "unusual to" in cells[5]]
        assert len(mine) == 1, rows  # once: the callee side's view of the same calls is not a second row
        assert rows[mine[0]][5].startswith("calls into it (source_50) unusual to")
        assert cs.servers[pane.items[mine[0]][0]] == "source_50"  # its plot: the series that moved
        assert not any(cells[1] in ("source_50", "destination_50") for cells in rows if "unusual to" in cells[5])
        # no spans given: w (what changed in them at the interval) is not offered, even on its row
        from test_app_links import footer_keys  # noqa: PLC0415

        pane.table.focus()
        pane.table.focus_row(0)
        await pilot.pause(0.1)
        assert pane.row_marks[0] is not None and "w" not in footer_keys(app)
        # its time view at once (an interval's row): both sides' measure of the calls, the callers'
        # up, the callee's flat
        assert mine[0] == 0 and pane.row == 0
        await pilot.pause(0.2)
        assert pane.view_name == "time view"
        shot = app.export_screenshot()
        assert "source_50" in shot and "destination_50" in shot


def test_one_call_held_beyond_z_on_a_view_is_an_interval_a_blip_is_not():
    """One edge is one counter of a view: a delay on one call moves nothing else there. Three
    points in a row beyond z (but under the one-counter threshold, strong) flag it; two do not."""
    from perftriage.analysis.counters.params import TimeParams  # noqa: PLC0415

    for points, expect in ((3, True), (2, False)):
        cs = _mesh(1, events=[("checkout_payment", "caller", 300, 300 + points, 0.012)], interval=60)
        ot = analyse_counters(cs).over_time
        hits = [iv for iv in ot.intervals if iv.about and not iv.twin and 295 <= iv.start <= 305]
        assert bool(hits) == expect, (points, [(iv.start, iv.points, iv.peak_z) for iv in ot.intervals])
        if hits:
            assert hits[0].about == PODS[3] and ot.params.z < hits[0].peak_z < ot.params.strong
            assert hits[0].points == points
    # the rule is the views' only: off, the three points are no interval
    from perftriage.analysis.counters.over_time import detect_over_time  # noqa: PLC0415

    cs = _mesh(1, events=[("checkout_payment", "caller", 300, 303, 0.012)], interval=60)
    off = detect_over_time(cs, TimeParams(edge_run=0))
    assert not [iv for iv in off.intervals if 295 <= iv.start <= 305]


def test_calls_into_different_services_are_separate_intervals():
    """A delay on the calls into cart, then one on the calls into payment two points later: two
    intervals, each from its own start (one over the whole view would start with cart's)."""
    cs = _mesh(1, events=[("frontend_cart", "caller", 300, 303, 0.3), ("checkout_payment", "caller", 305, 311, 0.3)],
               interval=60)
    ot = analyse_counters(cs).over_time
    shown = {iv.about: (iv.start, iv.end) for iv in ot.intervals if iv.about and not iv.twin}
    assert shown == {PODS[2]: (300, 302), PODS[3]: (305, 310)}, shown


def test_a_caller_slowed_by_its_callee_comes_after_it_and_says_why():
    """checkout's own latency and CPU rise (its interval ranks high) while payment, which it
    calls, is slow as payment itself measures it: payment's interval comes first, checkout's
    after it with the reason. When only the caller's side measures the calls slower (the time
    goes on the way, or in the caller), checkout is not said to wait."""
    def ranked(side):
        cs = _mesh(4, events=[("checkout_payment", side, 700, 706, 0.05)])
        v = np.array(cs.values, dtype=float)
        v[1, :2, 700:706] += np.array([40.0, 0.4])[:, None]  # checkout: cpu and latency
        cs = from_cube(v, cs.servers, cs.counters, start=cs.start, interval=cs.interval)
        ot = analyse_counters(cs).over_time
        return cs, [iv for iv in ot.intervals if not iv.twin and 695 <= iv.start <= 705], analyse_counters(cs)

    cs, near, ca = ranked("both")
    who = [iv.about or cs.servers[iv.server] for iv in near]
    assert who[:2] == [PODS[3], PODS[1]], who
    assert near[1].waits_for == PODS[3] and near[1].peak_z * near[1].points ** 0.5 > near[0].peak_z * near[0].points ** 0.5
    f = next(f for f in counter_findings(ca) if f.subject == PODS[1])
    pay = next(f for f in counter_findings(ca) if f.subject == PODS[3])
    assert pay.score > f.score  # the report ranks findings by score: the callee first there too
    assert f.evidence[1].startswith(f"it calls {PODS[3]}, and its calls into {PODS[3]} slowed at the same time, as "
                                    f"{PODS[3]} itself measures them")
    cs, near, _ = ranked("caller")
    assert (near[0].about or cs.servers[near[0].server]) == PODS[1] and not near[0].waits_for


async def test_the_counters_pane_lists_the_callee_before_the_caller_waiting_for_it(tmp_path):
    from perftriage.analysis.triage import Options  # noqa: PLC0415
    from perftriage.tui.app import PerftriageApp  # noqa: PLC0415
    from perftriage.tui.panes.counters import CountersPane  # noqa: PLC0415

    cs = _mesh(4, events=[("checkout_payment", "both", 700, 706, 0.05)])
    v = np.array(cs.values, dtype=float)
    v[1, :2, 700:706] += np.array([40.0, 0.4])[:, None]
    _write_mesh(tmp_path, from_cube(v, cs.servers, cs.counters, start=cs.start, interval=cs.interval))
    app = PerftriageApp([str(tmp_path)], Options())
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        pane = app.query_one(CountersPane)
        rows = [pane.table.source.cells(r) for r in range(len(pane.items))]
        ivs = [cells for cells in rows if "unusual to" in cells[5]]
        who = [cells[1] for cells in ivs]
        assert who.index(PODS[3]) < who.index(PODS[1]), who
        assert ivs[who.index(PODS[1])][5].startswith(f"waiting for {PODS[3]}? unusual to")


def test_a_counter_two_views_hold_has_no_fleet_median_over_time():
    """The calls into payment slow on both views: PAD's time view (the fleet's median at each
    point) would call it the fleet's; two servers of six are not the fleet. A counter every pod
    holds still has one."""
    cs = _mesh(4, events=[("checkout_payment", "both", 700, 706, 0.4)])
    v = np.array(cs.values, dtype=float)
    v[:4, 0, 900:930] += 30.0  # every pod's cpu at once
    ca = analyse_counters(from_cube(v, cs.servers, cs.counters, start=cs.start, interval=cs.interval))
    moved = {ca.cs.counters[c] for c, x, n in ca.comparative.counters_by_time(ca.params.time_x) if n >= 3}
    assert "cpu" in moved and not moved & set(EDGES), moved


async def test_w_on_a_counters_interval_compares_the_requests_at_its_start(tmp_path):
    """Spans and counters together: on a counters interval, w compares the requests before and
    after its start (--incident-time) from the spans read, without analysing again, and shows the
    call trees (escape goes back); the footer offers w on interval rows only, and not at all
    without spans."""
    from test_inputs import spans_and_counters  # noqa: PLC0415
    from test_app_links import footer_keys  # noqa: PLC0415

    from perftriage.analysis.triage import Options, run_triage  # noqa: PLC0415
    from perftriage.tui.app import PerftriageApp  # noqa: PLC0415
    from perftriage.tui.panes.counters import CountersPane  # noqa: PLC0415

    spans_and_counters(tmp_path)  # healthy spans from 03:46:40, payment's CPU and memory up at 03:49:10
    app = PerftriageApp([str(tmp_path)], Options())
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.result.change is None  # no time to compare at, at first
        await pilot.press("5")
        await pilot.pause(0.1)
        pane = app.query_one(CountersPane)
        pane.table.focus()
        rows = [r for r, m in enumerate(pane.row_marks) if m is not None]
        others = [r for r, m in enumerate(pane.row_marks) if m is None]
        assert rows and others
        pane.table.focus_row(others[0])
        await pilot.pause(0.1)
        assert "w" not in footer_keys(app)
        pane.table.focus_row(rows[0])
        await pilot.pause(0.1)
        assert "w" in footer_keys(app)
        before, run, process = app.result, app._run, app.process
        await pilot.press("w")
        await app.workers.wait_for_complete()
        await pilot.pause(0.1)
        assert app.options.incident_time == "2022-08-22T03:49:10" and app.query_one("#tabs").active == "calltrees"
        assert app.result.change is not None
        # from the spans read: not analysed again (the same run, the same child, the other parts kept)
        assert (app._run, app.process) == (run, process) and not app.running
        assert app.result.spans is before.spans and app.result.counters is before.counters
        # the findings are the report's with --incident-time at that time
        rep = run_triage([tmp_path], Options(incident_time="2022-08-22T03:49:10"))
        assert [f.title for f in app.result.findings] == [f.title for f in rep.findings]
        assert sorted(app.result.report.notes) == sorted(rep.report.notes)
        assert str(app.query_one("#ct-changed").render()).startswith("what changed (")
        await pilot.press("escape")  # back to the interval it was asked at
        await pilot.pause(0.1)
        assert app.query_one("#tabs").active == "counters" and pane.table.cursor == rows[0]
    # with --reference the spans are compared with the reference, not at a time: no w
    app = PerftriageApp([str(tmp_path)], Options(reference=[str(tmp_path / "trace")]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("5")
        await pilot.pause(0.1)
        pane = app.query_one(CountersPane)
        pane.table.focus()
        pane.table.focus_row(next(r for r, m in enumerate(pane.row_marks) if m is not None))
        await pilot.pause(0.1)
        assert app.result.comparison is not None and "w" not in footer_keys(app)
