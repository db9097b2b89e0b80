"""Counters pane (paper 004, PAD): the ranked deviations (servers, the fleet over time, against a
reference, threshold violations) and, for the highlighted counter, PAD's views: the server view
as a stock chart (min / mean / max per server), the time view (median with a q05-q95 band), the
detail view as a server x time heat map in characters, sparklines per server, the statistics of
both views. ``v`` cycles the
views; ``c`` opens the correlations of the highlighted counter (on its server, or over the fleet;
computed in a worker)."""

from __future__ import annotations

import warnings

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

from perftriage.analysis.units import count_of
from perftriage.tui.lazy import np
from perftriage.tui.widgets.plots import line_series
from perftriage.tui.widgets.row_table import IDENTITY, TEXT, Column, ListSource, RowTable
from perftriage.tui.widgets.sparkline import sparkline

from .base import ViewPane

VIEWS = ("server view", "time view", "detail", "sparklines", "statistics", "correlations")
SHADES = " ░▒▓█"


IDLE = ("no counter analysis: it needs per-server counter time series (CSV long or wide, Prometheus range-query "
        "JSON)")


class CountersPane(ViewPane):
    TITLE_ID, IDLE, TABLE_ID, EMPTY = "#co-title", IDLE, "#co-table", "no counters"

    VIEWS = VIEWS
    BINDINGS = [Binding("c", "correlations", "correlations"),
                Binding("w", "what_changed", "what changed then")]

    class CompareAt(Message):
        """Compare the requests before and after this time (an interval's start, in seconds)."""

        def __init__(self, at_s: float) -> None:
            super().__init__()
            self.at_s = at_s

    DEFAULT_CSS = """
    CountersPane #co-title { height: 1; color: $text-muted; }
    CountersPane #co-table { height: auto; max-height: 12; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.ca = None
        self.items: list[tuple[int | None, int]] = []  # row -> (server or None, counter)
        self.row = 0
        self.corr = None
        self.has_spans = False
        self.mark: tuple[float, float, str] | None = None  # (start s, end s, what): a request's time, marked
        self.row_marks: list[tuple[float, float, str] | None] = []  # row -> its own time to mark (an interval's)
        self.rule_rows: dict[str, int] = {}  # counter -> the row of its first rule violation
        # until the user picks a view (v), an interval's row shows the time around it, not the
        # servers side by side (which say nothing of when), and the row after it the server view again
        self.view_chosen = False
        self._auto_view = False

    def compose_top(self) -> ComposeResult:
        yield Static(self.IDLE, id="co-title", markup=False)
        yield RowTable(id="co-table", empty_text="no counters", open_label=None)

    @property
    def table(self) -> RowTable:
        return self.query_one("#co-table", RowTable)

    def show_result(self, result) -> None:
        spans = getattr(result, "spans", None)
        # w: what changed in them at an interval (not with --reference: they are compared with it)
        compared = getattr(getattr(result, "options", None), "reference", None)
        self.has_spans = spans is not None and len(spans) > 0 and not compared
        self.ca = getattr(result, "counters", None)
        ca = self.ca
        if ca is None:
            self.table.set_rows([], ListSource([]))
            self.render_view()
            return
        cs, cp, p = ca.cs, ca.comparative, ca.params
        rows, styles, items = [], [], []
        self.rule_rows = {}
        # each counter's own onset: a server's GC time may rise hours after its latency did
        onset_of = {(sd.server, c): o for sd in ca.servers for c, o in sd.counter_onsets.items()}
        # servers that sent nothing while the others did: first, they measure nothing (one that
        # began late, information, last)
        silent = [si for si in ca.silences if not si.began_late][:15]
        late = [si for si in ca.silences if si.began_late][:15]

        def silence_row(si) -> list[str]:
            return [str(len(rows) + 1), cs.servers[si.server], "(every counter)", "", cs.time_label(si.start),
                    f"silent {'to the end' if si.stopped else f'to {cs.time_label(si.end)}'} ({si.points:,} points): "
                    f"no sample of any counter, while {si.others:.0%} of the others sent theirs"]

        for si in silent:
            rows.append(silence_row(si))
            styles.append("alert")
            items.append((si.server, 0))
        for s, c, x in cp.top_servers(40):
            o = onset_of.get((s, c))
            rows.append([str(len(rows) + 1), cs.servers[s], cs.counters[c], _x(x),
                         cs.time_label(o.index) if o is not None else "",
                         f"median {_n(cp.server_median[s, c])} vs {'fleet' if cp.paper_x else 'others'} "
                         f"{_n(cp.ref_median[s, c])}"])
            styles.append("alert" if x >= p.server_x else None)
            items.append((s, c))
        marks: list = [(cs.seconds(si.start), cs.seconds(si.end), "the silence") for si in silent]
        marks += [None] * (len(rows) - len(marks))
        # the unusual intervals over time (each series against its history and its peers: what
        # finds the incidents of a real fleet), after the servers PAD's X names and before the others
        at = sum(1 for st in styles if st == "alert")
        # a server's level changes (an incident still running at the end of the data) and the intervals,
        # the strongest first, as the findings rank them
        ot = ca.over_time
        changes = [lc for lc in ot.changes if not lc.shared][:15] if ot is not None else []
        fleet = ot.fleet_changes() if ot is not None else []  # the fleet's own rows, with its other counters
        said = ot.said_intervals(changes + [lc for lc in ot.changes if lc.shared]) if ot is not None else []
        ivs = said[:15]
        merged = []  # the intervals in their order (a caller waiting for a callee under it), changes among them
        left = sorted(changes, key=lambda e: -e.score)
        for iv in ivs:
            while left and left[0].score >= iv.score:
                merged.append(left.pop(0))
            merged.append(iv)
        for j, ev in enumerate(merged + left):
            names = [cs.counters[c] for c, *_ in ev.counters]
            if not hasattr(ev, "peak_z"):  # a level change (an interval has its peak)
                c0, _, level, other, peer = ev.counters[0]
                rows.insert(at + j, ["", cs.servers[ev.server],
                                     names[0] + (f" +{len(names) - 1}" if len(names) > 1 else ""),
                                     _z(ev.counters[0][1]), cs.time_label(ev.start),
                                     f"another level to {_until(cs, ev.end)} ({count_of(ev.points, 'points')}): "
                                     f"{_n(level)} against {_n(other)} {ev.other_side(cs.n_points)}"
                                     + (f", peers {_n(peer)}" if np.isfinite(peer) else "")
                                     + (f": {', '.join(names[:6])}" if len(names) > 1 else "")])
                what = "the level change"
            else:
                # a view's interval (edge latencies): the service called, the view in the evidence
                rows.insert(at + j, ["", ev.about or cs.servers[ev.server],
                                     names[0] + (f" +{len(names) - 1}" if len(names) > 1 else ""),
                                     _z(ev.peak_z),
                                     cs.time_label(ev.start),
                                     (f"calls into it ({cs.servers[ev.server]}) " if ev.about else "")
                                     + (f"waiting for {ev.waits_for}? " if ev.waits_for else "")
                                     + f"unusual to {cs.time_label(ev.end)} ({count_of(ev.points, 'points')})"
                                     + (f": {', '.join(names[:6])}" if len(names) > 1 else "")])
                what = "the interval"
            styles.insert(at + j, "alert")
            items.insert(at + j, (ev.server, ev.counters[0][0]))
            marks.insert(at + j, (cs.seconds(ev.start), cs.seconds(ev.end), what))
        for k, r in enumerate(rows):
            r[0] = str(k + 1)
        for lc in fleet:  # a change of half the fleet or more at once, once (the finding says it as the fleet's)
            c0, zm = lc.counters[0][:2]
            n = len(lc.shared) + 1
            rows.append([str(len(rows) + 1), "fleet", cs.counters[c0], _z(zm), cs.time_label(lc.start),
                         f"another level on {n} of {len(cs.servers)} servers to {_until(cs, lc.end)} "
                         f"({lc.points:,} points) than {lc.other_side(cs.n_points)}: the fleet's change"])
            styles.append(None)
            items.append((None, c0))
            marks.append((cs.seconds(lc.start), cs.seconds(lc.end), "the level change"))
        for c, x, n in cp.counters_by_time(p.time_x)[:15]:
            k = int(np.nanargmax(np.nan_to_num(cp.time_x[:, c], nan=-1)))
            o = ca.fleet.onset if ca.fleet is not None and ca.fleet.onset_counter == c else None
            rows.append([str(len(rows) + 1), "fleet", cs.counters[c], _x(x), cs.time_label(o.index) if o else "",
                         f"{count_of(n, 'points')} with X >= {p.time_x:g}; worst at {cs.time_label(k)}"])
            styles.append("alert" if x >= p.time_x and n >= 3 else None)
            items.append((None, c))
            marks.append(None)
        if ca.between is not None:
            b = ca.between
            for i, x in b.top(15):
                rows.append([str(len(rows) + 1), "vs reference", b.counters[i], _x(x), "",
                             f"median {_n(b.median[i])} vs reference {_n(b.ref_median[i])}"])
                styles.append("alert" if x >= p.reference_x else None)
                items.append((None, cs.counters.index(b.counters[i])))
                marks.append(None)
        for v in ca.violations:
            s, t, val = v.items[0]
            rows.append([str(len(rows) + 1), "rule", cs.counters[v.counter], str(v.n), "",
                         f"{v.rule.describe()}; worst {_n(val)} at {cs.servers[s] if s >= 0 else 'fleet'}"
                         f"{' ' + cs.time_label(t) if t >= 0 else ''}"])
            styles.append("alert")
            items.append((s if s >= 0 else None, v.counter))
            marks.append(None)
            self.rule_rows.setdefault(cs.counters[v.counter], len(rows) - 1)
        for si in late:
            rows.append(silence_row(si))
            styles.append(None)
            items.append((si.server, 0))
            marks.append((cs.seconds(si.start), cs.seconds(si.end), "the silence"))
        cols = [Column("#", "right", 2, 3), Column("where", "left", 8, 13, priority=IDENTITY),
                Column("counter", "left", 12, 38, priority=IDENTITY),
                Column("X", "right", 5, 8), Column("since", "right", 8, 10),
                Column("evidence", "left", 10, 90, flex=True, priority=TEXT)]
        self.items, self.row_marks = items, marks
        self.table.set_rows(cols, ListSource(rows, styles))
        self.query_one("#co-title", Static).update(
            f"{count_of(len(cs.servers), 'servers')} x {count_of(len(cs.counters), 'counters')} x "
            f"{count_of(cs.n_points, 'points')} every {cs.interval:g} s"
            + (" · servers not compared by level (not peers: see the notes)"
               if ca.peers is not None and not ca.peers.compared.any() else
               f" · {count_of(len(ca.servers), 'deviating servers')} · "
               + ("X = |global median - local median| / global std" if cp.paper_x else
                  "X = |server median - others' median| / others' std"))
            + (f" · {count_of(len(said), 'unusual intervals')}"
               if ca.over_time is not None else "")
            + (f" · {count_of(len(changes), 'level changes')}" if changes else "")
            + " · v: view · c: correlations")
        self.row = 0
        self.corr = None
        self.render_view()

    def has_view(self) -> bool:
        return self.ca is not None

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "correlations":
            return self.ca is not None and bool(self.items)
        if action == "what_changed":
            return self._interval_start() is not None
        return super().check_action(action, parameters)

    def _interval_start(self) -> float | None:
        """The start (s) of the highlighted row's interval, when spans were given to compare at it."""
        if not self.has_spans or not self.row_marks:
            return None
        mark = self.row_marks[min(self.row, len(self.row_marks) - 1)]
        return mark[0] if mark is not None else None

    def action_what_changed(self) -> None:
        at = self._interval_start()
        if at is not None:
            self.post_message(self.CompareAt(at))

    def select_server(self, server: str, counter: str | None = None,
                      window: tuple[float, float, str] | None = None) -> bool:
        """Highlight the row of ``server`` (and ``counter`` when given); ``window`` (start and
        end in seconds since the epoch, and what it is): a time to mark in the views, shown over
        time (a request's, from the Requests pane)."""
        if self.ca is None:
            return False
        cs = self.ca.cs
        self.mark = window
        if window is not None and self.view_name not in ("time view", "detail", "sparklines"):
            self.view = VIEWS.index("time view")
        ours = [i for i, (s, c) in enumerate(self.items) if s is not None and cs.servers[s] == server]
        # an interval of the server's over that time first
        row = next((i for i in ours if window is not None and i < len(self.row_marks) and self.row_marks[i] is not None
                    and self.row_marks[i][0] <= window[1] and self.row_marks[i][1] >= window[0]), None)
        if row is None:
            row = next((i for i in ours if counter is None or cs.counters[self.items[i][1]] == counter), None)
        return self.table.focus_row(row)

    def select_rule(self, counter: str) -> bool:
        """Highlight the violations of the rule on ``counter``."""
        return self.table.focus_row(self.rule_rows.get(counter))

    def select_part(self, part: str | None) -> bool:
        """``intervals``: the first unusual interval's row."""
        if part != "intervals":
            return False
        return self.table.focus_row(next((i for i, m in enumerate(self.row_marks) if m is not None), None))

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        if event.table is self.table:
            could = self._interval_start() is not None
            self.row = event.row
            if could != (self._interval_start() is not None):
                self.refresh_bindings()  # w compares at an interval's start only: the footer follows
            self.corr = None
            self.render_view()

    def action_next_view(self) -> None:
        self.view_chosen, self._auto_view = True, False  # the user's view stays, whatever the row
        super().action_next_view()

    def action_correlations(self) -> None:
        if self.ca is None or not self.items:
            return
        self.view_chosen, self._auto_view = True, False
        self.view = VIEWS.index("correlations")
        s, c = self.items[min(self.row, len(self.items) - 1)]
        self.view_body.update(f"correlating {self.ca.cs.counters[c]} with every counter…")
        self._correlate(s, c)

    @work(thread=True, exclusive=True, group="counters-corr")
    def _correlate(self, server, counter) -> None:
        from perftriage.analysis.counters.correlation import correlate  # noqa: PLC0415

        res = correlate(self.ca.cs, counter, server, self.ca.params.correlation)
        self.app.call_from_thread(self._correlated, res)

    def _correlated(self, res) -> None:
        self.corr = res
        self.render_view()

    def select_fleet(self, counter: str, window: tuple[float, float] | None = None) -> bool:
        """Highlight a row of ``counter`` over the fleet: its change over ``window`` (start and
        end in seconds since the epoch) first."""
        if self.ca is None:
            return False
        cs = self.ca.cs
        if window is not None and self.view_name not in ("time view", "detail", "sparklines"):
            self.view = VIEWS.index("time view")  # where the change shows
        ours = [i for i, (s, c) in enumerate(self.items) if s is None and cs.counters[c] == counter]
        row = next((i for i in ours if window is not None and self.row_marks[i] is not None
                    and self.row_marks[i][:2] == tuple(window)), ours[0] if ours else None)
        return self.table.focus_row(row)

    def render_view(self) -> None:
        from perftriage.analysis.counters.views import server_view, time_view  # noqa: PLC0415

        out = self.view_body
        ca = self.ca
        if ca is None or not self.items:
            self.clear_view()
            return
        cs = ca.cs
        s, c = self.items[min(self.row, len(self.items) - 1)]
        name = cs.counters[c]
        row_mark = self.row_marks[min(self.row, len(self.row_marks) - 1)] if self.row_marks else None
        if not self.view_chosen:
            if row_mark is not None and self.view_name == "server view":
                self.view, self._auto_view = VIEWS.index("time view"), True
            elif row_mark is None and self._auto_view:
                self.view, self._auto_view = VIEWS.index("server view"), False
        self.show_view_title(name + (f" on {cs.servers[s]}" if s is not None else ""))
        width, height = self.view_size()
        view = self.view_name
        mark = row_mark or self.mark  # an interval's row marks its own time; else a link's time
        marked = _marked_points(cs, mark)
        mark_text = "" if mark is None else \
            f"{mark[2]} at {cs.when(marked[0], date=False)}" if marked is not None else \
            f"{mark[2]} is outside the counters' time"
        if view == "server view":
            sv = server_view(cs, c)
            x = list(range(1, len(cs.servers) + 1))
            out.update(line_series(x, {"max": sv.max.tolist(), "mean": sv.mean.tolist(), "min": sv.min.tolist()},
                                   width, height, f"{name}: min / mean / max per server (1 = {cs.servers[0]})",
                                   xticks=_server_ticks(len(cs.servers), width)))
        elif view == "time view":
            kind = ca.peers.kind_of(s) if ca.peers is not None and s is not None else None
            tv = time_view(cs, c, kind)  # the band of the server's kind, where kinds are told apart
            # an interval's row: the time around it (twice its length each side), where its shape
            # shows; 87 points of 15 days were one column of the whole
            k0, k1 = _around(marked, cs.n_points) if row_mark is not None and marked is not None \
                else (0, cs.n_points - 1)
            x = list(range(k0, k1 + 1))
            part = slice(k0, k1 + 1)
            among = "fleet" if kind is None else ca.peers.of(s).removeprefix("the ")
            series = {"median" if kind is None else f"{among} median": tv.median[part].tolist(),
                      "q95": tv.q95[part].tolist(), "q05": tv.q05[part].tolist()}
            if s is not None:
                shown = [s]
                twin = _other_view(ca, s, c)
                if twin is not None:  # an edge: how the other side measured the same calls, beside it
                    shown.append(twin)
                series = {**{cs.servers[x]: cs.values[x, c, part].tolist() for x in shown}, **series}
            if marked is not None:  # the marked time, on the server's line (else the median's)
                base = cs.values[s, c] if s is not None else tv.median
                at = np.full(cs.n_points, np.nan)
                at[marked[0]:marked[1] + 1] = base[marked[0]:marked[1] + 1]
                series[mark[2]] = at[part].tolist()
            # a title longer than the chart is dropped: with a mark, the mark takes the words
            out.update(line_series(x, series, width, height,
                                   f"{name}: {mark_text}" if mark_text else
                                   f"{name} over time (points every {cs.interval:g} s): {among} median, q05-q95 band",
                                   xticks=_time_ticks(cs, width, k0, k1)))
        elif view == "detail":
            out.update(_with_mark(_heatmap(cs, c, s, width, height), cs, marked, mark_text,
                                  _heatmap_columns(cs, width)))
        elif view == "sparklines":
            out.update(_with_mark(_sparklines(cs, c, s, width), cs, marked, mark_text, _sparkline_columns(cs, width)))
        elif view == "statistics":
            out.update(_statistics(cs, c, s))
        else:
            out.update(self._corr_text(s, c))

    def _corr_text(self, s, c) -> Text:
        cs = self.ca.cs
        r = self.corr
        if r is None or r.target != c or r.server != s:
            return Text("press c to correlate this counter with every other one"
                        + (f" on {cs.servers[s]}" if s is not None else " over the fleet"))
        t = Text(f"{cs.counters[c]}" + (f" on {cs.servers[s]}" if s is not None else " over the fleet") +
                 f": {r.cells:,} samples; |r| >= {r.params.threshold:g} in bold" +
                 (f" ({'; '.join(r.notes)})" if r.notes else "") + "\n", style="bold")
        t.append(f"{'counter':<42} {'Pearson':>8} {'Spearman':>9}  lag\n", style="dim")
        strong = {id(x) for x in r.strong()}
        for row in r.rows[:40]:
            lag = f"{row.lag:+d} pts r {row.lag_r:+.2f}" if row.lag else ""
            t.append(f"{cs.counters[row.counter][:42]:<42} {row.pearson:>+8.2f} {row.spearman:>+9.2f}  {lag}\n",
                     style="bold" if id(row) in strong else "dim")
        return t


def _other_view(ca, s: int, c: int) -> int | None:
    """The other side's view of the calls ``c`` when ``s`` is a view of call edges (edges.py)."""
    edges = ca.over_time.edges if ca.over_time is not None else None
    if edges is None or s not in edges.sides or c not in edges.ends:
        return None
    return edges.twin(s)


def _marked_points(cs, mark) -> tuple[int, int] | None:
    """The grid points (first, last) a marked time covers: those within it, else the nearest one;
    None when it is more than an interval outside the counters' time."""
    if mark is None:
        return None
    a, b = (mark[0] - cs.start) / cs.interval, (mark[1] - cs.start) / cs.interval
    if b < -1 or a > cs.n_points:
        return None
    k0, k1 = int(np.ceil(a)), int(np.floor(b))
    if k1 < k0:  # shorter than an interval: the nearest point
        k0 = k1 = int(np.rint((a + b) / 2))
    return max(0, k0), min(cs.n_points - 1, k1)


def _with_mark(t: Text, cs, marked, mark_text: str, bins: int) -> Text:
    """Under a server x time drawing of ``bins`` columns after the servers' names, a caret
    under the columns the marked time falls in, and what it is."""
    if marked is None:
        if mark_text:
            t.append(mark_text + "\n", style="bold")
        return t
    label_w = _label_width(cs)
    bins = max(1, min(bins, cs.n_points))
    lo = int(marked[0] * bins / cs.n_points)
    hi = max(lo, int(marked[1] * bins / cs.n_points))
    t.append(" " * (label_w + 1 + lo) + "▲" * (hi - lo + 1) + f" {mark_text}\n", style="bold")
    return t


def _label_width(cs) -> int:
    """Columns of the servers' names at the left of the per-server drawings."""
    return max(len(n) for n in cs.servers) + 1


def _heatmap_columns(cs, width: int) -> int:
    return width - _label_width(cs) - 2


def _sparkline_columns(cs, width: int) -> int:
    return min(120, width - _label_width(cs) - 24)


def _bins(x: np.ndarray, n: int) -> np.ndarray:
    """Columns of ``x`` (rows x points) averaged into n bins."""
    T = x.shape[1]
    n = max(1, min(n, T))
    edges = np.linspace(0, T, n + 1).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing bin is NaN, drawn as '?'
        return np.stack([np.nanmean(x[:, a:b], axis=1) for a, b in zip(edges[:-1], edges[1:])], axis=1)


def _time_ticks(cs, width: int, k0: int = 0, k1: int | None = None) -> tuple[list[int], list[str]]:
    """Ticks of a chart over the grid's points ``k0`` to ``k1``, labelled as the table's 'since'
    column is (time since the start: +0:00, +5:58:20), one every 16 columns or so."""
    k1 = cs.n_points - 1 if k1 is None else k1
    n = max(2, min(k1 - k0 + 1, width // 16 + 1))
    at = sorted({int(round(k)) for k in np.linspace(k0, k1, n)})
    return at, [cs.time_label(k) for k in at]


def _server_ticks(n: int, width: int) -> tuple[list[int], list[str]]:
    """Ticks of a chart over servers 1..``n``: whole numbers (server 4, not 3.8), one every 12
    columns or so at a round step (1, 5, 10, ..., 25), the first and the last among them."""
    k = max(2, width // 12 + 1)
    step = next(st for st in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 10**9) if (n - 1) / st <= k - 1)
    at = [1] + [m for m in range(step, n + 1, step) if m - 1 > step / 2]  # 1, then 5, 10, 15...
    if at[-1] != n:
        if n - at[-1] <= step / 2 and len(at) > 1:
            at.pop()  # one too close to n's label
        at.append(n)
    return at, [str(x) for x in at]


def _around(marked: tuple[int, int], n_points: int, least: int = 48) -> tuple[int, int]:
    """The points to chart around a marked interval: twice its length on each side, at least
    ``least`` points in all, within the grid."""
    a, b = marked
    pad = max(2 * (b - a + 1), (least - (b - a + 1)) // 2)
    return max(0, a - pad), min(n_points - 1, b + pad)


def _heatmap(cs, c: int, s: int | None, width: int, height: int) -> Text:
    """Server x time in shades of the value's rank among all the cells (one server far above the
    rest must not flatten everyone else to blank)."""
    x = cs.values[:, c, :]
    label_w = _label_width(cs)
    b = _bins(x, _heatmap_columns(cs, width))
    finite = b[np.isfinite(b)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 0.0)
    cuts = np.quantile(finite, [0.2, 0.4, 0.6, 0.8]) if len(finite) else np.zeros(4)
    t = Text(f"{cs.counters[c]}: server x time, time runs right; shade = the value's fifth among all cells "
             f"(' ' lowest .. '█' highest; {_n(lo)} .. {_n(hi)})\n", style="bold")
    for i, name in enumerate(cs.servers):
        row = b[i]
        level = np.searchsorted(cuts, row, side="right")
        chars = "".join("?" if not np.isfinite(v) else SHADES[int(lv)] for v, lv in zip(row, level))
        t.append(f"{name:<{label_w}} ", style="red bold" if i == s else "")
        t.append(chars + "\n", style="red" if i == s else "")
    return t


def _sparklines(cs, c: int, s: int | None, width: int) -> Text:
    x = cs.values[:, c, :]
    label_w = _label_width(cs)
    b = _bins(x, _sparkline_columns(cs, width))
    lo, hi = float(np.nanmin(b)), float(np.nanmax(b))
    t = Text(f"{cs.counters[c]} per server over time, one scale ({_n(lo)} .. {_n(hi)})\n", style="bold")
    for i, name in enumerate(cs.servers):
        t.append(f"{name:<{label_w}} {sparkline(b[i], lo, hi)}  median {_n(float(np.nanmedian(x[i])))}\n",
                 style="red" if i == s else "")
    return t


def _statistics(cs, c: int, s: int | None) -> Text:
    """The server view's statistics, one row per server, and the time view's over all points."""
    from perftriage.analysis.counters.views import STATS, server_view, time_view  # noqa: PLC0415

    sv = server_view(cs, c)
    tv = time_view(cs, c)
    label_w = _label_width(cs)
    t = Text(f"{cs.counters[c]}: per server over time (server view)\n", style="bold")
    t.append(f"{'server':<{label_w}}" + "".join(f"{k:>11}" for k in STATS) + f"{'samples':>9}\n", style="dim")
    for i, name in enumerate(cs.servers):
        t.append(f"{name:<{label_w}}" + "".join(f"{_n(float(sv.get(k)[i])):>11}" for k in STATS)
                 + f"{int(sv.count[i]):>9}\n", style="red bold" if i == s else "")
    t.append(f"\nper time point over servers (time view), summarised over the {cs.n_points} points\n", style="bold")
    for k in ("mean", "median", "std", "min", "max"):
        col = tv.get(k)
        t.append(f"{k:<8} from {_n(float(np.nanmin(col)))} to {_n(float(np.nanmax(col)))}, "
                 f"median {_n(float(np.nanmedian(col)))}\n")
    return t


def _until(cs, end: int) -> str:
    """A level change's last point in words: "the end" (of the data: still running) or its time."""
    return "the end" if end >= cs.n_points - 1 else cs.time_label(end)


def _x(x: float) -> str:
    """A comparative X in at most five characters (never cut at 80 columns): 2.51, 14.4, 145,
    9,999, 3e+06 (the others' spread next to nothing)."""
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:,.0f}" if x < 9999.5 else f"{x:.0e}"


def _z(z: float) -> str:
    """An interval's peak z in the X column's five characters: z 4.2, z 36, z 571, z 4k, z 37k,
    z1e6 (a latency that sat still and jumped)."""
    if z < 9.95:
        return f"z {z:.1f}"
    if z < 999.5:
        return f"z {z:.0f}"
    if z < 99_500:
        return f"z {z / 1000:.0f}k"
    return f"z{z:.0e}".replace("e+0", "e").replace("e+", "e")


def _n(v: float) -> str:
    if v is None or not np.isfinite(v):
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"
