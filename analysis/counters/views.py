"""PAD's three views of one counter and their summary statistics (paper 004, section IV):

- detail view: the server x time values themselves;
- server view: per server, statistics over time (the stock chart: min / mean / max);
- time view: per time point, statistics over servers (mean with a band).

Statistics skip missing samples (NaN).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .table import CounterSet

# the statistics a view shows (the Summary also has q25, q75)
STATS = ("mean", "median", "std", "min", "max", "q05", "q95")


@dataclass
class Summary:
    """Statistics of one counter per item (server or time point); arrays of the items' length."""

    mean: np.ndarray
    median: np.ndarray
    std: np.ndarray
    min: np.ndarray
    max: np.ndarray
    q05: np.ndarray
    q25: np.ndarray
    q75: np.ndarray
    q95: np.ndarray
    count: np.ndarray  # samples per item

    def get(self, stat: str) -> np.ndarray:
        return getattr(self, stat)


def summarize(x: np.ndarray, axis: int) -> Summary:
    """Statistics of a 2-D array along ``axis`` (NaN skipped; an all-NaN item gives NaN)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        has_nan = bool(np.isnan(x).any())
        q = (np.nanquantile if has_nan else np.quantile)(x, [0.05, 0.25, 0.5, 0.75, 0.95], axis=axis)
        return Summary(
            mean=(np.nanmean if has_nan else np.mean)(x, axis=axis),
            median=q[2],
            std=(np.nanstd if has_nan else np.std)(x, axis=axis),
            min=(np.nanmin if has_nan else np.min)(x, axis=axis),
            max=(np.nanmax if has_nan else np.max)(x, axis=axis),
            q05=q[0], q25=q[1], q75=q[3], q95=q[4],
            count=(~np.isnan(x)).sum(axis=axis),
        )


def server_view(cs: CounterSet, c: int) -> Summary:
    return summarize(cs.values[:, c, :], axis=1)


def time_view(cs: CounterSet, c: int, servers: np.ndarray | None = None) -> Summary:
    """Per time point over the servers (``servers``: over those only, a server's kind)."""
    return summarize(cs.values[:, c, :] if servers is None else cs.values[servers, c, :], axis=0)
