"""Every pane and every view at 80x24 with NO_COLOR (SVG snapshots): the request list, the four
cluster views, the call trees' three, the threads' three, the counters' six, the findings and the
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

VIEWS = [("requests", "1", 0), ("clusters", "2", 4), ("calltrees", "3", 3), ("threads", "4", 3),
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
        for _ in range(view):
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
        row = next(r for r in range(len(pane.index)) if str(pane.table.tid[pane.index[r]]) in ts.ids)
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
        thread = ts.ids.index(str(pane.table.tid[i]))
        assert thread in res.members[k]
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert app.query_one("#tabs").active == "requests" and pane.selected_request() == i
