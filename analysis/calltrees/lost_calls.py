"""Calls a method stops making from a time on, found without a baseline: for when nothing was
compared over time (the spans of a fault's own minutes, no time given) and the spans carry no
status. A service that fails early returns before its usual calls: its spans of a method stop
calling another method (OnlineBoutique's frontend ending requests early: its Recv. spans calling
GetAds in 59% of requests, then 11%; the ad service throwing: its getAds spans calling
getRandomAds in 19%, then never). The service whose method stops calling is the one to look at.

Each (caller method, called method) pair whose caller has ``min_calls`` spans or more: per
caller span by start, whether it made that call; the split where its share drops most for the
sizes of the two sides (two-proportion z; splits leaving ``min_after`` spans on each side), and
among the strongest of those the one with the smallest one-sided hypergeometric p (lower tail:
this few calls after, or fewer); a call is lost when that p is below ``alpha`` with every pair counted, the
share before ``min_rate`` or more and the share after a ``ratio``-th of it or less.

Cause before consequence: a method that throws stops its own calls, and its callers give up on
the calls they had left (the error propagates), so both lose calls, in the same requests. Where
most of one lost call's spans (those after its split that did not make it) run under spans that
lost another's, it is the deeper one, where the requests stopped first: it ranks ahead, and the
shallower one says it follows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from perftriage.analysis.spans.table import SpanTable
from perftriage.analysis.units import fmt_when

from .failures import share

PARAMS = {"lost_min_calls": 30, "lost_ratio": 4.0, "lost_min_rate": 0.05, "lost_min_after": 5, "lost_alpha": 1e-4}
MAX_SPLITS = 2000  # splits tried per pair (evenly spaced where a method has more spans)
EXACT_SPLITS = 200  # of them, those of the highest z tested exactly (scipy's hypergeometric is slow)


@dataclass(frozen=True)
class LostCall:
    caller: str  # the method that stopped calling ("service:operation")
    service: str  # its service
    callee: str  # the method it stopped calling
    calls_before: int  # the caller's spans before since_ns
    with_before: int  # of them, those that made the call
    calls_after: int
    with_after: int
    since_ns: int
    p: float  # times the pairs tested
    follows: str = ""  # the caller of a deeper lost call most of its lost spans run over (its cause)
    to: tuple = ()  # the services the callee's spans call into, where it is a client span ('HTTP GET')
    after: str = ""  # the call its spans made last before stopping, in another service ("auth's verify")

    @property
    def callee_service(self) -> str:
        return self.callee.split(":", 1)[0] if ":" in self.callee else ""

    @property
    def rate_before(self) -> float:
        return self.with_before / self.calls_before if self.calls_before else 0.0

    @property
    def rate_after(self) -> float:
        return self.with_after / self.calls_after if self.calls_after else 0.0

    def headline(self) -> str:
        callee = self.callee.split(":", 1)[-1]
        if self.callee_service and self.callee_service != self.service:  # its spans call the callee's directly
            if self.callee_service.lower() not in callee.lower():
                callee += f" (in {self.callee_service})"
        else:
            named = [t for t in self.to if t.lower() not in callee.lower()]  # 'GetCart' to cartservice: said already
            if named:
                callee += f" (to {', '.join(named[:2])}{' and others' if len(named) > 2 else ''})"
        caller = self.caller.split(":", 1)[-1]
        return (f"{self.service} stops calling {callee} from {fmt_when(self.since_ns, False, 0)}: "
                f"{share(self.rate_after)} of its {caller} calls make it, {share(self.rate_before)} before")


@dataclass
class LostCalls:
    calls: list[LostCall] = field(default_factory=list)  # lost, the strongest first
    tests: int = 0
    why: str = ""
    params: dict = field(default_factory=lambda: dict(PARAMS))


def lost_calls(spans: SpanTable, params: dict | None = None) -> LostCalls:
    """The calls methods stop making from a time on (see the module's words)."""
    from scipy.stats import hypergeom  # noqa: PLC0415  (scipy.stats: imported where it is used)

    p = dict(PARAMS, **(params or {}))
    out = LostCalls(params=p)
    n, nm = len(spans), len(spans.methods)
    if n == 0:
        out.why = "no spans"
        return out
    counts = np.bincount(spans.method, minlength=nm)
    child = np.flatnonzero(spans.parent >= 0)
    prow = spans.parent[child]
    pm, cm = spans.method[prow], spans.method[child]
    keep = counts[pm] >= p["lost_min_calls"]
    child, prow, pm, cm = child[keep], prow[keep], pm[keep], cm[keep]
    keys = pm.astype(np.int64) * nm + cm
    by_key = np.argsort(keys, kind="stable")
    keys = keys[by_key]
    pairs = np.unique(keys)
    out.tests = len(pairs)
    if not len(pairs):
        out.why = f"no method with {p['lost_min_calls']} calls or more that calls another"
        return out
    # each caller method's spans by start, and each span's place among them
    order = np.lexsort((spans.start, spans.method))
    first = np.searchsorted(spans.method[order], np.arange(nm))
    place = np.empty(n, np.int64)
    place[order] = np.arange(n) - first[spans.method[order]]
    m_after = p["lost_min_after"]
    found, missed, callees = [], [], []
    for key in pairs.tolist():
        P, C = divmod(key, nm)
        N = int(counts[P])
        x = np.zeros(N, bool)
        x[place[prow[by_key[np.searchsorted(keys, key): np.searchsorted(keys, key, side="right")]]]] = True
        K = int(x.sum())
        if K < m_after or N < 2 * m_after:
            continue
        ks = np.arange(m_after, N - m_after + 1)
        if len(ks) > MAX_SPLITS:
            ks = np.unique(np.linspace(m_after, N - m_after, MAX_SPLITS).astype(np.int64))
        before = np.cumsum(x)[ks - 1]
        # the split: the largest drop in share for its sizes (two-proportion z), then its exact p
        p0 = K / N
        z = (before / ks - (K - before) / (N - ks)) / np.sqrt(max(p0 * (1 - p0), 1e-12) * (1 / ks + 1 / (N - ks)))
        top = np.argsort(-z, kind="stable")[:EXACT_SPLITS]  # the exact test where z is highest
        pk = hypergeom.cdf(K - before[top], N, K, N - ks[top])  # this few calls after, or fewer
        i = int(top[int(np.argmin(pk))])
        k, b = int(ks[i]), int(before[i])
        pv = float(pk.min()) * len(pairs)
        rb, ra = b / k, (K - b) / (N - k)
        if pv < p["lost_alpha"] and rb >= p["lost_min_rate"] and ra <= rb / p["lost_ratio"]:
            row = order[first[P] + k]
            found.append(LostCall(spans.methods[P], spans.services[spans.service[row]], spans.methods[C], k, b, N - k,
                                  K - b, int(spans.start[row]), min(pv, 1.0)))
            missed.append(order[first[P] + k:first[P] + N][~x[k:]])  # its spans after that did not make it
            callees.append(C)
    into = _calls_into(spans) if found else []
    ranked, follows = _causes_first(spans, found, missed)
    out.calls = [replace(found[i], follows=follows[i], to=into[callees[i]],
                         after="" if follows[i] else _last_call(spans, missed[i], into))
                 for i in ranked]
    if not found:
        out.why = f"no method stops making one of its calls from a time on ({len(pairs)} caller-callee pairs tested)"
    return out


def _causes_first(spans: SpanTable, found: list[LostCall], missed: list[np.ndarray]) -> tuple[list[int], list[str]]:
    """The order of the lost calls, deeper ones (where the requests stopped first) ahead of those
    that run over them, then by p (see the module's words); and each one's ``follows``."""
    n, k = len(spans), len(found)
    owner = np.full(n + 1, -1, np.int64)  # per span: the lost call (index) it is a lost span of (n: no parent)
    callers = {}
    for a, rows in enumerate(missed):
        owner[rows] = callers.setdefault(found[a].caller, a)  # one caller's lost calls: the same spans
    under = np.zeros((k, k), np.int64)  # [a, b]: b's lost spans that run under a lost span of a
    deeper = [False] * k  # most of its lost spans run under other callers' lost spans
    depth = [0] * k  # the callers most of its lost spans run under, each (a chain: the deepest first)
    for b, rows in enumerate(missed):
        up = spans.parent[rows].astype(np.int64)
        seen = np.zeros((len(rows), k), bool)
        for _ in range(256):  # ancestors, level by level (a loop in the parents ends here)
            up = np.where(up >= 0, up, n)
            a = owner[up]
            hit = a >= 0
            seen[np.flatnonzero(hit), a[hit]] = True
            if (up == n).all():
                break
            up = np.where(up < n, spans.parent[np.minimum(up, n - 1)], -1)
        mine = callers[found[b].caller]
        seen[:, mine] = False
        under[:, b] = seen.sum(axis=0)
        deeper[b] = bool(len(rows)) and seen.any(axis=1).mean() >= 0.5
        depth[b] = int((under[:, b] >= 0.5 * len(rows)).sum()) if len(rows) else 0
    follows = [""] * k
    for a in range(k):
        cand = [b for b in range(k) if deeper[b] and under[callers[found[a].caller], b] > 0 and
                found[b].caller != found[a].caller]
        if cand:
            # the nearest: most of a's lost spans hold it, the least deep of those
            follows[a] = found[max(cand, key=lambda b: (under[callers[found[a].caller], b], -depth[b],
                                                         -found[b].p))].caller
    order = sorted(range(k), key=lambda i: (not deeper[i], -depth[i], found[i].p, found[i].caller, found[i].callee))
    return order, follows


def _calls_into(spans: SpanTable) -> list[tuple]:
    """Per method: the services its spans call directly (their children in other services), the
    most called first: what a client span's generic name ('HTTP GET') does not say. One pass."""
    child = np.flatnonzero(spans.parent >= 0)
    par = spans.parent[child]
    cross = spans.service[child] != spans.service[par]
    ns = len(spans.services)
    counts = np.bincount(spans.method[par[cross]].astype(np.int64) * ns + spans.service[child[cross]],
                         minlength=len(spans.methods) * ns).reshape(len(spans.methods), ns)
    return [tuple(spans.services[i] for i in np.argsort(-row, kind="stable") if row[i]) if row.any() else ()
            for row in counts]


def _last_call(spans: SpanTable, rows: np.ndarray, into: list[tuple], share: float = 0.8) -> str:
    """The call a caller's lost spans made last, where most of them (``share``) made the same one
    and it went to another service: 'auth's verify' (a call into another service's span), 'HTTP
    GET (to ts-verification-code-service)' (a client span of its own); '' otherwise. A callee that
    fails makes its caller stop there as an early return does: without a status the two look the
    same. Last by the calls' usual order (their mean place among the caller's calls, over all its
    spans), and only where the caller's calls are spans of its own (client spans, by its clock):
    spans of other services start by their hosts' clocks, and a few milliseconds of offset
    reorder calls made a millisecond apart (a generated system's charge seemed to come before its
    cart lookup on every request)."""
    if not len(rows):
        return ""
    method = spans.method[rows[0]]
    kids = np.flatnonzero((spans.parent >= 0) & (spans.method[np.maximum(spans.parent, 0)] == method))
    if not len(kids) or (spans.service[kids] != spans.service[rows[0]]).any():
        return ""
    par = spans.parent[kids]
    order = np.lexsort((spans.start[kids], par))
    kids, par = kids[order], par[order]
    first = np.r_[True, par[1:] != par[:-1]]
    place = np.arange(len(kids)) - np.maximum.accumulate(np.where(first, np.arange(len(kids)), 0))
    nm = len(spans.methods)
    usual = np.bincount(spans.method[kids], weights=place, minlength=nm) / np.maximum(
        np.bincount(spans.method[kids], minlength=nm), 1)
    lost = np.isin(par, rows)
    kids, par = kids[lost], par[lost]
    if not len(kids):
        return ""
    by = np.lexsort((usual[spans.method[kids]], par))  # each lost span's calls, the usually last at the end
    kids, par = kids[by], par[by]
    lasts = kids[np.r_[par[1:] != par[:-1], True]]
    counts = np.bincount(spans.method[lasts], minlength=nm)
    m = int(np.argmax(counts))
    if counts[m] < share * len(rows):
        return ""
    name = spans.methods[m]
    op = name.partition(":")[2] if ":" in name else name
    if not into[m]:
        return ""  # a call inside its own service: no other to suspect
    named = [t for t in into[m][:2] if t.lower() not in op.lower()]
    return f"{op} (to {', '.join(named)})" if named else op
