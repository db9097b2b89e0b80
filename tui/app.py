"""The perftriage app: one tab per analysis, a status line, help on ?, export on e.

The app only shows results and asks for new ones: the analyses run in a child process
(:class:`perftriage.analysis.triage_process.TriageProcess`, the same ``run_triage`` as the
report), read by a worker thread. Each part of the result is shown the moment it is published
(the requests, then their clusters...); panes whose part is still coming say "analysing ...";
the status line moves every half second (stage, progress, elapsed time). q and Ctrl-C kill the
child and quit at once; escape while it runs cancels it and keeps what is shown.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import threading
import time
from functools import partial
from typing import TYPE_CHECKING, Callable, Iterable

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.containers import Vertical
from textual.widgets import Input, ProgressBar, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from perftriage.analysis.atomic import atomic_write
from perftriage.analysis.errors import PerftriageError
from perftriage.analysis.findings import render
from perftriage.analysis.options import PARTS, Options, Progress
from perftriage.analysis.requests.params import MarkerSpec, marker_kind, unit_noun
from perftriage.analysis.units import count_of
from perftriage.analysis.triage_process import AnalysisStopped, KeptGraph, TriageProcess, raise_error
from perftriage.tui.panes.calltrees import CallTreesPane
from perftriage.tui.panes.clusters import ClustersPane
from perftriage.tui.panes.counters import CountersPane
from perftriage.tui.panes.findings import FindingsPane
from perftriage.tui.panes.requests import RequestsPane
from perftriage.tui.panes.threads import ThreadsPane
from perftriage.tui.widgets.key_footer import KeyFooter
from perftriage.tui.widgets.row_table import RowTable

from .screens import ExportScreen, HelpScreen

if TYPE_CHECKING:  # the analyses' modules come after the first screen (_warm_up)
    from perftriage.analysis.requests.path_view import PathSource, PathView
    from perftriage.analysis.triage import TriageResult

MIN_WIDTH, MIN_HEIGHT = 80, 24


class ListFilter(Input):
    """The text / asks for, for the list that asked (escape: leave it as it was)."""

    target: RowTable | None = None

    def key_escape(self, event) -> None:
        event.stop()
        self.remove_class("visible")
        if self.target is not None:
            self.target.focus()

#: the result fields each pane draws: a pane is drawn again only when one of them is new, so that a
#: part that comes later (a thread level, the counters) never resets what the user is doing in the
#: panes that came before (their sort, filter, highlighted row, drill-down)
PANE_FIELDS = {
    "requests": ("requests", "features", "analysis", "compared", "graphs", "units"),
    "clusters": ("analysis", "features", "compared"),
    "threads": ("threads", "thread_series", "graphs"),
    "calltrees": ("diagnosis", "change", "comparison", "links"),
    "counters": ("counters",),
}

TABS = [
    ("requests", "1 Requests"),
    ("clusters", "2 Clusters"),
    ("calltrees", "3 Call trees"),
    ("threads", "4 Threads"),
    ("counters", "5 Counters"),
    ("findings", "6 Findings"),
]

def _warm_up() -> None:
    """Imports what any result needs, in a thread after the first screen while the analysis
    runs (the result is drawn that much sooner after it comes): the analyses' modules its
    pickles name and numpy (0.25 s, kept from the first screen), rich's Markdown and its parser
    for the findings' detail (35-65 ms), numpy.ma for the panes' medians, Textual's scroll bars."""
    import numpy.ma  # noqa: F401, PLC0415
    import rich.markdown  # noqa: F401, PLC0415
    import textual.scrollbar  # noqa: F401, PLC0415

    import perftriage.analysis.triage  # noqa: F401, PLC0415


def _result(fields: dict) -> TriageResult:
    from perftriage.analysis.triage import TriageResult  # noqa: PLC0415 (after the first screen)

    return TriageResult(**fields)


class PerftriageApp(App):
    TITLE = "perftriage"

    CSS = """
    Screen { layout: vertical; }
    #main { height: 1fr; }
    #too-small { display: none; padding: 1 2; }
    Screen.too-small #main { display: none; }
    Screen.too-small #too-small { display: block; }
    #status { height: 1; background: $panel; color: $text; padding: 0 1; }
    #progress { height: 1; display: none; }
    #list-filter { display: none; height: 3; }
    #list-filter.visible { display: block; }
    #progress.running { display: block; }
    TabbedContent { height: 1fr; }
    TabPane { padding: 0; }
    """

    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),
        Binding("escape", "cancel", "cancel analysis", priority=True),
        Binding("escape", "back", "back"),
        Binding("question_mark", "help", "help"),
        Binding("e", "export", "export"),
        Binding("1", "tab('requests')", "requests", show=False),
        Binding("2", "tab('clusters')", "clusters", show=False),
        Binding("3", "tab('calltrees')", "call trees", show=False),
        Binding("4", "tab('threads')", "threads", show=False),
        Binding("5", "tab('counters')", "counters", show=False),
        Binding("6", "tab('findings')", "findings", show=False),
    ]

    def __init__(self, paths: list[str], options: Options | None = None,
                 analyse: Callable[..., TriageResult] | None = None):
        super().__init__()
        self.paths = [os.fspath(p) for p in paths]
        self.options = options or Options()
        self.analyse = analyse
        self.result: TriageResult | None = None
        self.load_error: str | None = None
        self.last_export: str | None = None
        self.process: TriageProcess | None = None
        self.running = False
        self.parts: set[str] = set()  # parts of the result shown so far
        self._drawn: dict[str, tuple] = {}  # per pane, the PANE_FIELDS it was drawn with
        self.cancelled = False
        self._started = time.monotonic()
        self._progress: Progress | None = None
        self._progress_at = self._started
        self.history: list[tuple[str, str | None, int, int | None]] = []  # (tab, table id, cursor, cluster filter)
        self._after_tab: tuple[str, str] | None = None  # (tab, part): a link's part, once its tab is shown
        self._run = 0  # which analysis is current (a re-run makes the messages of the one before stale)
        self._early: TriageProcess | None = None  # started before the app draws (start_early)
        self._worker: Worker | None = None
        self._paths: PathSource | None = None  # the paths of an analysis run in this process

    def compose(self) -> ComposeResult:
        with Vertical(id="main"):
            with TabbedContent(initial="requests", id="tabs"):
                for tab_id, title in TABS:
                    with TabPane(title, id=tab_id):
                        if tab_id == "requests":
                            yield RequestsPane(id="requests-pane")
                        elif tab_id == "findings":
                            yield FindingsPane(id="findings-pane")
                        elif tab_id == "clusters":
                            yield ClustersPane(id="clusters-pane")
                        elif tab_id == "calltrees":
                            yield CallTreesPane(id="calltrees-pane")
                        elif tab_id == "threads":
                            yield ThreadsPane(id="threads-pane")
                        elif tab_id == "counters":
                            yield CountersPane(id="counters-pane")
            yield ListFilter(placeholder="filter this list: rows containing the text; enter applies, escape cancels",
                             id="list-filter")
            yield ProgressBar(id="progress", show_eta=False)
        yield Static("", id="too-small", markup=False)
        yield Static("starting", id="status", markup=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        self._check_size(self.size.width, self.size.height)
        self.set_status(f"loading {', '.join(self.paths)}")
        self._start_analysis()
        self.set_interval(0.5, self._tick)
        # after the first screen is drawn, not before it
        self.call_after_refresh(lambda: threading.Thread(target=_warm_up, name="perftriage-warm-up",
                                                         daemon=True).start())
        self.query_one("#requests-pane", RequestsPane).row_table.focus()

    # -- loading ----------------------------------------------------------------------------

    def _load(self, run: int = 0) -> TriageResult:
        def progress(p: Progress) -> None:
            self.call_from_thread(self._on_progress, p, run)

        if self.analyse is not None:  # a stand-in analysis (tests): in this thread
            return self.analyse(self.paths, self.options, progress=progress)
        early, self._early = self._early, None
        proc = early if run == 0 and early is not None else TriageProcess(self.paths, self.options)
        self.process = proc
        fields: dict = {}
        parts: list[str] = []  # the parts that came and are not drawn yet
        progress_seen = None
        try:
            for msg in proc.messages():
                if msg[0] == "progress":
                    progress_seen = msg[1]
                elif msg[0] == "part":
                    fields.update(msg[2])
                    parts.append(msg[1])
                elif msg[0] == "done":
                    fields.update(msg[1])
                    return _result(fields)  # the parts not shown yet come with it
                else:
                    raise_error(msg[1], msg[2])
                if proc.has_more():
                    # only the newest is drawn: a part the result follows at once (the last one) is
                    # drawn once, with the result, not twice (0.1-0.2 s of the app's CPU each)
                    continue
                if parts:
                    self.call_from_thread(self._on_part, parts, _result(fields), run)
                    parts = []
                if progress_seen is not None:
                    self.call_from_thread(self._on_progress, progress_seen, run)
                    progress_seen = None
        except AnalysisStopped:
            if not fields:
                raise
            result = _result(fields)  # what was published before the stop
            result.report.notes.append("the analysis was cancelled: what is shown was done before")
            return result
        finally:
            proc.reap_later()  # its exit takes a second; one that keeps graphs lives on for the paths
        raise AnalysisStopped("the analysis ended without a result")

    def start_early(self, started: TriageProcess | None = None) -> TriageProcess | None:
        """Start the analysing child now, before the app is drawn, so that its imports and reading
        overlap the app's start (``started``: one the caller started already on these paths and
        options). Returns it; the app's first analysis is this one."""
        if self.analyse is None and self._early is None:
            self._early = started if started is not None else TriageProcess(self.paths, self.options)
        return self._early

    def _on_progress(self, p: Progress, run: int = 0) -> None:
        if run != self._run or not self.is_running:
            return  # an analysis replaced by a re-run, or an app closing
        new_stage = self._progress is None or self._progress.stage != p.stage
        if new_stage:
            self._progress_at = time.monotonic()  # when this stage began
        self._progress = p
        if new_stage:  # a new stage shows at once; its share done moves with the status line (_tick)
            self._tick()

    def _show_bar(self) -> None:
        """The progress bar at the current stage's share done. Each change of the screen is an
        update of it (13 ms of the app's CPU for a line or two, and over SSH bytes sent) taken
        from the analysing child: the bar moves with the status line, in the same update, twice
        a second, not at each progress message nor at the 15 frames a second Textual animates an
        indeterminate bar with."""
        p = self._progress
        if p is None:
            return
        bar = self.query_one("#progress", ProgressBar)
        if p.fraction is not None:
            bar.update(total=100, progress=round(p.fraction * 100, 1))
        else:
            if bar.total is not None:
                bar.update(total=None)
            for inner in bar.query("#bar"):
                inner.auto_refresh = None
                inner.refresh()  # the indeterminate bar's next frame

    def _stage_text(self) -> str:
        p = self._progress
        now = time.monotonic()
        if p is None:
            return f"starting · {now - self._started:.0f} s"
        pct = f" {p.fraction * 100:.0f}%" if p.fraction is not None else ""
        text = f" · {p.text}" if p.text else ""
        return f"{p.stage}{pct}{text} · {now - self._progress_at:.0f} s in this stage, {now - self._started:.0f} s in all"

    def _tick(self) -> None:
        """The status line and the waiting panes move every half second while the analysis runs."""
        if not self.running or not self.is_running:
            return
        text = self._stage_text()
        shown = f"{self.status_text()} · " if self.result is not None else ""
        try:
            self.set_status(f"{shown}analysing: {text} · escape cancels")
            self._show_pending(text)
            self._show_bar()
        except NoMatches:
            pass  # a tick as the app closes: its widgets are gone

    def _pending_panes(self) -> list:
        """The panes whose part has not come yet (a part's pane is #PART-pane)."""
        return [self.query_one(f"#{part}-pane") for part in PARTS if part not in self.parts]

    def _show_pending(self, text: str = "") -> None:
        for pane in self._pending_panes():
            pane.show_pending(text)
        if self.result is None or not self.result.findings:
            self.query_one("#findings-pane", FindingsPane).show_pending(text)

    def _on_part(self, parts: list[str], result: TriageResult, run: int = 0) -> None:
        if run != self._run or not self.is_running:
            return
        self.parts.update(parts)
        if "clusters" in parts:  # the requests pane shows the clusters' column
            self.parts.add("requests")
        self.show_result(result, final=False)

    def action_cancel(self) -> None:
        if self.process is not None and self.running:
            self.cancelled = True
            self.process.stop()
            self.notify("analysis cancelled: what is shown was done before", severity="warning")

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "cancel":
            return self.running and self.process is not None  # escape is the panes' otherwise
        if action == "back":
            return bool(self.history)
        return True

    async def action_quit(self) -> None:
        self.stop_analysis()
        self.exit(return_code=0 if self.load_error is None else 3)

    def stop_analysis(self) -> None:
        for proc in (self.process, self._early):
            if proc is not None:
                proc.stop()  # the worker thread sees the end of the child's messages and returns

    def on_unmount(self) -> None:
        self.stop_analysis()  # a child that kept the graphs for the paths ends with the app

    def request_path(self, host: str, tid: int, t0: int, t1: int) -> tuple[PathView | None, str]:
        """The critical path of a request (its thread ``tid`` of ``host`` over [t0, t1]) and, when
        there is none, why. From the analysing child, which keeps the graphs, or from graphs
        here (an analysis run in this process). Called from a worker thread: it may wait."""
        graphs = getattr(self.result, "graphs", None) or {}
        g = graphs.get(host)
        if g is None:
            return None, "no kernel trace for this host: no critical path"
        try:
            if isinstance(g, KeptGraph):
                proc = self.process
                if self.cancelled:
                    return None, "no critical path: the analysis was cancelled (its graphs went with it)"
                if proc is None:
                    return None, "no critical path: the analysis process has ended"
                return proc.path_view(host, tid, t0, t1), ""
            if self._paths is None or self._paths.graphs is not graphs:
                from perftriage.analysis.requests.path_view import PathSource  # noqa: PLC0415

                self._paths = PathSource(graphs)
            return self._paths.path(host, tid, t0, t1)
        except PerftriageError as exc:
            return None, f"no critical path: {exc}"

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name != "triage" or event.worker is not self._worker:
            return
        if not self.is_running:  # the analysis ended as the app closes: its panes may be gone
            return
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self.running = False
            self.refresh_bindings()  # escape no longer cancels: the footer stops offering it
        if event.state == WorkerState.SUCCESS:
            self.query_one("#progress", ProgressBar).remove_class("running")
            self._show_pending_ended()  # the panes whose part never came: what they would need
            if not self.cancelled:
                self.parts.update(PARTS)
            self.show_result(event.worker.result)
        elif event.state == WorkerState.ERROR:
            self.query_one("#progress", ProgressBar).remove_class("running")
            if isinstance(event.worker.error, AnalysisStopped):
                self.set_status("analysis stopped before any result")
                self._show_pending_ended()
                return
            err = event.worker.error
            self.load_error = str(err) if isinstance(err, PerftriageError) else f"{type(err).__name__}: {err}"
            self.set_status(f"error: {self.load_error}")
            for pane in self._pending_panes():  # each says why, not "analysing ..." any more
                pane.show_failed(self.load_error)
            if self.result is None or not self.result.findings:
                self.query_one("#findings-pane", FindingsPane).show_failed(self.load_error)
            self.notify(self.load_error, title="cannot load", severity="error", timeout=10, markup=False)

    def _show_pending_ended(self) -> None:
        for pane in self._pending_panes():
            pane.show_pending(None, cancelled=self.cancelled)
        self.query_one("#findings-pane", FindingsPane).show_pending(None)

    def _is_new(self, part: str, result: TriageResult) -> bool:
        """Whether ``part``'s pane must be drawn for ``result`` (and note that it is)."""
        key = tuple(getattr(result, name) for name in PANE_FIELDS[part])
        old = self._drawn.get(part)
        if old is not None and all(a is b for a, b in zip(old, key)):
            return False
        self._drawn[part] = key
        return True

    def show_result(self, result: TriageResult, final: bool = True) -> None:
        """Show ``result``: a part of it while the analysis runs (``final`` False), or all of it."""
        self.result = result
        self.call_after_refresh(self.refresh_bindings)  # keys that act on the new rows
        requests = result.requests
        note = ""
        if requests is None:
            elsewhere = [where for given, where in ((result.diagnosis is not None, "Call trees (3)"),
                                                    (result.threads is not None, "Threads (4)"),
                                                    (result.counters is not None, "Counters (5)")) if given]
            note = "no requests: no kernel or user-space trace" + (f"; see {', '.join(elsewhere)}" if elsewhere else "")
        elif len(requests) == 0:
            note = ("no requests: no request markers (ust_php/ust_apache, or the --request-start/--request-end "
                    "given) and no kernel trace to cut processes or threads from")
        if requests is None and result.features is not None:
            from perftriage.analysis.requests.features import requests_of_features  # noqa: PLC0415

            requests = requests_of_features(result.features)
            note = ""
        shown = PARTS if final and not self.cancelled else self.parts  # only the parts that came
        if "requests" in shown:
            pane = self.query_one("#requests-pane", RequestsPane)
            if self._is_new("requests", result):
                pane.show_requests(requests, note, result)
            else:
                pane.result = result  # its links (t, h) follow the parts that came since
        for part in ("clusters", "calltrees", "threads", "counters"):
            if part in shown and self._is_new(part, result):
                self.query_one(f"#{part}-pane").show_result(result)
        if result.findings or final:
            self.query_one("#findings-pane", FindingsPane).show_findings(result.findings, result.report.notes)
        if not final:
            self._tick()
            return
        self.set_status(self.status_text())
        if result.requests is None and result.features is None:
            # no trace: start where the results are
            if result.diagnosis is not None:
                self.action_tab("calltrees")
            elif result.threads is not None:
                self.action_tab("threads")
            elif result.counters is not None:
                self.action_tab("counters")
        # the notes in one toast, not one each: six of them covered the list for eight seconds at 80x24
        notes = result.report.notes
        if len(notes) == 1:
            self.notify(notes[0], severity="warning", timeout=8, markup=False)
        elif notes:
            self.notify(f"{count_of(len(notes), 'notes')} on the inputs (how they were read, what was left out): "
                        "the first row of Findings (6) shows them", severity="warning", timeout=6)

    def status_text(self) -> str:
        r = self.result
        if r is None:
            return ""
        parts = [", ".join(os.path.basename(p.rstrip("/")) or p for p in self.paths)]
        if r.summary is not None:
            s = r.summary
            parts.append(f"{s.events:,} events")
            parts.append(f"{len(s.hosts)} host{'s' if len(s.hosts) != 1 else ''}")
        if r.requests is not None:
            parts.append(f"{len(r.requests):,} {unit_noun(r.units)}")
        if r.spans is not None:
            parts.append(count_of(len(r.spans), 'spans'))
        if r.diagnosis is not None and r.diagnosis.ranking:
            top = r.diagnosis.ranking[0]
            parts.append(f"slowest: {top.method_name} on {top.replica_name}")
        parts.append(f"{len(r.findings)} finding{'s' if len(r.findings) != 1 else ''}")
        if any(n.startswith("partial data") for n in r.report.notes):
            parts.append("PARTIAL: trace read stopped early")
        return " · ".join(parts)

    def set_status(self, text: str) -> None:
        """The status line's text. It changes twice a second while an analysis runs: a repaint of
        its one line (its size never changes), not the layout pass ``Static.update`` asks for by
        default, which re-laid and re-rendered the whole screen each time (1.2 s of the app's
        CPU while the 50,000-request trace was read, taken from the analysing child)."""
        status = self.query_one("#status", Static)
        if status.content != text:
            status.update(text, layout=False)

    # -- layout -----------------------------------------------------------------------------

    def on_resize(self, event) -> None:
        self._check_size(event.size.width, event.size.height)

    def _check_size(self, width: int, height: int) -> None:
        small = width < MIN_WIDTH or height < MIN_HEIGHT
        self.screen.set_class(small, "too-small")
        if small:
            self.query_one("#too-small", Static).update(
                f"perftriage needs a terminal of at least {MIN_WIDTH}x{MIN_HEIGHT}; this one is {width}x{height}."
            )

    # -- actions ----------------------------------------------------------------------------

    # -- / on a list (the Requests pane filters its own) --------------------------------------------

    def on_row_table_filter_asked(self, message: RowTable.FilterAsked) -> None:
        box = self.query_one("#list-filter", ListFilter)
        box.target = message.table
        box.value = message.table.filter_text
        box.add_class("visible")
        box.focus()

    def on_input_submitted(self, event) -> None:
        if event.input.id != "list-filter":
            return
        event.stop()
        box = event.input
        box.remove_class("visible")
        if box.target is not None:
            box.target.set_filter(event.value)
            box.target.focus()
            if event.value.strip():
                self.notify(box.target.filter_note() + " (escape shows them all)", timeout=3, markup=False)

    # -- the command palette (^p): the app's commands beside Textual's ----------------------------

    def get_system_commands(self, screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for tab_id, title in TABS:
            name = title.split(" ", 1)[1]
            yield SystemCommand(f"Go to {name}", f"show the {name} pane (key {title[0]})", partial(self.action_tab, tab_id))
        req = self.query_one("#requests-pane", RequestsPane)
        if req.table is not None:
            yield SystemCommand("Next outlier", "the next notable request (n in the Requests pane)",
                                partial(self._in_requests, req.action_next_notable))
            yield SystemCommand("Previous outlier", "the previous notable request (N)",
                                partial(self._in_requests, req.action_prev_notable))
            yield SystemCommand("Filter requests", "keep the requests containing a text (/)",
                                partial(self._in_requests, req.action_filter))
            yield SystemCommand("Sort requests", "outliers first / slowest first / by start time (s)",
                                partial(self._in_requests, req.action_sort))
        if self.result is not None:
            yield SystemCommand("Export findings", "all findings to a Markdown file (e)", self.action_export)
        if self.running:
            yield SystemCommand("Cancel the analysis", "stop it and keep what is shown (escape)", self.action_cancel)
        if self.analyse is None and self.result is not None and self.result.inputs.ctf:
            for units, what in (("markers", "between request markers"), ("processes", "each process's life"),
                                ("threads", "each thread's life")):
                if units != self.options.units:
                    yield SystemCommand(f"Re-run: requests are {units}", f"analyse again, a request being {what}",
                                        partial(self.rerun, units=units))
            # a trace without known markers: its events that look like a request's start and end
            for start, end, n_start, n_end in self.result.marker_candidates:
                yield SystemCommand(f"Re-run: requests between {start} and {end}",
                                    f"analyse again, cutting requests by them ({n_start:,} starts, {n_end:,} ends)",
                                    partial(self.rerun, units="markers",
                                            markers=(MarkerSpec(start, end, kind=marker_kind(start)),)))
            for window in (1.0, 5.0, 10.0, 30.0):
                yield SystemCommand(f"Re-run: thread metrics every {window:g} s",
                                    "analyse again with per-thread metrics from the kernel trace in windows of "
                                    f"{window:g} s", partial(self.rerun, thread_metrics=True, thread_windows=window))

    def _in_requests(self, action: Callable[[], None]) -> None:
        self.action_tab("requests")
        self.call_after_refresh(action)

    def rerun(self, **changes) -> None:
        """Analyse the inputs again with other options (stopping an analysis that runs)."""
        if self.process is not None:
            self.process.close()  # running, or done and keeping the graphs of the run before
        self.options = dataclasses.replace(self.options, **changes)
        self.parts, self.history, self.cancelled, self._drawn = set(), [], False, {}
        self.result, self.load_error, self._progress = None, None, None
        said = ", ".join(f"requests between {v[0].start} and {v[0].end}" if k == "markers" else
                         f"{k.replace('_', ' ')} {v}" for k, v in changes.items()
                         if not (k == "units" and "markers" in changes))  # the markers say it
        self.notify(f"analysing again: {said}", timeout=4, markup=False)
        self._run += 1
        self._start_analysis()
        self.refresh_bindings()

    def _start_analysis(self) -> None:
        """Run analysis number ``self._run`` in a worker thread that reads its child process."""
        self.query_one("#progress", ProgressBar).add_class("running")
        self.running = True
        self._started = self._progress_at = time.monotonic()
        self._show_pending()
        self._worker = self.run_worker(partial(self._load, self._run), thread=True, exclusive=True, name="triage",
                                       exit_on_error=False)

    # -- links between views: one keystroke from a finding to its evidence, escape goes back ----

    def _remember(self) -> None:
        self.call_after_refresh(self.refresh_bindings)  # escape now goes back
        """Where the user is (tab, highlighted row, the requests' cluster filter): ``back`` returns here."""
        tab = self.query_one("#tabs", TabbedContent).active
        focused = self.focused if isinstance(self.focused, RowTable) else None
        req = self.query_one("#requests-pane", RequestsPane)
        self.history.append((tab, focused.id if focused is not None else None,
                             focused.source_row(focused.cursor) if focused is not None else 0, req.cluster_filter))
        del self.history[:-50]

    def action_back(self) -> None:
        if not self.history:
            return
        tab, table_id, cursor, cluster_filter = self.history.pop()
        self.call_after_refresh(self.refresh_bindings)
        req = self.query_one("#requests-pane", RequestsPane)
        if req.cluster_filter != cluster_filter:
            req.show_cluster(cluster_filter, focus=tab == "requests")
        self.action_tab(tab)
        if table_id is not None:
            table = self.query_one(f"#{table_id}", RowTable)
            table.select_source(min(cursor, max(len(table.base_source) - 1, 0)))
            self.call_after_refresh(table.focus)

    def on_clusters_pane_show_cluster(self, message: ClustersPane.ShowCluster) -> None:
        self._remember()
        self.action_tab("requests")
        self.query_one("#requests-pane", RequestsPane).show_cluster(message.cluster)

    def on_requests_pane_open_cluster(self, message: RequestsPane.OpenCluster) -> None:
        self._remember()
        self.action_tab("clusters")
        pane = self.query_one("#clusters-pane", ClustersPane)
        self.call_after_refresh(pane.select_cluster, message.cluster)

    def on_requests_pane_open_threads(self, message: RequestsPane.OpenThreads) -> None:
        self._remember()
        self.action_tab("threads")
        pane = self.query_one("#threads-pane", ThreadsPane)
        self.call_after_refresh(pane.select_thread, message.host, message.tid)

    def on_requests_pane_open_host(self, message: RequestsPane.OpenHost) -> None:
        self._remember()
        self.action_tab("counters")
        pane = self.query_one("#counters-pane", CountersPane)
        self.call_after_refresh(pane.select_server, message.host, None,
                                (message.start / 1e9, message.end / 1e9, "the request"))

    def on_counters_pane_compare_at(self, message: CountersPane.CompareAt) -> None:
        """w on a counters interval: the requests before and after its start (--incident-time),
        from the spans this result holds (in a thread: 0.1 s, the window's requests only); while an
        analysis runs, or with a stand-in analysis, by analysing again."""
        from perftriage.analysis.units import fmt_timestamp  # noqa: PLC0415

        when = fmt_timestamp(int(message.at_s * 1e9))[:19].replace(" ", "T")
        if self.running or self.analyse is not None or getattr(self.result, "spans", None) is None:
            self.rerun(incident_time=when)
            self.action_tab("calltrees")  # where what changed shows when the analysis ends
            return
        self.set_status(f"comparing the requests before and after {when.replace('T', ' ')} UTC")
        self.run_worker(partial(self._change_at, self.result, when, self._run), thread=True, exclusive=True,
                        group="compare", name="compare", exit_on_error=False)

    def _change_at(self, result: TriageResult, when: str, run: int) -> None:
        from perftriage.analysis.triage import change_at  # noqa: PLC0415 (loaded by _warm_up)

        try:
            new, error = change_at(result, when), None
        except PerftriageError as exc:
            new, error = None, str(exc)
        self.call_from_thread(self._changed, new, error, run)

    def _changed(self, new: TriageResult | None, error: str | None, run: int) -> None:
        if run != self._run or not self.is_running or self.running:
            return  # analysed again meanwhile, or closing
        if new is None:
            self.set_status(self.status_text())
            self.notify(error, severity="warning", timeout=6, markup=False)
            return
        self.options = new.options
        self.show_result(new, final=False)  # the call trees' change and the findings: the parts it changed
        self.set_status(self.status_text())
        self._remember()  # escape: back to the interval
        self.action_tab("calltrees")

    def on_findings_pane_open(self, message: FindingsPane.Open) -> None:
        self.open_target(message.finding.target)

    def open_target(self, target: dict) -> bool:
        """Go to what a finding is about; False (and a word why) when it is not there to open."""
        kind = target.get("kind")
        if kind is None:
            self.notify("this finding has nothing to open: its evidence is all shown here", timeout=3)
            return False
        self._remember()
        if kind == "cluster":
            self.action_tab("requests")
            self.query_one("#requests-pane", RequestsPane).show_cluster(int(target["cluster"]))
            return True
        if kind == "clusters":
            self.action_tab("clusters")
            return True
        if kind == "pane":  # a summary of a pane's whole list: the pane (and the part it is about)
            pane = self.query_one(f"#{target['pane']}-pane")
            shown = self.query_one("#tabs", TabbedContent).active == target["pane"]
            self.action_tab(target["pane"])
            if target.get("part") and hasattr(pane, "select_part"):
                if shown:
                    self.call_after_refresh(pane.select_part, target["part"])
                else:  # once the tab is shown: a list of a hidden tab cannot take the focus
                    self._after_tab = (target["pane"], target["part"])
            return True
        # the row of a pane: its tab, and the pane's method that highlights it, with the target's keys
        rows = {"request": ("requests", "select_request", lambda t: (int(t["id"]), t.get("host"))),
                "pair": ("calltrees", "select_pair", lambda t: (t["method"], t.get("replica"))),
                "pod": ("calltrees", "select_pod", lambda t: (t["pod"], t.get("service"))),
                "rule": ("counters", "select_rule", lambda t: (t["counter"],)),
                "threads": ("threads", "select_names", lambda t: (t["level"], list(t["names"]), t.get("within"))),
                "server": ("counters", "select_server",
                           lambda t: (t["server"], t.get("counter"),
                                      (t["from_s"], t["to_s"], "the interval") if "from_s" in t else None)),
                "fleet": ("counters", "select_fleet", lambda t: (t["counter"], (t["from_s"], t["to_s"]))),
                "method": ("calltrees", "select_method", lambda t: (t["method"],)),
                "failing": ("calltrees", "select_failing", lambda t: (t["method"],))}
        if kind not in rows:
            self.history.pop()
            return False
        tab, method, args = rows[kind]
        self.action_tab(tab)
        self.call_after_refresh(getattr(self.query_one(f"#{tab}-pane"), method), *args(target))
        return True

    def action_tab(self, tab_id: str) -> None:
        tabs = self.query_one("#tabs", TabbedContent)
        if tabs.active == tab_id:  # already there: its table takes the keys (no TabActivated comes)
            if not isinstance(self.focused, RowTable):
                tables = tabs.get_pane(tab_id).query(RowTable)
                if tables:
                    tables.first().focus()
            return
        # drop the focus first: a focused widget left in the old pane would switch back to it
        self.set_focus(None)
        tabs.active = tab_id

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """The table of the pane shown takes the keys."""
        pane = event.pane
        tabs = self.query("#tabs")
        if not tabs or pane.id != tabs.first(TabbedContent).active:
            # a late event: of a tab already left (focusing into it would switch back), or of
            # an app that is closing (the analysis ended as the user quit)
            return
        tables = pane.query(RowTable)
        if tables:
            tables.first().focus()
        after, self._after_tab = self._after_tab, None
        if after is not None and after[0] == pane.id:  # a link to a part of this pane (its categories)
            self.call_after_refresh(self.query_one(f"#{pane.id}-pane").select_part, after[1])

    def action_help(self) -> None:
        titles = dict(TABS)
        tab = self.query_one("#tabs", TabbedContent).active
        self.push_screen(HelpScreen(titles.get(tab, "").split(" ", 1)[-1]))

    def action_export(self) -> None:
        if self.result is None:
            self.notify("nothing to export yet: the analyses are still running", severity="warning")
            return
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.push_screen(ExportScreen(f"perftriage-findings-{stamp}.md"), self._export_to)

    def _export_to(self, path: str | None) -> None:
        if not path:
            return
        try:
            atomic_write(path, render(self.result.report, "md"),
                         protect=[str(p) for p in self.result.inputs.ctf])
        except (PerftriageError, OSError) as exc:
            msg = str(exc) if isinstance(exc, PerftriageError) else f"{path}: {exc.strerror or exc}"
            self.notify(msg, title="export failed", severity="error", timeout=10, markup=False)
            return
        self.last_export = path
        self.notify(f"{count_of(len(self.result.findings), 'findings')} written to {path}", title="exported", markup=False)
        self.set_status(f"exported to {path} · " + self.status_text())


def run_app(paths: list[str], options: Options | None = None, early: TriageProcess | None = None) -> int:
    """The app on ``paths``; ``early``: the analysis, already started on them with ``options``."""
    import warnings  # noqa: PLC0415

    app = PerftriageApp(paths, options)
    app.start_early(early)
    with warnings.catch_warnings():
        # the app draws on stderr: a library warning printed there would tear the screen
        warnings.simplefilter("ignore")
        try:
            app.run()
        finally:
            app.stop_analysis()  # whatever ended the app, no analysis outlives it
    return 0 if app.load_error is None else 3
