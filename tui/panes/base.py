"""The layout the analysis panes share: a title line and ranked rows above, and below a view of
the highlighted row that ``v`` cycles through. A pane names its views, composes its top part and
renders a view; the view title, the cycling, re-rendering on resize and the view's size live here.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from perftriage.tui.widgets.row_table import RowTable


class Pending:
    """A pane's title line while its analysis runs: "analysing ..." with the stage, then, when
    everything ended without this pane's part, what it would need (IDLE)."""

    TITLE_ID = ""  # the pane's title Static
    IDLE = ""  # its text when the inputs hold nothing for it
    TABLE_ID = ""  # its main RowTable (its empty text follows the title)

    def show_pending(self, text: str | None, cancelled: bool = False) -> None:
        """``text``: the analysis's stage while it runs; None: it ended without this pane's part
        (``cancelled``: it was stopped before this part was ready)."""
        if text is None and not cancelled:
            self.show_idle(self.IDLE)
        else:
            self._idle = ""
            shown = f"analysing … {text}" if text is not None else \
                "not analysed: the analysis was cancelled before this part was ready"
            self.query_one(self.TITLE_ID, Static).update(shown, layout=False)  # one line whatever it says
        if self.TABLE_ID:
            table = self.query_one(self.TABLE_ID, RowTable)
            empty = "analysing …" if text is not None else "cancelled" if cancelled else self.EMPTY
            if table.empty_text != empty:
                table.empty_text = empty
                table.refresh()

    def show_failed(self, error: str) -> None:
        """The inputs could not be loaded: "could not load" instead of "analysing ...", and
        ``error`` (the file and what is wrong with it) whole below the list, in the pane's view."""
        self.show_idle(f"could not load: {error}")
        self.query_one(self.TITLE_ID, Static).update("could not load", layout=False)
        if self.TABLE_ID:
            table = self.query_one(self.TABLE_ID, RowTable)
            table.empty_text = "nothing loaded: the error is below"
            table.refresh()

    EMPTY = "nothing"  # the table's text when it has no rows
    _idle = ""  # why the pane is empty, once its analysis ended without its part

    def show_idle(self, why: str) -> None:
        """The analysis ended without this pane's part: ``why`` ("no thread analysis: it needs
        ..."). A pane with a view says it whole there, its one-line title only the head (at 80
        columns the title cut "... time series (a CSV, `perftriage" mid-sentence)."""
        self._idle = why
        head = why.split(": ", 1)[0] if isinstance(self, ViewPane) else why
        self.query_one(self.TITLE_ID, Static).update(Text(head), layout=False)
        if isinstance(self, ViewPane):
            self.clear_view()


class ViewPane(Pending, Vertical):
    BINDINGS = [Binding("v", "next_view", "view")]
    VIEWS: tuple[str, ...] = ()

    DEFAULT_CSS = """
    ViewPane .pane-title { height: 1; color: $text-muted; }
    ViewPane .view-title { height: 1; background: $boost; }
    ViewPane .view-box { height: 1fr; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.view = 0

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static("", classes="view-title")
        with VerticalScroll(classes="view-box"):
            yield Static("", classes="view-body", markup=False)

    def compose_top(self) -> ComposeResult:  # the title and table(s)
        yield from ()

    # -- the view ---------------------------------------------------------------------------------

    @property
    def view_title(self) -> Static:
        return self.query_one(".view-title", Static)

    @property
    def view_body(self) -> Static:
        return self.query_one(".view-body", Static)

    @property
    def view_name(self) -> str:
        return self.VIEWS[self.view]

    def view_size(self) -> tuple[int, int]:
        """(width, height) in cells for a chart in the view: as tall as the view's box, less a
        line for the legend below the chart (at least 8: a short terminal scrolls the view)."""
        width = max(40, (self.size.width or 80) - 2)
        height = max(8, (self.query_one(".view-box").size.height or 10) - 2)
        return width, height

    def show_view_title(self, what: str = "") -> None:
        # ``what`` names a method, a counter, a thread: its "[...]" is text, not markup
        self.view_title.update(" · ".join(f"[b]{v}[/b]" if i == self.view else v for i, v in enumerate(self.VIEWS))
                               + (f"  —  {escape(what)}" if what else ""))

    def clear_view(self) -> None:
        """Nothing to view: blank, or why the pane is empty (``show_idle``)."""
        self.view_title.update("")
        idle = self._idle[:1].upper() + self._idle[1:]
        # as text, not markup: an error may quote a file's "[...]"
        self.view_body.update(Text(idle + ("" if idle.endswith(".") else ".")) if idle else "")

    def has_view(self) -> bool:
        """Whether there is something to view (v is offered only then)."""
        return True

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "next_view":
            return self.has_view()
        return True

    def action_next_view(self) -> None:
        self.view = (self.view + 1) % len(self.VIEWS)
        self.render_view()

    #: on a short terminal the table above the view gives up rows, from its CSS max-height down
    #: to TABLE_MIN, so that the view keeps VIEW_MIN lines: a chart's 8 rows and its legend on
    #: screen at 80x24, not below the fold
    TABLE_MIN = 4
    VIEW_MIN = 10
    _table_rows: int | None = None  # the table's CSS max-height, read before it is overridden

    def on_resize(self, event) -> None:
        tables = self.query(RowTable)
        if tables and event.size.height:
            table = tables.first()
            if self._table_rows is None:
                css = table.styles.max_height
                self._table_rows = int(css.value) if css is not None else 12
            # the pane's own lines: its title and the view's title
            room = event.size.height - 2 - self.VIEW_MIN
            table.styles.max_height = max(self.TABLE_MIN, min(self._table_rows, room))
        self.render_view()

    def render_view(self) -> None:  # subclasses draw the highlighted row's view
        pass
