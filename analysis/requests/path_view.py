"""A request's critical path prepared for display: per-thread rows of a character timeline,
the segment list and the share of each state (used by the app and by Markdown findings)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perftriage.analysis.execgraph.graph import ExecGraph

from .critical_path import NSTATES, STATES, PathFinder, Segments, finders
from .states import STATE_CHAR



@dataclass
class PathView:
    t0: int
    t1: int
    segments: Segments
    thread_order: list[tuple[int, int]]  # (host index, tid), in order of first appearance on the path
    thread_label: dict[tuple[int, int], str]
    durations: np.ndarray  # per state, ns

    def elsewhere(self) -> list[tuple[str, int]]:
        """(other host, ns of the path spent there), most first; empty when the path stays on
        the request's host."""
        s = self.segments
        if len(s.hosts) < 2:
            return []
        per = s.time_by_host()
        return sorted(((s.hosts[h], int(per[h])) for h in range(1, len(s.hosts)) if per[h] > 0),
                      key=lambda x: -x[1])

    def label_of(self, i: int) -> str:
        """The label of segment i's thread."""
        return self.thread_label[(int(self.segments.hosts_of()[i]), int(self.segments.tid[i]))]

    @property
    def total(self) -> int:
        return self.t1 - self.t0

    def shares(self) -> list[tuple[str, float]]:
        tot = float(self.durations.sum()) or 1.0
        return [(STATES[k], float(self.durations[k]) / tot) for k in np.argsort(-self.durations, kind="stable")
                if self.durations[k] > 0]

    def bar(self, width: int) -> list[int]:
        """State code per column of a stacked bar ``width`` wide (largest remainder rounding)."""
        tot = float(self.durations.sum())
        if tot <= 0 or width <= 0:
            return []
        exact = self.durations / tot * width
        cells = np.floor(exact).astype(int)
        rest = width - cells.sum()
        for k in np.argsort(-(exact - cells), kind="stable")[:rest]:
            cells[k] += 1
        out = []
        for k in range(NSTATES):
            out += [k] * int(cells[k])
        return out

    def timeline(self, width: int) -> list[tuple[str, list[int]]]:
        """Per thread: its label and, per column, the state it is in on the path (-1: not on the
        path then). A column shows the state that covers most of its time slice.

        A thread's segments on the path are disjoint and in time order, so the time it spends in a
        state up to any instant is a cumulative sum read by one sorted search for all the column
        edges (a loop over segments and columns took 1.8 s for the six paths the app drew on
        tracevizlab-apt, where a process's path has tens of thousands of segments)."""
        rows = []
        if width <= 0 or self.total <= 0:
            return rows
        edges = self.t0 + (np.arange(width + 1) * self.total) // width
        s = self.segments
        host = s.hosts_of()
        for key in self.thread_order:
            m = (host == key[0]) & (s.tid == key[1])
            a, b, st = s.start[m].astype(np.int64), s.end[m].astype(np.int64), s.state[m]
            order = np.argsort(a, kind="stable")
            a, b, st = a[order], b[order], st[order]
            cover = np.zeros((width, NSTATES), np.int64)
            for k in np.unique(st).tolist():
                sel = st == k
                ak, lk = a[sel], b[sel] - a[sel]
                done = np.r_[0, np.cumsum(lk)]  # time in state k before each segment of it
                j = np.searchsorted(ak, edges, "right") - 1  # the last segment starting at or before each edge
                jj = np.maximum(j, 0)
                upto = np.where(j >= 0, done[jj] + np.minimum(edges - ak[jj], lk[jj]), 0)  # edges - ak[jj] >= 0 there
                cover[:, k] = np.diff(upto)
            cells = np.where(cover.sum(axis=1) > 0, cover.argmax(axis=1), -1)
            rows.append((self.thread_label[key], cells.tolist()))
        return rows

    def text_timeline(self, width: int) -> list[str]:
        chars = [STATE_CHAR[s] for s in STATES]
        label_w = max((len(lbl) for lbl, _ in self.timeline(1)), default=0)
        return [f"{lbl:<{label_w}} |" + "".join(chars[c] if c >= 0 else " " for c in cells) + "|"
                for lbl, cells in self.timeline(width)]


def path_view(g: ExecGraph, tid: int, t0: int, t1: int, finder: PathFinder | None = None) -> PathView:
    """The path of ``tid`` over [t0, t1]; threads of other hosts the path crosses to (through
    packets) are labelled with their host."""
    pf = finder or PathFinder(g)
    seg = pf.path(tid, t0, t1).segments(g)
    order: list[tuple[int, int]] = []
    for key in zip(seg.hosts_of().tolist(), seg.tid.tolist()):
        if key not in order:
            order.append(key)
    graphs = pf.graphs or {g.host: g}
    labels = {}
    for h, t in order:
        host = seg.hosts[h] if seg.hosts else g.host
        gx = graphs.get(host, g)
        labels[(h, t)] = f"{gx.comm(t)} {t}" if h == 0 else f"{host}: {gx.comm(t)} {t}"
    return PathView(t0, t1, seg, order, labels, seg.durations())


class PathSource:
    """Request paths over the graphs of one analysis (host -> ExecGraph), one finder per host
    built at the first question and shared by the next ones (their lookups are the cost): what
    the analysing child answers the app from, and the app itself when it ran the analysis."""

    def __init__(self, graphs: dict[str, ExecGraph]):
        self.graphs = graphs
        self._finders: dict[str, PathFinder] | None = None
        self._arrays: tuple[int, ...] = ()  # the tables the finders read (ids: alive while they are)

    def path(self, host: str, tid: int, t0: int, t1: int) -> tuple[PathView | None, str]:
        """The path of ``tid`` of ``host`` over [t0, t1], or None and why there is none."""
        g = self.graphs.get(host)
        if g is None:
            return None, f"no kernel trace for host {host}: no critical path"
        arrays = self._tables()
        found = self._finders
        if found is None or arrays != self._arrays:  # new, or the graphs' tables moved (on_disk.py)
            self._finders = found = None  # the old lookups let go of the tables they read before the new ones are made
            found = self._finders = finders(self.graphs)  # paths cross hosts through packets: all hosts' at once
            self._arrays = arrays
        return path_view(g, tid, t0, t1, found[host]), ""

    def let_go_if_moved(self) -> None:
        """Drop the lookups when the graphs' tables moved since they were made (they hold the
        old ones); the next question makes new ones. Safe beside a question being answered."""
        if self._finders is not None and self._arrays != self._tables():
            self._finders = None

    def _tables(self) -> tuple[int, ...]:
        return tuple(id(x.iv_start) for x in self.graphs.values())
