"""``perftriage record``: make the inputs on the host itself.

- ``record trace``: an LTTng session with the kernel and user-space events the analyses read
  (:mod:`perftriage.analysis.recording`), for ``--duration``, while a command runs, or until
  Ctrl-C / SIGTERM / SIGHUP; then ``--open`` or ``--report`` on it.
- ``record threads --pid PID -o FILE``: a live process's threads sampled from /proc into a CSV.
"""

from __future__ import annotations

from .numbers import number

import os
import sys
import time
from pathlib import Path

from .common import EXIT_CODES_HELP, EXIT_OK, Formatter, Usage


def add_parser(sub) -> None:
    p_rec = sub.add_parser(
        "record",
        help="record what the analyses read: an LTTng trace (record trace), or a process's threads from /proc "
             "(record threads --pid PID -o FILE)",
        formatter_class=Formatter,
        description="Record on this host what perftriage analyses: `record trace` (LTTng) or `record threads`.",
        epilog=EXIT_CODES_HELP,
    )
    what = p_rec.add_subparsers(dest="what", metavar="WHAT", required=True)
    p_trace = what.add_parser(
        "trace",
        help="record a kernel + user-space LTTng trace with exactly the events the analyses need",
        formatter_class=Formatter,
        description=(
            "Record an LTTng session with the kernel events the critical paths, the network matching and the\n"
            "thread metrics read (scheduling, wake-ups, fork/exec/exit, interrupts and softirqs, network queue\n"
            "and receive, every system call, the statedump) and the request markers of traced applications\n"
            "(PHP, Apache, or --request-start/--request-end), in per-CPU buffers sized for --event-rate.\n"
            "Stops after --duration, when COMMAND exits, or on Ctrl-C, SIGTERM or SIGHUP (an SSH session\n"
            "closing), keeping what was recorded. Kernel tracing needs root and lttng-modules; --user-only\n"
            "records user space alone. --dry-run prints the lttng commands.\n\n"
            "  perftriage record trace --duration 30 --open\n"
            "  perftriage record trace --user-only -o /tmp/t -- ./server --port 8080"
        ),
        epilog=EXIT_CODES_HELP,
    )
    p_trace.add_argument("run_command", nargs="*", metavar="COMMAND",
                         help="run this once tracing runs (after --), and stop when it exits")
    p_trace.add_argument("-o", "--output", metavar="DIR",
                         help="trace folder to create (default ./perftriage-trace-DATE-TIME); must not exist or be empty")
    p_trace.add_argument("--duration", type=number(0, 1e8, lo_open=True), metavar="S", help="stop after S seconds")
    p_trace.add_argument("--user-only", action="store_true", help="user space alone (no kernel events)")
    p_trace.add_argument("--kernel-only", action="store_true", help="kernel alone (no user-space markers)")
    p_trace.add_argument("--request-start", metavar="EVENT", help="user-space event that starts a request "
                         "(default: the PHP and Apache markers perftriage knows)")
    p_trace.add_argument("--request-end", metavar="EVENT", help="user-space event that ends a request")
    p_trace.add_argument("--event-rate", type=number(1, 1e9), default=500_000, metavar="N",
                         help="events per second expected on the whole host (default 500,000): sizes the per-CPU "
                              "buffers to hold about a second of each CPU's share")
    p_trace.add_argument("--kernel-with", choices=("auto", "lttng", "perf"), default="auto",
                         help="the kernel's tracer: LTTng (needs lttng-modules), perf (needs root and linux-perf: "
                              "the kernel's tracepoints, merged with LTTng's user space by time), or auto (default: "
                              "LTTng where it can trace the kernel, else perf where it can)")
    p_trace.add_argument("--dry-run", action="store_true", help="print the lttng (and perf) commands and do nothing")
    then = p_trace.add_mutually_exclusive_group()
    then.add_argument("--open", action="store_true", help="open the app on the trace when recording ends")
    then.add_argument("--report", action="store_true", help="print the report of the trace when recording ends")

    p_thr = what.add_parser(
        "threads",
        help="sample a live process's threads from /proc into a CSV",
        formatter_class=Formatter,
        description=(
            "record threads: every --interval seconds, per thread of --pid: CPU %, context switches,\n"
            "page faults, I/O bytes, and the process's memory and open fds, from /proc. Stops after\n"
            "--duration, when the process exits (or is a zombie), on Ctrl-C, SIGTERM or SIGHUP (the SSH\n"
            "session closing), keeping everything sampled. The CSV\n"
            "is what `perftriage report FILE` and the Threads pane read."
        ),
        epilog=EXIT_CODES_HELP,
    )
    p_thr.add_argument("--pid", type=number(1, 2**31 - 1, integer=True), required=True)
    p_thr.add_argument("--interval", type=number(0.01, 86400), default=1.0, metavar="S", help="seconds between samples (default 1)")
    p_thr.add_argument("--duration", type=number(0, 1e8, lo_open=True), default=None, metavar="S", help="stop after this long")
    p_thr.add_argument("-o", "--output", required=True, metavar="FILE", help="CSV to write (renamed into place)")


def run(args) -> int:
    return run_trace(args) if args.what == "trace" else run_threads(args)


def run_threads(args) -> int:
    from perftriage.analysis.atomic import check_target  # noqa: PLC0415
    from perftriage.analysis.threads.record import record_threads  # noqa: PLC0415

    check_target(args.output)
    if args.interval <= 0:
        raise Usage("--interval must be positive")
    progress = None
    if sys.stderr.isatty():
        def progress(n, threads):
            sys.stderr.write(f"\r{n:,} samples of {threads} threads (Ctrl-C stops and keeps them)".ljust(70))
            sys.stderr.flush()
    st = record_threads(args.pid, args.output, args.interval, args.duration, progress)
    if progress is not None:
        sys.stderr.write("\r" + " " * 70 + "\r")
    n, rows = st["samples"], st["rows"]
    print(f"wrote {st['out']}: {n:,} sample{'' if n == 1 else 's'}, {rows:,} row{'' if rows == 1 else 's'} of "
          f"{st['process']} ({st['stopped']})")
    return EXIT_OK


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.0f} KiB"


def _say(text: str) -> None:
    """To stderr; an SSH session that closed (SIGHUP) leaves no terminal to write to."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except OSError:
        pass


def _kernel_tracer(args, out: Path, recording):
    """(PerfKernel or None for LTTng's kernel tracing, the words that say perf records it and why):
    by --kernel-with, and for auto where LTTng cannot trace the kernel and perf can."""
    from perftriage.analysis import recording_perf  # noqa: PLC0415
    from perftriage.analysis.errors import MissingDependency  # noqa: PLC0415

    lttng_why = None if args.kernel_with == "perf" else recording.kernel_tracing_problem()
    if args.kernel_with == "lttng" or (args.kernel_with == "auto" and lttng_why is None):
        if lttng_why and not args.dry_run:
            raise MissingDependency(f"cannot trace the kernel here: {lttng_why}; --user-only records user space "
                                    "alone, --kernel-with perf the kernel by perf")
        return None, ""
    perf_why = recording_perf.perf_problem()
    if perf_why and args.dry_run and args.kernel_with == "auto":
        return None, ""  # neither can: the dry run shows LTTng's commands, a run says why in one line
    if perf_why and not args.dry_run:
        why = f"{lttng_why}, and {perf_why}" if lttng_why else perf_why
        raise MissingDependency(f"cannot trace the kernel here: {why}; --user-only records user space alone")
    kernel = recording_perf.PerfKernel(out, recording_perf.perf_tracepoints())
    return kernel, f"the kernel by perf: {lttng_why}" if lttng_why else "the kernel by perf"


def run_trace(args) -> int:
    from perftriage.analysis import recording  # noqa: PLC0415
    from perftriage.analysis.errors import InputError, MissingDependency, PerftriageError  # noqa: PLC0415

    if args.user_only and args.kernel_only:
        raise Usage("--user-only and --kernel-only go against each other")
    if bool(args.request_start) != bool(args.request_end):
        raise Usage("--request-start and --request-end go together")
    if args.kernel_only and args.request_start:
        raise Usage("--request-start names a user-space event: not with --kernel-only")
    for ev in (args.request_start, args.request_end):
        if ev and ":" not in ev:
            raise Usage(f"{ev!r}: a user-space event is PROVIDER:NAME (e.g. myapp:request_begin)")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(args.output or f"perftriage-trace-{stamp}").absolute()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(out, "exists and is not an empty folder: a recording never writes into existing data")
    if not out.parent.is_dir():
        raise InputError(out, "the folder to record into does not exist")
    if not args.dry_run and not os.access(out.parent, os.W_OK):
        raise InputError(out, "the folder to record into is not writable")
    kernel = not args.user_only
    kernel_perf, by_perf = None, ""
    if kernel:
        kernel_perf, by_perf = _kernel_tracer(args, out, recording)
    plan = recording.make_plan(out, f"perftriage-{os.getpid()}-{stamp}",
                               recording.custom_markers(args.request_start, args.request_end),
                               kernel=kernel and kernel_perf is None, user=not args.kernel_only,
                               event_rate=args.event_rate)
    if args.dry_run:  # what a run would do here: the kernel by perf where auto would take it
        print("\n".join(([f"# {by_perf}"] if by_perf else []) +
                        ([kernel_perf.shell()] if kernel_perf is not None else []) +
                        ([plan.shell()] if plan.kernel or plan.user else [])))
        return EXIT_OK
    missing = recording.lttng_missing() if plan.kernel or plan.user else None
    if missing:
        raise MissingDependency(missing)
    tty = sys.stderr.isatty()
    what = "kernel + user space" if kernel and plan.user else "kernel" if kernel else "user space"

    def tick(s: float) -> None:
        if tty:
            _say(f"\rrecording {what} into {out.name}: {s:5.0f} s (Ctrl-C stops and keeps it)".ljust(78))

    _say(f"recording into {out}{f' ({by_perf})' if by_perf else ''} ...\n")
    from perftriage.analysis.recording_perf import PerfError  # noqa: PLC0415

    try:
        rec = recording.record(plan, args.duration, args.run_command or None, tick, kernel_perf=kernel_perf)
    except (recording.LttngError, PerfError) as exc:
        raise PerftriageError(f"recording failed: {exc}") from None
    if tty:
        _say("\r" + " " * 78 + "\r")
    parts = []
    if kernel:
        parts.append(f"kernel {_size(rec.kernel_bytes)}" + (" (perf)" if kernel_perf is not None else ""))
    if plan.user:
        parts.append(f"user space {_size(rec.user_bytes)}" if rec.user_bytes else
                     "no user-space events (no traced application ran: start it once recording runs, or give it "
                     "as COMMAND after --)")
    _say(f"recorded {out}: {rec.seconds:.1f} s, {', '.join(parts)}; stopped: {rec.stopped}\n")
    if not rec.kernel_bytes and not rec.user_bytes:
        raise InputError(out, "nothing was recorded")
    if rec.stopped in ("SIGHUP", "SIGTERM"):
        return EXIT_OK  # the session is gone: nobody to show the app or the report to
    if args.open or args.report:
        from .main import main  # noqa: PLC0415

        return main(["open" if args.open else "report", str(out)])
    _say(f"open it with: perftriage {out}\n")
    return EXIT_OK
