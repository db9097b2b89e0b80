"""The bounded critical path of a thread between two timestamps (Giraldeau & Dagenais; the rules
of ../shared/reference/critical-path.md, on the interval form of :mod:`analysis.execgraph`).

Walk the thread's intervals over ``[t0, t1]``. Running and waiting-for-CPU intervals are on the
path as they are. A blocked interval woken by another task (process context) is replaced by what
that waker did over the blocked part of the window, recursively (the waker may itself have been
blocked and woken by a third task, and so on, across processes). A blocked interval woken from
interrupt context stays, labelled by the context (block softirq: disk, network softirq: network,
timer/hrtimer: timer, other interrupts); one whose waker is unknown stays as "blocked on a task"
(or "in futex" when the thread was in a futex call). Where a waker did not exist yet (forked
inside the window), the path continues in its parent, through the fork edge.

The result covers ``[t0, t1]`` exactly. Runs of running/preempted intervals are kept as index
ranges into the graph (no Python work per interval), so the cost is per blocked interval.

Departures from the reference, on purpose: an unresolved blocked interval inside a waker's
history is kept (as BT) rather than dropped, so the path always covers the window without
"gap" edges; the recursion is depth-bounded (``max_depth``) and always moves to strictly
earlier windows, so a malformed trace cannot make it loop (one of the reference's known quirks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .execgraph import BLOCKED, BP, EXITED, FOLLOW, FOLLOW_NET, RS, RU, ST_BN, ST_BT, ExecGraph

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
NSTATES = len(STATES)
_PASS = (RU, RS, BP)


@dataclass
class Path:
    """A critical path as pieces. Piece i is either a range of graph intervals
    ``[k0[i], k1[i])`` of thread ``tid[i]`` clipped to ``[a[i], b[i]]`` (their own states), or,
    when ``k0[i] < 0``, one segment of state ``state[i]``."""

    tid: list
    k0: list
    k1: list
    a: list
    b: list
    state: list
    via: list  # tid whose blocked interval this piece replaces (-1 for the request's own thread)

    def segments(self, g: ExecGraph) -> "Segments":
        """Materialised, time-ordered segments (thread, start, end, state, via), zero-length ones
        dropped and equal neighbours merged. Vectorised over all pieces at once."""
        if not self.tid:
            e = np.zeros(0, np.int64)
            return Segments(e, e, e, np.zeros(0, np.int8), e)
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
        start = np.where(is_syn, a, np.maximum(g.iv_start[k], a))
        end = np.where(is_syn, b, np.minimum(g.iv_end[k], b))
        state = np.where(is_syn, np.array(self.state, np.int64)[piece], g.iv_state[k]).astype(np.int8)
        keep = end > start
        seg = Segments(np.array(self.tid, np.int64)[piece][keep], start[keep], end[keep], state[keep],
                       np.array(self.via, np.int64)[piece][keep])
        return seg.merged()


@dataclass
class Segments:
    tid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    state: np.ndarray
    via: np.ndarray

    def __len__(self) -> int:
        return len(self.tid)

    def merged(self) -> "Segments":
        n = len(self.tid)
        if n == 0:
            return self
        same = np.empty(n, bool)
        same[0] = False
        same[1:] = (self.tid[1:] == self.tid[:-1]) & (self.state[1:] == self.state[:-1]) & (self.start[1:] == self.end[:-1])
        heads = np.flatnonzero(~same)
        tails = np.empty(len(heads), np.int64)
        tails[:-1] = heads[1:] - 1
        tails[-1] = n - 1
        return Segments(self.tid[heads], self.start[heads], self.end[tails], self.state[heads], self.via[heads])

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


class PathFinder:
    """Critical paths over one host's graph (caches per-thread lookups between calls)."""

    def __init__(self, g: ExecGraph, max_depth: int = 10_000):
        self.g = g
        self.max_depth = max_depth
        # next non-pass interval index (not bounded by thread: callers cap with the thread's end)
        self.next_nonpass = _next_nonpass(g.iv_state)
        self._bounds: dict[int, tuple[int, int]] = {}

    def _thread(self, tid: int):
        b = self._bounds.get(tid)
        if b is None:
            sl = self.g.intervals_of(tid)
            b = self._bounds[tid] = (sl.start, sl.stop)
        return b, self.g.iv_end[b[0]:b[1]]

    def path(self, tid: int, t0: int, t1: int) -> Path:
        g = self.g
        out = Path([], [], [], [], [], [], [])
        iv_start, iv_end, iv_state = g.iv_start, g.iv_end, g.iv_state
        iv_block, iv_waker = g.iv_block, g.iv_waker
        nnp = self.next_nonpass
        stack = [(tid, t0, t1, 0, -1)]
        while stack:
            T, pos, b, depth, via = stack.pop()
            if T is None:  # a packet in flight: the blocked thread (here in depth) waits on the network
                self._emit(out, depth, pos, b, ST_BN, via)
                continue
            (lo, hi), ends = self._thread(T)
            k = lo + int(ends.searchsorted(pos, "right"))
            while pos < b:
                if k >= hi:
                    self._emit(out, T, pos, b, ST_BT, via)
                    break
                s = int(iv_start[k])
                if s > pos:  # not yet known at pos (cannot happen for a contiguous thread)
                    e = min(s, b)
                    self._emit(out, T, pos, e, ST_BT, via)
                    pos = e
                    continue
                j = min(int(nnp[k]), hi)
                if j > k:
                    run_end = int(iv_end[j - 1])
                    if run_end >= b:
                        # last piece of this window: cut the range at b
                        k_last = lo + int(ends.searchsorted(b - 1, "right")) + 1
                        out.tid.append(T)
                        out.k0.append(k)
                        out.k1.append(min(k_last, j))
                        out.a.append(pos)
                        out.b.append(b)
                        out.state.append(-1)
                        out.via.append(via)
                        pos = b
                        break
                    out.tid.append(T)
                    out.k0.append(k)
                    out.k1.append(j)
                    out.a.append(pos)
                    out.b.append(run_end)
                    out.state.append(-1)
                    out.via.append(via)
                    pos = run_end
                    k = j
                    continue
                # k is not running: blocked, unknown or not existing
                e = min(int(iv_end[k]), b)
                st = int(iv_state[k])
                if st == BLOCKED:
                    blk = int(iv_block[k])
                    waker = int(iv_waker[k])
                    if blk == FOLLOW_NET and depth < self.max_depth and waker != T and e > pos:
                        # the sender's work up to the send, then the packet's flight (BN)
                        sent = min(max(g.net_links.get(k, pos), pos), e)
                        stack.append((T, e, b, depth, via))
                        stack.append((None, sent, e, T, via))
                        if sent > pos:
                            stack.append((waker, pos, sent, depth + 1, T))
                        break
                    if blk == FOLLOW and depth < self.max_depth and waker != T and e > pos:
                        stack.append((T, e, b, depth, via))
                        stack.append((waker, pos, e, depth + 1, T))
                        break
                    self._emit(out, T, pos, e, ST_BT if blk == FOLLOW else ST_BN if blk == FOLLOW_NET else blk, via)
                elif st == EXITED:
                    info = g.threads.get(T)
                    parent = info.parent if info is not None else None
                    if (parent is not None and info.fork_ts is not None and info.fork_ts >= e
                            and depth < self.max_depth and parent != T):
                        # the thread did not exist yet: what led to it is its parent's work
                        stack.append((T, e, b, depth, via))
                        stack.append((parent, pos, e, depth + 1, T))
                        break
                    self._emit(out, T, pos, e, ST_BT, via)
                else:  # UNKNOWN
                    self._emit(out, T, pos, e, ST_BT, via)
                pos = e
                k += 1
        return out

    @staticmethod
    def _emit(out: Path, T, a, b, state, via):
        if b > a:
            out.tid.append(T)
            out.k0.append(-1)
            out.k1.append(-1)
            out.a.append(a)
            out.b.append(b)
            out.state.append(state)
            out.via.append(via)

    def durations(self, p: Path) -> np.ndarray:
        """Durations per state of a path without materialising its segments."""
        g = self.g
        tot = np.zeros(NSTATES, np.int64)
        for k0, k1, a, b, st in zip(p.k0, p.k1, p.a, p.b, p.state):
            if k0 < 0:
                tot[st] += b - a
            else:
                s = np.maximum(g.iv_start[k0:k1], a)
                e = np.minimum(g.iv_end[k0:k1], b)
                d = np.maximum(e - s, 0)
                tot += np.bincount(g.iv_state[k0:k1], weights=d, minlength=NSTATES).astype(np.int64)
        return tot
