"""The app, driven with Pilot as a user would: open, navigate, filter, open a request, export."""

from __future__ import annotations

import os

import pytest

from perftriage.tui.app import PerftriageApp
from perftriage.tui.panes.requests import RequestsPane
from perftriage.tui.widgets.row_table import RowTable

from app_fixtures import fake_analyse, held_analysis
from conftest import needs_bt2, real_trace


async def loaded(pilot):
    from textual.worker import WorkerCancelled

    for _ in range(5):
        try:
            await pilot.app.workers.wait_for_complete()
            break
        except WorkerCancelled:  # an exclusive worker replaced by a newer one (a view drawn again): wait on
            await pilot.pause(0.05)
    await pilot.pause()


async def progress_shown(pilot) -> None:
    """Until the analysis's first progress has reached the app (5 s at most)."""
    for _ in range(100):
        await pilot.pause(0.05)
        if pilot.app._progress is not None:
            break


def table_of(app) -> RowTable:
    return app.query_one("#requests-table", RowTable)


def line_text(widget, y: int) -> str:
    return "".join(seg.text for seg in widget.render_line(y))


async def test_fifty_thousand_requests_navigate_and_filter():
    app = PerftriageApp(["synthetic"], analyse=fake_analyse(50_000))
    async with app.run_test() as pilot:  # 80x24, the minimum size
        await loaded(pilot)
        table = table_of(app)
        assert table.row_count == 50_000
        pane = app.query_one(RequestsPane)
        durations = pane.table.duration[pane.index]
        assert (durations[:-1] >= durations[1:]).all()  # slowest first
        assert "/checkout/" in line_text(table, 1)  # the injected slow ones lead
        await pilot.press("G")
        assert table.cursor == 49_999
        await pilot.press("g", "j", "j", "k")
        assert table.cursor == 1
        await pilot.press("slash")
        await pilot.press(*"checkout")
        await pilot.press("enter")
        await pilot.pause()
        assert table.row_count == 500
        assert "/checkout: 500 of 50,000 match" in str(app.query_one("#requests-title").render())
        await pilot.press("escape")
        await pilot.pause()
        assert table.row_count == 50_000


async def test_enter_opens_the_request_and_escape_closes_it():
    app = PerftriageApp(["synthetic"], analyse=fake_analyse(100))
    async with app.run_test() as pilot:
        await loaded(pilot)
        await pilot.press("enter")
        await pilot.pause()
        text = str(app.screen.query_one("#request-detail-text").render())
        assert "duration" in text and "/checkout/" in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.query("#request-detail-text") == [] or not app.screen.query("#request-detail-text")


async def test_the_footer_recomposes_only_when_the_keys_it_shows_change(monkeypatch):
    from perftriage.tui.widgets.key_footer import KeyFooter

    composed = []
    recompose = KeyFooter.recompose

    async def counted(self):
        composed.append(self._shown)
        await recompose(self)

    monkeypatch.setattr(KeyFooter, "recompose", counted)
    app = PerftriageApp(["synthetic"], analyse=fake_analyse(100))
    async with app.run_test() as pilot:
        await loaded(pilot)
        await pilot.pause(0.2)
        footer = app.query_one(KeyFooter)
        before = len(composed)
        for _ in range(5):  # as each list getting rows asks: nothing changes
            app.refresh_bindings()
        await pilot.pause(0.2)
        assert len(composed) == before
        keys = footer._shown
        await pilot.press("5")  # another pane's list takes the keys: the footer shows its keys
        await pilot.pause(0.2)
        assert len(composed) == before + 1 and footer._shown != keys
        assert {k.key for k in footer.query("FooterKey")} == {b[0] for b in footer._shown[0]} | {"ctrl+p"}


async def test_the_finding_detail_follows_the_cursor_and_is_not_rebuilt_for_the_same_finding(monkeypatch):
    import dataclasses

    import rich.markdown

    from perftriage.tui.panes.findings import FindingsPane

    built = []
    real = rich.markdown.Markdown.__init__

    def counted(self, markup, *a, **k):
        built.append(markup)
        real(self, markup, *a, **k)

    monkeypatch.setattr(rich.markdown.Markdown, "__init__", counted)
    app = PerftriageApp(["synthetic"], analyse=fake_analyse(100))
    async with app.run_test() as pilot:
        await loaded(pilot)
        pane = app.query_one(FindingsPane)
        first = pane.findings[0]
        assert built and first.title in built[-1]
        n = len(built)
        pane.show_findings([first, dataclasses.replace(first, title="Another finding")])
        await pilot.pause()
        assert len(built) == n  # the detail shown is the first finding's still
        pane.show_findings(pane.findings)  # the same list again, as each part of the results does
        await pilot.pause()
        assert len(built) == n
        await pilot.press("6")
        await pilot.press("j")
        await pilot.pause()
        assert len(built) == n + 1 and pane.findings[1].title in built[-1]


async def test_notes_on_the_inputs_are_one_toast_and_the_first_row_of_findings():
    """Six notes were six toasts over the list for eight seconds at 80x24 (the real pod metrics):
    one toast says how many and where they are; the Findings list's first row shows them all."""
    from perftriage.tui.panes.findings import FindingsPane

    notes = [f"file {k}.csv: column 'x{k}' is not numeric: ignored" for k in range(5)]

    def analyse(paths, options=None, progress=None):
        r = fake_analyse(100)(paths, options)
        r.report.notes[:] = notes
        return r

    app = PerftriageApp(["synthetic"], analyse=analyse)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(200):  # the results shown (the request path's worker may be cancelled by a newer one)
            if app.result is not None and not app.running:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        toasts = [n.message for n in app._notifications]
        assert toasts == ["5 notes on the inputs (how they were read, what was left out): the first row of Findings "
                          "(6) shows them"]
        pane = app.query_one(FindingsPane)
        assert pane.notes == notes and pane.finding_at(0) is None and pane.finding_at(1) is pane.findings[0]
        assert pane.row_of(0) == 1
        await pilot.press("6")
        await pilot.pause()
        assert pane.findings[0].title in pane._detail_text  # the list opens on its first finding
        await pilot.press("k")  # the notes above it
        await pilot.pause()
        assert all(f"x{k}" in pane._detail_text for k in range(5))


async def test_export_writes_markdown_atomically(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = PerftriageApp(["synthetic"], analyse=fake_analyse(100))
    async with app.run_test() as pilot:
        await loaded(pilot)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        files = sorted(os.listdir(tmp_path))
        assert len(files) == 1 and files[0].startswith("perftriage-findings-") and files[0].endswith(".md")
        md = (tmp_path / files[0]).read_text()
        assert md.startswith("# perftriage findings")
        assert "| id | kind | host | pid/tid | start (UTC) | duration | method | uri |" in md
        assert "\x1b" not in md
        assert app.last_export == files[0]


async def test_help_and_tabs_and_quit():
    app = PerftriageApp(["synthetic"], analyse=fake_analyse(10))
    async with app.run_test() as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        shown = "\n".join("".join(s.text for s in strip) for strip in app.screen._compositor.render_strips())
        assert "perftriage keys" in shown and "This pane: Requests" in shown
        await pilot.press("escape")
        await pilot.press("6")
        await pilot.pause()
        assert app.query_one("#tabs").active == "findings"
        await pilot.press("4")
        await pilot.pause()
        assert app.query_one("#tabs").active == "threads"
        await pilot.press("q")
    assert app.return_code == 0 or app.return_code is None


async def test_too_small_terminal_says_so():
    app = PerftriageApp(["synthetic"], analyse=fake_analyse(10))
    async with app.run_test(size=(70, 20)) as pilot:
        await loaded(pilot)
        assert app.screen.has_class("too-small")
        assert "at least 80x24; this one is 70x20" in str(app.query_one("#too-small").render())


async def test_load_error_is_shown_not_crashed():
    def broken(paths, options=None, progress=None):
        from perftriage.analysis.errors import InputError

        raise InputError(paths[0], "no such file or folder")

    app = PerftriageApp(["/nope"], analyse=broken)
    async with app.run_test() as pilot:
        await loaded(pilot)
        assert "error: /nope: no such file or folder" in str(app.query_one("#status").render())


async def test_a_load_error_is_said_whole_on_every_pane_not_analysing():
    """At 80x24 the status line cuts a long error and its toast goes: each pane says it could
    not load (not "analysing ...") and shows the error whole, its "[...]" as text."""
    from test_app_links import screen_text

    why = "its rows are numbered [idx], not timed: give the time between two rows, e.g. --interval 5m"

    def broken(paths, options=None, progress=None):
        from perftriage.analysis.errors import InputError

        raise InputError(paths[0], why)

    app = PerftriageApp(["/data/[/fleet]/omi-10_test.csv.gz"], analyse=broken)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        app.clear_notifications()
        for key in "123456":
            await pilot.press(key)
            await pilot.pause()
            text = screen_text(app)
            assert "could not load" in text and "analysing" not in text, (key, text)
            assert "[idx]" in text and "--interval 5m" in text.replace("\n", " "), (key, text)
        assert "error: /data/[/fleet]/omi" in str(app.query_one("#status").render())


async def test_a_uri_that_looks_like_markup_is_shown_as_it_is():
    """A uri or a file name holding "[/x]" or "[b]" (PHP's a[]=1, a path) is text: Rich markup
    dropped "[b]" and raised on an unmatched "[/x]" (the app crashed on the request's detail)."""
    from app_fixtures import synthetic_requests
    from test_app_links import screen_text

    from perftriage.analysis.findings import Report
    from perftriage.analysis.inputs import Inputs
    from perftriage.analysis.options import Options
    from perftriage.analysis.triage import TriageResult

    def analyse(paths, options=None, progress=None):
        t = synthetic_requests(5)
        t.fields["uri"][:] = "/q?a[/x]=1&[b]bold"
        return TriageResult(inputs=Inputs(paths=list(paths)), options=Options(), requests=t,
                            report=Report(inputs=list(paths), findings=[], created="2026-01-01T00:00:00+00:00"))

    app = PerftriageApp(["/traces/[b]x"], analyse=analyse)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        for _ in range(100):  # the result drawn (after the worker's end: later under load)
            if "/q?a[/x]=1&[b]bold" in screen_text(app):
                break
            await pilot.pause(0.05)
        assert "/q?a[/x]=1&[b]bold" in screen_text(app)  # the request's line below the list
        await pilot.press("enter")
        for _ in range(100):  # its detail screen, once pushed and drawn (a fixed 0.3 s was short under load)
            await pilot.pause(0.05)
            if len(app.screen_stack) > 1 and "/q?a[/x]=1&[b]bold" in screen_text(app):
                break
        assert len(app.screen_stack) > 1 and "/q?a[/x]=1&[b]bold" in screen_text(app)  # its detail screen


@needs_bt2
@pytest.mark.parametrize("ctf", ["1.8", "2"])
async def test_real_php_trace_end_to_end(ctf, tmp_path):
    """The real PHP trace, and its metadata as lttng-tools' CTF 2 (in packets): the same request."""
    from fuzzing.ctf2_writer import ctf2_view

    path = real_trace("tracevizlab-php-ust")
    if ctf == "2":
        path = ctf2_view(path, tmp_path / "php-ctf2", "tools", packets=True)
    app = PerftriageApp([str(path)])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        table = table_of(app)
        assert table.row_count == 1
        assert "script.php" in line_text(table, 1)
        assert "1,871 events" in str(app.query_one("#status").render())


def test_snapshot_requests_pane(snap_compare):
    app = PerftriageApp(["synthetic"], analyse=fake_analyse(300))

    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("j", "j")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


@pytest.mark.parametrize("term", ["xterm", "xterm-256color"])
def test_runs_headless_under_common_terms(term, monkeypatch):
    monkeypatch.setenv("TERM", term)
    monkeypatch.setenv("NO_COLOR", "1")
    import asyncio

    async def go():
        app = PerftriageApp(["synthetic"], analyse=fake_analyse(10))
        async with app.run_test() as pilot:
            await loaded(pilot)
            return table_of(app).row_count

    assert asyncio.run(go()) == 10


@needs_bt2
async def test_sample_critical_path_breakdown_jump_and_detail():
    from perftriage.tui.widgets.path_breakdown import PathBreakdown

    app = PerftriageApp([str(real_sample())])
    async with app.run_test(size=(120, 34)) as pilot:
        await loaded(pilot)
        pane = app.query_one(RequestsPane)
        table = table_of(app)
        assert table.row_count == 2500
        await app.workers.wait_for_complete()
        await pilot.pause()
        view = app.query_one("#requests-path", PathBreakdown).view
        assert view is not None and view.total == int(pane.table.duration.max())
        assert view.shares()[0][0] == "BN"  # the slowest: refused connects
        text = str(app.query_one("#requests-path").render())
        assert "critical path" in text and "apache2" in text
        # sort by start time (outliers first -> slowest first -> start time), then jump to the next
        # notable (outlying) request
        await pilot.press("s", "s")
        assert pane.sort_by == "start"
        start_cursor = table.cursor
        await pilot.press("n")
        assert table.cursor > start_cursor
        assert pane.notable[pane.index[table.cursor]]
        assert not pane.notable[pane.index[start_cursor + 1:table.cursor]].any()
        await pilot.press("N")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        segs = app.screen.query_one("#request-segments", RowTable)
        assert segs.row_count > 0
        assert "critical path" in str(app.screen.query_one("#request-detail-path").render())


@needs_bt2
async def test_two_host_sample_path_shows_the_database_hosts_thread(tmp_path):
    import json

    from perftriage.analysis.sim.sample import write_webserver_sample
    from perftriage.analysis.sim.webserver import WebServerConfig
    from perftriage.tui.widgets.path_breakdown import PathBreakdown

    st = write_webserver_sample(tmp_path / "two", WebServerConfig(requests=120, db_host="db-01", seed=5,
                                                                   db_clock_offset_ms=2.5, mix={"slow_db": 0.1}))
    slow = {r["rid"] for r in json.loads((st.out / "ground_truth.json").read_text())["requests"]
            if r["cause"] == "slow_db"}
    app = PerftriageApp([str(st.out)])
    async with app.run_test(size=(140, 40)) as pilot:
        await loaded(pilot)
        pane = app.query_one(RequestsPane)
        table = table_of(app)
        qs = pane.table.fields["querystring"]
        cursor = next(c for c in range(table.row_count) if int(qs[pane.index[c]].rsplit("rid=", 1)[1]) in slow)
        table.cursor = cursor
        await app.workers.wait_for_complete()
        await pilot.pause()
        view = app.query_one("#requests-path", PathBreakdown).view
        assert view.shares()[0][0] == "BD"  # the database's disk, on the other host
        assert any(label.startswith("db-01: mysqld") for label in view.thread_label.values())
        text = str(app.query_one("#requests-path").render())
        assert "db-01: mysqld" in text and " on db-01:" in text.splitlines()[0]
        assert view.elsewhere()[0][0] == "db-01" and view.elsewhere()[0][1] > view.total // 2
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        segs = app.screen.query_one("#request-segments", RowTable)
        rows = [segs.source.cells(r) for r in range(segs.row_count)]
        assert any(r[0].startswith("db-01: mysqld") and r[3] == "BD" for r in rows)


def real_sample():
    from conftest import ROOT

    return ROOT / "sample_traces" / "webserver"


@needs_bt2
async def test_clusters_pane_views_and_listing_a_cluster():
    from perftriage.tui.panes.clusters import ClustersPane

    app = PerftriageApp([str(real_sample())])
    async with app.run_test(size=(120, 34)) as pilot:
        await loaded(pilot)
        ra = app.result.analysis
        assert ra is not None and ra.clusters.k >= 3
        # Requests pane: outliers first, with their cluster and why
        pane = app.query_one(RequestsPane)
        first = int(pane.index[0])
        assert pane.notable[first] and pane.cluster[first] >= 0
        assert line_text(table_of(app), 0).split()[:4] == ["id", "duration", "cl", "why"]
        await pilot.press("2")
        await pilot.pause()
        clusters = app.query_one(ClustersPane)
        ctable = app.query_one("#clusters-table", RowTable)
        assert ctable.has_focus and ctable.row_count == ra.clusters.k + 1
        fcntl_row = next(i for i in range(1, ctable.row_count) if "fcntl" in ctable.source.cells(i)[-1])
        for _ in range(fcntl_row):
            await pilot.press("j")
        await pilot.pause()
        text = str(app.query_one(ClustersPane).view_body.render())
        assert "fcntl fcntl fcntl" in text
        for view in ("state counts", "map", "inertia"):
            await pilot.press("v")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert clusters.view == ("n-grams", "state counts", "map", "inertia").index(view)
        assert "inertia" in str(app.query_one(ClustersPane).view_body.render())
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one("#tabs").active == "requests"
        c = fcntl_row - 1
        assert pane.cluster_filter == c
        assert table_of(app).row_count == int((ra.clusters.label == c).sum())
        assert all(pane.cluster[i] == c for i in pane.index)
        await pilot.press("escape")
        await pilot.pause()
        assert table_of(app).row_count == 2500


async def test_call_trees_pane_on_the_microservice_sample():
    """Span inputs only: the app starts on the Call trees tab, ranks the injected pair first, and
    shows its replicas, an example call tree and the baseline comparison."""
    import json

    from perftriage.analysis.triage import Options
    from perftriage.tui.panes.calltrees import CallTreesPane

    from conftest import ROOT

    folder = ROOT / "sample_traces" / "microservices"
    truth = json.loads((folder / "ground_truth.json").read_text())
    slow = {(m.replace(".", ":", 1), r) for m, r in truth["slow_pairs"]}
    app = PerftriageApp([str(folder)], Options(reference=(str(ROOT / "sample_traces" / "microservices-baseline"),)))
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        assert app.query_one("#tabs").active == "calltrees"
        pairs = app.query_one("#ct-pairs", RowTable)
        assert pairs.has_focus and pairs.row_count == len(app.result.diagnosis.ranking) >= 1
        cells = pairs.source.cells(0)
        assert (cells[1], cells[2]) in slow
        pane = app.query_one(CallTreesPane)
        text = str(app.query_one(CallTreesPane).view_body.render())
        assert cells[2] in text and "p50" in text  # the replica beside its peers
        await pilot.press("v")
        text = str(app.query_one(CallTreesPane).view_body.render())
        assert pane.view == 1 and "frontend:" in text and cells[1] in text  # the example call tree
        await pilot.press("v")
        text = str(app.query_one(CallTreesPane).view_body.render())
        assert f"{cells[1]} @ {cells[2]}" in text  # reference beside incident
        await pilot.press("tab")
        await pilot.pause()
        cats = app.query_one("#ct-cats", RowTable)
        assert cats.has_focus and cats.row_count == len(app.result.diagnosis.categories)
        assert pane.subject == "category"
        assert "slowest:" in str(app.query_one("#status").render())


@needs_bt2
async def test_real_kernel_trace_without_markers_opens_on_its_processes():
    from perftriage.analysis.threads.deviation import ThreadParams
    from perftriage.analysis.triage import Options
    from perftriage.tui.panes.clusters import ClustersPane
    from perftriage.tui.panes.findings import FindingsPane
    from perftriage.tui.panes.threads import ThreadsPane

    app = PerftriageApp([str(real_trace("tracevizlab-apt"))], Options(threads=ThreadParams(replicates=60)))
    async with app.run_test(size=(140, 40)) as pilot:
        await loaded(pilot)
        res = app.result
        pane = app.query_one(RequestsPane)
        title = str(app.query_one("#requests-title").render())
        assert f"{len(res.requests):,} processes" in title and f"{len(res.compared):,} compared" in title
        # outliers first: all of them whole foreground processes, clipped and background ones say why not
        first = int(pane.index[0])
        assert pane.notable[first] and res.requests.fields["span"][first] == "whole"
        not_compared = [i for i in range(len(res.requests)) if pane.cluster[i] == -2]
        assert not_compared and all(pane.why[i] for i in not_compared)
        assert any("background" in pane.why[i] for i in not_compared)
        # the filter finds apt among the processes
        await pilot.press("slash", *"apt-check", "enter")
        await pilot.pause()
        assert table_of(app).row_count >= 1 and "apt-check" in line_text(table_of(app), 1)
        await pilot.press("escape")
        # clusters are of the compared processes only
        await pilot.press("2")
        await pilot.pause()
        ctitle = str(app.query_one("#clusters-title").render())
        assert f"of {len(res.compared):,} processes compared" in ctitle
        app.query_one(ClustersPane)
        # threads from the trace, by default, without the tracer's threads
        await pilot.press("4")
        await pilot.pause()
        threads = app.query_one(ThreadsPane)
        ts = app.result.thread_series
        assert ts.n_threads >= 3 and not any(n.startswith("lttng") for n in ts.groups["program"])
        # apt, apt-check, dpkg, Xorg...: one process of each program, one thread each; nothing
        # alike to compare, which the pane says (it ranked apt against Xorg before)
        assert threads.current is None and app.result.threads.results == []
        assert "nothing alike to compare" in threads._idle and "no program with 3 processes" in threads._idle
        # so no request's thread can be shown compared: t is not offered (it was, and showed nothing)
        row = next(r for r in range(len(pane.index)) if str(pane.table.tid[pane.index[r]]) in ts.ids)
        pane.row_table.cursor = row
        await pilot.pause()
        assert str(pane.table.tid[pane.selected_request()]) in ts.ids
        assert pane.check_action("its_threads", ()) is False
        # findings lead with where apt's time went
        findings = app.query_one(FindingsPane)
        assert findings is not None
        assert res.findings[0].title.startswith("apt spent ")


async def what_changed_on_real_spans(minutes, incident_time: str):
    """The app opened on the OnlineBoutique trace files of ``minutes`` ("HH_MM") with the
    incident's time: (the Call trees pane's what-changed text, the findings); the pane is the one
    shown."""
    from perftriage.analysis.triage import Options
    from conftest import SHARED

    files = [str(SHARED / "real_data" / "onlineboutique-2022-08-22" / "trace" / f"{m}_trace.csv.gz")
             for m in minutes]
    app = PerftriageApp(files, Options(incident_time=incident_time))
    async with app.run_test(size=(120, 34)) as pilot:
        await loaded(pilot)
        assert app.query_one("#tabs").active == "calltrees"
        return str(app.query_one("#ct-changed").render()), app.result.findings


async def test_call_trees_pane_says_what_changed_on_real_spans():
    text, findings = await what_changed_on_real_spans(("05_27", "05_28"), "05:27:06")
    assert "what changed" in text and "1. currencyservice" in text and "between client and server" in text
    assert findings[0].title.startswith("currencyservice changed most")


async def test_call_trees_pane_names_a_pod_that_stopped_after_one_call_on_real_spans():
    # the frontend's exception at 04:18:35: no call after PlaceOrder in its orders only
    text, findings = await what_changed_on_real_spans(("04_12", "04_20"), "04:18:35")
    text = " ".join(text.split())
    assert "1. frontend" in text and "stopped making calls" in text, text
    assert "per request that called `PlaceOrder`" in " ".join(findings[0].title.split())


async def test_the_bar_of_a_stage_of_unknown_length_moves_a_few_times_a_second():
    # Textual animates an indeterminate bar at 15 frames a second: each a repaint (over SSH,
    # bytes sent) taken from the analysis; the app moves it with the status line, twice a second
    import time

    from perftriage.analysis.triage import Progress

    analyse, release = held_analysis(10, Progress("outliers and clusters", None, "10 requests"))
    app = PerftriageApp(["synthetic"], analyse=analyse)
    async with app.run_test(size=(80, 24)) as pilot:
        await progress_shown(pilot)
        bar = app.query_one("#progress #bar")
        frames = []
        render = bar.render

        def counting():
            frames.append(time.monotonic())
            return render()

        bar.render = counting
        await pilot.pause(2.0)
        release.set()
        assert 2 <= len(frames) <= 6, len(frames)  # with the status, 2 a second (15 a second: about 30)


async def test_an_analysis_that_ends_as_the_app_closes_changes_nothing():
    # the analysis's last messages (its end, a progress, a path) reaching an app that has
    # closed, its panes gone: no NoMatches at exit (seen when q came as an analysis ended)
    from textual.worker import Worker, WorkerState

    from perftriage.analysis.triage import Progress

    analyse, release = held_analysis(10)
    app = PerftriageApp(["synthetic"], analyse=analyse)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        worker, pane = app._worker, app.query_one(RequestsPane)
        assert app.running
    release.set()
    assert not app.is_running and not pane.query("#requests-title")
    app.on_worker_state_changed(Worker.StateChanged(worker, WorkerState.SUCCESS))
    app._on_progress(Progress("outliers and clusters", None, ""), app._run)
    pane._show_path(None, "no critical path")
    assert app.result is None  # nothing was shown


async def test_progress_within_a_stage_moves_the_bar_with_the_status_line_not_at_each_message(monkeypatch):
    # each change of the screen is an update of it (13 ms of the app's CPU, bytes over SSH)
    # taken from the analysing child: messages of one stage make no update of their own; the
    # bar shows the newest share done at the next tick (twice a second)
    import asyncio

    from perftriage.analysis.triage import Progress

    analyse, release = held_analysis(10, Progress("reading trace", 0.01, ""))
    app = PerftriageApp(["synthetic"], analyse=analyse)
    async with app.run_test(size=(80, 24)) as pilot:
        await progress_shown(pilot)
        await pilot.pause(0.6)
        bar = app.query_one("#progress")
        updates = []
        compositor = app.screen._compositor
        original = compositor.render_update

        def counting(*args, **kwargs):
            updates.append(1)
            return original(*args, **kwargs)

        monkeypatch.setattr(compositor, "render_update", counting)
        for i in range(12):  # a message every 60 ms
            app._on_progress(Progress("reading trace", 0.02 + i / 100, ""), app._run)
            await asyncio.sleep(0.06)
        assert len(updates) <= 3, len(updates)  # the ticks' (2 in 0.72 s), not one a message
        await pilot.pause(0.6)
        assert bar.progress == 13.0  # the newest, at the tick
        release.set()


@needs_bt2
async def test_the_clusters_pane_names_the_units_compared():
    """A kernel trace without request markers: each thread is a unit; the Clusters pane says
    threads (its title, its count column, the normal group's view), not requests."""
    from test_app_links import screen_text

    from perftriage.tui.panes.clusters import ClustersPane

    app = PerftriageApp([str(real_trace("tc-many-threads"))])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        while app.running:
            await pilot.pause(0.05)
        await pilot.press("2")
        await pilot.pause(0.3)
        pane = app.query_one(ClustersPane)
        assert app.result.units == "threads" and pane.noun == "threads"
        assert pane.table.columns[1].title == "threads"
        title = str(pane.query_one("#clusters-title").render())
        assert "threads compared" in title and "lists a group's threads" in title and "requests" not in title
        assert "normal threads" in screen_text(app)
        # a unit's detail names it a thread, not a request
        from perftriage.tui.screens.request_detail import request_lines

        label, value = request_lines(app.result.requests, 0)[0]
        assert label == "thread" and value == f"#{app.result.requests.id[0]}"


@needs_bt2
async def test_the_request_detail_says_why_there_is_no_critical_path():
    """The detail's segment list says 'computing the critical path…' while it is asked for (a
    real trace's 407 ms thread took seconds: it read 'no kernel trace for this host' meanwhile),
    then the reason where there is none (a user-space trace alone)."""
    from perftriage.tui.screens.request_detail import RequestDetailScreen

    app = PerftriageApp([str(real_trace("tracevizlab-php-ust"))])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.05)
            screen = app.screen
            if isinstance(screen, RequestDetailScreen) and screen.query_one("#request-segments").empty_text != \
                    "computing the critical path…":
                break
        table = app.screen.query_one("#request-segments")
        assert isinstance(app.screen, RequestDetailScreen) and app.screen.view is None
        assert table.empty_text == "no kernel trace for this host: no critical path"
