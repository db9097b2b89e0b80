"""Servers that went silent: stretches of time where a server sent no sample of any counter
while most of the others did (a crashed host, a stopped agent, a network partition). PAD
compares what was measured, and a silence measures nothing: it is sought on its own, and it is
often the incident itself.

A silence is at least ``min_points`` grid points, and at least three times the server's usual
step from one sample to the next (a server sampled every 5 min on a 1 min grid misses four points
in five, by design), during which at least ``min_others`` of the other servers have samples (when
most of the fleet is silent, the collection stopped, not the server).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .over_time import _runs
from .table import CounterSet


@dataclass
class Silence:
    server: int
    start: int  # first grid point without a sample
    end: int  # last one (inclusive)
    others: float  # share of the other servers with samples over the stretch
    last_before: int  # the server's last point with a sample before it (-1: none, it began late)
    first_after: int  # its first after it (-1: none, it stopped)

    @property
    def points(self) -> int:
        return self.end - self.start + 1

    @property
    def stopped(self) -> bool:
        return self.first_after < 0

    @property
    def began_late(self) -> bool:
        return self.last_before < 0


def sampled(cs: CounterSet) -> np.ndarray:
    """(servers, points) bool: the server has a sample of some counter at the point (a server at a
    time, not one copy of the whole cube)."""
    out = np.zeros((len(cs.servers), cs.n_points), bool)
    for s in range(len(cs.servers)):
        out[s] = ~np.isnan(cs.values[s]).all(axis=0)
    return out


def _gaps(have: np.ndarray) -> list[tuple[int, int]]:
    """The runs of points without a sample, as (first, last) points (over_time's runs, no gap
    bridged)."""
    idx, first, last = _runs(~have, 0)
    return list(zip(idx[first].tolist(), idx[last].tolist())) if len(idx) else []


def find_silences(cs: CounterSet, min_points: int = 3, min_others: float = 0.5) -> list[Silence]:
    """The silences of every server, the longest first."""
    S, T = len(cs.servers), cs.n_points
    if S < 2 or T < min_points:
        return []
    have = sampled(cs)
    n = have.sum(axis=0)
    out = []
    for s in range(S):
        others = (n - have[s]) / (S - 1)
        at = np.flatnonzero(have[s])
        if len(at) == T:
            continue
        usual = float(np.median(np.diff(at))) if len(at) >= 2 else 1.0  # points from one sample to the next
        need = max(min_points, int(np.ceil(3 * usual)))
        for a, b in _gaps(have[s]):
            if b - a + 1 < need or float(others[a:b + 1].mean()) < min_others:
                continue
            before = np.flatnonzero(have[s, :a])
            after = np.flatnonzero(have[s, b + 1:])
            out.append(Silence(s, a, b, float(others[a:b + 1].mean()), int(before[-1]) if len(before) else -1,
                               int(b + 1 + after[0]) if len(after) else -1))
    out.sort(key=lambda x: (-x.points, x.server, x.start))
    return out
