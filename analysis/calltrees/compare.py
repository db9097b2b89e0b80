"""Baseline against incident for request tracing: which request categories and which methods got
slower than in a reference span set (``--reference``).

Categories are matched by their call-tree shape, methods by name (service:operation), and
(method, replica) pairs by both names. For each, the latency distributions side by side
(median, p95, count) and the ratio of medians; a change is *significant* when a two-sided
Mann-Whitney U test (on at most ``max_samples`` calls of each side, seeded sample) gives
p < ``p_value`` and the median or the 95th percentile moved by at least ``min_ratio`` (one slow
replica among several moves a method's p95 long before its median).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from perftriage.analysis.stats import mann_whitney_p

from .clouddiag import span_self_time
from .params import CompareParams
from .trees import CallTrees

MS = 1e6


@dataclass
class Change:
    kind: str  # "category", "method", "replica"
    name: str  # shape, method, or "method @ replica"
    ref_n: int
    n: int
    ref_median_ms: float
    median_ms: float
    ref_p95_ms: float
    p95_ms: float
    p: float
    significant: bool
    ref_sample: np.ndarray = field(repr=False, default=None)  # for box summaries / plots (ms)
    sample: np.ndarray = field(repr=False, default=None)

    @property
    def ratio(self) -> float:
        return self.median_ms / self.ref_median_ms if self.ref_median_ms > 0 else float("inf")

    @property
    def p95_ratio(self) -> float:
        return self.p95_ms / self.ref_p95_ms if self.ref_p95_ms > 0 else float("inf")

    @property
    def change(self) -> float:
        """The larger move of median and p95 (a slow replica among several moves the p95 first)."""
        return max(self.ratio, self.p95_ratio)


@dataclass
class Comparison:
    params: CompareParams
    categories: list[Change]
    methods: list[Change]
    replicas: list[Change]
    new_categories: list[tuple[str, int]]  # shapes only in the incident, with counts
    gone_categories: list[tuple[str, int]]  # shapes only in the reference

    def slower(self, kind: str = "methods") -> list[Change]:
        return [c for c in getattr(self, kind) if c.significant and c.change > 1]


def grouped(keys: np.ndarray, values: np.ndarray) -> dict[int, np.ndarray]:
    """values by key, each group in the values' order (stable), the keys ascending."""
    if not len(keys):  # no such time on this side (no call between two pods, say)
        return {}
    order = np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    cuts = np.flatnonzero(np.r_[True, k[1:] != k[:-1], True])
    return {int(k[a]): v[a:b] for a, b in zip(cuts[:-1], cuts[1:])}


def _change(kind, name, ref, cur, params: CompareParams, rng) -> Change:
    ref_s = ref if len(ref) <= params.max_samples else rng.choice(ref, params.max_samples, replace=False)
    cur_s = cur if len(cur) <= params.max_samples else rng.choice(cur, params.max_samples, replace=False)
    enough = len(ref) >= params.min_calls and len(cur) >= params.min_calls
    p = mann_whitney_p(ref_s, cur_s, "two-sided") if enough else float("nan")
    rm, cm = float(np.median(ref)), float(np.median(cur))
    r95, c95 = float(np.quantile(ref, 0.95)), float(np.quantile(cur, 0.95))
    ratios = [cm / rm if rm > 0 else float("inf"), c95 / r95 if r95 > 0 else float("inf")]
    moved = any(r >= params.min_ratio or r <= 1 / params.min_ratio for r in ratios)
    sig = bool(enough and p < params.p_value and moved)
    return Change(kind, name, len(ref), len(cur), rm, cm, r95, c95, p, sig, ref_s, cur_s)


def _order(changes: list[Change]) -> list[Change]:
    return sorted(changes, key=lambda c: (not c.significant, -(c.change if np.isfinite(c.change) else 1e9)))


def compare(reference: CallTrees, current: CallTrees, params: CompareParams | None = None, seed: int = 0) -> Comparison:
    params = params or CompareParams()
    rng = np.random.default_rng(seed)
    # categories by shape: request latencies
    ref_cats = {c.shape: reference.latency(c) / MS for c in reference.categories}
    cur_cats = {c.shape: current.latency(c) / MS for c in current.categories}
    cats = [_change("category", s, ref_cats[s], cur_cats[s], params, rng) for s in cur_cats if s in ref_cats]
    new = [(s, len(v)) for s, v in cur_cats.items() if s not in ref_cats]
    gone = [(s, len(v)) for s, v in ref_cats.items() if s not in cur_cats]

    def method_times(trees: CallTrees):
        sp = trees.spans
        t = (span_self_time(sp) if params.times == "self" else sp.duration) / MS
        by_m = grouped(sp.method, t)
        names = sp.methods
        key = sp.method.astype(np.int64) * max(1, len(sp.replicas)) + sp.replica
        by_mr = grouped(key, t)
        nr = max(1, len(sp.replicas))
        return ({names[m]: v for m, v in by_m.items()},
                {(names[k // nr], sp.replicas[k % nr]): v for k, v in by_mr.items()})

    ref_m, ref_mr = method_times(reference)
    cur_m, cur_mr = method_times(current)
    methods = [_change("method", m, ref_m[m], cur_m[m], params, rng) for m in cur_m if m in ref_m]
    replicas = [_change("replica", f"{m} @ {r}", ref_mr[(m, r)], cur_mr[(m, r)], params, rng)
                for (m, r) in cur_mr if (m, r) in ref_mr]
    return Comparison(params, _order(cats), _order(methods), _order(replicas), new, gone)
