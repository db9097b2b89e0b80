"""One request in full: times, thread, every marker field."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from analysis.requests import RequestTable
from analysis.units import fmt_duration, fmt_timestamp


def request_lines(table: RequestTable, i: int) -> list[tuple[str, str]]:
    rows = [
        ("request", f"{table.kind[i]} #{table.id[i]}"),
        ("host", str(table.host[i])),
        ("pid / tid", f"{table.pid[i]} / {table.tid[i]}"),
        ("start", fmt_timestamp(table.start[i]) + " UTC"),
        ("end", fmt_timestamp(table.end[i]) + " UTC"),
        ("duration", f"{fmt_duration(table.duration[i])} ({int(table.duration[i]):,} ns)"),
    ]
    rows += [(name, str(col[i])) for name, col in table.fields.items()]
    return rows


class RequestDetailScreen(ModalScreen):
    BINDINGS = [Binding("escape,q", "dismiss", "close")]
    DEFAULT_CSS = """
    RequestDetailScreen { align: center middle; }
    RequestDetailScreen > VerticalScroll { width: 90%; max-width: 120; height: 80%; border: round $accent;
        background: $surface; padding: 0 1; }
    """

    def __init__(self, table: RequestTable, row: int):
        super().__init__()
        self.table = table
        self.row = row

    def compose(self) -> ComposeResult:
        lines = request_lines(self.table, self.row)
        width = max(len(k) for k, _ in lines)
        text = "\n".join(f"[b]{k:<{width}}[/b]  {v}" for k, v in lines)
        with VerticalScroll():
            yield Static(text, id="request-detail-text", markup=True)
            yield Static("\n[dim]escape closes[/dim]")
