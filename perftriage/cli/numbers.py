"""Numbers on the command line: every numeric option is parsed here, finite and within its range,
or argparse says which option and why (a usage error, exit 2) before anything runs: ``--eps
nan`` silently found nothing, ``--thread-metrics 1e-9`` asked for 106 GiB of windows."""

from __future__ import annotations

import argparse
import math
import re

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def is_number(text: str) -> bool:
    """Whether ``text`` reads as a number (what an option's optional value may be)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def number(lo: float | None = None, hi: float | None = None, *, integer: bool = False, lo_open: bool = False):
    """An argparse ``type``: a finite number (an integer if ``integer``) in [lo, hi] ((lo, hi]
    with ``lo_open``)."""

    def parse(text: str):
        try:
            v = int(text, 10) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if integer else 'a number'}") from None
        if not integer and not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{text!r}: the value must be a finite number")
        if lo is not None and (v <= lo if lo_open else v < lo):
            raise argparse.ArgumentTypeError(f"{text}: must be {'above' if lo_open else 'at least'} {lo:g}")
        if hi is not None and v > hi:
            raise argparse.ArgumentTypeError(f"{text}: must be at most {hi:g}")
        return v

    parse.__name__ = "integer" if integer else "number"
    return parse


def host_name(text: str) -> str:
    """A name that becomes a folder: letters, digits, '.', '_', '-'; never a path."""
    if not _NAME.match(text) or text in (".", ".."):
        raise argparse.ArgumentTypeError(f"{text!r}: a host name of letters, digits, '.', '_' and '-' (no '/')")
    return text


def finite_rate(text: str, what: str) -> float:
    """A rate in [0, 1] written inside another option's value (``slow_disk=0.05``)."""
    v = float(text)
    if not math.isfinite(v) or not 0 <= v <= 1:
        raise ValueError(f"{what}: {text!r} is not a rate between 0 and 1")
    return v
