"""``perftriage features PATH... -o FILE``: the per-request critical-path features as CSV."""

from __future__ import annotations

import sys

from perftriage.analysis.errors import InputError

from .common import EXIT_CODES_HELP, EXIT_OK, EXIT_PARTIAL, Formatter, stderr_progress
from .options import add_marker_options, triage_options


def add_parser(sub) -> None:
    p_feat = sub.add_parser(
        "features",
        help="write the per-request critical-path features as CSV",
        formatter_class=Formatter,
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
    add_marker_options(p_feat)


def run(args) -> int:
    from perftriage.analysis.atomic import atomic_write, check_target  # noqa: PLC0415
    from perftriage.analysis.requests.features import to_csv  # noqa: PLC0415
    from perftriage.analysis.triage import run_triage  # noqa: PLC0415

    check_target(args.output, protect=args.paths)
    opts = triage_options(args)
    opts.findings = False  # the features only: no outlier detection, clusters or findings to build
    result = run_triage(args.paths, opts, progress=stderr_progress())
    if sys.stderr.isatty():
        sys.stderr.write("\r" + " " * 79 + "\r")
    ft = result.features
    if ft is None or len(ft) == 0:
        reason = "no requests found" if not result.requests or not len(result.requests) else "no kernel trace"
        raise InputError(", ".join(args.paths), f"no features to write: {reason}")
    atomic_write(args.output, to_csv(ft), protect=[str(p) for p in result.inputs.ctf])
    from perftriage.analysis.requests.findings import unit_noun  # noqa: PLC0415

    print(f"wrote {args.output}: {len(ft):,} {unit_noun(result.units)} x {len(ft.states)} states", file=sys.stderr)
    for note in result.report.notes:
        print(f"perftriage: {note}", file=sys.stderr)
    partial = any(n.startswith("partial data") for n in result.report.notes)
    return EXIT_PARTIAL if partial else EXIT_OK
