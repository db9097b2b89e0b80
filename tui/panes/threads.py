"""Threads pane (paper 003): the abstractions of one level, ranked ones first, with the metric
that sets each apart; below, for the highlighted one, its metrics over time beside the
majority's (sparklines on a shared scale), a plot of its most deviating metric, or the Ward
dendrogram with heights and AU p-values (v cycles). enter goes down a level into the
highlighted abstraction (analysed in a worker), escape comes back up. Where only alike
abstractions are compared (a kernel trace: a program's processes, a pool's threads), the top is
the list of those comparisons, each opened with enter."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from perftriage.analysis.units import count_of
from perftriage.tui.lazy import np
from perftriage.tui.widgets.plots import line_series
from perftriage.tui.widgets.row_table import IDENTITY, TEXT, Column, ListSource, RowTable
from perftriage.tui.widgets.sparkline import sparkline

from .base import ViewPane

VIEWS = ("metrics", "plot", "dendrogram")


@dataclass
class Overview:
    """The pane's list of comparisons where the walk compares several sets of alike abstractions:
    each entry analysed (a LevelResult) or to analyse on enter (level, within)."""

    entries: list
    about: str = ""  # whose inside it lists ("" at the top)
    level: str = "comparison"
    within: dict = field(default_factory=dict)


NO_THREADS = ("no thread analysis: it needs per-thread resource time series (a CSV, `perftriage record threads`) "
              "or a kernel trace")


class ThreadsPane(ViewPane):
    TITLE_ID, IDLE, TABLE_ID, EMPTY = "#th-title", NO_THREADS, "#th-table", "no abstractions"
    VIEWS = VIEWS
    BINDINGS = [Binding("escape", "up", "up a level", show=False)]

    DEFAULT_CSS = """
    ThreadsPane #th-title { height: 1; color: $text-muted; }
    ThreadsPane #th-table { height: auto; max-height: 12; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.result = None
        self.stack = []  # LevelResults, top level first
        self.order: list[int] = []  # row -> abstraction
        self.row = 0
        self.busy = False
        self.link_top = 1  # the depth a link opened the pane at: escape there goes back where the link came from

    def compose_top(self) -> ComposeResult:
        yield Static(NO_THREADS, id="th-title", markup=False)
        yield RowTable(id="th-table", empty_text="no abstractions")

    @property
    def table(self) -> RowTable:
        return self.query_one("#th-table", RowTable)

    @property
    def current(self):
        return self.stack[-1] if self.stack else None

    def show_result(self, result) -> None:
        """Show the walk of ``result``; a walk that grew (its levels come one by one) keeps the
        levels the user went down into and the highlighted row."""
        same = (self.stack and getattr(result, "thread_series", None) is getattr(self.result, "thread_series", None)
                and getattr(result, "threads", None) is not None)
        before, row = (self.stack, self.row) if same else ([], 0)
        self.result = result
        td = getattr(result, "threads", None)
        self.stack = [self._root(td)] if td is not None and td.results else []
        for res in before[1:]:  # found again in the walk, or one the user had analysed here: kept
            if isinstance(res, Overview):
                self.stack.append(res)
                continue
            found = td.analysed(res.level, res.within)
            if found is None:
                td.results.append(res)
            self.stack.append(found or res)
        if td is not None and not td.results and td.notes:  # nothing alike to compare: why
            self.show_idle(f"no thread analysis: {td.notes[0]}")
        elif td is not None:
            self._idle = ""
        else:
            ts = getattr(result, "thread_series", None)
            if ts is not None:  # analysed, but too few threads to compare
                self.show_idle(f"no thread analysis: {count_of(ts.n_threads, 'threads')} with metrics in {ts.source}; "
                               "at least 3 are needed")
            elif getattr(result, "graphs", None):
                self.show_idle("no thread analysis: thread metrics from the kernel trace were not asked for "
                               "(--thread-metrics)")
            else:
                self.show_idle(NO_THREADS)
        self._show_level()
        if row:
            self.table.select_source(row)

    def _root(self, td):
        """The top of the pane: the walk's first analysis, or, where only alike abstractions are
        compared, the list of the walk's comparisons."""
        ts = td.series
        mixed = any(lv in ts.kinds for lv in ts.levels())  # a level of abstractions of different kinds
        return Overview(list(td.results)) if mixed else td.results[0]

    def _show_overview(self, ov: Overview) -> None:
        from perftriage.analysis.threads.deviation import abstractions  # noqa: PLC0415
        from perftriage.analysis.threads.series import plural  # noqa: PLC0415
        from perftriage.analysis.threads.topdown import where_text  # noqa: PLC0415

        ts = self.result.thread_series
        self.order = list(range(len(ov.entries)))
        rows, styles = [], []
        for n, e in enumerate(ov.entries):
            level, within = (e.level, e.within) if not isinstance(e, tuple) else e
            what = plural(level) + where_text(within, ts.kinds)
            if isinstance(e, tuple):
                k = len(abstractions(ts, level, within)[0])
                rows.append([str(n + 1), what, str(k), "-", "not analysed yet: enter analyses them"])
                styles.append(None)
                continue
            first = e.ranking[0] if e.ranking else None
            said = (first.headline or (first.metrics[0][0] + ": " + first.metrics[0][1] if first.metrics else "")
                    ) if first is not None else "nothing deviates"
            rows.append([str(n + 1), what, str(e.k), str(len(e.ranking)),
                         (", ".join(e.names[i] for i in first.items[:3]) + ": " if first is not None else "") + said])
            styles.append("alert" if e.ranking else None)
        cols = [Column("#", "right", 2, 3), Column("compared", "left", 12, 48, priority=IDENTITY),
                Column("n", "right", 2, 5), Column("ranked", "right", 3, 6),
                Column("first deviation", "left", 10, 90, priority=TEXT, flex=True)]
        self.table.set_rows(cols, ListSource(rows, styles))
        self.table.openable = None  # every comparison opens
        self.table.refresh_bindings()
        inside = f" inside {ov.about}" if ov.about else ""
        self.query_one("#th-title", Static).update(
            f"{count_of(len(ov.entries), 'comparisons')}{inside} (a program's processes, a pool's threads) · "
            f"enter: open{' · escape: up' if len(self.stack) > 1 else ''}")
        self.row = 0
        self.render_view()

    def _show_level(self) -> None:
        from perftriage.analysis.threads.series import plural  # noqa: PLC0415
        from perftriage.analysis.threads.topdown import next_level, where_text  # noqa: PLC0415

        res = self.current
        if res is None:
            self.table.set_rows([], ListSource([]))
            self.render_view()
            return
        if isinstance(res, Overview):
            self._show_overview(res)
            return
        from perftriage.analysis.threads.topdown import shown_name  # noqa: PLC0415

        ranked = {i: (n, r) for n, r in enumerate(res.ranking) for i in r.items}
        self.order = [i for r in res.ranking for i in r.items] + [i for i in range(res.k) if i not in ranked]
        ts = self.result.thread_series if self.result is not None else None
        rows, styles = [], []
        for i in self.order:
            n, r = ranked.get(i, (None, None))
            how = "" if r is None else ({"window": "window", "departure": "level"}.get(r.how, "tree"))
            sep = "" if r is None else (f"{r.separation:.1f}x" if r.how == "dendrogram" else f"z {r.score:.1f}")
            what = (r.headline or r.metrics[0][0] + ": " + r.metrics[0][1]) if r is not None and r.metrics else ""
            name = shown_name(res, ts, i) if ts is not None else res.names[i]  # '11171 (worker-5)'
            rows.append([str(n + 1) if n is not None else "-", name, str(len(res.members[i])), how, sep, what])
            styles.append("alert" if r is not None else None)
        cols = [Column("#", "right", 2, 3), Column(res.level, "left", 6, 24, priority=IDENTITY), Column("threads", "right", 3, 7),
                Column("by", "left", 4, 6), Column("apart", "right", 5, 7), Column("what deviates", "left", 10, 90, priority=TEXT,
                                                                                    flex=True)]
        if res.level == "thread":  # a thread is one thread: the count says nothing there
            rows = [row[:2] + row[3:] for row in rows]
            del cols[2]
        self.table.set_rows(cols, ListSource(rows, styles))
        where = where_text(res.within, self.result.thread_series.kinds if self.result is not None else None)
        lower = next_level(self.result.thread_series, res.level) if self.result is not None else None
        # the footer offers enter only on a row it opens: none at the lowest level, and from a
        # kernel trace none on an abstraction with nothing alike inside (a process of one thread)
        if lower is None:
            self.table.openable = lambda row: False
        else:
            from perftriage.analysis.threads.topdown import comparisons  # noqa: PLC0415

            ts = self.result.thread_series
            opens = [bool(comparisons(ts, lower, {**res.within, res.level: res.names[i]})) for i in self.order]
            self.table.openable = lambda row, opens=opens: 0 <= row < len(opens) and opens[row]
        self.table.refresh_bindings()
        keys = ("enter: into " + ("its " + lower + "s" if lower else "-") + " · ") if lower else ""
        self.query_one("#th-title", Static).update(
            f"{res.k} {plural(res.level)}{where} · {len(res.ranking)} ranked · AU from {res.boot.replicates:,} replicates "
            f"per scale · {keys}{'escape: up · ' if len(self.stack) > 1 else ''}v: view"
            if res.boot is not None else f"{res.k} {plural(res.level)}{where}: " + "; ".join(res.notes))
        self.row = 0
        self.render_view()

    def has_view(self) -> bool:
        return self.current is not None and not isinstance(self.current, Overview)

    def select_thread(self, host: str, tid: int) -> bool:
        """Highlight, at the top level, the abstraction that holds thread ``tid`` of ``host``."""
        ts = getattr(self.result, "thread_series", None)
        if ts is None or not self.stack:
            return False
        idx = ts.threads_of(str(tid), host)
        if not idx:
            return False
        del self.stack[1:]
        if isinstance(self.stack[0], Overview):  # the comparison that holds it, the narrowest
            held = self.result.threads.comparing(idx[0])
            if not held:
                self._show_level()
                return False
            self.stack.append(min(held, key=lambda r: sum(len(m) for m in r.members)))
        self.link_top = len(self.stack)
        self._show_level()
        return self._highlight(lambda a: idx[0] in self.current.members[a])

    def select_names(self, level: str, names: list[str], within: dict | None = None) -> bool:
        """Show the analysis of ``level`` (in ``within``, where given) that holds ``names``, and
        highlight the first of them."""
        td = getattr(self.result, "threads", None)
        if td is None or not self.stack:
            return False
        res = next((r for r in td.results if r.level == level and (within is None or r.within == within)
                    and any(n in r.names for n in names)), None)
        if res is None:
            return False
        root = self.stack[0]
        self.stack = [root] if res is root else [root, res]
        self.link_top = len(self.stack)
        self._show_level()
        return self._highlight(lambda a: res.names[a] in names)

    def _highlight(self, wanted) -> bool:
        """Highlight the first row whose abstraction is ``wanted``."""
        return self.table.focus_row(next((row for row, a in enumerate(self.order) if wanted(a)), None))

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        if event.table is self.table:
            self.row = event.row
            self.render_view()

    def on_row_table_selected(self, event: RowTable.Selected) -> None:
        from perftriage.analysis.threads.series import plural  # noqa: PLC0415
        from perftriage.analysis.threads.topdown import comparisons, next_level  # noqa: PLC0415

        if event.table is not self.table or self.current is None or self.busy:
            return
        event.stop()
        res = self.current
        if isinstance(res, Overview):
            entry = res.entries[self.order[event.row]]
            if isinstance(entry, tuple):
                self._open(*entry, about=", ".join(entry[1].values()))
            else:
                self.stack.append(entry)
                self._show_level()
            return
        lower = next_level(self.result.thread_series, res.level)
        if lower is None:
            self.app.notify(f"{plural(res.level)} are the lowest level", timeout=3)
            return
        item = self.order[event.row]
        within = {**res.within, res.level: res.names[item]}
        ts = self.result.thread_series
        found = comparisons(ts, lower, within)
        if not found:
            held = count_of(len(res.members[item]), "threads")
            self.app.notify(f"nothing alike to compare inside {res.names[item]} ({held})", timeout=4, markup=False)
            return
        if len(found) > 1:  # its pools, each compared on its own: which one
            cached = [self.result.threads.analysed(lv, w) or (lv, w) for lv, w in found]
            self.stack.append(Overview(cached, about=res.names[item]))
            self._show_level()
            return
        self._open(*found[0], about=res.names[item])

    def _open(self, level: str, within: dict, about: str = "") -> None:
        """The analysis of ``level`` in ``within``: the walk's, or analysed now in a worker."""
        from perftriage.analysis.threads.series import plural  # noqa: PLC0415

        cached = self.result.threads.analysed(level, within)
        if cached is not None:
            self.stack.append(cached)
            self._show_level()
            return
        self.busy = True
        self.view_title.update(Text(f"analysing the {plural(level)} of {about}…"))
        self._drill(level, within)

    @work(thread=True, exclusive=True, group="threads-drill")
    def _drill(self, level: str, within: dict) -> None:
        from perftriage.analysis.threads.deviation import analyse_level  # noqa: PLC0415

        res = analyse_level(self.result.thread_series, level, within, self.result.options.threads)
        self.app.call_from_thread(self._drilled, res)

    def _drilled(self, res) -> None:
        self.busy = False
        self.result.threads.results.append(res)
        self.stack.append(res)
        self._show_level()

    def action_up(self) -> None:
        """escape: up a level; at the top, back where a link came from (the app's history)."""
        if len(self.stack) > self.link_top:
            self.stack.pop()
            self._show_level()
        elif getattr(self.app, "history", None):
            self.link_top = 1  # back where the link came from; from here on escape climbs the levels
            self.app.action_back()
        elif len(self.stack) > 1:
            self.link_top = 1
            self.stack.pop()
            self._show_level()

    def render_view(self) -> None:
        from perftriage.analysis.threads.view import dendrogram_lines, item_series  # noqa: PLC0415

        out = self.view_body
        res = self.current
        if res is None or not self.order or isinstance(res, Overview):
            self.clear_view()
            return
        item = self.order[min(self.row, len(self.order) - 1)]
        self.show_view_title(f"{res.level} {res.names[item]}")
        width, height = self.view_size()
        view = self.view_name
        if view == "dendrogram":
            t = Text()
            for line, ranked in dendrogram_lines(res, width):
                t.append(line + "\n", style="red bold" if ranked else "")
            out.update(t)
            return
        metrics, mine, maj = item_series(self.result.thread_series, res, item, bins=max(10, min(80, width - 40)))
        if view == "metrics":
            t = Text(f"{res.names[item]} against the majority's mean, over the lifetime, one scale per metric\n",
                     style="bold")
            for j, m in enumerate(metrics):
                both = np.r_[mine[:, j], maj[:, j]]
                lo, hi = float(np.nanmin(both)), float(np.nanmax(both))
                t.append(f"{m[:14]:<14} {sparkline(mine[:, j], lo, hi)}\n", style="red" if _deviates(res, item, m)
                         else "")
                t.append(f"{'  majority':<14} {sparkline(maj[:, j], lo, hi)}  {lo:.4g} .. {hi:.4g}\n", style="dim")
            out.update(t)
        else:
            r = next((x for x in res.ranking if item in x.items), None)
            m = r.metrics[0][0] if r is not None and r.metrics and r.metrics[0][0] in metrics else metrics[0]
            j = metrics.index(m)
            # each thread's own lifetime in equal slices (threads live for different times): the x
            # axis is the share of it, not a slice number
            x = [(i + 0.5) * 100 / len(mine) for i in range(len(mine))]
            ticks = ([0, 25, 50, 75, 100], ["0%", "25%", "50%", "75%", "100%"])
            out.update(line_series(x, {res.names[item]: mine[:, j].tolist(), "majority": maj[:, j].tolist()},
                                   width, height, f"{m} over the lifetime (% of it, {len(x)} slices)", xticks=ticks))


def _deviates(res, item: int, metric: str) -> bool:
    r = next((x for x in res.ranking if item in x.items), None)
    return r is not None and any(m == metric for m, _ in r.metrics)
