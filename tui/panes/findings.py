"""Findings pane: every finding of the run, ranked; the selected one shown as it will export."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from perftriage.analysis.findings import Finding, finding_markdown, notes_markdown
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
        self.notes: list[str] = []  # the run's notes on its inputs: the list's first row when there are some
        self._detail_text = ""  # the Markdown the detail shows

    def compose(self) -> ComposeResult:
        yield Static("no findings yet", id="findings-title", markup=False)
        yield RowTable(id="findings-table", empty_text="no findings", open_label="open its subject")
        with VerticalScroll(id="findings-detail-box"):
            yield Static("", id="findings-detail")

    def show_findings(self, findings: list[Finding], notes: list[str] = ()) -> None:
        """The findings, ranked; above them, when the run has notes on its inputs (how they
        were read, what was left out), one row that shows them all."""
        self.findings, self.notes = findings, list(notes)
        lead = self._lead
        rows = [[str(i + 1), f.severity, f.analysis, f.title, f.subject] for i, f in enumerate(findings)]
        styles = [_SEVERITY_STYLE.get(f.severity) for f in findings]
        if lead:
            rows.insert(0, ["", "note", "inputs", f"{count_of(len(self.notes), 'notes')} on the inputs: how they were "
                                                  "read, what was left out", ""])
            styles.insert(0, None)
        table = self.query_one("#findings-table", RowTable)
        table.open_label = "open its subject"
        # enter opens a finding that is about something shown elsewhere, not one whose evidence is all here
        table.openable = lambda row: (row >= lead and row - lead < len(self.findings)
                                      and bool(self.findings[row - lead].target.get("kind")))
        cols = [Column("#", "right", 2, 4), Column("severity", "left", 4, 8, priority=IDENTITY),
                Column("analysis", "left", 5, 10, priority=OPTIONAL),
                Column("finding", "left", 10, 60, flex=True, priority=TEXT),
                Column("subject", "left", 10, 80, priority=TEXT)]
        table.set_rows(cols, ListSource(rows, styles))
        if lead and findings and not table.filter_text:
            table.cursor = lead  # on the first finding, the notes' row above it
        self.query_one("#findings-title", Static).update(
            f"{count_of(len(findings), 'findings')}, most severe first · e exports them all to Markdown"
        )
        self._show(table.source_row(table.cursor) if table.row_count else 0)

    def show_failed(self, error: str) -> None:
        """Nothing could be loaded: no findings, and the error whole in the detail below."""
        from rich.text import Text  # noqa: PLC0415

        super().show_failed(error)
        self._detail_text = ""
        self.query_one("#findings-detail", Static).update(Text(f"Could not load: {error}"))

    @property
    def _lead(self) -> int:
        """Rows above the findings: the notes' row, when the run has notes."""
        return 1 if self.notes else 0

    def row_of(self, k: int) -> int:
        """The list's row of finding ``k`` (after the notes' row, when there is one)."""
        return k + self._lead

    def finding_at(self, row: int) -> Finding | None:
        """The finding on a row of the list (None: the notes' row)."""
        k = row - self._lead
        return self.findings[k] if 0 <= k < len(self.findings) else None

    def _show(self, row: int) -> None:
        detail = self.query_one("#findings-detail", Static)
        k = row - self._lead
        if k == -1:
            text = "\n".join(["### Notes on the inputs", ""] + notes_markdown(self.notes))
        elif 0 <= k < len(self.findings):
            text = finding_markdown(self.findings[k], k + 1)
        else:
            self._detail_text = ""
            detail.update("")
            return
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
        if event.table.id == "findings-table" and self.finding_at(event.row) is not None:
            event.stop()
            self.post_message(self.Open(self.finding_at(event.row)))

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        self._show(event.row)
