"""Findings pane: every finding of the run, ranked; the selected one shown as it will export."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from perftriage.analysis.findings import Finding, finding_markdown
from perftriage.analysis.units import count_of
from perftriage.tui.widgets.row_table import IDENTITY, OPTIONAL, TEXT, Column, ListSource, RowTable

from .base import Pending

_SEVERITY_STYLE = {"critical": "alert", "warning": "alert", "info": None}


class FindingsPane(Pending, Vertical):
    TITLE_ID, IDLE, TABLE_ID, EMPTY = "#findings-title", "no findings", "#findings-table", "no findings"
    DEFAULT_CSS = """
    FindingsPane #findings-title { height: 1; color: $text-muted; }
    FindingsPane #findings-table { height: 8; }
    FindingsPane #findings-detail-box { height: 1fr; border-top: solid $panel; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.findings: list[Finding] = []
        self._detail_text = ""  # the Markdown the detail shows

    def compose(self) -> ComposeResult:
        yield Static("no findings yet", id="findings-title")
        yield RowTable(id="findings-table", empty_text="no findings", open_label="open its subject")
        with VerticalScroll(id="findings-detail-box"):
            yield Static("", id="findings-detail")

    def show_findings(self, findings: list[Finding]) -> None:
        self.findings = findings
        rows = [[str(i + 1), f.severity, f.analysis, f.title, f.subject] for i, f in enumerate(findings)]
        styles = [_SEVERITY_STYLE.get(f.severity) for f in findings]
        table = self.query_one("#findings-table", RowTable)
        table.open_label = "open its subject"
        # enter opens a finding that is about something shown elsewhere, not one whose evidence is all here
        table.openable = lambda row: bool(self.findings[row].target.get("kind")) if row < len(self.findings) else False
        cols = [Column("#", "right", 2, 4), Column("severity", "left", 4, 8, priority=IDENTITY),
                Column("analysis", "left", 5, 10, priority=OPTIONAL),
                Column("finding", "left", 10, 60, flex=True, priority=TEXT),
                Column("subject", "left", 10, 80, priority=TEXT)]
        self.query_one("#findings-table", RowTable).set_rows(cols, ListSource(rows, styles))
        self.query_one("#findings-title", Static).update(
            f"{count_of(len(findings), 'findings')}, most severe first · e exports them all to Markdown"
        )
        self._show(0)

    def _show(self, row: int) -> None:
        detail = self.query_one("#findings-detail", Static)
        if not self.findings:
            self._detail_text = ""
            detail.update("")
            return
        text = finding_markdown(self.findings[row], row + 1)
        if text == self._detail_text:  # shown already (each part of the results shows the list again)
            return
        self._detail_text = text
        from rich.markdown import Markdown  # noqa: PLC0415 (markdown-it: 55 ms of the app's start otherwise)

        detail.update(Markdown(text))

    class Open(Message):
        """Open what a finding is about (its ``target``)."""

        def __init__(self, finding: Finding):
            super().__init__()
            self.finding = finding

    def on_row_table_selected(self, event: RowTable.Selected) -> None:
        if event.table.id == "findings-table" and self.findings:
            event.stop()
            self.post_message(self.Open(self.findings[event.row]))

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        self._show(event.row)
