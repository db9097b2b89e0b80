"""Call trees pane (CloudDiag): the ranked (method, replica) pairs, the categories of requests by
call-tree shape, and below them one of three views (v cycles) for the highlighted row: the
method's time on each of its replicas (sparklines over time on one scale, and quantiles), the
call tree of an example request with self and total times, and, with ``--reference``, the
methods side by side with the baseline. tab moves between the two tables."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from perftriage.analysis.units import count_of
from perftriage.tui.lazy import np
from perftriage.tui.widgets.row_table import IDENTITY, OPTIONAL, TEXT, Column, ListSource, RowTable
from perftriage.tui.widgets.sparkline import sparkline

from .base import ViewPane

VIEWS = ("replicas", "call tree", "reference", "links")


def _ms(v: float) -> str:
    """Three significant digits in at most six characters: a column at its narrowest never cuts one."""
    if not np.isfinite(v):
        return "-"
    if v >= 1000:
        s = v / 1000
        return f"{s:.2f}s" if s < 10 else f"{s:.1f}s" if s < 100 else f"{s:,.0f}s"
    return f"{v:.0f}ms" if v >= 100 else f"{v:.1f}ms" if v >= 10 else f"{v:.2f}ms"


def _guide(depth: int) -> str:
    """Tree guides instead of leading spaces (which the renderer drops at the start of a line)."""
    return "" if depth <= 0 else "│ " * (depth - 1) + "└ "


IDLE = "no call-tree analysis: it needs request spans (OTLP / Jaeger / Zipkin JSON, span CSV, CloudDiag log)"


class CallTreesPane(ViewPane):
    TITLE_ID, IDLE, TABLE_ID, EMPTY = "#ct-title", IDLE, "#ct-pairs", "no (method, replica) pair is anomalous"

    VIEWS = VIEWS
    DEFAULT_CSS = """
    CallTreesPane #ct-title { height: 1; color: $text-muted; }
    CallTreesPane #ct-changed { height: auto; max-height: 5; }
    CallTreesPane #ct-pairs { height: auto; max-height: 9; }
    CallTreesPane #ct-cats-title { height: 1; background: $boost; }
    CallTreesPane #ct-cats { height: auto; max-height: 7; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.result = None
        self.pair_row = 0
        self.cat_row = 0
        self.subject = "pair"  # which table's row the view shows
        self.failing = None  # (category, RequestTree): the failing request a finding opened

    def compose_top(self) -> ComposeResult:
        yield Static(self.IDLE, id="ct-title", markup=False)
        yield Static("", id="ct-changed", markup=False)
        yield RowTable(id="ct-pairs", empty_text="no (method, replica) pair is anomalous", open_label=None)
        yield Static("request categories (call-tree shapes)", id="ct-cats-title", markup=False)
        yield RowTable(id="ct-cats", empty_text="no categories", open_label=None)

    @property
    def pairs(self) -> RowTable:
        return self.query_one("#ct-pairs", RowTable)

    @property
    def cats(self) -> RowTable:
        return self.query_one("#ct-cats", RowTable)

    @property
    def diagnosis(self):
        return getattr(self.result, "diagnosis", None)

    def show_result(self, result) -> None:
        from perftriage.analysis.calltrees.findings import category_name  # noqa: PLC0415

        self.result = result
        self.query_one("#ct-changed", Static).update(changed_text(getattr(result, "change", None), result))
        d = self.diagnosis
        if d is None:
            self.pairs.set_rows([], ListSource([]))
            self.cats.set_rows([], ListSource([]))
            self.render_view()
            return
        p = d.params
        n_an = sum(r.analysed for r in d.categories)
        self.query_one("#ct-title", Static).update(
            f"{count_of(len(d.trees.spans), 'spans')} · {count_of(sum(c.size for c in d.trees.categories), 'requests')}, "
            f"{count_of(len(d.categories), 'categories')}, {n_an} analysed (CV > {p.alpha:g}) · "
            f"{count_of(len(d.ranking), 'pairs', 'anomalous')} (beta < {p.beta:g}, {p.times} times) · tab · v")
        rows = []
        for i, pr in enumerate(d.ranking):
            rows.append([str(i + 1), pr.method_name, pr.replica_name, str(pr.categories), f"{pr.min_beta:.3f}",
                         _ms(pr.replica_median_ms), _ms(pr.peers_median_ms),
                         f"{pr.ratio:.1f}x" if np.isfinite(pr.ratio) else "-", f"{pr.flagged:,}/{pr.calls:,}"])
        cols = [Column("#", "right", 2, 4), Column("method", "left", 10, 40, flex=True, priority=IDENTITY),
                Column("replica", "left", 6, 24, priority=IDENTITY), Column("categories", "right", 4, 10), Column("beta", "right", 5, 6),
                Column("median", "right", 6, 9), Column("peers", "right", 6, 9), Column("ratio", "right", 5, 7),
                Column("anomalous calls", "right", 6, 15)]
        self.pairs.set_rows(cols, ListSource(rows, ["alert"] * min(3, len(rows)) + [None] * max(0, len(rows) - 3)))
        crows, styles = [], []
        names = d.trees.spans.methods
        for r in d.categories:
            c = r.category
            anomalous = ", ".join(sorted({names[c.methods[j]] for j in r.anomalous_columns}))
            crows.append([str(c.index + 1), category_name(c.shape), f"{c.size:,}", str(c.width), _ms(r.p50_ms),
                          _ms(r.p99_ms), f"{r.cv:.3f}", "yes" if r.analysed else "no",
                          f"{float(r.beta.min()):.3f}" if r.beta is not None else "-", anomalous or "-"])
            styles.append("alert" if r.anomalous else (None if r.analysed else "muted"))
        ccols = [Column("#", "right", 2, 4), Column("root method", "left", 8, 40, priority=IDENTITY), Column("requests", "right", 4, 9),
                 Column("calls", "right", 3, 5, priority=OPTIONAL), Column("p50", "right", 6, 9), Column("p99", "right", 6, 9),
                 Column("CV", "right", 5, 6), Column("analysed", "left", 3, 8, priority=OPTIONAL),
                 Column("min beta", "right", 5, 8, priority=OPTIONAL),
                 Column("anomalous methods", "left", 8, 40, flex=True, priority=TEXT)]
        self.cats.set_rows(ccols, ListSource(crows, styles))
        self.pair_row = self.cat_row = 0
        self.failing = None
        self.subject = "pair" if d.ranking else "category"
        self.render_view()

    def has_view(self) -> bool:
        return self.diagnosis is not None

    def select_pair(self, method: str, replica: str | None) -> bool:
        """Highlight the anomalous pair (method, replica); replica None: the method's first pair."""
        return self.pairs.focus_row(self._first_pair(
            lambda p: p.method_name == method and (replica is None or p.replica_name == replica)))

    def _first_pair(self, match) -> int | None:
        """The row of the most anomalous pair that ``match``es (None: none, or no diagnosis)."""
        ranking = self.diagnosis.ranking if self.diagnosis is not None else []
        return next((i for i, p in enumerate(ranking) if match(p)), None)

    def select_part(self, part: str | None) -> bool:
        """``categories``: the request categories' list."""
        if part != "categories" or self.diagnosis is None:
            return False
        self.cats.focus()
        return True

    def select_method(self, method: str) -> bool:
        """Highlight the largest request category whose call tree calls ``method``, its call tree
        shown (where the method sits among its callers and callees)."""
        d = self.diagnosis
        if d is None:
            return False
        names = d.trees.spans.methods
        row = next((i for i, r in enumerate(d.categories) if any(names[m] == method for m in r.category.methods)), None)
        if row is None:
            return False
        self.view = self.VIEWS.index("call tree")
        self.cats.focus()
        return self.cats.focus_row(row)

    def select_failing(self, method: str) -> bool:
        """The call tree of a request where an error started in ``method`` (a failing finding),
        its category highlighted; the category's own example again once another is highlighted."""
        from perftriage.analysis.calltrees.view import failing_request  # noqa: PLC0415

        d = self.diagnosis
        found = failing_request(d, method) if d is not None else None
        if found is None:
            return self.select_method(method)
        self.failing = found
        self.view = self.VIEWS.index("call tree")
        self.cats.focus()
        shown = self.cats.focus_row(found[0])
        self.render_view()
        return shown

    def select_pod(self, pod: str, service: str | None = None) -> bool:
        """Highlight the most anomalous pair on ``pod`` (what changed around it); with none there,
        the service's first pair. False (the list as it was) when neither is anomalous."""
        row = self._first_pair(lambda p: p.replica_name == pod)
        if row is None and service is not None:
            row = self._first_pair(lambda p: p.method_name.split(":", 1)[0] == service)
        return self.pairs.focus_row(row)

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        if event.table is self.pairs:
            self.pair_row, self.subject = event.row, "pair"
        elif event.table is self.cats:
            self.cat_row, self.subject = event.row, "category"
            if self.failing is not None and event.row != self.failing[0]:
                self.failing = None  # another category: its own example request
        else:
            return
        self.render_view()

    def on_descendant_focus(self, event) -> None:
        if event.widget is self.pairs and self.diagnosis is not None and self.diagnosis.ranking:
            self.subject = "pair"
            self.render_view()
        elif event.widget is self.cats:
            self.subject = "category"
            self.render_view()

    # -- views ------------------------------------------------------------------------------

    def _current(self):
        d = self.diagnosis
        if self.subject == "pair" and d.ranking:
            return d.ranking[min(self.pair_row, len(d.ranking) - 1)], None
        if d.categories:
            return None, min(self.cat_row, len(d.categories) - 1)
        return None, None

    def render_view(self) -> None:
        from perftriage.analysis.calltrees.findings import category_name  # noqa: PLC0415

        out = self.view_body
        d = self.diagnosis
        if d is None:
            self.clear_view()
            return
        pair, cat = self._current()
        what = (f"{pair.method_name} on {pair.replica_name}" if pair is not None else
                f"category {cat + 1} ({category_name(d.categories[cat].category.shape)})" if cat is not None else "")
        self.show_view_title(what)
        view = self.view_name
        width, _ = self.view_size()
        if view == "replicas":
            out.update(self._replicas_text(pair, cat, width))
        elif view == "call tree":
            out.update(self._tree_text(pair, cat, width))
        elif view == "reference":
            out.update(self._reference_text(pair, cat))
        else:
            out.update(self._links_text())

    def _replicas_text(self, pair, cat, width: int) -> Text:
        from perftriage.analysis.calltrees.findings import pair_evidence  # noqa: PLC0415
        from perftriage.analysis.calltrees.view import method_replicas  # noqa: PLC0415

        d = self.diagnosis
        if pair is None:
            if cat is None:
                return Text("")
            r = d.categories[cat]
            if r.beta is None:
                return Text(f"category not analysed: {r.reason}", style="dim")
            names = d.trees.spans.methods
            t = Text(f"beta per call of the tree (threshold {d.params.beta:g})\n", style="bold")
            for j, b in enumerate(r.beta):
                depth = r.category.depths[j]
                t.append(f"{_guide(depth) + names[r.category.methods[j]]:<40} {b:6.3f}\n",
                         style="red" if b < d.params.beta else "")
            return t
        bins = max(10, min(60, width - 58))
        reps, _ = method_replicas(d, pair.method, pair.replica, bins=bins)
        lo = min((np.nanmin(s.series) for s in reps if np.isfinite(s.series).any()), default=0.0)
        hi = max((np.nanmax(s.series) for s in reps if np.isfinite(s.series).any()), default=1.0)
        t = Text(f"{d.params.times} time of {pair.method_name} per replica, median per window over the whole "
                 f"run (one scale {_ms(lo)} to {_ms(hi)})\n", style="bold")
        t.append(f"{'replica':<14} {'calls':>7} {'p5':>8} {'p50':>8} {'p95':>8}  over time\n", style="bold")
        for s in reps:
            line = (f"{s.replica[:14]:<14} {s.calls:>7,} {_ms(s.p5):>8} {_ms(s.p50):>8} {_ms(s.p95):>8}  "
                    f"{sparkline(s.series, lo, hi)}\n")
            t.append(line, style="red bold" if s.flagged else "")
        t.append("\n")
        for line in pair_evidence(d, pair):
            t.append(f"• {line}\n")
        return t

    def _tree_text(self, pair, cat, width: int) -> Text:
        from perftriage.analysis.calltrees.view import example_request  # noqa: PLC0415

        d = self.diagnosis
        if pair is None and self.failing is not None and self.failing[0] == cat:
            rt = self.failing[1]  # the failing request a finding opened
        else:
            rt = example_request(d, pair=pair, category=None if pair is not None else cat)
        if rt is None:
            return Text("no request to show", style="dim")
        t = Text(f"request {rt.trace} · {_ms(rt.latency_ns / 1e6)} · {rt.why}\n", style="bold")
        name_w = max(24, min(50, width - 60))
        t.append(f"{'call':<{name_w}} {'replica':<14} {'start':>9} {'total':>9} {'self':>9}  self share\n",
                 style="bold")
        total = max(1, rt.latency_ns)
        for r in rt.rows:
            label = (_guide(r.depth) + ("✗ " if r.failed else "") + r.method)[:name_w]
            bar = "█" * max(0, round(r.self_ns / total * 20))
            t.append(f"{label:<{name_w}} {r.replica[:14]:<14} {_ms(r.offset_ns / 1e6):>9} {_ms(r.total_ns / 1e6):>9} "
                     f"{_ms(r.self_ns / 1e6):>9}  {bar}\n", style="red bold" if r.flagged or r.failed else "")
        if any(r.failed for r in rt.rows):
            t.append(f"✗: {rt.failed_means}\n", style="dim")
        t.append("start: from the request's start, on each host's own clock (offsets between hosts show here; the "
                 "tree itself comes from span ids, not times)\n", style="dim")
        return t

    def _links_text(self) -> Text:
        """The links between services (calling service -> called pod), slowest first: the time
        between client and server, the slow ones marked (slow_links.py)."""
        from perftriage.analysis.units import fmt_when  # noqa: PLC0415

        links = getattr(self.result, "links", None)
        if links is None or not np.isfinite(links.usual_ms):  # no spans, or too few links to say what is usual
            return Text("no links between services to compare: fewer than 4 with 20 calls or more", style="dim")
        t = Text(f"time between client and server per link, slowest first (the links' usual median "
                 f"{_ms(links.usual_ms)}; slow: {links.params['links_ratio']:g}x that and "
                 f"{links.params['links_min_added_ms']:g} ms more)\n", style="bold")
        t.append(f"{'calling service -> called pod':<50} {'calls':>6} {'median':>7} {'p90':>7}\n", style="bold")
        for x in links.links[:60]:
            t.append(f"{(x.caller + ' -> ' + x.callee)[:50]:<50} {x.calls:>6,} {_ms(x.median_ms):>7} "
                     f"{_ms(x.p90_ms):>7}\n", style="red bold" if x.slow else "")
            if x.since_ns is not None:  # slow from a time on: the median is its calls' from then
                t.append(f"  its {x.calls_after:,} calls from {fmt_when(x.since_ns, False, 0)} on; "
                         f"{_ms(x.before_ms)} before\n", style="red")
        return t

    def _reference_text(self, pair, cat) -> Text:
        cmp = getattr(self.result, "comparison", None)
        if cmp is None:
            return Text("no reference: open with --reference BASELINE_SPANS to compare methods and categories "
                        "against a baseline", style="dim")
        t = Text(f"{'method':<34} {'ref n':>7} {'n':>7} {'ref p50':>9} {'p50':>9} {'ref p95':>9} {'p95':>9} "
                 f"{'change':>7}\n", style="bold")
        rows = cmp.methods
        if pair is not None:
            rows = [c for c in cmp.replicas if c.name.startswith(pair.method_name + " @ ")] + rows
        for c in rows[:40]:
            t.append(f"{c.name[:34]:<34} {c.ref_n:>7,} {c.n:>7,} {_ms(c.ref_median_ms):>9} {_ms(c.median_ms):>9} "
                     f"{_ms(c.ref_p95_ms):>9} {_ms(c.p95_ms):>9} {c.change:>6.2f}x\n",
                     style="red bold" if c.significant and c.change > 1 else "")
        return t



def changed_text(ch, result) -> Text:
    """What changed against the minutes before: the suspects, most explained first, one line each."""
    t = Text()
    failures = getattr(result, "failures", None)  # the calls that fail: first, whatever else is said
    if failures is not None and failures.methods:
        t.append(failures.methods[0].headline() + "\n", style="bold red")
    slow_links = _slow_links_headline(result)  # what the links between services say, as they are
    lost = getattr(result, "lost", None)  # calls a method stops making (said where no time was compared)
    if lost is not None and lost.calls:
        slow_links = "\n".join(x for x in (slow_links, lost.calls[0].headline()) if x)
    if ch is None:
        if slow_links:  # first
            t.append(slow_links + "\n", style="bold red")
        notes = [n for n in getattr(getattr(result, "report", None), "notes", []) if n.startswith("what changed")]
        if notes:
            t.append(notes[0], style="dim")
        return t
    if getattr(ch, "method", None) is not None:  # the method whose calls gave the time
        t.append(ch.method.headline() + "\n", style="bold red")
    t.append(f"what changed ({ch.requests:,} requests against {ch.ref_requests:,}): ", style="bold")
    if not ch.suspects:
        t.append("nothing significant")
        if getattr(ch, "method", None) is None and slow_links:
            t.append("\n" + slow_links, style="bold red")
        return t
    for i, s in enumerate(ch.suspects[:3]):
        t.append(f"\n {i + 1}. ", style="bold")
        t.append(f"{s.service}", style="bold red" if i == 0 else "bold")
        t.append(f" ({s.pod}): {s.headline()}")
    return t


def _slow_links_headline(result) -> str:
    """The slow links' headline (slow_links.py), "" where no link is slow."""
    links = getattr(result, "links", None)
    return links.suspects[0].headline(links.usual_ms) if links is not None and links.suspects else ""
