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

from array import array
from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.execgraph.graph import (BLOCKED, BP, EXITED, FOLLOW, FOLLOW_NET, FOLLOW_REMOTE, RS, RU, ST_BN,
                                                 ST_BT, ExecGraph)

from .states import NSTATES, STATES  # noqa: F401 (STATES: its home before)

_PASS = (RU, RS, BP)


class Path:
    """Critical paths as pieces, in time order per path (one request's, or every request's one
    after the other when a batch shares one Path). Piece i is either a range of graph intervals
    ``[k0[i], k1[i])`` of thread ``tid[i]`` of graph ``graphs[graph[i]]`` clipped to
    ``[a[i], b[i]]`` (their own states), or, when ``k0[i] < 0``, one segment of state
    ``state[i]``. Times are on the piece's graph's clock; ``shift[i]`` takes them to the request's
    host's clock (0 on the request's own host). Columns are int64 arrays being appended to
    (numpy views them without a copy)."""

    __slots__ = ("tid", "k0", "k1", "a", "b", "state", "via", "graph", "shift", "graphs")

    def __init__(self, graphs: list):
        self.graphs = graphs  # ExecGraph by ordinal (shared by the finders of one set of hosts)
        for name in self.__slots__[:-1]:
            setattr(self, name, array("q"))

    def __len__(self) -> int:
        return len(self.tid)

    def col(self, name: str) -> np.ndarray:
        a = getattr(self, name)
        return np.frombuffer(a, np.int64) if len(a) else np.zeros(0, np.int64)

    def segments(self, g: ExecGraph) -> "Segments":
        """Materialised, time-ordered segments (thread, start, end, state, via, host), on the
        clock of ``g`` (the request's host), zero-length ones dropped and equal neighbours
        merged; ``hosts``: the request's host, then the others in order of appearance."""
        own = next((o for o, x in enumerate(self.graphs) if x is g), None)
        if own is None:
            raise ValueError(f"host {g.host}: not a graph of this path's finders")
        m = materialise(self, np.zeros(len(self), np.int64))
        order = [own] + [int(x) for x in m.piece_graph if x != own]
        local = list(dict.fromkeys(order))
        to_local = np.zeros(len(self.graphs) + 1, np.int16)
        to_local[local] = np.arange(len(local))
        return Segments(m.tid, m.start, m.end, m.state.astype(np.int8), m.via, to_local[m.graph],
                        [self.graphs[o].host for o in local])


@dataclass
class Materialised:
    """Merged segments of many paths: ``req`` (path number), ``graph`` (ordinal: host) per
    segment, in path order then time order; ``piece_req``/``piece_graph``: per piece (also
    those of zero length)."""

    req: np.ndarray
    tid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    state: np.ndarray
    via: np.ndarray
    graph: np.ndarray
    piece_req: np.ndarray
    piece_graph: np.ndarray


MATERIALISE_BLOCK_ROWS = 1 << 18  # rows per block: a block's temporaries stay in the CPU's caches


def materialise(p: Path, piece_req: np.ndarray) -> Materialised:
    """Every piece of ``p`` expanded to intervals and clipped, shifted to its request's clock,
    zero-length ones dropped and equal neighbours of one path merged: vectorised over all paths
    (a numpy call per graph and block of about 256k intervals, none per path). Blocks end at a
    path's end, so merging never spans two blocks."""
    cols = {name: p.col(name) for name in ("tid", "k0", "k1", "a", "b", "state", "via", "graph", "shift")}
    lens = np.where(cols["k0"] < 0, 1, cols["k1"] - cols["k0"])
    rows_before = np.cumsum(lens)
    # block boundaries: the first piece of a path after every MATERIALISE_BLOCK_ROWS rows
    path_start = np.flatnonzero(np.r_[True, piece_req[1:] != piece_req[:-1]]) if len(piece_req) else np.zeros(0, np.int64)
    cuts = [0]
    if len(path_start):
        at_rows = rows_before[path_start] - lens[path_start]  # rows before each path
        want = np.arange(MATERIALISE_BLOCK_ROWS, int(rows_before[-1]), MATERIALISE_BLOCK_ROWS)
        cuts += np.unique(path_start[np.minimum(np.searchsorted(at_rows, want), len(path_start) - 1)]).tolist()
    cuts = sorted(set(cuts) | {len(piece_req)})
    parts = [_materialise_block(p.graphs, {k: v[lo:hi] for k, v in cols.items()}, lens[lo:hi], piece_req[lo:hi])
             for lo, hi in zip(cuts[:-1], cuts[1:]) if hi > lo]
    if not parts:
        e = np.zeros(0, np.int64)
        return Materialised(e, e, e, e, e, e, e, piece_req, cols["graph"])
    return Materialised(*[np.concatenate(x) for x in zip(*parts)], piece_req, cols["graph"])


def _materialise_block(graphs, c, lens, piece_req):
    synth = c["k0"] < 0
    n_rows = int(lens.sum())
    piece = np.repeat(np.arange(len(lens)), lens)
    state = c["state"][piece]
    start = c["a"][piece]
    end = c["b"][piece]
    ranged = np.flatnonzero(~synth[piece])
    if len(ranged):
        # interval index of each ranged row: its piece's k0 plus its position within the piece
        first_row = np.cumsum(lens) - lens
        k = c["k0"][piece[ranged]] + (ranged - first_row[piece[ranged]])
        gr = c["graph"][piece[ranged]]
        for o in np.unique(gr).tolist():  # graph by graph
            sel = ranged if len(graphs) == 1 else ranged[gr == o]
            km = k if len(graphs) == 1 else k[gr == o]
            gx = graphs[o]
            start[sel] = np.maximum(gx.iv_start[km], start[sel])
            end[sel] = np.minimum(gx.iv_end[km], end[sel])
            state[sel] = gx.iv_state[km]
    if c["shift"].any():
        sh = c["shift"][piece]
        start += sh
        end += sh
    keep = np.flatnonzero(end > start)
    if len(keep) < n_rows:
        piece, start, end, state = piece[keep], start[keep], end[keep], state[keep]
    req = piece_req[piece]
    tid = c["tid"][piece]
    graph = c["graph"][piece]
    n = len(piece)
    if n:
        same = np.empty(n, bool)
        same[0] = False
        same[1:] = ((req[1:] == req[:-1]) & (tid[1:] == tid[:-1]) & (graph[1:] == graph[:-1])
                    & (state[1:] == state[:-1]) & (start[1:] == end[:-1]))
        if same.any():
            heads = np.flatnonzero(~same)
            tails = np.r_[heads[1:] - 1, n - 1]
            piece, req, tid, state, graph = piece[heads], req[heads], tid[heads], state[heads], graph[heads]
            start, end = start[heads], end[tails]
    return req, tid, start, end, state, c["via"][piece], graph


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
    """One graph with the lookups the walk needs (built once per graph, shared by finders).

    The walk reads single intervals through memoryviews (a C-level item access giving a Python
    int) and finds a window's first interval with ``bisect`` on them: no numpy call per window."""

    def __init__(self, g: ExecGraph, ordinal: int):
        self.g = g
        self.ordinal = ordinal
        self.start = memoryview(np.ascontiguousarray(g.iv_start))
        self.end = memoryview(np.ascontiguousarray(g.iv_end))
        self.state = memoryview(np.ascontiguousarray(g.iv_state))
        self.block = memoryview(np.ascontiguousarray(g.iv_block))
        self.waker = memoryview(np.ascontiguousarray(g.iv_waker))
        self.has_arrivals = len(g.arrivals) > 0
        self.compiled = None  # arrays of the C walk, made on first use
        self._bounds: dict[int, tuple[int, int]] = {}
        self._nnp: memoryview | None = None

    @property
    def nnp(self) -> memoryview:
        """Next non-pass interval index (not bounded by thread: callers cap with the thread's end),
        for the Python walk; made at its first use (the C walk reads the runs instead: 4 bytes an
        interval, 27 MiB at 50,000 requests, at the report's peak)."""
        if self._nnp is None:
            self._nnp = memoryview(_next_nonpass(self.g.iv_state))
        return self._nnp

    def bounds(self, tid: int) -> tuple[int, int]:
        b = self._bounds.get(tid)
        if b is None:
            sl = self.g.intervals_of(tid)
            b = self._bounds[tid] = (sl.start, sl.stop)
        return b


class _Indexes:
    """The per-graph lookups shared by the finders of one set of hosts, by host and by ordinal."""

    def __init__(self):
        self.by_host: dict[str, _GraphIndex] = {}
        self.graphs: list[ExecGraph] = []

    def add(self, g: ExecGraph) -> _GraphIndex:
        gi = self.by_host[g.host] = _GraphIndex(g, len(self.graphs))
        self.graphs.append(g)
        return gi


class PathFinder:
    """Critical paths over one host's graph (caches per-thread lookups between calls).

    ``graphs``: every host's graph, for paths that cross to another traced host through a
    packet (FOLLOW_REMOTE); without it such waits stay BN. Finders made by :func:`finders`
    share their per-graph lookups."""

    def __init__(self, g: ExecGraph, max_depth: int = 10_000, graphs: dict | None = None,
                 _shared: _Indexes | None = None):
        self.g = g
        self.max_depth = max_depth
        self.graphs = graphs or {}
        self._index = _shared if _shared is not None else _Indexes()
        self._own = self._graph(g.host, g)

    def _graph(self, host: str, g: ExecGraph | None = None) -> _GraphIndex | None:
        gi = self._index.by_host.get(host)
        if gi is None:
            g = g if g is not None else self.graphs.get(host)
            if g is None:
                return None
            gi = self._index.add(g)
        return gi

    def new_path(self) -> Path:
        """An empty Path that paths of this finder (and of finders sharing its lookups) append to."""
        return Path(self._index.graphs)

    def path(self, tid: int, t0: int, t1: int, out: Path | None = None) -> Path:
        """The critical path of ``tid`` over ``[t0, t1]``, appended to ``out`` (a new Path by
        default; a batch of requests shares one, from :meth:`new_path`)."""
        if out is None:
            out = self.new_path()
        o_tid, o_k0, o_k1, o_a, o_b = out.tid.append, out.k0.append, out.k1.append, out.a.append, out.b.append
        o_state, o_via, o_graph, o_shift = out.state.append, out.via.append, out.graph.append, out.shift.append

        def emit(T, a, b, state, via, G, shift):
            if b > a:
                o_tid(T)
                o_k0(-1)
                o_k1(-1)
                o_a(a)
                o_b(b)
                o_state(state)
                o_via(via)
                o_graph(G.ordinal)
                o_shift(shift)

        max_depth = self.max_depth
        stack = [(tid, t0, t1, 0, -1, self._own, 0)]
        pop, push = stack.pop, stack.append
        while stack:
            T, pos, b, depth, via, G, shift = pop()
            if T is None:  # a packet in flight: the blocked thread (here in depth) waits on the network
                emit(depth, pos, b, ST_BN, via, G, shift)
                continue
            if depth and G.has_arrivals and depth < max_depth and self._arrival(stack, T, pos, b, depth, via, G,
                                                                                shift):
                continue
            iv_start, iv_end, iv_state, iv_block, iv_waker, nnp = G.start, G.end, G.state, G.block, G.waker, G.nnp
            lo, hi = G.bounds(T)
            k = bisect_right(iv_end, pos, lo, hi)
            while pos < b:
                if k >= hi:
                    emit(T, pos, b, ST_BT, via, G, shift)
                    break
                s = iv_start[k]
                if s > pos:  # not yet known at pos (cannot happen for a contiguous thread)
                    e = s if s < b else b
                    emit(T, pos, e, ST_BT, via, G, shift)
                    pos = e
                    continue
                j = nnp[k]
                if j > hi:
                    j = hi
                if j > k:
                    run_end = iv_end[j - 1]
                    last = run_end >= b
                    if last:  # last piece of this window: cut the range at b
                        j2 = bisect_right(iv_end, b - 1, lo, hi) + 1
                        if j2 < j:
                            j = j2
                        run_end = b
                    o_tid(T)
                    o_k0(k)
                    o_k1(j)
                    o_a(pos)
                    o_b(run_end)
                    o_state(-1)
                    o_via(via)
                    o_graph(G.ordinal)
                    o_shift(shift)
                    pos = run_end
                    if last:
                        break
                    k = j
                    continue
                # k is not running: blocked, unknown or not existing
                e = iv_end[k]
                if e > b:
                    e = b
                st = iv_state[k]
                if st == BLOCKED:
                    blk = iv_block[k]
                    waker = iv_waker[k]
                    if (blk == FOLLOW_NET or blk == FOLLOW_REMOTE) and depth < max_depth and e > pos:
                        # the sender's work up to the send (on its host, for a packet from another
                        # traced host), then the packet's flight (BN); d: this clock to the
                        # sender's, taken once so that the pieces tile the window exactly
                        g = G.g
                        if blk == FOLLOW_NET:
                            R, d, t_sent = (G if waker != T else None), 0, g.net_links.get(k, pos)
                        else:
                            host, t_sent = g.remote_links[k]
                            R, d = self._sender(G, host, pos)
                        if R is not None:
                            _follow_packet(push, T, pos, e, b, depth, via, G, shift, waker, R, d, t_sent)
                            break
                    if blk == FOLLOW and depth < max_depth and waker != T and e > pos:
                        push((T, e, b, depth, via, G, shift))
                        push((waker, pos, e, depth + 1, T, G, shift))
                        break
                    emit(T, pos, e, ST_BT if blk == FOLLOW else ST_BN if blk in (FOLLOW_NET, FOLLOW_REMOTE) else blk,
                         via, G, shift)
                elif st == EXITED:
                    info = G.g.threads.get(T)
                    parent = info.parent if info is not None else None
                    if (parent is not None and info.fork_ts is not None and info.fork_ts >= e
                            and depth < max_depth and parent != T):
                        # the thread did not exist yet: what led to it is its parent's work
                        push((T, e, b, depth, via, G, shift))
                        push((parent, pos, e, depth + 1, T, G, shift))
                        break
                    emit(T, pos, e, ST_BT, via, G, shift)
                else:  # UNKNOWN
                    emit(T, pos, e, ST_BT, via, G, shift)
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
        info = g.threads.get(T)
        if info is None or info.seen_ts is None or info.seen_ts <= pos:
            return False
        arr = g.arrivals
        j = arr.first_of(T)
        if j < 0:
            return False
        t_r = int(arr.t[j])
        if not (pos < t_r < b):
            return False
        if info.fork_ts is not None and info.fork_ts > pos:  # born in the window: its parent's work
            return False
        sender = int(arr.sender[j])
        R, d = self._sender(G, arr.hosts[int(arr.host[j])], pos)
        if R is None or (R is G and sender == T):
            return False
        _follow_packet(stack.append, T, pos, t_r, b, depth, via, G, shift, sender, R, d, int(arr.t_sent[j]))
        return True

    def durations(self, p: Path) -> np.ndarray:
        """Durations per state of a path without materialising its segments."""
        tot = np.zeros(NSTATES, np.int64)
        for k0, k1, a, b, st, o in zip(p.k0, p.k1, p.a, p.b, p.state, p.graph):
            if k0 < 0:
                tot[st] += b - a
            else:
                g = p.graphs[o]
                s = np.maximum(g.iv_start[k0:k1], a)
                e = np.minimum(g.iv_end[k0:k1], b)
                d = np.maximum(e - s, 0)
                tot += np.bincount(g.iv_state[k0:k1], weights=d, minlength=NSTATES).astype(np.int64)
        return tot


def _follow_packet(push, T, pos, end, b, depth, via, G, shift, who, R, d, t_sent) -> None:
    """T waits over [pos, end] for a packet sent by ``who`` on graph ``R`` (whose clock is ``d``
    ahead): the sender's work up to the send, then the packet's flight (BN), then the rest of
    T's window [end, b]; pushed in reverse, popped in time order. ``d`` is taken once so that the
    pieces tile the window exactly. (_walk.c: follow_packet.)"""
    sent = min(max(t_sent - d, pos), end)
    push((T, end, b, depth, via, G, shift))
    push((None, sent, end, T, via, G, shift))
    if sent > pos:
        push((who, pos + d, sent + d, depth + 1, T, R, shift - d))


def _walk_module():
    try:
        from . import _walk  # noqa: PLC0415  (built by make setup where a C compiler exists)
    except ImportError:
        return None
    return _walk


class _CompiledWalk:
    """The arrays the C walk (``_walk.c``) reads for one graph, made once per graph (host names
    turned into graph ordinals)."""

    def __init__(self, G: _GraphIndex, ordinal_of: dict):
        g = G.g
        i64 = np.int64
        tids = np.asarray(g.tids, i64)
        order = np.argsort(tids, kind="stable")
        none = np.iinfo(i64).min
        infos = sorted(g.threads.items())
        arr = g.arrivals
        a_hosts = np.array([ordinal_of.get(h, -1) for h in arr.hosts] + [-1], i64)
        nl = sorted(g.net_links.items())
        rl = g.remote_links
        r_hosts = np.array([ordinal_of.get(h, -1) for h in rl.hosts] + [-1], i64)
        c = np.ascontiguousarray
        self.arrays = (
            c(g.iv_start, i64), c(g.iv_end, i64), c(g.iv_state, np.int8), c(g.iv_block, np.int8),
            c(g.iv_waker, np.int32),
            c(tids[order]), c(np.asarray(g.thread_lo, i64)[order]), c(np.asarray(g.thread_hi, i64)[order]),
            np.array([t for t, _ in infos], i64),
            np.array([none if i.parent is None else i.parent for _, i in infos], i64),
            np.array([none if i.fork_ts is None else i.fork_ts for _, i in infos], i64),
            np.array([none if i.seen_ts is None else i.seen_ts for _, i in infos], i64),
            c(arr.tid, i64), c(arr.t, i64), c(arr.t_sent, i64), c(arr.sender, i64),
            c(a_hosts[np.asarray(arr.host, i64)] if len(arr.tid) else np.zeros(0, i64)),
            np.array([k for k, _ in nl], i64), np.array([t for _, t in nl], i64),
            c(rl.k, i64), c(r_hosts[np.asarray(rl.host, i64)] if len(rl.k) else np.zeros(0, i64)), c(rl.t, i64),
        )


def _clock_arrays(graphs: list) -> tuple:
    """The graphs' clock fits as H x H arrays: [a * H + b] takes a time of graph a to graph b's clock."""
    H = len(graphs)
    has = np.zeros((H, H), np.int64)
    off = np.zeros((H, H))
    drift = np.zeros((H, H))
    ref = np.zeros((H, H), np.int64)
    ordinal = {g.host: i for i, g in enumerate(graphs)}
    for a, g in enumerate(graphs):
        for host, fit in (g.clocks or {}).items():
            b = ordinal.get(host)
            if b is not None and fit is not None:
                has[a, b], off[a, b], drift[a, b], ref[a, b] = 1, fit.offset_ns, fit.drift, fit.t_ref
    return has.ravel(), off.ravel(), drift.ravel(), ref.ravel()


@dataclass
class PathSums:
    """What the features keep of many requests' critical paths: per request, time and merged
    segments per state (n x NSTATES), the states of its segments in time order (``seq``,
    ``seq_len`` per request, requests in order), and per host (graph ordinal) the path's time
    there and when the path first reached it (``first``: piece number, int64 max: never)."""

    dur: np.ndarray
    cnt: np.ndarray
    seq: np.ndarray
    seq_len: np.ndarray
    host_time: np.ndarray
    first: np.ndarray
    own: np.ndarray  # ordinal of each request's graph, -1: its host has no graph
    graphs: list  # ExecGraph by ordinal
    in_c: int  # requests walked in C
    python: Materialised | None = None  # the Python walk's segments (compiled=False)


def walk_many(path_finders: dict, host, tid, t0, t1, compiled: bool = True) -> PathSums:
    """Critical paths of many requests (``host`` of each, its thread and window), summed.

    In C when the walk is built (``compiled``): every path, straight into the sums. Otherwise
    :meth:`PathFinder.path` appends every path to one shared Path, materialised in one
    vectorised pass. Both give the same sums (a test)."""
    n = len(tid)
    mod = _walk_module() if compiled else None
    hosts = np.asarray(host, dtype=object)
    graphs = next(iter(path_finders.values()))._index.graphs if path_finders else []
    H = max(len(graphs), 1)
    own = np.full(n, -1, np.int64)
    for h, pf in path_finders.items():
        own[hosts == h] = pf._own.ordinal
    dur = np.zeros((n, NSTATES), np.int64)
    cnt = np.zeros((n, NSTATES), np.int64)
    seq_len = np.zeros(n, np.int64)
    host_time = np.zeros((n, H), np.int64)
    first = np.full((n, H), np.iinfo(np.int64).max, np.int64)
    rows = np.flatnonzero(own >= 0)
    if mod is not None and all(len(g.iv_start) < 2**31 - 1 for g in graphs):
        ordinal_of = {g.host: i for i, g in enumerate(graphs)}
        idx = [path_finders[g.host]._graph(g.host) for g in graphs]
        for G in idx:
            if G.compiled is None:
                G.compiled = _CompiledWalk(G, ordinal_of)
        c = np.ascontiguousarray
        seq = mod.walk(tuple(G.compiled.arrays for G in idx), _clock_arrays(graphs),
                       (c(rows, np.int64), c(own[rows]), c(tid[rows], np.int64), c(t0[rows], np.int64),
                        c(t1[rows], np.int64)),
                       next(iter(path_finders.values())).max_depth, (dur, cnt, seq_len, host_time, first))
        return PathSums(dur, cnt, np.frombuffer(seq, np.int8), seq_len, host_time, first, own, graphs, len(rows))
    out = next(iter(path_finders.values())).new_path() if path_finders else None
    piece_end = np.zeros(len(rows), np.int64)
    tl, al, bl = tid[rows].tolist(), t0[rows].tolist(), t1[rows].tolist()
    for i, r in enumerate(rows.tolist()):
        path_finders[hosts[r]].path(tl[i], al[i], bl[i], out)
        piece_end[i] = len(out)
    if out is None or not len(out):
        return PathSums(dur, cnt, np.zeros(0, np.int8), seq_len, host_time, first, own, graphs, 0)
    piece_req = rows[np.repeat(np.arange(len(rows)), np.diff(np.r_[0, piece_end]))]
    m = materialise(out, piece_req)
    w = m.end - m.start
    np.add.at(dur, (m.req, m.state), w)
    np.add.at(cnt, (m.req, m.state), 1)
    np.add.at(host_time, (m.req, m.graph), w)
    np.minimum.at(first, (m.piece_req, m.piece_graph), np.arange(len(m.piece_req)))
    seq_len[:] = np.bincount(m.req, minlength=n)
    return PathSums(dur, cnt, m.state.astype(np.int8), seq_len, host_time, first, own, graphs, 0, m)


def finders(graphs: dict[str, ExecGraph], max_depth: int = 10_000) -> dict[str, PathFinder]:
    """A finder per host whose paths cross to the other hosts through packets, sharing the
    per-graph lookups."""
    shared = _Indexes()
    return {h: PathFinder(g, max_depth, graphs, shared) for h, g in graphs.items()}
