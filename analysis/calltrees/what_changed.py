"""What changed between the minutes before and the incident, per service and pod: the question
an on-call engineer asks of a microservice system's spans, answered from three quantities that
do not leak from one service into another:

- **own time**: a span's duration minus its children's, for the spans a pod runs itself (its
  server spans and internal spans; client spans excluded). CPU contention on a pod shows here.
- **time between client and server**: a client span (in the caller) minus its server child (in
  the callee): the network, queues, the callee's ingress. It belongs to the edge (caller pod ->
  callee pod), never to the caller's method. A network delay on a pod shows on every edge into
  or out of that pod, its own spans unchanged.
- **calls per entry**: how many calls a pod makes (or internal spans it opens) per request it
  serves, and per request it serves where it calls X (a kind of request its calls tell when the
  entry's name does not). An early return or an exception shows as calls that are no longer
  made: in every request, or only in those of one kind (after placing an order).

Each (pod, method), edge and (pod, method) call rate is compared between the reference and the
current spans (Mann-Whitney U for times, a Poisson test for counts). A slower edge is evidence
against both its ends; a pod's score counts its evidence (edges into and out of it, its own
methods, its lost calls) and how much of what it does changed, so the pod at the common end of
the slow edges, or whose own work slowed, ranks first, and a caller that only waited for it does
not.

The reference is a span set from before (``--reference``), or the same spans split at a time
(``--incident-time``); with neither, the split is where the requests' latency (or their number of
spans) changed most, when that change is clear.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from perftriage.analysis.spans.table import SpanTable, follow
from perftriage.analysis.stats import mann_whitney_p, poisson_cdf
from perftriage.analysis.units import count_of, fmt_duration, fmt_when

from .added_time import MIN_ADDED, added_share, request_latency
from .clouddiag import span_self_time
from .compare import grouped

MS = 1e6


@dataclass
class ChangeParams:
    p_value: float = 0.01
    min_calls: int = 5  # on each side, for times
    min_added_ms: float = 1.0  # a time must grow by at least this much (median, or half the p90)...
    min_ratio: float = 1.5  # ...and by this factor of the reference
    max_drop: float = 0.6  # calls per entry at most this share of the reference's are 'lost'...
    min_expected: float = 5.0  # ...when at least this many were expected from the reference's rate
    count_p_value: float = 0.05  # a Poisson test on few requests: lost calls come several at once
    given_p_value: float = 1e-4  # the same per kind of request (a pod calling X): many more tests
    max_samples: int = 20_000


@dataclass
class Evidence:
    kind: str  # "own", "into", "out of", "calls"
    pod: str  # the pod it is evidence against
    service: str
    other: str  # the method (own, calls) or the other pod (edges)
    other_service: str
    ref_n: int
    n: int
    ref_median_ms: float
    median_ms: float
    ref_p90_ms: float
    p90_ms: float
    p: float
    added_ms: float = 0.0  # time: median growth or half the p90's; calls: 0
    given: str = ""  # calls: counted in the requests where the pod calls this method (else per request served)

    def sentence(self) -> str:
        if self.kind == "calls":
            per = f"per request it served where it called `{self.given}`" if self.given else "per request it served"
            return (f"{self.service} made {self.median_ms:.2f} `{self.other}` {per}, "
                    f"{self.ref_median_ms:.2f} before ({self.n:,} against {self.ref_n:,} expected; p = {self.p:.1g})")
        if self.kind == "own":
            what = f"its own time in `{self.other}`"
        elif self.kind == "into":
            what = f"calls into it from {self.other_service} ({self.other}), between client and server,"
        else:
            what = f"its calls to {self.other_service} ({self.other}), between client and server,"
        return (f"{what} took {_ms(self.median_ms)} at the median, p90 {_ms(self.p90_ms)}, against "
                f"{_ms(self.ref_median_ms)} and {_ms(self.ref_p90_ms)} before ({self.n:,} calls against "
                f"{self.ref_n:,}; p = {self.p:.1g})")


@dataclass
class Suspect:
    pod: str
    service: str
    score: float
    evidence: list[Evidence]
    edges: int  # edges into or out of the pod, in the current spans
    slow_edges: int
    methods: int  # own methods compared
    slow_methods: int
    lost_calls: int
    callers: int = 0  # pods calling it, in the current spans

    def headline(self) -> str:
        parts = []
        ins = [e for e in self.evidence if e.kind == "into"]
        outs = [e for e in self.evidence if e.kind == "out of"]
        own = [e for e in self.evidence if e.kind == "own"]
        lost = [e for e in self.evidence if e.kind == "calls"]
        if ins:
            slow = len({e.other for e in ins})
            total = max(self.callers, slow)
            parts.append(f"calls into it took {_ms(max(e.added_ms for e in ins))} more between client and server, "
                         f"on {slow} of {total} caller{'s' if total != 1 else ''}")
        if own:
            e = max(own, key=lambda x: x.added_ms)
            parts.append(f"its own time in {e.other.split(':', 1)[-1]} went from p90 {_ms(e.ref_p90_ms)} to "
                         f"{_ms(e.p90_ms)}" + (f" (and {len(own) - 1} more method{'s' if len(own) > 2 else ''})"
                                                if len(own) > 1 else ""))
        if outs:
            parts.append(f"its calls out took {_ms(max(e.added_ms for e in outs))} more on {len(outs)} "
                         f"edge{'s' if len(outs) != 1 else ''}")
        if lost:
            e = min(lost, key=lambda x: x.median_ms / max(x.ref_median_ms, 1e-9))
            per = f"per request that called `{e.given.split(':', 1)[-1].rsplit('/', 1)[-1]}`" if e.given else \
                "per request"
            parts.append(f"it stopped making calls (`{e.other.split(':', 1)[-1]}` {e.median_ms:.2f} {per}, "
                         f"{e.ref_median_ms:.2f} before)")
        return "; ".join(parts)


@dataclass
class MethodChange:
    """One method's calls, longer from a time on (``method_split``): their own time, not their callees'."""
    method: str
    at_ns: int
    ratio: float  # median own time after / before
    p: float  # Mann-Whitney, times the number of tests (methods and replicas)
    before: tuple[int, float]  # (calls, median own time in ms)
    after: tuple[int, float]
    replicas: list[tuple[str, int, float, int, float]]  # (replica, calls and median ms before, after)
    tested: int  # tests: the methods, and the replicas of those called often
    params: dict = field(default_factory=dict)  # method_split's parameters, for the finding
    share: float = float("nan")  # the time it adds per request, a fraction of its requests' median latency
    request_ms: float = float("nan")  # the median latency of the requests that call it, after
    replica: str = ""  # the one replica whose calls changed, where the method's calls as a whole did not
    methods: int = 0  # methods tested

    def headline(self) -> str:
        """'catalog:search took 1.46x as long from 00:00:09.738 UTC on, on all 4 replicas'; 'C:getC
        took 6.00x as long on c-1 from +0:05:01.509 on (1.00x at the median of its 2 other replicas)'."""
        if self.replica:
            others = [r for r in self.replicas if r[0] != self.replica]
            rest = ""
            if others:
                b = float(np.median([r[2] for r in others]))
                a = float(np.median([r[4] for r in others]))
                rest = (f" ({a / max(b, 1e-9):.2f}x on its other replica)" if len(others) == 1 else
                        f" ({a / max(b, 1e-9):.2f}x at the median of its {len(others)} other replicas)")
            return (f"{self.method} took {self.ratio:.2f}x as long on {self.replica} from "
                    f"{fmt_when(self.at_ns, False)} on{rest}")
        up = sum(1 for r in self.replicas if r[4] > r[2])
        n = len(self.replicas)
        where = f"on all {n} replicas" if up == n > 1 else f"on {up} of {n} replicas" if n > 1 else \
            f"on {self.replicas[0][0]}" if n else ""
        return (f"{self.method} took {self.ratio:.2f}x as long from {fmt_when(self.at_ns, False)} on"
                + (f", {where}" if where else ""))


@dataclass
class ChangeDiagnosis:
    params: ChangeParams
    how: str  # what was compared with what, in words
    split_ns: int | None
    ref_requests: int
    requests: int
    suspects: list[Suspect]
    evidence: list[Evidence]
    notes: list[str] = field(default_factory=list)
    method: MethodChange | None = None  # the method whose calls changed, where it gave the time


def _ms(v: float) -> str:
    return fmt_duration(v * MS)


@dataclass
class _Parts:
    """Per span of one side: what it is and the quantities measured on it."""

    pod: np.ndarray  # replica code
    svc: np.ndarray
    method: np.ndarray
    own: np.ndarray  # ns, own time (client spans: -1)
    gap: np.ndarray  # ns, for client spans with a server child (else -1)
    callee: np.ndarray  # replica code of the server child (client spans) else -1
    entry: np.ndarray  # bool: a request enters the pod here (root, or child of another service)
    inside: np.ndarray  # bool: neither an entry nor a client span's gap (counted per entry)
    unit: np.ndarray  # the row of the entry span it runs under (its own row for an entry)
    offset: np.ndarray  # ns from the start of that entry to its own start


def span_parts(sp: SpanTable, rows: np.ndarray | None = None) -> _Parts:
    n = len(sp)
    dur = sp.duration.astype(np.int64)
    has = sp.parent >= 0
    par = np.where(has, sp.parent, 0)
    child_sum = np.bincount(par[has], weights=dur[has], minlength=n).astype(np.int64)
    cross = has & (sp.service != sp.service[par])
    # a client span: its one child is the server span in another service (a span that calls
    # several, or calls and works, does work of its own: spans calling the callee's directly),
    # and it is not itself entered from another service (a server span calling one service with
    # no client span between, as in Alibaba's tables, works for the time its child does not take)
    client = np.zeros(n, bool)
    client[par[cross]] = True
    client &= (np.bincount(par[has], minlength=n) == 1) & ~cross
    callee = np.full(n, -1, np.int64)
    callee[par[cross & client[par]]] = sp.replica[cross & client[par]]
    own = np.where(client, -1, np.maximum(dur - child_sum, 0))
    gap = np.where(client, np.maximum(dur - child_sum, 0), -1)
    entry = ~has | cross
    inside = ~entry
    # each span's entry: parents followed (by pointer doubling) up to the pod's entry span
    unit = follow(np.where(entry, np.arange(n), par))
    p = _Parts(sp.replica.astype(np.int64), sp.service.astype(np.int64), sp.method.astype(np.int64), own, gap,
               callee, entry, inside, unit, sp.start - sp.start[unit])
    if rows is not None:
        p = _Parts(*(getattr(p, f)[rows] for f in ("pod", "svc", "method", "own", "gap", "callee", "entry", "inside",
                                                    "unit", "offset")))
    return p


def request_start(sp: SpanTable) -> np.ndarray:
    """Per span: the start of its request's root (its own start where the request has no root)."""
    nt = max(len(sp.traces), int(sp.trace.max()) + 1 if len(sp) else 0)
    first = np.full(nt, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, sp.trace, sp.start)
    roots = sp.parent == -1
    at = first.copy()
    at[sp.trace[roots]] = sp.start[roots]
    return at[sp.trace]


def find_split(sp: SpanTable, min_share: float = 0.15) -> tuple[int | None, str]:
    """Where the requests changed most: the split of the requests (by root start) that best
    separates their log latency, or their number of spans, when the separation is clear
    (Mann-Whitney p < 1e-4 and a shift of at least 1.5x). (None, why) otherwise."""
    roots = np.flatnonzero(sp.parent == -1)
    if len(roots) < 40:
        return None, f"{count_of(len(roots), 'requests')}: too few to find when they changed"
    order = np.argsort(sp.start[roots], kind="stable")
    r = roots[order]
    t = sp.start[r]
    lat = np.log(np.maximum(sp.duration[r].astype(np.float64), 1.0))
    nspans = np.bincount(sp.trace, minlength=len(sp.traces)).astype(np.float64)[sp.trace[r]]
    n = len(r)
    best = (0.0, None, "")
    lo, hi = int(n * min_share), int(n * (1 - min_share))
    for x, what in ((lat, "latency"), (np.log(nspans), "number of spans")):
        c = np.cumsum(x)
        k = np.arange(lo, hi)
        if not len(k):
            continue
        sd = float(np.std(x))
        if sd < 1e-9:  # the same for every request (a constant number of spans)
            continue
        m1 = c[k - 1] / k
        m2 = (c[-1] - c[k - 1]) / (n - k)
        z = np.abs(m2 - m1) / sd * np.sqrt(k * (n - k) / n)
        i = int(np.argmax(z))
        if z[i] > best[0]:
            best = (float(z[i]), int(k[i]), what)
    z, k, what = best
    if k is None:
        return None, "too few requests on each side of any split"
    x = lat if what == "latency" else np.log(nspans)
    p = mann_whitney_p(x[:k], x[k:], "two-sided")
    shift = abs(float(np.median(x[k:]) - np.median(x[:k])))
    if p >= 1e-4:
        return None, f"no clear change over time in the requests' latency or size (p = {p:.2g})"
    if shift < np.log(1.5):  # a change, but a small one: several incidents come and go, or a drift
        return None, (f"no single change over time in the requests' {what}: the clearest split moves their median "
                      f"by {np.exp(shift):.2f}x only (1.5x needed; p = {p:.2g})")
    return int(t[k]), what


def higher_after(x: np.ndarray, k: np.ndarray) -> int:
    """Of the split positions ``k`` (1 .. len(x) - 1) of a series in time order, the one after
    which it is most clearly higher: the difference of the means after and before over its
    standard error, one pass of prefix sums."""
    n = len(x)
    c = np.cumsum(x)
    z = ((c[-1] - c[k - 1]) / (n - k) - c[k - 1] / k) * np.sqrt(k * (n - k) / n)
    return int(k[int(np.argmax(z))])


STEADY = 3.0  # a method's step must be this many times the swings of its calls' medians on each side


def _steadiness(x: np.ndarray, i: int, shift: float, chunks: int = 10) -> float:
    """How far a step of ``shift`` at ``i`` stands out of the series' own swings: the shift over
    the spread (robust, 1.4826 MAD) of the medians of ``chunks`` runs of calls on each side about
    their side's median. A method whose time comes and goes (a cache, a collector) swings as much
    within each side as across the split (0.7x, then 1.3x, in minutes of real spans): low; a
    method slower from a time on: high."""
    dev = []
    for part in (x[:i], x[i:]):
        meds = np.array([np.median(c) for c in np.array_split(part, min(chunks, max(len(part) // 10, 1)))])
        dev.append(meds - np.median(meds))
    spread = 1.4826 * float(np.median(np.abs(np.concatenate(dev))))
    return shift / max(spread, 1e-9)


def method_split(sp: SpanTable, min_calls: int = 100, min_share: float = 0.15, min_shift: float = 1.2,
                 alpha: float = 1e-6, min_added: float = MIN_ADDED) -> MethodChange | str:
    """Where one method's calls changed most, for when the requests as a whole show no clear
    change (a method 1.5x slower that is a small part of each request): for each method called
    ``min_calls`` times or more, and for each of its replicas called so often where it has
    several and twice as many calls (one replica of three slowed moves the method's median
    little), the split of its calls by start that best separates their log duration; the
    clearest of them when clear: slower after (Mann-Whitney p below ``alpha`` once multiplied by
    the number of tests: methods and replicas), the median moved by ``min_shift`` or more, a
    step, not its usual swings (``_steadiness``), and adding ``min_added`` or more of the time of
    the requests that call it (a busy service's method stepping 1.1 to 1.5 ms from one minute to
    the next in requests of 170 ms: 0.2%, a habit, no incident). Why not, when not."""
    dur = span_self_time(sp).astype(np.float64)  # its own time: a slow callee does not move it
    d = np.log(np.maximum(dur, 1.0))
    latency = request_latency(sp)
    by_start = np.argsort(sp.start, kind="stable")
    found = []  # (p, shift, steadiness, (added share, latency ms), (method, replica or -1), its rows by start, split)
    groups = []  # ((method, replica or -1 for all of them), its rows by start)
    for m, rows in grouped(sp.method[by_start], by_start).items():
        groups.append(((m, -1), rows))
        if len(rows) >= 2 * min_calls:
            by_replica = grouped(sp.replica[rows], rows)
            if len(by_replica) > 1:
                groups += [((m, r), rr) for r, rr in by_replica.items()]
    for m, rows in groups:
        n = len(rows)
        x = d[rows]
        if n < min_calls or float(np.std(x)) < 1e-9:
            continue
        k = np.arange(max(int(n * min_share), 1), int(n * (1 - min_share)))
        if not len(k):
            continue
        i = higher_after(x, k)
        shift = float(np.median(x[i:]) - np.median(x[:i]))
        found.append((mann_whitney_p(x[i:], x[:i], "greater"), shift, _steadiness(x, i, shift),
                      added_share(sp, latency, dur, rows[:i], rows[i:]), m, rows, i))
    if not found:
        return f"nor one method's own time (none called {min_calls} times or more)"
    methods = sum(1 for f in found if f[4][1] == -1)  # for the words: the tests count the replicas too

    def eligible(f) -> bool:  # a step that matters to its requests (where their latency is known)
        return f[2] >= STEADY and not f[3][0] < min_added

    # the most certain of the steps that matter; when none does, the most certain, to say why not
    p, shift, steady, (added, request_ms), (m, on), rows, i = min([f for f in found if eligible(f)] or found,
                                                                  key=lambda f: (f[0], -f[1]))
    method = sp.methods[m] + (f" on {sp.replicas[on]}" if on >= 0 else "")
    p = min(p * len(found), 1.0)
    why = (f"p = {p:.2g} with the {len(found)} tests counted" if p >= alpha else
           f"under {min_shift:g}x" if shift < np.log(min_shift) else
           "no more than it swings on either side: not a step" if steady < STEADY else
           f"adds {added:.1%} to its requests' time" if added < min_added else None)
    if why is not None:
        return f"nor one method's own time (the clearest: {method}, {np.exp(shift):.2f}x, {why})"
    rows_before, rows_after = rows[:i], rows[i:]

    def side(sel) -> tuple[int, float]:
        return len(sel), float(np.median(dur[sel])) / 1e6

    at = int(sp.start[rows[i]])
    replicas = []
    every = by_start[sp.method[by_start] == m]  # the method's calls on every replica, split at the same time
    every_before, every_after = every[sp.start[every] < at], every[sp.start[every] >= at]
    for r in np.unique(sp.replica[every]).tolist():
        rb, ra = every_before[sp.replica[every_before] == r], every_after[sp.replica[every_after] == r]
        if len(rb) and len(ra):
            replicas.append((sp.replicas[r], *side(rb), *side(ra)))
    replicas.sort(key=lambda x: -x[4] / max(x[2], 1e-9))
    before, after = side(rows_before), side(rows_after)
    return MethodChange(sp.methods[m], at, after[1] / max(before[1], 1e-9), p, before, after, replicas,
                        len(found), {"method_min_calls": min_calls, "method_min_share": min_share,
                                     "method_min_shift": min_shift, "method_alpha": alpha, "method_steady": STEADY,
                                     "method_min_added": min_added}, added, request_ms,
                        sp.replicas[on] if on >= 0 else "", methods)


def local_changes(sp: SpanTable, window_ns: int, n: int = 4, min_requests: int = 100,
                  max_tests: int = 60) -> list[tuple[int, str]] | str:
    """Up to ``n`` times, strongest first and ``window_ns`` apart at least, where the requests of
    ``window_ns`` before and after differ most in log latency or number of spans, each clear
    (Mann-Whitney p < 1e-6 between its two windows and a median shift of at least 1.5x); why
    none, when none. One pass of prefix sums over the requests by start for each measure."""
    roots = np.flatnonzero(sp.parent == -1)
    if len(roots) < 2 * min_requests:
        return f"{count_of(len(roots), 'requests')}: too few to find when they changed"
    order = np.argsort(sp.start[roots], kind="stable")
    r = roots[order]
    t = sp.start[r]
    nspans = np.bincount(sp.trace, minlength=len(sp.traces)).astype(np.float64)[sp.trace[r]]
    k = np.arange(len(r))
    lo = np.searchsorted(t, t - window_ns)  # the window before request k: [lo, k)
    hi = np.searchsorted(t, t + window_ns)  # after: [k, hi)
    n1, n2 = k - lo, hi - k
    ok = (n1 >= min_requests) & (n2 >= min_requests)
    if not ok.any():
        return "too few requests within the window on each side of any time"
    measures, zs = [], []
    for x, what in ((np.log(np.maximum(sp.duration[r].astype(np.float64), 1.0)), "latency"),
                    (np.log(nspans), "number of spans")):
        sd = float(np.std(x))
        if sd < 1e-9:
            continue
        c = np.concatenate([[0.0], np.cumsum(x)])
        m1 = (c[k] - c[lo]) / np.maximum(n1, 1)
        m2 = (c[hi] - c[k]) / np.maximum(n2, 1)
        zs.append(np.where(ok, np.abs(m2 - m1) / sd * np.sqrt(n1 * n2 / np.maximum(n1 + n2, 1)), 0.0))
        measures.append((x, what))
    if not zs:
        return "the requests' latency and size never vary"
    z = np.max(zs, axis=0)
    which = np.argmax(zs, axis=0)
    out: list[tuple[int, str]] = []
    tested = 0
    for i in np.argsort(-z, kind="stable"):
        if z[i] <= 0 or len(out) >= n or tested >= max_tests:
            break
        if any(abs(int(t[i]) - at) < window_ns for at, _ in out):
            continue
        tested += 1
        x, what = measures[int(which[i])]
        before, after = x[lo[i]:i], x[i:hi[i]]
        p = mann_whitney_p(before, after, "two-sided")
        if p < 1e-6 and abs(float(np.median(after) - np.median(before))) >= np.log(1.5):
            out.append((int(t[i]), what))
        elif not out:
            break  # the strongest is not clear: nothing is
    return out or f"nor any within {window_ns // 60_000_000_000} minutes"


def diagnose_change(ref: SpanTable, cur: SpanTable, params: ChangeParams | None = None, how: str = "",
                    ref_rows: np.ndarray | None = None, cur_rows: np.ndarray | None = None,
                    split_ns: int | None = None) -> ChangeDiagnosis:
    """Compare ``cur`` (its rows ``cur_rows``) with ``ref`` (rows ``ref_rows``): the same table
    split at a time, or two tables (pods and methods matched by name)."""
    params = params or ChangeParams()
    rng = np.random.default_rng(0)
    R, C = span_parts(ref, ref_rows), span_parts(cur, cur_rows)
    # names shared by both sides: codes of cur, translated from ref by name
    pods, svcs, methods = cur.replicas, cur.services, cur.methods

    def tr(codes, names_from, names_to):
        idx = {s: i for i, s in enumerate(names_to)}
        m = np.array([idx.get(s, -1) for s in names_from], np.int64)
        return np.where(codes >= 0, m[np.maximum(codes, 0)], -1) if len(m) else codes

    if ref is not cur:
        R = _Parts(tr(R.pod, ref.replicas, pods), tr(R.svc, ref.services, svcs), tr(R.method, ref.methods, methods),
                   R.own, R.gap, tr(R.callee, ref.replicas, pods), R.entry, R.inside, R.unit, R.offset)
    pod_svc = {}
    for p_, s_ in zip(C.pod.tolist(), C.svc.tolist()):
        pod_svc.setdefault(p_, s_)
    npod, nmeth = max(len(pods), 1), max(len(methods), 1)
    ev: list[Evidence] = []

    def times(kind, key_r, val_r, key_c, val_c, name_of):
        gr, gc = grouped(key_r, val_r), grouped(key_c, val_c)
        for k, c in gc.items():
            r = gr.get(k)
            if r is None or len(r) < params.min_calls or len(c) < params.min_calls:
                continue
            rs = r if len(r) <= params.max_samples else rng.choice(r, params.max_samples, replace=False)
            cs = c if len(c) <= params.max_samples else rng.choice(c, params.max_samples, replace=False)
            rm, cm = float(np.median(r)) / MS, float(np.median(c)) / MS
            r90, c90 = float(np.quantile(r, 0.9)) / MS, float(np.quantile(c, 0.9)) / MS
            added = max(cm - rm, (c90 - r90) / 2)
            grew = (cm - rm >= params.min_added_ms and cm >= params.min_ratio * rm) or \
                (c90 - r90 >= 2 * params.min_added_ms and c90 >= params.min_ratio * r90)
            if not grew:
                continue
            p = mann_whitney_p(rs, cs, "less")
            if p >= params.p_value:
                continue
            for e in name_of(k, len(r), len(c), rm, cm, r90, c90, p, added):
                ev.append(e)

    # own time per (pod, method)
    mo_r, mo_c = R.own >= 0, C.own >= 0

    def own_names(k, rn, cn, rm, cm, r90, c90, p, added):
        pod, m = k // nmeth, k % nmeth
        yield Evidence("own", pods[pod], svcs[pod_svc.get(pod, 0)], methods[m], svcs[pod_svc.get(pod, 0)], rn, cn, rm,
                       cm, r90, c90, p, added)

    times("own", (R.pod * nmeth + R.method)[mo_r & (R.pod >= 0) & (R.method >= 0)],
          R.own[mo_r & (R.pod >= 0) & (R.method >= 0)], (C.pod * nmeth + C.method)[mo_c], C.own[mo_c], own_names)

    # time between client and server per edge (caller pod -> callee pod), compared per client
    # method: requests whose mix changed (fewer of one kind) would otherwise show an edge slower
    # that no call of it is, where a caller's spans call the callee's directly (no client span:
    # the time between them is the caller's own work, which differs by method)
    g_r = (R.gap >= 0) & (R.pod >= 0) & (R.callee >= 0) & (R.method >= 0)
    g_c = C.gap >= 0
    n_ev = len(ev)

    def edge_names(k, rn, cn, rm, cm, r90, c90, p, added):
        a, b = k // (npod * nmeth), k % npod
        sa, sb = svcs[pod_svc.get(a, 0)], svcs[pod_svc.get(b, 0)]
        yield Evidence("into", pods[b], sb, pods[a], sa, rn, cn, rm, cm, r90, c90, p, added)
        yield Evidence("out of", pods[a], sa, pods[b], sb, rn, cn, rm, cm, r90, c90, p, added)

    times("edge", ((R.pod * nmeth + R.method) * npod + R.callee)[g_r], R.gap[g_r],
          ((C.pod * nmeth + C.method) * npod + C.callee)[g_c], C.gap[g_c], edge_names)
    strongest: dict[tuple, Evidence] = {}  # one piece of evidence per edge: its most slowed client method
    for e in ev[n_ev:]:
        k = (e.kind, e.pod, e.other)
        if k not in strongest or e.added_ms > strongest[k].added_ms:
            strongest[k] = e
    ev[n_ev:] = strongest.values()

    # calls per entry: what a pod makes (client spans, internal spans) per request it serves
    entries_r = np.bincount(R.pod[R.entry & (R.pod >= 0)], minlength=npod)
    entries_c = np.bincount(C.pod[C.entry], minlength=npod)
    kr = (R.pod * nmeth + R.method)[R.inside & (R.pod >= 0) & (R.method >= 0)]
    kc = (C.pod * nmeth + C.method)[C.inside]
    cnt_r = grouped(kr, kr)
    cnt_c = grouped(kc, kc)
    def lost(pod, m, calls_r, n_r, calls_c, n_c, p_max, given=None):
        """Evidence that ``pod`` no longer makes ``m``: calls_r of them in n_r requests before,
        calls_c in n_c now (a Poisson test), or None; ``given``: the method those requests call."""
        rate_r, rate_c = calls_r / n_r, calls_c / n_c
        expected = rate_r * n_c
        if expected < params.min_expected or rate_c > params.max_drop * rate_r:
            return None
        p = float(poisson_cdf(calls_c, expected))
        if p >= p_max:
            return None
        s = svcs[pod_svc.get(pod, 0)] if pod in pod_svc else ""
        return Evidence("calls", pods[pod], s, methods[m], s, int(round(expected)), calls_c, rate_r, rate_c, rate_r,
                        rate_c, p, given=methods[given] if given is not None else "")

    for k, r in cnt_r.items():
        pod, m = k // nmeth, k % nmeth
        if entries_r[pod] == 0 or entries_c[pod] == 0:
            continue
        e = lost(pod, m, len(r), entries_r[pod], len(cnt_c.get(k, ())), entries_c[pod], params.count_p_value)
        if e is not None:
            ev.append(e)

    # calls per request of a kind: the requests where the pod calls X (the kind of request its
    # calls tell, where the entry's name does not: a frontend's one "Recv." for every page). A
    # pod that stops after X in those requests only (an exception after placing the order) loses
    # few calls over all its requests. Only calls that usually come after X (a call made before X
    # and no longer beside it was not lost: X moved away from it), and not when X's callee lost
    # calls itself (it returned early: the caller stopped for it)
    flagged = {(e.pod, e.other) for e in ev if e.kind == "calls"}
    lost_pods = {e.pod for e in ev if e.kind == "calls"}
    given_r, given_c = _calls_given(R, order=True), _calls_given(C)
    callee_of = {}
    cl = (C.callee >= 0) & (C.pod >= 0) & (C.method >= 0)
    for p_, m_, q_ in zip(C.pod[cl].tolist(), C.method[cl].tolist(), C.callee[cl].tolist()):
        callee_of.setdefault((p_, m_), q_)
    for (pod, x), (n_r, sums_r, after_r) in given_r.items():
        got_c = given_c.get((pod, x))
        if got_c is None or n_r < params.min_calls or got_c[0] < params.min_calls:
            continue
        q = callee_of.get((pod, x))
        if q is not None and pods[q] in lost_pods:
            continue
        n_c, sums_c, _ = got_c
        for y, total_r in sums_r.items():
            if y == x or (pods[pod], methods[y]) in flagged or after_r[y] < 0.5:
                continue
            e = lost(pod, y, total_r, n_r, sums_c.get(y, 0), n_c, params.given_p_value, given=x)
            if e is not None:
                ev.append(e)
                flagged.add((pods[pod], methods[y]))

    # suspects: every pod with evidence; edges and methods it has, for the shares
    edges_of: dict[int, set] = {}
    for a, b in zip(C.pod[g_c].tolist(), C.callee[g_c].tolist()):
        edges_of.setdefault(a, set()).add((a, b))
        edges_of.setdefault(b, set()).add((a, b))
    meth_of: dict[int, set] = {}
    for p_, m in zip(C.pod[mo_c].tolist(), C.method[mo_c].tolist()):
        meth_of.setdefault(p_, set()).add(m)
    by_pod: dict[str, list[Evidence]] = {}
    for e in ev:
        by_pod.setdefault(e.pod, []).append(e)
    pod_code = {name: i for i, name in enumerate(pods)}
    suspects = []
    for pod, es in by_pod.items():
        i = pod_code[pod]
        slow_edges = len({(e.kind, e.other) for e in es if e.kind in ("into", "out of")})
        slow_m = len({e.other for e in es if e.kind == "own"})
        lost = len({e.other for e in es if e.kind == "calls"})
        n_edges, n_m = len(edges_of.get(i, ())), len(meth_of.get(i, ()))
        share = (slow_edges + slow_m) / max(1, n_edges + n_m)
        score = slow_edges + slow_m + lost + share
        callers = len({a for a, b in edges_of.get(i, ()) if b == i})
        suspects.append(Suspect(pod, es[0].service, score, sorted(es, key=lambda e: -e.added_ms), n_edges,
                                slow_edges, n_m, slow_m, lost, callers))
    suspects.sort(key=lambda s: (-s.score, -max(e.added_ms for e in s.evidence), s.pod))
    nr = len(np.unique(ref.trace if ref_rows is None else ref.trace[ref_rows]))
    nc = len(np.unique(cur.trace if cur_rows is None else cur.trace[cur_rows]))
    return ChangeDiagnosis(params, how, split_ns, nr, nc, suspects, ev)


def split_spans(sp: SpanTable, at_ns: int, window_ns: int | None = None,
                min_requests: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the requests whose root starts before ``at_ns``, and of the others; with
    ``window_ns``, only the requests within it on each side (a day of spans holds other
    incidents), or where fewer than ``min_requests`` are, the ``min_requests`` nearest on that
    side (span files of some minutes only: the last ones recorded before)."""
    rs = request_start(sp)
    before = rs < at_ns
    if window_ns is None:
        return np.flatnonzero(before), np.flatnonzero(~before)
    roots = np.unique(rs)  # one start per request (requests that start together count once)
    out = []
    for side, lo, hi in ((before, at_ns - window_ns, at_ns), (~before, at_ns, at_ns + window_ns)):
        near = side & (rs >= lo) & (rs < hi)
        starts = roots[(roots >= lo) & (roots < hi)]
        if len(starts) < min_requests:  # too few in the window: the nearest requests on that side
            pool = roots[roots < at_ns] if side is before else roots[roots >= at_ns]
            pick = pool[-min_requests:] if side is before else pool[:min_requests]
            if len(pick):
                near = side & (rs >= pick[0]) & (rs <= pick[-1])
        out.append(np.flatnonzero(near))
    return out[0], out[1]


MAX_CELLS = 4_000_000  # entries x methods of one pod counted at once (32 MB a matrix)


def _calls_given(S: _Parts, order: bool = False) -> dict:
    """Per (pod, X) where the pod calls X (a client or internal span) in some of the requests it
    serves (its entries): (how many entries, {Y: how many Y calls the pod made in them}, with
    ``order`` {Y: the share of the entries with both where Y's first call starts after X's
    first}, else None)."""
    m = S.inside & (S.pod >= 0) & (S.method >= 0)
    tr, pod, meth, off = S.unit[m], S.pod[m], S.method[m], S.offset[m]
    out = {}
    rng = np.random.default_rng(0)
    for p in np.unique(pod).tolist():
        rp = np.flatnonzero(pod == p)
        units, lu = np.unique(tr[rp], return_inverse=True)
        um, lm = np.unique(meth[rp], return_inverse=True)
        nu, nm = len(units), len(um)
        if nu * nm > MAX_CELLS:  # a sample of the entries (the rates stay; the tests lose a little power)
            keep = np.zeros(nu, bool)
            keep[rng.choice(nu, MAX_CELLS // nm, replace=False)] = True
            sel = keep[lu.reshape(-1)]
            rp, lm = rp[sel], lm.reshape(-1)[sel]
            _, lu = np.unique(tr[rp], return_inverse=True)
            nu = int(lu.max()) + 1
        cell = lu.reshape(-1) * nm + lm.reshape(-1)
        M = np.bincount(cell, minlength=nu * nm).reshape(nu, nm)
        has = M > 0
        if order:
            first = np.full(nu * nm, np.inf)
            np.minimum.at(first, cell, off[rp].astype(np.float64))
            first = first.reshape(nu, nm)
        for xi, x in enumerate(um.tolist()):
            rows = has[:, xi]
            sums = M[rows].sum(axis=0)
            after = None
            if order:
                both = has[rows]
                later = (first[rows] > first[rows, xi][:, None]) & both
                after = dict(zip(um.tolist(), (later.sum(axis=0) / np.maximum(both.sum(axis=0), 1)).tolist()))
            out[(p, x)] = (int(rows.sum()), {y: int(v) for y, v in zip(um.tolist(), sums.tolist()) if v}, after)
    return out
