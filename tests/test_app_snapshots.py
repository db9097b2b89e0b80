"""Every pane and every view at 80x24 with NO_COLOR (SVG snapshots): the request list, the four
cluster views, the call trees' three, the threads' comparisons and three views, the counters' six, the findings and the
help. One analysis of the samples together (a web server's kernel trace with its thread metrics,
microservice spans, a fleet's counters) serves them all."""

from __future__ import annotations

import pytest
from conftest import ROOT, needs_bt2

from perftriage.analysis.threads.deviation import ThreadParams
from perftriage.analysis.triage import Options, run_triage
from perftriage.tui.app import PerftriageApp

pytestmark = needs_bt2
SAMPLES = ROOT / "sample_traces"
PATHS = [str(SAMPLES / "webserver"), str(SAMPLES / "microservices"), str(SAMPLES / "fleet")]

# the threads: the list of comparisons of alike abstractions, then the first one's three views
VIEWS = [("requests", "1", 0), ("clusters", "2", 4), ("calltrees", "3", 4), ("threads", "4", 4),
         ("counters", "5", 6), ("findings", "6", 0)]
CASES = [(name, key, view) for name, key, n in VIEWS for view in range(max(n, 1))]


@pytest.fixture(scope="module")
def analysed():
    # 100 bootstrap replicates, not the paper's 1000: what is drawn is the same kind of screen,
    # and the fixture took 22 s of a test worker (14 s of them the bootstrap), once per worker
    result = run_triage(PATHS, Options(thread_metrics=True, threads=ThreadParams(replicates=100)))
    assert result.analysis is not None and result.diagnosis is not None and result.counters is not None
    assert result.threads is not None
    return result


async def settled(pilot) -> None:
    """The analysis shown and the workers that draw views done (a cancelled one is no failure)."""
    app = pilot.app
    while app.running or app.result is None:
        await pilot.pause(0.05)
    while any(w.is_running for w in app.workers):
        await pilot.pause(0.05)
    await pilot.pause(0.3)


def app_on(result) -> PerftriageApp:
    return PerftriageApp(PATHS, result.options, analyse=lambda paths, options=None, progress=None: result)


@pytest.mark.parametrize("pane,key,view", CASES, ids=[f"{p}-{v}" for p, _, v in CASES])
def test_snapshot_at_80x24_without_colour(pane, key, view, analysed, snap_compare, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = app_on(analysed)

    async def run_before(pilot):
        await settled(pilot)
        await pilot.press(key)
        await pilot.pause()
        if pane == "threads" and view:  # into the first comparison, then its views
            await pilot.press("enter")
            await pilot.pause()
        for _ in range(view - (pane == "threads" and view > 0)):
            await pilot.press("v")
            await pilot.pause()
        await settled(pilot)  # views drawn in workers (the map)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_snapshot_of_the_help_at_80x24_without_colour(analysed, snap_compare, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = app_on(analysed)

    async def run_before(pilot):
        await settled(pilot)
        await pilot.press("2", "question_mark")
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


async def test_from_a_request_to_its_threads_and_back(analysed):
    from perftriage.tui.panes.requests import RequestsPane
    from perftriage.tui.panes.threads import ThreadsPane

    app = app_on(analysed)
    async with app.run_test(size=(80, 24)) as pilot:
        while app.running or app.result is None:
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        pane = app.query_one(RequestsPane)
        ts = analysed.thread_series
        row = next(r for r in range(len(pane.index))
                   if ts.threads_of(str(pane.table.tid[pane.index[r]]), str(pane.table.host[pane.index[r]])))
        pane.row_table.cursor = row
        await pilot.pause()
        i = pane.selected_request()
        assert pane.check_action("its_threads", ()) is True
        assert pane.check_action("its_host", ()) is False  # the fleet's counters hold no web-01
        await pilot.press("t")
        await pilot.pause(0.2)
        assert app.query_one("#tabs").active == "threads"
        threads = app.query_one(ThreadsPane)
        res = threads.current
        k = threads.order[threads.table.cursor]
        thread = ts.threads_of(str(pane.table.tid[i]), str(pane.table.host[i]))[0]  # its host's thread of that id
        assert thread in res.members[k]
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert app.query_one("#tabs").active == "requests" and pane.selected_request() == i


async def test_a_thread_finding_opens_its_comparison_and_escape_comes_back(analysed):
    """A finding about a mysqld thread opens the comparison of mysqld's threads (not the list of
    comparisons, nor apache2's processes) with that thread highlighted; escape returns to the
    finding; in the pane, escape then climbs from a comparison to the list."""
    from perftriage.tui.panes.findings import FindingsPane
    from perftriage.tui.panes.threads import Overview, ThreadsPane

    app = app_on(analysed)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        await pilot.press("6")
        await pilot.pause()
        fp = app.query_one(FindingsPane)
        row = next(i for i, f in enumerate(fp.findings) if f.target.get("kind") == "threads"
                   and f.target.get("within", {}).get("pool") == "mysqld")
        f = fp.findings[row]
        table = app.query_one("#findings-table")
        table.focus()
        table.cursor = fp.row_of(row)
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.query_one("#tabs").active == "threads"
        threads = app.query_one(ThreadsPane)
        res = threads.current
        assert res.level == "thread" and res.within == f.target["within"]
        assert res.names[threads.order[threads.table.cursor]] in f.target["names"]
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert app.query_one("#tabs").active == "findings"
        await pilot.press("4")
        await pilot.pause()
        threads.table.focus()
        await pilot.press("escape")  # back in the pane by its tab: escape climbs to the list
        await pilot.pause()
        assert isinstance(threads.current, Overview)
