"""k-means for the clusters of outliers: Lloyd's iterations from a greedy k-means++ start, the
best of ``n_init`` starts (the lowest inertia), as scikit-learn's KMeans does by default.

Our own, in numpy, rather than scikit-learn's: importing scikit-learn costs 1.1-1.5 s on this
machine (it imports scipy.stats and its own validation layers), more than the whole analysis of
a small trace, for a few hundred to a few thousand outliers clustered a few dozen times. The
``request_outliers`` evaluation compares the clusters with the ground truth (adjusted Rand index).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class KMeansFit:
    labels: np.ndarray  # per point: its cluster, 0..k-1
    inertia: float  # sum of squared distances of the points to their cluster's centre
    centres: np.ndarray  # k x d


def kmeans(Z: np.ndarray, k: int, n_init: int = 10, random_state: int | None = 0, max_iter: int = 300,
           tol: float = 1e-4) -> KMeansFit:
    """The best of ``n_init`` runs on the rows of ``Z`` (n x d, n >= k). Converged when the
    centres move by less than ``tol`` times the mean variance of the columns (squared)."""
    Z = np.asarray(Z, np.float64)
    n = len(Z)
    if not 1 <= k <= n:
        raise ValueError(f"k-means: k = {k} for {n} points")
    rng = np.random.default_rng(random_state)
    tol_abs = tol * float(np.mean(np.var(Z, axis=0))) if n > 1 else 0.0
    norms = np.einsum("ij,ij->i", Z, Z)
    best = None
    for _ in range(max(1, n_init)):
        centres = _plus_plus(Z, norms, k, rng)
        fit = _lloyd(Z, norms, centres, max_iter, tol_abs)
        if best is None or fit.inertia < best.inertia:
            best = fit
    return best


def _sq_distances(Z: np.ndarray, norms: np.ndarray, C: np.ndarray) -> np.ndarray:
    """n x k squared Euclidean distances (never below 0)."""
    d = norms[:, None] - 2.0 * (Z @ C.T) + np.einsum("ij,ij->i", C, C)[None, :]
    return np.maximum(d, 0.0, out=d)


def _plus_plus(Z: np.ndarray, norms: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Greedy k-means++: each next centre the best (lowest potential) of 2 + log(k) candidates
    drawn with probability proportional to the squared distance to the nearest centre so far."""
    n = len(Z)
    trials = 2 + int(np.log(k))
    chosen = [int(rng.integers(n))]
    closest = _sq_distances(Z, norms, Z[chosen])[:, 0]
    for _ in range(1, k):
        total = float(closest.sum())
        if total <= 0.0:  # every point on a centre already: any other point
            cand = rng.integers(n, size=trials)
        else:
            cand = np.searchsorted(np.cumsum(closest), rng.random(trials) * total)
            cand = np.minimum(cand, n - 1)
        d = _sq_distances(Z, norms, Z[cand]).T  # trials x n
        np.minimum(d, closest[None, :], out=d)
        best = int(np.argmin(d.sum(axis=1)))
        chosen.append(int(cand[best]))
        closest = d[best]
    return Z[chosen].copy()


def _lloyd(Z: np.ndarray, norms: np.ndarray, centres: np.ndarray, max_iter: int, tol: float) -> KMeansFit:
    k, d = centres.shape
    for _ in range(max_iter):
        dist = _sq_distances(Z, norms, centres)
        labels = np.argmin(dist, axis=1)
        counts = np.bincount(labels, minlength=k)
        sums = np.stack([np.bincount(labels, Z[:, j], minlength=k) for j in range(d)], axis=1)
        new = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centres)
        empty = np.flatnonzero(counts == 0)
        if len(empty):  # an empty cluster takes the points farthest from their centres
            far = np.argsort(-dist[np.arange(len(Z)), labels], kind="stable")[:len(empty)]
            new[empty] = Z[far]
        shift = float(((new - centres) ** 2).sum())
        centres = new
        if shift <= tol:
            break
    dist = _sq_distances(Z, norms, centres)
    labels = np.argmin(dist, axis=1)
    inertia = float(dist[np.arange(len(Z)), labels].sum())
    return KMeansFit(labels.astype(np.int64), inertia, centres)
