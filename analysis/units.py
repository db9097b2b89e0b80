"""Formatting times and durations the same way everywhere (reports, app, CLI)."""

from __future__ import annotations

import datetime as _dt


def fmt_duration(ns: float) -> str:
    """Nanoseconds -> '1.34 ms', '15.5 s', '820 ns'."""
    ns = float(ns)
    a = abs(ns)
    if a < 1e3:
        return f"{ns:.0f} ns"
    if a < 1e6:
        return f"{ns / 1e3:.3g} µs"
    if a < 1e9:
        return f"{ns / 1e6:.3g} ms"
    if a < 600e9:
        return f"{ns / 1e9:.3g} s"
    return f"{ns / 60e9:.3g} min"


def fmt_ms(ns: float) -> str:
    return f"{float(ns) / 1e6:,.3f}"


def fmt_timestamp(ns: int, utc: bool = True) -> str:
    """Epoch ns -> '2018-08-13 19:05:50.157218983' (UTC by default, like babeltrace2 --clock-gmt)."""
    ns = int(ns)
    sec, frac = divmod(ns, 1_000_000_000)
    tz = _dt.timezone.utc if utc else None
    d = _dt.datetime.fromtimestamp(sec, tz)
    return d.strftime("%Y-%m-%d %H:%M:%S") + f".{frac:09d}"


def fmt_clock(ns: int) -> str:
    """Epoch ns -> '19:05:50.157218983' (time of day, UTC)."""
    return fmt_timestamp(ns)[11:]


#: nouns whose singular is not the plural less its final "s"
_SINGULAR = {"processes": "process", "categories": "category", "replicas": "replica", "analyses": "analysis",
             "matches": "match", "classes": "class", "series": "series"}


def singular(noun: str) -> str:
    """'requests' -> 'request', 'processes' -> 'process', 'read calls' -> 'read call'."""
    head, _, last = noun.rpartition(" ")
    one = _SINGULAR.get(last, last[:-1] if last.endswith("s") and not last.endswith("ss") else last)
    return f"{head} {one}" if head else one


def count_of(n: int, noun: str, adjective: str = "") -> str:
    """'1 outlying process', '7 outlying processes', '1,200 requests' (``noun`` in the plural)."""
    return f"{n:,} {adjective + ' ' if adjective else ''}{singular(noun) if n == 1 else noun}"


def fmt_ratio(x: float) -> str:
    """How many times: '1.4x', '24x', '2,389x' (no decimals where they would not be read)."""
    if x >= 100:
        return f"{x:,.0f}x"
    if x >= 10:
        return f"{x:.0f}x"
    return f"{x:.1f}x"
