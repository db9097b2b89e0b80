"""One keystroke from a finding to its evidence, and across views, with escape going back like a
browser's history; enter shown in the footer only where it opens something. Pilot on real inputs."""

from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest
from app_fixtures import app_on
from conftest import REAL, ROOT, SHARED, needs_bt2
from textual.widgets import TabbedContent

from perftriage.tui.app import PerftriageApp
from perftriage.tui.panes.calltrees import CallTreesPane
from perftriage.tui.panes.clusters import ClustersPane
from perftriage.tui.panes.counters import CountersPane
from perftriage.tui.panes.findings import FindingsPane
from perftriage.tui.panes.requests import RequestsPane
from perftriage.tui.widgets.row_table import RowTable

SAMPLES = ROOT / "sample_traces"


async def loaded(app, pilot, timeout: float = 120.0) -> None:
    t0 = time.monotonic()
    while app.running or app.result is None:
        assert time.monotonic() - t0 < timeout
        await pilot.pause(0.05)
    await pilot.pause(0.1)


async def from_palette(pilot, text: str) -> None:
    """A command chosen in the palette (^p) as a user types it."""
    await pilot.press("ctrl+p")
    await pilot.pause(0.2)
    await pilot.press(*text)
    await pilot.pause(0.5)
    await pilot.press("enter")
    await pilot.pause(0.3)


def tab(app) -> str:
    return app.query_one("#tabs", TabbedContent).active


async def open_finding(app, pilot, kind: str):
    """Enter on the first finding whose target is ``kind``, from the Findings tab."""
    await pilot.press("6")
    await pilot.pause()
    pane = app.query_one(FindingsPane)
    k = next(i for i, f in enumerate(pane.findings) if f.target.get("kind") == kind)
    table = app.query_one("#findings-table", RowTable)
    table.focus()
    table.cursor = pane.row_of(k)
    await pilot.press("enter")
    await pilot.pause(0.2)
    return pane.findings[k], pane.row_of(k)


async def back_to_findings(app, pilot, row: int) -> None:
    await pilot.press("escape")
    await pilot.pause(0.2)
    assert tab(app) == "findings"
    assert app.query_one("#findings-table", RowTable).cursor == row


def enter_enabled(app, table_id: str) -> bool:
    table = app.query_one(f"#{table_id}", RowTable)
    return table.check_action("select", ()) is True


@needs_bt2
async def test_findings_open_their_cluster_and_request_and_a_request_its_cluster():
    app = app_on([str(SAMPLES / "webserver")])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        # a cluster finding: the requests of that cluster
        f, row = await open_finding(app, pilot, "cluster")
        pane = app.query_one(RequestsPane)
        c = f.target["cluster"]
        assert tab(app) == "requests" and pane.cluster_filter == c
        assert len(pane.index) == int((app.result.cluster_labels == c).sum()) > 0
        await back_to_findings(app, pilot, row)
        assert pane.cluster_filter is None  # back restores what was shown before
        # the slowest-requests finding: its request highlighted, with its path below
        f, row = await open_finding(app, pilot, "request")
        assert tab(app) == "requests"
        i = pane.selected_request()
        assert pane.table.id[i] == f.target["id"] and pane.table.host[i] == f.target["host"]
        assert i == int(np.argmax(pane.table.duration))
        # from that request, c: its cluster highlighted in the Clusters tab
        want = int(app.result.cluster_labels[i])
        await pilot.press("c")
        await pilot.pause(0.2)
        assert tab(app) == "clusters"
        assert app.query_one("#clusters-table", RowTable).cursor == want + 1
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert tab(app) == "requests" and pane.selected_request() == i
        await back_to_findings(app, pilot, row)
        assert not app.history


@needs_bt2
async def test_a_process_finding_of_a_real_kernel_trace_opens_its_process():
    """'wget spent 85% of its 23.6 ms waiting for the network': enter shows wget's row and its path."""
    app = app_on([str(REAL / "tracevizlab-wget-k-20180802-115406")])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        f, row = await open_finding(app, pilot, "request")
        assert f.title.startswith("wget spent") and f.parameters["pid"] == f.target["id"]
        assert tab(app) == "requests"
        pane = app.query_one(RequestsPane)
        i = pane.selected_request()
        assert pane.table.id[i] == f.target["id"] and pane.table.host[i] == f.target["host"]
        assert pane.table.pid[i] == f.parameters["pid"]
        await back_to_findings(app, pilot, row)


async def test_a_call_tree_finding_opens_its_method_and_replica():
    app = app_on([str(SAMPLES / "microservices")])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        f, row = await open_finding(app, pilot, "pair")
        assert tab(app) == "calltrees"
        pane = app.query_one(CallTreesPane)
        pair = pane.diagnosis.ranking[pane.pairs.cursor]
        assert pair.method_name == f.target["method"]
        assert f.target["replica"] is None or pair.replica_name == f.target["replica"]
        assert not enter_enabled(app, "ct-pairs")  # nothing opens there: the footer does not offer enter
        await back_to_findings(app, pilot, row)


TAB_OF = {"cluster": "requests", "clusters": "clusters", "request": "requests", "pair": "calltrees",
          "pod": "calltrees", "threads": "threads", "server": "counters", "rule": "counters", "fleet": "counters",
          "method": "calltrees", "failing": "calltrees"}


@pytest.mark.parametrize("sample,reference", [("fleet", None), ("microservices", "microservices-baseline")])
async def test_every_finding_opens_what_it_is_about(sample, reference):
    """Enter on each kind of finding of a sample (summaries too: the categories, the comparison
    with the reference, the rule violations, the intervals over time) goes where its evidence is;
    escape comes back to it; the footer offers enter only on a finding that opens something."""
    from perftriage.analysis.options import Options

    opts = Options(reference=(str(SAMPLES / reference),)) if reference else None
    app = app_on([str(SAMPLES / sample)], opts)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        await pilot.press("6")
        await pilot.pause()
        findings = app.query_one(FindingsPane).findings
        row_of = app.query_one(FindingsPane).row_of
        table = app.query_one("#findings-table", RowTable)
        assert all(f.target.get("kind") for f in findings), [f.title for f in findings if not f.target]
        tried = set()
        # the shortest interval first among the intervals: its chart is much narrower than the day
        for row in sorted(range(len(findings)), key=lambda i: findings[i].target.get("to_s", 0)
                          - findings[i].target.get("from_s", 0)):
            f = findings[row]
            key = (f.target["kind"], f.target.get("part"), "from_s" in f.target)
            if key in tried:
                continue  # one of each kind of link (a sample has 18 findings: 25 s for all)
            tried.add(key)
            table.focus()
            table.cursor = row_of(row)
            await pilot.pause(0.05)
            assert enter_enabled(app, "findings-table")
            await pilot.press("enter")
            await pilot.pause(0.2)
            kind = f.target["kind"]
            assert tab(app) == (f.target["pane"] if kind == "pane" else TAB_OF[kind]), f.title
            if kind == "pod":  # what changed around a pod: its most anomalous pair
                pane = app.query_one(CallTreesPane)
                assert f.title.startswith("payment changed most (pod payment-3)")
                assert pane.diagnosis.ranking[pane.pairs.cursor].replica_name == "payment-3" and pane.pairs.has_focus
            if kind == "server":
                pane = app.query_one(CountersPane)
                cs = pane.ca.cs
                i = pane.table.cursor
                s_, c_ = pane.items[i]
                assert cs.servers[s_] == f.target["server"] and cs.counters[c_] == f.target["counter"]
                assert not enter_enabled(app, "co-table")  # nothing opens there: no enter in the footer
                if "from_s" in f.target:  # an interval: its row, its time view around it, marked
                    assert pane.row_marks[i][:2] == (f.target["from_s"], f.target["to_s"])
                    assert pane.view_name == "time view"
                    text = screen_text(app)
                    assert "** the interval" in text  # the legend of its marked points
                    axis = next(ln for ln in text.split("\n")
                                if re.search(r"\+\d+:\d\d:\d\d .*\+\d+:\d\d:\d\d", ln))
                    first, last = [sum(int(x) * m for x, m in zip(t[1:].split(":"), (3600, 60, 1)))
                                   for t in axis.split()[::len(axis.split()) - 1]]
                    start, end = f.target["from_s"] - cs.start, f.target["to_s"] - cs.start
                    assert first <= start and end <= last, axis
                    assert last - first < 0.6 * (cs.n_points - 1) * cs.interval, axis
            if kind == "rule":
                pane = app.query_one(CountersPane)
                assert pane.table.cursor == pane.rule_rows[f.target["counter"]]
                assert pane.ca.cs.counters[pane.items[pane.table.cursor][1]] == f.target["counter"]
            if f.target.get("part") == "categories":
                assert app.query_one(CallTreesPane).cats.has_focus
            if f.target.get("part") == "intervals":
                pane = app.query_one(CountersPane)
                assert pane.row_marks[pane.table.cursor] is not None
                # the intervals are rows of the list, after the servers PAD's X names and the level changes
                ot = pane.ca.over_time
                changes = min(15, sum(not lc.shared for lc in ot.changes))
                fleet = len(ot.fleet_changes())  # the fleet's changes, a row each
                said = ot.said_intervals()  # not the pieces of a change
                assert sum(m is not None for m in pane.row_marks) == min(15, len(said)) + changes + fleet > 0
                assert sum(m is not None and m[2] == "the level change" for m in pane.row_marks) == changes + fleet
                title = str(pane.query_one("#co-title").render())
                assert not changes or f"{changes} level change" in title, title
                assert f"{len(said)} unusual interval" in title, title
                # changes and intervals by their score, as the findings rank them (no edges here: no
                # caller placed under its callee)
                cs = pane.ca.cs
                events = {(e.server, cs.start + e.start * cs.interval): e.score
                          for e in [lc for lc in ot.changes if not lc.shared] + ot.intervals}
                scores = [events[(s_, m[0])] for (s_, _), m in zip(pane.items, pane.row_marks)
                          if m is not None and s_ is not None]
                assert scores == sorted(scores, reverse=True)
                # no interval listed that a change listed says: the same server, time and counter
                listed = {(s_, m[0], m[1]) for (s_, _), m in zip(pane.items, pane.row_marks)
                          if m is not None and m[2] == "the interval"}
                for lc in ot.changes:
                    for iv in ot.intervals:
                        if iv.server == lc.server and lc.start <= iv.start and iv.end <= lc.end \
                                and iv.counters[0][0] in {c for c, *_ in lc.counters}:
                            assert (iv.server, cs.seconds(iv.start), cs.seconds(iv.end)) not in listed
            if kind == "fleet":  # a change of the fleet: its row, over time, marked
                pane = app.query_one(CountersPane)
                i = pane.table.cursor
                s_, c_ = pane.items[i]
                assert s_ is None and pane.ca.cs.counters[c_] == f.target["counter"]
                assert pane.row_marks[i] == (f.target["from_s"], f.target["to_s"], "the level change")
                assert pane.view_name == "time view" and "the level change" in screen_text(app)
            await back_to_findings(app, pilot, row_of(row))
        assert (sample != "fleet" or {("server", None, True), ("fleet", None, True)} <= tried) and (sample != "microservices" or
                                                                             ("pod", None, False) in tried)

        # a finding whose evidence is all in its detail (none of the samples' has none: one made
        # so): no enter in the footer, and enter does nothing
        import dataclasses

        pane = app.query_one(FindingsPane)
        changed = list(pane.findings)
        changed[1] = dataclasses.replace(changed[1], target={})
        pane.show_findings(changed, pane.notes)
        await pilot.pause(0.1)
        table.focus()
        table.cursor = row_of(1)
        await pilot.pause(0.1)
        assert not enter_enabled(app, "findings-table")
        assert "enter" not in footer_keys(app) and "enter" not in footer_drawn(app)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert tab(app) == "findings" and not app.history
        table.cursor = row_of(0)
        await pilot.pause(0.1)
        assert enter_enabled(app, "findings-table") and "enter" in footer_keys(app) and "enter" in footer_drawn(app)
        # the run's notes on its inputs: the list's first row, shown whole in the detail, opening nothing
        if pane.notes:
            table.cursor = 0
            await pilot.pause(0.1)
            assert not enter_enabled(app, "findings-table") and "enter" not in footer_drawn(app)
            detail = " ".join(screen_text(app).split())
            assert "Notes on the inputs" in detail and " ".join(pane.notes[0].split()[:6]) in detail


def test_times_since_the_start_read_in_one_format_per_dataset():
    from perftriage.analysis.counters.table import from_cube

    hour = from_cube(np.zeros((1, 1, 13)), ["a"], ["c"], 0, 300)  # 1 h: +h:mm:ss
    assert [hour.time_label(k) for k in (0, 1, 12)] == ["+0:00:00", "+0:05:00", "+1:00:00"]
    short = from_cube(np.zeros((1, 1, 10)), ["a"], ["c"], 0, 60)
    assert [short.time_label(k) for k in (0, 9)] == ["+0:00", "+9:00"]
    days = from_cube(np.zeros((1, 1, 4320)), ["a"], ["c"], 0, 300)  # 15 days
    assert [days.time_label(k) for k in (0, 760, 4319)] == ["+0d 00:00", "+2d 15:20", "+14d 23:55"]
    odd = from_cube(np.zeros((1, 1, 20000)), ["a"], ["c"], 0, 15)  # points between minutes: seconds too
    assert odd.time_label(19999) == "+3d 11:19:45"


@needs_bt2
async def test_enter_on_a_cluster_lists_its_requests_and_escape_comes_back():
    app = app_on([str(SAMPLES / "webserver")])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        await pilot.press("2")
        await pilot.pause()
        table = app.query_one("#clusters-table", RowTable)
        table.focus()
        table.cursor = 2
        await pilot.press("enter")
        await pilot.pause(0.2)
        pane = app.query_one(RequestsPane)
        assert tab(app) == "requests" and pane.cluster_filter == 1
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert tab(app) == "clusters" and table.cursor == 2 and pane.cluster_filter is None
        assert isinstance(app.query_one(ClustersPane), ClustersPane)


def screen_text(app) -> str:
    return "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())


def footer_drawn(app) -> list[str]:
    """The keys the footer shows on screen now (it redraws only when asked to)."""
    from perftriage.tui.widgets.key_footer import KeyFooter

    return [key.key for key in app.query_one(KeyFooter).query("FooterKey")]


def footer_keys(app) -> list[str]:
    """The keys the footer offers now (shown and enabled), but quit."""
    return [k for k, b in app.active_bindings.items()
            if b.binding.show and b.enabled and b.binding.action not in ("quit",)]


# each pane where a sample fills it, and the empty ones once (the webserver has no spans or
# counters); one case each, so that test workers share them out (together: 42 s of one worker)
@pytest.mark.parametrize("sample,numbers", [("webserver", "1"), ("webserver", "2"), ("webserver", "3456"),
                                            ("microservices", "3"), ("fleet", "5")])
async def test_every_key_the_footer_shows_changes_something(sample, numbers):
    """On every tab of three inputs (requests and clusters, call trees, counters), each key the
    footer offers changes the screen; a key offered where it does nothing fails."""
    app = app_on([str(SAMPLES / sample)])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        app_wide: set[str] = set()  # the app's own keys act alike on every tab: tried on the first
        for number in numbers:
            await pilot.press(number)
            await pilot.pause(0.1)
            for key in footer_keys(app):
                if key in app_wide:
                    continue
                if app.active_bindings[key].node is app:
                    app_wide.add(key)
                await pilot.press(number)  # from the tab, as the footer offered it
                await pilot.pause(0.1)
                if key not in footer_keys(app):
                    continue  # an earlier key changed what this tab offers
                app.clear_notifications()  # a toast fading away is no change the key made
                await pilot.pause(0.1)
                before, screens, tab_before = screen_text(app), len(app.screen_stack), tab(app)
                await pilot.press(key)
                await pilot.pause(0.1)
                app.clear_notifications()
                await pilot.pause(0.05)
                changed = (screen_text(app) != before or len(app.screen_stack) != screens
                           or tab(app) != tab_before)
                assert changed, f"{sample}, tab {number}: {key} is in the footer but changes nothing"
                while len(app.screen_stack) > 1:
                    await pilot.press("escape")
                    await pilot.pause(0.1)
                if key == "slash":
                    await pilot.press("escape")
                app.history.clear()


def test_the_help_lists_every_key_of_every_pane():
    from textual.binding import Binding

    from perftriage.tui.screens.help import help_text, key_names, pane_sections
    from perftriage.tui.widgets.row_table import RowTable

    text = help_text()
    sections = {title: binds for title, binds in pane_sections()}
    assert list(sections) == ["Requests", "Clusters", "Call trees", "Threads", "Counters", "Findings"]
    for title, binds in sections.items():
        block = text.split(f"\n{title}\n", 1)[1].split("\n\n", 1)[0]
        for b in binds:
            assert f"  {key_names(b)} " in block, f"{title}: {b.key} ({b.action}) missing from the help"
    for b in [*RowTable.BINDINGS, *PerftriageApp.BINDINGS]:
        b = b if isinstance(b, Binding) else Binding(*b)
        if not b.action.startswith("tab("):
            assert f"  {key_names(b)} " in text, f"{b.key} ({b.action}) missing from the help"
    assert help_text("Threads").startswith("This pane: Threads")


async def test_the_help_opens_on_the_pane_shown_fills_the_terminal_and_scrolls_with_j():
    from textual.containers import VerticalScroll

    app = app_on([str(SAMPLES / "fleet")])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(app, pilot)
        await pilot.press("5", "question_mark")
        await pilot.pause(0.2)
        assert "This pane: Counters" in screen_text(app).split("\n")[3]
        box = app.screen.query_one(VerticalScroll)
        assert box.size.width >= 96 and box.outer_size.height == 30
        await pilot.press("j", "j", "j")
        await pilot.pause(0.1)
        assert box.scroll_y == 3
        await pilot.press("k")
        await pilot.pause(0.1)
        assert box.scroll_y == 2
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert len(app.screen_stack) == 1


async def test_level_changes_take_their_place_among_the_intervals_by_score(tmp_path):
    """srv-5 up for the last 30% of four days (a level change) and srv-1's ten-point spike far
    stronger: the Counters list puts the spike first, as the findings do (a change first
    whatever its score put a pod's memory above the faults of the day on real pod metrics)."""
    from test_counters import _fleet_with

    from perftriage.tui.panes.counters import CountersPane

    cs = _fleet_with(4, event=([5], 1, 3, 268, 384, 0.6))
    v = cs.values.copy()
    v[1, :3, 100:110] += 5.0
    rows = ["time,server,counter,value"] + [f"{int(cs.start + k * cs.interval)},{cs.servers[s_]},{cs.counters[c]},"
                                            f"{v[s_, c, k]:.3f}" for s_ in range(8) for c in range(5) for k in range(384)]
    path = tmp_path / "fleet.csv"
    path.write_text("\n".join(rows) + "\n")
    app = app_on([str(path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(app, pilot)
        pane = app.query_one(CountersPane)
        marked = [(pane.ca.cs.servers[s_], m[2]) for (s_, _), m in zip(pane.items, pane.row_marks) if m is not None]
        assert marked[0] == ("srv-1", "the interval") and ("srv-5", "the level change") in marked[1:3], marked
        # its row says where the other level was in the findings' words: before (to the end of the data)
        k = [i for i, m in enumerate(pane.row_marks) if m is not None and m[2] == "the level change"][0]
        assert " before, peers " in " ".join(map(str, pane.table.source.cells(k))), pane.table.source.cells(k)


def table_lines(app, table_id: str, rows: int = 6) -> list[str]:
    table = app.query_one(f"#{table_id}", RowTable)
    return ["".join(seg.text for seg in table.render_line(y)) for y in range(min(rows, table.row_count + 1))]


async def test_at_80x24_identity_columns_are_never_cut():
    """The id, cluster, host and method of a request, a cluster's name, a call tree's method and
    replica, a server and its counter: whole at 80 columns, free text cut or left out instead."""
    checks = {
        "webserver": [("1", "requests-table", lambda app: [str(x) for x in app.result.requests.host[:1]] + [
                          "POST", "BN 23.2 s (normally none)"]),  # the why with the normal value, whole
                      ("2", "clusters-table", lambda app: ["normal", "cluster 1"])],
        "microservices": [("3", "ct-pairs", lambda app: [app.result.diagnosis.ranking[0].method_name,
                                                         app.result.diagnosis.ranking[0].replica_name])],
        "fleet": [("5", "co-table", lambda app: [app.query_one(CountersPane).ca.cs.servers[
            app.query_one(CountersPane).items[0][0]],
            app.query_one(CountersPane).table.source.cells(0)[3]])],  # its X, a number: whole too
        # real pod metrics: long pod names beside long counter names; the X of the first row whole
        str(SHARED / "real_data" / "onlineboutique-2022-08-22" / "metric"): [
            ("5", "co-table", lambda app: [app.query_one(CountersPane).table.source.cells(0)[3]])],
    }
    for sample, tabs in checks.items():
        app = app_on([str(SAMPLES / sample)])
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(app, pilot)
            for number, table_id, words in tabs:
                await pilot.press(number)
                await pilot.pause(0.1)
                lines = table_lines(app, table_id)
                text = "\n".join(lines)
                assert all(len(line.rstrip()) <= 80 for line in lines)
                for w in words(app):
                    assert w in text, f"{sample}: {w!r} cut in {table_id}:\n{text}"
                header = lines[0].split()
                assert not any(h.endswith("…") for h in header if h in ("id", "cl", "host", "method", "group", "where",
                                                                        "replica", "counter"))


async def test_at_80x24_an_empty_pane_says_whole_what_it_needs_and_requests_point_to_the_spans():
    from textual.widgets import Static

    from perftriage.tui.panes.threads import NO_THREADS, ThreadsPane

    app = app_on([str(SAMPLES / "microservices")])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        await pilot.press("4")
        await pilot.pause(0.2)
        pane = app.query_one(ThreadsPane)
        assert str(pane.query_one("#th-title", Static).render()) == "no thread analysis"
        body = " ".join(screen_text(app).split())  # as drawn, wrapped at 80 columns
        assert " ".join(NO_THREADS.split(": ", 1)[1].split()) + "." in body
        await pilot.press("1")
        await pilot.pause(0.2)
        assert "no requests: no kernel or user-space trace; see Call trees (3)" in screen_text(app)


def test_a_cut_identity_keeps_both_ends_and_a_column_that_says_nothing_gives_its_room():
    """Real call trees at 80 columns: a service's methods share a long prefix and differ at the
    end, a deployment's pods differ in their suffix; cut at the end they all read the same."""
    from perftriage.tui.widgets.row_table import IDENTITY, Column, ListSource, RowTable, elide_middle

    methods = [f"productcatalogservice:hipstershop.ProductCatalogService/{m}"
               for m in ("ListProducts", "GetProduct", "SearchProducts")]
    for w in (12, 19, 31, 40):
        cut = [elide_middle(m, w) for m in methods]
        assert all(len(c) == w and c.startswith("prod") and "…" in c for c in cut)
        assert len(set(cut)) == 3 or w < 19, cut  # still three methods (at 12: "prod…ducts" twice)
    assert elide_middle(methods[0], 31).endswith("/ListProducts")  # from a separator: the whole name
    assert elide_middle("frontend-579b9bff58-t2dbm", 12).endswith("-t2dbm")
    assert elide_middle("short", 5) == "short" and elide_middle("abc", 1) == "…"

    pods = ["productcatalogservice-668d5f85fb-wckp8", "productcatalogservice-668d5f85fb-x7q2n"]
    cols = [Column("#", "right", 2, 4), Column("method", "left", 10, 60, flex=True, priority=IDENTITY),
            Column("replica", "left", 6, 40, priority=IDENTITY), Column("peers", "right", 6, 9),
            Column("ratio", "right", 5, 7), Column("median", "right", 6, 9)]
    rows = [[str(i + 1), m, pods[i % 2], "-", "-", "3.20ms"] for i, m in enumerate(methods)]
    table = RowTable(cols, ListSource(rows))
    narrow = table._compute_widths(80)
    assert narrow[3] == narrow[4] == 0  # peers and ratio are "-" on every row: left out at 80 columns
    lines = [table._format(r, narrow) for r in rows]
    assert all(len(line) <= 80 for line in lines)
    assert len({line.split()[1] for line in lines}) == 3 and len({line.split()[2] for line in lines}) == 2
    wide = table._compute_widths(200)
    assert wide[3] > 0 and wide[4] > 0  # with room they stay (the "-" says there are no peers)
    assert table._format(rows[0], wide).split()[1] == methods[0]


def test_room_to_spare_goes_to_the_flex_column_then_to_the_cells_a_cap_cut():
    """A wide terminal: the flex column (uri) gets its widest cell first, then a column its cap
    cut (a request's why at 28 of 60 characters) gets the rest it needs, then the flex column;
    at 80 columns nothing changes."""
    from perftriage.tui.widgets.row_table import IDENTITY, TEXT, Column, ListSource, RowTable

    why = "BN 15.1 s (normally none), BS 2.09 s (normally none)"
    cols = [Column("id", "right", 2, 8, priority=IDENTITY), Column("why", "left", 12, 28),
            Column("uri", "left", 12, 60, flex=True, keep_end=True, priority=TEXT)]
    rows = [["535", why, "/checkout.php"], ["583", "BN 23 s (normally none)", "/checkout.php"]]
    table = RowTable(cols, ListSource(rows))
    w = table._compute_widths(200)
    assert w[1] == len(why) and w[2] == 200 - 2 - 3 - len(why)  # why whole, the rest to the uri
    w = table._compute_widths(3 + 1 + 28 + 1 + 13 + 10)  # 10 to spare: the uri whole, then why
    assert w[2] == len("/checkout.php") and w[1] == 38
    w = table._compute_widths(3 + 1 + 28 + 1 + 13)  # none to spare: the cap holds
    assert w == [3, 28, 13]


def test_plots_tell_their_series_apart_without_colour(monkeypatch):
    from perftriage.tui.widgets.plots import bars, line_series, scatter

    monkeypatch.setenv("NO_COLOR", "1")
    b = bars(["RU", "BN", "BD"], {"normal": [3, 1, 0], "cluster 1": [1, 5, 2]}, 60, 12).plain
    assert "█" in b and "░" in b and b.rstrip().splitlines()[-1].split() == ["██", "normal", "░░", "cluster", "1"]
    s = scatter({"normal": ([1, 2, 3], [1, 2, 3]), "c1": ([2, 4], [3, 1]), "c2": ([5], [5])}, 60, 12, log=False).plain
    plot_area = "\n".join(s.splitlines()[:-2])
    assert all(m in plot_area for m in "•xo") and s.splitlines()[-1].split()[::2] == ["••", "xx", "oo"]
    line = line_series([1, 2, 3], {"min": [1, 1, 1], "mean": [2, 2, 2], "max": [3, 3, 3]}, 60, 10).plain
    assert all(m * 3 in line for m in "•xo")
    assert "\x1b" not in b + s + line  # no colour codes at all


async def test_the_palette_holds_the_apps_commands_and_a_rerun_analyses_again():
    from perftriage.analysis.triage import Options

    app = PerftriageApp([str(SAMPLES / "webserver")], Options(thread_metrics=False))  # no thread pools: quicker
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for want in ("Go to Clusters", "Next outlier", "Filter requests", "Sort requests", "Export findings",
                     "Re-run: requests are processes", "Re-run: thread metrics every 5 s"):
            assert want in titles
        assert "Cancel the analysis" not in titles  # nothing runs
        # from the palette, as a user types it
        await from_palette(pilot, "requests are processes")
        assert app.running or app.result.units == "processes"
        await loaded(app, pilot)
        assert app.options.units == "processes" and app.result.units == "processes"
        pane = app.query_one(RequestsPane)
        assert "process" in str(pane.query_one("#requests-title").render())
        # go to a pane from the palette
        await from_palette(pilot, "go to findings")
        assert tab(app) == "findings"


async def test_slash_filters_every_list_with_a_match_count():
    app = app_on([str(SAMPLES / "fleet")])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        await pilot.press("5")
        await pilot.pause(0.1)
        pane = app.query_one(CountersPane)
        table = pane.table
        total = len(table.source)
        server = pane.ca.cs.servers[pane.items[0][0]]
        await pilot.press("slash", *server, "enter")
        await pilot.pause(0.2)
        want = sum(1 for i in range(total) if server.lower() in "\t".join(table.base_source.cells(i)).lower())
        assert 0 < len(table.source) == want < total
        assert f"/{server}: {want:,} of {total:,} rows" in table_lines(app, "co-table", 1)[0]
        await pilot.press("j", "j")
        await pilot.pause(0.1)
        s, c = pane.items[pane.row]  # the pane follows the data row under the cursor
        assert pane.ca.cs.servers[s] == server and pane.row == table.source_row(table.cursor)
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert len(table.source) == total and table.source_row(table.cursor) == pane.row  # same row, all shown
        # the findings list too
        await pilot.press("6", "slash", *"fleet", "enter")
        await pilot.pause(0.2)
        ft = app.query_one("#findings-table", RowTable)
        assert 0 < len(ft.source) < len(ft.base_source) and "fleet" in table_lines(app, "findings-table", 1)[0]


async def test_n_follows_the_filter_when_there_is_one_and_the_outliers_otherwise():
    app = app_on([str(SAMPLES / "webserver")])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        pane = app.query_one(RequestsPane)
        table = pane.row_table
        table.focus()
        await pilot.press("g", "n")
        await pilot.pause(0.1)
        notable = np.flatnonzero(pane.notable[pane.index])
        assert table.cursor == notable[notable > 0][0]  # no filter: the next outlier
        await pilot.press("slash", *"cart.php", "enter")
        await pilot.pause(0.2)
        shown = len(pane.index)
        assert 0 < shown < len(pane.table)
        await pilot.press("g", "n", "n")
        await pilot.pause(0.1)
        assert table.cursor == 2  # with a filter: the next matches
        await pilot.press("N", "N", "N")
        await pilot.pause(0.1)
        assert table.cursor == shown - 1  # round from the first to the last, as less does
        # on another list: n / N only with a filter
        await pilot.press("6")
        await pilot.pause(0.1)
        ft = app.query_one("#findings-table", RowTable)
        assert ft.check_action("next_match", (1,)) is False
        await pilot.press("slash", *"cluster", "enter")
        await pilot.pause(0.2)
        await pilot.press("n")
        await pilot.pause(0.1)
        assert ft.cursor == 1 and "cluster" in " ".join(ft.source.cells(1)).lower()


@needs_bt2
async def test_h_opens_the_counters_of_the_requests_host_with_its_time_marked(tmp_path):
    # counters of the web server's host (web-01) and two peers, every second around the sample's
    # 14:00 UTC start
    t0 = 1772460000 - 30
    rng = np.random.default_rng(3)
    lines = ["time,server,cpu,queue"]
    for t in range(t0, t0 + 180):
        for srv in ("web-01", "web-02", "web-03"):
            lines.append(f"{t},{srv},{rng.uniform(10, 20):.2f},{rng.integers(0, 5)}")
    counters = tmp_path / "counters.csv"
    counters.write_text("\n".join(lines) + "\n")
    app = app_on([str(SAMPLES / "webserver"), str(counters)])
    async with app.run_test(size=(100, 36)) as pilot:
        await loaded(app, pilot)
        await pilot.press("1")
        await pilot.pause(0.1)
        pane = app.query_one(RequestsPane)
        pane.query_one(RowTable).focus()
        i = pane.selected_request()
        start_s, end_s = int(pane.table.start[i]) / 1e9, int(pane.table.end[i]) / 1e9
        await pilot.press("h")
        await pilot.pause(0.3)
        assert tab(app) == "counters"
        co = app.query_one(CountersPane)
        s, _ = co.items[co.table.cursor]
        assert co.ca.cs.servers[s] == "web-01"
        # the time view, the request's time marked on web-01's line at the nearest point
        assert co.view_name == "time view"
        # the first point within the request's time, or the nearest to it when it falls between two
        a, b = ((t - co.ca.cs.start) / co.ca.cs.interval for t in (start_s, end_s))
        k = math.ceil(a) if math.ceil(a) <= math.floor(b) else round((a + b) / 2)
        text = screen_text(app)
        assert f"the request at 14:00:{k - 30:02d} UTC ({co.ca.cs.time_label(k)})" in text
        await pilot.press("v")  # the detail: a caret under the request's columns
        await pilot.pause(0.2)
        assert co.view_name == "detail" and "▲ the request at 14:00:" in screen_text(app)
        await pilot.press("escape")  # back where h was pressed
        await pilot.pause(0.2)
        assert tab(app) == "requests"


async def test_plots_grow_with_the_terminal_and_keep_their_legend_in_view():
    rows = {}
    for width, height in ((80, 24), (100, 30), (100, 44)):
        app = app_on([str(SAMPLES / "fleet")])
        async with app.run_test(size=(width, height)) as pilot:
            await loaded(app, pilot)
            await pilot.press("5", "v")  # the time view: the server, the median, q95 and q05
            await pilot.pause(0.3)
            lines = screen_text(app).split("\n")
            rows[height] = sum(1 for ln in lines if "┤" in ln or ln.lstrip().startswith("│"))
            legend = [ln for ln in lines if "median" in ln and "q95" in ln and "q05" in ln]
            assert legend, f"at {width}x{height} the legend is not on the screen"
            # the whole chart is on the screen, its x axis too (the table above gives up rows at 80x24)
            assert rows[height] >= 4 and any("└" in ln for ln in lines)
            # its x axis in the table's 'since' words (time since the start), not point numbers
            axis = [ln for ln in lines if "+0:00" in ln]
            assert axis and re.search(r"\+\d+:\d\d:\d\d", axis[0]), f"at {width}x{height}: no time axis"
            # in one format: a day's axis starts at +0:00:00, not +0:00 beside +6:00:00
            assert all(re.fullmatch(r"\+\d+:\d\d:\d\d", w) for w in axis[0].split()), axis[0]
    assert rows[44] >= rows[30] + 10


def _written(path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


async def counters_pane(app, pilot) -> CountersPane:
    """The Counters pane once the analysis is shown, its first row chosen."""
    await loaded(app, pilot)
    await pilot.press("5")
    await pilot.pause(0.3)
    return app.query_one(CountersPane)


async def test_a_servers_time_view_draws_the_band_of_its_kind(tmp_path):
    """Containers named by a hash, their service in msname, three services at three levels of CPU:
    the time view of the MS_2 container that left its service's level draws the median and band of
    the MS_2 containers (about 0.6), not the fleet's (0.2, between the three services), and its
    legend shows the hash's ends, not 64 characters."""
    rng = np.random.default_rng(4)
    lines = ["timestamp,msname,msinstanceid,cpu_utilization"]
    for i in range(120):
        for svc, cpu in (("MS_1", 0.2), ("MS_2", 0.6), ("MS_3", 0.05)):
            for r in range(5):
                c = cpu + rng.normal(0, 0.01) + 0.3 * (svc == "MS_2" and r == 3 and i >= 80)
                lines.append(f"{30_000 * i},{svc},{svc[-1]}{r:063x},{c:.4f}")
    app = app_on([_written(tmp_path / "MSResource_0.csv", lines)])
    async with app.run_test(size=(80, 24)) as pilot:
        co = await counters_pane(app, pilot)
        s, _ = co.items[co.table.cursor]
        assert co.ca.cs.servers[s] == f"2{3:063x}" and co.view_name == "time view"
        text = screen_text(app)
        shown = re.search(r"•• (\S+)   xx MS_2 servers median", text)
        assert shown, text
        name = shown.group(1)  # the hash's ends, not its 64 characters
        assert len(name) <= 32 and "…" in name and name.startswith("2000") and name.endswith("3"), name
        ticks = [float(m) for m in re.findall(r"^\s*(\d\.\d+)┤", text, re.M)]
        assert ticks and min(ticks) > 0.4, ticks  # the band of MS_2's containers, not the fleet's


async def test_a_server_that_stopped_sending_heads_the_counters_and_its_finding_opens_it(tmp_path):
    """web-05 sent nothing for the last hour: the Counters pane's first row, every counter, with the
    silence marked on its time view; Enter on its finding comes to the same row."""
    rng = np.random.default_rng(1)
    lines = ["time,host,cpu,mem"]
    for i in range(240):
        for k in range(1, 9):
            if not (k == 5 and i >= 180):
                lines.append(f"{1767225600 + 60 * i},web-{k:02d},{rng.normal(40, 4):.1f},{rng.normal(2000, 30):.0f}")
    app = app_on([_written(tmp_path / "fleet.csv", lines)])
    async with app.run_test(size=(80, 24)) as pilot:
        co = await counters_pane(app, pilot)
        assert co.table.cursor == 0 and co.items[0] == (co.ca.cs.servers.index("web-05"), 0)
        text = screen_text(app)
        assert "web-05   (every counter)" in text and "silent to the end (60 points)" in text, text
        assert co.view_name == "time view" and "cpu: the silence at 03:00:00 UTC (+3:00:00)" in text, text
        await pilot.press("6")
        await pilot.pause(0.2)
        await open_finding(app, pilot, "server")
        assert tab(app) == "counters" and co.table.cursor == 0


async def test_a_method_finding_opens_the_call_tree_that_calls_it(tmp_path):
    """One method slower on every replica from a time on (what changed, by the method): enter on
    its finding shows the largest request category whose tree calls it, as a call tree; escape
    comes back."""
    from perftriage.analysis.sim.microservices import MicroConfig, write_microservice_sample

    truth = write_microservice_sample(tmp_path, MicroConfig(requests=3000, seed=22, scenario="method", slowdown=1.5,
                                                            write_log=False))
    method = truth["slow_method"].replace(".", ":", 1)
    app = PerftriageApp([str(tmp_path / "spans.otlp.jsonl")])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        f = app.result.findings[0]
        assert f.target == {"kind": "method", "method": method}, f.title
        await open_finding(app, pilot, "method")
        assert tab(app) == "calltrees"
        pane = app.query_one(CallTreesPane)
        d = pane.diagnosis
        names = d.trees.spans.methods
        calling = [i for i, r in enumerate(d.categories) if method in {names[m] for m in r.category.methods}]
        assert pane.cat_row == calling[0] and pane.view_name == "call tree" and pane.subject == "category"
        assert method in screen_text(app)
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert tab(app) == "findings"


async def test_a_slow_link_finding_opens_a_call_tree_with_the_link_and_the_pane_says_it():
    """A fault's own minutes without a time (OnlineBoutique 04:28-04:29, cartservice's network
    delay): the Call trees pane's header leads with the slow links into cartservice; enter on the
    finding opens a request category whose tree makes the link's most frequent call."""
    trace = SHARED / "real_data" / "onlineboutique-2022-08-22" / "trace"
    app = PerftriageApp([str(trace / f"{m}_trace.csv.gz") for m in ("04_28", "04_29")])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        f = app.result.findings[0]
        assert f.title.startswith("calls into cartservice") and f.target["kind"] == "method"
        assert f.target["method"] == "frontend:hipstershop.CartService/GetCart"  # 842 calls, against 64 from checkout
        await open_finding(app, pilot, "method")
        assert tab(app) == "calltrees"
        pane = app.query_one(CallTreesPane)
        names = pane.diagnosis.trees.spans.methods
        assert f.target["method"] in {names[m] for m in pane.diagnosis.categories[pane.cat_row].category.methods}
        assert "calls into cartservice (cartservice-579f59597d-wc2lz) take" in screen_text(app)
        for _ in range(len(pane.VIEWS)):  # v to the links view: every link, the slow one marked, first
            if pane.view_name == "links":
                break
            await pilot.press("v")
            await pilot.pause(0.1)
        assert pane.view_name == "links"
        text = str(pane.view_body.content)  # the view scrolls: its whole text, not what 80x24 shows
        assert "calling service -> called pod" in text and "frontend -> cartservice-579f59597d-wc2lz" in text
        assert text.index("cartservice") < text.index("productcatalogservice")  # the slow links first


async def test_a_failing_method_opens_a_request_where_its_error_started(tmp_path):
    """Enter on the finding of a method that starts failing: the Call trees pane, the call tree
    of a request where an error started in it, its failed spans marked (in words, for NO_COLOR);
    another category shows its own example again."""
    from perftriage.analysis.sim.microservices import MicroConfig, write_microservice_sample

    truth = write_microservice_sample(tmp_path / "s", MicroConfig(requests=2000, scenario="errors", seed=7,
                                                                  write_log=False))
    service, op = truth["failing_method"].split(".", 1)
    app = app_on([str(tmp_path / "s" / "spans.otlp.jsonl")])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(app, pilot)
        _, row = await open_finding(app, pilot, "failing")
        await pilot.pause(0.3)
        assert tab(app) == "calltrees"
        pane = app.query_one(CallTreesPane)
        text = screen_text(app)
        assert f"a request where an error started in {service}:{op}" in " ".join(text.split()), text
        failed = [ln for ln in text.split("\n") if "✗ " in ln and ":" in ln and "ms" in ln]
        assert any(f"✗ {service}:{op}" in ln for ln in failed), failed
        assert failed[0].lstrip().startswith("✗ frontend:")  # its error propagated to the request's root
        assert "✗: the span failed" in text
        cat = pane.cats.cursor
        pane.cats.focus_row((cat + 1) % len(pane.diagnosis.categories))
        await pilot.pause(0.2)
        assert "error started in" not in screen_text(app) and pane.failing is None
        await back_to_findings(app, pilot, row)


async def test_a_pidstat_recording_opens_at_its_deviating_thread():
    """pidstat's report of a thread pool (tests/data/pidstat): the thread finding opens the
    Threads pane at the worker that writes, among its pool; escape goes back."""
    from perftriage.tui.panes.threads import ThreadsPane

    app = app_on([str(ROOT / "tests" / "data" / "pidstat" / "pidstat-h.txt.gz")])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        f, row = await open_finding(app, pilot, "threads")
        assert f.title.startswith("Thread 11171 (worker-5) in pool worker: kB_wr/s") and f.target["names"] == ["11171"]
        assert tab(app) == "threads"
        pane = app.query_one(ThreadsPane)
        res = pane.current
        assert res.level == "thread" and res.within.get("pool") == "worker" and len(res.names) == 8
        assert res.names[pane.order[pane.table.cursor]] == "11171"
        assert "11171 (worker-5)" in screen_text(app)  # its own name beside its id, in the list
        await back_to_findings(app, pilot, row)


@needs_bt2
async def test_a_perf_recording_opens_at_its_sleeping_requests():
    """A kernel trace recorded by perf (tests/data/perf) with its uprobe markers: the sleeps'
    cluster finding opens the Requests pane on exactly those requests, their paths mostly asleep."""
    from perftriage.analysis.options import Options
    from perftriage.analysis.requests.params import MarkerSpec

    trace = ROOT / "tests" / "data" / "perf" / "threadpool"
    markers = (MarkerSpec("probe_srv:request_begin", "probe_srv:request_end", key="id"),)
    app = app_on([str(trace)], Options(markers=markers))
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        assert len(app.result.requests) == 1000
        await pilot.press("6")
        await pilot.pause()
        findings = app.query_one(FindingsPane).findings
        k = next(i for i, f in enumerate(findings) if f.target.get("kind") == "cluster" and "sleeping" in f.title)
        table = app.query_one("#findings-table", RowTable)
        table.focus()
        table.cursor = app.query_one(FindingsPane).row_of(k)
        await pilot.press("enter")
        await pilot.pause(0.2)
        pane = app.query_one(RequestsPane)
        c = findings[k].target["cluster"]
        assert tab(app) == "requests" and pane.cluster_filter == c
        ids = pane.table.fields["field_id"][pane.index] if "field_id" in pane.table.fields else None
        assert ids is not None and len(ids) >= 45 and all(int(i) % 20 == 10 for i in ids)


@needs_bt2
async def test_a_trace_without_known_markers_reruns_by_the_events_that_look_like_them():
    # the committed perf recording's uprobes: the palette offers to cut requests by them, and
    # the re-run does (1,000 requests between request_begin and request_end, not each thread)
    from perftriage.analysis.triage import Options

    app = PerftriageApp([str(ROOT / "tests" / "data" / "perf" / "threadpool")], Options(thread_metrics=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        assert app.result.units != "markers"
        title = "Re-run: requests between probe_srv:request_begin and probe_srv:request_end"
        assert title in [c.title for c in app.get_system_commands(app.screen)]
        await from_palette(pilot, "between probe_srv")
        await loaded(app, pilot)
        assert app.result.units == "markers" and len(app.result.requests) == 1000
        assert app.options.markers[0].start == "probe_srv:request_begin"
        assert title not in [c.title for c in app.get_system_commands(app.screen)]  # it has its markers now


async def test_a_service_that_ran_error_handlers_opens_where_its_errors_started(tmp_path):
    """Spans with no status (TrainTicket's export): the failing finding of the service whose
    throws ran Spring's error handler opens a request where its error started, the spans that ran
    a handler marked and the legend saying that is what the mark means."""
    from test_failures import _spring_chain

    app = app_on([str(_spring_chain(tmp_path))])
    async with app.run_test(size=(110, 40)) as pilot:
        await loaded(app, pilot)
        _, row = await open_finding(app, pilot, "failing")
        await pilot.pause(0.3)
        assert tab(app) == "calltrees"
        text = " ".join(screen_text(app).split())
        assert "a request where an error started in ts-travel-service:/api/v1/travelservice/routes/{tripId}" in text
        assert "✗ ts-travel-service:/api" in text and "✗ ts-food-service:/api" in text
        assert "✗: the span ran an error handler (the spans carry no status; an error started in the deepest such " \
               "call)" in text, text
        await back_to_findings(app, pilot, row)
