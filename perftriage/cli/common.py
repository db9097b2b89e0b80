"""What every subcommand shares: exit codes, usage errors, progress on stderr."""

from __future__ import annotations

import argparse
import sys

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INPUT, EXIT_PARTIAL, EXIT_MISSING = 0, 1, 2, 3, 4, 5

EXIT_CODES_HELP = """exit codes:
  0  success
  1  internal error (a bug: please report it with the traceback)
  2  usage error (bad option or argument)
  3  input error: a file or folder cannot be used; nothing was written
  4  partial input: a trace could only be read in part; the output covers what was read
  5  a system package is missing (e.g. python3-bt2 for CTF traces)
"""


class Formatter(argparse.RawDescriptionHelpFormatter):
    pass


class Usage(Exception):
    pass


def stderr_progress():
    """Progress on stderr when it is a terminal: one line, rewritten in place."""
    if not sys.stderr.isatty():
        return None

    def show(p):
        pct = f"{p.fraction * 100:5.1f}%" if p.fraction is not None else "     "
        sys.stderr.write(f"\r{pct} {p.stage}: {p.text}".ljust(70)[:79])
        sys.stderr.flush()

    return show
