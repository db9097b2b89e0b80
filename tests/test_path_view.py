"""The per-thread timeline of a request's path (PathView.timeline): the state covering most of
each column, computed from cumulative sums, against the definition applied cell by cell, on
random paths and on the real paths of the webserver sample."""

from __future__ import annotations

import numpy as np
import pytest

from perftriage.analysis.requests.critical_path import NSTATES, Segments
from perftriage.analysis.requests.path_view import PathSource, PathView
from perftriage.analysis.triage import Options, run_triage

from conftest import ROOT, needs_bt2


def cell_by_cell(view: PathView, width: int) -> list[tuple[str, list[int]]]:
    """The definition: per column, the time of each state inside its slice; the most wins (the
    lowest state on a tie), -1 where the thread is not on the path."""
    edges = view.t0 + (np.arange(width + 1) * view.total) // width
    s = view.segments
    host = s.hosts_of()
    rows = []
    for key in view.thread_order:
        m = (host == key[0]) & (s.tid == key[1])
        cover = np.zeros((width, NSTATES), np.int64)
        for a, b, st in zip(s.start[m].tolist(), s.end[m].tolist(), s.state[m].tolist()):
            for c in range(width):
                cover[c, st] += max(0, min(b, int(edges[c + 1])) - max(a, int(edges[c])))
        rows.append((view.thread_label[key], np.where(cover.sum(1) > 0, cover.argmax(1), -1).tolist()))
    return rows


def random_view(rng, n: int, threads: int) -> PathView:
    """A path over [t0, t1]: consecutive segments, each of one thread and state (zero-length
    ones too), as the walk makes them."""
    t0 = 1_000_000
    lengths = rng.choice([0, 1, 3, 50, 700, 5_000], n)
    start = t0 + np.r_[0, np.cumsum(lengths)[:-1]]
    seg = Segments(tid=rng.integers(1, threads + 1, n), start=start, end=start + lengths,
                   state=rng.integers(0, NSTATES, n), via=np.zeros(n, np.int8))
    order = list(dict.fromkeys((0, int(t)) for t in seg.tid.tolist()))
    return PathView(t0, int(seg.end[-1]) + int(rng.integers(0, 900)), seg, order,
                    {k: f"t{k[1]}" for k in order}, seg.durations())


@pytest.mark.parametrize("seed", range(12))
def test_the_timeline_is_the_state_covering_most_of_each_column(seed):
    rng = np.random.default_rng(seed)
    view = random_view(rng, int(rng.integers(1, 300)), int(rng.integers(1, 5)))
    for width in (1, 7, 40, 133):
        assert view.timeline(width) == cell_by_cell(view, width), width


@needs_bt2
def test_the_timelines_of_real_paths_are_those_of_the_definition():
    res = run_triage([ROOT / "sample_traces" / "two-hosts"], Options(findings=False))
    source = PathSource(res.graphs)
    reqs = res.requests
    crossed = 0
    for i in np.linspace(0, len(reqs) - 1, 30).astype(int):
        view, why = source.path(str(reqs.host[i]), int(reqs.tid[i]), int(reqs.start[i]), int(reqs.end[i]))
        assert why == "" and len(view.segments)
        crossed += len(view.segments.hosts) > 1
        for width in (20, 77):
            assert view.timeline(width) == cell_by_cell(view, width)
    assert crossed  # some paths cross to the database host: rows of another host's threads
