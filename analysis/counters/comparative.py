"""PAD's comparative analysis (paper 004, section IV, equations 1 and 2).

Within a dataset, for every counter: X = |global median - local median| / global std, where
local is one server (its samples over time: the server view) or one time point (all servers at
that time: the time view). Between datasets: X = |reference median - median| / reference std,
for every counter (and per server, against the reference's whole fleet).

Computed a block of counters at a time (memory: one block's copy, not the cube's); medians and
standard deviations skip missing samples. A counter that never varies has std 0: its X is 0 when
nothing moved, infinite otherwise (reported, ranked first).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from .onset import Onset, find_onset, refine_onset
from .over_time import others_median
from .peers import Peers
from .stats import THREADS, each_block, nanmedian, nanmedian_rows, nanstd_rows
from .table import CounterSet


@dataclass
class Comparative:
    global_median: np.ndarray  # (C,)
    global_std: np.ndarray  # (C,)
    server_median: np.ndarray  # (S, C)
    time_median: np.ndarray  # (T, C)
    server_x: np.ndarray  # (S, C)
    time_x: np.ndarray  # (T, C)
    paper_x: bool = True  # the paper's X; False: each server against the others only (robust)
    ref_median: np.ndarray | None = None  # (S, C) what a server's median is compared with: the other servers' median
    # (the paper's X: the global median of the server's group); NaN where a server is not compared
    ref_std: np.ndarray | None = None  # (S, C) the spread it is measured in (the others' std; the paper's: global)

    def top_servers(self, n: int = 20) -> list[tuple[int, int, float]]:
        """(server, counter, X), highest X first."""
        return _top(self.server_x, n)

    def counters_by_time(self, threshold: float = 1.0) -> list[tuple[int, float, int]]:
        """Per counter: (counter, max X over time points, time points with X >= threshold), the
        counters whose fleet-wide median moves most first."""
        mx = np.nan_to_num(self.time_x, nan=0.0, posinf=1e308).max(axis=0)
        n_over = (np.nan_to_num(self.time_x, nan=0.0) >= threshold).sum(axis=0)
        order = np.argsort(-mx, kind="stable")
        return [(int(c), float(mx[c]), int(n_over[c])) for c in order]


def _top(x: np.ndarray, n: int) -> list[tuple[int, int, float]]:
    flat = np.nan_to_num(x, nan=-1.0, posinf=1e308).ravel()
    n = min(n, len(flat))
    if n == 0:
        return []
    part = np.argpartition(-flat, n - 1)[:n]
    part = part[np.argsort(-flat[part], kind="stable")]
    return [(int(i // x.shape[1]), int(i % x.shape[1]), float(x.flat[i])) for i in part if flat[i] >= 0]


def _x(diff: np.ndarray, std: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.abs(diff) / std
    return np.where(std > 0, out, np.where(np.abs(diff) > 0, np.inf, 0.0))


def within(cs: CounterSet, block: int = 16, paper_x: bool = False, peers: Peers | None = None) -> Comparative:
    """PAD's views. With ``paper_x`` the paper's X; by default a server is compared with the
    others only: X = |its median - the median of the other servers' medians| / the standard
    deviation of the other servers' samples. The paper's global std includes the server itself,
    so an extreme server inflates the spread it is measured against and hides (X 1.9 with it,
    6.5 without it, measured on a real fleet). The others' spread is never taken under a tenth
    of the global one.

    With ``peers``, a server is compared with its own group only, and not at all (X NaN) in a
    group that is not compared (servers of different kinds; fewer than three). The time view is
    the whole fleet's."""
    S, C, T = cs.values.shape
    gm, gs, sm, tm, sums = _medians(cs.values, block, sums=S >= 3 and not paper_x)
    if S < 3:
        return Comparative(gm, gs, sm, tm, _x(sm - gm, gs), _x(tm - gm, gs), True, np.tile(gm, (S, 1)),
                           np.tile(gs, (S, 1)))
    if peers is None or peers.whole_fleet:
        groups = [np.arange(S)]
    else:
        groups = [peers.members(g) for g in range(len(peers.roles)) if peers.compared[g]]
    sx, ref_m, ref_s = np.full((S, C), np.nan), np.full((S, C), np.nan), np.full((S, C), np.nan)
    for idx in groups:
        # a group's own global median and std: one more pass, over its servers only
        g_gm, g_gs = (gm, gs) if len(idx) == S else _medians(cs.values, block, idx, servers_and_times=False)[:2]
        if paper_x:
            sx[idx], ref_m[idx], ref_s[idx] = _x(sm[idx] - g_gm, g_gs), g_gm, g_gs
        else:
            sx[idx], ref_m[idx], ref_s[idx] = _left_out(tuple(a[idx] for a in sums), sm[idx], g_gs)
    tx = _x(tm - gm, gs)
    # the fleet's median of a counter that fewer than three servers hold is theirs, not the fleet's
    # (edge latencies held by a caller's and a callee's view): no time view of it
    tx[:, np.isfinite(sm).sum(axis=0) < 3] = np.nan
    return Comparative(gm, gs, sm, tm, sx, tx, paper_x, ref_m, ref_s)


def _medians(values: np.ndarray, block: int, idx: np.ndarray | None = None, servers_and_times: bool = True,
             sums: bool = False):
    """The global median and std of each counter, each server's median and each time's median
    (over servers), and with ``sums`` each server's count, sum and sum of squares of samples per
    counter (the leave-one-out spreads), in one pass, a block of counters at a time (memory: one
    block's copy, not the cube's). ``idx``: those servers only (a block of them is copied, never
    the cube); without ``servers_and_times``, only the global median and std."""
    S, C, T = values.shape
    if idx is not None:
        S = len(idx)
    gm, gs = np.empty(C), np.empty(C)
    sm, tm = (np.empty((S, C)), np.empty((T, C))) if servers_and_times else (None, None)
    n_s, s1, s2 = (np.empty((S, C)), np.empty((S, C)), np.empty((S, C))) if sums else (None, None, None)

    def work(lo, hi):
        v = np.array(values[:, lo:hi, :]) if idx is None else values[idx, lo:hi, :]  # (S, b, T): a copy
        flat = v.transpose(1, 0, 2).reshape(hi - lo, S * T)
        gm[lo:hi] = nanmedian_rows(flat)
        gs[lo:hi] = nanstd_rows(flat)
        del flat
        if servers_and_times:
            sm[:, lo:hi] = nanmedian(v, axis=2)
            tm[:, lo:hi] = nanmedian(v, axis=0).T
        if sums:
            ok = ~np.isnan(v)
            n_s[:, lo:hi] = ok.sum(axis=2)
            v[~ok] = 0.0
            s1[:, lo:hi] = v.sum(axis=2)
            v *= v
            s2[:, lo:hi] = v.sum(axis=2)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        each_block(work, C, max(1, block // THREADS))  # the blocks at once take one block's memory of before
    return gm, gs, sm, tm, (n_s, s1, s2)


def _left_out(sums: tuple[np.ndarray, np.ndarray, np.ndarray], sm: np.ndarray, gs: np.ndarray):
    """Each server against the others (leave-one-out): X, the others' median of medians and the
    others' std (from the others' sums of samples and of squares: ``sums`` = each server's count,
    sum and sum of squares per counter, (S, C) each)."""
    n_s, s1, s2 = sums
    n_o, s1_o, s2_o = n_s.sum(0) - n_s, s1.sum(0) - s1, s2.sum(0) - s2
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_o = s1_o / n_o
        std_o = np.sqrt(np.maximum(s2_o / n_o - mean_o ** 2, 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med_o = others_median(sm)
    # the others may all sit still (zero failures everywhere but here): never a spread finer than
    # a tenth of the paper's, so that X stays a number, at most 10x the paper's
    std_o = np.fmax(np.nan_to_num(std_o), 0.1 * gs[None, :])
    return _x(sm - med_o, std_o), med_o, std_o


@dataclass
class Between:
    """Counters of a dataset against a reference dataset (matched by name)."""

    counters: list[str]  # the common counters
    ref_median: np.ndarray
    ref_std: np.ndarray
    median: np.ndarray
    x: np.ndarray  # (common counters,)
    servers: list[str]  # this dataset's servers
    server_x: np.ndarray  # (S, common counters): each server against the reference fleet
    only_here: list[str] = field(default_factory=list)
    only_ref: list[str] = field(default_factory=list)

    def top(self, n: int = 20) -> list[tuple[int, float]]:
        o = np.argsort(-np.nan_to_num(self.x, nan=-1.0, posinf=1e308), kind="stable")[:n]
        return [(int(i), float(self.x[i])) for i in o]


def between(cs: CounterSet, ref: CounterSet) -> Between:
    common = [c for c in cs.counters if c in set(ref.counters)]
    here = np.array([cs.counters.index(c) for c in common], np.int64)
    there = np.array([ref.counters.index(c) for c in common], np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rv = ref.values[:, there, :].transpose(1, 0, 2).reshape(len(common), -1)
        rm, rs = nanmedian(rv, axis=1), np.nanstd(rv, axis=1)
        del rv
        v = cs.values[:, here, :]
        med = nanmedian(v.transpose(1, 0, 2).reshape(len(common), -1), axis=1)
        smed = nanmedian(v, axis=2)
    return Between(common, rm, rs, med, _x(med - rm, rs), list(cs.servers), _x(smed - rm, rs),
                   [c for c in cs.counters if c not in set(common)], [c for c in ref.counters if c not in set(common)])


def server_onset(cs: CounterSet, s: int, c: int) -> Onset | None:
    """When server ``s`` starts to diverge from the rest of the fleet on counter ``c``: the change
    point of its value minus the median of the other servers."""
    v = cs.values[:, c, :]
    others = np.delete(v, s, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = nanmedian(others, axis=0) if len(others) else np.zeros(v.shape[1])
    return find_onset(v[s] - ref)


def fleet_onset(med: np.ndarray) -> Onset | None:
    """When a counter's fleet median series (``Comparative.time_median[:, c]``) starts to move. A
    whole fleet has no unaffected peers to subtract, so its daily swing stays in the series and
    bends a ramp's fitted point late; the series' increments lose the swing (its slope is small
    beside a leak's) and turn a ramp into a step: when their best change is a step (fit >= 0.1:
    increments are noisy), it dates the change."""
    o = find_onset(med, refine=False, jump=False)
    if o is None:
        return None
    if o.kind == "ramp":
        d = find_onset(np.diff(med), refine=False, jump=False)
        if d is not None and d.kind == "step" and d.gain >= 0.1:
            return Onset(d.index, "ramp", o.gain, o.before, o.after)
    return refine_onset(med, o)
