"""Running every analysis that applies to the user's inputs; the one entry point for the CLI
(``perftriage report``) and the app (which runs it in a worker and shows the results)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Callable

from . import __version__
from .ctf.reader import ReadProgress
from .ctf.summary import EventCounter, TraceSummary
from .errors import MissingDependency
from .findings import Finding, Report, Table
from .inputs import Inputs, classify
from .pipeline import read_once
from .request_findings import request_findings, trace_findings
from .requests import BUILTIN_MARKERS, MarkerRequests, MarkerSpec, RequestTable


@dataclass
class Options:
    markers: tuple[MarkerSpec, ...] = BUILTIN_MARKERS
    top: int = 20  # rows in "slowest requests" tables


@dataclass
class Progress:
    stage: str
    fraction: float | None  # None when unknown
    text: str = ""


ProgressFn = Callable[[Progress], None]


@dataclass
class TriageResult:
    inputs: Inputs
    options: Options
    summary: TraceSummary | None = None
    requests: RequestTable | None = None
    report: Report = field(default_factory=lambda: Report(inputs=[]))

    @property
    def findings(self) -> list[Finding]:
        return self.report.ranked()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def run_triage(paths, options: Options | None = None, progress: ProgressFn | None = None) -> TriageResult:
    options = options or Options()
    inputs = classify(paths)
    result = TriageResult(inputs=inputs, options=options)
    report = result.report = Report(inputs=inputs.all_paths, created=_now(), tool=f"perftriage {__version__}")
    if inputs.ctf:
        _run_ctf(inputs, options, result, progress)
    for kind, files in inputs.files.items():
        report.notes.append(f"{len(files)} {kind} file(s) given; this version does not analyse them yet")
    return result


def _run_ctf(inputs: Inputs, options: Options, result: TriageResult, progress: ProgressFn | None) -> None:
    def on_read(p: ReadProgress) -> None:
        if progress is not None:
            frac = p.bytes_done / p.bytes_total if p.bytes_total else None
            progress(Progress("reading trace", frac, f"{p.events:,} events"))

    try:
        passed = read_once(inputs.ctf, [EventCounter(), MarkerRequests(options.markers)], progress=on_read)
    except MissingDependency as exc:
        result.report.notes.append(str(exc))
        return
    summary, requests = passed.results
    if passed.error is not None:
        summary.error = str(passed.error)
        result.report.notes.append(f"partial data: {passed.error}")
    for t in summary.traces:
        result.report.notes.extend(f"partial data: {p}" for p in t.problems)
    result.summary = summary
    result.requests = requests
    report = result.report
    report.findings.extend(trace_findings(summary))
    report.findings.extend(request_findings(requests, top=options.top, markers=options.markers))
    if progress is not None:
        progress(Progress("done", 1.0, f"{summary.events:,} events, {len(requests):,} requests"))


def summary_table(summary: TraceSummary) -> Table:
    rows = []
    for t in summary.traces:
        rows.append([t.path, t.hostname, t.domain, t.tracer, len(t.cpus), t.discarded_events, t.discarded_packets])
    return Table(["trace", "host", "domain", "tracer", "CPUs", "discarded events", "lost packets"], rows)
