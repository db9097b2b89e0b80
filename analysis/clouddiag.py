"""CloudDiag's diagnosis (paper 002, section III): which method, on which replica.

1. Categories of requests by call-tree shape (:mod:`analysis.calltrees`).
2. A category is *anomalous* when the coefficient of variation (std / mean) of its request
   latencies exceeds ``alpha`` and it has at least ``min_requests`` requests.
3. Per anomalous category, the m x n matrix of method times (requests x calls in depth-first
   order of the canonical tree), Robust PCA (inexact ALM) M = L + E, and per column
   beta = cos(M(i), L(i)). Columns with beta < ``beta`` are anomalous methods; in such a column a
   call is anomalous when its error E exceeds ``e_z`` robust standard deviations of the column
   (1.4826 x MAD of M(i)); the method is anomalous *on a replica* when at least
   ``replica_fraction`` of that replica's calls in the column (and at least 3) are anomalous.
4. (method, replica) pairs ranked by the number of categories that flag them, then by their
   summed positive error (ms).

Departures from the paper, on purpose:

- The matrix holds each call's *self* time (its duration minus its children's) by default,
  not its inclusive time: a slow callee otherwise makes every ancestor's column deviate too
  and the ranking cannot tell the culprit from its callers. ``times="total"`` gives the
  paper's inclusive times.
- Only positive errors count (a call faster than its peers is not a performance problem).
- The paper gives no value for alpha. Our default, 0.1, is low on purpose: normal categories
  of our generator have CV 0.07-0.12 and real services usually more, so nearly every
  category with enough requests is analysed; the cheap CV filter only skips the very regular
  ones, and the beta test (whose normal columns sit at 0.95-0.99) decides. A high alpha saves
  little time (RPCA of a 100,000 x 12 matrix takes well under a second) and loses diagnoses.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from .calltrees import CallTrees, Category
from .rpca import column_cosines, rpca

MS = 1e6


@dataclass
class DiagParams:
    alpha: float = 0.1  # CV of request latency above which a category is analysed
    min_requests: int = 20  # categories with fewer requests are not analysed
    beta: float = 0.9  # columns whose cos(M, L) is below this are anomalous methods
    times: str = "self"  # "self" (exclusive) or "total" (inclusive, the paper's) method times
    e_z: float = 3.0  # a call is anomalous when E > e_z robust std of its column
    replica_fraction: float = 0.1  # share of a replica's calls that must be anomalous
    max_rows: int = 200_000  # RPCA on a seeded random sample of this many requests at most

    def validate(self) -> None:
        if self.alpha < 0:
            raise ValueError("alpha must be >= 0")
        if not 0 < self.beta <= 1:
            raise ValueError("beta must be in (0, 1]")
        if self.times not in ("self", "total"):
            raise ValueError("times must be 'self' or 'total'")
        if self.min_requests < 2:
            raise ValueError("min_requests must be at least 2")
        if not 0 < self.replica_fraction <= 1:
            raise ValueError("replica_fraction must be in (0, 1]")


@dataclass
class PairInCategory:
    """One (method, replica) flagged in one category's column."""

    category: int
    column: int
    beta: float
    calls: int  # calls of this column on this replica
    flagged: int  # of which with anomalous E
    error_ms: float  # summed positive E of this replica's calls in the column
    median_ms: float  # median time of the replica's calls in the column
    peers_median_ms: float  # median time of the other replicas' calls in the column (nan if none)
    flagged_spans: np.ndarray = field(default=None, repr=False)  # span rows of the anomalous calls


@dataclass
class CategoryResult:
    category: Category
    cv: float
    mean_ms: float
    p50_ms: float
    p99_ms: float
    analysed: bool
    reason: str = ""  # why not analysed
    beta: np.ndarray | None = None  # per column
    anomalous_columns: list[int] = field(default_factory=list)
    iterations: int = 0
    converged: bool = True
    sampled: int = 0  # rows used for RPCA (< size when sampled)
    pairs: list[tuple[int, int, PairInCategory]] = field(default_factory=list)  # (method, replica, evidence)

    @property
    def anomalous(self) -> bool:
        return bool(self.anomalous_columns)


@dataclass
class RankedPair:
    method: int
    replica: int
    method_name: str
    replica_name: str
    categories: int  # how many categories flag this pair
    error_ms: float
    calls: int
    flagged: int
    min_beta: float
    evidence: list[PairInCategory]
    replica_median_ms: float = float("nan")  # over all calls of the method (self or total time)
    peers_median_ms: float = float("nan")
    peers: int = 0  # other replicas running the method
    onset_ns: int | None = None  # when its anomalous calls begin (5th percentile of their start times)
    before_share: float = float("nan")  # share of its calls before the onset that are anomalous
    after_share: float = float("nan")  # ... and after it

    @property
    def ratio(self) -> float:
        if not np.isfinite(self.peers_median_ms) or self.peers_median_ms <= 0:
            return float("nan")
        return self.replica_median_ms / self.peers_median_ms


@dataclass
class Diagnosis:
    trees: CallTrees
    params: DiagParams
    categories: list[CategoryResult]
    ranking: list[RankedPair]
    method_time: np.ndarray  # per span: the time used (self or total), ns

    def parameters(self) -> dict:
        return {k: v for k, v in asdict(self.params).items()}


def span_self_time(spans) -> np.ndarray:
    """Exclusive time of every span: its duration minus its children's, floored at 0 (ns)."""
    d = spans.duration.astype(np.int64)
    out = d.copy()
    has = spans.parent >= 0
    np.subtract.at(out, spans.parent[has], d[has])
    return np.maximum(out, 0)


def _mad_sd(x: np.ndarray, axis=0) -> np.ndarray:
    med = np.median(x, axis=axis)
    return 1.4826 * np.median(np.abs(x - med), axis=axis)


def diagnose(trees: CallTrees, params: DiagParams | None = None, seed: int = 0, progress=None) -> Diagnosis:
    params = params or DiagParams()
    params.validate()
    spans = trees.spans
    mtime = span_self_time(spans) if params.times == "self" else spans.duration.astype(np.int64)
    results: list[CategoryResult] = []
    rng = np.random.default_rng(seed)
    n_cat = len(trees.categories)
    for ci, cat in enumerate(trees.categories):
        if progress:
            progress(ci, n_cat)
        lat = trees.latency(cat).astype(np.float64)
        mean = float(lat.mean()) if len(lat) else 0.0
        cv = float(lat.std() / mean) if mean > 0 else 0.0
        res = CategoryResult(cat, cv, mean / MS, float(np.median(lat)) / MS if len(lat) else 0.0,
                             float(np.quantile(lat, 0.99)) / MS if len(lat) else 0.0, analysed=False)
        results.append(res)
        if cat.size < params.min_requests:
            res.reason = f"fewer than {params.min_requests} requests"
            continue
        if cv <= params.alpha:
            res.reason = f"CV {cv:.3f} <= alpha {params.alpha:g}"
            continue
        res.analysed = True
        rows = np.arange(cat.size)
        if cat.size > params.max_rows:
            rows = np.sort(rng.choice(cat.size, params.max_rows, replace=False))
        res.sampled = len(rows)
        span_rows = cat.rows[rows]
        M = mtime[span_rows].astype(np.float64) / MS
        r = rpca(M)
        res.iterations, res.converged = r.iterations, r.converged
        beta = column_cosines(M, r.L)
        res.beta = beta
        res.anomalous_columns = [int(j) for j in np.flatnonzero(beta < params.beta)]
        if not res.anomalous_columns:
            continue
        sd = _mad_sd(M)
        reps = spans.replica[span_rows]
        for j in res.anomalous_columns:
            col_e = r.E[:, j]
            thr = params.e_z * max(float(sd[j]), 1e-3)
            bad = col_e > thr
            rep = reps[:, j]
            n_rep = int(rep.max()) + 1
            calls = np.bincount(rep, minlength=n_rep)
            flagged = np.bincount(rep, weights=bad, minlength=n_rep)
            err = np.bincount(rep, weights=np.maximum(col_e, 0), minlength=n_rep)
            for k in np.flatnonzero(calls):
                if flagged[k] < 3 or flagged[k] < params.replica_fraction * calls[k]:
                    continue
                mine = rep == k
                peers = M[~mine, j]
                res.pairs.append((int(cat.methods[j]), int(k), PairInCategory(
                    category=cat.index, column=j, beta=float(beta[j]), calls=int(calls[k]),
                    flagged=int(flagged[k]), error_ms=float(err[k]), median_ms=float(np.median(M[mine, j])),
                    peers_median_ms=float(np.median(peers)) if len(peers) else float("nan"),
                    flagged_spans=span_rows[:, j][mine & bad])))
    if progress:
        progress(n_cat, n_cat)
    ranking = _rank(trees, results, mtime)
    return Diagnosis(trees, params, results, ranking, mtime)


def _rank(trees: CallTrees, results: list[CategoryResult], mtime: np.ndarray) -> list[RankedPair]:
    spans = trees.spans
    agg: dict[tuple[int, int], list[PairInCategory]] = {}
    for res in results:
        for m, k, ev in res.pairs:
            agg.setdefault((m, k), []).append(ev)
    out = []
    for (m, k), evs in agg.items():
        cats = {e.category for e in evs}
        out.append(RankedPair(
            method=m, replica=k, method_name=spans.methods[m], replica_name=spans.replicas[k], categories=len(cats),
            error_ms=sum(e.error_ms for e in evs), calls=sum(e.calls for e in evs),
            flagged=sum(e.flagged for e in evs), min_beta=min(e.beta for e in evs), evidence=evs))
    out.sort(key=lambda p: (-p.categories, -p.error_ms))
    # the method's time on this replica against its other replicas, over every call in the data
    for p in out:
        sel = spans.method == p.method
        t = mtime[sel]
        rep = spans.replica[sel]
        mine = rep == p.replica
        p.replica_median_ms = float(np.median(t[mine])) / MS if mine.any() else float("nan")
        p.peers_median_ms = float(np.median(t[~mine])) / MS if (~mine).any() else float("nan")
        p.peers = int(len(np.unique(rep[~mine])))
        flagged = np.concatenate([e.flagged_spans for e in p.evidence if e.flagged_spans is not None])
        if len(flagged):
            onset = int(np.quantile(spans.start[flagged], 0.05, method="lower"))
            calls = np.unique(np.concatenate([trees.categories[e.category].rows[:, e.column] for e in p.evidence]))
            calls = calls[spans.replica[calls] == p.replica]
            is_bad = np.isin(calls, flagged)
            after = spans.start[calls] >= onset
            p.onset_ns = onset
            p.before_share = float(is_bad[~after].mean()) if (~after).any() else float("nan")
            p.after_share = float(is_bad[after].mean()) if after.any() else float("nan")
    return out
