"""Running every analysis that applies to the user's inputs; the one entry point for the CLI
(``perftriage report``) and the app (which runs it in a worker and shows the results)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Callable

import numpy as np

from perftriage.analysis.calltrees.clouddiag import Diagnosis, diagnose
from perftriage.analysis.calltrees.compare import Comparison, compare
from perftriage.analysis.calltrees.findings import (change_findings, comparison_findings, diagnosis_findings,
                                                    failure_findings, lost_call_findings, slow_link_findings,
                                                    slow_replica_findings, span_problem_findings)
from perftriage.analysis.calltrees.failures import (Failures, early_return_below, failures_against,
                                                    find_failures)
from perftriage.analysis.calltrees.lost_calls import LostCalls, lost_calls
from perftriage.analysis.calltrees.slow_links import SlowLinks, slow_links
from perftriage.analysis.calltrees.slow_replicas import slow_replicas
from perftriage.analysis.calltrees.trees import CallTrees, build_call_trees
from perftriage.analysis.calltrees.what_changed import (ChangeDiagnosis, diagnose_change, find_split,
                                                        local_changes, method_split, split_spans)
from perftriage.analysis.counters.findings import CounterAnalysis, analyse_counters, counter_findings
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.counters.rules import read_rules
from perftriage.analysis.ctf.pipeline import read_once
from perftriage.analysis.ctf.spec import ReadProgress
from perftriage.analysis.ctf.summary import EventCounter, TraceSummary
from perftriage.analysis.execgraph.builder import GraphBuilder
from perftriage.analysis.execgraph.graph import ExecGraph, lost_switch_notes
from perftriage.analysis.execgraph.netmatch import network_notes
from perftriage.analysis.execgraph.on_disk import move_to_disk
from perftriage.analysis.execgraph.store import release_freed_memory
from perftriage.analysis.requests.features import FeatureTable, concat, extract_features, read_features
from perftriage.analysis.requests.findings import (count_of, feature_findings, request_findings, singular,
                                                  trace_findings)
from perftriage.analysis.requests.markers import MarkerRequests, marker_candidates
from perftriage.analysis.requests.outlier_analysis import (RequestAnalysis, analyze_requests, cluster_findings,
                                                           outlier_summary_finding)
from perftriage.analysis.requests.table import RequestTable
from perftriage.analysis.requests.time_spent import time_spent_findings
from perftriage.analysis.requests.units import (auto_units, comparable, not_compared_reason, not_compared_summary,
                                                parse_unit, process_units, syscall_units, thread_units)
from perftriage.analysis.spans.table import SpanTable
from perftriage.analysis.threads.contention import cpu_waits
from perftriage.analysis.threads.from_trace import thread_series_from_graphs
from perftriage.analysis.threads.series import ThreadSeries, read_thread_metrics
from perftriage.analysis.threads.topdown import TopDown, top_down, topdown_findings

from perftriage import __version__
from .errors import InputError, MissingDependency, reading
from .findings import Finding, Report, Table
from .inputs import Inputs, classify, register_file_kind
from .options import PARTS, Options, Progress, ProgressFn  # noqa: F401 (their home before)
from .spans import read_spans
from .timeparse import user_time_ns
from .units import DATED_FROM, fmt_timestamp, fmt_when


@dataclass
class TriageResult:
    inputs: Inputs
    options: Options
    summary: TraceSummary | None = None
    requests: RequestTable | None = None
    graphs: dict[str, ExecGraph] = field(default_factory=dict)
    features: FeatureTable | None = None
    analysis: RequestAnalysis | None = None  # on the compared units only (see ``compared``)
    compared: np.ndarray | None = None  # indices of the units compared (None: all of them)
    units: str = "markers"  # what a request is: markers, processes, threads or syscall
    # a trace without known markers: its own events that look like a request's start and end,
    # (start, end, starts, ends) (requests/markers.py)
    marker_candidates: list[tuple[str, str, int, int]] = field(default_factory=list)
    spans: SpanTable | None = None
    calltrees: CallTrees | None = None
    diagnosis: Diagnosis | None = None
    reference_trees: CallTrees | None = None
    comparison: Comparison | None = None
    change: ChangeDiagnosis | None = None  # spans: what changed against the minutes before, per service and pod
    links: SlowLinks | None = None  # spans: the links between services, as they are (slow_links.py)
    failures: Failures | None = None  # spans: the calls that fail, where errors start (failures.py)
    lost: LostCalls | None = None  # spans: calls methods stop making from a time on, said without a time
    thread_series: ThreadSeries | None = None
    threads: TopDown | None = None
    counters: CounterAnalysis | None = None
    report: Report = field(default_factory=lambda: Report(inputs=[]))
    # told each time a part of the result is ready (PARTS), while the rest is still analysed
    publish: Callable[[str, "TriageResult"], None] | None = field(default=None, repr=False, compare=False)

    def ready(self, part: str) -> None:
        if self.publish is not None:
            self.publish(part, self)

    @cached_property
    def compared_features(self) -> FeatureTable | None:
        """The features the outlier analysis ran on (the units that can be compared); taken
        once, on first use, after ``compared`` is set."""
        if self.features is None or self.compared is None:
            return self.features
        return self.features.take(self.compared)

    def _full(self, values, fill):
        n = len(self.features) if self.features is not None else 0
        if self.compared is None:
            return values
        out = np.full(n, fill, dtype=np.asarray(values).dtype if not isinstance(values, list) else object)
        out[self.compared] = values if not isinstance(values, list) else np.array(values, object)
        return out

    @property
    def outliers(self):
        """Outlier flags aligned with ``requests`` (None when no outlier analysis ran)."""
        if self.analysis is None or self.requests is None or self.features is None \
                or len(self.features) != len(self.requests):
            return None
        return self._full(self.analysis.outliers.outlier, False)

    @property
    def cluster_labels(self) -> np.ndarray | None:
        """Cluster of each unit aligned with ``requests`` (-1: normal, -2: not compared)."""
        if self.outliers is None:
            return None
        return self._full(self.analysis.clusters.label, -2)

    @property
    def why_short(self) -> list[str] | None:
        """Why each unit is an outlier, or why it was not compared, aligned with ``requests``."""
        if self.outliers is None:
            return None
        why = self.analysis.outliers.why_short
        if self.compared is None:
            return list(why)
        out = [not_compared_reason(self.requests, i, self.options.background) for i in range(len(self.requests))]
        for j, i in enumerate(self.compared.tolist()):
            out[i] = why[j]
        return out

    @property
    def findings(self) -> list[Finding]:
        return self.report.ranked()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def _sniff_features(path, head: bytes) -> bool:
    if path.name.endswith("_times.csv") or path.name.endswith("_count.csv"):
        return True
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    cols = [c.strip() for c in first.split(",")]
    return "TT_ns" in cols or sum(c.endswith(("_ns", "_ms", "_us")) and c.split("_")[0] in
                                  ("RU", "RS", "BP", "BD", "BN", "BS", "BI", "BF", "BT") for c in cols) >= 2


register_file_kind("features", _sniff_features)


def run_triage(paths, options: Options | None = None, progress: ProgressFn | None = None,
               publish: Callable[[str, TriageResult], None] | None = None) -> TriageResult:
    """Every analysis that applies to ``paths``. ``publish(part, result)`` is told each time a
    part of the result (PARTS) is ready, while the rest goes on (the app shows it at once)."""
    options = options or Options()
    parse_unit(options.units)
    inputs = classify(paths)
    result = TriageResult(inputs=inputs, options=options, publish=publish)
    report = result.report = Report(inputs=inputs.all_paths, created=_now(), tool=f"perftriage {__version__}")
    report.notes.extend(inputs.notes)
    if inputs.ctf:
        _run_ctf(inputs, options, result, progress)
    if "features" in inputs.files:
        _run_feature_files(inputs.files["features"], options, result)
    if "spans" in inputs.files:
        _run_spans(inputs.files["spans"], options, result, progress)
    elif options.reference and "counters" not in inputs.files:
        report.notes.append("--reference compares span or counter files: none among the inputs")
    if "threads" in inputs.files:
        _run_threads(inputs.files["threads"], options, result, progress)
    if "counters" in inputs.files or inputs.servers:
        _run_counters(inputs.files.get("counters", []), options, result, progress, inputs.servers)
        _when_to_compare(result, options)
    for kind, files in inputs.files.items():
        if kind not in ("features", "spans", "threads", "counters"):
            report.notes.append(f"{count_of(len(files), kind + ' files')} given; this version does not analyse them yet")
    result.publish = None
    return result


def _run_threads(files, options: Options, result: TriageResult, progress: ProgressFn | None) -> None:
    if progress is not None:
        progress(Progress("reading thread metrics", None, count_of(len(files), "files")))
    if len(files) > 1:
        result.report.notes.append(f"{len(files)} thread metric files given: only {files[0]} is analysed")
    with reading(files[0], "thread metrics"):
        ts = read_thread_metrics(files[0], options.local_zone)
    _analyse_threads(ts, str(files[0]), options, result, progress)


def _analyse_threads(ts: ThreadSeries, source: str, options: Options, result: TriageResult,
                     progress: ProgressFn | None, takers=None) -> None:
    """``takers``: for thread series from a kernel trace, what ran while a thread waited for a CPU
    (:func:`_cpu_waits`)."""
    if result.threads is not None:
        result.report.notes.append(f"{source}: thread metrics already analysed from another input; not this one")
        return
    result.thread_series = ts
    result.report.notes.extend(f"{source}: {n}" for n in ts.notes)
    if ts.n_threads < 3:
        result.report.notes.append(f"{source}: {count_of(ts.n_threads, 'threads')}: at least 3 are needed to compare them")
        return

    def on_level(text: str, fraction: float) -> None:
        if progress is not None:
            progress(Progress("thread pools", fraction, text))

    def on_analysed(so_far) -> None:  # each level at once (the app shows it while the walk goes on)
        result.threads = so_far
        result.ready("threads")

    td = top_down(ts, options.threads, progress=on_level, on_analysed=on_analysed)
    result.threads = td
    result.report.notes.extend(f"{source}: {n}" for n in td.notes)
    result.report.findings.extend(topdown_findings(td, takers))
    result.ready("threads")


def _cpu_waits(ts: ThreadSeries, graphs: dict[str, ExecGraph]):
    """The words for what ran while a thread of ``ts`` (from the graphs) waited for a CPU:
    ``takers(thread, from_s, to_s, where)``, from what threads/contention.py takes of the graphs."""
    hosts: dict[str, list[int]] = {}
    for t, host in enumerate(ts.groups.get("machine", [])):
        try:
            hosts.setdefault(host, []).append(int(ts.ids[t]))
        except ValueError:
            continue
    waits = cpu_waits(graphs, hosts)

    def takers(t: int, a: float, b: float, where: str) -> str | None:
        try:
            return waits.words(ts.groups["machine"][t], int(ts.ids[t]), int(a * 1e9), int(b * 1e9), where)
        except (ValueError, OverflowError):
            return None

    return takers


def _run_counters(files, options: Options, result: TriageResult, progress: ProgressFn | None,
                  servers=()) -> None:
    if progress is not None and files:
        progress(Progress("reading counters", None, count_of(len(files), "files")))
    cs = load_counters(files, options.server_label, servers=_server_counters(servers, options, progress),
                       row_interval=options.counter_interval, local_zone=options.local_zone)
    result.report.notes.extend(cs.notes)
    ref = None
    if servers and options.prometheus is not None and options.prometheus.reference_since:
        ref = load_counters([], options.server_label,
                            servers=_server_counters(servers, options, progress, reference=True))
        result.report.notes.extend(f"reference: {n}" for n in ref.notes)
    elif options.reference:
        ref_inputs = classify(list(options.reference))
        ref_files = ref_inputs.files.get("counters", [])
        if ref_files:
            ref = load_counters(ref_files, options.server_label, row_interval=options.counter_interval,
                                local_zone=options.local_zone)
            result.report.notes.extend(f"reference: {n}" for n in ref.notes)
        else:
            result.report.notes.append("--reference holds no counter file: no comparison between datasets")
    rules_path = options.rules
    if rules_path is None:
        beside = {Path(f).parent / "rules.toml" for f in files} | {Path(f).parent / "rules.xml" for f in files}
        found = sorted(p for p in beside if p.is_file())
        if found:
            rules_path = str(found[0])
            result.report.notes.append(f"threshold rules from {rules_path} (found beside the counters)")
    rules = read_rules(rules_path) if rules_path else None
    if progress is not None:
        progress(Progress("counters", None, f"{count_of(len(cs.servers), 'servers')} x "
                                             f"{count_of(len(cs.counters), 'counters')} x {count_of(cs.n_points, 'points')}"))
    ca = analyse_counters(cs, options.counters, ref, rules)
    result.counters = ca
    result.report.notes.extend(ca.notes)
    result.report.findings.extend(counter_findings(ca))
    result.ready("counters")


def _server_counters(servers, options: Options, progress: ProgressFn | None, reference: bool = False) -> list:
    """The counters of the running servers among the inputs (Prometheus), as readers' pieces."""
    if not servers:
        return []
    from perftriage.analysis.counters.prometheus_api import fetch_counters  # noqa: PLC0415 (urllib: only when used)

    if options.prometheus is None or not options.prometheus.matches:
        raise InputError(servers[0], "which series? --match SELECTOR (e.g. --match '{job=\"node\"}')")
    out = []
    for url in servers:
        def say(text, url=url):
            if progress is not None:
                progress(Progress("reference counters from Prometheus" if reference else "counters from Prometheus",
                                  None, text))
        out.append(fetch_counters(url, options.prometheus, options.server_label, reference=reference,
                                  progress=say).raw)
    return out


def _span_files(paths) -> list:
    inputs = classify(list(paths))
    files = inputs.files.get("spans", [])
    if not files:
        from .errors import InputError  # noqa: PLC0415

        raise InputError(paths[0], "holds no span file (OTLP/Jaeger/Zipkin JSON, span CSV, CloudDiag log)")
    return files


def _run_spans(files, options: Options, result: TriageResult, progress: ProgressFn | None) -> None:
    def say(stage, frac=None, text=""):
        if progress is not None:
            progress(Progress(stage, frac, text))

    say("reading spans", None, count_of(len(files), "files"))
    spans = read_spans(files, options.span_columns, options.cores())
    result.spans = spans
    report = result.report
    report.findings.extend(span_problem_findings(spans))
    report.notes.extend(spans.notes)
    if not spans.problems.total():
        report.notes.extend(spans.problems.lines())
    if len(spans) == 0:
        report.notes.append("the span files hold no span")
        return
    say("call trees", None, count_of(len(spans), 'spans'))
    trees = build_call_trees(spans)
    result.calltrees = trees
    report.notes.extend(trees.notes)
    say("robust PCA", 0.0, count_of(len(trees.categories), 'categories'))
    diag = diagnose(trees, options.calltrees,
                    progress=lambda i, n: say("robust PCA", i / max(1, n), f"category {i}/{n}"))
    result.diagnosis = diag
    report.findings.extend(diagnosis_findings(diag, top=options.top))
    if not diag.ranking:  # nothing flagged by Robust PCA: a replica slower than its peers at the same methods
        report.findings.extend(slow_replica_findings(slow_replicas(spans)))
    ref_spans = None
    if options.reference:
        say("reference spans", None, "")
        ref_spans = read_spans(_span_files(options.reference), options.span_columns, options.cores())
        ref_trees = build_call_trees(ref_spans)
        result.reference_trees = ref_trees
        report.notes.append("reference spans: " + ", ".join(ref_spans.sources))
        params = options.compare
        params.times = options.calltrees.times
        result.comparison = compare(ref_trees, trees, params)
        report.findings.extend(comparison_findings(result.comparison, top=options.top))
        result.change = diagnose_change(ref_spans, spans, how="the spans against the reference spans (--reference)")
        if options.incident_time is not None:
            report.notes.append(f"--incident-time {options.incident_time} not used: the spans are compared with the "
                                "reference spans (--reference), not before and after a time")
    else:
        _split_change(spans, options, result)
    result.links = slow_links(spans)
    _say_links(result)
    _say_lost_calls(result)
    _say_failures(result, ref_spans)
    if result.change is not None:
        report.findings.extend(change_findings(result.change))
    result.ready("calltrees")
    say("done", 1.0, f"{count_of(len(spans), 'spans')}, {count_of(len(trees.categories), 'categories')}")


CHANGE_WINDOW_NS = 5 * 60 * 10**9  # --incident-time: the requests this long before and after it


def _hhmm(t_ns: int, first_day: str) -> str:
    """A time to give --incident-time, which reads HH:MM on the spans' first day: with its date
    where it falls on another (HH:MM:SS where the minute would cut into the change), in UTC; times
    with no date (before 2000) are times since the start, told and read back as +H:MM:SS."""
    stamp = fmt_timestamp(t_ns)
    if t_ns < DATED_FROM * 1e9:
        return fmt_when(t_ns, digits=0)
    return f"{stamp[11:19]} UTC" if stamp[:10] == first_day else f"{stamp[:10]}T{stamp[11:19]} UTC"


def _when_to_compare(result: TriageResult, options: Options, n: int = 3) -> None:
    """Spans not compared for want of a time, beside counters with unusual intervals where there
    are requests on both sides within five minutes: the starts of the strongest of them, as times
    to give --incident-time."""
    spans, ca = result.spans, result.counters
    if (spans is None or not len(spans) or result.change is not None or options.incident_time is not None
            or options.reference or ca is None or ca.over_time is None):
        return
    cs = ca.cs
    starts = np.sort(spans.start)
    first_day = fmt_timestamp(int(starts[0]))[:10]
    times: dict[str, str] = {}  # the time to give -> what starts then
    for iv in ca.over_time.intervals:
        if iv.twin:
            continue
        t = int(cs.seconds(iv.start) * 1e9)
        # requests on both sides of it within the window (the span files may cover some minutes only)
        near = np.searchsorted(starts, [t - CHANGE_WINDOW_NS, t, t + CHANGE_WINDOW_NS])
        if near[0] < near[1] < near[2]:
            times.setdefault(_hhmm(t, first_day), iv.about or cs.servers[iv.server])
            if len(times) == n:
                break
    if times:
        result.report.notes.append("what changed: the counters' strongest unusual intervals where there are spans start at "
                                   + ", ".join(f"{t} ({who})" for t, who in times.items())
                                   + ": give one as --incident-time to compare the requests before and after it")


def change_at(result: TriageResult, incident_time: str) -> TriageResult:
    """``result`` with what changed in its spans compared at ``incident_time`` instead, as
    ``--incident-time`` would give it: the change, its findings and the notes about it replaced,
    every other part the same objects. From the spans already read (the app's ``w`` on a
    counters interval: 0.1 s where analysing again read the span files for 5 s)."""
    spans = result.spans
    if spans is None or not len(spans):
        raise InputError(None, "what changed: no spans to compare")
    if result.options.reference:
        raise InputError(None, "what changed: the spans are compared with the reference spans (--reference), "
                               "not before and after a time")
    options = replace(result.options, incident_time=incident_time)
    # what was said for want of a time: the change found without one, or the links as they are
    old = change_findings(result.change) if result.change is not None else []
    old += slow_link_findings(result.links)
    old += failure_findings(result.failures) if result.failures is not None else []
    old += lost_call_findings(result.lost)
    report = replace(result.report, findings=[f for f in result.report.findings if f not in old],
                     notes=[n for n in result.report.notes if not n.startswith(("what changed", "calls between",
                                                                                 "failed calls", "lost calls"))])
    new = replace(result, options=options, report=report, change=None, publish=None, lost=None)
    _split_change(spans, options, new)
    _say_links(new)
    _say_failures(new)
    if new.change is not None:
        report.findings.extend(change_findings(new.change))
    return new


def _change_named(ch: ChangeDiagnosis | None) -> bool:
    """What changed named someone: a suspect, or the method whose calls gave the time."""
    return ch is not None and bool(ch.suspects or ch.method is not None)


def _say_lost_calls(result: TriageResult) -> None:
    """Calls methods stop making from a time on (lost_calls.py): looked for and said where nothing
    was compared over time, or the comparison found no time and named nothing."""
    options = result.options
    if options.incident_time is not None or options.reference or _change_named(result.change):
        return
    result.lost = lc = lost_calls(result.spans)
    if lc.calls:
        result.report.findings.extend(lost_call_findings(lc))


def _say_failures(result: TriageResult, reference: SpanTable | None = None) -> None:
    """Which calls fail and where the errors start: against the reference spans, or at the
    incident time where one is given, else each method's own onset (failures.py)."""
    spans, options, ch = result.spans, result.options, result.change
    if reference is not None:
        result.failures = fl = failures_against(reference, spans, "the spans against the reference spans (--reference)")
    else:
        at = ch.split_ns if options.incident_time is not None and ch is not None else None
        how = (f"the calls of the requests from {fmt_when(at)} on (--incident-time) against those "
               "before" if at is not None else "")
        result.failures = fl = find_failures(spans, at, how)
    fl.after, fl.after_share = early_return_below(spans, fl, result.lost)
    if fl.after is not None:  # the early return below the errors is their cause: said first
        for f in result.report.findings:
            if f.analysis == "calltrees" and f.target == {"kind": "method", "method": fl.after.caller} \
                    and f.title.startswith(fl.after.headline()):
                f.score = 3e9 + 1
                f.evidence.insert(1, f"{fl.methods[0].service}'s errors from then on start over its calls that stopped "
                                     f"calling in {fl.after_share:.0%} of the requests where they start: they follow "
                                     "from it")
    if fl.methods:
        result.report.findings.extend(failure_findings(fl))
    elif fl.known and fl.failed_spans:  # (no note where no span failed)
        result.report.notes.append(f"failed calls: {fl.why}")


def _say_links(result: TriageResult) -> None:
    """What the links between services say (measured once: the Call trees pane's links view) is
    the report's where nothing was compared over time, or the comparison named nothing."""
    links = result.links
    if _change_named(result.change):
        return
    if links.suspects:
        result.report.findings.extend(slow_link_findings(links))
    else:
        result.report.notes.append(f"calls between services: {links.why}")


def _split_change(spans: SpanTable, options: Options, result: TriageResult) -> None:
    """What changed within the spans: before and after the incident time, or where the requests
    changed most when no time is given."""
    method = None  # the method whose calls gave the time, when nothing else did
    if options.incident_time is not None:
        try:
            at = user_time_ns(options.incident_time, int(spans.start.min()))
        except (ValueError, OverflowError):
            raise InputError(None, f"--incident-time {options.incident_time!r}: not a time (epoch, ISO 8601, "
                                   "HH:MM[:SS] UTC or +H:MM[:SS] after the spans' start)") from None
        how = (f"requests from {fmt_when(at)} on (--incident-time) against those before, "
               f"{CHANGE_WINDOW_NS // 60_000_000_000} minutes each side at most")
        window = CHANGE_WINDOW_NS  # the minutes around it: a day of spans holds other incidents
    else:
        window = None  # a split of them all: all of them (it is where they changed)
        at, why = find_split(spans)
        if at is None:  # no one change of them all: several incidents come and go; the clearest
            changes = local_changes(spans, CHANGE_WINDOW_NS)
            if isinstance(changes, str):  # nor within minutes: one method's calls, a small part of each request
                method = method_split(spans)
                if isinstance(method, str):
                    # each reason once: too few requests for the one split is too few for the others
                    reasons = "; ".join(dict.fromkeys((why, changes, method)))
                    result.report.notes.append(f"what changed: not compared ({reasons}); give "
                                               "--incident-time TIME or --reference FILE")
                    return
                on = f" on {method.replica}" if method.replica else ""
                changes = [(method.at_ns, f"calls to {method.method}{on}")]
            (at, what), others = changes[0], changes[1:]
            window = CHANGE_WINDOW_NS
            if others:
                day = fmt_timestamp(int(spans.start.min()))[:10]
                result.report.notes.append(
                    "what changed: the requests changed clearly within minutes at other times too: "
                    + ", ".join(f"{_hhmm(t, day)} ({w})" for t, w in sorted(others))
                    + "; give one as --incident-time to compare there")
            how = (f"requests from {fmt_when(at)} on against those before, "
                   f"{CHANGE_WINDOW_NS // 60_000_000_000} minutes each side: the time where "
                   + (f"{what} changed most (the requests as a whole did not change clearly)"
                      if method is not None else f"their {what} changed most within minutes")
                   + " (--incident-time TIME to choose another, --reference FILE for another baseline)")
        else:
            how = (f"requests from {fmt_when(at)} on against those before: the time where their "
                   f"{why} changed most (--incident-time TIME to choose it, --reference FILE for another baseline)")
    before, after = split_spans(spans, at, window)
    if not len(before) or not len(after):
        result.report.notes.append(f"what changed: every request is on one side of {fmt_when(at)}")
        return
    result.change = diagnose_change(spans, spans, how=how, ref_rows=before, cur_rows=after, split_ns=at)
    if method is not None:
        result.change.method = method


def _run_feature_files(files, options: Options, result: TriageResult) -> None:
    # the published form comes as several files per pid: read each pid's set once
    seen, tables = set(), []
    for f in files:
        stem = f.name.rsplit("_", 1)[0] if f.name.endswith(("_times.csv", "_count.csv")) else f.name
        key = (f.parent, stem)
        if key in seen:
            continue
        seen.add(key)
        tables.append(read_features(f))
    ft = concat(tables) if len(tables) > 1 else tables[0]
    result.features = ft if result.features is None else concat([result.features, ft])
    result.report.notes.extend(ft.notes)
    result.report.findings.extend(feature_findings(ft, top=options.top))
    result.ready("requests")
    _run_request_analysis(result.features, options, result, None)
    result.ready("clusters")


def _run_ctf(inputs: Inputs, options: Options, result: TriageResult, progress: ProgressFn | None) -> None:
    if options.scheduler:
        from perftriage.analysis.distributed import Cluster  # noqa: PLC0415

        with Cluster(options.scheduler, options.scheduler_timeout) as cluster:
            _run_ctf_on(cluster, inputs, options, result, progress)
            if result.graphs:  # kept (the app's paths): here, before the cluster and its workers' graphs go
                result.graphs = dict(result.graphs)
        return
    _run_ctf_on(None, inputs, options, result, progress)


def _run_ctf_on(cluster, inputs: Inputs, options: Options, result: TriageResult, progress: ProgressFn | None) -> None:
    """The kernel and user-space traces: read here, or host by host on a Dask cluster."""
    def on_read(p: ReadProgress) -> None:
        if progress is not None:
            frac = p.bytes_done / p.bytes_total if p.bytes_total else None
            progress(Progress("reading trace", frac, f"{p.events:,} events"))

    def on_hosts(done: int, hosts: int, events: int) -> None:
        if progress is not None:
            progress(Progress("reading traces on the cluster", done / hosts,
                              f"{done} of {hosts} hosts read, {events:,} events"))

    unit, unit_arg = parse_unit(options.units)
    markers = options.markers if unit in ("markers", "auto") else None
    try:
        if cluster is not None:
            passed = cluster.read(inputs.ctf, markers, progress=on_hosts)
        else:
            consumers = [EventCounter(), GraphBuilder()] + ([MarkerRequests(markers)] if markers is not None else [])
            passed = read_once(inputs.ctf, consumers, progress=on_read, threaded=options.cores() >= 2,
                               decoders=options.cores())
    except MissingDependency as exc:
        result.report.notes.append(str(exc))
        return
    except InputError as exc:  # a trace perftriage converted (a perf.data): its file named, not the folder made of it
        source = inputs.origin(exc.path) if exc.path else None
        if source is None:
            raise
        raise InputError(source, f"a perf recording that this host's perf converted to CTF, unreadable: {exc.problem}"
                         ) from None
    summary, graphs = passed.results[0], passed.results[1]
    report = result.report
    read_error, requests_read = passed.error, passed.results[2] if len(passed.results) > 2 else None
    passed = consumers = None  # the graphs are held by ``graphs`` and the result alone
    release_freed_memory()  # the read's small objects: 50 MiB of heap at 50,000 requests, before the paths' peak
    kind = unit
    if unit in ("markers", "auto"):
        requests = requests_read
        kind = "markers"
        if unit == "auto" and len(requests) == 0 and not (requests.unmatched_starts or requests.unmatched_ends) \
                and graphs:
            kind, requests = auto_units(graphs)
            # events of the application's own that look like a request's start and end are named,
            # with the options that cut requests by them (a perf recording's uprobes)
            result.marker_candidates = marker_candidates(summary.event_counts)
            like = [f"--request-start {a} --request-end {b} ({count_of(na, 'starts')}, {count_of(nb, 'ends')})"
                    for a, b, na, nb in result.marker_candidates]
            report.notes.append(f"no request markers in {_names(inputs)}: each {singular(kind)}'s "
                                "life in the trace is a unit (--units processes|threads|syscall:NAME, or "
                                + ("; ".join(like) + " for the events that look like a request's start and "
                                   "end" if like else "--request-start/--request-end for your own markers") + ")")
    elif unit == "processes":
        requests = process_units(graphs)
    elif unit == "threads":
        requests = thread_units(graphs)
    else:
        requests = syscall_units(graphs, unit_arg)
        kind = options.units
    if read_error is not None:
        summary.error = str(read_error)
        report.notes.append(f"partial data: {read_error}")
    for t in summary.traces:
        report.notes.extend(f"partial data: {p}" for p in t.problems)
        report.notes.extend(f"{t.path}: {n}" for n in t.notes)
    result.summary = summary
    result.requests = requests
    result.graphs = graphs
    result.units = kind
    report.notes.extend(network_notes(getattr(graphs, "facts", graphs)))  # a cluster's graphs stay on its workers
    report.notes.extend(lost_switch_notes(getattr(graphs, "facts", graphs)))
    report.findings.extend(trace_findings(summary))
    if graphs and len(requests):
        def on_feat(i, n):
            if progress is not None:
                progress(Progress("critical paths", i / max(1, n), f"{i:,}/{n:,} units"))

        result.features = (cluster.features(requests, progress=on_feat) if cluster is not None else
                           extract_features(graphs, requests, progress=on_feat))
        report.notes.extend(result.features.notes)
    elif len(requests) and not graphs:
        report.notes.append("no kernel trace among the inputs: requests have no critical path")
    want_threads = options.thread_metrics
    if want_threads is None:
        want_threads = options.thread_windows is not None or (bool(graphs) and kind != "markers" and options.findings)
    if not options.findings:
        result.ready("requests")
    else:
        mask = comparable(requests, options.background)
        if not mask.all() and result.features is not None:
            result.compared = np.flatnonzero(mask)
        if kind in ("processes", "threads"):
            report.findings.extend(time_spent_findings(graphs, background=options.background))
            if mask.sum() >= 2:  # the slowest of the units that can be compared
                report.findings.extend(request_findings(requests.take(np.flatnonzero(mask)), top=options.top,
                                                        unit=kind, features=result.compared_features))
        else:
            report.findings.extend(request_findings(requests, top=options.top, markers=options.markers
                                                    if kind == "markers" else (), features=result.features,
                                                    unit=kind))
        if not (want_threads and graphs):  # nothing reads them from here on (moved before the app asks for a path)
            graphs = _done_with_graphs(graphs, options, result)
        result.ready("requests")
        if result.features is not None:
            if result.compared is not None:
                left = not_compared_summary(requests, mask, options.background)
                report.notes.append(f"{int(mask.sum()):,} of {len(requests):,} {kind} compared for outliers; "
                                    f"not compared: {left}" + ("" if options.background else
                                                               " (--background compares the background too)"))
            _run_request_analysis(result.compared_features, options, result, progress, what=kind)
            result.ready("clusters")
    if want_threads:
        if graphs:
            ts = thread_series_from_graphs(graphs, options.thread_windows or None, background=options.background)
            waits = _cpu_waits(ts, graphs)  # taken before the graphs go: what a ranked thread's waits met
            graphs = _done_with_graphs(graphs, options, result)
            _analyse_threads(ts, "kernel trace", options, result, progress, takers=waits)
        elif options.thread_metrics or options.thread_windows is not None:
            report.notes.append("--thread-metrics needs a kernel trace: none among the inputs")
    if progress is not None:
        progress(Progress("done", 1.0, f"{count_of(summary.events, 'events')}, {count_of(len(requests), 'units')}"))


def _done_with_graphs(graphs: dict[str, ExecGraph], options: Options, result: TriageResult) -> dict[str, ExecGraph]:
    """The graphs once no analysis of the run reads them: gone (the report), moved to mapped
    files (``graphs_on_disk``), or kept as they are."""
    if not options.keep_graphs:
        graphs = result.graphs = {}
    elif options.graphs_on_disk:
        move_to_disk(graphs)
    else:
        return graphs
    release_freed_memory()
    return graphs


def _names(inputs: Inputs) -> str:
    """The traces as the user gave them (a perf.data by its own name, not its temporary folder's)."""
    names = [inputs.origin(str(p)) or str(p) for p in inputs.ctf]
    return names[0] if len(names) == 1 else f"{len(names)} traces"


def _run_request_analysis(ft: FeatureTable, options: Options, result: TriageResult, progress,
                          what: str = "requests") -> None:
    if what == "markers":
        what = "requests"
    if len(ft) < options.min_requests_for_outliers:
        result.report.notes.append(f"{count_of(len(ft), what)} to compare: too few for outlier "
                                   f"detection (at least {options.min_requests_for_outliers})")
        return
    if progress is not None:
        progress(Progress("outliers and clusters", None, f"{len(ft):,} {what}"))
    try:
        ra = analyze_requests(ft, options.outliers, options.clusters)
    except ValueError as exc:  # e.g. a representation the features cannot give
        result.report.notes.append(f"outlier analysis skipped: {exc}")
        return
    result.analysis = ra
    summary, clusters = outlier_summary_finding(ft, ra, what=what), cluster_findings(ft, ra, what=what)
    info = [c.score for c in clusters if c.severity == summary.severity]
    if info:  # clusters said as information only (units of different programs): the summary right after them
        summary.score = min(info) * (1 - 1e-9)
    result.report.findings.append(summary)
    result.report.findings.extend(clusters)


def summary_table(summary: TraceSummary) -> Table:
    rows = []
    for t in summary.traces:
        rows.append([t.path, t.hostname, t.domain, t.tracer, len(t.cpus), t.discarded_events, t.discarded_packets])
    return Table(["trace", "host", "domain", "tracer", "CPUs", "discarded events", "lost packets"], rows)
