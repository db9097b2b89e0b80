"""Request outliers (paper 001, sections III.C and IV.A), each with the reason it stands out.

Representations of a request: its state durations (the default and the paper's best: ms,
unscaled, so that a distance is a number of milliseconds), its state segment counts, its system
call counts ("bag of words") or their TF-IDF (the paper's formula (1)).

DBSCAN, computed through nearest neighbours (exactly DBSCAN's noise: a point is *core* when at
least ``min_samples`` points, itself included, lie within ``eps``; *noise* when it is not core
and no core point lies within ``eps``), so that 50,000 requests take seconds even when the
normal ones are so dense that DBSCAN's full neighbourhood lists would hold millions of pairs.

Automatic parameters (each can be given instead):

- ``min_samples``: 2% of the requests, at least 10 and at most 50 (the paper used 100 for
  45,000 requests; 50 finds the same outliers here at half the cost of the neighbour search);
- ``eps``: the knee (Kneedle) of the sorted k-distance curve (k = min_samples) on a log scale,
  raised to half the median request duration when that is larger: a request must differ from
  dense company by more than half a typical request before it is called an outlier, so the
  natural spread of a normal population is not flagged. For counts, BoW and TF-IDF the knee is
  used alone.

Beyond the paper: when an anomaly is frequent enough its requests are dense among themselves
and DBSCAN makes them a cluster of their own; dense groups holding at most
``minor_fraction`` (10%) of the requests are therefore reported as outliers too (the main,
largest group is the normal population). It was 5% and "less than": a server that sleeps 8 ms
on every 20th request, recorded by perf, made a group of exactly 5% that was not flagged
(recall 0.5 on 8 of 9 recordings of a healthy pool; 1.0 on all at 10%). Core points are
grouped through their nearest neighbours within eps (a subset of DBSCAN's eps-graph that is
connected in dense regions).

Isolation forest (``detector="iforest"``) is the alternative, on log(1 + ms) features.

Every outlier carries *why*: the states (or system calls) in which it exceeds the inliers the
most, with its value beside the inliers' median.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.units import fmt_duration

from .features import FeatureTable
from .knee import kneedle
from .params import DEFAULT_THRESHOLDS_MS, REPRESENTATIONS, OutlierParams


@dataclass
class OutlierResult:
    outlier: np.ndarray  # bool per request
    score: np.ndarray  # higher = further from dense company (distance to the nearest core point / eps)
    group: np.ndarray  # -1 normal, 0 noise, 1.. minor dense groups (outliers too)
    columns: list[str]
    params: dict  # what was used and how it was chosen
    why: list[str]  # per request ("" for inliers): "BN 23 s (normal 0 ns); BS 1.2 s (normal 0 ns)"
    why_columns: np.ndarray  # (n, 2): column index of the two largest excesses (-1 none)
    why_short: list[str] = field(default_factory=list)  # "BN 23 s, BS 1.2 s" for narrow columns
    kdist_curve: np.ndarray = field(default_factory=lambda: np.zeros(0))  # sorted k-distances (sampled)
    knee_index: int | None = None
    table3: dict = field(default_factory=dict)

    @property
    def n_outliers(self) -> int:
        return int(self.outlier.sum())


def feature_matrix(ft: FeatureTable, representation: str) -> tuple[np.ndarray, list[str], str]:
    """(matrix, column names, unit) of a representation."""
    if representation == "durations":
        return ft.durations / 1e6, list(ft.states), "ms"
    if representation == "counts":
        if ft.counts is None:
            raise ValueError("these features have no state counts (use the durations representation)")
        return ft.counts.astype(float), list(ft.states), "segments"
    syscalls = ft.syscalls
    n, v = len(ft), len(syscalls.vocab)
    if v == 0:
        raise ValueError("these features have no system call sequences")
    rows = np.repeat(np.arange(n), syscalls.lengths())
    bow = np.zeros((n, v))
    np.add.at(bow, (rows, syscalls.values), 1.0)
    if representation == "bow":
        return bow, list(syscalls.vocab), "calls"
    df = np.maximum((bow > 0).sum(axis=0), 1)
    return bow * np.log(n / df), list(syscalls.vocab), "tf-idf"


def default_min_samples(n: int) -> int:
    return int(min(50, max(10, round(0.02 * n))))


def detect_outliers(ft: FeatureTable, params: OutlierParams | None = None) -> OutlierResult:
    params = params or OutlierParams()
    params.validate()
    X, columns, unit = feature_matrix(ft, params.representation)
    n = len(X)
    used = {"representation": params.representation, "scaling": REPRESENTATIONS[params.representation],
            "detector": params.detector, "units": unit}
    if n < 3:
        z = np.zeros(n)
        return OutlierResult(np.zeros(n, bool), z, np.full(n, -1), columns, {**used, "note": "too few requests"},
                             [""] * n, np.full((n, 2), -1), [""] * n)
    if params.detector == "iforest":
        outlier, score, group, extra = _iforest(X, params)
        curve, knee = np.zeros(0), None
    else:
        outlier, score, group, extra, curve, knee = _dbscan(X, ft, params)
    used.update(extra)
    why, why_cols = explain(X, outlier, columns, unit)
    normal = np.median(X[~outlier], axis=0) if (~outlier).any() else np.zeros(X.shape[1])
    res = OutlierResult(outlier, score, group, columns, used, why, why_cols,
                        short_why(X, why_cols, columns, unit, normal),
                        curve, knee)
    res.table3 = table3(ft.total, outlier, params.thresholds_ms)
    return res


GRID_MIN_REQUESTS = 10_000  # above this, dense grid cells decide most core points at once
CURVE_SAMPLE = 4_000


def _choose_eps(curve: np.ndarray, ft, params, kdist_all=None) -> tuple[float, int | None, list[str]]:
    knee_i = kneedle(np.arange(len(curve)), np.log1p(curve), curve="convex", direction="increasing")
    how = []
    if params.eps is not None:
        return float(params.eps), knee_i, ["eps given"]
    knee_eps = float(curve[knee_i]) if knee_i is not None else float(np.percentile(curve, 90))
    eps = knee_eps
    how.append(f"knee of the log k-distance curve ({knee_eps:.4g})")
    if params.representation == "durations" and params.eps_floor_fraction > 0:
        floor = params.eps_floor_fraction * float(np.median(ft.total)) / 1e6
        if floor > eps:
            eps = floor
            how.append(f"raised to {params.eps_floor_fraction:g} x the median request duration ({floor:.4g})")
    return max(eps, 1e-12), knee_i, how


def _dbscan(X, ft, params):
    n = len(X)
    ms = min(params.min_samples or default_min_samples(n), n)
    X = X[:, X.std(axis=0) > 0] if (X.std(axis=0) > 0).any() else X[:, :1]  # constant columns change no distance
    d = X.shape[1]
    nn = Neighbours(X)
    if n <= GRID_MIN_REQUESTS:
        dist, ind = nn.query(X, ms)
        kdist = dist[:, -1]
        sorted_k = np.sort(kdist)
        pick = np.unique(np.linspace(0, n - 1, min(n, 2000)).astype(int))
        curve = sorted_k[pick]
        eps, knee_i, how = _choose_eps(curve, ft, params)
        core = kdist <= eps
        knn_rows = np.arange(n)
        grid_cell = np.full(n, -1, np.int64)
    else:
        # the k-distance curve from a fixed sample; then every point in a grid cell (side
        # eps / sqrt(d), so any two of its points are within eps) holding min_samples points is
        # core; only the others need their own neighbour search
        sample = np.sort(np.random.default_rng(0).choice(n, CURVE_SAMPLE, replace=False))
        curve = np.sort(nn.query(X[sample], ms)[0][:, -1])
        eps, knee_i, how = _choose_eps(curve, ft, params)
        side = eps / np.sqrt(d)
        keys = np.floor(X / side).astype(np.int64)
        _, cell, count = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
        cell = cell.ravel()
        core = count[cell] >= ms
        grid_cell = np.where(core, cell, -1)
        knn_rows = np.flatnonzero(~core)
        dist, ind = nn.query(X[knn_rows], ms) if len(knn_rows) else (np.zeros((0, ms)), np.zeros((0, ms), int))
        core[knn_rows] = dist[:, -1] <= eps
        how.append(f"{int((grid_cell >= 0).sum()):,} core points found by a grid of eps-wide cells")
    extra = {"eps": eps, "min_samples": ms, "eps_from": "; ".join(how)}
    group = np.full(n, -1, np.int64)
    if not core.any():
        return np.ones(n, bool), np.full(n, np.inf), np.zeros(n, np.int64), extra, curve, knee_i
    core_idx = np.flatnonzero(core)
    # distance to the nearest core point (0 for core points): border or noise
    dcore, icore = Neighbours(X[core_idx]).query(X, 1)
    dcore = dcore[:, 0]
    nearest_core = core_idx[icore[:, 0]]
    reach = core | (dcore <= eps)
    comp = _core_components(X, core, knn_rows, dist, ind, eps, grid_cell)
    label = np.where(core, comp, comp[nearest_core])
    label = np.where(reach, label, -1)
    sizes = np.bincount(label[label >= 0]) if (label >= 0).any() else np.zeros(0, np.int64)
    main = int(np.argmax(sizes)) if len(sizes) else -1
    minor = np.zeros(n, bool)
    minor_ids = {}
    for c in np.flatnonzero(sizes > 0):
        if c != main and sizes[c] <= params.minor_fraction * n:
            minor_ids[int(c)] = len(minor_ids) + 1
            minor |= label == c
    noise = ~reach
    outlier = noise | minor
    group[noise] = 0
    for c, gid in minor_ids.items():
        group[label == c] = gid
    score = np.where(core, 0.0, dcore / eps)
    if minor.any():
        # a minor group's members are as far from the normal group as their nearest normal core point
        main_core = core_idx[label[core_idx] == main]
        dmain, _ = Neighbours(X[main_core]).query(X[minor], 1)
        score[minor] = dmain[:, 0] / eps
    extra.update({"noise": int(noise.sum()), "minor_groups": len(minor_ids), "minor_group_requests": int(minor.sum()),
                  "minor_fraction": params.minor_fraction})
    return outlier, score, group, extra, curve, knee_i


class Neighbours:
    """Exact Euclidean k nearest neighbours (scipy's k-d tree; the features have a few dozen
    columns at most). scikit-learn's NearestNeighbors gave the same distances and neighbours on
    the 50,000-request trace, for 1.15 s of import (scipy.spatial: 0.3 s) and 1.94 s of query
    against 0.32 s."""

    def __init__(self, X: np.ndarray):
        from scipy.spatial import cKDTree  # noqa: PLC0415 (0.3 s to import: only when outliers are sought)

        self.tree = cKDTree(X)

    def query(self, Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(distances, indices), each len(Q) x k, nearest first (a point of the tree is its own first)."""
        dist, ind = self.tree.query(Q, k=list(range(1, k + 1)), workers=-1)
        return dist, ind.astype(np.int64)


def _core_components(X, core, knn_rows, dist, ind, eps, grid_cell) -> np.ndarray:
    """Connected groups of core points: joined through their nearest neighbours within eps (a
    subset of DBSCAN's eps-graph, connected in dense regions); points of one dense grid cell are
    one node, and dense cells are joined when their centres lie within eps + a cell diagonal."""
    n = len(X)
    rows_k = np.repeat(knn_rows, ind.shape[1]) if len(knn_rows) else np.zeros(0, np.int64)
    cols_k = ind.ravel()
    ok = core[rows_k] & core[cols_k] & (dist.ravel() <= eps)
    src, dst = [rows_k[ok]], [cols_k[ok]]
    gridded = np.flatnonzero(grid_cell >= 0)
    if len(gridded):
        # one representative per dense cell; the cell's points hang on it
        cells, first = np.unique(grid_cell[gridded], return_index=True)
        rep = gridded[first]
        rep_of = np.empty(cells.max() + 1, np.int64)
        rep_of[cells] = rep
        src.append(gridded)
        dst.append(rep_of[grid_cell[gridded]])
        # cells joined through their representatives' centres
        centres = np.array([X[gridded[grid_cell[gridded] == c]].mean(axis=0) for c in cells]) \
            if len(cells) <= 2000 else X[rep]
        k = min(len(cells), 10)
        if k > 1:
            cd, ci = Neighbours(centres).query(centres, k)
            link = cd <= 2 * eps  # eps plus a cell's diagonal (which is eps)
            rr = np.repeat(np.arange(len(cells)), k)[link.ravel()]
            cc = ci.ravel()[link.ravel()]
            src.append(rep[rr])
            dst.append(rep[cc])
    src = np.concatenate(src)
    dst = np.concatenate(dst)
    from scipy import sparse  # noqa: PLC0415 (0.3 s to import: only when clustering, not for the app's start)
    from scipy.sparse.csgraph import connected_components  # noqa: PLC0415

    graph = sparse.coo_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    return comp


def _iforest(X, params):
    from sklearn.ensemble import IsolationForest  # noqa: PLC0415

    Z = np.log1p(np.maximum(X, 0))
    model = IsolationForest(n_estimators=200, contamination="auto", random_state=params.random_state)
    pred = model.fit_predict(Z)
    score = -model.score_samples(Z)
    outlier = pred == -1
    group = np.where(outlier, 0, -1)
    return outlier, score, group, {"contamination": "auto", "n_estimators": 200, "features": "log(1 + x)"}


def explain(X: np.ndarray, outlier: np.ndarray, columns: list[str], unit: str) -> tuple[list[str], np.ndarray]:
    """Why each outlier stands out: the columns where it exceeds the inliers most (robust z:
    excess over the inliers' median in units of their spread, never below 1/20 of the inliers'
    median total; listed when z > 3, a second one when its excess is at least a tenth of the
    first's), with its value beside the inliers' median."""
    n = len(X)
    why = [""] * n
    cols = np.full((n, 2), -1)
    inl = ~outlier
    if not outlier.any() or not inl.any():
        return why, cols
    med = np.median(X[inl], axis=0)
    q1, q3 = np.percentile(X[inl], [25, 75], axis=0)
    floor = max(np.median(X[inl].sum(axis=1)) / 20.0, 1e-9)
    spread = np.maximum(q3 - q1, floor)
    z = (X - med) / spread
    excess = X - med
    for i in np.flatnonzero(outlier):
        order = np.argsort(-z[i])[:2]
        parts = []
        for j, k in enumerate(order):
            if z[i, k] <= 3.0 or (j and excess[i, k] < 0.1 * excess[i, order[0]]):
                break
            cols[i, j] = k
            parts.append(f"{columns[k]} {_fmt(X[i, k], unit)} (normal {_fmt(med[k], unit)})")
        why[i] = "; ".join(parts) if parts else "unusual mix of states"
    return why, cols


def short_why(X: np.ndarray, cols: np.ndarray, columns: list[str], unit: str,
              normal: np.ndarray | None = None) -> list[str]:
    """The why column: 'BN 23 s (normal 1.2 ms), RU 400 ms (normal 3 ms)', the normal value being
    the median of the requests that are not outliers."""
    out = []
    for i in range(len(X)):
        parts = [f"{columns[k]} {_fmt(X[i, k], unit)}" + ("" if normal is None else " (normally none)"
                                                          if normal[k] == 0 else f" (normal {_fmt(normal[k], unit)})")
                 for k in cols[i] if k >= 0]
        out.append(", ".join(parts))
    return out


def _fmt(v: float, unit: str) -> str:
    if unit == "ms":
        return fmt_duration(v * 1e6)
    if unit in ("segments", "calls"):
        return f"{v:,.0f}"
    return f"{v:.3g}"


def table3(total_ns: np.ndarray, outlier: np.ndarray, thresholds_ms=DEFAULT_THRESHOLDS_MS) -> dict:
    """The paper's Table III for one run: number of outliers, median duration of outliers and of
    all requests, and P(duration > t) among outliers for each threshold (the given ones, plus 2x
    and 3x the overall median)."""
    ms = np.asarray(total_ns, float) / 1e6
    med_all = float(np.median(ms)) if len(ms) else 0.0
    out_ms = ms[outlier]
    ths = list(thresholds_ms) + [2 * med_all, 3 * med_all]
    labels = [f"{t:g} ms" for t in thresholds_ms] + [f"2 x median ({2 * med_all:.3g} ms)",
                                                     f"3 x median ({3 * med_all:.3g} ms)"]
    return {
        "outliers": int(outlier.sum()),
        "requests": int(len(ms)),
        "median_outlier_ms": float(np.median(out_ms)) if len(out_ms) else float("nan"),
        "median_all_ms": med_all,
        "p_above": [(lbl, float((out_ms > t).mean()) if len(out_ms) else float("nan")) for lbl, t in zip(labels, ths)],
    }
