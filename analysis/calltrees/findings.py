"""Findings of the call-tree analyses: the (method, replica) pairs CloudDiag ranks, the categories
table, the read problems of the span files, and the baseline-vs-incident comparison."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
from perftriage.analysis.findings import Finding, Table
from perftriage.analysis.spans.table import SpanTable
from perftriage.analysis.units import count_of, fmt_duration, fmt_ratio, fmt_when

from .clouddiag import Diagnosis, RankedPair
from .compare import Change, Comparison
from .failures import share
from .what_changed import ChangeDiagnosis


def short_shape(shape: str, width: int = 70) -> str:
    return shape if len(shape) <= width else shape[: width - 1] + "…"


def category_name(shape: str) -> str:
    """The root method of a shape: what users call the request type."""
    return shape.split("(", 1)[0]


def _ms(v: float) -> str:
    if not np.isfinite(v):
        return "-"
    if v >= 1000:
        return f"{v / 1000:.2f} s"
    if v >= 10:
        return f"{v:.1f} ms"
    return f"{v:.2f} ms"


def categories_table(diag: Diagnosis) -> Table:
    rows = []
    names = diag.trees.spans.methods
    for res in diag.categories:
        c = res.category
        anomalous = ", ".join(sorted({names[c.methods[j]] for j in res.anomalous_columns}))
        rows.append([c.index + 1, category_name(c.shape), c.size, c.width, round(res.mean_ms, 3), round(res.p99_ms, 3),
                     round(res.cv, 3), "yes" if res.analysed else f"no ({res.reason})",
                     round(float(res.beta.min()), 3) if res.beta is not None else "-", anomalous or "-"])
    return Table(["#", "root method", "requests", "calls", "mean ms", "p99 ms", "CV", "analysed", "min beta",
                  "anomalous methods"], rows, caption="Request categories by call-tree shape")


def pair_evidence(diag: Diagnosis, p: RankedPair) -> list[str]:
    analysed = sum(r.analysed for r in diag.categories)
    cats = sorted({e.category for e in p.evidence})
    first = diag.categories[cats[0]]
    cat_names = ", ".join(f"{category_name(diag.categories[c].category.shape)} "
                          f"({diag.categories[c].category.size:,} requests, CV {diag.categories[c].cv:.2f})"
                          for c in cats[:3])
    more = f" and {len(cats) - 3} more" if len(cats) > 3 else ""
    kind = "self" if diag.params.times == "self" else "total"
    ev = []
    if p.peers:
        ratio = p.ratio
        ev.append(f"{kind} time median {_ms(p.replica_median_ms)} on {p.replica_name} against {_ms(p.peers_median_ms)} "
                  f"on its {count_of(p.peers, 'other replicas')}" + (f" ({fmt_ratio(ratio)})" if np.isfinite(ratio) else ""))
    else:
        ev.append(f"{kind} time median {_ms(p.replica_median_ms)} on {p.replica_name} (the only replica running it)")
    ev.append(f"slow in {p.categories} of {count_of(analysed, 'categories', 'analysed')} of requests: {cat_names}{more}")
    ev.append(f"{p.flagged:,} of its {p.calls:,} calls there took longer than the other calls of the same "
              f"requests predict, {_ms(p.error_ms)} more in all")
    hows = {e.how for e in p.evidence}
    if "peers" in hows:
        ev.append(f"it has many more such slow calls than its other replicas (p < {diag.params.p_value:g})")
    if "onset" in hows:
        ev.append("its slow calls became more frequent at one point in time, on this replica as on the others: the "
                  f"method got slow everywhere (p < {diag.params.p_value:g} against before)")
    if p.onset_ns is not None and np.isfinite(p.before_share) and p.before_share < 0.5 * p.after_share:
        ev.append(f"it started at {fmt_when(p.onset_ns)}: since then {p.after_share:.0%} of its calls there are "
                  f"slow, before {p.before_share:.0%}")
    ev.append(f"details: beta {p.min_beta:.3f} (threshold {diag.params.beta:g}), the distance of the method's column "
              f"from the low-rank part of the call-time matrix (Robust PCA, {first.iterations} iterations); a slow "
              f"call has an error E above {diag.params.e_z:g} robust sd of its column; p from a one-sided binomial "
              "test of the share of slow calls")
    return ev


def diagnosis_findings(diag: Diagnosis, top: int = 10) -> list[Finding]:
    params = diag.parameters()
    out = []
    n_flag = len(diag.ranking)
    # a method flagged on every replica that runs it: one finding for the method
    by_method: dict[int, list[RankedPair]] = {}
    for p in diag.ranking:
        by_method.setdefault(p.method, []).append(p)
    whole = {m for m, ps in by_method.items() if len(ps) >= 2 and len(ps) == ps[0].peers + 1}
    for m in whole:
        ps = by_method[m]
        first = ps[0]
        onset = min((p.onset_ns for p in ps if p.onset_ns is not None), default=None)
        rows = [[p.replica_name, p.categories, round(p.min_beta, 3), p.flagged, p.calls,
                 round(p.after_share, 3) if np.isfinite(p.after_share) else "-",
                 round(p.before_share, 3) if np.isfinite(p.before_share) else "-"] for p in ps]
        ev = pair_evidence(diag, first)
        ev[2] = f"flagged on all {len(ps)} replicas that run it: " + ", ".join(p.replica_name for p in ps)
        if onset is not None:
            sp = diag.trees.spans
            sel = sp.method == m
            t = diag.method_time[sel] / 1e6
            after = sp.start[sel] >= onset
            if after.any() and (~after).any():
                kind = "self" if diag.params.times == "self" else "total"
                ev.insert(3, f"{kind} time median {_ms(float(np.median(t[after])))} since then against "
                             f"{_ms(float(np.median(t[~after])))} before ({after.sum():,} and {(~after).sum():,} calls)")
        out.append(Finding(
            analysis="calltrees",
            title=f"{first.method_name} is slow on every replica" + (f" since {fmt_when(onset)}" if onset else ""),
            target={"kind": "pair", "method": first.method_name, "replica": None},
            subject=f"method {first.method_name}, all {len(ps)} replicas (rank {diag.ranking.index(first) + 1} "
                    f"of {n_flag})",
            score=float(first.categories * 1e6 + sum(p.error_ms for p in ps)) / 1e3,
            severity="critical", evidence=ev,
            tables=[Table(["replica", "categories", "beta", "anomalous calls", "calls", "share since onset",
                           "share before"], rows, caption="Per replica")],
            parameters=params))
    for rank, p in enumerate(diag.ranking[:top]):
        if p.method in whole:
            continue
        rows = []
        for e in p.evidence:
            res = diag.categories[e.category]
            rows.append([category_name(res.category.shape), e.column, round(e.beta, 3), e.calls, e.flagged,
                         round(e.median_ms, 3), round(e.peers_median_ms, 3) if np.isfinite(e.peers_median_ms) else "-",
                         round(e.error_ms, 1)])
        severe = p.categories >= 1 and (not np.isfinite(p.ratio) or p.ratio >= 1.5 or p.peers == 0)
        out.append(Finding(
            analysis="calltrees",
            title=f"{p.method_name} is slow on {p.replica_name}",
            target={"kind": "pair", "method": p.method_name, "replica": p.replica_name},
            subject=f"method {p.method_name}, replica {p.replica_name} (rank {rank + 1} of {n_flag})",
            score=float(p.categories * 1e6 + p.error_ms) / 1e3,
            severity="critical" if severe and rank < 3 else "warning",
            evidence=pair_evidence(diag, p),
            tables=[Table(["category", "column", "beta", "calls", "anomalous calls", "median ms", "peers median ms",
                           "error ms"], rows, caption="Evidence per category")],
            parameters=params,
        ))
    analysed = [r for r in diag.categories if r.analysed]
    anomalous = [r for r in analysed if r.anomalous]
    ev = [f"{count_of(len(diag.categories), 'categories')} of "
          f"{count_of(sum(r.category.size for r in diag.categories), 'requests')} "
          f"({count_of(diag.trees.incomplete, 'requests')} without a complete call tree left out)",
          f"{len(analysed)} analysed (CV > {diag.params.alpha:g}, at least {diag.params.min_requests} requests), "
          f"{len(anomalous)} with anomalous methods (beta < {diag.params.beta:g})",
          f"{count_of(n_flag, '(method, replica) pairs')} flagged" + (f"; first: {diag.ranking[0].method_name} on "
                                                          f"{diag.ranking[0].replica_name}" if n_flag else "")]
    if diag.params.times == "self":
        ev.append("method times are self times (duration minus callees'), so a slow callee does not make its "
                  "callers look slow")
    out.append(Finding(analysis="calltrees", title="Call-tree categories (CloudDiag)",
                       subject=f"{len(diag.trees.spans):,} spans", score=0.0,
                       severity="warning" if n_flag else "info", evidence=ev,
                       tables=[categories_table(diag)], parameters=params,
                       target={"kind": "pane", "pane": "calltrees", "part": "categories"}))
    return out


def span_problem_findings(spans: SpanTable) -> list[Finding]:
    """The data's own problems, as information listed after every diagnosis (a broken span is
    never the culprit); nothing when all that happened was harmless (repeated identical spans,
    roots marked with an id of their own: see :meth:`SpanProblems.lines`, given as notes)."""
    if not spans.problems.total():
        return []
    lines = spans.problems.lines()
    ev = lines + [f"example: {d}" for d in spans.problems.details]
    ev.append("such spans are kept where possible (negative durations as 0); requests that do not form one call "
              "tree are left out of the categories")
    return [Finding(analysis="calltrees", title="Span data quality: some spans are broken",
                    subject=", ".join(spans.sources) or "spans", score=-1.0, severity="info", evidence=ev)]


def _change_row(c: Change) -> list:
    return [c.name if c.kind != "category" else short_shape(c.name, 60), c.ref_n, c.n, round(c.ref_median_ms, 3),
            round(c.median_ms, 3), round(c.ref_p95_ms, 3), round(c.p95_ms, 3),
            f"{c.ratio:.2f}x" if np.isfinite(c.ratio) else "-", f"{c.p:.2g}" if np.isfinite(c.p) else "-"]


CHANGE_COLUMNS = ["name", "ref n", "n", "ref median ms", "median ms", "ref p95 ms", "p95 ms", "median ratio", "p"]


def comparison_findings(cmp: Comparison, top: int = 10) -> list[Finding]:
    params = {"min_ratio": cmp.params.min_ratio, "p_value": cmp.params.p_value, "min_calls": cmp.params.min_calls,
              "times": cmp.params.times, "test": "Mann-Whitney U, two-sided"}
    out = []
    for c in cmp.slower("methods")[:top]:
        reps = [r for r in cmp.slower("replicas") if r.name.startswith(c.name + " @ ") and r.ratio >= cmp.params.min_ratio]
        allr = [r for r in cmp.replicas if r.name.startswith(c.name + " @ ")]
        ev = [f"median {_ms(c.median_ms)} against {_ms(c.ref_median_ms)} in the reference ({fmt_ratio(c.ratio)}), "
              f"p95 {_ms(c.p95_ms)} against {_ms(c.ref_p95_ms)} ({fmt_ratio(c.p95_ratio)}); {c.n:,} calls against {c.ref_n:,} "
              f"(p = {c.p:.2g})"]
        if allr:
            ev.append(f"slower on {len(reps)} of its {count_of(len(allr), 'replicas')}" +
                      (": " + ", ".join(r.name.split(' @ ')[1] + f" (median {fmt_ratio(r.ratio)})" for r in reps[:6])
                       if reps else ""))
        ev.append("details: p from a two-sided Mann-Whitney U test of the calls' times, incident against reference")
        which = "median" if c.ratio >= c.p95_ratio else "p95"
        out.append(Finding(analysis="calltrees",
                           title=f"{c.name} got slower than in the reference ({which} {fmt_ratio(c.change)})",
                           subject=f"method {c.name}", score=float(c.change), severity="warning", evidence=ev,
                           tables=[Table(CHANGE_COLUMNS, [_change_row(r) for r in allr[:20]],
                                         caption="Per replica, reference beside incident")] if allr else [],
                           parameters=params, target={"kind": "pair", "method": c.name, "replica": None}))
    slower_cats = cmp.slower("categories")
    ev = [f"{len(slower_cats)} of {len(cmp.categories)} request categories found in both got slower, "
          f"{len(cmp.slower('methods'))} of {len(cmp.methods)} methods"]
    if cmp.new_categories:
        ev.append(f"{len(cmp.new_categories)} call-tree shapes only in the incident ({sum(n for _, n in cmp.new_categories):,} "
                  "requests): " + ", ".join(short_shape(s, 50) for s, _ in cmp.new_categories[:3]))
    if cmp.gone_categories:
        ev.append(f"{len(cmp.gone_categories)} shapes only in the reference")
    out.append(Finding(analysis="calltrees", title="Against the reference: categories and methods",
                       subject="incident spans against reference spans", score=float(len(slower_cats)),
                       severity="warning" if slower_cats or cmp.slower("methods") else "info", evidence=ev,
                       tables=[Table(CHANGE_COLUMNS, [_change_row(c) for c in cmp.categories],
                                     caption="Request latency per category"),
                               Table(CHANGE_COLUMNS, [_change_row(c) for c in cmp.methods[:30]],
                                     caption="Method time, slowest changes first")],
                       parameters=params, target={"kind": "pane", "pane": "calltrees"}))
    return out


def _method_change_finding(ch: ChangeDiagnosis, params: dict, lead: bool) -> Finding:
    """The method whose calls changed over time (what_changed.method_split): the observation
    that gave the time, with each replica's calls before and after; ``lead``: the report's first."""
    m = ch.method
    (nb, mb), (na, ma) = m.before, m.after
    ev = [m.method + (f" on {m.replica}" if m.replica else "")
          + f": its own time (its callees' left out) median {_ms_text(mb)} over {nb:,} calls before, "
          f"{_ms_text(ma)} over {na:,} calls from "
          f"{fmt_when(m.at_ns)} on ({m.ratio:.2f}x)"]
    if np.isfinite(m.share):
        ev.append(f"it adds {m.share:.1%} to the time of the requests that call it (median {_ms_text(m.request_ms)} "
                  "from then on)")
    ev += [f"{r}: {_ms_text(b)} -> {_ms_text(a)} ({a / max(b, 1e-9):.2f}x; {n_b:,} and {n_a:,} calls)"
           for r, n_b, b, n_a, a in m.replicas[:8]]
    n = m.params.get('method_min_calls', 100)
    ev.append(f"details: of the {m.methods or m.tested} methods called {n} times or more"
              + (f" and the replicas of those called {2 * n} times or more" if m.tested > m.methods else "")
              + (f", the one (the calls of {m.method} on {m.replica}) whose" if m.replica else ", the one whose")
              + " own time changed most clearly over time (the requests as a whole did not): Mann-Whitney p = "
              f"{m.p:.2g} with the {m.tested} tests counted; the requests are compared at that time (what changed, "
              "per service)")
    return Finding(analysis="calltrees", title=m.headline(),
                   subject=f"method {m.method}" + (f", replica {m.replica}" if m.replica else ""),
                   score=2e9 if lead else 1e9 - 10, severity="critical" if lead else "warning", evidence=ev,
                   parameters={**params, **m.params}, target={"kind": "method", "method": m.method})


def _ms_text(ms: float) -> str:
    return fmt_duration(ms * 1e6)


def change_findings(ch: ChangeDiagnosis, top: int = 3) -> list[Finding]:
    """What changed against the minutes before, per service and pod, most explained first (see
    :mod:`.what_changed`); the first is the diagnosis a ticket leads with."""
    params = {k: v for k, v in asdict(ch.params).items()}
    params.update({"compared": ch.how, "reference requests": ch.ref_requests, "requests": ch.requests})
    # the method whose calls gave the time: the lead where the requests compared there name no
    # service, else after the services they name (its own steps can be a busy service's usual
    # ones: a real cart's GetCart 1.3x from one minute to the next)
    out = [] if ch.method is None else [_method_change_finding(ch, params, lead=not ch.suspects)]
    n = len(ch.suspects)
    for rank, s in enumerate(ch.suspects[:top]):
        ev = [f"{s.service} on pod {s.pod}: {s.headline()}"]
        ev += [e.sentence() for e in s.evidence[:6]]
        if len(s.evidence) > 6:
            ev.append(f"... and {len(s.evidence) - 6} more changes")
        ev.append(f"{s.slow_edges} of its {count_of(s.edges, 'edges')} (calls into or out of it)"
                  + (f" and {s.slow_methods} of its {count_of(s.methods, 'own methods')}" if s.methods else "")
                  + (" got slower" if s.methods or s.edges else " changed")
                  + ("; 1 kind of call it makes was lost" if s.lost_calls == 1 else
                     f"; {s.lost_calls} kinds of calls it makes were lost" if s.lost_calls else ""))
        ev.append(f"compared: {ch.how}; {count_of(ch.requests, 'requests')} against {ch.ref_requests:,}")
        title = (f"{s.service} changed most (pod {s.pod}): " if rank == 0 else
                 f"{s.service} changed too (pod {s.pod}, {rank + 1} of {n}): ") + s.headline()
        out.append(Finding(analysis="calltrees", title=title, subject=f"service {s.service}, pod {s.pod}",
                           score=1e9 - rank, severity="critical" if rank == 0 else "warning", evidence=ev,
                           parameters=params, target={"kind": "pod", "pod": s.pod, "service": s.service}))
    return out


def slow_replica_findings(slow: list, top: int = 3) -> list[Finding]:
    """Replicas slower than their peers at the same methods (slow_replicas.py), where CloudDiag
    flagged nothing: one finding per replica, the most certain first."""
    out = []
    for rank, s in enumerate(slow[:top]):
        ev = [f"{m}: its own time (its callees' left out) median {_ms_text(med)} over {n:,} calls on {s.replica}, "
              f"{_ms_text(peer)} over {n_p:,} calls on the service's {s.peers} other replicas ({ratio:.2f}x)"
              + (f"; it adds {added:.1%} to the time of the requests that call it there" if np.isfinite(added) else "")
              for m, ratio, med, peer, n, n_p, added in s.methods[:8]]
        ev.append(f"details: each method's calls on one replica against its calls on the others (services of three "
                  f"replicas or more), one-sided Mann-Whitney, p = {s.p:.2g} with the {s.tested} (method, replica) "
                  "pairs tested counted; CloudDiag's Robust PCA flagged no pair (their columns stay near the "
                  "low-rank part where the methods are a small part of the requests)")
        out.append(Finding(analysis="calltrees", title=s.headline(), subject=f"service {s.service}, replica {s.replica}",
                           score=1e6 - rank, evidence=ev,
                           # as a flagged pair's: critical from 1.5x (a replica's usual spread is less)
                           severity="critical" if rank == 0 and s.methods[0][1] >= 1.5 else "warning",
                           parameters=dict(s.params), target={"kind": "method", "method": s.methods[0][0]}))
    return out


def slow_link_findings(sl) -> list[Finding]:
    """Calls between services far slower between client and server than the others
    (slow_links.py), where nothing was compared over time: the service they point at first."""
    if not sl.suspects:
        return []
    t = sl.suspects[0]
    def link(x) -> str:
        if x.since_ns is None:
            return (f"{x.caller} -> {x.callee}: median {_ms_text(x.median_ms)}, 90th percentile {_ms_text(x.p90_ms)} "
                    f"over {x.calls:,} calls ({x.method})")
        return (f"{x.caller} -> {x.callee}: median {_ms_text(x.median_ms)} over the {x.calls_after:,} calls from "
                f"{fmt_when(x.since_ns)} on, {_ms_text(x.before_ms)} over the {x.calls - x.calls_after:,} "
                f"before ({x.method}; one-sided Mann-Whitney p = {x.p:.2g} with every link counted)")

    ev = [link(x) for x in t.slow[:8]]
    ev.append(f"the other links between services: median {_ms_text(sl.usual_ms)} (the median over the "
              f"{len(sl.links)} links of {sl.params['links_min_calls']} calls or more)")

    def role(o) -> str:
        way = "in" if o.role == "callee" else "out"
        return f"{o.service} ({len(o.slow)} of its {o.links} links {way})" if o.links > 1 else \
            f"{o.service} (its one link {way})"

    if len(sl.suspects) > 1:
        ev.append("also on slow links: " + ", ".join(role(o) for o in sl.suspects[1:4]))
    means = ("every link into a pod slow: its network or ingress" if t.role == "callee" else
             "every link out of a service slow: its client spans waiting for it to run (CPU)")
    ev.append("details: a client span's time beyond its server span's is the network, queues and the callee's "
              "ingress, a few milliseconds on every link of a healthy system; a link is slow when its median is "
              f"{sl.params['links_ratio']:g}x the links' usual and {sl.params['links_min_added_ms']:g} ms more, or "
              f"when its calls from a time on are (and {sl.params['links_ratio']:g}x its calls before); {means}; the "
              "requests were not compared over time (give --incident-time or --reference for that)")
    pod = t.slow[0].callee if t.role == "callee" else None
    return [Finding(analysis="calltrees", title=t.headline(sl.usual_ms),
                    subject=f"service {t.service}" + (f", pod {pod}" if pod else ""), score=2e9 - 1,
                    severity="critical", evidence=ev, parameters=dict(sl.params),
                    target={"kind": "method", "method": max(t.slow, key=lambda x: x.calls).method})]


def failure_findings(fl) -> list[Finding]:
    """Calls that fail (failures.py): the method where the requests' errors start first."""
    if not fl.known or not fl.methods:
        return []

    def line(f) -> str:
        if f.reference:
            return (f"{f.service}: {f.failed:,} of {f.calls:,} calls to {f.operation} failed ({share(f.rate)}), "
                    f"{f.failed_before:,} of {f.calls_before:,} ({share(f.rate_before)}) in the reference; "
                    f"{count_of(f.failed_requests, 'requests')} with an error started there (hypergeometric p = "
                    f"{f.p:.2g} with every method counted)")
        if f.step:
            return (f"{f.service}: {f.failed:,} of {f.calls:,} calls to {f.operation} failed ({share(f.rate)}) from "
                    f"{fmt_when(f.since_ns)} on, {f.failed_before:,} of {f.calls_before:,} "
                    f"({share(f.rate_before)}) before; {count_of(f.failed_requests, 'requests')} with an error "
                    f"started there (hypergeometric p = {f.p:.2g} with every method counted)")
        return (f"{f.service}: {f.failed:,} of {f.calls:,} calls to {f.operation} fail ({share(f.rate)}), "
                f"throughout the spans; {count_of(f.failed_requests, 'requests')} with an error started there")

    top = fl.methods[0]
    title = top.headline() + ("; its callers give up waiting on it" if top.timeouts * 2 >= top.failed else
                              f"; after {fl.after.service}'s early returns below it" if fl.after is not None else
                              "; the requests' errors start there")
    ev = [line(f) + (f"; {f.timeouts:,} of its calls did not fail themselves: their callers gave up waiting "
                     "(far slower than usual, most of the caller's time)" if f.timeouts else "")
          for f in fl.methods[:8]]
    if fl.after is not None:
        ev.insert(1, f"in {fl.after_share:.0%} of the requests where its errors start, below it: {fl.after.headline()} "
                     "(an early return with a value its callers then fail on: the errors follow from it)")
    if len(fl.methods) > 8:
        ev.append(f"and {count_of(len(fl.methods) - 8, 'other methods')} failing")
    ev.append(f"{fl.failed_requests:,} of {fl.requests:,} requests "
              + ("ran an error handler, " if fl.inferred else "failed (their root span), ") +
              f"{fl.failed_spans:,} of {fl.spans:,} spans; {fl.started:,} of those spans are where an error started")
    p = fl.params
    where = ("details: the spans carry no status: a span that ran an error handler failed, and one none of whose "
             "descendants ran one is where an error started (its callers' that failed because of it are not counted)"
             if fl.inferred else "details: a failed span whose children did not fail is where an error started (its "
             "callers' spans that failed because of it are not counted)")
    ev.append(where + ", unless it gave up waiting on a child that took 90% of its time "
              "and 5x that method's median (a timeout: the error starts in that child); "
              + (f"compared: {fl.how}; " if fl.how else "each method's calls split where its failures start; ")
              + f"a method fails when {p['failures_min_failed']} calls or more fail, {p['failures_ratio']:g}x its "
              f"rate before and {share(p['failures_min_rate'])} of its calls or more, the rise below p = "
              f"{p['failures_alpha']:g} with every method counted (one-sided hypergeometric test)")
    severity = "critical" if top.step else ("warning" if top.rate >= 0.05 else "info")
    return [Finding(analysis="calltrees", title=title, subject=f"service {top.service}",
                    # failing throughout (no onset): no change of the incident's, so after what changed over
                    # time and the services that changed most (1e9 down), ahead of CloudDiag's pairs
                    score=3e9 if top.step else 5e8, severity=severity, evidence=ev, parameters=dict(p),
                    target={"kind": "failing", "method": top.method})]


def lost_call_findings(lc) -> list[Finding]:
    """Calls a method stops making from a time on (lost_calls.py), where nothing was compared over
    time: the service whose method stopped calling first."""
    if lc is None or not lc.calls:
        return []
    top = lc.calls[0]

    def line(c) -> str:
        return (f"{c.caller} -> {c.callee}: {c.with_after:,} of its {c.calls_after:,} calls from "
                f"{fmt_when(c.since_ns)} on made it ({share(c.rate_after)}), {c.with_before:,} of the "
                f"{c.calls_before:,} before ({share(c.rate_before)}); hypergeometric p = {c.p:.2g} with every pair "
                "counted" + (f"; in the same requests as {c.follows}'s, deeper: it follows from them" if c.follows
                             else ""))

    ev = [line(c) for c in lc.calls[:6]]
    others = sorted({c.service for c in lc.calls[1:]} - {top.service})
    if others:
        ev.append("also stopping calls: " + ", ".join(others[:4]))
    p = lc.params
    ev.append("details: each method's spans by start, whether each made a call to another method; the split where its "
              "calls after are fewest for what was before (one-sided hypergeometric test, "
              f"{lc.tests} caller-callee pairs counted, p below {p['lost_alpha']:g}), {share(p['lost_min_rate'])} of the "
              f"spans or more making it before and a {p['lost_ratio']:g}th of that or less after: a service that "
              "returns early or fails stops calling what it called; the requests were not compared over time (give "
              "--incident-time or --reference for that)")
    why = "; it returns early or fails before them"
    if top.after:
        why += f", right after calling {top.after} (which, failing, would look the same)"
    return [Finding(analysis="calltrees", title=top.headline() + why,
                    subject=f"service {top.service}", score=2e9 - 2, severity="critical", evidence=ev,
                    parameters=dict(p), target={"kind": "method", "method": top.caller})]
