"""Clusters pane: the outliers' clusters beside the normal requests, what sets each apart.

The table lists the normal group and every cluster (Table IV plus the dominant state and the
headline n-gram); below it, for the highlighted cluster, one of four views (v cycles): the
distinctive system call n-grams (Table V), the mean state counts against the normal requests
(Fig. 4), the 2-D Isomap of the requests (outliers coloured by cluster), the inertia curve that
chose k. enter lists the cluster's requests in the Requests pane.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Static

from perftriage.analysis.requests.params import unit_noun
from perftriage.analysis.units import count_of, fmt_duration
from perftriage.tui.lazy import np
from perftriage.tui.widgets.plots import bars, line, scatter
from perftriage.tui.widgets.row_table import IDENTITY, TEXT, Column, ListSource, RowTable

from .base import ViewPane

VIEWS = ("n-grams", "state counts", "map", "inertia")


IDLE = "no outlier analysis: it needs requests with critical-path features"


class ClustersPane(ViewPane):
    TITLE_ID, IDLE, TABLE_ID, EMPTY = "#clusters-title", IDLE, "#clusters-table", "no clusters"

    VIEWS = VIEWS
    DEFAULT_CSS = """
    ClustersPane #clusters-title { height: 1; color: $text-muted; }
    ClustersPane #clusters-table { height: auto; max-height: 9; }
    """

    class ShowCluster(Message):
        """Asks the app to list one cluster's requests (-1: the normal ones)."""

        def __init__(self, cluster: int):
            super().__init__()
            self.cluster = cluster

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.result = None
        self.noun = "requests"  # what a unit is: requests, processes, threads, read calls
        self.row = 0
        self._map = None
        self._map_done = False

    def compose_top(self) -> ComposeResult:
        yield Static(self.IDLE, id="clusters-title", markup=False)
        yield RowTable(id="clusters-table", empty_text="no clusters")

    @property
    def table(self) -> RowTable:
        return self.query_one("#clusters-table", RowTable)

    def show_result(self, result) -> None:
        from perftriage.analysis.requests.outlier_analysis import dominant_states  # noqa: PLC0415

        self.result = result
        self._map, self._map_done = None, False
        ra = getattr(result, "analysis", None)
        if ra is None:
            self.table.set_rows([], ListSource([]))
            self.render_view()
            return
        ft, cl, o = result.compared_features, ra.clusters, ra.outliers
        self.noun = unit_noun(getattr(result, "units", "requests"))  # requests, processes, threads...
        p = o.params
        how = f"eps {p['eps']:.3g} {p.get('units', '')}, min_samples {p['min_samples']}" if "eps" in p else p["detector"]
        self.query_one("#clusters-title", Static).update(
            f"{count_of(o.n_outliers, 'outliers')} of {len(ft):,} {self.noun} compared "
            f"({p['detector']}, {how}) · "
            f"{count_of(cl.k, 'clusters')} ({cl.k_from}) · enter lists a group's {self.noun} · v changes the view")
        rows = []
        for g_i, g in enumerate(cl.groups):
            c = -1 if g.name == "normal" else int(g.name.split()[-1]) - 1
            members = np.flatnonzero(cl.label == c)
            dom = dominant_states(ft, members, 1)
            grams = ra.ngrams.get(c, []) if c >= 0 else []
            rows.append([g.name, f"{g.size:,}", fmt_duration(g.median_ms * 1e6), fmt_duration(g.mean_ms * 1e6),
                         f"{g.mean_syscalls:.0f}", f"{g.mean_distinct_syscalls:.1f}",
                         f"{dom[0][0]} {dom[0][1] * 100:.0f}%" if dom else "",
                         grams[0].ngram if grams else ""])
        styles = [None] + ["alert"] * (len(rows) - 1)
        cols = [Column("group", "left", 6, 10, priority=IDENTITY), Column(self.noun, "right", 4, 10),
                Column("median", "right", 6, 9),
                Column("mean", "right", 6, 9), Column("syscalls", "right", 4, 8), Column("distinct", "right", 4, 8),
                Column("dominant", "left", 6, 9), Column("distinctive n-gram", "left", 10, 40, flex=True, priority=TEXT)]
        self.table.set_rows(cols, ListSource(rows, styles))
        self.row = 0
        self.render_view()

    def _cluster_of_row(self, row: int) -> int:
        return row - 1  # row 0 is the normal group

    def has_view(self) -> bool:
        return getattr(self.result, "analysis", None) is not None

    def select_cluster(self, cluster: int) -> bool:
        """Highlight a cluster's row (-1: the normal requests)."""
        if getattr(self.result, "analysis", None) is None or not 0 <= cluster + 1 < len(self.table.source):
            return False
        return self.table.focus_row(cluster + 1)

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        if event.table is self.table:
            self.row = event.row
            self.render_view()

    def on_row_table_selected(self, event: RowTable.Selected) -> None:
        if event.table is self.table and self.result is not None and self.result.analysis is not None:
            event.stop()
            self.post_message(self.ShowCluster(self._cluster_of_row(event.row)))

    # -- views ------------------------------------------------------------------------------

    def render_view(self) -> None:
        out = self.view_body
        ra = getattr(self.result, "analysis", None)
        if ra is None:
            self.clear_view()
            return
        c = self._cluster_of_row(self.row)
        name = f"normal {self.noun}" if c < 0 else f"cluster {c + 1}"
        self.show_view_title(name)
        width, height = self.view_size()
        view = self.view_name
        if view == "n-grams":
            out.update(self._ngrams_text(ra, c))
        elif view == "state counts":
            out.update(self._states_chart(ra, c, width, height))
        elif view == "inertia":
            cl = ra.clusters
            if len(cl.ks) >= 2:
                out.update(line(cl.ks, cl.inertia, width, height, f"k-means inertia against k (chosen: {cl.k})",
                                mark=cl.k))
            else:
                out.update(Text(f"k = {cl.k} ({cl.k_from})", style="dim"))
        else:
            if not self._map_done:
                out.update(Text(f"computing the Isomap of the {self.noun}…", style="dim"))
                self._compute_map()
            else:
                out.update(self._map_chart(width, height))

    def _ngrams_text(self, ra, c: int) -> Text:
        if c < 0:
            return Text("the normal group: n-grams are compared against it; pick a cluster", style="dim")
        grams = ra.ngrams.get(c, [])
        if not grams:
            return Text(f"no system call n-gram sets this cluster apart (its {self.noun} make the same calls "
                        "as the normal ones)", style="dim")
        t = Text()
        t.append(f"{'n-gram':<40} {'per request':>12} {'normal':>10} {'Welch t':>8}\n", style="bold")
        for g in grams[:15]:
            tv = "inf" if g.t == float("inf") else f"{g.t:.1f}"
            t.append(f"{g.ngram[:40]:<40} {g.mean_group:>12.2f} {g.mean_normal:>10.2f} {tv:>8}\n")
        return t

    def _states_chart(self, ra, c: int, width: int, height: int) -> Text:
        """The paper's Fig. 4: mean state counts of the cluster beside the normal requests (bars on
        log10(1 + mean), since clusters differ by orders of magnitude; the numbers below)."""
        groups = ra.clusters.groups
        states = self.result.compared_features.states
        shown = [groups[0]] + ([groups[c + 1]] if c >= 0 and c + 1 < len(groups) else [])
        series = {g.name: np.log10(1 + g.state_mean).round(3).tolist() for g in shown}
        what = ra.clusters.state_values
        out = bars(states, series, width, max(8, height - len(shown) - 1),
                   f"log10(1 + mean {what}) per state")
        out.append("\n")
        for g in shown:
            out.append(f"{g.name:<10} " + "  ".join(f"{s} {m:.1f}±{sd:.1f}" for s, m, sd in
                                                    zip(states, g.state_mean, g.state_std) if m > 0.05) + "\n")
        return out

    @work(thread=True, exclusive=True, group="cluster-map")
    def _compute_map(self) -> None:
        from perftriage.analysis.requests.map import request_map  # noqa: PLC0415

        ra = self.result.analysis
        m = request_map(self.result.compared_features, ra.clusters.label)
        self.app.call_from_thread(self._map_ready, m)

    def _map_ready(self, m) -> None:
        self._map, self._map_done = m, True
        self.render_view()

    def _map_chart(self, width: int, height: int) -> Text:
        m = self._map
        if m is None:
            return Text(f"too few {self.noun} for a map", style="dim")
        groups = {"normal": (m.x[m.group < 0], m.y[m.group < 0])}
        for c in range(self.result.analysis.clusters.k):
            sel = m.group == c
            groups[f"cluster {c + 1}"] = (m.x[sel], m.y[sel])
        return scatter(groups, width, height,
                       f"Isomap of log state durations ({len(m.rows):,} of {m.sampled_from:,} {self.noun}, log axes)")
