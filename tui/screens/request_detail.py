"""One request in full: times, thread, marker fields, and its critical path (every thread on it,
a stacked bar of its states, the list of segments)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from perftriage.analysis.requests.states import STATES
from perftriage.analysis.units import fmt_duration, fmt_when
from perftriage.tui.widgets.path_breakdown import PathBreakdown, state_key
from perftriage.tui.widgets.row_table import Column, ListSource, RowTable

if TYPE_CHECKING:
    from perftriage.analysis.requests.path_view import PathView
    from perftriage.analysis.requests.table import RequestTable


def request_lines(table: RequestTable, i: int) -> list[tuple[str, str]]:
    kind = str(table.kind[i])
    if kind in ("thread", "process") or kind.startswith("syscall:"):  # a unit cut from the trace, not a request
        name, _, call = kind.partition(":")  # syscall:read: a syscall, read
        first = (name, f"{call} #{table.id[i]}" if call else f"#{table.id[i]}")
    else:
        first = ("request", f"{kind} #{table.id[i]}")
    rows = [
        first,
        ("host", str(table.host[i])),
        ("pid / tid", f"{table.pid[i]} / {table.tid[i]}"),
        ("start", fmt_when(table.start[i], digits=9)),
        ("end", fmt_when(table.end[i], digits=9)),
        ("duration", f"{fmt_duration(table.duration[i])} ({int(table.duration[i]):,} ns)"),
    ]
    rows += [(name, str(col[i])) for name, col in table.fields.items()]
    return rows


def segment_rows(view: PathView) -> list[list[str]]:
    s = view.segments
    rows = []
    for i, (a, b, st, via) in enumerate(zip(s.start.tolist(), s.end.tolist(), s.state.tolist(), s.via.tolist())):
        rows.append([view.label_of(i), f"+{fmt_duration(a - view.t0)}", fmt_duration(b - a), STATES[st],
                     "" if via < 0 else f"waits for {via}"])
    return rows


class RequestDetailScreen(ModalScreen):
    BINDINGS = [Binding("escape,q", "dismiss", "close")]
    DEFAULT_CSS = """
    RequestDetailScreen { align: center middle; }
    RequestDetailScreen > Vertical { width: 96%; height: 94%; border: round $accent; background: $surface;
        padding: 0 1; }
    RequestDetailScreen #request-detail-top { height: 1fr; }
    RequestDetailScreen #request-segments { height: 1fr; }
    """

    def __init__(self, table: RequestTable, row: int):
        super().__init__()
        self.table = table
        self.row = row
        self.view: PathView | None = None

    def compose(self) -> ComposeResult:
        lines = request_lines(self.table, self.row)
        width = max(len(k) for k, _ in lines)
        text = "\n".join(f"[b]{k:<{width}}[/b]  {escape(str(v))}" for k, v in lines)  # a uri's "[...]" as text
        with Vertical():
            with VerticalScroll(id="request-detail-top"):
                yield Static(text, id="request-detail-text", markup=True)
                yield PathBreakdown(max_threads=None, id="request-detail-path")
                yield Static(state_key(), id="request-detail-key")
            yield RowTable(id="request-segments", empty_text="computing the critical path…")
            yield Static("[dim]escape closes · j/k move in the segment list[/dim]")

    def on_mount(self) -> None:
        self._load()

    @work(thread=True, exclusive=True)
    def _load(self) -> None:
        t, i = self.table, self.row
        view, why = self.app.request_path(str(t.host[i]), int(t.tid[i]), int(t.start[i]), int(t.end[i]))
        self.app.call_from_thread(self._show, view, why)

    def _show(self, view: PathView | None, why: str = "") -> None:
        self.view = view
        self.query_one(PathBreakdown).show_view(view, why)
        if view is None:  # why there is none, where the segments would be
            table = self.query_one("#request-segments", RowTable)
            table.empty_text = why or "no critical path"
            table.refresh()
            return
        cols = [Column("thread", "left", 6, 24), Column("at", "right", 6, 10), Column("for", "right", 6, 10),
                Column("state", "left", 2, 5), Column("via", "left", 4, 30, flex=True)]
        table = self.query_one("#request-segments", RowTable)
        table.set_rows(cols, ListSource(segment_rows(view)))
        table.focus()
        self.query_one("#request-detail-key", Static).update(Text("") + state_key())
