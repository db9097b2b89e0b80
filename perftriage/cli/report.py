"""``perftriage report PATH...``: every analysis that applies, headless, as Markdown or JSON."""

from __future__ import annotations

from .numbers import number

import sys

from .common import EXIT_CODES_HELP, EXIT_MISSING, EXIT_OK, EXIT_PARTIAL, Formatter, stderr_progress
from .options import (add_counter_options, add_marker_options, add_outlier_options, add_span_options,
                      add_thread_options, triage_options)


def add_parser(sub) -> None:
    p_report = sub.add_parser(
        "report",
        help="run the analyses headless and write the findings",
        formatter_class=Formatter,
        description="Run every analysis that applies to the inputs and write the ranked findings.",
        epilog=EXIT_CODES_HELP,
    )
    p_report.add_argument("paths", nargs="*", metavar="PATH")
    p_report.add_argument("-o", "--output", metavar="FILE", help="write here (atomically) instead of stdout")
    p_report.add_argument("--format", choices=("md", "json"), default=None, help="md (default) or json; "
                          "by default taken from the -o file's extension")
    p_report.add_argument("--top", type=number(1, 1e6, integer=True), default=20, metavar="N", help="rows in 'slowest' tables (default 20)")
    p_report.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    add_marker_options(p_report)
    add_outlier_options(p_report)
    add_span_options(p_report)
    add_thread_options(p_report)
    add_counter_options(p_report)


def run(args) -> int:
    from perftriage.analysis.atomic import atomic_write, check_target  # noqa: PLC0415
    from perftriage.analysis.findings import render  # noqa: PLC0415
    from perftriage.analysis.triage import run_triage  # noqa: PLC0415

    if args.output:
        check_target(args.output, protect=args.paths)
    fmt = args.format
    if fmt is None:
        fmt = "json" if args.output and args.output.lower().endswith(".json") else "md"
    progress = None if args.quiet else stderr_progress()
    options = triage_options(args)
    options.keep_graphs = False  # no path is walked after the report: its biggest tables go early
    result = run_triage(args.paths, options, progress=progress)
    if progress is not None:
        sys.stderr.write("\r" + " " * 79 + "\r")
    text = render(result.report, fmt)
    if args.output:
        atomic_write(args.output, text, protect=[str(p) for p in result.inputs.ctf])
        n = len(result.report.findings)
        print(f"wrote {args.output} ({n} finding{'' if n == 1 else 's'})", file=sys.stderr)
    elif getattr(sys.stdout, "buffer", None) is None:  # a text stream with no bytes under it (embedded, redirected)
        sys.stdout.write(text)
    else:  # UTF-8 whatever the locale says (LANG=C, a strict PYTHONIOENCODING): the bytes, not the codec
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.buffer.flush()
    partial = [n for n in result.report.notes if n.startswith("partial data")]
    for note in partial:
        print(f"perftriage: {note}", file=sys.stderr)
    missing = [n for n in result.report.notes if "python3-bt2" in n]
    if missing and not result.report.findings:
        print(missing[0], file=sys.stderr)
        return EXIT_MISSING
    return EXIT_PARTIAL if partial else EXIT_OK
