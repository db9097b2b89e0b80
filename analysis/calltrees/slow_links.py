"""Calls between services that take far longer between client and server than the others, in
one set of spans, without a baseline: for when nothing was compared over time (the spans of a
fault's own minutes, no time given). A client span's time beyond its server child's is the
network, queues and the callee's ingress: a few milliseconds on every link of a healthy system,
whatever the services do (OnlineBoutique's links: a median of 4-6 ms, the median over links). A
link far above the others points at its callee (a network delay on a pod: every link into it)
or its caller (a pod short of CPU: every link out of it, its client spans waiting for it to
run). Each link (calling service -> called pod, ``min_calls`` calls or more) is slow when its
median is ``ratio`` times the links' usual one (the median over links) and ``min_added_ms``
more: the median, not a tail, which a busy link has of its own (the frontend's many concurrent
calls to the currency service: 90 ms at the 90th percentile in every minute, 6 ms at the median).
A link is also slow from a time on where its calls after that time are (a fault that starts
within the minutes given): the split of its calls by start that best separates their log time,
the calls after it ``min_after`` or more, slower (one-sided Mann-Whitney, p below ``alpha`` with
every link counted; for a link of 200 calls or fewer, exact and below ``few_alpha``: the exact p
of 7 calls after 23 cannot go below 1 / C(30, 7) = 5e-7, so 1e-6 with 20 links counted would
refuse any step of such a link, however slow; a payment service's 30 calls in two minutes, 7 ms
then 584 ms), their median slow as above and ``ratio`` times the median before (the effect,
10x, not the p, keeps a busy link's bursts out). Each service is scored by the share of its links in one role
(called, or calling) that are slow, then by how many."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from perftriage.analysis.spans.table import SpanTable
from perftriage.analysis.stats import mann_whitney_p
from perftriage.analysis.units import count_of, fmt_duration, fmt_when

from .compare import grouped
from .what_changed import higher_after, span_parts

MIN_LINKS = 4  # links with enough calls to say what is usual


@dataclass
class Link:
    caller: str  # service
    callee: str  # pod (replica)
    callee_service: str
    calls: int
    median_ms: float
    p90_ms: float
    method: str  # the caller's client method with the most calls on it
    slow: bool = False
    since_ns: int | None = None  # slow from this time on (its calls after it): median_ms is theirs
    before_ms: float = float("nan")  # the median of its calls before since_ns
    p: float = float("nan")  # the split's Mann-Whitney p, times the links tested
    calls_after: int = 0  # its calls from since_ns on
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)  # its client spans by
    # start, while it is judged (emptied after: the result, sent to the app, keeps its figures)


@dataclass
class LinkSuspect:
    service: str
    role: str  # "callee" or "caller"
    slow: list[Link]  # its slow links in that role, slowest first
    links: int  # its links in that role
    other_role: int  # its slow links in the other role

    def headline(self, usual_ms: float) -> str:
        """'calls into cartservice (cartservice-579f59597d-wc2lz) take 248 ms between client and
        server (median, 2 of its 2 links; other links 5.2 ms)'."""
        worst = self.slow[0]
        what = (f"calls into {self.service} ({worst.callee})" if self.role == "callee" else
                f"{self.service}'s calls to other services")
        share = f"{len(self.slow)} of its {self.links} links" if self.links > 1 else "its one link"
        since, before = ((f" from {fmt_when(worst.since_ns, False, 0)} on", f"{_ms(worst.before_ms)} before; ")
                         if worst.since_ns is not None else ("", ""))
        return (f"{what} take {_ms(worst.median_ms)} between client and server{since} (median, {share}; {before}"
                f"other links {_ms(usual_ms)})")


@dataclass
class SlowLinks:
    links: list[Link]
    usual_ms: float  # the median over links of their median
    suspects: list[LinkSuspect]  # none where no link is slow (why says so)
    params: dict = field(default_factory=dict)
    why: str = ""  # where no link is slow: the slowest against the usual, or too few links to say


def slow_links(sp: SpanTable, min_calls: int = 20, ratio: float = 10.0, min_added_ms: float = 50.0,
               min_after: int = 5, alpha: float = 1e-6, few_alpha: float = 1e-4) -> SlowLinks:
    """The links between services and how slow each is, slowest first, and the services the slow
    ones point at; where none is, why (too few links with calls enough to say what is usual: the
    usual NaN)."""
    P = span_parts(sp)
    has = np.flatnonzero((P.gap >= 0) & (P.callee >= 0))
    has = has[np.argsort(sp.start[has], kind="stable")]  # each link's calls by start
    nr = max(1, len(sp.replicas))
    service_of = np.zeros(nr, np.int64)
    service_of[sp.replica] = sp.service  # a pod's service
    links = []
    for k, rows in grouped(P.svc[has] * nr + P.callee[has], has).items():
        if len(rows) < min_calls:
            continue
        g = P.gap[rows] / 1e6
        callee = k % nr
        links.append(Link(sp.services[k // nr], sp.replicas[callee], sp.services[int(service_of[callee])], len(rows),
                          float(np.median(g)), float(np.quantile(g, 0.9)),
                          sp.methods[int(np.bincount(P.method[rows]).argmax())], rows=rows))
    params = {"links_min_calls": min_calls, "links_ratio": ratio, "links_min_added_ms": min_added_ms,
              "links_min_after": min_after, "links_alpha": alpha, "links_few_alpha": few_alpha}
    if len(links) < MIN_LINKS:
        for x in links:
            x.rows = x.rows[:0]
        return SlowLinks(links, float("nan"), [], params, f"{count_of(len(links), 'links')} between services with "
                         f"{min_calls} calls or more: too few to say what is usual")
    usual = float(np.median([x.median_ms for x in links]))

    def is_slow(ms: float) -> bool:
        return ms >= ratio * usual and ms - usual >= min_added_ms

    for x in links:
        x.slow = is_slow(x.median_ms)
        if not x.slow:
            _step(sp, P.gap, x, len(links), is_slow, ratio, min_after, alpha, few_alpha)
        x.rows = x.rows[:0]  # what the result keeps of a link is its figures
    by_median = sorted(links, key=lambda x: -x.median_ms)
    if not any(x.slow for x in links):
        return SlowLinks(by_median, usual, [], params,
                         f"no link between services much slower than the others (the slowest: {by_median[0].caller} -> "
                         f"{by_median[0].callee_service}, median {by_median[0].median_ms:,.1f} ms, usual {usual:,.1f} ms)")
    roles = {}  # (service, role) -> (slow links, links)
    for x in links:
        for s, role in ((x.callee_service, "callee"), (x.caller, "caller")):
            slow, n = roles.get((s, role), ([], 0))
            roles[(s, role)] = (slow + [x] if x.slow else slow, n + 1)
    suspects = []
    for (s, role), (slow, n) in roles.items():
        if slow:
            other = roles.get((s, "caller" if role == "callee" else "callee"), ([], 0))[0]
            suspects.append(LinkSuspect(s, role, sorted(slow, key=lambda x: -x.median_ms), n, len(other)))
    suspects.sort(key=lambda t: (-len(t.slow) / t.links, -len(t.slow) - t.other_role, -t.slow[0].median_ms))
    seen, ranked = set(), []
    for t in suspects:  # one entry per service, its stronger role
        if t.service not in seen:
            seen.add(t.service)
            ranked.append(t)
    return SlowLinks(by_median, usual, ranked, params)


def _step(sp: SpanTable, gap: np.ndarray, x: Link, tested: int, is_slow, ratio: float, min_after: int,
          alpha: float, few_alpha: float) -> None:
    """Mark ``x`` slow from the time its calls became so, where they did clearly."""
    n = len(x.rows)
    v = np.log(np.maximum(gap[x.rows].astype(np.float64), 1.0))
    k = np.arange(min_after, n - min_after + 1)  # min_after calls or more on each side
    if not len(k):
        return
    i = higher_after(v, k)
    after, before = float(np.median(gap[x.rows[i:]])) / 1e6, float(np.median(gap[x.rows[:i]])) / 1e6
    if not is_slow(after) or after < ratio * before:
        return
    if n <= 200:  # few calls: the exact distribution (the normal one says 1e-5 for 8 calls above 28)
        from scipy.stats import mannwhitneyu  # noqa: PLC0415

        p = float(mannwhitneyu(v[i:], v[:i], alternative="greater", method="exact").pvalue)
        alpha = few_alpha
    else:
        p = mann_whitney_p(v[i:], v[:i], "greater")
    if p * tested < alpha:
        x.slow, x.since_ns, x.median_ms, x.before_ms, x.p = True, int(sp.start[x.rows[i]]), after, before, p * tested
        x.calls_after = n - i


def _ms(ms: float) -> str:
    return fmt_duration(ms * 1e6)
