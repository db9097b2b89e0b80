"""The request pipeline after the features: outliers, their clusters, the n-grams that explain
each cluster, and the findings a ticket needs (one per cluster)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.findings import Finding, Table
from perftriage.analysis.units import fmt_duration, fmt_ratio

from .clusters import ClusterParams, ClusterResult, cluster_outliers, merge
from .features import FeatureTable
from .findings import count_of, unit_noun
from .ngrams import NgramRow, distinctive_ngrams
from .outliers import OutlierParams, OutlierResult, detect_outliers
from .states import STATE_WORDS


@dataclass
class RequestAnalysis:
    outliers: OutlierResult
    clusters: ClusterResult
    ngrams: dict[int, list[NgramRow]]
    timings: dict[str, float] = field(default_factory=dict)

    def cluster_of(self, i: int) -> int:
        return int(self.clusters.label[i])


def analyze_requests(ft: FeatureTable, outlier_params: OutlierParams | None = None,
                     cluster_params: ClusterParams | None = None) -> RequestAnalysis:
    t0 = time.perf_counter()
    out = detect_outliers(ft, outlier_params)
    t1 = time.perf_counter()
    cl = cluster_outliers(ft, out.outlier, cluster_params)
    t2 = time.perf_counter()
    ng = distinctive_ngrams(ft.syscalls, cl.label, cl.k)
    if (cluster_params is None or cluster_params.k is None) and cl.k > 1:  # (a k given is kept)
        into = same_calls(ft, cl, ng)
        if into.max() + 1 < cl.k:
            merge(ft, cl, into, "set apart by the same system calls, as long")
            ng = distinctive_ngrams(ft.syscalls, cl.label, cl.k)
    t3 = time.perf_counter()
    return RequestAnalysis(out, cl, ng, {"outliers": t1 - t0, "clustering": t2 - t1, "ngrams": t3 - t2})


#: clusters merge when the n-gram that sets each apart is the same, this far from the normal
#: requests (effect: made once more per request than they do) ...
SAME_CALLS_EFFECT = 0.8
SAME_CALLS_DURATION = 1.5  # ... and their median durations are within this factor


def same_calls(ft: FeatureTable, cl: ClusterResult, ngrams: dict[int, list[NgramRow]]) -> np.ndarray:
    """Clusters of one cause split by how their requests waited around it: a request syncing a
    file per call, 50 of them in three clusters by whether the sync ran on, waited for a CPU or
    for a task not followed, each set apart by `read close fdatasync` (a perf recording of a
    thread pool). Clusters whose headline n-gram (the findings' 'system calls that set them
    apart') is the same, made at least ``SAME_CALLS_EFFECT`` more per request than the normal
    requests, and whose median durations are within ``SAME_CALLS_DURATION``, are one (cluster ->
    new label)."""
    k = cl.k
    head = []
    for c in range(k):
        g = ngrams.get(c) or []
        best = _pick_gram(g) if g else None
        head.append(best.ngram if best is not None and best.effect >= SAME_CALLS_EFFECT else None)
    median = np.array([np.median(ft.total[cl.label == c]) if (cl.label == c).any() else 0.0 for c in range(k)])
    parent = list(range(k))
    for a in range(k):
        for b in range(a + 1, k):
            lo, hi = sorted((median[a], median[b]))
            if head[a] is not None and head[a] == head[b] and lo > 0 and hi <= SAME_CALLS_DURATION * lo:
                ra, rb = parent[a], parent[b]
                parent = [ra if p == rb else p for p in parent]
    _, into = np.unique(parent, return_inverse=True)
    return into


def dominant_states(ft: FeatureTable, rows: np.ndarray, top: int = 2) -> list[tuple[str, float]]:
    """The states that hold most of the time of a group of requests, with their share."""
    if len(rows) == 0:
        return []
    tot = ft.durations[rows].sum(axis=0)
    share = tot / max(float(tot.sum()), 1.0)
    order = np.argsort(-share)[:top]
    return [(ft.states[k], float(share[k])) for k in order if share[k] > 0]


def elsewhere_evidence(ft: FeatureTable, rows: np.ndarray) -> list[str]:
    """Where the critical paths of ``rows`` crossed to other traced hosts: the share of their
    time spent there, per host (empty when they did not)."""
    hosts, ns = ft.fields.get("elsewhere_host"), ft.fields.get("elsewhere_ns")
    if hosts is None or ns is None or not ns[rows].any():
        return []
    total = float(ft.total[rows].sum()) or 1.0
    parts = []
    for h in sorted({x for x in hosts[rows].tolist() if x}):
        m = rows[hosts[rows] == h]
        parts.append(f"{h} {ns[m].sum() / total * 100:.0f}% (in {len(m):,} of {count_of(len(rows), 'requests')})")
    return ["critical-path time on other traced hosts (followed through packets): " + ", ".join(parts)]


def _where_time_went(dom: list[tuple[str, float]], short: bool = False) -> str:
    """'most of their time sleeping (timers) (93%)', or where no state holds half of it, the two
    that hold most: 'their time running on a CPU (39%) and waiting for the disk (38%)'; ``short``
    (a title): 'mostly sleeping (timers)', 'running on a CPU and waiting for the disk'."""
    words = [STATE_WORDS.get(s, s) for s, _ in dom]
    if dom[0][1] >= 0.5 or len(dom) < 2:
        return f"mostly {words[0]}" if short else f"most of their time {words[0]} ({dom[0][1] * 100:.0f}%)"
    if short:
        return f"{words[0]} and {words[1]}"
    return f"their time {words[0]} ({dom[0][1] * 100:.0f}%) and {words[1]} ({dom[1][1] * 100:.0f}%)"


def compare_durations(med: float, base: float, how: str = "") -> str:
    """'45 ms at the median, against 3.1 ms for the others (14x)': the ratio only where the
    baseline is large enough for it to mean something (at least 1 us, and the ratio at most 1000)."""
    text = f"{fmt_duration(med)}{how}, against {fmt_duration(base)} for the others"
    if base >= 1000 and 1.1 <= med / base <= 1000:
        text += f" ({fmt_ratio(med / base)})"
    return text


def cluster_findings(ft: FeatureTable, ra: RequestAnalysis, top_requests: int = 10, what: str = "requests") -> list[Finding]:
    """One finding per cluster of outliers. Processes and threads are units of different programs:
    a long one may simply do more, so their clusters are information, never warnings."""
    out = []
    noun = unit_noun(what)
    mixed = noun in ("processes", "threads")
    cl, o = ra.clusters, ra.outliers
    normal_rows = np.flatnonzero(cl.label == -1)
    med_normal = float(np.median(ft.total[normal_rows])) if len(normal_rows) else 0.0
    params = {**{k: v for k, v in o.params.items() if k in ("representation", "detector", "eps", "min_samples",
                                                              "eps_from", "units")},
              "cluster_features": cl.params.get("features"), "k": cl.k, "k_from": cl.k_from}
    for c in range(cl.k):
        rows = np.flatnonzero(cl.label == c)
        if not len(rows):
            continue
        med = float(np.median(ft.total[rows]))
        dom = dominant_states(ft, rows)
        grams = ra.ngrams.get(c, [])
        head = f"{count_of(len(rows), noun)} took {compare_durations(med, med_normal, ' at the median')}"
        if dom:
            head += "; " + _where_time_went(dom)
        evidence = [head]
        if grams:
            g = _pick_gram(grams)
            evidence.append(f"system calls that set them apart: `{g.ngram}` {g.mean_group:.1f} times each, "
                            f"{g.mean_normal:.1f} in the others")
        evidence.append(f"{len(rows) / len(ft) * 100:.2f}% of the {len(ft):,} {noun} compared")
        if dom:
            evidence.append("details: critical-path states: " + ", ".join(f"{s} {v * 100:.0f}%" for s, v in dom))
        evidence += elsewhere_evidence(ft, rows)
        if mixed:
            evidence.append(f"{noun} of different programs are compared here: these ones took longer or spent "
                            "their time otherwise, which is not by itself a fault")
        tables = []
        if grams:
            tables.append(Table(["n-gram", "per request (cluster)", "per request (normal)", "Welch t"],
                                [[f"`{g.ngram}`", f"{g.mean_group:.2f}", f"{g.mean_normal:.2f}",
                                  "inf" if g.t == float("inf") else f"{g.t:.1f}"] for g in grams[:9]],
                                caption="system call n-grams that set the cluster apart"))
        rows_sorted = rows[np.argsort(-ft.total[rows])][:top_requests]
        hosts, ns = ft.fields.get("elsewhere_host"), ft.fields.get("elsewhere_ns")
        if hosts is not None and ns is not None and ns[rows_sorted].any():
            tables.append(Table(["id", "duration", "why", "on another host", "label"],
                                [[ft.id[i], fmt_duration(ft.total[i]), o.why[i],
                                  f"{hosts[i]} {fmt_duration(ns[i])}" if ns[i] else "", ft.label(i)] for i in rows_sorted],
                                caption=f"slowest {len(rows_sorted)} of the cluster"))
        else:
            tables.append(Table(["id", "duration", "why", "label"],
                                [[ft.id[i], fmt_duration(ft.total[i]), o.why[i], ft.label(i)] for i in rows_sorted],
                                caption=f"slowest {len(rows_sorted)} of the cluster"))
        ratio = min(med / max(med_normal, 1000.0), 1000.0)
        out.append(Finding(
            analysis="clusters",
            title=f"Cluster {c + 1}: {count_of(len(rows), noun, 'outlying')} took {fmt_duration(med)} "
                  f"(others {fmt_duration(med_normal)})"
                  + (f", {_where_time_went(dom, short=True)}" if dom else ""),
            subject=f"cluster {c + 1}" + (f" (`{_pick_gram(grams).ngram}`)" if grams else ""),
            score=float(len(rows) * ratio),
            severity="info" if mixed else "critical" if ratio > 10 and med - med_normal > 1e6 else "warning",
            evidence=evidence,
            tables=tables,
            parameters=params,
            target={"kind": "cluster", "cluster": c},
        ))
    return out


def _pick_gram(grams: list[NgramRow]) -> NgramRow:
    """The headline n-gram: the most distinctive trigram if it is nearly as distinctive as the
    best n-gram (it reads like the paper's 'connect connect connect'), else the best one."""
    best = grams[0]
    tri = [g for g in grams if g.n == 3]
    if tri and tri[0].effect >= 0.5 * best.effect:
        return tri[0]
    return best


def outlier_summary_finding(ft: FeatureTable, ra: RequestAnalysis, what: str = "requests") -> Finding:
    noun = unit_noun(what)
    o = ra.outliers
    t3 = o.table3
    rows = [["outliers", f"{t3['outliers']:,} of {t3['requests']:,}"],
            ["median duration of outliers", f"{t3['median_outlier_ms']:.4g} ms"],
            ["median duration of all requests", f"{t3['median_all_ms']:.4g} ms"]]
    rows += [[f"P(duration > {lbl}) among outliers", f"{p:.3f}"] for lbl, p in t3["p_above"]]
    p = o.params
    evidence = [f"detector {p.get('detector')} on {p.get('scaling')}"]
    if "eps" in p:
        evidence.append(f"eps {p['eps']:.4g} {p.get('units', '')} ({p.get('eps_from')}), min_samples {p['min_samples']}")
        if p.get("minor_groups"):
            evidence.append(f"{count_of(p['minor_group_requests'], 'outliers')} come from "
                            f"{count_of(p['minor_groups'], 'dense groups')} smaller than {p['minor_fraction'] * 100:g}% "
                            "of the requests")
    evidence.append(f"clusters: k = {ra.clusters.k} ({ra.clusters.k_from}) on {ra.clusters.params.get('features')}")
    return Finding(
        analysis="clusters",
        title=f"Outlying {noun}",
        subject=f"{t3['outliers']:,} of {t3['requests']:,} {noun}",
        score=float(t3["outliers"]),
        severity="info",
        evidence=evidence,
        tables=[Table(["statistic", "value"], rows, caption="outliers and their durations"),
                table4(ra)],
        parameters={k: v for k, v in p.items() if not isinstance(v, (list, dict))},
        target={"kind": "clusters"},
    )


def table4(ra: RequestAnalysis) -> Table:
    rows = [[g.name, f"{g.size:,}", f"{g.mean_ms:.4g}", f"{g.median_ms:.4g}", f"{g.mean_syscalls:.1f}",
             f"{g.mean_distinct_syscalls:.1f}"] for g in ra.clusters.groups]
    return Table(["group", "requests", "mean ms", "median ms", "syscalls", "distinct syscalls"], rows,
                 caption="each group's size and durations")
