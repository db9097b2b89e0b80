"""The ``perftriage`` command: open the app, or run the analyses headless. One module per
subcommand, each with its parser (``add_parser``) and its ``run``.

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
import os
import sys

from perftriage import __version__
from perftriage.analysis.errors import InputError, MissingDependency, PerftriageError

from . import features, info, open as open_cmd, record, report, sample
from .common import EXIT_CODES_HELP, EXIT_INPUT, EXIT_MISSING, EXIT_USAGE, Formatter, Usage
from .numbers import is_number

SUBCOMMANDS = {"open": open_cmd, "report": report, "info": info, "features": features, "sample": sample,
               "record": record}
COMMANDS = tuple(SUBCOMMANDS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perftriage",
        formatter_class=Formatter,
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
    parser.add_argument("--debug", action="store_true", help="on an internal error, show the traceback")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (open_cmd, report, features, info, sample, record):
        module.add_parser(sub)
    return parser


def _normalise_argv(argv: list[str]) -> list[str]:
    """``perftriage PATH...`` means ``perftriage open PATH...``; ``--debug`` is taken anywhere;
    ``--thread-metrics PATH`` is the option without a window, then a path (its optional window
    would take the path and fail as 'not a number')."""
    debug = ["--debug"] if "--debug" in argv else []
    argv = [a for a in argv if a != "--debug"]
    argv = ["--thread-metrics-auto" if a == "--thread-metrics" and i + 1 < len(argv) and not argv[i + 1].startswith("-")
            and not is_number(argv[i + 1]) else a for i, a in enumerate(argv)]
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        return debug + ["open", *argv]
    return debug + argv


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(_normalise_argv(argv))
    try:
        return SUBCOMMANDS[args.command].run(args)
    except Usage as exc:
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
    except BrokenPipeError:
        # the reader of our output went away (`| head`): end quietly, as other tools do
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 0
    except OSError as exc:
        what = exc.strerror or str(exc)
        print(f"perftriage: {exc.filename}: {what}" if exc.filename else f"perftriage: {what}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("perftriage: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 (perftriage's own bug: one line, the traceback with --debug)
        if getattr(args, "debug", False):
            raise
        print(f"perftriage: internal error: {type(exc).__name__}: {exc} (a bug in perftriage; run again with "
              "--debug for the traceback and report it with the input's description)", file=sys.stderr)
        return 1
    return EXIT_USAGE
