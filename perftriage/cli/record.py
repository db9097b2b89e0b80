"""``perftriage record threads --pid PID -o FILE``: a live process's threads sampled from /proc into a CSV."""

from __future__ import annotations

from .numbers import number

import sys

from .common import EXIT_CODES_HELP, EXIT_OK, Formatter, Usage


def add_parser(sub) -> None:
    p_rec = sub.add_parser(
        "record",
        help="sample a live process's threads from /proc into a CSV (record threads --pid PID -o FILE)",
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
    p_rec.add_argument("what", choices=("threads",))
    p_rec.add_argument("--pid", type=number(1, 2**31 - 1, integer=True), required=True)
    p_rec.add_argument("--interval", type=number(0.01, 86400), default=1.0, metavar="S", help="seconds between samples (default 1)")
    p_rec.add_argument("--duration", type=number(0, 1e8, lo_open=True), default=None, metavar="S", help="stop after this long")
    p_rec.add_argument("-o", "--output", required=True, metavar="FILE", help="CSV to write (renamed into place)")


def run(args) -> int:
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
