"""The analysis options that ``open`` and ``report`` share (``features`` takes the marker ones),
and their translation into the triage's :class:`Options`."""

from __future__ import annotations

import re

from .numbers import number

import argparse
from pathlib import Path

from perftriage.analysis.errors import InputError, PerftriageError

from .common import Usage


def add_marker_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("requests from marker events")
    g.add_argument("--request-start", metavar="EVENT", help="event that starts a request (e.g. myapp:req_begin)")
    g.add_argument("--request-end", metavar="EVENT", help="event that ends a request")
    g.add_argument(
        "--request-key",
        metavar="FIELD",
        default="vtid",
        help="pairs starts with ends: a payload field present in both, or vtid (the thread, default)",
    )
    g.add_argument(
        "--units",
        metavar="UNIT",
        default="auto",
        help="what a request is: auto (default: the markers when the trace has any, else each process's "
             "life in the trace), markers (start/end events), processes, threads (each one's life in the "
             "trace, fork to exit) or syscall:NAME (each call of one system call, e.g. syscall:read)",
    )
    g.add_argument("--jobs", type=number(1, 1024, integer=True), metavar="N",
                   help="cores to use (default: those this process may run on). With 2 or more, the CTF trace is "
                        "decoded beside the analysis in up to that many processes (its stream files shared out, "
                        "one process per 32 MiB of trace and 8 at most), an OTLP span file of 64 MB or more is read "
                        "by two processes, and the thread analysis's bootstrap runs in that many processes; 1 keeps "
                        "everything on one core")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="read the kernel traces host by host and walk the critical paths on a Dask cluster "
                        "(e.g. tcp://HOST:8786; pip install 'perftriage[dask]'): for a fleet's traces, one folder "
                        "per host, that one machine reads too slowly. Every worker must see the traces under the "
                        "same paths")
    g.add_argument("--scheduler-timeout", type=number(0.1, 3600), default=10.0, metavar="SECONDS",
                   help="how long to try to reach the --scheduler before giving up (default 10)")
    g.add_argument("--background", action="store_true",
                   help="compare the system's background too (kernel threads, idle, the tracer's own threads: lttng-*, perf): "
                        "by default it is shown but neither compared for outliers nor ranked among threads")


def add_outlier_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("request outliers and clusters (automatic unless given)")
    g.add_argument("--representation", choices=("durations", "counts", "bow", "tfidf"), default="durations",
                   help="what outliers are found in: state durations (default, ms), state counts, "
                        "system call counts (bow) or their TF-IDF")
    g.add_argument("--detector", choices=("dbscan", "iforest"), default="dbscan")
    g.add_argument("--eps", type=number(0, 1e12, lo_open=True), metavar="X", help="DBSCAN radius, in the representation's unit (ms)")
    g.add_argument("--min-samples", type=number(1, 1e7, integer=True), metavar="N", help="DBSCAN density: neighbours within eps")
    g.add_argument("--minor-fraction", type=number(0, 1), metavar="F", default=0.10,
                   help="dense groups of at most this share of the requests, beside the largest, are outliers too "
                        "(default 0.1; 0: off)")
    g.add_argument("--k", type=number(1, 1000, integer=True), metavar="K", help="number of clusters of outliers (default: elbow of k = 2..10)")
    g.add_argument("--cluster-features", choices=("counts+durations", "counts", "durations"),
                   default="counts+durations", help="what k-means clusters (counts: the paper's choice)")
    g.add_argument("--thresholds", metavar="MS,...", default="200,250,300",
                   help="durations for P(duration > t) among outliers (default 200,250,300 ms)")


def add_thread_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("deviating threads (paper 003)")
    g.add_argument("--replicates", type=number(10, 100_000, integer=True), default=1000, metavar="N",
                   help="bootstrap replicates per scale for the AU p-values (default 1000)")
    g.add_argument("--no-windows", action="store_true", help="threads: only the paper's method (no moving-window check for short deviations, no departure check for long ones)")
    g.add_argument("--thread-metrics", nargs="?", type=number(0.001, 1e7), const=0.0, default=None, metavar="WINDOW_S",
                   help="derive per-thread metrics (CPU, syscalls/s, blocked, preempted, open files, mappings) "
                        "from a kernel trace, in windows of WINDOW_S seconds (default: the span / 200, at least 10 ms), and "
                        "rank the deviating threads; on by default for a kernel trace without request markers")
    g.add_argument("--no-thread-metrics", action="store_true",
                   help="do not derive thread metrics from a kernel trace")
    # '--thread-metrics PATH': the path is a path, not the window (main._normalise_argv)
    g.add_argument("--thread-metrics-auto", dest="thread_metrics", action="store_const", const=0.0,
                   help=argparse.SUPPRESS)


def add_counter_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("counters across servers (PAD)")
    g.add_argument("--rules", metavar="FILE", help="threshold rules, TOML or PAD's XML (default: rules.toml or "
                   "rules.xml beside the counter files)")
    g.add_argument("--interval", metavar="DURATION",
                   help="counter files whose rows are numbered, not timed (a first column idx, index, row or "
                        "sample, or no header at all: datasets published without timestamps): the time between "
                        "two rows, e.g. 5m")
    g.add_argument("--timezone", metavar="ZONE",
                   help="the zone of files whose times are a host's local clock, e.g. Europe/Paris: counter "
                        "files (sar's and iostat's reports, vmstat -t, nmon, dstat, Grafana's and Graphite's CSV; "
                        "default: read as UTC, said in a note) and pidstat's and top's reports (default: this "
                        "machine's zone)")
    g.add_argument("--server-label", default="instance", metavar="LABEL",
                   help="Prometheus label naming the server (default instance)")
    g.add_argument("--server-x", type=number(0, 1e9, lo_open=True), default=2.5, metavar="X",
                   help="report a (server, counter) from this comparative X (default 2.5)")
    g.add_argument("--paper-x", action="store_true",
                   help="PAD's X as the paper defines it (global std, the server included); by default a server is "
                        "compared with the other servers only")
    g.add_argument("--all-peers", action="store_true",
                   help="compare every server with all the others, as PAD does; by default only servers of one "
                        "kind (by name: web-01, web-02) whose usual levels are alike are compared")
    g.add_argument("--time-x", type=number(0, 1e9, lo_open=True), default=2.5, metavar="X",
                   help="report a counter's fleet-wide median from this X at >= 3 time points (default 2.5)")
    g.add_argument("--correlate", action="append", default=[], metavar="COUNTER[@SERVER]",
                   help="also list what moves with this counter, over the fleet or on one server (repeatable)")
    g.add_argument("--prometheus", action="append", default=[], metavar="URL",
                   help="a running Prometheus server to take the counters from (http://HOST:9090), like a "
                        "prometheus+http://HOST:9090 PATH; the series are named by --match")
    g.add_argument("--match", action="append", default=[], metavar="SELECTOR",
                   help="Prometheus series to analyse, e.g. '{job=\"node\"}' or 'node_load1' (repeatable)")
    g.add_argument("--since", default="6h", metavar="WHEN",
                   help="start of the Prometheus window: a duration before --until (6h, 30m, 2d; default 6h) or "
                        "a time (ISO 8601, epoch seconds)")
    g.add_argument("--until", metavar="WHEN", help="end of the Prometheus window: a time, or a duration ago "
                   "(default: now)")
    g.add_argument("--step", metavar="DURATION",
                   help="read Prometheus's values every DURATION (query_range, e.g. 30s) instead of the raw samples "
                        "(the default, as an export to a file would hold them)")
    g.add_argument("--reference-since", metavar="WHEN",
                   help="a baseline window from the same Prometheus (with --reference-until): which servers and "
                        "counters changed against it")
    g.add_argument("--reference-until", metavar="WHEN", help="end of the baseline window (default: now)")
    g.add_argument("--timeout", type=number(0.1, 86400), default=60.0, metavar="SECONDS",
                   help="how long to wait for each answer of a Prometheus server (default 60)")
    g.add_argument("--min-correlation", type=number(0, 1, lo_open=True), default=0.9, metavar="R",
                   help="|Pearson| or |Spearman| from which counters are said to move together (default 0.9)")


def add_span_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("call trees from spans (CloudDiag)")
    g.add_argument("--columns", metavar="KEY=COL,...",
                   help="span CSV columns by name, keys: trace span parent service replica name start end duration "
                        "(e.g. trace=req,start=begin_us); unnamed keys are recognised by common names")
    g.add_argument("--reference", action="append", default=[], metavar="PATH",
                   help="reference (baseline) span files or folders: which categories and methods got slower")
    g.add_argument("--incident-time", metavar="TIME",
                   help="what changed from this time on, against the requests before it in the same spans (the "
                        "five minutes each side; epoch, ISO 8601, HH:MM[:SS] UTC on the spans' day, or +H:MM[:SS] after "
                        "their start; spans with no date take their times as told, +0:05:12); default: "
                        "where the requests changed most")
    g.add_argument("--alpha", type=number(0, 1e6), default=0.0, metavar="CV",
                   help="analyse only categories whose latency CV is above this (default 0: all of them)")
    g.add_argument("--beta", type=number(0, 1, lo_open=True), default=0.97, metavar="COS",
                   help="a method is a candidate when cos(M, L) of its column is below this (default 0.97)")
    g.add_argument("--min-category", type=number(2, 1e9, integer=True), default=20, metavar="N",
                   help="categories with fewer requests are not analysed (default 20)")
    g.add_argument("--method-times", choices=("self", "total"), default="self",
                   help="matrix of self times (default; callee time excluded) or the paper's total times")


def prometheus_range(args):
    """What to ask the Prometheus servers among the inputs (None when there are none); adds the
    ``--prometheus`` servers to ``args.paths``."""
    from perftriage.analysis.inputs import SCHEME, is_prometheus_url  # noqa: PLC0415

    for url in args.prometheus:
        if "://" not in url and re.fullmatch(r"[\w.-]+:\d+(/.*)?", url):
            url = "http://" + url  # HOST:PORT
        url = url if url.startswith(SCHEME) else SCHEME + url
        if not is_prometheus_url(url):
            raise Usage(f"--prometheus: {url[len(SCHEME):]!r} is not an http(s) address (http://HOST:9090)")
        args.paths.append(url)
    for p in args.paths:
        if p.startswith(("http://", "https://")):
            raise Usage(f"{p}: a Prometheus server is named prometheus+{p} (or --prometheus {p})")
    servers = [p for p in args.paths if is_prometheus_url(p)]
    if not servers:
        for name in ("match", "step", "until", "reference_since", "reference_until"):
            if getattr(args, name):
                raise Usage(f"--{name.replace('_', '-')} asks a Prometheus server: name one (--prometheus URL)")
        return None
    if not args.match:
        raise Usage("which series of the Prometheus server? --match SELECTOR (e.g. --match '{job=\"node\"}')")
    if args.reference_until and not args.reference_since:
        raise Usage("--reference-until goes with --reference-since")
    from perftriage.analysis.counters.prometheus_api import PromRange  # noqa: PLC0415

    rng = PromRange(matches=tuple(args.match), since=args.since, until=args.until, step=args.step,
                    timeout=args.timeout, reference_since=args.reference_since,
                    reference_until=args.reference_until)
    try:
        rng.window()
        rng.step_seconds()
        if rng.reference_since:
            rng.window(reference=True)
    except PerftriageError as exc:
        raise Usage(str(exc)) from None
    return rng


def parse_columns(spec: str | None) -> dict | None:
    if not spec:
        return None
    from perftriage.analysis.spans.span_csv import NAMES  # noqa: PLC0415

    out = {}
    for part in spec.split(","):
        if not part.strip():
            continue
        key, eq, col = part.partition("=")
        key = key.strip().lower()
        if not eq or not col.strip():
            raise Usage(f"--columns: {part!r} is not KEY=COLUMN")
        if key not in NAMES:
            raise Usage(f"--columns: unknown key {key!r}; keys: {', '.join(NAMES)}")
        out[key] = col.strip()
    return out


def triage_options(args):
    """The triage options the parsed arguments ask for (usage errors raise :class:`Usage`)."""
    # the light modules of what a user chooses: no analysis, no numpy (the app's first screen waits for these)
    from perftriage.analysis.options import Options  # noqa: PLC0415
    from perftriage.analysis.requests.params import BUILTIN_MARKERS, MarkerSpec, marker_kind, parse_unit  # noqa: PLC0415

    markers = BUILTIN_MARKERS
    if args.request_start or args.request_end:
        if not (args.request_start and args.request_end):
            raise Usage("--request-start and --request-end go together")
        markers = (MarkerSpec(args.request_start, args.request_end, key=args.request_key,
                                      kind=marker_kind(args.request_start)),)
    try:
        parse_unit(args.units)
    except PerftriageError as exc:
        raise Usage(str(exc)) from None
    opts = Options(markers=markers, units=args.units, background=getattr(args, "background", False),
                   jobs=getattr(args, "jobs", None), scheduler=getattr(args, "scheduler", None),
                   scheduler_timeout=getattr(args, "scheduler_timeout", 10.0))
    if getattr(args, "scheduler", None) is not None and "://" not in args.scheduler \
            and not re.fullmatch(r"[\w.-]+:\d+", args.scheduler):
        raise Usage(f"--scheduler: {args.scheduler!r} is not a scheduler address (tcp://HOST:PORT)")
    if hasattr(args, "representation"):
        from perftriage.analysis.requests.params import ClusterParams, OutlierParams  # noqa: PLC0415

        try:
            thresholds = tuple(float(x) for x in args.thresholds.split(",") if x.strip())
        except ValueError:
            raise Usage(f"--thresholds: not a list of numbers: {args.thresholds}") from None
        opts.outliers = OutlierParams(representation=args.representation, detector=args.detector, eps=args.eps,
                                      min_samples=args.min_samples, minor_fraction=args.minor_fraction,
                                      thresholds_ms=thresholds)
        opts.clusters = ClusterParams(features=args.cluster_features, k=args.k)
        try:
            opts.outliers.validate()
            opts.clusters.validate()
        except ValueError as exc:
            raise Usage(str(exc)) from None
    if hasattr(args, "alpha"):
        from perftriage.analysis.calltrees.params import DiagParams  # noqa: PLC0415

        opts.calltrees = DiagParams(alpha=args.alpha, beta=args.beta, min_requests=args.min_category,
                                    times=args.method_times)
        try:
            opts.calltrees.validate()
        except ValueError as exc:
            raise Usage(str(exc)) from None
        opts.span_columns = parse_columns(args.columns)
        opts.reference = tuple(args.reference)
        opts.incident_time = args.incident_time
        for p in opts.reference:
            if not Path(p).exists():
                raise InputError(p, "no such file or folder (--reference)")
    if hasattr(args, "replicates"):
        from perftriage.analysis.threads.params import ThreadParams  # noqa: PLC0415

        opts.threads = ThreadParams(replicates=args.replicates, windows=not args.no_windows,
                                    workers=getattr(args, "jobs", None))
        if args.thread_metrics is not None and args.thread_metrics < 0:
            raise Usage("--thread-metrics: the window must be positive")
        opts.thread_windows = args.thread_metrics or None
        if args.no_thread_metrics and args.thread_metrics is not None:
            raise Usage("--thread-metrics and --no-thread-metrics go against each other")
        opts.thread_metrics = False if args.no_thread_metrics else True if args.thread_metrics is not None else None
        try:
            opts.threads.validate()
        except ValueError as exc:
            raise Usage(str(exc)) from None
    if hasattr(args, "server_x"):
        from perftriage.analysis.counters.params import CorrelationParams, CounterParams  # noqa: PLC0415

        if not 0 < args.min_correlation <= 1:
            raise Usage("--min-correlation must be within (0, 1]")
        opts.counters = CounterParams(server_x=args.server_x, time_x=args.time_x,
                                      correlation=CorrelationParams(threshold=args.min_correlation),
                                      correlate=tuple(args.correlate), paper_x=args.paper_x,
                                      all_peers=args.all_peers)
        try:
            opts.counters.validate()
        except ValueError as exc:
            raise Usage(str(exc)) from None
        if args.rules is not None and not Path(args.rules).is_file():
            raise InputError(args.rules, "no such file (--rules)")
        opts.rules = args.rules
        opts.server_label = args.server_label
        if args.interval is not None:
            from perftriage.analysis.counters.prometheus_api import parse_duration  # noqa: PLC0415

            d = parse_duration(args.interval)
            if d is None or not d > 0:
                raise Usage(f"--interval: {args.interval!r} is not a positive duration (30s, 5m, 1h)")
            opts.counter_interval = d
        if args.timezone is not None:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # noqa: PLC0415

            try:
                ZoneInfo(args.timezone)
            except (ZoneInfoNotFoundError, ValueError):
                raise Usage(f"--timezone: {args.timezone!r} is no time zone this host knows (an IANA name: "
                            "Europe/Paris, America/New_York, UTC)") from None
            opts.local_zone = args.timezone
        opts.prometheus = prometheus_range(args)
    if not args.paths:
        raise Usage("nothing to analyse: name a trace folder, a data file or a server (--prometheus URL)")
    if getattr(args, "top", None) is not None:
        if args.top < 1:
            raise Usage("--top must be at least 1")
        opts.top = args.top
    return opts
