"""A 2-D map of the requests' state durations (Isomap, as in the paper's section IV.C).

Isomap on log(1 + duration in ms) of every state, over a sample when there are many requests:
all outliers are kept and the normal requests are sampled (deterministically) to fill up to
``max_points``. Coordinates are rescaled to 1..1000 on both axes, as the authors did before
drawing them on log scales.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .features import FeatureTable


@dataclass
class RequestMap:
    rows: np.ndarray  # request indices in the map
    x: np.ndarray
    y: np.ndarray
    group: np.ndarray  # -1 normal, 0.. cluster of an outlier
    sampled_from: int


def request_map(ft: FeatureTable, label: np.ndarray, max_points: int = 1500, n_neighbors: int = 15,
                seed: int = 0) -> RequestMap | None:
    import warnings  # noqa: PLC0415

    from sklearn.manifold import Isomap  # noqa: PLC0415

    n = len(ft)
    if n < 5:
        return None
    out = np.flatnonzero(label >= 0)
    normal = np.flatnonzero(label < 0)
    room = max(0, max_points - len(out))
    if len(normal) > room:
        rng = np.random.default_rng(seed)
        normal = np.sort(rng.choice(normal, room, replace=False))
    rows = np.sort(np.concatenate([out[:max_points], normal]))
    Z = np.log1p(ft.durations[rows] / 1e6)
    # identical points make Isomap's graph disconnected: a tiny deterministic jitter
    Z = Z + np.random.default_rng(seed).normal(0, 1e-6, Z.shape)
    k = min(n_neighbors, len(rows) - 1)
    try:
        with warnings.catch_warnings():
            # a disconnected neighbour graph is completed by Isomap itself; say nothing on stderr
            warnings.simplefilter("ignore")
            xy = Isomap(n_neighbors=k, n_components=2).fit_transform(Z)
    except ValueError:
        return None
    x = _rescale(xy[:, 0])
    y = _rescale(xy[:, 1])
    return RequestMap(rows, x, y, label[rows], n)


def _rescale(v: np.ndarray) -> np.ndarray:
    span = np.ptp(v)
    if span == 0:
        return np.full(len(v), 500.0)
    return 1.0 + 999.0 * (v - v.min()) / span
