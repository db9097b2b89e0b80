"""When, and on which server: every (server, counter) series judged against its own history and
against its peers at the same time, flagged points merged into intervals (beyond PAD, which
answers "which server" over the whole dataset and "which time" for the fleet's median).

For every series:

- **own history**: the series minus its daily profile (the median of each time of day over the
  days present), in units of its robust spread (1.4826 x MAD), when the data covers at least
  three days (with less, a daily cycle cannot be told from an incident: peers only, said in a
  note). A fleet-wide incident, where no server deviates from the others, shows here.
- **peers**: the series minus the median of the other servers at the same time, against that
  difference's own median and robust spread. One server leaving its peers shows here, whatever
  the daily cycle does.

A spread is never finer than twice the series' resolution (the smallest step between its
values: counters rounded to 0.01 have a MAD of 0 wherever they sit still), so a move of one
step is never a deviation. A series beyond ``z`` at more than a tenth of its points (``tail``)
has heavier tails than its robust spread says: its z is scaled down until a tenth are. A point
of a server is flagged when at least ``min_counters`` counters are beyond ``z`` at once (an
incident moves several counters), or one counter beyond
``strong``; flagged points less than ``gap`` points apart form one interval, reported with its
start, end, peak and the counters that moved, each with its level and its usual one.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.stats import median_of_sorted, valid_count
from perftriage.analysis.units import count_of

from .edges import Edges, attribute, find_edges, wait_for_callees
from .onset import find_onset
from .params import TimeParams
from .peers import Peers
from .stats import THREADS, counters_per_block, each_block, nanmedian, nanmedian_rows
from .table import CounterSet


@dataclass
class Interval:
    server: int
    start: int  # first point (grid index)
    end: int  # last point, inclusive
    peak: int
    peak_z: float
    counters: list[tuple[int, float, str, float, float]]  # (counter, max |z|, "own"/"peers", level at peak, usual)
    about: str = ""  # the server (or workload) it is about when not its own: the callee of a view's edges
    twin: bool = False  # said by another interval (edges.attribute): the other side's, or its callee's
    waiting: list[str] = field(default_factory=list)  # callers whose calls moved with it (edges.attribute)
    waits_for: str = ""  # a server's own interval: the callee it waits for (edges.wait_for_callees)
    score: float = 0.0  # its rank: peak z x sqrt(points), under its callee's when it waits for it

    @property
    def points(self) -> int:
        return self.end - self.start + 1


@dataclass
class LevelChange:
    """A server's counters beyond z over one long stretch: a level it moved to and stayed at (to
    the end of the data: an incident still running), or a long departure. ``start``..``end``:
    the stretch at the other level, decided against the peers where there are some (the part
    that differs from them), else the stretch beyond z."""
    server: int
    start: int
    end: int
    counters: list[tuple[int, float, float, float, float]]  # (counter, median z, level there, level elsewhere,
    # the peers' level there: NaN without peers)
    score: float = 0.0
    shared: list[int] = field(default_factory=list)  # the other servers whose same counter changed with it
    # (half the fleet or more: the fleet's change, said once)
    own: bool = True  # away from its peers there (False: it moved with them; kept only as part of the fleet's)

    @property
    def points(self) -> int:
        return self.end - self.start + 1

    def other_side(self, n_points: int) -> str:
        """Where the server was at its other level, in words: 'before' (a change to the end of the
        data), 'after' (from its start), 'before and after' (a long departure)."""
        if self.end >= n_points - 1 and self.start > 0:
            return "before"
        if self.start <= 0 and self.end < n_points - 1:
            return "after"
        return "before and after"


def _runs(f: np.ndarray, gap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The True points of ``f`` (1-D) and its runs, gaps of up to ``gap`` points bridged: (the
    points' indices, each run's first and last position among them)."""
    idx = np.flatnonzero(f)
    cuts = np.flatnonzero(np.diff(idx) > gap + 1)
    return idx, np.r_[0, cuts + 1], np.r_[cuts, len(idx) - 1]


def _stretches(z: np.ndarray, p: TimeParams, min_len: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of each row of ``z`` (n, T), the one run (gaps of a hundredth of the series or ``p.gap``
    bridged) that holds half of its points beyond z or more, is beyond z at half its points or
    more, and spans ``p.tail`` of the series (or ``min_len`` points): (the rows that have one, its
    first and last point).
    None for a row beyond z here and there (bursts, a heavy tail). Half, not all: a daily profile
    learnt over days that hold the change puts the same hours of the days before beyond z too.
    All rows at once: a run's bounds from the beyond-z points of every row in one pass."""
    n, T = z.shape
    gap = max(p.gap, T // 100)
    row, t = np.nonzero(z > p.z)
    none = np.zeros(0, np.int64)
    if not len(row):
        return none, none, none
    new = np.r_[True, (row[1:] != row[:-1]) | (np.diff(t) > gap + 1)]  # a run begins
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(t) - 1]
    held = last - first + 1  # beyond-z points in each run
    r_row = row[first]
    # each row's run that holds the most points (the first of equals)
    order = np.lexsort((np.arange(len(first)), -held, r_row))
    best = order[np.r_[True, r_row[order][1:] != r_row[order][:-1]]]
    total = np.bincount(row, minlength=n)[r_row[best]]
    h, a, b = held[best], t[first[best]], t[last[best]]
    length = b - a + 1
    span = p.tail * T if min_len is None else min_len
    ok = (h >= 0.5 * total) & (length >= span) & (h >= 0.5 * length)  # bursts bridged are no level
    return r_row[best][ok], a[ok], b[ok]


@dataclass
class OverTime:
    params: TimeParams
    flagged: np.ndarray  # (S, T) bool, after merging intervals
    z: np.ndarray  # (S, C, T) float32: the larger of the two robust z
    seasonal: bool  # a daily profile was taken out
    period: int  # points per day (0: none)
    intervals: list[Interval] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    min_counters: int = 2  # the number of unusual counters that flagged a point
    alone: np.ndarray | None = None  # (S,) bool: servers without peers, judged against all the others' movement
    edges: Edges | None = None  # counters that name a caller and a callee, and the servers that hold them
    recent: int = 0  # points in the hour before that series without peers were judged against (< 3 days)
    changes: list[LevelChange] = field(default_factory=list)  # sustained departures (TimeParams.sustained)

    def within_change(self, iv: Interval, changes: list[LevelChange] | None = None) -> bool:
        """Whether ``iv`` is a piece of a level change (of ``changes``, default all): the same
        server, inside the change's stretch, its top counter among the change's. Said by the
        change, not again as an interval."""
        return any(lc.server == iv.server and lc.start <= iv.start and iv.end <= lc.end
                   and iv.counters and iv.counters[0][0] in {c for c, *_ in lc.counters}
                   for lc in (self.changes if changes is None else changes))

    def fleet_changes(self) -> list[LevelChange]:
        """The fleet's changes (half the servers or more, the same counter moved together), each
        once: the first of the servers that share it."""
        out, said = [], set()
        for lc in self.changes:
            if lc.shared and (lc.server, lc.counters[0][0]) not in said:
                said.update((s, lc.counters[0][0]) for s in lc.shared)
                out.append(lc)
        return out

    def said_intervals(self, changes: list[LevelChange] | None = None) -> list[Interval]:
        """The intervals said on their own, in their order: not said by another one (``twin``) nor
        by a level change (of ``changes``, default all)."""
        return [iv for iv in self.intervals if not iv.twin and not self.within_change(iv, changes)]


ONSET_GAIN = 0.8  # share of a series' variance a fitted step or hinge must explain to date a level change
HABIT = 3  # separate departures from its median that make their size a series' usual move (_robust)
HOLD_BLOCKS = 3  # a series judged against the hour before keeps its last usual hour's level this many hours at most


def _resolution(srt: np.ndarray) -> np.ndarray:
    """(S, C): the smallest positive step between distinct values of each series (``srt``: the
    series sorted along time; 1e-12 if constant). A series of two values away from zero has
    none to tell: its one step is a move, not its resolution (a thread count that sat at 50 and
    went to 80 once had a 'resolution' of 30, and its move a z of 0.5); there the unit of a share
    of its level stands in (``_block``). From zero, the step is the only scale a series has."""
    S, C, T = srt.shape
    out = np.full((S, C), 1e-12)
    if T < 2:  # one time point: no step to measure
        return out
    d = np.diff(srt, axis=2)
    tol = np.abs(srt[:, :, 1:])  # a step finer than 1e-12 of the values is rounding, not resolution
    np.maximum(tol, 1.0, out=tol)
    tol *= 1e-12
    np.copyto(d, np.inf, where=~(d > tol))  # NaN compares false: out too
    del tol
    m = d.min(axis=2)
    two = np.isfinite(d).sum(axis=2) < 2  # fewer than three distinct values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a series without a value: NaN, compared false
        top = np.nanmax(srt, axis=2)
    # away from zero: neither value is 0 (a count at 0 that went to 1, or a difference at 0 that
    # went to -1 once, is one step from zero: that step is its scale)
    m = np.where(two & (srt[:, :, 0] != 0) & (top != 0), np.inf, m)
    out = np.where(np.isfinite(m), m, out)
    return out


def _robust(x: np.ndarray, floor: np.ndarray, with_mad: bool = False, srt: np.ndarray | None = None,
            unit: np.ndarray | None = None):
    """|x - median| / its scale along the last axis; NaN stays NaN. The scale is 1.4826 x MAD,
    never under ``floor`` nor under the usual size of a departure where departing is the series'
    habit, three separate departures or more (a series that sits on its median most of the time,
    zero requests at night, has a MAD of 0: its ordinary noise when it moves must not count as a
    deviation; a series that left its level once, a step in a count that sits still, has no such
    habit, and its one move was its own scale: z 1); and where ``unit`` is given, z's
    unit is never under it (the scale returned is the series' own). ``srt``: x sorted along its
    last axis, when the caller has it. Two sorts: x's and the deviations' (the MAD and the
    median of the deviations above the floor, a suffix of the sorted deviations, both from it)."""
    if srt is None:
        srt = np.sort(x, axis=-1)
    n = valid_count(srt)
    med = median_of_sorted(srt, n)
    dev = x - med
    np.abs(dev, out=dev)
    sd = np.sort(dev, axis=-1)  # NaN where x has none, as in srt: n valid values a row
    mad = 1.4826 * median_of_sorted(sd, n)
    low = (sd <= floor[..., None]).sum(axis=-1, keepdims=True)  # at or under the floor: a prefix
    moved = np.nan_to_num(median_of_sorted(sd, n - low, low), nan=0.0)  # the median of the rest, 0 if none
    del sd
    away = dev > floor[..., None]  # (time order) off the median beyond the floor
    departures = (away[..., 1:] & ~away[..., :-1]).sum(axis=-1, keepdims=True) + away[..., :1]
    del away
    moved = np.where(departures >= HABIT, moved, 0.0)
    scale = np.fmax(np.fmax(mad, floor[..., None]), np.where(mad > floor[..., None], 0.0, moved))
    dev /= scale if unit is None else np.fmax(scale, unit[..., None])
    z = dev.astype(np.float32)  # z to 7 digits is plenty, and half the memory of a cube
    del dev
    return (z, scale[..., 0]) if with_mad else z


def others_median(v: np.ndarray) -> np.ndarray:
    """For every server (axis 0), the median of the other servers at each (counter, point), from
    one sort over the servers: the rest's k-th smallest is the whole's (k+1)-th where the
    server's own value is at or below the whole's k-th (taking it out shifts the rest down one
    place), the whole's k-th otherwise. Missing samples sort last and are not counted: k then
    follows each position's count (NaN where no other server has a sample)."""
    S = v.shape[0]
    srt = np.sort(v, axis=0)  # NaN last

    def kth(k):  # the k-th smallest of the others, for every server; k: an int or per position (1, ...)
        if np.ndim(k) == 0:
            a, b = srt[min(max(k, 0), S - 1)], srt[min(max(k + 1, 0), S - 1)]
        else:
            a = np.take_along_axis(srt, np.clip(k, 0, S - 1), axis=0)
            b = np.take_along_axis(srt, np.clip(k + 1, 0, S - 1), axis=0)
        return np.where(v <= a, b, a)

    missing = np.isnan(v)
    if not missing.any():
        m = S - 1  # the others
        lo, hi = (m - 1) // 2, m // 2
        a = kth(lo)
        return a if lo == hi else (a + kth(hi)) / 2
    n = (~missing).sum(axis=0, keepdims=True)  # servers with a sample, per position
    # a server with a sample there: n - 1 others; without: the others are all n, their median
    # the whole's (one value per position)
    have = (kth((n - 2) // 2) + kth((n - 1) // 2)) / 2
    lack = (np.take_along_axis(srt, np.clip((n - 1) // 2, 0, S - 1), axis=0)
            + np.take_along_axis(srt, np.clip(n // 2, 0, S - 1), axis=0)) / 2
    out = np.where(missing, lack, have)
    if (n <= 1).any():
        out[(n - ~missing) <= 0] = np.nan  # no other server has a sample there
    return out


def peers_median(v: np.ndarray, peers: Peers | None) -> np.ndarray:
    """For every server, the median of its peers at each (counter, point): the others of its
    group where its group is compared; for a server with no peers, all the other servers (the
    load they share, without comparing levels)."""
    if peers is None or peers.whole_fleet:
        return others_median(v)
    alone = ~peers.compared[peers.group]
    om = others_median(v) if alone.any() else np.empty_like(v)  # all the others: only for servers without peers
    for g in np.flatnonzero(peers.compared):
        idx = peers.members(g)
        om[idx] = others_median(v[idx])
    return om


def across(w: np.ndarray) -> np.ndarray:
    """How far servers ``w`` (axis 0) lie from one another at each (counter, point): 1.4826 x their
    MAD across them."""
    return 1.4826 * nanmedian(np.abs(w - nanmedian(w, axis=0)), axis=0)


def peers_spread(v: np.ndarray, peers: Peers | None) -> np.ndarray:
    """For every server and counter, how far the servers of its group usually lie from one another
    (the median over time of 1.4826 x their MAD across the group at each point: one number, which a
    departure of one server cannot inflate); NaN for a server without peers (a group under three,
    or not compared)."""
    S, C, T = v.shape
    out = np.full((S, C), np.nan)
    groups = [np.arange(S)] if peers is None or peers.whole_fleet else \
        [peers.members(g) for g in np.flatnonzero(peers.compared)]
    step = max(1, T // 500)  # a typical spread needs no more than 500 points a series
    for idx in groups:
        if len(idx) < 3:
            continue
        w = v[idx][:, :, ::step]
        out[idx] = nanmedian(across(w), axis=1)  # (C,): over time
    return out


def held(over: np.ndarray, run: int) -> np.ndarray:
    """``over`` (..., T) bool where it is part of a run of at least ``run`` True points in a row."""
    starts = over.copy()  # where a long enough run starts
    for k in range(1, run):
        starts[..., :-k] &= over[..., k:]
    if run > 1:
        starts[..., over.shape[-1] - run + 1:] = False
    out = starts.copy()
    for k in range(1, run):
        out[..., k:] |= starts[..., :-k]
    return out


def before(points: int, interval: float) -> str:
    """The stretch a series without peers is judged against, in words: 'the hour before', 'the
    3.8 min before'."""
    sec = points * interval
    if abs(sec - 3600) < interval:
        return "the hour before"
    return f"the {sec / 60:.2g} min before" if sec >= 60 else f"the {sec:.2g} s before"


def recent_level(v: np.ndarray, w: int, scale: np.ndarray | None = None, z: float = 4.0,
                 hold: int = HOLD_BLOCKS) -> np.ndarray:
    """(..., T): for each point, the median of the block of ``w`` points before its own block
    (blocks of ``w`` from the first point; the first block: its own median). With ``scale`` (...,),
    the median of the last usual block before it: a block whose median lies beyond ``z`` scales
    from that level is not one, for up to ``hold`` blocks in a row (then its level is the new
    one, until a block nearer the level before it: a return, judged against that level). Judged
    against the block before, a two-hour step of one counter was unusual for its first hour only,
    and again, wrongly, for the hour after it ended (its return against the step's level)."""
    *lead, T = v.shape
    nb = -(-T // w)
    pad = np.full((*lead, nb * w), np.nan)
    pad[..., :T] = v
    bm = nanmedian(pad.reshape(*lead, nb, w), axis=-1)  # (..., nb)
    if scale is None:
        prev = np.concatenate([bm[..., :1], bm[..., :-1]], axis=-1)
        prev = np.where(np.isnan(prev), bm, prev)
    else:
        prev = np.empty_like(bm)
        base = bm[..., 0].copy()
        former = np.full(base.shape, np.nan)  # the level before one taken after ``hold`` unusual blocks
        odd_run = np.zeros(base.shape, int)
        with np.errstate(invalid="ignore"):
            for b in range(nb):
                prev[..., b] = np.where(np.isnan(base), bm[..., b], base)
                back = np.abs(bm[..., b] - former) < np.abs(bm[..., b] - prev[..., b])  # nearer the level before
                prev[..., b] = np.where(back, former, prev[..., b])  # a return: judged against that level
                odd = (np.abs(bm[..., b] - prev[..., b]) > z * scale) & ~back
                odd_run = np.where(odd, odd_run + 1, 0)
                late = odd_run > hold
                former = np.where(back, np.nan, np.where(late, prev[..., b], former))
                take = (~odd | late) & np.isfinite(bm[..., b])
                base = np.where(take, bm[..., b], base)
                odd_run[late] = 0
    return np.repeat(prev, w, axis=-1)[..., :T]


def _block(v: np.ndarray, p: TimeParams, days: bool, period: int, peers: Peers | None, recent: int = 0,
           held_only: bool = False):
    """z (float32), 'the peers said it', 'a daily profile was used', each series' median, how
    many series were judged against the hour before, and where a server of its own kind did not
    move itself (None: nowhere; its z there is the others' movement, not its own), for a block of
    counters (against peers at the same time from three servers on), as the z it has there
    without the others' part (NaN elsewhere); and each series' departure from its peers in units of
    how far they lie from one another (None without peers or sustained). ``recent``: points in an
    hour, when there are fewer than three days (0: none); ``held_only``: the data is an incident's
    window (under four hours), where a series judged against the stretch before counts only where
    it stays beyond z for ``window_run`` points (a count of runnable tasks at 2 for one second, 1
    else, is no incident of a minute's recording; a step is)."""
    S, C, T = v.shape
    srt = np.sort(v, axis=2)  # the series' resolution, median and spread from one sort
    usual = median_of_sorted(srt)[..., 0]
    floor = p.resolution_steps * _resolution(srt)
    # a z's unit is never finer than a share of the series' usual level either: a node's memory at
    # 11.30% against its usual 11.44% is no incident, however still the difference to its peers
    # usually sits (robust z 387 at the first rows of a real pod's data). Only the unit: what
    # counts as sitting still (the floor) stays the resolution's
    unit = p.relative_floor * np.abs(np.nan_to_num(usual))
    daily_any = False
    if days:
        nd = T // period
        prof = nanmedian(v[:, :, :nd * period].reshape(S, C, nd, period), axis=2)  # (S, C, period)
        y = v - np.tile(prof, (1, 1, -(-T // period)))[:, :, :T]
        # the daily profile only where it is one: where it narrows the series' spread (a cycle
        # of another period, or none, leaves a profile of noise that only adds to it)
        z_plain, mad_plain = _robust(v, floor, with_mad=True, srt=srt, unit=unit)
        del srt
        z_day, mad_day = _robust(y, floor, with_mad=True, unit=unit)
        del y
        daily = mad_day < 0.8 * mad_plain  # (S, C)
        z = np.where(daily[..., None], z_day, z_plain)
        daily_any = bool(daily.any())
        del z_plain, z_day
    else:  # a day's cycle cannot be told from an incident without several days to learn it from
        z = np.zeros(v.shape, np.float32)
        del srt
    why_peer = np.zeros(v.shape, bool)
    still = None
    zx = None  # a series' departure from its peers in units of their spread (sustained departures only)
    alone = np.ones((S, C), bool)  # series that no other server's values at the same time judge
    if S >= 3:
        pm = peers_median(v, peers)
        d = v - pm
        # the difference moves by the peers' steps too: a server that sat at 0 while the others'
        # median went to 0.5 once is half a step from them, not 2.5e11 of its own resolution
        # (sar's count of blocked tasks, 0 on one server, 0 or 1 on the others)
        fd = np.fmax(floor, p.resolution_steps * _resolution(np.sort(pm, axis=2)))
        del pm
        zp = _robust(d, fd, unit=unit)
        if p.sustained:
            # against how far peers lie from one another, not the difference's own spread: a server that
            # left its peers for half the data spreads its difference to them twice as wide (a node at
            # twice the others' CPU for its last 27 minutes of 60 was robust z 3 against its own
            # difference, and nothing was said). Only to find long departures (the level changes):
            # checked there against the peers at the same time
            sp = peers_spread(v, peers)
            # never finer than the floor nor z's unit (fmax would take either for a NaN: no peers, no such z)
            sp = np.where(np.isfinite(sp), np.fmax(np.fmax(sp, fd), unit), np.nan)
            sp[sp <= 0] = np.nan  # peers that all sit still: no spread to count a departure in
            centre = nanmedian(d[:, :, ::max(1, T // 500)], axis=2)  # where a series usually sits against them
            with np.errstate(invalid="ignore", divide="ignore"):
                d -= centre[..., None]  # (in place: the difference is not needed after)
                d /= sp[..., None]
                zx = d.astype(np.float32)  # signed: above, below
        del d
        alone = np.isnan(zp).all(axis=2)
        if peers is not None and not peers.whole_fleet:
            # a server of its own kind is judged against the others' movement at the same time: where
            # it did not move itself (within z of its own usual spread, never finer than z units of
            # its level), the others did, and it is theirs (a pod's node receiving 32.8k bytes/s
            # against its usual 34.2k, 4% off, while the other pods' nodes were at 0.2M, not 5M)
            kind = ~peers.compared[peers.group]  # (S,)
            if kind.any():
                still = np.full(v.shape, np.nan, np.float32)
                at = ~(np.nan_to_num(_robust(v[kind], floor[kind], unit=unit[kind])) > p.z)
                at &= ~alone[kind][..., None]  # a counter no other server has: nothing of theirs to leave out
                still[kind] = np.where(at, z[kind], np.nan)  # its own z (a day's profile's), theirs left out
        why_peer = np.nan_to_num(zp) > np.nan_to_num(z)
        z = np.fmax(z, zp)
    n_recent = 0
    if not days and recent:
        # nothing else judges them (fewer than three days, no peers: a counter only this server
        # has, or fewer than three servers): each point against the level of the hour before it,
        # where a sudden change shows and a daily cycle's slow swing hardly does
        pick = alone & np.isfinite(v).any(axis=2)
        if pick.any():
            x = v[pick]  # (n, T)
            _, sc = _robust(x - recent_level(x, recent), floor[pick], with_mad=True, unit=unit[pick])
            # against the last usual block's level (a block half z of those scales from it is not one,
            # for up to HOLD_BLOCKS): a step's later hours against the level before it, its return
            # against that level too, not the step's (a two-hour step of one counter was said as its
            # first hour, or as the hour after it, when the day's swing made its return the sharper move)
            zr = _robust(x - recent_level(x, recent, np.fmax(sc, unit[pick]), p.z / 2), floor[pick], unit=unit[pick])
            if held_only:
                zr = np.where(held(zr > p.z, p.window_run), zr, np.minimum(zr, p.z))
            z[pick] = np.fmax(np.nan_to_num(z[pick]), zr)
            n_recent = int(pick.sum())
    return z, why_peer, daily_any, usual, n_recent, still, zx


def detect_over_time(cs: CounterSet, params: TimeParams | None = None, peers: Peers | None = None) -> OverTime:
    """Intervals where servers leave their usual level; ``peers``: which servers are compared with
    which at the same time (None: all with all)."""
    p = params or TimeParams()
    v = np.asarray(cs.values, dtype=np.float64)  # (S, C, T), not copied
    S, C, T = v.shape
    notes = []
    period = int(round(86400 / cs.interval)) if cs.interval > 0 else 0
    days = period >= 4 and T >= 3 * period
    z = np.zeros((S, C, T), np.float32)
    why_peer = np.zeros((S, C, T), bool)
    # a few counters at a time: the working arrays (sorts over servers, deviations) stay a
    # block's, not the cube's, whatever the dataset
    block = counters_per_block(S, T, THREADS)
    daily = np.zeros(C, bool)
    usual_all = np.empty((S, C))  # each series' median
    hour = int(round(3600 / cs.interval)) if cs.interval > 0 else 0
    # series without peers, under three days: each point against the level of the hour before,
    # or, in data of under four hours (an incident's window), of the quarter of the data before
    recent = 0 if days else hour if hour >= 6 and T >= 4 * hour else T // 4 if T // 4 >= 6 else 0
    n_recent = np.zeros(C, int)  # per block (its first counter): series judged against the hour before

    stretches: list[tuple[int, int, int, int, float]] = []  # (server, counter, first, last, median z there)

    def work(lo, hi):
        zb, wb, db, usual_all[:, lo:hi], n_recent[lo], still, zx = _block(v[:, lo:hi, :], p, days, period, peers,
                                                                           recent, held_only=recent != hour)
        zb = np.nan_to_num(zb, nan=0.0, posinf=1e6)
        # a series beyond z at more than p.tail of its points has heavier tails than its robust
        # spread says (a latency that mostly sits still, then jumps at every burst): its z scaled
        # down until no more than that share is beyond (measured: ten different pods' metrics
        # named the faulty pod first for 7 of 24 faults without, 17 with; the ASD fleet's
        # intervals in the order ranked, 36 of the first 50 in a labelled segment against 32)
        q = np.quantile(zb, 1 - p.tail, axis=2, keepdims=True)
        # where a server of its own kind did not move itself, the others' movement is not its
        # deviation: left out after its tail is measured (the others' moves are part of how far
        # its difference to them goes: an idle pod's memory 16% under its usual for 23 minutes is
        # then no more than the way it differs from the rest, as it was before they were left out)
        if still is not None:
            zb = np.where(np.isnan(still), zb, np.nan_to_num(still))
        if p.sustained:  # before the scaling: beyond z over one long stretch is a level change, no tail
            found: list[tuple[int, int, int, int, float]] = []

            def long_runs(ix, rows, min_len=None):  # the (server, counter) ``ix`` whose rows of z hold one long stretch
                k, fa, fb = _stretches(rows, p, min_len)
                return [(int(ix[k_, 0]), lo + int(ix[k_, 1]), a_, b_, float(np.median(rows[k_, a_:b_ + 1])))
                        for k_, a_, b_ in zip(k.tolist(), fa.tolist(), fb.tolist())]

            sc = np.argwhere(q[..., 0] > p.z)
            if len(sc):  # the series beyond z at more than p.tail of their points
                found += long_runs(sc, zb[sc[:, 0], sc[:, 1]])
            if p.short_stretch > 0:  # and the others beyond z long enough, if mostly in one stretch: a level
                # held for a while (a step of one counter over 1% of a month's data: no interval takes one
                # counter alone under `strong`, no tail scales it; at 24 points, none in the ASD fleet nor in
                # the generated healthy fleets, at 12 one in each: ASD's in a labelled segment)
                few = np.argwhere((q[..., 0] <= p.z) & ((zb > p.z).sum(axis=2) >= p.short_stretch))
                if len(few):
                    found += long_runs(few, zb[few[:, 0], few[:, 1]], p.short_stretch)
            if zx is not None:  # and away from its peers by their spread over one long stretch, above or below
                # the few away that long (told on 500 points a series, with room; then on all of theirs)
                some = np.nan_to_num(np.abs(zx[:, :, ::max(1, T // 500)]), nan=0.0, posinf=1e6)
                far = np.argwhere(np.quantile(some, 1 - p.tail, axis=2) > 0.8 * p.z)
                away = np.nan_to_num(zx[far[:, 0], far[:, 1]], nan=0.0, posinf=1e6, neginf=-1e6)
                for sign in (1.0, -1.0):
                    rows = sign * away
                    keep = np.quantile(rows, 1 - p.tail, axis=1) > p.z if len(far) else np.zeros(0, bool)
                    sx, rows = far[keep], rows[keep]
                    if len(sx):
                        found += long_runs(sx, rows)
            stretches.extend(_longest(found))
        zb *= np.minimum(1.0, p.z / np.maximum(q, 1e-12)).astype(np.float32)
        z[:, lo:hi, :] = zb
        why_peer[:, lo:hi, :] = wb
        daily[lo] = db

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        each_block(work, C, block)
    seasonal = bool(daily.any())
    if days and not seasonal:
        notes.append("no daily cycle found (taking out a daily profile narrows no series' spread): each series is "
                     "judged against its median")
    alone_series = int(n_recent.sum())
    if not days:
        notes.append(f"{T} points over {T * cs.interval / 86400:.1f} days: fewer than 3 days, so each series is "
                     "judged against its peers only (its own history would flag its daily cycle)"
                     + (f"; {count_of(alone_series, 'series')} without peers (fewer than 3 servers, or a counter no other "
                        f"server has) against their level in {before(recent, cs.interval)} (the last usual one: a "
                        "step is judged against the level before it to its end; a sudden change shows, a daily swing "
                        "hardly does)" if alone_series else
                        "" if S >= 3 else f"; too few points to judge {count_of(S, 'servers')} without peers against "
                        "their recent level (24 needed)"))
    if S < 3 and days:
        notes.append(f"{count_of(S, 'servers')}: each judged against its own history only (3 are needed for peers)")
    over = z > p.z
    need = min(p.min_counters or max(2, int(np.ceil(C / 10))), C)  # one counter: it alone (a CPU-only fleet)
    flag = (over.sum(axis=1) >= need) | (z.max(axis=1) > p.strong)  # (S, T)
    edges = find_edges(cs)
    # a view of call edges (edges.py): its intervals are per service called, from the edges into
    # it alone (separate calls are separate events; one interval over all of a view's edges
    # would start with the first blip on any call and end with the last)
    groups: dict[int, list[tuple[str, np.ndarray, np.ndarray]]] = {}  # view -> (callee, its edges, flagged)
    if edges is not None:
        for s in edges.views:
            flag[s] = False
            for callee, cb in edges.by_callee().items():
                cb = np.asarray(cb)
                o = over[s, cb]
                # a delay on one call moves one counter of a view (a server's incident moves several of
                # its own): one edge held beyond z for edge_run points flags it, as do two at once
                f = (o.sum(axis=0) >= 2) | (z[s, cb].max(axis=0) > p.strong)
                if p.edge_run > 0:
                    f |= held(o, p.edge_run).any(axis=0)
                groups.setdefault(s, []).append((callee, cb, f))
                flag[s] |= f
    merged = flag.copy()
    intervals = []

    def runs_of(f):
        idx, starts, ends = _runs(f, p.gap)
        if len(idx):
            yield from ((int(idx[a]), int(idx[b])) for a, b in zip(starts, ends))

    def interval(s, lo, hi, cols=None, about=""):  # cols: a view's edges into one callee (None: all)
        merged[s, lo:hi + 1] = True
        zz = z[s, :, lo:hi + 1] if cols is None else z[s, cols, lo:hi + 1]  # (counters, len)
        peak = lo + int(np.argmax(zz.max(axis=0)))
        cmax = zz.max(axis=1)
        usual = usual_all[s]
        counters = []
        for i in [i for i in np.argsort(-cmax) if cmax[i] > p.z][:6]:
            c = int(i if cols is None else cols[i])
            k = lo + int(np.argmax(zz[i]))
            counters.append((c, float(cmax[i]), "peers" if why_peer[s, c, k] else "own", float(v[s, c, k]),
                             float(usual[c])))
        return Interval(s, lo, hi, peak, float(zz[:, peak - lo].max()), counters, about)

    def lone(s, k):
        """Whether the server's point ``k``, flagged alone (no other within the gap), is one sample
        of a counter or two: fewer than three counters (or ``need``, when more) beyond z at once, and
        none half as far again as that counter went anywhere else, on this server or another. That
        is what a scrape's glitch and chance coincidences of two counters among many points give:
        in the ASD fleet 346 of 374 one-point intervals lay outside every labelled segment (7.5%
        right, where 4.6% of all points are labelled), whatever their z; 5 were their series' record"""
        if over[s, :, k].sum() >= max(need, 3):
            return False
        for c in np.flatnonzero(z[s, :, k] > p.z):  # a counter or two
            series = z[s, c]
            before = max(series[:max(k - p.gap, 0)].max(initial=0.0), series[k + p.gap + 1:].max(initial=0.0))
            if S > 1:  # the highest of the other servers' series of the counter
                first, second = top2[:, c]
                before = max(before, zmax[second if first == s else first, c])
            if series[k] > 1.5 * before:
                return False
        return True

    if p.lone_point:
        zmax = z.max(axis=2)  # (S, C): each series' highest z
        top2 = np.argsort(-zmax, axis=0)[:2] if S > 1 else None  # (2, C): the servers of the two highest

    for s in range(S):
        if s in groups:
            for callee, cb, f in groups[s]:
                intervals += [interval(s, lo, hi, cb, callee) for lo, hi in runs_of(f)]
        else:
            for lo, hi in runs_of(flag[s]):
                if p.lone_point and lo == hi and lone(s, lo):
                    merged[s, lo] = False  # not an interval: not flagged either
                    continue
                intervals.append(interval(s, lo, hi))
    for iv in intervals:
        iv.score = float(min(iv.peak_z, 1e6)) * float(np.sqrt(iv.points))
    intervals.sort(key=lambda i: -i.score)
    if edges is not None:  # the two sides' intervals of the same calls, and callers waiting for a callee
        attribute(intervals, edges)
        intervals = wait_for_callees(intervals, edges, cs.servers, v)
    alone = None
    if peers is not None and not peers.whole_fleet:
        alone = ~peers.compared[peers.group]
    changes = _level_changes(v, stretches, peers, p) if stretches else []  # ordered there, whatever the threads
    return OverTime(p, merged, z, seasonal, period if seasonal else 0, intervals, notes, need, alone, edges,
                    recent if alone_series else 0, changes)


def _longest(found: list[tuple[int, int, int, int, float]]) -> list[tuple[int, int, int, int, float]]:
    """Stretches (server, counter, first, last, median z) of the same series that overlap: the
    longest of them (the same departure seen on two scales, or part of it)."""
    out: list[tuple[int, int, int, int, float]] = []
    for st in sorted(found, key=lambda x: (x[0], x[1], -(x[3] - x[2]))):
        if not any(o[0] == st[0] and o[1] == st[1] and o[2] <= st[3] and st[2] <= o[3] for o in out):
            out.append(st)
    return out


def _level_changes(v: np.ndarray, stretches, peers: Peers | None, p: TimeParams) -> list[LevelChange]:
    """Each server's long stretches, those of its counters that start and end together (within a
    fiftieth of the data) as one change; where the stretch beyond z is the part at its peers' level
    (more than half the series moved: its median is the new level), the other part is the change.
    The peers' median and spread are computed once per counter that has a stretch."""
    S, C, T = v.shape
    tol = max(3, T // 50)
    out: list[LevelChange] = []
    by_counter: dict[int, list] = {}
    for st in stretches:
        by_counter.setdefault(st[1], []).append(st)
    groups = [np.arange(S)] if peers is None else [peers.members(g) for g in range(len(peers.roles))]
    group_of = np.zeros(S, int) if peers is None else peers.group
    step = max(1, T // 256)  # the peers' level and spread on every step-th point: a stretch's median needs no more
    found = []
    for c_, sts in by_counter.items():
        vs = v[:, c_, ::step]  # (S, T / step)
        pm = peers_median(vs[:, None, :], peers)[:, 0] if S >= 3 else None
        spread = np.full((len(groups), vs.shape[1]), np.nan)  # how far a group's servers lie from one another
        if S >= 3:
            for g, members in enumerate(groups):
                if len(members) >= 3 and {s for s, *_ in sts} & set(members.tolist()):
                    w = vs[members]
                    spread[g] = across(w)
        spread = spread[group_of]  # each server's group's
        rows = max(1, 2_000_000 // T)  # the stretches checked a few at a time: working copies of rows x T
        for k in range(0, len(sts), rows):
            found += _check_stretches(v[:, c_], vs, pm, spread, sts[k:k + rows], step, tol, p)
    # grouped in the order of their starts, whatever the order of the counters (a Prometheus range
    # lists them by name, a CSV by column): the earliest start of a group is its start
    mine: dict[tuple[int, bool], list[LevelChange]] = {}  # a server's changes, its own or with its peers
    for s_, a, b, nzm, c_, level, other, peer, own in sorted(found):
        for lc in mine.setdefault((s_, own), []):
            if abs(lc.start - a) <= tol and abs(lc.end - b) <= tol:
                if all(c != c_ for c, *_ in lc.counters):  # (a series' two sides of one change: said once)
                    lc.counters.append((c_, -nzm, level, other, peer))
                break
        else:
            lc = LevelChange(s_, a, b, [(c_, -nzm, level, other, peer)], own=own)
            mine[(s_, own)].append(lc)
            out.append(lc)
    if S >= 3:  # the same counter at another level over the same time on half the fleet or more
        holders: dict[int, list[int]] = {}  # counter -> the changes (indices into out) that hold it
        for k, lc in enumerate(out):
            for c, *_ in lc.counters:
                holders.setdefault(c, []).append(k)
        shared = np.zeros((len(out), S), bool)  # change k -> the other servers with one like it
        start = np.array([lc.start for lc in out])
        end = np.array([lc.end for lc in out])
        server = np.array([lc.server for lc in out])
        for ks in holders.values():
            if len(ks) + 1 < S / 2:
                continue
            ks = np.array(ks)
            st, en = start[ks], end[ks]
            near = (np.abs(st[:, None] - st[None, :]) <= tol) & (np.abs(en[:, None] - en[None, :]) <= tol)
            np.fill_diagonal(near, False)
            r, c = np.nonzero(near)
            shared[ks[r], server[ks[c]]] = True
        n_shared = shared.sum(1)
        for k, lc in enumerate(out):
            lc.shared = np.flatnonzero(shared[k]).tolist() if n_shared[k] + 1 >= S / 2 else []
    out = [lc for lc in out if lc.own or lc.shared]  # moved with its peers: only the fleet's change says it
    out = _one_per_departure(out)
    for lc in out:
        lc.counters.sort(key=lambda c: -c[1])
        lc.score = float(lc.counters[0][1]) * float(np.sqrt(lc.points)) * len(lc.counters) ** 0.5
    out.sort(key=lambda lc: -lc.score)
    return out


def _one_per_departure(changes: list[LevelChange]) -> list[LevelChange]:
    """A server's own changes (not the fleet's) whose stretches overlap by half the shorter one or
    more, as one: an incident moves its counters from about the same time, each back at its own
    (a stuck placement's actor counts recover hours before its memory does), and one finding per
    counter's window said it six times over. Dated by the strongest of them (most counters, then
    the farthest: a counter that strayed an hour early does not move the start), to the latest end,
    each counter with its own levels; the fleet's changes are left as they are."""
    out: list[LevelChange] = []
    # the strongest first (most counters, then the farthest): it dates the departure, the others join it
    for lc in sorted(changes, key=lambda x: (-len(x.counters), -max(c[1] for c in x.counters), x.server, x.start)):
        if not lc.shared:
            for o in out:
                if o.server == lc.server and not o.shared and o.own == lc.own:
                    overlap = min(o.end, lc.end) - max(o.start, lc.start) + 1
                    if overlap >= 0.5 * min(o.points, lc.points):
                        o.end = max(o.end, lc.end)
                        o.counters += [c for c in lc.counters if all(c[0] != k for k, *_ in o.counters)]
                        break
            else:
                out.append(lc)
            continue
        out.append(lc)
    return out


def _check_stretches(x_all: np.ndarray, vs: np.ndarray, pm, spread: np.ndarray, sts, step: int, tol: int,
                     p: TimeParams) -> list[tuple]:
    """One counter's stretches, checked together: which part differs from the peers, its level,
    the peers' level and spread there, whether it is the server's own, where it started.
    ``x_all``: the counter on every server (S, T); ``vs``, ``pm``, ``spread``: every step-th point
    of it, of its peers' median and of the spread among a server's peers (S, T / step; pm None
    without peers). Medians over each stretch's window at once, one sort for all (a median per
    stretch and window in Python was most of the level changes' cost)."""
    T = x_all.shape[1]
    srv = np.array([st[0] for st in sts])
    a = np.array([st[2] for st in sts])
    b = np.array([st[3] for st in sts])
    x, xs = x_all[srv], vs[srv]
    pms = pm[srv] if pm is not None else None
    if pms is not None:  # from the start, or to the end: which part differs from the peers?
        ask = (a <= tol) != (b >= T - 1 - tol)
        if ask.any():
            i, j = a // step, b // step + 1
            inside = _window_medians(xs - pms, i, j)
            outside = _window_medians(xs - pms, i, j, outside=True)
            swap = ask & np.isfinite(inside) & (np.abs(outside) > np.abs(inside))
            head = swap & (a <= tol)  # the stretch from the start is the peers' level: the rest differs
            tail = swap & (a > tol)
            a, b = np.where(head, b + 1, np.where(tail, 0, a)), np.where(head, T - 1, np.where(tail, a - 1, b))
    i, j = a // step, b // step + 1
    level = _window_medians(x, a, b + 1)
    peer = _window_medians(pms, i, j) if pms is not None else np.full(len(sts), np.nan)
    # its own change when as far from its peers as they lie from one another at the same time, p.z
    # times or more (PAD's server view, over the stretch): beside peers spread wide there (a
    # warm-up when every server's actors swing), 5% under them is no level of its own; such a
    # change is said only as part of the fleet's
    sp = _window_medians(spread[srv], i, j)
    with np.errstate(invalid="ignore"):
        own = ~(np.isfinite(sp) & np.isfinite(peer) & (np.abs(level - peer) < p.z * np.maximum(sp, 1e-12)))
    for k in np.flatnonzero(own & (b >= T - 1 - tol) & (a > 0)).tolist():
        # where it started: the first crossing of z is noise's where the change is a slow ramp
        # (the same buffer leak read from Prometheus and from a file began 25 minutes apart);
        # a step or a hinge fitted to the series against its peers dates it, when it fits well
        o = find_onset(x[k] - pms[k].repeat(step)[:T] if pms is not None else x[k], min_before=max(2, tol))
        if o is not None and o.gain >= ONSET_GAIN and a[k] - (b[k] - a[k]) <= o.index < b[k] - tol:
            a[k] = o.index
            level[k] = _med(x[k, a[k]:b[k] + 1])
            if pms is not None:
                peer[k] = _med(pms[k, a[k] // step:j[k]])
    other = _window_medians(x, a, b + 1, outside=True)
    return [(int(srv[k]), int(a[k]), int(b[k]), -sts[k][4], sts[k][1], float(level[k]), float(other[k]),
             float(peer[k]), bool(own[k])) for k in range(len(sts))]


def _window_medians(rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, outside: bool = False) -> np.ndarray:
    """The median of each row's values in [lo, hi) (outside it: ``outside``), NaN skipped; NaN
    where there are none."""
    pos = np.arange(rows.shape[1])
    inside = (pos >= lo[:, None]) & (pos < hi[:, None])
    return nanmedian(np.where(inside != outside, rows, np.nan), 1)


def _med(x: np.ndarray) -> float:
    """The median of a 1-D array, NaN skipped (NaN when none): a partition, not a sort."""
    return float(nanmedian_rows(x[None])[0])
