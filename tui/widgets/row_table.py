"""A virtual table for very long lists (hundreds of thousands of rows).

Textual's DataTable measures every cell and freezes the app at ~50,000 rows; this widget
renders only the lines on screen (the Line API: ScrollView + render_line), takes its cells
from a :class:`RowSource` on demand, and sizes its columns from the header and a sample of rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rich.segment import Segment
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from perftriage.analysis.units import count_of


@dataclass
class Column:
    title: str
    align: str = "left"  # or "right"
    min_width: int = 3
    max_width: int = 60
    flex: bool = False  # takes the remaining width
    keep_end: bool = False  # truncate on the left ("…/dir/script.php"), for paths and uris
    # when the terminal is narrow: IDENTITY columns (id, cluster, method, server, rule) are cut
    # last, and in the middle (``elide_middle``: their two ends tell rows apart); TEXT (free text:
    # uri, query, why) is cut first; OPTIONAL columns are left out (the detail view shows them whole)
    priority: int = 1


IDENTITY, NORMAL, TEXT, OPTIONAL = 0, 1, 2, 3

#: cells that say nothing: a column holding only these is left out when the width is short
EMPTY_CELLS = frozenset(("", "-", "\u2014", "\u2013", "n/a"))

_SEPARATORS = "/.:-_ #@"


def elide_middle(text: str, width: int) -> str:
    """``text`` cut to ``width`` in the middle: its head, "…", and its tail from a separator where
    one is near ("productcatalogse…/ListProducts", "frontend-5…-t2dbm"), for names whose rows share
    a prefix and differ at the end (a service's methods, a deployment's pods, numbered ids)."""
    if len(text) <= width:
        return text
    if width <= 2:
        return text[:width - 1] + "…" if width == 2 else "…"[:width]
    keep = width - 1
    head_min = max(1, keep * 2 // 5)
    tail_max = keep - head_min
    tail = text[len(text) - tail_max:]
    cut = next((i for i, ch in enumerate(tail) if ch in _SEPARATORS), None)
    if cut is not None and len(tail) - cut >= 2:
        tail = tail[cut:]  # from the separator on: the last whole name(s) that fit
    else:
        tail = text[len(text) - keep // 2:]
    return text[:keep - len(tail)] + "…" + tail


class RowSource(Protocol):
    def __len__(self) -> int: ...

    def cells(self, row: int) -> list[str]: ...


class FilteredSource:
    """The rows of ``base`` whose cells contain a text (case-insensitive), in order."""

    def __init__(self, base: RowSource, text: str):
        self.base = base
        needle = text.lower()
        self.rows = [i for i in range(len(base)) if needle in "\t".join(base.cells(i)).lower()]

    def __len__(self) -> int:
        return len(self.rows)

    def cells(self, row: int) -> list[str]:
        return self.base.cells(self.rows[row])

    def row_style(self, row: int) -> str | None:
        style = getattr(self.base, "row_style", None)
        return style(self.rows[row]) if style else None


class ListSource:
    """Rows given as a list of lists of strings (small tables)."""

    def __init__(self, rows: list[list[str]], styles: list[str | None] | None = None):
        self.rows = rows
        self.styles = styles

    def __len__(self) -> int:
        return len(self.rows)

    def cells(self, row: int) -> list[str]:
        return self.rows[row]

    def row_style(self, row: int) -> str | None:
        return self.styles[row] if self.styles else None


WIDTH_SAMPLE = 400


class RowTable(ScrollView, can_focus=True):
    """Header line + rows; a cursor row; ``Highlighted`` when it moves, ``Selected`` on enter."""

    COMPONENT_CLASSES = {
        "row-table--header",
        "row-table--cursor",
        "row-table--cursor-blurred",
        "row-table--alert",
        "row-table--muted",
        "row-table--empty",
    }

    DEFAULT_CSS = """
    RowTable {
        height: 1fr;
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
    }
    RowTable > .row-table--header { text-style: bold; background: $panel; color: $text; }
    RowTable > .row-table--cursor { background: $accent; color: $text; text-style: bold; }
    RowTable > .row-table--cursor-blurred { background: $panel-lighten-2; }
    RowTable > .row-table--alert { color: $error; }
    RowTable > .row-table--muted { color: $text-muted; }
    RowTable > .row-table--empty { color: $text-muted; text-style: italic; }
    """

    BINDINGS = [
        Binding("j,down", "cursor_down", "down", show=False),
        Binding("k,up", "cursor_up", "up", show=False),
        Binding("g,home", "first", "first", show=False),
        Binding("G,end", "last", "last", show=False),
        Binding("pagedown,ctrl+d,space", "page_down", "page down", show=False),
        Binding("pageup,ctrl+u", "page_up", "page up", show=False),
        Binding("enter", "select", "open", show=True),
        Binding("slash", "filter_rows", "filter"),
        Binding("escape", "clear_row_filter", "all rows", show=False),
        Binding("n", "next_match(1)", "next match", show=False),
        Binding("N", "next_match(-1)", "previous match", show=False),
    ]

    cursor = reactive(0, always_update=True)

    class Highlighted(Message):
        def __init__(self, table: "RowTable", row: int):
            super().__init__()
            self.table = table
            self.row = row

        @property
        def control(self):
            return self.table

    class Selected(Message):
        def __init__(self, table: "RowTable", row: int):
            super().__init__()
            self.table = table
            self.row = row

        @property
        def control(self):
            return self.table

    def __init__(self, columns: list[Column] | None = None, source: RowSource | None = None,
                 empty_text: str = "nothing to show", open_label: str | None = "open", filterable: bool = True,
                 **kwargs):
        """``open_label``: what enter does to a row, in the footer (None: enter does nothing here).
        ``filterable``: / keeps the rows containing a text (the Requests pane filters its own)."""
        super().__init__(**kwargs)
        self.open_label = open_label
        # which rows enter opens (a source row -> bool); None: every row. The footer offers enter
        # only on a row it opens
        self.openable = None
        self.filterable = filterable
        self.filter_text = ""
        self.base_source: RowSource = source or ListSource([])
        self.columns: list[Column] = columns or []
        self.source: RowSource = source or ListSource([])
        self.empty_text = empty_text
        self._widths: list[int] = []

    # -- data -------------------------------------------------------------------------------

    class FilterAsked(Message):
        """/ on a list: the app asks for the text."""

        def __init__(self, table: "RowTable"):
            super().__init__()
            self.table = table

    def set_rows(self, columns: list[Column], source: RowSource, keep_cursor: bool = False) -> None:
        self.base_source = source
        if self.filter_text:  # the user's filter holds across new data
            source = FilteredSource(source, self.filter_text)
        self.columns = columns
        self.source = source
        self.refresh_bindings()  # enter opens something only when there are rows
        self._widths = []
        n = len(source)
        self.virtual_size = Size(self.size.width or 80, n + 1)
        if not keep_cursor:
            self.scroll_to(y=0, animate=False)
            self.cursor = 0
        else:
            self.cursor = min(self.cursor, max(0, n - 1))
        self.refresh()

    @property
    def row_count(self) -> int:
        return len(self.source)

    # -- filter -----------------------------------------------------------------------------------

    def set_filter(self, text: str) -> None:
        """Show only the rows containing ``text`` ("" shows them all); the highlighted row stays
        highlighted when it is among them."""
        keep = self.source_row(self.cursor) if len(self.source) else None
        self.filter_text = text.strip()
        self.set_rows(self.columns, self.base_source)
        if keep is not None:
            self.select_source(keep, clear=False)

    def source_row(self, row: int) -> int:
        """The row of the data (``base_source``) shown at ``row``."""
        return self.source.rows[row] if isinstance(self.source, FilteredSource) else row

    def focus_row(self, row: int | None) -> bool:
        """A link's landing: highlight data row ``row`` (leaving a filter that hides it) and take
        the keys; False (nothing changed) when there is no such row (None)."""
        if row is None:
            return False
        self.select_source(row)
        self.focus()
        return True

    def select_source(self, row: int, clear: bool = True) -> bool:
        """Highlight data row ``row``, leaving the filter when it hides it (``clear``)."""
        if isinstance(self.source, FilteredSource):
            if row in self.source.rows:
                self.cursor = self.source.rows.index(row)
                return True
            if not clear:
                return False
            self.filter_text = ""
            self.set_rows(self.columns, self.base_source)
        self.cursor = row
        return True

    def filter_note(self) -> str:
        return (f"/{self.filter_text}: {len(self.source):,} of {count_of(len(self.base_source), 'rows')}"
                if self.filter_text else "")

    def action_filter_rows(self) -> None:
        self.post_message(self.FilterAsked(self))

    def action_clear_row_filter(self) -> None:
        self.set_filter("")

    def action_next_match(self, step: int) -> None:
        """n / N with a filter: the next / previous match, round at the ends (as less does)."""
        if len(self.source):
            self.cursor = (self.cursor + step) % len(self.source)

    def _compute_widths(self, total: int) -> list[int]:
        n = len(self.source)
        sample = range(min(n, WIDTH_SAMPLE))
        widths, wanted = [], []  # wanted: the widest cell of each column (and its title)
        rows = [self.source.cells(i) for i in sample]
        for c_i, col in enumerate(self.columns):
            w = len(col.title)
            for r in rows:
                if c_i < len(r):
                    w = max(w, len(r[c_i]))
            wanted.append(w)
            widths.append(max(col.min_width, min(col.max_width, w)))
        # fit: cut free text first (other than the flex column), then the other columns, identity
        # ones last of all (each time the widest of the kind); then leave out optional columns cut
        # below a useful width; the flex column takes what is left
        natural = list(widths)
        if sum(widths) + len(widths) - 1 > total:  # short of width: a column that says nothing goes first
            for k in range(len(widths)):
                if k and rows and all(k >= len(r) or r[k].strip() in EMPTY_CELLS for r in rows):
                    widths[k] = 0

        def used() -> int:
            shown = [w for w in widths if w > 0]
            return sum(shown) + max(0, len(shown) - 1)

        for tier in (TEXT, NORMAL, IDENTITY):
            while used() > total:
                cut = [k for k in range(len(widths))
                       if min(self.columns[k].priority, TEXT) == tier and widths[k] > self.columns[k].min_width]
                if not cut:
                    break
                widths[max(cut, key=lambda k: (not self.columns[k].flex, widths[k]))] -= 1
            if tier == TEXT:  # optional columns cut below a useful width are left out before the others shrink
                for k, col in enumerate(self.columns):
                    if col.priority == OPTIONAL and widths[k] < min(natural[k], 12):
                        widths[k] = 0
        spare = total - used()
        flex = [i for i, c in enumerate(self.columns) if c.flex and widths[i] > 0]
        # room to spare: the flex column up to its widest cell; then the columns their cap cut (a
        # request's why: "BN 15.1 s (normally none), BS 1.2 s ..."), identity first, up to their
        # widest cell; what is left to the flex column
        order = flex[-1:] + sorted((k for k in range(len(widths)) if not self.columns[k].flex),
                                   key=lambda k: self.columns[k].priority)
        for k in order:
            if spare <= 0:
                break
            if widths[k] > 0 and wanted[k] > widths[k]:
                add = min(spare, wanted[k] - widths[k])
                widths[k] += add
                spare -= add
        if spare > 0 and flex:
            widths[flex[-1]] += spare
        return widths

    # -- rendering --------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        self._widths = []
        self.virtual_size = Size(event.size.width, len(self.source) + 1)

    def _format(self, cells: list[str], widths: list[int]) -> str:
        parts = []
        for i, w in enumerate(widths):
            if w <= 0:
                continue  # left out: no room
            text = cells[i] if i < len(cells) else ""
            text = text.replace("\n", " ")
            if len(text) > w:
                if w <= 0:
                    text = ""
                elif self.columns[i].keep_end:
                    text = "…" + text[len(text) - w + 1:] if w > 1 else "…"
                elif self.columns[i].priority == IDENTITY:
                    text = elide_middle(text, w)
                else:
                    text = text[: w - 1] + "…"
            parts.append(text.rjust(w) if self.columns[i].align == "right" else text.ljust(w))
        return " ".join(parts)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if not self._widths:
            self._widths = self._compute_widths(width - 1)
        widths = self._widths
        if y == 0:
            style = self.get_component_rich_style("row-table--header")
            text = self._format([c.title for c in self.columns], widths)
            note = self.filter_note()
            if note:  # the match count, over the end of the header
                note = f" {note} "
                text = text.ljust(width)[: max(0, width - len(note))] + note
            return Strip([Segment(text.ljust(width)[:width], style)])
        scroll_y = round(self.scroll_offset.y)
        row = scroll_y + y - 1
        n = len(self.source)
        base = self.rich_style
        if n == 0 and y == 1:
            style = self.get_component_rich_style("row-table--empty")
            return Strip([Segment(f" {self.empty_text}".ljust(width)[:width], style)])
        if row >= n or row < 0:
            return Strip([Segment(" " * width, base)])
        text = self._format(self.source.cells(row), widths)
        style = base
        row_style = getattr(self.source, "row_style", None)
        name = row_style(row) if row_style else None
        if name:
            style = base + self.get_component_rich_style(f"row-table--{name}")
        if row == self.cursor:
            cls = "row-table--cursor" if self.has_focus else "row-table--cursor-blurred"
            style = style + self.get_component_rich_style(cls)
        return Strip([Segment(text.ljust(width)[:width], style)])

    # -- cursor -----------------------------------------------------------------------------

    @property
    def _page(self) -> int:
        return max(1, self.size.height - 2)

    def validate_cursor(self, value: int) -> int:
        n = len(self.source)
        return 0 if n == 0 else max(0, min(n - 1, value))

    def watch_cursor(self, old: int, new: int) -> None:
        visible = max(1, self.size.height - 1)
        top = round(self.scroll_offset.y)
        if new < top:
            self.scroll_to(y=new, animate=False)
        elif new >= top + visible:
            self.scroll_to(y=new - visible + 1, animate=False)
        self.refresh()
        if len(self.source):
            if self.openable is not None and old != new and self._opens(old) != self._opens(new):
                self.refresh_bindings()  # enter opens one row and not the other: the footer follows
            self.post_message(self.Highlighted(self, self.source_row(new)))

    def _opens(self, row: int) -> bool:
        if not 0 <= row < len(self.source):
            return False
        return self.openable is None or bool(self.openable(self.source_row(row)))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def action_cursor_down(self) -> None:
        self.cursor += 1

    def action_cursor_up(self) -> None:
        self.cursor -= 1

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = len(self.source) - 1

    def action_page_down(self) -> None:
        self.cursor += self._page

    def action_page_up(self) -> None:
        self.cursor -= self._page

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "select":
            return self.open_label is not None and self._opens(self.cursor)
        if action == "filter_rows":
            return self.filterable and len(self.base_source) > 0
        if action in ("clear_row_filter", "next_match"):
            return bool(self.filter_text) and self.filterable
        return True

    def action_select(self) -> None:
        if self.open_label is not None and self._opens(self.cursor):
            self.post_message(self.Selected(self, self.source_row(self.cursor)))

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            row = round(self.scroll_offset.y) + event.y - 1
            if 0 <= row < len(self.source):
                if row == self.cursor and event.chain >= 2:
                    self.action_select()
                self.cursor = row

