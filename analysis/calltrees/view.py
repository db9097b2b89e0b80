"""What the app and the report show of one request's call tree, and of one method on its replicas:
plain rows and numbers, computed here so that the panes only draw them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .clouddiag import Diagnosis, RankedPair, span_self_time
from .failures import started_errors
from .trees import Category

MS = 1e6


@dataclass
class CallRow:
    depth: int
    method: str
    replica: str
    offset_ns: int  # start relative to the request's start (on the callee host's clock)
    total_ns: int
    self_ns: int
    flagged: bool  # the (method, replica) pair asked about
    failed: bool = False  # the span ended in an error (where the spans say)


@dataclass
class RequestTree:
    trace: str
    category: int
    latency_ns: int
    rows: list[CallRow]
    why: str  # how this request was chosen
    #: what a failed row's mark says: its status, or the error handler it ran where the spans carry none
    failed_means: str = "the span failed (an error started in a failed call none of whose calls failed)"


def request_tree(diag: Diagnosis, cat: Category, req_row: int, pair: RankedPair | None = None,
                 why: str = "") -> RequestTree:
    sp = diag.trees.spans
    rows = cat.rows[req_row]
    t0 = int(sp.start[rows[0]])
    self_t = diag.method_time if diag.params.times == "self" else span_self_time(sp)
    out = []
    for j, r in enumerate(rows.tolist()):
        m, k = int(sp.method[r]), int(sp.replica[r])
        out.append(CallRow(cat.depths[j], sp.methods[m], sp.replicas[k], int(sp.start[r]) - t0,
                           int(sp.end[r] - sp.start[r]), int(self_t[r]),
                           pair is not None and m == pair.method and k == pair.replica,
                           sp.error is not None and bool(sp.error[r])))
    return RequestTree(sp.traces[int(cat.traces[req_row])], cat.index, int(sp.end[rows[0]] - sp.start[rows[0]]), out, why,
                       "the span ran an error handler (the spans carry no status; an error started in the deepest "
                       "such call)" if sp.error_inferred else RequestTree.failed_means)


def example_request(diag: Diagnosis, pair: RankedPair | None = None, category: int | None = None) -> RequestTree | None:
    """A request to show: for a flagged pair, the request of its first flagged category whose call
    on that replica has the median time among them (typical, not an extreme); for a category, its
    request of median latency."""
    trees = diag.trees
    if pair is not None and pair.evidence:
        ev = pair.evidence[0]
        cat = trees.categories[ev.category]
        sp = trees.spans
        col_rows = cat.rows[:, ev.column]
        mine = np.flatnonzero(sp.replica[col_rows] == pair.replica)
        if len(mine) == 0:
            return None
        t = diag.method_time[col_rows[mine]]
        pick = mine[np.argsort(t, kind="stable")[len(t) // 2]]
        return request_tree(diag, cat, int(pick), pair,
                            f"the median of the {len(mine):,} calls of {pair.method_name} on {pair.replica_name} "
                            f"in this category")
    if category is not None and 0 <= category < len(trees.categories):
        cat = trees.categories[category]
        lat = trees.latency(cat)
        pick = int(np.argsort(lat, kind="stable")[len(lat) // 2])
        return request_tree(diag, cat, pick, None, "the request of median latency in this category")
    return None


def failing_request(diag: Diagnosis, method: str) -> tuple[int, RequestTree] | None:
    """A request where an error started in ``method`` (its span failed, none of its children):
    in the category with the most such requests, the one of median latency among them; with the
    category's index. None where the spans say nothing of errors or none started there."""
    trees = diag.trees
    sp = trees.spans
    if sp.error is None or method not in sp.methods:
        return None
    m = sp.methods.index(method)
    started = started_errors(sp) & (sp.method == m)
    best = None
    for ci, cat in enumerate(trees.categories):
        hit = started[cat.rows].any(axis=1)
        if hit.any() and (best is None or hit.sum() > best[1].sum()):
            best = (ci, hit)
    if best is None:
        return None
    ci, hit = best
    cat = trees.categories[ci]
    mine = np.flatnonzero(hit)
    lat = trees.latency(cat)[mine]
    pick = int(mine[np.argsort(lat, kind="stable")[len(mine) // 2]])
    return ci, request_tree(diag, cat, pick, None, f"a request where an error started in {method} (the median of "
                                                   f"the {len(mine):,} such in this category)")


@dataclass
class ReplicaSummary:
    replica: str
    calls: int
    p5: float
    p25: float
    p50: float
    p75: float
    p95: float  # ms
    series: np.ndarray  # median per time window (ms, nan where no call)
    flagged: bool


def method_replicas(diag: Diagnosis, method: int, flagged_replica: int | None = None,
                    bins: int = 40) -> tuple[list[ReplicaSummary], np.ndarray]:
    """Per replica of a method: quantiles of its time and its median over time (shared windows)."""
    sp = diag.trees.spans
    sel = np.flatnonzero(sp.method == method)
    if len(sel) == 0:
        return [], np.zeros(0, np.int64)
    start = sp.start[sel]
    t0, t1 = int(start.min()), int(start.max()) + 1
    edges = np.linspace(t0, t1, bins + 1)
    b = np.clip(np.searchsorted(edges, start, side="right") - 1, 0, bins - 1)
    vals = diag.method_time[sel] / MS
    rep = sp.replica[sel]
    out = []
    for k in np.unique(rep):
        mine = rep == k
        v, bk = vals[mine], b[mine]
        order = np.argsort(bk, kind="stable")
        bk, vs = bk[order], v[order]
        med = np.full(bins, np.nan)
        cuts = np.flatnonzero(np.r_[True, bk[1:] != bk[:-1], True])
        for a, z in zip(cuts[:-1], cuts[1:]):
            med[bk[a]] = np.median(vs[a:z])
        q = np.quantile(v, [0.05, 0.25, 0.5, 0.75, 0.95])
        out.append(ReplicaSummary(sp.replicas[k], int(mine.sum()), *map(float, q), med,
                                  flagged_replica is not None and int(k) == flagged_replica))
    out.sort(key=lambda s: (not s.flagged, -s.p50))
    return out, edges[:-1].astype(np.int64)
