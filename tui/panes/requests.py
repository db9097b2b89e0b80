"""Requests pane: every request, outliers first; the critical path of the highlighted one below.

Keys: / filter, s sort (outliers first / slowest first / start time), n / N next / previous
notable request (an outlier when the outlier analysis ran, else slower than the 95th
percentile), enter for the full detail. The cluster column and the "why" column come from the
outlier analysis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static

from perftriage.analysis.requests.params import unit_noun
from perftriage.analysis.units import count_of, fmt_clock, fmt_duration, fmt_when
from perftriage.tui.lazy import np
from perftriage.tui.widgets.path_breakdown import PathBreakdown
from perftriage.tui.widgets.row_table import IDENTITY, OPTIONAL, TEXT, Column, RowTable

from .base import Pending

if TYPE_CHECKING:
    from perftriage.analysis.requests.table import RequestTable

LABEL_FIELDS = ("method", "uri", "path", "querystring", "status", "comm")


class RequestRows:
    """Cells of the visible (filtered, sorted) requests, made only for the lines on screen."""

    def __init__(self, table: RequestTable, index: np.ndarray, extra: list[str], notable: np.ndarray,
                 cluster: np.ndarray | None = None, why: list[str] | None = None):
        self.table = table
        self.index = index
        self.extra = extra
        self.duration = table.duration
        self.notable = notable
        self.cluster = cluster
        self.why = why

    def __len__(self) -> int:
        return len(self.index)

    def cells(self, row: int) -> list[str]:
        t = self.table
        i = self.index[row]
        out = [str(t.id[i]), fmt_duration(self.duration[i])]
        if self.cluster is not None:
            c = int(self.cluster[i])
            out += [f"c{c + 1}" if c >= 0 else "", self.why[i] if self.why is not None else ""]
        out += [
            str(t.host[i]),
            f"{t.tid[i]}",
            fmt_clock(t.start[i])[:15] if t.start[i] >= 0 else "",
            str(t.kind[i]),
        ]
        out += [str(t.fields[f][i]) for f in self.extra]
        return out

    def row_style(self, row: int) -> str | None:
        return "alert" if self.notable[self.index[row]] else None


class RequestsPane(Pending, Vertical):
    TITLE_ID, IDLE, TABLE_ID, EMPTY = ("#requests-title", "no requests in the loaded inputs", "#requests-table",
                                       "no requests in the loaded inputs")
    BINDINGS = [
        Binding("slash", "filter", "filter"),
        Binding("s", "sort", "sort"),
        Binding("n", "next_notable", "next"),
        Binding("N", "prev_notable", "prev slow", show=False),
        Binding("escape", "clear_filter", "clear filter", show=False),
        Binding("c", "its_cluster", "cluster"),
        Binding("t", "its_threads", "threads"),
        Binding("h", "its_host", "host"),
    ]

    DEFAULT_CSS = """
    RequestsPane #requests-title { height: 1; color: $text-muted; }
    RequestsPane #requests-filter { display: none; height: 3; }
    RequestsPane #requests-filter.visible { display: block; }
    RequestsPane #requests-detail { height: auto; max-height: 2; color: $text; background: $boost; }
    RequestsPane #requests-path { height: auto; max-height: 8; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.table: RequestTable | None = None
        self.result = None
        # arrays once requests are shown (no numpy before the first screen: tui/lazy.py)
        self.order = ()  # display order of table rows (sorted)
        self.index = ()  # table rows shown (filtered), in display order
        self.sort_by = "duration"
        self.filter_text = ""
        self.cluster_filter: int | None = None
        self.cluster: np.ndarray | None = None
        self.why: list[str] | None = None
        self.notable = ()  # per table row: shown in the alert colour (an outlier, or among the slowest)
        self._search: np.ndarray | None = None
        self._extra: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static("no requests loaded", id="requests-title", markup=False)
        yield RowTable(id="requests-table", empty_text="no requests in the loaded inputs", filterable=False)
        yield Input(placeholder="filter (text in uri, method, host, kind, tid, id); enter applies, escape clears",
                    id="requests-filter")
        yield Static("", id="requests-detail", markup=False)
        yield PathBreakdown(id="requests-path")

    def show_failed(self, error: str) -> None:
        """Nothing could be loaded: the error whole below the list, where a request's path goes."""
        self.show_requests(None, "could not load")
        self.row_table.empty_text = "nothing loaded: the error is below"
        self.query_one(PathBreakdown).show_view(None, f"Could not load: {error}")

    @property
    def row_table(self) -> RowTable:
        return self.query_one("#requests-table", RowTable)

    def show_requests(self, table: RequestTable | None, note: str = "", result=None) -> None:
        from perftriage.analysis.requests.table import RequestTable, notable_mask  # noqa: PLC0415

        self.result = result
        if table is None or len(table) == 0:
            self.table = None
            self.index = np.empty(0, np.int64)
            self.query_one("#requests-title", Static).update(Text(note or "no requests in the loaded inputs"))
            self.row_table.empty_text = note or "no requests in the loaded inputs"
            self.row_table.set_rows(self._columns([]), RequestRows(RequestTable.empty(), self.index, [], self.notable))
            self.query_one(PathBreakdown).show_view(None, "")
            return
        self.table = table
        outliers = getattr(result, "outliers", None)
        self.notable = notable_mask(table, outliers)
        ra = getattr(result, "analysis", None)
        if ra is not None and outliers is not None:
            self.cluster = result.cluster_labels
            self.why = result.why_short
            self.sort_by = "outliers"
        else:
            self.cluster = self.why = None
            if self.sort_by == "outliers":
                self.sort_by = "duration"
        self.cluster_filter = None
        self._search = None
        self._extra = [f for f in LABEL_FIELDS if f in table.fields] + [
            f for f in table.fields if f not in LABEL_FIELDS
        ]
        self._sort()
        self._apply_filter(self.filter_text)

    SORTS = ("outliers", "duration", "start")

    def _sort(self) -> None:
        t = self.table
        if self.sort_by == "outliers":
            self.order = np.lexsort((t.start, -t.duration, ~self.notable))
        elif self.sort_by == "duration":
            self.order = np.lexsort((t.start, -t.duration))
        else:
            self.order = np.argsort(t.start, kind="stable")

    def _columns(self, extra: list[str]) -> list[Column]:
        # at 80 columns: the identity (id, cluster, host, method) is never cut, the uri takes what
        # is left, the other free text is left out (the detail below shows it whole)
        cols = [Column("id", "right", 2, 8, priority=IDENTITY), Column("duration", "right", 6, 10)]
        if self.cluster is not None:
            cols += [Column("cl", "left", 2, 3, priority=IDENTITY), Column("why", "left", 12, 28)]
        cols += [
            Column("host", "left", 4, 16, priority=IDENTITY),
            Column("tid", "right", 3, 8),
            Column("start", "left", 8, 15, priority=OPTIONAL),
            Column("kind", "left", 3, 8, priority=OPTIONAL),
        ]
        said = [f for f in ("uri", "path") if f in extra and self._has_values(f)]
        flex = said[0] if said else next((f for f in ("uri", "path") if f in extra), extra[-1] if extra else None)
        for f in extra:
            cols.append(Column(f, "left", 12 if f == flex else 3, 60, flex=(f == flex), keep_end=f in ("uri", "path", "url"),
                               priority=IDENTITY if f in ("method", "status") else TEXT if f == flex else OPTIONAL))
        return cols

    def _has_values(self, field: str) -> bool:
        """Whether a field says something in some of the first rows (not only '-' or nothing)."""
        col = self.table.fields.get(field) if self.table is not None else None
        return col is not None and any(str(v) not in ("", "-", "None") for v in col[:200])

    def _search_text(self) -> np.ndarray:
        if self._search is None:
            t = self.table
            parts = [t.kind.astype(str), t.host.astype(str), t.tid.astype(str), t.id.astype(str)]
            parts += [t.fields[f].astype(str) for f in self._extra]
            text = parts[0]
            for p in parts[1:]:
                text = np.char.add(np.char.add(text, "\t"), p)
            self._search = np.char.lower(text)
        return self._search

    def _apply_filter(self, text: str, keep_cursor: bool = False) -> None:
        self.filter_text = text
        if self.table is None:
            return
        keep = np.ones(len(self.table), bool)
        if text:
            keep &= np.char.find(self._search_text(), text.lower()) >= 0
        if self.cluster_filter is not None and self.cluster is not None:
            keep &= self.cluster == self.cluster_filter
        self.index = self.order[keep[self.order]]
        self.row_table.set_rows(self._columns(self._extra),
                                RequestRows(self.table, self.index, self._extra, self.notable, self.cluster, self.why),
                                keep_cursor=keep_cursor)
        self._update_title()
        self._update_detail(self.row_table.cursor if keep_cursor else 0)

    def _update_title(self) -> None:
        t = self.table
        n = len(t)
        shown = len(self.index)
        med = fmt_duration(float(np.median(t.duration))) if n else "-"
        order = {"outliers": "outliers first", "duration": "slowest first", "start": "by start time"}[self.sort_by]
        what = "outliers" if self.cluster is not None else "slower than p95"
        noun = unit_noun(getattr(self.result, "units", "markers"))
        parts = [f"{count_of(n, noun)} · median {med} · {order} · {int(self.notable.sum()):,} {what} (n/N)"]
        compared = getattr(self.result, "compared", None)
        if compared is not None:
            parts.append(f"{len(compared):,} compared (whole, not background)")
        if self.cluster_filter is not None:
            name = "normal requests" if self.cluster_filter < 0 else f"cluster {self.cluster_filter + 1}"
            parts.append(f"{name}: {shown:,} shown (escape: all)")
        if self.filter_text:
            parts.append(f"/{self.filter_text}: {shown:,} of {len(self.table):,} match")
        if t.unmatched_starts or t.unmatched_ends:
            parts.append(f"{t.unmatched_starts} unfinished, {t.unmatched_ends} begun before the trace")
        self.query_one("#requests-title", Static).update(" · ".join(parts))

    def _update_detail(self, row: int) -> None:
        detail = self.query_one("#requests-detail", Static)
        if self.table is None or not len(self.index):
            detail.update("")
            self.query_one(PathBreakdown).show_view(None, "")
            return
        i = int(self.index[row])
        t = self.table
        detail.update(
            f"#{t.id[i]} {t.kind[i]} on {t.host[i]} pid {t.pid[i]} tid {t.tid[i]}: "
            f"{fmt_duration(t.duration[i])} from {fmt_when(t.start[i], False, 9)} · {t.label(i)}"
        )
        self._load_path(i)

    @work(thread=True, exclusive=True, group="request-path")
    def _load_path(self, i: int) -> None:
        t = self.table
        view, why = self.app.request_path(str(t.host[i]), int(t.tid[i]), int(t.start[i]), int(t.end[i]))
        if self.app.is_running:
            self.app.call_from_thread(self._show_path, view, why)

    def _show_path(self, view, why: str) -> None:
        for breakdown in self.query(PathBreakdown):  # none when the app is closing
            breakdown.show_view(view, why)

    def selected_request(self) -> int | None:
        """Row of the highlighted request in ``self.table``."""
        if self.table is None or not len(self.index):
            return None
        return int(self.index[self.row_table.cursor])

    # -- events -----------------------------------------------------------------------------

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        if event.table is self.row_table:
            self._update_detail(event.row)

    def on_row_table_selected(self, event: RowTable.Selected) -> None:
        if event.table is not self.row_table or self.table is None:
            return
        event.stop()
        from perftriage.tui.screens import RequestDetailScreen  # noqa: PLC0415

        i = int(self.index[event.row])
        self.app.push_screen(RequestDetailScreen(self.table, i))

    def action_sort(self) -> None:
        if self.table is None:
            return
        sorts = self.SORTS if self.cluster is not None else self.SORTS[1:]
        self.sort_by = sorts[(sorts.index(self.sort_by) + 1) % len(sorts)] if self.sort_by in sorts else sorts[0]
        self._sort()
        self._apply_filter(self.filter_text)

    def select_request(self, rid: int, host: str | None = None) -> bool:
        """Highlight the request ``rid`` (of ``host``), showing all requests again if a filter hid it."""
        if self.table is None:
            return False
        hit = self.table.id[self.index] == rid
        if host is not None:
            hit &= self.table.host[self.index] == host
        if not hit.any():
            self.cluster_filter = None
            self._apply_filter("")
            hit = self.table.id[self.index] == rid
            if host is not None:
                hit &= self.table.host[self.index] == host
        if not hit.any():
            return False
        self.row_table.cursor = int(np.flatnonzero(hit)[0])
        self.row_table.focus()
        return True

    class OpenCluster(Message):
        def __init__(self, cluster: int):
            super().__init__()
            self.cluster = cluster

    class OpenThreads(Message):
        """The highlighted request's thread in the Threads pane."""

        def __init__(self, host: str, tid: int):
            super().__init__()
            self.host, self.tid = host, tid

    class OpenHost(Message):
        """The counters of the highlighted request's host, around its time."""

        def __init__(self, host: str, start: int, end: int):
            super().__init__()
            self.host, self.start, self.end = host, start, end

    def action_its_threads(self) -> None:
        i = self.selected_request()
        if i is not None:
            self.post_message(self.OpenThreads(str(self.table.host[i]), int(self.table.tid[i])))

    def action_its_host(self) -> None:
        i = self.selected_request()
        if i is not None:
            self.post_message(self.OpenHost(str(self.table.host[i]), int(self.table.start[i]), int(self.table.end[i])))

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "its_cluster":
            return self.cluster is not None and self.selected_request() is not None
        if action in ("filter", "sort", "next_notable", "prev_notable"):
            return self.table is not None
        if action == "its_threads":  # only where an analysis of thread metrics compared the request's thread
            i = self.selected_request()
            ts = getattr(self.result, "thread_series", None)
            td = getattr(self.result, "threads", None)
            if i is None or td is None or ts is None:
                return False
            ks = ts.threads_of(str(self.table.tid[i]), str(self.table.host[i]))
            return bool(ks) and bool(td.comparing(ks[0]))
        if action == "its_host":  # only with counters of the request's host
            i = self.selected_request()
            ca = getattr(self.result, "counters", None)
            return i is not None and ca is not None and str(self.table.host[i]) in ca.cs.servers
        return True

    def action_its_cluster(self) -> None:
        i = self.selected_request()
        if i is None or self.cluster is None:
            return
        self.post_message(self.OpenCluster(int(self.cluster[i])))

    def show_cluster(self, cluster: int | None, focus: bool = True) -> None:
        """Only the requests of one cluster (-1: the normal ones), or all again (None); the list
        takes the keys unless ``focus`` is False (going back to another pane: a focus asked for
        here lands after the switch, and would switch back to this pane)."""
        self.cluster_filter = cluster
        self._apply_filter(self.filter_text)
        if focus:
            self.row_table.focus()

    def _jump(self, step: int) -> None:
        """n / N: with a filter, the next / previous match (the list holds only matches: the row
        after, round to the first at the end, like less); without, the next / previous outlier."""
        if self.table is None or not len(self.index):
            return
        if self.filter_text:
            self.row_table.cursor = (self.row_table.cursor + step) % len(self.index)
            return
        flags = self.notable[self.index]
        cur = self.row_table.cursor
        rows = np.flatnonzero(flags)
        if step > 0:
            nxt = rows[rows > cur]
            target = int(nxt[0]) if len(nxt) else None
        else:
            prv = rows[rows < cur]
            target = int(prv[-1]) if len(prv) else None
        if target is None:
            self.app.notify("no more notable requests that way", timeout=2)
            return
        self.row_table.cursor = target

    def action_next_notable(self) -> None:
        self._jump(+1)

    def action_prev_notable(self) -> None:
        self._jump(-1)

    def action_filter(self) -> None:
        box = self.query_one("#requests-filter", Input)
        box.add_class("visible")
        box.value = self.filter_text
        box.focus()

    def action_clear_filter(self) -> None:
        """escape: the text filter first; then back where a link came from (the app's history);
        then the cluster filter."""
        box = self.query_one("#requests-filter", Input)
        box.remove_class("visible")
        if not self.filter_text and getattr(self.app, "history", None):
            self.app.action_back()
            return
        if self.filter_text or self.cluster_filter is not None:
            self.cluster_filter = None
            self._apply_filter("")
        self.row_table.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "requests-filter":
            return
        event.stop()
        event.input.remove_class("visible")
        self._apply_filter(event.value.strip())
        self.row_table.focus()

    def on_key(self, event) -> None:
        box = self.query_one("#requests-filter", Input)
        if event.key == "escape" and box.has_focus:
            event.stop()
            box.remove_class("visible")
            self.row_table.focus()
