"""What a slower method adds to the requests that call it: the yardstick for whether a step or a
slower replica matters. A real cart's GetCart stepping from 1.1 to 1.5 ms from one minute to the
next, in requests of 170 ms, adds 0.2% to them (a habit of the service, no incident); a method
1.5x slower that a ticket is about adds a percent or more (1.4-31% in generated systems)."""

from __future__ import annotations

import numpy as np
from perftriage.analysis.spans.table import ROOT, SpanTable

MIN_ADDED = 0.005  # a fraction of the requests' median latency


def request_latency(sp: SpanTable) -> np.ndarray:
    """Per request (trace code): its root's duration in ns, the longest where it has several;
    NaN for a request without a root."""
    latency = np.full(len(sp.traces), np.nan)
    roots = np.flatnonzero(sp.parent == ROOT)
    np.fmax.at(latency, sp.trace[roots], sp.duration[roots].astype(np.float64))
    return latency


def added_share(sp: SpanTable, latency: np.ndarray, own: np.ndarray, usual: np.ndarray,
                slower: np.ndarray) -> tuple[float, float]:
    """What the ``slower`` calls (rows) add to the requests that make them, against the ``usual``
    calls of the method: (the median own time added per request, times its calls per request,
    over those requests' median latency; that latency in ms). NaN where none of them has a root."""
    traces = np.unique(sp.trace[slower])
    lat = latency[traces]
    lat = lat[np.isfinite(lat)]
    if not len(lat) or float(np.median(lat)) <= 0:
        return float("nan"), float("nan")
    added = (float(np.median(own[slower])) - float(np.median(own[usual]))) * len(slower) / len(traces)
    return added / float(np.median(lat)), float(np.median(lat)) / 1e6
