"""The ``perftriage`` command: open the app, or run the analyses headless.

Exit codes (also in ``perftriage --help``):
  0  success
  1  internal error (a bug: please report it with the traceback)
  2  usage error (bad option or argument)
  3  input error: a file or folder cannot be used; nothing was written
  4  partial input: some trace could only be read in part; the output covers what was read
  5  a system package is missing (e.g. babeltrace2's python3-bt2 for CTF traces)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from analysis import __version__
from analysis.errors import InputError, MissingDependency, PerftriageError

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INPUT, EXIT_PARTIAL, EXIT_MISSING = 0, 1, 2, 3, 4, 5

EXIT_CODES_HELP = """exit codes:
  0  success
  1  internal error (a bug: please report it with the traceback)
  2  usage error (bad option or argument)
  3  input error: a file or folder cannot be used; nothing was written
  4  partial input: a trace could only be read in part; the output covers what was read
  5  a system package is missing (e.g. python3-bt2 for CTF traces)
"""

COMMANDS = ("open", "report", "info", "features", "sample", "record")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    pass


def _add_marker_options(p: argparse.ArgumentParser) -> None:
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
        default="markers",
        help="what a request is: markers (start/end events, default), threads (each thread's lifetime, "
             "fork to exit) or syscall:NAME (each call of one system call, e.g. syscall:read)",
    )


def _add_outlier_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("request outliers and clusters (automatic unless given)")
    g.add_argument("--representation", choices=("durations", "counts", "bow", "tfidf"), default="durations",
                   help="what outliers are found in: state durations (default, ms), state counts, "
                        "system call counts (bow) or their TF-IDF")
    g.add_argument("--detector", choices=("dbscan", "iforest"), default="dbscan")
    g.add_argument("--eps", type=float, metavar="X", help="DBSCAN radius, in the representation's unit (ms)")
    g.add_argument("--min-samples", type=int, metavar="N", help="DBSCAN density: neighbours within eps")
    g.add_argument("--minor-fraction", type=float, metavar="F", default=0.05,
                   help="dense groups under this share of the requests are outliers too (default 0.05; 0: off)")
    g.add_argument("--k", type=int, metavar="K", help="number of clusters of outliers (default: elbow of k = 2..10)")
    g.add_argument("--cluster-features", choices=("counts+durations", "counts", "durations"),
                   default="counts+durations", help="what k-means clusters (counts: the paper's choice)")
    g.add_argument("--thresholds", metavar="MS,...", default="200,250,300",
                   help="durations for P(duration > t) among outliers (default 200,250,300 ms)")


def _add_thread_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("deviating threads (paper 003)")
    g.add_argument("--replicates", type=int, default=1000, metavar="N",
                   help="bootstrap replicates per scale for the AU p-values (default 1000)")
    g.add_argument("--no-windows", action="store_true", help="threads: only the paper's method (no moving-window check for short deviations, no departure check for long ones)")
    g.add_argument("--thread-metrics", nargs="?", type=float, const=0.0, default=None, metavar="WINDOW_S",
                   help="also derive per-thread metrics (CPU, syscalls, blocked, preempted, handles, mappings) "
                        "from a kernel trace, in windows of WINDOW_S seconds (default: the span / 200), and "
                        "rank the deviating threads")


def _add_counter_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("counters across servers (PAD)")
    g.add_argument("--rules", metavar="FILE", help="threshold rules, TOML or PAD's XML (default: rules.toml or "
                   "rules.xml beside the counter files)")
    g.add_argument("--server-label", default="instance", metavar="LABEL",
                   help="Prometheus label naming the server (default instance)")
    g.add_argument("--server-x", type=float, default=2.5, metavar="X",
                   help="report a (server, counter) from this comparative X (default 2.5)")
    g.add_argument("--time-x", type=float, default=2.5, metavar="X",
                   help="report a counter's fleet-wide median from this X at >= 3 time points (default 2.5)")
    g.add_argument("--correlate", action="append", default=[], metavar="COUNTER[@SERVER]",
                   help="also list what moves with this counter, over the fleet or on one server (repeatable)")
    g.add_argument("--min-correlation", type=float, default=0.9, metavar="R",
                   help="|Pearson| or |Spearman| from which counters are said to move together (default 0.9)")


def _add_span_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("call trees from spans (CloudDiag)")
    g.add_argument("--columns", metavar="KEY=COL,...",
                   help="span CSV columns by name, keys: trace span parent service replica name start end duration "
                        "(e.g. trace=req,start=begin_us); unnamed keys are recognised by common names")
    g.add_argument("--reference", action="append", default=[], metavar="PATH",
                   help="reference (baseline) span files or folders: which categories and methods got slower")
    g.add_argument("--alpha", type=float, default=0.0, metavar="CV",
                   help="analyse only categories whose latency CV is above this (default 0: all of them)")
    g.add_argument("--beta", type=float, default=0.97, metavar="COS",
                   help="a method is a candidate when cos(M, L) of its column is below this (default 0.97)")
    g.add_argument("--min-category", type=int, default=20, metavar="N",
                   help="categories with fewer requests are not analysed (default 20)")
    g.add_argument("--method-times", choices=("self", "total"), default="self",
                   help="matrix of self times (default; callee time excluded) or the paper's total times")


def parse_columns(spec: str | None) -> dict | None:
    from analysis.spans.span_csv import NAMES  # noqa: PLC0415

    if not spec:
        return None
    out = {}
    for part in spec.split(","):
        if not part.strip():
            continue
        key, eq, col = part.partition("=")
        key = key.strip().lower()
        if not eq or not col.strip():
            raise _Usage(f"--columns: {part!r} is not KEY=COLUMN")
        if key not in NAMES:
            raise _Usage(f"--columns: unknown key {key!r}; keys: {', '.join(NAMES)}")
        out[key] = col.strip()
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perftriage",
        formatter_class=_Formatter,
        description=(
            "Triage performance problems from traces and metrics: which requests, threads, methods "
            "or servers misbehave, and why.\n\n"
            "  perftriage PATH...            open the app on traces / data files / folders\n"
            "  perftriage report PATH...     the same analyses, headless, as Markdown or JSON\n"
            "  perftriage info PATH...       what a CTF trace holds"
        ),
        epilog=EXIT_CODES_HELP,
    )
    parser.add_argument("--version", action="version", version=f"perftriage {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p_open = sub.add_parser(
        "open",
        help="open the app on PATHs (the default command)",
        formatter_class=_Formatter,
        description="Open the terminal app on traces, data files or folders. Keys: ? in the app.",
        epilog=EXIT_CODES_HELP,
    )
    p_open.add_argument("paths", nargs="+", metavar="PATH")
    _add_marker_options(p_open)
    _add_outlier_options(p_open)
    _add_span_options(p_open)
    _add_thread_options(p_open)
    _add_counter_options(p_open)

    p_report = sub.add_parser(
        "report",
        help="run the analyses headless and write the findings",
        formatter_class=_Formatter,
        description="Run every analysis that applies to the inputs and write the ranked findings.",
        epilog=EXIT_CODES_HELP,
    )
    p_report.add_argument("paths", nargs="+", metavar="PATH")
    p_report.add_argument("-o", "--output", metavar="FILE", help="write here (atomically) instead of stdout")
    p_report.add_argument("--format", choices=("md", "json"), default=None, help="md (default) or json; "
                          "by default taken from the -o file's extension")
    p_report.add_argument("--top", type=int, default=20, metavar="N", help="rows in 'slowest' tables (default 20)")
    p_report.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    _add_marker_options(p_report)
    _add_outlier_options(p_report)
    _add_span_options(p_report)
    _add_thread_options(p_report)
    _add_counter_options(p_report)

    p_feat = sub.add_parser(
        "features",
        help="write the per-request critical-path features as CSV",
        formatter_class=_Formatter,
        description=(
            "Cut requests out of kernel (+ user-space) traces, follow each one's critical path across\n"
            "threads and write, per request, the time and number of segments in each state (RU RS BP BD\n"
            "BN BS BI BF BT; they sum to TT), its system calls and its state sequence, as CSV.\n"
            "`perftriage report features.csv` reads it back (so do CSVs made by other tools)."
        ),
        epilog=EXIT_CODES_HELP,
    )
    p_feat.add_argument("paths", nargs="+", metavar="PATH")
    p_feat.add_argument("-o", "--output", metavar="FILE", required=True, help="CSV file to write (atomically)")
    _add_marker_options(p_feat)

    p_info = sub.add_parser(
        "info",
        help="summarise CTF traces: hosts, domains, CPUs, time span, events per name, losses",
        formatter_class=_Formatter,
        description="Summarise CTF traces (several folders of one host are read together).",
        epilog=EXIT_CODES_HELP,
    )
    p_info.add_argument("paths", nargs="+", metavar="PATH")
    p_info.add_argument("--json", action="store_true", help="print JSON instead of text")

    p_sample = sub.add_parser(
        "sample",
        help="write simulated data with its ground truth (traced web server, or microservice spans)",
        formatter_class=_Formatter,
        description=(
            "--system webserver (default): simulate a PHP web server on an N-CPU host and write what\n"
            "LTTng would have recorded (kernel + user-space CTF traces) plus ground_truth.json: every\n"
            "request's injected cause. Causes: lock_contention, connect_retry, write_heavy, slow_disk,\n"
            "cpu_contention, slow_db (the database reads from a slow disk; on by default with --db-host).\n"
            "--db-host NAME: the database on a second traced host (a folder per host, TCP packets with\n"
            "their headers between them, the database host's clock off by --db-clock-offset-ms and\n"
            "drifting by --db-clock-drift-ppm): critical paths follow the queries across.\n"
            "--system microservices: 6 replicated services, 5 request types with their call trees, slow\n"
            "methods injected (--scenario replica | method | replica+noise | none), written as OTLP JSON\n"
            "and as the CloudDiag log format (clouddiag-log/), with ground_truth.json: the slow\n"
            "(method, replica) pairs."
        ),
        epilog=EXIT_CODES_HELP,
    )
    p_sample.add_argument("--out", default="perftriage-sample", metavar="DIR",
                          help="new folder to create (default ./perftriage-sample); never overwritten")
    p_sample.add_argument("--requests", type=int, default=2000, metavar="N")
    p_sample.add_argument("--cpus", type=int, default=4, metavar="N")
    p_sample.add_argument("--workers", type=int, default=32, metavar="N", help="Apache workers (default 32)")
    p_sample.add_argument("--rate", type=float, default=60.0, metavar="R", help="requests per second (default 60)")
    p_sample.add_argument("--seed", type=int, default=1, metavar="S")
    p_sample.add_argument("--causes", metavar="SPEC", default=None,
                          help="comma-separated cause[=rate] (e.g. slow_disk=0.05,write_heavy); "
                               "'none' for a normal population only; default: all five at their default rates")
    p_sample.add_argument("--db-host", metavar="NAME", default=None,
                          help="webserver: run the database on a second traced host named NAME")
    p_sample.add_argument("--db-clock-offset-ms", type=float, default=3.2, metavar="MS",
                          help="with --db-host: the database host's clock minus the web host's (default 3.2)")
    p_sample.add_argument("--db-clock-drift-ppm", type=float, default=12.0, metavar="PPM",
                          help="with --db-host: its clock's drift (default 12)")
    p_sample.add_argument("--incidents", metavar="KIND[@SERVER][:START],...", default=None,
                          help="fleet: stuck_rng, buffer_leak, hot_partition; SERVER 0-based, START a fraction "
                               "of the run (e.g. stuck_rng@4:0.3,buffer_leak:0.4; default: stuck_rng and "
                               "hot_partition on random servers; 'none' for a healthy fleet)")
    p_sample.add_argument("--servers", type=int, default=25, metavar="N", help="fleet: servers (default 25)")
    p_sample.add_argument("--points", type=int, default=288, metavar="N",
                          help="fleet: samples per counter, every 5 min (default 288: a day)")
    p_sample.add_argument("--system", choices=("webserver", "microservices", "threads", "fleet"), default="webserver",
                          help="threads: a load test's thread pool (8 waves x 10 threads, 5 metrics) with the "
                               "paper 003 deviations (--deviations)")
    p_sample.add_argument("--deviations", metavar="W:T=KIND,...", default=None,
                          help="threads: e.g. 2:3=memory_leak,5:0=cpu_spike (wave:thread, 0-based; kinds "
                               "cpu_spike, memory_leak, io_leak); default: the paper's random thread-level mix")

    p_rec = sub.add_parser(
        "record",
        help="sample a live process's threads from /proc into a CSV (record threads --pid PID -o FILE)",
        formatter_class=_Formatter,
        description=(
            "record threads: every --interval seconds, per thread of --pid: CPU %, context switches,\n"
            "page faults, I/O bytes, and the process's memory and open fds, from /proc. Stops after\n"
            "--duration, when the process exits, or on Ctrl-C, keeping everything sampled. The CSV\n"
            "is what `perftriage report FILE` and the Threads pane read."
        ),
        epilog=EXIT_CODES_HELP,
    )
    p_rec.add_argument("what", choices=("threads",))
    p_rec.add_argument("--pid", type=int, required=True)
    p_rec.add_argument("--interval", type=float, default=1.0, metavar="S", help="seconds between samples (default 1)")
    p_rec.add_argument("--duration", type=float, default=None, metavar="S", help="stop after this long")
    p_rec.add_argument("-o", "--output", required=True, metavar="FILE", help="CSV to write (renamed into place)")
    p_sample.add_argument("--scenario", choices=("replica", "method", "replica+noise", "none"), default="replica",
                          help="microservices: what is slow (default replica)")
    p_sample.add_argument("--slowdown", type=float, default=4.0, metavar="X",
                          help="microservices: factor on the slow methods' own time (default 4)")
    p_sample.add_argument("--drift-ms", type=float, default=5.0, metavar="MS",
                          help="microservices: clock offsets between hosts, up to this (default 5 ms)")
    return parser


def _normalise_argv(argv: list[str]) -> list[str]:
    """``perftriage PATH...`` means ``perftriage open PATH...``."""
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        return ["open", *argv]
    return argv


def _options(args):
    from analysis.requests import BUILTIN_MARKERS, MarkerSpec  # noqa: PLC0415
    from analysis.triage import Options  # noqa: PLC0415

    markers = BUILTIN_MARKERS
    if args.request_start or args.request_end:
        if not (args.request_start and args.request_end):
            raise _Usage("--request-start and --request-end go together")
        markers = (MarkerSpec(args.request_start, args.request_end, key=args.request_key, kind="custom"),)
    from analysis.request_units import parse_unit  # noqa: PLC0415

    try:
        parse_unit(args.units)
    except PerftriageError as exc:
        raise _Usage(str(exc)) from None
    opts = Options(markers=markers, units=args.units)
    if hasattr(args, "representation"):
        from analysis.clusters import ClusterParams  # noqa: PLC0415
        from analysis.outliers import OutlierParams  # noqa: PLC0415

        try:
            thresholds = tuple(float(x) for x in args.thresholds.split(",") if x.strip())
        except ValueError:
            raise _Usage(f"--thresholds: not a list of numbers: {args.thresholds}") from None
        opts.outliers = OutlierParams(representation=args.representation, detector=args.detector, eps=args.eps,
                                      min_samples=args.min_samples, minor_fraction=args.minor_fraction,
                                      thresholds_ms=thresholds)
        opts.clusters = ClusterParams(features=args.cluster_features, k=args.k)
        try:
            opts.outliers.validate()
            opts.clusters.validate()
        except ValueError as exc:
            raise _Usage(str(exc)) from None
    if hasattr(args, "alpha"):
        from analysis.clouddiag import DiagParams  # noqa: PLC0415

        opts.calltrees = DiagParams(alpha=args.alpha, beta=args.beta, min_requests=args.min_category,
                                    times=args.method_times)
        try:
            opts.calltrees.validate()
        except ValueError as exc:
            raise _Usage(str(exc)) from None
        opts.span_columns = parse_columns(args.columns)
        opts.reference = tuple(args.reference)
        for p in opts.reference:
            if not Path(p).exists():
                raise InputError(p, "no such file or folder (--reference)")
    if hasattr(args, "replicates"):
        from analysis.threads.deviation import ThreadParams  # noqa: PLC0415

        opts.threads = ThreadParams(replicates=args.replicates, windows=not args.no_windows)
        if args.thread_metrics is not None and args.thread_metrics < 0:
            raise _Usage("--thread-metrics: the window must be positive")
        opts.thread_windows = args.thread_metrics
        try:
            opts.threads.validate()
        except ValueError as exc:
            raise _Usage(str(exc)) from None
    if hasattr(args, "server_x"):
        from analysis.counters.correlation import CorrelationParams  # noqa: PLC0415
        from analysis.counters.findings import CounterParams  # noqa: PLC0415

        if not 0 < args.min_correlation <= 1:
            raise _Usage("--min-correlation must be within (0, 1]")
        opts.counters = CounterParams(server_x=args.server_x, time_x=args.time_x,
                                      correlation=CorrelationParams(threshold=args.min_correlation),
                                      correlate=tuple(args.correlate))
        try:
            opts.counters.validate()
        except ValueError as exc:
            raise _Usage(str(exc)) from None
        if args.rules is not None and not Path(args.rules).is_file():
            raise InputError(args.rules, "no such file (--rules)")
        opts.rules = args.rules
        opts.server_label = args.server_label
    if getattr(args, "top", None) is not None:
        if args.top < 1:
            raise _Usage("--top must be at least 1")
        opts.top = args.top
    return opts


class _Usage(Exception):
    pass


def _stderr_progress():
    """Progress on stderr when it is a terminal: one line, rewritten in place."""
    if not sys.stderr.isatty():
        return None

    def show(p):
        pct = f"{p.fraction * 100:5.1f}%" if p.fraction is not None else "     "
        sys.stderr.write(f"\r{pct} {p.stage}: {p.text}".ljust(70)[:79])
        sys.stderr.flush()

    return show


def cmd_report(args) -> int:
    from analysis.atomic import atomic_write, check_target  # noqa: PLC0415
    from analysis.findings import render  # noqa: PLC0415
    from analysis.triage import run_triage  # noqa: PLC0415

    if args.output:
        check_target(args.output, protect=args.paths)
    fmt = args.format
    if fmt is None:
        fmt = "json" if args.output and args.output.lower().endswith(".json") else "md"
    progress = None if args.quiet else _stderr_progress()
    result = run_triage(args.paths, _options(args), progress=progress)
    if progress is not None:
        sys.stderr.write("\r" + " " * 79 + "\r")
    text = render(result.report, fmt)
    if args.output:
        atomic_write(args.output, text, protect=[str(p) for p in result.inputs.ctf])
        print(f"wrote {args.output} ({len(result.report.findings)} findings)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    partial = any(n.startswith("partial data") for n in result.report.notes)
    missing = [n for n in result.report.notes if "python3-bt2" in n]
    if missing and not result.report.findings:
        print(missing[0], file=sys.stderr)
        return EXIT_MISSING
    return EXIT_PARTIAL if partial else EXIT_OK


def cmd_features(args) -> int:
    from analysis.atomic import atomic_write, check_target  # noqa: PLC0415
    from analysis.features import to_csv  # noqa: PLC0415
    from analysis.triage import run_triage  # noqa: PLC0415

    check_target(args.output, protect=args.paths)
    opts = _options(args)
    opts.findings = False  # the features only: no outlier detection, clusters or findings to build
    result = run_triage(args.paths, opts, progress=_stderr_progress())
    if sys.stderr.isatty():
        sys.stderr.write("\r" + " " * 79 + "\r")
    ft = result.features
    if ft is None or len(ft) == 0:
        reason = "no requests found" if not result.requests or not len(result.requests) else "no kernel trace"
        raise InputError(", ".join(args.paths), f"no features to write: {reason}")
    atomic_write(args.output, to_csv(ft), protect=[str(p) for p in result.inputs.ctf])
    print(f"wrote {args.output}: {len(ft):,} requests x {len(ft.states)} states", file=sys.stderr)
    for note in result.report.notes:
        print(f"perftriage: {note}", file=sys.stderr)
    partial = any(n.startswith("partial data") for n in result.report.notes)
    return EXIT_PARTIAL if partial else EXIT_OK


def cmd_info(args) -> int:
    from analysis.ctf.summary import summarize  # noqa: PLC0415
    from analysis.units import fmt_duration, fmt_timestamp  # noqa: PLC0415

    s = summarize(args.paths)
    if args.json:
        data = {
            "traces": [
                {
                    "path": t.path,
                    "hostname": t.hostname,
                    "domain": t.domain,
                    "tracer": t.tracer,
                    "cpus": sorted(t.cpus),
                    "discarded_events": t.discarded_events,
                    "discarded_events_unknown": t.discarded_events_unknown,
                    "lost_packets": t.discarded_packets,
                    "size_bytes": t.size,
                    "problems": list(t.problems),
                }
                for t in s.traces
            ],
            "hosts": s.hosts,
            "events": s.events,
            "begin_ns": s.begin_ns,
            "end_ns": s.end_ns,
            "event_counts": s.event_counts,
            "error": s.error,
        }
        print(json.dumps(data, indent=2))
    else:
        out = []
        for t in s.traces:
            out.append(f"trace   {t.path}")
            out.append(f"  host {t.hostname}  domain {t.domain}  tracer {t.tracer}  CPUs {len(t.cpus)} "
                       f"({_ranges(sorted(t.cpus))})  {t.size / 1e6:.1f} MB")
            loss = f"  discarded events {t.discarded_events:,}  lost packets {t.discarded_packets:,}"
            if t.discarded_events_unknown:
                loss += f"  (+{t.discarded_events_unknown} discard records of unknown size)"
            out.append(loss)
            for problem in t.problems:
                out.append(f"  DAMAGED {problem}")
        if s.begin_ns is not None:
            out.append(f"time    {fmt_timestamp(s.begin_ns)} .. {fmt_timestamp(s.end_ns)} UTC "
                       f"({fmt_duration(s.end_ns - s.begin_ns)})")
        out.append(f"events  {s.events:,}" + (f"  ({', '.join(f'{h}: {n:,}' for h, n in s.per_host_events.items())})"
                                             if len(s.per_host_events) > 1 else ""))
        width = max((len(n) for n in s.event_counts), default=10)
        for name, n in s.event_counts.items():
            out.append(f"  {name:<{width}}  {n:>12,}")
        if s.error:
            out.append(f"error   {s.error}")
        print("\n".join(out))
    damaged = [p for t in s.traces for p in t.problems]
    for problem in ([s.error] if s.error else []) + damaged:
        print(f"perftriage: {problem}", file=sys.stderr)
    return EXIT_PARTIAL if s.error or damaged else EXIT_OK


SLOW_DB_RATE = 0.02  # slow_db's rate when asked without one, and by default with --db-host


def parse_causes(spec: str | None) -> dict:
    from analysis.sim.webserver import CAUSES, DEFAULT_MIX  # noqa: PLC0415

    if spec is None:
        return dict(DEFAULT_MIX)
    if spec.strip() == "none":
        return {}
    mix = {}
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, rate = part.partition("=")
        if name not in CAUSES:
            raise _Usage(f"unknown cause {name!r}; known: {', '.join(CAUSES)}")
        try:
            mix[name] = float(rate) if rate else DEFAULT_MIX.get(name, SLOW_DB_RATE)
        except ValueError:
            raise _Usage(f"bad rate {rate!r} for {name}") from None
    return mix


def cmd_sample(args) -> int:
    if args.system == "microservices":
        return _sample_microservices(args)
    if args.system == "threads":
        return _sample_threads(args)
    if args.system == "fleet":
        return _sample_fleet(args)
    from analysis.sim.sample import write_webserver_sample  # noqa: PLC0415
    from analysis.sim.webserver import WebServerConfig  # noqa: PLC0415

    mix = parse_causes(args.causes)
    if args.db_host and args.causes is None:
        mix["slow_db"] = SLOW_DB_RATE
    two = {"db_host": args.db_host, "db_clock_offset_ms": args.db_clock_offset_ms,
           "db_clock_drift_ppm": args.db_clock_drift_ppm} if args.db_host else {}
    cfg = WebServerConfig(requests=args.requests, cpus=args.cpus, workers=args.workers, rate=args.rate,
                          seed=args.seed, mix=mix, **two)
    try:
        cfg.validate()
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    progress = None
    if sys.stderr.isatty():
        def progress(done, total, events):
            sys.stderr.write(f"\r{done:,}/{total:,} requests, {events:,} events".ljust(60))
            sys.stderr.flush()
    st = write_webserver_sample(args.out, cfg, progress=progress)
    if progress is not None:
        sys.stderr.write("\r" + " " * 60 + "\r")
    causes = ", ".join(f"{k} {v}" for k, v in st.causes.items())
    print(f"wrote {st.out}: {st.requests:,} requests ({causes}), {st.events:,} events "
          f"({st.kernel_events:,} kernel, {st.ust_events:,} ust), {st.bytes / 1e6:.1f} MB")
    print(f"simulated in {st.simulate_s:.1f} s, written in {st.write_s:.1f} s "
          f"({st.events / max(st.write_s, 1e-9):,.0f} events/s written)")
    return EXIT_OK


def parse_incidents(spec: str | None, servers: int, seed: int) -> dict:
    import numpy as np  # noqa: PLC0415

    from analysis.sim.fleet import INCIDENTS, random_incidents  # noqa: PLC0415

    if spec is None:
        return random_incidents(np.random.default_rng(seed), servers, ("stuck_rng", "hot_partition"))
    if spec.strip() == "none":
        return {}
    out = {}
    for part in spec.split(","):
        m = re.fullmatch(r"\s*([a-z_]+)(?:@(\d+))?(?::([0-9.]+))?\s*", part)
        if not m or m.group(1) not in INCIDENTS:
            raise _Usage(f"--incidents: {part!r} is not KIND[@SERVER][:START] ({', '.join(INCIDENTS)})")
        out[m.group(1)] = {"server": int(m.group(2) or 0), "start": float(m.group(3) or 0.3)}
    return out


def _sample_fleet(args) -> int:
    from analysis.sim.fleet import COUNTERS, FleetConfig, write_fleet_sample  # noqa: PLC0415

    cfg = FleetConfig(servers=args.servers, points=args.points, seed=args.seed,
                      incidents=parse_incidents(args.incidents, args.servers, args.seed))
    try:
        cfg.validate()
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    truth = write_fleet_sample(args.out, cfg)
    inc = "; ".join(f"{i['kind']} on {i['servers'][0] if len(i['servers']) == 1 else 'every server'} from "
                    f"point {i['start_index']}" for i in truth["incidents"]) or "none"
    print(f"wrote {args.out}: {cfg.servers} servers x {len(COUNTERS)} counters x {cfg.points} points "
          f"(counters.csv, rules.toml); incidents: {inc}")
    return EXIT_OK


def _sample_threads(args) -> int:
    import numpy as np  # noqa: PLC0415

    from analysis.sim.threadpool import DEVIATIONS, PoolConfig, random_deviations, write_threadpool_sample  # noqa

    if args.deviations:
        devs = {}
        for part in args.deviations.split(","):
            key, eq, kind = part.strip().partition("=")
            w, colon, t = key.partition(":")
            if not (eq and colon and w.isdigit() and t.isdigit()) or kind not in DEVIATIONS:
                raise _Usage(f"--deviations: {part!r} is not WAVE:THREAD=KIND ({', '.join(DEVIATIONS)})")
            devs[f"{int(w)}:{int(t)}"] = kind
    else:
        devs = random_deviations(np.random.default_rng(args.seed), 8, 10, "threads")
    cfg = PoolConfig(seed=args.seed, deviations=devs)
    try:
        cfg.validate()
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    truth = write_threadpool_sample(args.out, cfg)
    print(f"wrote {args.out}: {cfg.waves} waves x {cfg.threads_per_wave} threads x {cfg.samples} samples "
          f"(threads.csv); deviating: " + (", ".join(f"{d['wave']}/{d['thread']} {d['kind']}"
                                                    for d in truth["deviating"]) or "none"))
    return EXIT_OK


def cmd_record(args) -> int:
    from analysis.threads.record import record_threads  # noqa: PLC0415

    from analysis.atomic import check_target  # noqa: PLC0415

    check_target(args.output)
    if args.interval <= 0:
        raise _Usage("--interval must be positive")
    progress = None
    if sys.stderr.isatty():
        def progress(n, threads):
            sys.stderr.write(f"\r{n:,} samples of {threads} threads (Ctrl-C stops and keeps them)".ljust(70))
            sys.stderr.flush()
    st = record_threads(args.pid, args.output, args.interval, args.duration, progress)
    if progress is not None:
        sys.stderr.write("\r" + " " * 70 + "\r")
    print(f"wrote {st['out']}: {st['samples']:,} samples, {st['rows']:,} rows of {st['process']} ({st['stopped']})")
    return EXIT_OK


def _sample_microservices(args) -> int:
    from analysis.sim.microservices import MicroConfig, write_microservice_sample  # noqa: PLC0415

    rate = args.rate if args.rate != 60.0 else 200.0
    cfg = MicroConfig(requests=args.requests, seed=args.seed, scenario=args.scenario, slowdown=args.slowdown,
                      drift_ms=args.drift_ms, rate=rate)
    try:
        cfg.validate()
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    truth = write_microservice_sample(args.out, cfg)
    pairs = ", ".join(f"{m} on {r}" for m, r in truth["slow_pairs"][:6]) or "nothing"
    print(f"wrote {args.out}: {truth['requests']:,} requests, {truth['spans']:,} spans "
          f"(spans.otlp.jsonl, clouddiag-log/calls.log); slow: {pairs}")
    return EXIT_OK


def _ranges(nums: list[int]) -> str:
    if not nums:
        return "-"
    parts = []
    start = prev = nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ",".join(parts)


def cmd_open(args) -> int:
    opts = _options(args)
    for p in args.paths:
        if not Path(p).exists():
            raise InputError(p, "no such file or folder")
    try:
        from tui.app import run_app  # noqa: PLC0415
    except ImportError as exc:
        raise MissingDependency(f"the app needs textual, which is not importable here ({exc}): run `make run`")
    return run_app(args.paths, opts)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(_normalise_argv(argv))
    handlers = {"open": cmd_open, "report": cmd_report, "info": cmd_info, "features": cmd_features,
                "sample": cmd_sample, "record": cmd_record}
    try:
        return handlers[args.command](args)
    except _Usage as exc:
        parser.error(str(exc))
    except MissingDependency as exc:
        print(f"perftriage: {exc}", file=sys.stderr)
        return EXIT_MISSING
    except InputError as exc:
        print(f"perftriage: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except PerftriageError as exc:
        print(f"perftriage: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:
        where = exc.filename or ""
        print(f"perftriage: {where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("perftriage: interrupted", file=sys.stderr)
        return 130
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

