"""Performance counters of a fleet as one aligned cube, and the alignment that makes it.

Readers deliver *pieces*: rows of samples, each row one server at one time with values for some
counters (a wide CSV row; one counter for a long CSV or a Prometheus series). :func:`align` puts
them on one time grid, as PAD does (paper 004): ts = the latest start over servers, tf = the
earliest end, d = the sampling interval (detected: the median gap between a series' samples),
N = floor((tf - ts) / d) intervals, so N + 1 points ts + k d. Each sample goes to its nearest
grid point (a server sampling at another phase, or with its clock off by less than d/2, lands
on the right point); a grid point without a sample stays NaN; two samples on one point: the
nearest wins. What was cut is said in the notes. Beyond PAD, servers whose samples begin or end
well inside the others' period do not set it (:func:`_period_setters`): their points without a
sample stay empty, and silences.py says the silence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.units import DATED_FROM, count_of
from perftriage.analysis.values import drop_impossible, impossible_note

from .stats import each_block


@dataclass
class Piece:
    server: np.ndarray  # (R,) int32 server index
    time: np.ndarray  # (R,) float64 seconds since the epoch
    counters: np.ndarray  # (Cp,) int32 counter index of each value column
    values: np.ndarray  # (R, Cp) float64


@dataclass
class RawCounters:
    """What a reader found: server and counter names and the pieces of samples."""

    servers: list[str]
    counters: list[str]
    pieces: list[Piece]
    source: str = ""
    notes: list[str] = field(default_factory=list)
    server_from_name: bool = False  # a CSV without a server column: one server, named after the file
    numbered: bool = False  # rows numbered, not timed (--interval apart): the times are relative only
    headerless: str = ""  # a CSV without a header: how its columns were read ("counters m1..m8")
    kinds: list[str] | None = None  # each server's kind from a column naming it ("": not named), if any
    kind_column: str = ""  # that column
    local: bool = False  # its times were a host's local clock, read as UTC (load_counters' local_zone moves them)

    @property
    def n_samples(self) -> int:
        return sum(p.values.size for p in self.pieces)


@dataclass
class CounterSet:
    servers: list[str]
    counters: list[str]
    start: float  # seconds since the epoch of grid point 0
    interval: float  # seconds between grid points
    values: np.ndarray  # (servers, counters, points) float64, NaN where no sample
    source: str = ""
    notes: list[str] = field(default_factory=list)
    numbered: bool = False  # read from numbered rows (--interval apart): no clock time, only time since the start
    kinds: list[str] | None = None  # each server's kind from a column of the input naming it ("": not named)
    kind_column: str = ""  # that column (msname, service, job...)

    @property
    def n_points(self) -> int:
        return self.values.shape[2]

    @property
    def times(self) -> np.ndarray:
        return self.start + self.interval * np.arange(self.n_points)

    def seconds(self, k: int) -> float:
        """Grid point k in seconds since the epoch (since the start for numbered rows)."""
        return float(self.start + k * self.interval)

    def counter_index(self, name: str) -> int:
        try:
            return self.counters.index(name)
        except ValueError:
            low = name.lower()
            hits = [i for i, c in enumerate(self.counters) if low in c.lower()]
            if len(hits) == 1:
                return hits[0]
            raise KeyError(f"no counter {name!r}" + (f" (matches: {', '.join(self.counters[i] for i in hits[:5])})"
                                                   if hits else "")) from None

    def server_index(self, name: str) -> int:
        try:
            return self.servers.index(name)
        except ValueError:
            raise KeyError(f"no server {name!r}") from None

    @property
    def dated(self) -> bool:
        """Whether the times are clock times: not numbered rows, nor times before 2000 (times since
        a trace set's start with no date, as Alibaba's tables count milliseconds from 0)."""
        return not self.numbered and self.start >= DATED_FROM

    def when(self, k: int, date: bool = True) -> str:
        """Grid point k for a reader: its clock time in UTC (with the date, or the time of day) and
        the time since the start; for times with no clock, the time since the start (and the row,
        for numbered rows)."""
        if not self.dated:
            return self.time_label(k) + (f" (row {k})" if self.numbered else "")
        import datetime as _dt  # noqa: PLC0415

        at = _dt.datetime.fromtimestamp(self.seconds(k), _dt.timezone.utc)
        return at.strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S") + f" UTC ({self.time_label(k)})"

    def time_label(self, k: int) -> str:
        """Grid point k as the time since the start (PAD's 'time since start'), in one format for
        the whole set (an axis reads +0:00:00 .. +23:50:00, not +0:00 .. +23:50:00): +m:ss within an
        hour, +h:mm:ss within two days, +Nd hh:mm beyond (+10d 02:35; seconds only when the
        points fall between minutes)."""
        s = int(round(k * self.interval))  # to the second: 13019.99 s is +3:37:00, not +3:36:59
        span = (self.n_points - 1) * self.interval
        if span >= 2 * 86400:
            d, r = divmod(s, 86400)
            sec = f":{r % 60:02d}" if self.interval % 60 else ""
            return f"+{d}d {r // 3600:02d}:{r % 3600 // 60:02d}{sec}"
        return f"+{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if span >= 3600 else f"+{s // 60}:{s % 60:02d}"


def detect_interval(raw: RawCounters) -> float:
    """The median gap between consecutive samples of one series (server, counter)."""
    gaps = []
    for p in raw.pieces:
        fin = np.isfinite(p.time)
        if fin.sum() < 2:
            continue
        time, server = (p.time, p.server) if fin.all() else (p.time[fin], p.server[fin])
        if _in_order(server, time):  # as files mostly hold them: no sort
            t, s = time, server
        else:
            o = np.lexsort((time, server))
            t, s = time[o], server[o]
        d = np.diff(t)
        d = d[(s[1:] == s[:-1]) & (d > 0)]
        if len(d):
            gaps.append(d if len(d) <= 10_000 else d[:: len(d) // 10_000])
    if not gaps:
        raise InputError(raw.source, "no series has two samples: the sampling interval cannot be told")
    d = float(np.median(np.concatenate(gaps)))
    # a collector's jitter left out: the period to the millisecond (Go's clock: 59.99995 s a
    # minute), to the whole second where it is within 0.5% of one (typeperf's 15 s: 14.972 s, the
    # milliseconds of its times drifting)
    if d >= 2 and abs(d - round(d)) <= 0.005 * d:
        return float(round(d))
    return round(d, 3) if d >= 1 else d


def _period_setters(seen: np.ndarray, first: np.ndarray, last: np.ndarray, d: float) -> np.ndarray:
    """The servers that set the common period (PAD: from the latest start to the earliest end):
    of three or more, not those whose samples begin or end well inside the others' (more than
    three intervals, and 5% of the median server's span, after the median start or before the
    median end: one stray sample, a late start, an agent that stopped), which would cut every
    server's data to theirs; all of them when fewer than half would be left."""
    if seen.sum() < 3:
        return seen
    mid_first, mid_last = float(np.median(first[seen])), float(np.median(last[seen]))
    tol = max(3 * d, 0.05 * (mid_last - mid_first))
    sets = seen & (first <= mid_first + tol) & (last >= mid_last - tol)
    return sets if 2 * sets.sum() >= seen.sum() and sets.sum() >= 2 else seen


def _edge(first: float, last: float, t0: float, t1: float) -> str:
    """How a server's samples sit in the others' period [t0, t1]: 'from 10 min in', 'until 179 min
    in', or both."""
    out = []
    if first > t0:
        out.append(f"from {_secs(first - t0)} in")
    if last < t1:
        out.append(f"until {_secs(last - t0)} in" if last >= t0 else "before the period")
    return ", ".join(out) or "within it"


def _in_order(server: np.ndarray, time: np.ndarray) -> bool:
    """Rows already ordered by server, then time."""
    ds = server[1:].astype(np.int64) - server[:-1]
    return bool(((ds > 0) | ((ds == 0) & (time[1:] >= time[:-1]))).all())


def align(raw: RawCounters, interval: float | None = None) -> CounterSet:
    """The aligned cube of ``raw`` (see the module's notes)."""
    S, C = len(raw.servers), len(raw.counters)
    if S == 0 or C == 0 or not raw.pieces:
        raise InputError(raw.source, "no counter samples")
    d = float(interval) if interval else detect_interval(raw)
    if not d > 0:
        raise InputError(raw.source, f"sampling interval must be positive, not {d}")
    first = np.full(S, np.inf)
    last = np.full(S, -np.inf)
    no_time = 0
    for p in raw.pieces:
        ok = np.isfinite(p.time)
        no_time += len(ok) - int(ok.sum())
        srv, t = p.server[ok], p.time[ok]
        if len(srv) and bool((srv[1:] >= srv[:-1]).all()):  # a server's rows together: one reduction each
            b = np.r_[0, np.flatnonzero(srv[1:] != srv[:-1]) + 1]
            u = srv[b]
            first[u] = np.minimum(first[u], np.minimum.reduceat(t, b))
            last[u] = np.maximum(last[u], np.maximum.reduceat(t, b))
        else:
            np.minimum.at(first, srv, t)
            np.maximum.at(last, srv, t)
    if no_time:
        raw.notes.append(f"{no_time:,} sample{'' if no_time == 1 else 's'} with a time that is not a finite number "
                         "left out")
    seen = np.isfinite(first)
    if not seen.all():
        raw.notes.append(f"{count_of(int((~seen).sum()), 'servers')} without samples left out")
    sets = _period_setters(seen, first, last, d)
    ts, tf = float(first[sets].max()), float(last[sets].min())
    if (seen & ~sets).any():
        edges = [f"{raw.servers[i]}: {_edge(first[i], last[i], ts, tf)}"
                 for i in np.flatnonzero(seen & ~sets)[:4]]
        n = int((seen & ~sets).sum())
        raw.notes.append(f"{count_of(n, 'servers')} sampled over well less than the others' period "
                         f"({'; '.join(edges)}{'; ...' if n > 4 else ''}): the period is the others', and "
                         f"{'its' if n == 1 else 'their'} points without a sample are empty (a silence, said in the "
                         "findings)")
    late, early = int(np.argmax(np.where(sets, first, -np.inf))), int(np.argmin(np.where(sets, last, np.inf)))
    if tf < ts:
        raise InputError(raw.source, f"the servers' sampling periods do not overlap: {raw.servers[late]} starts after "
                                     f"{raw.servers[early]} ends")
    n = int(np.floor((tf - ts) / d + 1e-9))
    T = n + 1
    cells = S * C * T
    if cells > 500_000_000:
        raise InputError(raw.source, f"{count_of(S, 'servers')} x {count_of(C, 'counters')} x {count_of(T, 'points')} "
                                     f"is too large to hold at once ({cells * 8 / 2**30:.1f} GiB)")
    have = raw.n_samples
    if cells > max(50 * have, 5_000_000):
        # estimated before allocating: a few samples with a tiny interval over a long span
        raise InputError(raw.source, f"{have:,} samples would spread over {T:,} points every {_secs(d)} (from "
                                     f"{_secs(tf - ts)} of time): the times or the sampling interval are wrong")
    cube = None  # made on first use
    before = after = dup = 0
    phase_sum = np.zeros(S)
    phase_n = np.zeros(S)
    for p in raw.pieces:
        pos = (p.time - ts) / d
        k = np.rint(pos)
        finite = np.isfinite(p.time)
        inside = (k >= 0) & (k <= n) & finite
        # cut at the common period: samples more than d/2 outside it
        before += int(np.isfinite(p.values[(k < 0) & finite]).sum())  # samples: a wide row's empty cells are none
        after += int(np.isfinite(p.values[(k > n) & finite]).sum())
        if not inside.any():
            continue
        cell = p.server[inside].astype(np.int64) * T + k[inside].astype(np.int64)
        # one sample per (server, point) in this piece: the nearest
        if len(cell) < 2 or bool((cell[1:] > cell[:-1]).all()):  # in order, one each: nothing to choose
            sel = np.flatnonzero(inside)
        else:
            o = np.lexsort((np.abs(pos[inside] - k[inside]), cell))
            head = np.r_[True, cell[o][1:] != cell[o][:-1]]
            dup += int((~head).sum()) * len(p.counters)
            o = o[head]
            sel = np.flatnonzero(inside)[o]
            cell = cell[o]
        srv = cell // T
        # clock phase of each server against the grid (a sign of clock offsets), in [-0.5, 0.5]
        ps = pos[sel]
        phase_sum += np.bincount(srv, ps - np.floor(ps + 0.5), minlength=S)  # half a step: -0.5, always
        phase_n += np.bincount(srv, minlength=S)
        cols = p.counters.astype(np.int64)
        whole = len(cols) == C and bool((cols == np.arange(C)).all())
        runs = _runs(sel, cell) if whole else None
        fresh = cube is None
        if fresh:
            if runs is not None and 2 * len(cell) >= S * T:  # whole rows over most of the grid: only
                # the cells this piece leaves empty need filling (scattered NaN over most of it: slower)
                cube = np.empty((S, C, T))
                empty = np.ones(S * T, bool)
                empty[cell] = False
                es, ek = np.divmod(np.flatnonzero(empty), T)
                cube[es, :, ek] = np.nan
                del empty, es, ek
            else:
                cube = np.full((S, C, T), np.nan)
        if runs is not None:
            dup += _put_runs(cube, p.values, sel, cell, runs, fresh)
            continue
        kk = cell % T
        for a in range(0, len(sel), 1 << 16):  # in slices: no copy of the whole piece
            sv, kv, vals = srv[a:a + (1 << 16)], kk[a:a + (1 << 16)], p.values[sel[a:a + (1 << 16)]]
            if whole:  # cube[sv, :, kv] is (rows, counters)
                if not fresh:
                    dup += int((~np.isnan(cube[sv, :, kv])).any(axis=1).sum())
                cube[sv, :, kv] = vals
            else:
                at = (sv[:, None], cols[None, :], kv[:, None])
                if not fresh:
                    dup += int((~np.isnan(cube[at])).sum())
                cube[at] = vals
    if cube is None:
        cube = np.full((S, C, T), np.nan)
    dropped, have = _clean(cube)
    # a server that did not set the period keeps its points in it, but not with fewer than three
    # samples of any counter there (a stray sample, an agent that stopped before it began)
    few = seen & ~sets & (have.max(axis=1) < 3)
    keep = np.flatnonzero(seen & ~few)
    have = have[keep]  # samples of each kept server and counter
    notes = list(raw.notes)
    if few.any():
        notes.append(f"{count_of(int(few.sum()), 'servers')} with fewer than 3 samples in the common period left out ("
                     + ", ".join(raw.servers[i] for i in np.flatnonzero(few)[:6]) + ("..." if few.sum() > 6 else "")
                     + ")")
    notes.append(f"aligned to {T:,} points every {_secs(d)} from the latest start ({raw.servers[late]}) to the "
                 f"earliest end ({raw.servers[early]})")
    if before or after:
        notes.append(f"cut {before:,} sample{'' if before == 1 else 's'} before the common start and {after:,} after "
                     "the common end")
    if dup:
        notes.append(f"{count_of(dup, 'samples')} fell on a grid point that already had one: the nearest in a file was kept, "
                     "the last file read wins between files")
    if dropped:
        notes.append(impossible_note(dropped))
    cells = len(keep) * C * T
    missing = cells - int(have.sum())
    if missing:
        notes.append(f"{missing:,} of {cells:,} grid cells ({100 * missing / cells:.1f}%) have no sample")
    empty = [raw.counters[c] for c in np.flatnonzero(have.sum(axis=0) == 0)]
    if empty and len(empty) < C:
        notes.append(f"{count_of(len(empty), 'counters')} without a single sample: "
                     + ", ".join(empty[:8]) + ("..." if len(empty) > 8 else ""))
    phase = np.divide(phase_sum, phase_n, out=np.zeros(S), where=phase_n > 0)
    shifted = [raw.servers[s] for s in range(S) if abs(phase[s]) > 0.25]
    if shifted:
        notes.append(f"{count_of(len(shifted), 'servers')} sampling more than a quarter interval off the grid (clock offset?): "
                     + ", ".join(shifted[:6]))
    if len(keep) < S:
        cube = cube[keep]
    return CounterSet(servers=[raw.servers[i] for i in keep], counters=list(raw.counters), start=ts, interval=d,
                      values=cube, source=raw.source, notes=notes, numbered=raw.numbered,
                      kinds=None if raw.kinds is None else [raw.kinds[i] for i in keep], kind_column=raw.kind_column)


def _runs(sel: np.ndarray, cell: np.ndarray) -> list[tuple[int, int]] | None:
    """Where consecutive rows ``sel`` of a piece go to consecutive cells ``cell`` (rows read in
    order: a run per server, or per stretch between a period's cut ends): the runs [a, b) of
    positions; None when rows are scattered (more than a run per 64 rows)."""
    if len(sel) < 2:
        return [(0, len(sel))]
    brk = np.flatnonzero((np.diff(sel) != 1) | (np.diff(cell) != 1)) + 1
    if len(brk) > len(sel) // 64:
        return None
    bounds = np.r_[0, brk, len(sel)].tolist()
    return list(zip(bounds[:-1], bounds[1:]))


def _put_runs(cube: np.ndarray, values: np.ndarray, sel: np.ndarray, cell: np.ndarray, runs, fresh: bool) -> int:
    """Rows ``values[sel]`` (point, counter) into ``cube`` (server, counter, point), a server's
    stretch of a run at a time as one transposed block, on up to two threads (numpy's copy of a
    whole transposed cube walks it in a cache-hostile order: on 500 x 200 x 2,000, 3.4 s against
    0.7 s a server at a time and 0.4 s on two threads). How many rows fell where one was."""
    T = cube.shape[2]
    segs = []  # (server, first point, first row, rows)
    for a, b in runs:
        c0, r0, left = int(cell[a]), int(sel[a]), b - a
        while left:
            s_, k0 = divmod(c0, T)
            m = min(left, T - k0)
            segs.append((s_, k0, r0, m))
            c0, r0, left = c0 + m, r0 + m, left - m
    dup = np.zeros(len(segs), np.int64)

    def work(lo, hi):
        for i in range(lo, hi):
            s_, k0, r0, m = segs[i]
            dst = cube[s_, :, k0:k0 + m]
            if not fresh:
                dup[i] = int((~np.isnan(dst)).any(axis=0).sum())
            dst[...] = values[r0:r0 + m].T

    each_block(work, len(segs), max(1, len(segs) // 64))
    return int(dup.sum())


def _clean(cube: np.ndarray) -> tuple[int, np.ndarray]:
    """In place, a few servers at a time on up to two threads: impossible values made missing;
    how many were, and each server's samples of each counter (S, C)."""
    S = cube.shape[0]
    dropped, have = np.zeros(S, np.int64), np.zeros(cube.shape[:2], np.int64)

    def work(lo, hi):
        dropped[lo] = drop_impossible(cube[lo:hi])
        have[lo:hi] = np.count_nonzero(~np.isnan(cube[lo:hi]), axis=2)

    each_block(work, S, max(1, S // 64))
    return int(dropped.sum()), have


def from_cube(values: np.ndarray, servers, counters, start: float = 0.0, interval: float = 1.0,
              source: str = "") -> CounterSet:
    """A counter set from an already aligned cube (generators, tests, benchmarks)."""
    values = np.asarray(values, np.float64)
    if values.ndim != 3 or values.shape[:2] != (len(servers), len(counters)):
        raise ValueError("values must be (servers, counters, points)")
    return CounterSet(list(servers), list(counters), float(start), float(interval), values, source)


def _secs(d: float) -> str:
    if d >= 60 and abs(d / 60 - round(d / 60)) < 1e-6:
        return f"{int(round(d / 60))} min"
    return f"{d:g} s"
