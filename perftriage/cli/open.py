"""``perftriage open PATH...`` (also plain ``perftriage PATH...``): the app on traces, data files or folders."""

from __future__ import annotations

from pathlib import Path

from perftriage.analysis.errors import InputError, MissingDependency

from .common import EXIT_CODES_HELP, Formatter
from .options import (add_counter_options, add_marker_options, add_outlier_options, add_span_options,
                      add_thread_options, triage_options)


def add_parser(sub) -> None:
    p_open = sub.add_parser(
        "open",
        help="open the app on PATHs (the default command)",
        formatter_class=Formatter,
        description="Open the terminal app on traces, data files or folders. Keys: ? in the app.",
        epilog=EXIT_CODES_HELP,
    )
    p_open.add_argument("paths", nargs="*", metavar="PATH")
    add_marker_options(p_open)
    add_outlier_options(p_open)
    add_span_options(p_open)
    add_thread_options(p_open)
    add_counter_options(p_open)


def run(args) -> int:
    # the analysing child starts first: its imports overlap ours (the options, textual, the panes)
    from perftriage.analysis.triage_process import TriageProcess  # noqa: PLC0415

    from perftriage.analysis.inputs import is_prometheus_url  # noqa: PLC0415

    early = TriageProcess()
    try:
        opts = triage_options(args)
        for p in args.paths:
            if not is_prometheus_url(p) and not Path(p).exists():
                raise InputError(p, "no such file or folder")
    except BaseException:
        early.close()
        raise
    early.send(args.paths, opts)
    try:
        from perftriage.tui.app import run_app  # noqa: PLC0415
    except ImportError as exc:
        early.close()
        raise MissingDependency(f"the app needs textual, which is not importable here ({exc}): run `make run`")
    return run_app(args.paths, opts, early=early)
