"""The bounded critical path of a thread between two timestamps (Giraldeau & Dagenais; the rules
of ../shared/reference/critical-path.md, on the interval form of :mod:`analysis.execgraph`).

Walk the thread's intervals over ``[t0, t1]``. Running and waiting-for-CPU intervals are on the
path as they are. A blocked interval woken by another task (process context) is replaced by what
that waker did over the blocked part of the window, recursively (the waker may itself have been
blocked and woken by a third task, and so on, across processes). A blocked interval woken from
interrupt context stays, labelled by the context (block softirq: disk, network softirq: network,
timer/hrtimer: timer, other interrupts); one whose waker is unknown stays as "blocked on a task"
(or "in futex" when the thread was in a futex call). Where a waker did not exist yet (forked
inside the window), the path continues in its parent, through the fork edge; where nothing of a
waker was seen before a point inside the window but a packet it received there while running
(``ExecGraph.arrivals``), the path continues in that packet's sender, then the packet's flight
(the reference's network edge at a dead end).

The result covers ``[t0, t1]`` exactly. Runs of running/preempted intervals are kept as index
ranges into the graph (no Python work per interval), so the cost is per blocked interval.

Departures from the reference, on purpose: an unresolved blocked interval inside a waker's
history is kept (as BT) rather than dropped, so the path always covers the window without
"gap" edges; the recursion is depth-bounded (``max_depth``) and always moves to strictly
earlier windows, so a malformed trace cannot make it loop (one of the reference's known quirks).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.execgraph.graph import (BLOCKED, BP, EXITED, FOLLOW, FOLLOW_NET, FOLLOW_REMOTE, RS, RU, ST_BN,
                                                 ST_BT, ExecGraph)

STATES = ("RU", "RS", "BP", "BD", "BN", "BS", "BI", "BF", "BT")
STATE_NAMES = {
    "RU": "running in user mode",
    "RS": "running in a system call",
    "BP": "preempted (runnable, waiting for a CPU)",
    "BD": "blocked on disk",
    "BN": "blocked on network",
    "BS": "blocked on a timer",
    "BI": "blocked on another interrupt",
    "BF": "blocked in futex (waker unknown)",
    "BT": "blocked on a task that could not be followed",
}
#: what a state means, in the words of a ticket
STATE_WORDS = {
    "RU": "running on a CPU",
    "RS": "running in system calls",
    "BP": "waiting for a CPU",
    "BD": "waiting for the disk",
    "BN": "waiting for the network",
    "BS": "sleeping (timers)",
    "BI": "waiting for a device interrupt",
    "BF": "waiting on a lock (futex)",
    "BT": "waiting for a task that could not be followed",
}
WAITS = ("BP", "BD", "BN", "BS", "BI", "BF", "BT")
NSTATES = len(STATES)
_PASS = (RU, RS, BP)


@dataclass
class Path:
    """A critical path as pieces. Piece i is either a range of graph intervals
    ``[k0[i], k1[i])`` of thread ``tid[i]`` of graph ``graph[i]`` clipped to ``[a[i], b[i]]``
    (their own states), or, when ``k0[i] < 0``, one segment of state ``state[i]``. Times are on
    the piece's graph's clock; ``shift[i]`` takes them to the request's host's clock (0 on the
    request's own host)."""

    tid: list
    k0: list
    k1: list
    a: list
    b: list
    state: list
    via: list  # tid whose blocked interval this piece replaces (-1 for the request's own thread)
    graph: list = field(default_factory=list)
    shift: list = field(default_factory=list)

    def segments(self, g: ExecGraph) -> "Segments":
        """Materialised, time-ordered segments (thread, start, end, state, via, host), on the
        clock of ``g`` (the request's host), zero-length ones dropped and equal neighbours
        merged. Vectorised over all pieces of each graph at once."""
        if not self.tid:
            e = np.zeros(0, np.int64)
            return Segments(e, e, e, np.zeros(0, np.int8), e, np.zeros(0, np.int16), [g.host])
        graphs = self.graph or [g] * len(self.tid)
        hosts = [g.host]
        for x in graphs:
            if x.host not in hosts:
                hosts.append(x.host)
        k0 = np.array(self.k0, np.int64)
        k1 = np.array(self.k1, np.int64)
        synth = k0 < 0
        # one row per interval of the ranged pieces, one per synthetic piece, in piece order
        lens = np.where(synth, 1, k1 - k0)
        piece = np.repeat(np.arange(len(k0)), lens)
        within = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        a = np.array(self.a, np.int64)[piece]
        b = np.array(self.b, np.int64)[piece]
        is_syn = synth[piece]
        k = np.where(is_syn, 0, k0[piece] + within)
        host_of_piece = np.array([hosts.index(x.host) for x in graphs], np.int16)
        host = host_of_piece[piece]
        start = a.copy()
        end = b.copy()
        state = np.array(self.state, np.int64)[piece]
        for hi, name in enumerate(hosts):  # the ranged pieces' intervals, graph by graph
            m = (~is_syn) & (host == hi)
            if not m.any():
                continue
            gx = g if name == g.host else next(x for x in graphs if x.host == name)
            km = k[m]
            start[m] = np.maximum(gx.iv_start[km], a[m])
            end[m] = np.minimum(gx.iv_end[km], b[m])
            state[m] = gx.iv_state[km]
        if self.shift:
            sh = np.array(self.shift, np.int64)[piece]
            start += sh
            end += sh
        keep = end > start
        seg = Segments(np.array(self.tid, np.int64)[piece][keep], start[keep], end[keep],
                       state[keep].astype(np.int8), np.array(self.via, np.int64)[piece][keep], host[keep], hosts)
        return seg.merged()


@dataclass
class Segments:
    tid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    state: np.ndarray
    via: np.ndarray
    host: np.ndarray | None = None  # index into ``hosts`` (0: the request's host)
    hosts: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.tid)

    def hosts_of(self) -> np.ndarray:
        return self.host if self.host is not None else np.zeros(len(self.tid), np.int16)

    def merged(self) -> "Segments":
        n = len(self.tid)
        if n == 0:
            return self
        host = self.hosts_of()
        same = np.empty(n, bool)
        same[0] = False
        same[1:] = ((self.tid[1:] == self.tid[:-1]) & (host[1:] == host[:-1]) & (self.state[1:] == self.state[:-1])
                    & (self.start[1:] == self.end[:-1]))
        heads = np.flatnonzero(~same)
        tails = np.empty(len(heads), np.int64)
        tails[:-1] = heads[1:] - 1
        tails[-1] = n - 1
        return Segments(self.tid[heads], self.start[heads], self.end[tails], self.state[heads], self.via[heads],
                        host[heads], self.hosts)

    def time_by_host(self) -> np.ndarray:
        """Total duration per host (ns), indexed like ``hosts`` (0: the request's host)."""
        return np.bincount(self.hosts_of(), weights=self.end - self.start,
                           minlength=max(len(self.hosts), 1)).astype(np.int64)

    def durations(self) -> np.ndarray:
        """Total duration per state (ns), indexed like STATES."""
        return np.bincount(self.state, weights=(self.end - self.start), minlength=NSTATES).astype(np.int64)

    def counts(self) -> np.ndarray:
        """Number of segments per state (after merging equal neighbours of one thread)."""
        return np.bincount(self.state, minlength=NSTATES).astype(np.int64)


def _next_nonpass(state: np.ndarray, block: int = 1 << 20) -> np.ndarray:
    """For every interval, the index of the first interval at or after it that is not running
    (RU/RS/BP), or ``len(state)``. Built a block at a time from the end, in int32 when it fits,
    so that it adds a small fraction to the graph's memory rather than several copies of it."""
    n = len(state)
    out = np.empty(n, np.int32 if n < 2**31 - 1 else np.int64)
    carry = n
    for lo in range(((n - 1) // block) * block if n else 0, -1, -block):
        hi = min(lo + block, n)
        idx = np.where(np.isin(state[lo:hi], _PASS), carry, np.arange(lo, hi))
        acc = np.minimum.accumulate(idx[::-1])[::-1]
        np.minimum(acc, carry, out=acc)
        out[lo:hi] = acc
        carry = int(acc[0]) if len(acc) else carry
    return out


class _GraphIndex:
    """One graph with the lookups the walk needs (built once per graph, shared by finders)."""

    def __init__(self, g: ExecGraph):
        self.g = g
        # next non-pass interval index (not bounded by thread: callers cap with the thread's end)
        self.next_nonpass = _next_nonpass(g.iv_state)
        self._bounds: dict[int, tuple[int, int]] = {}

    def thread(self, tid: int):
        b = self._bounds.get(tid)
        if b is None:
            sl = self.g.intervals_of(tid)
            b = self._bounds[tid] = (sl.start, sl.stop)
        return b, self.g.iv_end[b[0]:b[1]]


class PathFinder:
    """Critical paths over one host's graph (caches per-thread lookups between calls).

    ``graphs``: every host's graph, for paths that cross to another traced host through a
    packet (FOLLOW_REMOTE); without it such waits stay BN. Finders made by :func:`finders`
    share their per-graph lookups."""

    def __init__(self, g: ExecGraph, max_depth: int = 10_000, graphs: dict | None = None,
                 _shared: dict | None = None):
        self.g = g
        self.max_depth = max_depth
        self.graphs = graphs or {}
        self._index = _shared if _shared is not None else {}
        self._own = self._graph(g.host, g)

    def _graph(self, host: str, g: ExecGraph | None = None) -> _GraphIndex | None:
        gi = self._index.get(host)
        if gi is None:
            g = g if g is not None else self.graphs.get(host)
            if g is None:
                return None
            gi = self._index[host] = _GraphIndex(g)
        return gi

    def path(self, tid: int, t0: int, t1: int) -> Path:
        out = Path([], [], [], [], [], [], [], [], [])
        stack = [(tid, t0, t1, 0, -1, self._own, 0)]
        while stack:
            T, pos, b, depth, via, G, shift = stack.pop()
            g = G.g
            if T is None:  # a packet in flight: the blocked thread (here in depth) waits on the network
                self._emit(out, depth, pos, b, ST_BN, via, g, shift)
                continue
            if depth and len(g.arrivals) and depth < self.max_depth and self._arrival(stack, T, pos, b, depth, via, G,
                                                                                      shift):
                continue
            iv_start, iv_end, iv_state = g.iv_start, g.iv_end, g.iv_state
            iv_block, iv_waker = g.iv_block, g.iv_waker
            nnp = G.next_nonpass
            (lo, hi), ends = G.thread(T)
            k = lo + int(ends.searchsorted(pos, "right"))
            while pos < b:
                if k >= hi:
                    self._emit(out, T, pos, b, ST_BT, via, g, shift)
                    break
                s = int(iv_start[k])
                if s > pos:  # not yet known at pos (cannot happen for a contiguous thread)
                    e = min(s, b)
                    self._emit(out, T, pos, e, ST_BT, via, g, shift)
                    pos = e
                    continue
                j = min(int(nnp[k]), hi)
                if j > k:
                    run_end = int(iv_end[j - 1])
                    last = run_end >= b
                    if last:  # last piece of this window: cut the range at b
                        j = min(lo + int(ends.searchsorted(b - 1, "right")) + 1, j)
                        run_end = b
                    out.tid.append(T)
                    out.k0.append(k)
                    out.k1.append(j)
                    out.a.append(pos)
                    out.b.append(run_end)
                    out.state.append(-1)
                    out.via.append(via)
                    out.graph.append(g)
                    out.shift.append(shift)
                    pos = run_end
                    if last:
                        break
                    k = j
                    continue
                # k is not running: blocked, unknown or not existing
                e = min(int(iv_end[k]), b)
                st = int(iv_state[k])
                if st == BLOCKED:
                    blk = int(iv_block[k])
                    waker = int(iv_waker[k])
                    if blk in (FOLLOW_NET, FOLLOW_REMOTE) and depth < self.max_depth and e > pos:
                        # the sender's work up to the send (on its host, for a packet from another
                        # traced host), then the packet's flight (BN); d: this clock to the
                        # sender's, taken once so that the pieces tile the window exactly
                        if blk == FOLLOW_NET:
                            R, d, t_sent = (G if waker != T else None), 0, g.net_links.get(k, pos)
                        else:
                            host, t_sent = g.remote_links[k]
                            R, d = self._sender(G, host, pos)
                        if R is not None:
                            sent = min(max(t_sent - d, pos), e)
                            stack.append((T, e, b, depth, via, G, shift))
                            stack.append((None, sent, e, T, via, G, shift))
                            if sent > pos:
                                stack.append((waker, pos + d, sent + d, depth + 1, T, R, shift - d))
                            break
                    if blk == FOLLOW and depth < self.max_depth and waker != T and e > pos:
                        stack.append((T, e, b, depth, via, G, shift))
                        stack.append((waker, pos, e, depth + 1, T, G, shift))
                        break
                    self._emit(out, T, pos, e, ST_BT if blk == FOLLOW else ST_BN if blk in (FOLLOW_NET, FOLLOW_REMOTE)
                               else blk, via, g, shift)
                elif st == EXITED:
                    info = g.threads.get(T)
                    parent = info.parent if info is not None else None
                    if (parent is not None and info.fork_ts is not None and info.fork_ts >= e
                            and depth < self.max_depth and parent != T):
                        # the thread did not exist yet: what led to it is its parent's work
                        stack.append((T, e, b, depth, via, G, shift))
                        stack.append((parent, pos, e, depth + 1, T, G, shift))
                        break
                    self._emit(out, T, pos, e, ST_BT, via, g, shift)
                else:  # UNKNOWN
                    self._emit(out, T, pos, e, ST_BT, via, g, shift)
                pos = e
                k += 1
        return out

    def _sender(self, G: _GraphIndex, host: str, pos: int):
        """The graph of a packet's sender and the shift from this clock to its clock (None
        when the sender's host is not traced or its clock not fitted)."""
        g = G.g
        if host == g.host:
            return G, 0
        R, fit = self._graph(host), g.clocks.get(host)
        if R is None or fit is None:
            return None, 0
        return R, fit.shift(pos)

    def _arrival(self, stack, T, pos, b, depth, via, G, shift) -> bool:
        """A waker whose history begins after ``pos`` (nothing of it was seen before: its state
        there is inferred) but which received a packet inside the window while running: the
        window up to the receive is the sender's work, then the packet's flight, as the
        reference follows the network edge where a worker's history runs out. Pushes the pieces
        and returns True, or returns False."""
        g = G.g
        arr = g.arrivals
        j = arr.first_of(T)
        if j < 0:
            return False
        t_r = int(arr.t[j])
        info = g.threads.get(T)
        if not (pos < t_r < b) or info is None or info.seen_ts is None or info.seen_ts <= pos:
            return False
        if info.fork_ts is not None and info.fork_ts > pos:  # born in the window: its parent's work
            return False
        sender = int(arr.sender[j])
        R, d = self._sender(G, arr.hosts[int(arr.host[j])], pos)
        if R is None or (R is G and sender == T):
            return False
        sent = min(max(int(arr.t_sent[j]) - d, pos), t_r)
        stack.append((T, t_r, b, depth, via, G, shift))
        stack.append((None, sent, t_r, T, via, G, shift))
        if sent > pos:
            stack.append((sender, pos + d, sent + d, depth + 1, T, R, shift - d))
        return True

    @staticmethod
    def _emit(out: Path, T, a, b, state, via, g, shift):
        if b > a:
            out.tid.append(T)
            out.k0.append(-1)
            out.k1.append(-1)
            out.a.append(a)
            out.b.append(b)
            out.state.append(state)
            out.via.append(via)
            out.graph.append(g)
            out.shift.append(shift)

    def durations(self, p: Path) -> np.ndarray:
        """Durations per state of a path without materialising its segments."""
        tot = np.zeros(NSTATES, np.int64)
        for k0, k1, a, b, st, g in zip(p.k0, p.k1, p.a, p.b, p.state, p.graph):
            if k0 < 0:
                tot[st] += b - a
            else:
                s = np.maximum(g.iv_start[k0:k1], a)
                e = np.minimum(g.iv_end[k0:k1], b)
                d = np.maximum(e - s, 0)
                tot += np.bincount(g.iv_state[k0:k1], weights=d, minlength=NSTATES).astype(np.int64)
        return tot


def finders(graphs: dict[str, ExecGraph], max_depth: int = 10_000) -> dict[str, PathFinder]:
    """A finder per host whose paths cross to the other hosts through packets, sharing the
    per-graph lookups."""
    shared: dict = {}
    return {h: PathFinder(g, max_depth, graphs, shared) for h, g in graphs.items()}
