"""CloudDiag's diagnosis (paper 002, section III): which method, on which replica.

1. Categories of requests by call-tree shape (:mod:`analysis.calltrees`).
2. A category is analysed when the coefficient of variation (std / mean) of its request
   latencies exceeds ``alpha`` and it has at least ``min_requests`` requests.
3. Per anomalous category, the m x n matrix of method times (requests x calls in depth-first
   order of the canonical tree), Robust PCA (inexact ALM) M = L + E, and per column
   beta = cos(M(i), L(i)). Columns with beta < ``beta`` are anomalous methods; in such a column a
   call has a large error when its E exceeds ``e_z`` robust standard deviations of the column
   (1.4826 x MAD of M(i)); the method is anomalous *on a replica* when that replica's share
   of such calls is well above its peers' in the column (a slow replica), or above its own
   share before an onset found in time (a method slow everywhere since an incident):
   one-sided binomial tests, p < ``p_value``, with at least ``replica_fraction`` of its calls
   and 5 calls (:func:`_anomalous_replicas`). The tests are relative, so ``e_z`` can be low
   (1): heavy tails raise the share on every replica alike and flag nothing.
4. (method, replica) pairs ranked by the number of categories that flag them, then by their
   summed positive error (ms).

Departures from the paper, on purpose:

- The matrix holds each call's *self* time (its duration minus its children's) by default,
  not its inclusive time: a slow callee otherwise makes every ancestor's column deviate too
  and the ranking cannot tell the culprit from its callers. ``times="total"`` gives the
  paper's inclusive times.
- Only positive errors count (a call faster than its peers is not a performance problem).
- The paper gives no value for alpha. Ours is 0: every category with ``min_requests``
  requests is analysed. Measured on the generated systems: normal categories have a CV of
  0.07-0.12, and a method made 2x slower on every replica but taking a small part of its
  requests' time (auth:session in checkout) only moves its category from 0.07 to 0.08, so any
  alpha above that loses the diagnosis; analysing a category costs one RPCA (a 100,000 x 12
  matrix in well under a second). The CV is still computed and shown per category, and
  ``--alpha`` restores the paper's filter.
- beta's threshold: the paper gives none either. Normal columns sit at 0.975-0.99 in our
  generated systems and slowed ones at 0.93-0.96 for a 2x slowdown, 0.8-0.85 for 4x; but the
  normal level falls with the spread of a method's times (0.90 under heavy tails). So beta
  only selects *candidate* methods (default 0.97), and the replica tests on E confirm them:
  a noisy but healthy column has the same share of large errors on every replica and over
  time, and is dropped.
  ``make eval`` prints rank-1 / top-3 hits, precision and recall for these defaults.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from perftriage.analysis.stats import binom_sf

from .params import DiagParams
from .rpca import column_cosines, rpca
from .trees import CallTrees, Category

MS = 1e6


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
    how: str = "peers"  # "peers": more anomalous calls than the other replicas; "onset": than before onset_ns
    onset_ns: int | None = None


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
    base_share: float = float("nan")  # ordinary share of calls with a large error in this category
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
    onset_ns: int | None = None  # when its anomalous calls begin (the change point found, else the
    # 5th percentile of their start times)
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


def _binom_sf(k, n, p):
    return binom_sf(k, n, np.clip(p, 1e-9, 1 - 1e-9))


def _change_point(bad_sorted: np.ndarray, min_side: int) -> tuple[int, float]:
    """Single change point of a 0/1 sequence (time order) where the share of ones rises: the split
    maximising the binomial log-likelihood ratio. Returns (index of the first call after it, LLR)."""
    n = len(bad_sorted)
    if n < 2 * min_side:
        return -1, 0.0
    c = np.cumsum(bad_sorted, dtype=np.float64)
    total = c[-1]
    i = np.arange(min_side, n - min_side + 1)
    k1 = c[i - 1]
    k2 = total - k1
    n1, n2 = i.astype(np.float64), (n - i).astype(np.float64)

    def ll(k, m):
        p = np.clip(k / m, 1e-12, 1 - 1e-12)
        return k * np.log(p) + (m - k) * np.log(1 - p)

    p0 = np.clip(total / n, 1e-12, 1 - 1e-12)
    llr = ll(k1, n1) + ll(k2, n2) - (total * np.log(p0) + (n - total) * np.log(1 - p0))
    llr = np.where(k2 / n2 > k1 / n1, llr, 0.0)
    best = int(np.argmax(llr))
    return int(i[best]), float(llr[best])


def _anomalous_replicas(bad: np.ndarray, rep: np.ndarray, starts: np.ndarray, params: DiagParams):
    """Replicas on which a column's anomalous calls are more frequent than they should be, by
    one of two one-sided binomial tests (p < params.p_value, at least 5 anomalous calls and
    params.replica_fraction of the replica's calls):

    - against the method's *other replicas* in the column (a slow replica among healthy peers);
    - against the *same replica before an onset* (the method got slow on every replica at some
      time: an incident); the onset is the column's single change point of the share of
      anomalous calls over time.
    Yields (replica, "peers" | "onset", onset_ns or None)."""
    n_rep = int(rep.max()) + 1
    calls = np.bincount(rep, minlength=n_rep)
    flagged = np.bincount(rep, weights=bad, minlength=n_rep)
    enough = (flagged >= 5) & (flagged >= params.replica_fraction * np.maximum(calls, 1))
    peers_share = np.maximum((flagged.sum() - flagged) / np.maximum(calls.sum() - calls, 1), params.base_share)
    p_peers = _binom_sf(flagged, calls, peers_share)
    has_peers = (calls.sum() - calls) > 0
    done = set()
    for k in np.flatnonzero(enough & has_peers & (p_peers < params.p_value)):
        done.add(int(k))
        yield int(k), "peers", None
    order = np.argsort(starts, kind="stable")
    cut, llr = _change_point(bad[order].astype(np.float64), min_side=max(20, len(bad) // 50))
    if cut < 0 or llr < 10:  # a clear change only
        return
    onset = int(starts[order][cut])
    after = starts >= onset
    c_a = np.bincount(rep[after], minlength=n_rep)
    f_a = np.bincount(rep[after], weights=bad[after], minlength=n_rep)
    c_b = np.bincount(rep[~after], minlength=n_rep)
    f_b = np.bincount(rep[~after], weights=bad[~after], minlength=n_rep)
    before_share = np.maximum(f_b / np.maximum(c_b, 1), params.base_share)
    p_onset = _binom_sf(f_a, c_a, before_share)
    ok = (f_a >= 5) & (f_a >= params.replica_fraction * np.maximum(c_a, 1)) & (c_b >= 5) & (p_onset < params.p_value)
    for k in np.flatnonzero(ok):
        if int(k) not in done:
            yield int(k), "onset", onset


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
        sd = np.maximum(_mad_sd(M), 1e-3)
        bad_all = r.E > params.e_z * sd  # calls slower than the low-rank model explains
        res.base_share = float(np.median(bad_all.mean(axis=0)))
        reps = spans.replica[span_rows]
        for j in res.anomalous_columns:
            col_e = r.E[:, j]
            bad = bad_all[:, j]
            rep = reps[:, j]
            starts = spans.start[span_rows[:, j]]
            for k, how, onset in _anomalous_replicas(bad, rep, starts, params):
                mine = rep == k
                peers = M[~mine, j]
                res.pairs.append((int(cat.methods[j]), int(k), PairInCategory(
                    category=cat.index, column=j, beta=float(beta[j]), calls=int(mine.sum()),
                    flagged=int(bad[mine].sum()), error_ms=float(np.maximum(col_e[mine], 0).sum()),
                    median_ms=float(np.median(M[mine, j])),
                    peers_median_ms=float(np.median(peers)) if len(peers) else float("nan"),
                    flagged_spans=span_rows[:, j][mine & bad], how=how, onset_ns=onset)))
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
        onsets = [e.onset_ns for e in p.evidence if e.how == "onset" and e.onset_ns is not None]
        if len(flagged):
            onset = min(onsets) if onsets else int(np.quantile(spans.start[flagged], 0.05, method="lower"))
            calls = np.unique(np.concatenate([trees.categories[e.category].rows[:, e.column] for e in p.evidence]))
            calls = calls[spans.replica[calls] == p.replica]
            is_bad = np.isin(calls, flagged)
            after = spans.start[calls] >= onset
            p.onset_ns = onset
            p.before_share = float(is_bad[~after].mean()) if (~after).any() else float("nan")
            p.after_share = float(is_bad[after].mean()) if after.any() else float("nan")
    return out
