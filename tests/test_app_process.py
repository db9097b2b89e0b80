"""The app analyses in a child process (analysis/triage_process.py): parts shown as they come,
a status line that keeps moving, q that quits at once whatever runs, escape that cancels and
keeps what is shown. Driven with Pilot on real inputs, as a user would."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from conftest import ROOT, needs_bt2, real_trace
from textual.widgets import Static

from perftriage.analysis.triage import PARTS, Options, run_triage
from perftriage.tui.app import PerftriageApp
from perftriage.tui.panes.requests import RequestsPane

pytestmark = needs_bt2
WEBSERVER = ROOT / "sample_traces" / "webserver"


def text(app, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


async def wait_for(pilot, cond, timeout: float = 60.0) -> float:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError("timed out")
        await pilot.pause(0.05)
    return time.monotonic() - t0


def test_run_triage_publishes_each_part_when_it_is_ready():
    seen = []

    def publish(part, result):
        seen.append((part, result.requests is not None, result.analysis is not None, len(result.findings)))

    result = run_triage([WEBSERVER], Options(), publish=publish)
    assert [p for p, *_ in seen] == ["requests", "clusters"]
    assert seen[0][1] and not seen[0][2] and seen[0][3] >= 1  # the requests and their slowest, no clusters yet
    assert seen[1][2]
    assert result.publish is None and all(p in PARTS for p, *_ in seen)


async def test_parts_show_as_they_come_and_the_status_keeps_moving(monkeypatch):
    # the child holds after each part: 3 s, room for a screen slowed by three test processes on
    # two cores (1.5 s was too little once: the whole analysis ended within the 1.1 s below)
    monkeypatch.setenv("PERFTRIAGE_PART_DELAY", "3")
    app = PerftriageApp([str(WEBSERVER)])
    async with app.run_test(size=(80, 24)) as pilot:
        assert text(app, "#requests-title").startswith("analysing …")
        await wait_for(pilot, lambda: "requests" in app.parts)
        pane = app.query_one(RequestsPane)
        assert pane.table is not None and len(pane.table) == 2500  # the requests, while the clusters are analysed
        assert text(app, "#clusters-title").startswith("analysing …")
        assert app.running
        before = text(app, "#status")
        await pilot.pause(1.1)
        assert app.running and text(app, "#status") != before  # elapsed time moves while the child waits
        await wait_for(pilot, lambda: not app.running)
        assert not text(app, "#clusters-title").startswith("analysing") and "outliers" in text(app, "#clusters-title")
        assert app.result.analysis is not None and app.process is not None
        assert app.process.serves_paths  # the child keeps the graphs, for the paths the app shows


async def test_a_part_that_comes_later_leaves_the_panes_shown_before_as_the_user_left_them(tmp_path, monkeypatch):
    """The counters come after the requests and their clusters: the user, already moving in the
    request list, stays where they were when the counters (and the end) come."""
    from perftriage.tui.widgets.row_table import RowTable

    lines = ["time,server,cpu"] + [f"{t},{s},{10 + (t * 7 + i) % 5}" for t in range(1772460000, 1772460120)
                                   for i, s in enumerate(("web-01", "web-02", "web-03"))]
    (tmp_path / "counters.csv").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("PERFTRIAGE_PART_DELAY", "3")  # room for a slowed screen (see above)
    app = PerftriageApp([str(WEBSERVER), str(tmp_path / "counters.csv")])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: "clusters" in app.parts)
        assert "counters" not in app.parts
        pane = app.query_one(RequestsPane)
        table = pane.query_one(RowTable)
        table.focus()
        await pilot.press("j", "j", "j")
        await pilot.pause(0.1)
        where = (table.cursor, pane.sort_by, pane.selected_request())
        assert where[0] == 3
        await wait_for(pilot, lambda: not app.running)
        assert "counters" in app.parts and app.result.counters is not None
        assert (table.cursor, pane.sort_by, pane.selected_request()) == where


@pytest.mark.parametrize("key", ["q", "ctrl+c"])
async def test_q_quits_within_a_second_while_the_analysis_runs(key):
    app = PerftriageApp([str(real_trace("tracevizlab-apt"))], Options(thread_metrics=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app._progress is not None)  # the child is reading
        assert app.running
        proc = app.process
        t0 = time.monotonic()
        await pilot.press(key)
        await wait_for(pilot, lambda: not app.is_running, timeout=5)
    assert time.monotonic() - t0 < 1.0
    assert proc.proc.poll() is not None  # the child is gone too
    # and the processes it started (the decoding child...): killed with it, gone once the kernel has
    # torn them down (under make test's load one was still running when this looked at once)
    deadline = time.monotonic() + 2.0
    while live_in_group(proc.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_in_group(proc.proc.pid) == []
    assert not os.path.exists(proc.tmp.name)  # its temporary files gone with it


def test_a_stopped_analysis_leaves_no_temporary_files(tmp_path):
    """A damaged trace is read from a salvage view (its cut stream copied to whole packets, in a
    temporary folder): the child killed mid-analysis cannot remove it; its parent does."""
    import shutil

    from perftriage.analysis.triage_process import TriageProcess

    trace = tmp_path / "cut"
    shutil.copytree(real_trace("tracevizlab-apt"), trace)
    stream = max((p for p in trace.rglob("*_0") if p.is_file()), key=lambda p: p.stat().st_size)
    with open(stream, "r+b") as f:
        f.truncate(stream.stat().st_size - 1000)
    proc = TriageProcess([str(trace)], Options(thread_metrics=True))
    deadline = time.monotonic() + 60
    views = []
    while not views and time.monotonic() < deadline and proc.running:
        views = [p for p in Path(proc.tmp.name).rglob("perftriage-salvage-*")]
        time.sleep(0.05)
    assert views, "no salvage view made"
    proc.stop()
    assert not proc.running and not os.path.exists(proc.tmp.name)


def live_in_group(pgid: int) -> list[int]:
    """Processes of a process group that are not zombies (waiting to be reaped is not running)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(d))
    return out


async def test_the_graphs_stay_in_the_child_which_answers_the_paths_the_app_shows():
    """The app never holds the execution graphs: the child keeps them after its result and
    answers the path of the request shown, the same path as from the graphs themselves (here on
    the two-host sample, a path that crosses to the database host); the child ends with the app."""
    import numpy as np

    import tempfile

    from perftriage.analysis.execgraph.on_disk import MEMORY_FILESYSTEMS, filesystem_of
    from perftriage.analysis.requests.critical_path import finders
    from perftriage.analysis.requests.path_view import PathSource, path_view
    from perftriage.analysis.triage_process import KeptGraph
    from perftriage.tui.widgets.path_breakdown import PathBreakdown

    two_hosts = ROOT / "sample_traces" / "two-hosts"
    local = run_triage([two_hosts], Options())
    source = PathSource(local.graphs)
    assert source.path("no-such-host", 1, 0, 1) == (None, "no kernel trace for host no-such-host: no critical path")
    app = PerftriageApp([str(two_hosts)])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: not app.running and app.result is not None)
        proc = app.process
        assert proc.serves_paths and proc.running  # done, and alive for the paths
        if filesystem_of(tempfile.gettempdir()) not in MEMORY_FILESYSTEMS:  # off its heap: mapped, unlinked files
            assert "perftriage-graphs-" in Path(f"/proc/{proc.proc.pid}/maps").read_text()
        assert sorted(app.result.graphs) == sorted(local.graphs)
        assert all(isinstance(g, KeptGraph) for g in app.result.graphs.values())
        pane = app.query_one(RequestsPane)
        breakdown = app.query_one(PathBreakdown)
        t = pane.table
        crossed = 0
        for _ in range(4):  # the highlighted request's path, then three more down the list
            i = pane.selected_request()
            await wait_for(pilot, lambda: breakdown.view is not None and breakdown.view.t0 == int(t.start[i]))
            host = str(t.host[i])
            want = path_view(local.graphs[host], int(t.tid[i]), int(t.start[i]), int(t.end[i]),
                             finders(local.graphs)[host])
            got = breakdown.view
            here, why = source.path(host, int(t.tid[i]), int(t.start[i]), int(t.end[i]))  # as the app walks its own
            assert why == ""
            for name in ("tid", "start", "end", "state", "via"):
                assert np.array_equal(getattr(got.segments, name), getattr(want.segments, name)), name
                assert np.array_equal(getattr(here.segments, name), getattr(want.segments, name)), name
            assert got.thread_label == want.thread_label and np.array_equal(got.durations, want.durations)
            crossed += len(got.segments.hosts) > 1
            await pilot.press("j")
        assert crossed  # a path that goes to the other host
    await asyncio.sleep(0.5)
    assert proc.proc.poll() is not None and live_in_group(proc.proc.pid) == []


async def test_escape_cancels_and_keeps_what_is_shown(monkeypatch):
    monkeypatch.setenv("PERFTRIAGE_PART_DELAY", "30")
    app = PerftriageApp([str(WEBSERVER)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "requests" in app.parts)
        assert cancel_keys(app) == {"escape"}  # the footer shows it while the analysis runs
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.running, timeout=2)
        assert not app.process.running
        assert len(app.result.requests) == 2500 and app.result.analysis is None
        assert len(app.query_one(RequestsPane).table) == 2500
        assert "cancelled" in text(app, "#clusters-title")
        assert any("cancelled" in n for n in app.result.report.notes)
        assert cancel_keys(app) == set()  # escape is the panes' again, and the footer no longer shows it
        # the graphs went with the child: a request's path says why it is missing
        from perftriage.tui.widgets.path_breakdown import PathBreakdown

        await pilot.press("j")
        breakdown = app.query_one(PathBreakdown)
        await wait_for(pilot, lambda: breakdown.view is None and "cancelled" in breakdown.message, timeout=5)


def cancel_keys(app) -> set[str]:
    return {k for k, b in app.active_bindings.items() if b.binding.action == "cancel" and b.enabled}


async def test_an_analysis_started_before_the_app_is_the_one_it_shows():
    app = PerftriageApp([str(WEBSERVER)])
    early = app.start_early()  # as perftriage open does, before the app is drawn
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: not app.running and app.result is not None)
        assert app.process is early and app._early is None
        assert len(app.result.requests) == 2500 and early.peak_rss > 50 << 20  # the child told its peak


def test_an_early_analysis_dies_with_the_app_that_never_ran():
    app = PerftriageApp([str(WEBSERVER)])
    proc = app.start_early()
    app.stop_analysis()
    proc.proc.wait(timeout=5)
    assert not proc.running


async def test_the_ticking_status_repaints_its_lines_without_laying_out_the_screen(monkeypatch):
    # while an analysis runs, the status line and the waiting panes' titles change twice a
    # second; a layout pass each time re-laid and re-rendered the whole screen (1.2 s of the
    # app's CPU during the read of 50,000 requests, taken from the analysing child)
    monkeypatch.setenv("PERFTRIAGE_PART_DELAY", "30")
    app = PerftriageApp([str(WEBSERVER)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "requests" in app.parts)
        await pilot.pause(0.3)
        layouts = []
        original = app.screen._refresh_layout

        def counting(*args, **kwargs):
            layouts.append(1)
            return original(*args, **kwargs)

        monkeypatch.setattr(app.screen, "_refresh_layout", counting)
        status = text(app, "#status")
        await asyncio.sleep(1.6)  # three ticks at least
        await pilot.pause()
        assert app.running and text(app, "#status") != status  # it moved: "N s in this stage"
        assert layouts == []


class QueuedProcess:
    """An analysing child whose messages are all there already, but for the gaps (None): the
    app's reader finds the next one waiting (``has_more``) up to a gap."""

    def __init__(self, messages):
        self.queue = list(messages)
        self.stopped, self.serves_paths, self.peak_rss = False, False, 0

    def messages(self):
        while self.queue:
            msg = self.queue.pop(0)
            if msg is not None:
                yield msg

    def has_more(self) -> bool:
        return bool(self.queue) and self.queue[0] is not None

    def reap_later(self) -> None:
        pass

    def stop(self) -> None:
        self.stopped = True


def _messages_of_a_run(gap_after_requests: bool) -> list:
    from dataclasses import fields as dc_fields

    from perftriage.analysis.triage import Progress, TriageResult

    names = [f.name for f in dc_fields(TriageResult) if f.name != "publish"]
    msgs = [("progress", Progress("reading trace", 0.5))]

    def publish(part, result):
        msgs.append(("part", part, {n: getattr(result, n) for n in names}))
        msgs.append(("progress", Progress("outliers and clusters", None)))
        if part == "requests" and gap_after_requests:
            msgs.append(None)

    result = run_triage([WEBSERVER], Options(), publish=publish)
    msgs.append(("done", {n: getattr(result, n) for n in names}, {}))
    return msgs


@pytest.mark.parametrize("gap", [False, True])
async def test_a_part_the_result_follows_at_once_is_drawn_once_with_it(monkeypatch, gap):
    # the last part (the clusters) and the result come together: drawing the part and then the
    # result drew the same panes twice (0.1-0.2 s of the app's CPU on the web server sample)
    app = PerftriageApp([str(WEBSERVER)])
    app.start_early(QueuedProcess(_messages_of_a_run(gap_after_requests=gap)))
    drawn = []
    original = app.show_result

    def counting(result, final=True):
        drawn.append((final, sorted(app.parts)))
        return original(result, final)

    monkeypatch.setattr(app, "show_result", counting)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: not app.running and app.result is not None)
        await pilot.pause()
        # a part with nothing after it yet is drawn as it comes; the others with the result
        assert drawn == ([(False, ["requests"])] if gap else []) + [(True, sorted(PARTS))]
        assert len(app.query_one(RequestsPane).table) == 2500 and app.result.analysis is not None
