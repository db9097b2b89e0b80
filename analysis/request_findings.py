"""Findings about a trace as a whole and about its requests (before any outlier analysis)."""

from __future__ import annotations

import numpy as np

from .ctf.summary import TraceSummary
from .findings import Finding, Table
from .requests import RequestTable
from .units import fmt_duration, fmt_timestamp

LABEL_FIELDS = ("method", "uri", "path", "querystring", "status")


def trace_findings(summary: TraceSummary) -> list[Finding]:
    out = []
    for t in summary.traces:
        lost = t.discarded_events + t.discarded_packets + t.discarded_events_unknown
        if lost:
            ev = [f"{t.discarded_events:,} events discarded by the tracer (ring buffer full)"]
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


def request_findings(table: RequestTable | None, top: int = 20, markers=()) -> list[Finding]:
    if table is None:
        return []
    params = {"markers": ", ".join(f"{m.start}/{m.end} by {m.key}" for m in markers)} if markers else {}
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
    t = table.by_duration()
    dur = t.duration.astype(np.float64)
    med = float(np.median(dur))
    n = min(top, len(t))
    fields = [f for f in LABEL_FIELDS if f in t.fields] + [
        f for f in t.fields if f not in LABEL_FIELDS and len(t.fields) <= 6
    ]
    rows = []
    for i in range(n):
        rows.append(
            [t.id[i], t.kind[i], t.host[i], f"{t.pid[i]}/{t.tid[i]}", fmt_timestamp(t.start[i]), fmt_duration(dur[i])]
            + [t.fields[f][i] for f in fields]
        )
    evidence = [
        f"{len(t):,} requests; median {fmt_duration(med)}, p95 {fmt_duration(np.percentile(dur, 95))}, "
        f"max {fmt_duration(dur[0])}"
    ]
    if len(t) > 1 and med > 0:
        evidence.append(f"the slowest took {dur[0] / med:.1f}x the median")
    if table.unmatched_starts or table.unmatched_ends:
        evidence.append(
            f"{table.unmatched_starts} starts without end (trace stopped first), "
            f"{table.unmatched_ends} ends without start (began before tracing): not counted"
        )
    title = "Slowest requests" if len(t) > 1 else "One request"
    subject = f"{t.kind[0]} request #{t.id[0]} {t.label(0)}"
    return [
        Finding(
            analysis="requests",
            title=title,
            subject=subject,
            score=float(dur[0] / med) if med > 0 else 0.0,
            severity="info",
            evidence=evidence,
            tables=[Table(["id", "kind", "host", "pid/tid", "start (UTC)", "duration"] + fields, rows,
                          caption=f"top {n} of {len(t):,} by duration")],
            parameters={**params, "top": top},
        )
    ]
