"""Counters named as totals (``*_total``, ``*_count``, ``*_sum``, ``*_bucket``: OpenMetrics
counters and histogram parts; and the fields collecting agents keep as totals since boot:
Telegraf's ``bytes_recv``, ``read_bytes``, ``io_time``, ``context_switches``..., Docker's
``rx_bytes``) whose samples only grow, read as rates per second.

A total since a server's boot compares uptimes, not load: a server up for a month holds thirty
times the requests a day-old one does at the same traffic, and PAD's views would rank it for that.
Prometheus's counters are rated as they are read (their type or name says what they are,
readers.py); a CSV export (a Grafana panel without rate(), a script's dump) says nothing of type
and a name ending in ``_total`` is no proof (``memory_total`` is a level), so a counter so named is
rated when its samples, over all its servers, show it:

- it rises between consecutive samples in at least ``NAMED_GROWS`` of the steps (an error counter
  moves now and then; a ``memory_total`` that never moves stays a level);
- it never falls except to below half its value (a restart counting from zero again), in at most
  ``RESTARTS`` of the steps: a level that wanders falls in a third of its steps or more.

The shape alone does not decide: a buffer pool leaking on every server from the start rises in
every step and never falls, as a total does, and its rate would hide the leak.

A rate is the rise since the counter's previous sample over the time between them (a missing
point bridged), per second; at a restart the value itself (counted from zero, as Prometheus's
rate() takes it); the first sample has none. Counters already rates (``rate(...)``) are left.
"""

from __future__ import annotations

import re

import numpy as np

from perftriage.analysis.units import count_of, first_of

from .table import CounterSet

RESTARTS = 0.02  # at most this share of its steps are restarts (a fall to below half)
NAMED_GROWS = 0.01  # a total rises in at least this share of its steps
MIN_STEPS = 10  # steps (pairs of consecutive samples) of a counter before its shape says anything
CUMULATIVE_ENDINGS = ("_total", "_count", "_sum", "_bucket")
#: fields agents export as totals since boot without a total's ending, as the name's last part
#: (after a measurement's prefix: net_bytes_recv, diskio.read_bytes, eth0/rx_bytes; labels left
#: off): Telegraf's net, diskio, kernel and cpu (collect_cpu_time) plugins, Docker's and cAdvisor's
#: network and block I/O statistics
AGENT_TOTALS = re.compile(
    r"(?:^|[._/:\- ])(?:bytes_(?:sent|recv)|packets_(?:sent|recv)|(?:err|drop)_(?:in|out)|(?:read|write)_bytes"
    r"|(?:read|write|io|weighted_io)_time|merged_(?:reads|writes)|reads|writes|context_switches|interrupts"
    r"|processes_forked|time_(?:user|system|idle|nice|iowait|irq|softirq|steal|guest|guest_nice)"
    r"|(?:rx|tx)_(?:bytes|packets|errors|dropped)|io_service_bytes_recursive_(?:read|write))$")


def named_total(name: str) -> bool:
    """Whether counter ``name`` is named as a total: a total's ending, or a field agents keep as
    one (``AGENT_TOTALS``); its labels (``{...}``) left off."""
    base = name.split("{", 1)[0].strip().lower()
    return base.endswith(CUMULATIVE_ENDINGS) or AGENT_TOTALS.search(base) is not None


def _previous(valid: np.ndarray) -> np.ndarray:
    """(servers, points): the index of each point's previous sample of the same server (-1: none)."""
    idx = np.where(valid, np.arange(valid.shape[1]), -1)
    last = np.maximum.accumulate(idx, axis=1)  # the latest sample up to and including each point
    prev = np.full(valid.shape, -1, np.int64)
    prev[:, 1:] = last[:, :-1]
    return prev


def _steps(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For one counter's (servers, points) samples: which points have a previous sample, that
    sample's index, and its value (NaN where none)."""
    valid = ~np.isnan(x)
    prev = _previous(valid)
    has = valid & (prev >= 0)
    before = np.take_along_axis(x, np.maximum(prev, 0), axis=1)
    return has, prev, np.where(has, before, np.nan)


def grows(x: np.ndarray, name: str) -> bool:
    """Whether counter ``name``'s (servers, points) samples are a total that only grows (see the
    module's notes)."""
    if not named_total(name):
        return False
    has, _, before = _steps(x)
    n = int(has.sum())
    if n < MIN_STEPS:
        return False
    after = np.where(has, x, np.nan)
    with np.errstate(invalid="ignore"):
        up = int((after > before).sum())
        down = after < before
        restart = down & (after < 0.5 * before)
    if int(down.sum()) != int(restart.sum()) or int(restart.sum()) > RESTARTS * n:
        return False  # falls as a level does, or restarts too often to be a total
    return up >= max(1, NAMED_GROWS * n)


def per_second(x: np.ndarray, interval: float) -> np.ndarray:
    """One counter's (servers, points) totals as rates per second since each previous sample."""
    has, prev, before = _steps(x)
    gap = (np.arange(x.shape[1])[None, :] - prev) * interval
    with np.errstate(invalid="ignore", divide="ignore"):
        rise = np.where(x >= before, x - before, x)  # a fall is a restart: counted from zero
        return np.where(has & (gap > 0), rise / np.where(gap > 0, gap, 1.0), np.nan)


def sample_rates(t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A total's samples (in time order) as rates per second, from each sample to the next (the
    first: none; a fall: a restart, the value itself counted from zero; NaN where a time or a value
    is missing or no time passed): a reader's series, before any grid (collectd's files, OTLP's
    cumulative sums)."""
    out = np.full(len(v), np.nan)
    ok = np.flatnonzero(np.isfinite(v) & np.isfinite(t))
    if len(ok) < 2:
        return out
    dv, dt = np.diff(v[ok]), np.diff(t[ok])
    dv = np.where(dv < 0, v[ok][1:], dv)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[ok[1:]] = np.where(dt > 0, dv / dt, np.nan)
    return out


def rate_series(time: np.ndarray, value: np.ndarray, ids: np.ndarray, begin: np.ndarray, rated: set[int]) -> None:
    """The values of the series in ``rated`` (by ``ids``, each value's series) as rates per second,
    in place: where every point of a series has its interval's start (``begin``, NaN else: a delta
    sum, a count over each interval), its value over that interval; else a total's samples, from
    each to the next (sample_rates: the first has none, NaN). A reader's points in any order."""
    order = np.lexsort((time, ids))  # each series' points together, in time order: grouped once
    bounds = np.flatnonzero(np.r_[True, ids[order][1:] != ids[order][:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:]):
        at = order[a:b]
        if int(ids[at[0]]) not in rated:
            continue
        if np.isfinite(begin[at]).all():  # delta: each point its own interval's
            span = time[at] - begin[at]
            value[at] = np.where(span > 0, value[at] / np.where(span > 0, span, 1), np.nan)
            continue
        value[at] = sample_rates(time[at], value[at])


def rate_cumulative(cs: CounterSet) -> list[str]:
    """Turn ``cs``'s counters that only grow into rates per second, in place (renamed
    ``rate(NAME)``); their former names, with a note in ``cs.notes``."""
    rated = []
    for c, name in enumerate(cs.counters):
        if name.startswith("rate(") or not grows(cs.values[:, c, :], name):
            continue
        cs.values[:, c, :] = per_second(cs.values[:, c, :], cs.interval)
        cs.counters[c] = f"rate({name})"
        rated.append(name)
    if rated:
        cs.notes.append(f"{count_of(len(rated), 'counters')} named and growing as totals (since each server's "
                        "start: compared by their rate, not their level) read as rates per second (rate(NAME)): "
                        f"{first_of(rated, 6)}")
    return rated
