"""Findings about a trace as a whole and about its requests (before any outlier analysis)."""

from __future__ import annotations

import numpy as np

from perftriage.analysis.ctf.summary import TraceSummary
from perftriage.analysis.findings import Finding, Table
from perftriage.analysis.units import DATED_FROM, count_of, fmt_duration, fmt_ratio, fmt_when, singular

from .features import FeatureTable
from .params import unit_noun
from .table import RequestTable
from .states import STATE_WORDS

LABEL_FIELDS = ("method", "uri", "path", "querystring", "status", "comm")


def trace_findings(summary: TraceSummary) -> list[Finding]:
    out = []
    for t in summary.traces:
        lost = t.discarded_events + t.discarded_packets + t.discarded_events_unknown
        if lost:
            ev = [f"{count_of(t.discarded_events, 'events')} discarded by the tracer (ring buffer full)"]
            if t.discarded_events_unknown:
                ev.append(f"{t.discarded_events_unknown} more discard records without a count")
            if t.discarded_packets:
                ev.append(f"{t.discarded_packets:,} packets lost")
            ev.append("analyses around those times may miss state changes: consider larger subbuffers")
            out.append(
                Finding(
                    analysis="trace",
                    title="The tracer lost events",
                    subject=f"{t.hostname} ({t.domain}) {t.path}",
                    score=float(lost),
                    severity="warning",
                    evidence=ev,
                )
            )
    return out


def breakdown_text(states: list[str], durations: np.ndarray, total: float, top: int = 2, words: bool = False) -> str:
    """'BN 96%, RU 3%': the largest shares of a request's (or group's) time; in ``words``,
    'waiting for the network 96%, running on a CPU 3%', those under half a percent left out."""
    if total <= 0:
        return ""
    order = np.argsort(-durations, kind="stable")[:top]
    least = 0.005 * total if words else 0.0
    return ", ".join(f"{STATE_WORDS.get(states[k], states[k]) if words else states[k]} {100 * durations[k] / total:.0f}%"
                     for k in order if durations[k] > 0 and durations[k] >= least)


def time_shares(ft: FeatureTable) -> str:
    tot = ft.durations.sum(axis=0)
    return breakdown_text(ft.states, tot, float(tot.sum()), top=len(ft.states), words=True)


def request_findings(table: RequestTable | None, top: int = 20, markers=(), features: FeatureTable | None = None,
                     unit: str = "markers") -> list[Finding]:
    if table is None:
        return []
    params = {"units": unit}
    if markers:
        params["markers"] = ", ".join(f"{m.start}/{m.end} by {m.key}" for m in markers)
    if len(table) == 0:
        if table.unmatched_starts or table.unmatched_ends:
            return [
                Finding(
                    analysis="requests",
                    title="Request markers found but none pair up",
                    subject="request markers",
                    evidence=[f"{table.unmatched_starts} starts without end, {table.unmatched_ends} ends without start"],
                    parameters=params,
                )
            ]
        return []
    # only the rows shown are taken (taking the whole table in order copied every request's
    # system calls: +20% of the peak at 50,000 requests, to show 20)
    n = min(top, len(table))
    order = np.lexsort((table.start, -table.duration))[:n]
    t = table.take(order)
    whole = features if features is not None and len(features) == len(table) else None
    ft = whole.take(order) if whole is not None else None
    dur_all = table.duration.astype(np.float64)
    dur = t.duration.astype(np.float64)
    med = float(np.median(dur_all))
    fields = [f for f in LABEL_FIELDS if f in t.fields] + [
        f for f in t.fields if f not in LABEL_FIELDS and len(t.fields) <= 6
    ]
    rows = []
    for i in range(n):
        row = [t.id[i], t.kind[i], t.host[i], f"{t.pid[i]}/{t.tid[i]}",
               fmt_when(t.start[i], digits=9).removesuffix(" UTC"), fmt_duration(dur[i])]
        if ft is not None:
            row.append(breakdown_text(ft.states, ft.durations[i], float(ft.total[i])))
        rows.append(row + [t.fields[f][i] for f in fields])
    what = unit_noun(unit)
    evidence = [
        f"{count_of(len(table), what)}; median {fmt_duration(med)}, p95 {fmt_duration(np.percentile(dur_all, 95))}, "
        f"max {fmt_duration(dur[0])}"
    ]
    if len(table) > 1 and med >= 1000 and dur[0] / med <= 1000:
        evidence.append(f"the slowest took {fmt_ratio(dur[0] / med)} the median")
    if ft is not None:
        evidence.append(f"where the time goes, all {what} together, along their critical paths: {time_shares(whole)}")
        evidence.append(f"the slowest: {breakdown_text(ft.states, ft.durations[0], float(ft.total[0]), 3, words=True)}")
    if table.unmatched_starts or table.unmatched_ends:
        evidence.append(
            f"{table.unmatched_starts} starts without end (trace stopped first), "
            f"{table.unmatched_ends} ends without start (began before tracing): not counted"
        )
    title = f"Slowest {what}" if len(table) > 1 else f"One {singular(what)}"
    head = f"{t.kind[0]} #{t.id[0]}"
    subject = head if t.label(0) == head else f"{head} {t.label(0)}"
    dated = not n or int(t.start.min()) >= DATED_FROM * 1e9  # (a clock with no origin counts from boot)
    columns = ["id", "kind", "host", "pid/tid", "start (UTC)" if dated else "start (since the trace's start)",
               "duration"] + (["critical path"] if ft is not None else []) + fields
    return [
        Finding(
            analysis="requests",
            title=title,
            subject=subject,
            target={"kind": "request", "id": int(t.id[0]), "host": str(t.host[0])},
            score=float(min(dur[0] / max(med, 1000.0), 1000.0)),
            severity="info",
            evidence=evidence,
            tables=[Table(columns, rows, caption=f"top {n} of {len(table):,} by duration")],
            parameters={**params, "top": top},
        )
    ]


def feature_findings(ft: FeatureTable, top: int = 20) -> list[Finding]:
    """For feature tables read from CSV: the slowest requests and where their time goes."""
    if len(ft) == 0:
        return []
    n = min(top, len(ft))
    t = ft.take(np.argsort(-ft.total, kind="stable")[:n])  # the rows shown only
    med = float(np.median(ft.total))
    rows = [[t.id[i], t.kind[i], fmt_duration(t.total[i]),
             breakdown_text(t.states, t.durations[i], float(t.total[i]), 3), t.label(i)] for i in range(n)]
    return [
        Finding(
            analysis="requests",
            title="Slowest requests (imported features)",
            subject=f"request {t.id[0]} {t.label(0)}",
            score=float(t.total[0] / med) if med > 0 else 0.0,
            evidence=[f"{count_of(len(ft), 'requests')} from {ft.source}; median {fmt_duration(med)}, "
                      f"max {fmt_duration(t.total[0])}",
                      f"where the time goes, all requests together: {time_shares(ft)}"],
            tables=[Table(["id", "kind", "duration", "critical path", "label"], rows,
                          caption=f"top {n} of {len(ft):,} by duration")],
            parameters={"top": top, "source": ft.source},
        )
    ]
