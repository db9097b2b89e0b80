"""Calls that fail: which method's calls end in an error, where the errors start, and from when.

Spans say they failed where their format carries a status (OTLP's status ERROR, Jaeger's and
Zipkin's error tag, a span CSV's status column: spans/status.py). A failed span whose children
did not fail is where an error started; the spans of its callers that fail because of it are
not counted again (an error propagates up the call tree: the frontend's request fails because a
payment call did). Each method's calls (spans of one service and operation) are counted, and
those where an error started:

- with a time (the incident time, or the split the requests were compared at): the calls of the
  requests from that time on against those before; a method is failing when its rate rose
  ``ratio`` times and to ``min_rate`` or more, ``min_failed`` calls failing or more, the rise
  unlikely by chance (one-sided hypergeometric test, p below ``alpha`` with every method counted);
- with reference spans (--reference): each method's calls against its calls there, tested alike;
- without one: a method's calls split where its failures start (the split, at one of its failed
  calls, with the smallest such p), tested the same way; a method failing throughout (no such
  start) is said when ``min_rate`` of its calls fail, below the ones that start failing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.spans.table import SpanTable, ancestors
from perftriage.analysis.units import count_of, fmt_when

from .what_changed import request_start

PARAMS = {"failures_min_failed": 3, "failures_min_rate": 0.01, "failures_ratio": 4.0, "failures_alpha": 1e-4}


@dataclass(frozen=True)
class FailingMethod:
    method: str  # "service:operation"
    service: str
    calls: int  # its calls (from since_ns on where it starts failing)
    failed: int  # of them, where an error started
    calls_before: int = 0  # its calls before since_ns (none: failing throughout)
    failed_before: int = 0
    since_ns: int | None = None  # failing from this time on
    p: float = float("nan")  # hypergeometric p of the rise, times the methods tested
    failed_requests: int = 0  # requests with an error started in it (from since_ns on)
    step: bool = False  # it starts failing (at since_ns, or against the reference), not failing throughout
    reference: bool = False  # "before" is the reference spans (--reference), not the calls before a time
    timeouts: int = 0  # of ``failed``, calls that did not fail themselves: their callers gave up waiting

    @property
    def rate(self) -> float:
        return self.failed / self.calls if self.calls else 0.0

    @property
    def rate_before(self) -> float:
        return self.failed_before / self.calls_before if self.calls_before else 0.0

    @property
    def operation(self) -> str:
        prefix = f"{self.service}:"
        return self.method[len(prefix):] if self.service and self.method.startswith(prefix) else self.method

    def headline(self) -> str:
        """One line: who fails, how often, since when (the finding's title, the Call trees pane's header)."""
        how = "times out" if self.timeouts * 2 >= self.failed else "fails"  # mostly its callers giving up on it
        if self.step and self.reference:
            return (f"{self.service} {how}: {self.failed:,} of {self.calls:,} calls to {self.operation} "
                    f"({share(self.rate)}), {share(self.rate_before)} in the reference")
        if self.step:
            return (f"{self.service} {how} from {fmt_when(self.since_ns, False, 0)}: {self.failed:,} of "
                    f"{self.calls:,} calls to {self.operation} ({share(self.rate)}), {share(self.rate_before)} before")
        return f"{self.service} {how}: {self.failed:,} of {self.calls:,} calls to {self.operation} ({share(self.rate)})"


def share(x: float) -> str:
    """A share of calls in words a ticket reader follows: 28%, 1.5%, 0.03%."""
    return "0%" if x == 0 else f"{x:.0%}" if x >= 0.1 else f"{x:.1%}" if x >= 0.001 else f"{x:.2%}"


@dataclass
class Failures:
    known: bool  # the spans say which failed
    spans: int = 0
    failed_spans: int = 0
    started: int = 0  # failed spans where an error started
    requests: int = 0
    failed_requests: int = 0  # requests whose root span failed (that ran an error handler, where inferred)
    methods: list[FailingMethod] = field(default_factory=list)  # failing ones: starting to fail first
    inferred: bool = False  # the failed spans are those that ran an error handler (no status in the spans)
    after: object = None  # a lost call (lost_calls.LostCall) below where the first method's errors start: their cause
    after_share: float = 0.0  # of those errors, the share over its spans that stopped calling
    how: str = ""  # what was compared
    why: str = ""  # why none, when none
    params: dict = field(default_factory=lambda: dict(PARAMS))


def _rise_p(failed_after, calls_after, failed_total, calls_total) -> np.ndarray:
    """One-sided hypergeometric p: this many failures or more among the calls after, the
    failures placed at random among all the calls."""
    from scipy.stats import hypergeom  # noqa: PLC0415  (scipy.stats: imported where it is used)

    return hypergeom.sf(np.asarray(failed_after) - 1, calls_total, failed_total, calls_after)


TIMEOUT_SHARE = 0.9  # a failed call whose callee took this much of its time gave up waiting on it...
TIMEOUT_SLOWER = 5.0  # ...when the callee's call was this many times as long as its usual (median) one


def started_errors(spans: SpanTable) -> np.ndarray:
    """Per span: an error started there (it failed, none of its children did); all False where
    the spans carry no status. A failed call that gave up waiting (a timeout: one of its children,
    which did not fail, took ``TIMEOUT_SHARE`` of its time or more, and ``TIMEOUT_SLOWER`` times its
    method's median) is not where the error started: that child is, the callee too slow to answer.
    A child that takes most of its caller's time as usual (a search that is mostly its query) is
    not a timeout; durations only, each measured on one host (ends on two hosts' clocks are not
    compared: they are offset). Where the spans carry no status and those that ran an error handler
    are the failed ones (status.from_error_handlers), the spans between two of them (the caller's
    client span, its method's own) say nothing: an error started in a failed span none of whose
    descendants failed."""
    if spans.error is None:
        return np.zeros(len(spans), bool)
    err, parent = spans.error, spans.parent
    if spans.error_inferred:  # only the spans that ran an error handler failed: none deeper is where it started
        child_failed = ancestors(parent, np.flatnonzero(err))
    else:
        child_failed = np.zeros(len(spans), bool)
        child_failed[parent[err & (parent >= 0)]] = True
    started = err & ~child_failed
    # children of such spans that took (nearly) all of their time: the error starts in them
    kids = np.flatnonzero(parent >= 0)
    kids = kids[started[parent[kids]]]
    if len(kids):
        p = parent[kids]
        dur = spans.end - spans.start
        usual = _median_by(spans.method, dur)
        long = (dur[kids] >= TIMEOUT_SHARE * dur[p]) & (dur[kids] >= TIMEOUT_SLOWER * usual[spans.method[kids]])
        slow = kids[long & (spans.end[p] > spans.start[p])]
        started[parent[slow]] = False
        started[slow] = True
    return started


def _median_by(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per group code: the median (upper) of its values."""
    order = np.lexsort((values, group))
    g = group[order]
    ng = int(group.max()) + 1 if len(group) else 0
    first = np.searchsorted(g, np.arange(ng))
    count = np.bincount(group, minlength=ng)
    out = np.zeros(ng, values.dtype)
    has = count > 0
    out[has] = values[order][first[has] + count[has] // 2]
    return out


def _tally(spans: SpanTable, how: str, p: dict) -> tuple[Failures, np.ndarray | None]:
    """What spans with a status hold (spans, failed ones, requests whose root failed, where errors
    started; no method yet) and per span whether an error started there; None where none failed."""
    err = spans.error
    out = Failures(known=True, spans=len(spans), failed_spans=int(err.sum()), requests=len(np.unique(spans.trace)),
                   failed_requests=len(np.unique(spans.trace[err if spans.error_inferred else (spans.parent < 0) & err])),
                   how=how, params=p,
                   inferred=spans.error_inferred)
    if not err.any():
        out.why = f"none of the {count_of(len(spans), 'spans')} failed"
        return out, None
    started = started_errors(spans)
    out.started = int(started.sum())
    return out, started


def failures_against(ref: SpanTable, cur: SpanTable, how: str = "", params: dict | None = None) -> Failures:
    """Which methods' calls fail more in ``cur`` than in the reference spans ``ref`` (methods
    matched by name); where the reference carries no status, each method's own onset in ``cur``."""
    if ref.error is None or cur.error is None:
        return find_failures(cur, params=params)
    p = dict(PARAMS, **(params or {}))
    out, s_cur = _tally(cur, how, p)
    if s_cur is None:
        return out
    s_ref = started_errors(ref)
    n_cur = np.bincount(cur.method, minlength=len(cur.methods))
    f_cur = np.bincount(cur.method[s_cur], minlength=len(cur.methods))
    n_ref = np.bincount(ref.method, minlength=len(ref.methods))
    f_ref = np.bincount(ref.method[s_ref], minlength=len(ref.methods))
    ref_of = {name: i for i, name in enumerate(ref.methods)}
    cand = np.flatnonzero(f_cur >= p["failures_min_failed"]).tolist()
    tested = max(1, len(cand))
    for m in cand:
        r = ref_of.get(cur.methods[m])
        N1, F1 = (int(n_ref[r]), int(f_ref[r])) if r is not None else (0, 0)
        N2, F2 = int(n_cur[m]), int(f_cur[m])
        pk = min(1.0, float(_rise_p(F2, N2, F1 + F2, N1 + N2)) * tested)
        rate2, rate1 = F2 / N2, F1 / N1 if N1 else 0.0
        if N1 and pk < p["failures_alpha"] and rate2 >= p["failures_min_rate"] and rate2 >= p["failures_ratio"] * rate1:
            rows = np.flatnonzero((cur.method == m) & s_cur)
            out.methods.append(FailingMethod(cur.methods[m], cur.services[cur.service[rows[0]]], N2, F2, N1, F1, None,
                                             pk, len(np.unique(cur.trace[rows])), True, True,
                                             int((~cur.error[rows]).sum())))
    out.methods.sort(key=lambda f: (-f.failed_requests, -f.failed, f.method))
    if not out.methods:
        out.why = (f"{count_of(out.started, 'calls')} where an error started; no method's calls fail more than in "
                   "the reference")
    return out


def find_failures(spans: SpanTable, split_ns: int | None = None, how: str = "", params: dict | None = None) -> Failures:
    """Which methods' calls fail (see the module's words); ``split_ns``: compare the requests
    from that time on with those before."""
    p = dict(PARAMS, **(params or {}))
    if spans.error is None:
        return Failures(known=False, why="the spans carry no status (an OTLP status, an error tag or a status "
                                         "column), so which calls failed is not known")
    out, started = _tally(spans, how, p)
    if started is None:
        return out
    err = spans.error
    nm = len(spans.methods)
    methods = np.flatnonzero(np.bincount(spans.method[started], minlength=nm) >= p["failures_min_failed"])
    if not len(methods):
        out.why = (f"{count_of(out.started, 'calls')} where an error started, no method with "
                   f"{p['failures_min_failed']} or more")
        return out
    when = request_start(spans)
    tested = max(1, len(methods))
    found: list[FailingMethod] = []
    for m in methods.tolist():
        rows = np.flatnonzero(spans.method == m)
        rows = rows[np.argsort(when[rows], kind="stable")]
        x = started[rows]
        N, F = len(rows), int(x.sum())
        if split_ns is not None:
            k = int(np.searchsorted(when[rows], split_ns))
            pk = float(_rise_p(F - int(x[:k].sum()), N - k, F, N)) * tested if k < N else 1.0
        else:
            cand = np.flatnonzero(x)  # split at one of its failed calls: its failures from there on
            before = np.cumsum(x)[cand] - 1
            ps = _rise_p(F - before, N - cand, F, N)
            best = int(np.argmin(ps))
            k, pk = int(cand[best]), float(ps[best]) * tested
        fa, ca = int(x[k:].sum()), N - k
        fb, cb = F - fa, k
        rate_a, rate_b = fa / ca if ca else 0.0, fb / cb if cb else 0.0
        step = (cb > 0 and pk < p["failures_alpha"] and fa >= p["failures_min_failed"]
                and rate_a >= p["failures_min_rate"] and rate_a >= p["failures_ratio"] * rate_b)
        service = spans.services[spans.service[rows[0]]]
        if step:
            late = rows[k:][x[k:]]
            found.append(FailingMethod(spans.methods[m], service, ca, fa, cb, fb, int(when[rows[k]]) if split_ns is None
                                       else split_ns, min(pk, 1.0), len(np.unique(spans.trace[late])), True,
                                       timeouts=int((~err[late]).sum())))
        elif F / N >= p["failures_min_rate"] and split_ns is None:
            found.append(FailingMethod(spans.methods[m], service, N, F, failed_requests=len(np.unique(
                spans.trace[rows[x]])), step=False, timeouts=int((~err[rows[x]]).sum())))
    found.sort(key=lambda f: (not f.step, -f.failed_requests, -f.failed, f.method))
    out.methods = found
    if not found:
        out.why = (f"{count_of(out.started, 'calls')} where an error started; no method's calls fail more "
                   + ("after the time compared than before" if split_ns is not None else
                      f"from a time on, nor {p['failures_min_rate']:.0%} of them throughout"))
    return out


def early_return_below(spans: SpanTable, fl: Failures, lost, share_needed: float = 0.5) -> tuple[object, float]:
    """The lost call (lost_calls.LostCall, an early return: a method that stopped making a call)
    whose spans that stopped calling run under ``share_needed`` or more of the spans where the
    first failing method's errors start, from its onset on; and that share. (None, 0) for none.
    A method returning a wrong value early (Nezha's "return" fault) fails nothing itself; its
    caller, given the value, throws: the deepest failure is the caller's, its cause below it."""
    if not fl.methods or not fl.methods[0].step or fl.methods[0].since_ns is None or lost is None or not lost.calls:
        return None, 0.0
    top = fl.methods[0]
    code = {m: i for i, m in enumerate(spans.methods)}
    if top.method not in code:
        return None, 0.0
    when = request_start(spans)
    errs = np.flatnonzero(started_errors(spans) & (spans.method == code[top.method]) & (when >= top.since_ns))
    if not len(errs):
        return None, 0.0
    n = len(spans)
    best, best_share = None, 0.0
    for lc in lost.calls:
        caller, callee = code.get(lc.caller), code.get(lc.callee)
        if caller is None or callee is None or lc.service == top.service:  # (a method that throws stops its calls too)
            continue
        made = np.zeros(n, bool)
        kids = np.flatnonzero((spans.method == callee) & (spans.parent >= 0))
        made[spans.parent[kids]] = True
        missed = np.flatnonzero((spans.method == caller) & (spans.start >= lc.since_ns) & ~made)
        share = float(ancestors(spans.parent, missed)[errs].mean())  # errors over a span that stopped calling
        if share >= share_needed and share > best_share:
            best, best_share = lc, share
    return best, best_share
