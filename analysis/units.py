"""Formatting times and durations the same way everywhere (reports, app, CLI)."""

from __future__ import annotations

import datetime as _dt

#: seconds since the epoch (1999-10-15): earlier times are no clock times, only times since a start
#: (Alibaba's tables count milliseconds from 0, a CTF clock with no origin counts from boot)
DATED_FROM = 9.4e8


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


def fmt_when(ns: int, date: bool = True, digits: int = 3) -> str:
    """Epoch ns -> '2018-08-13 19:05:50.157 UTC' (with `digits` of the second; the time of day
    alone without `date`). A time before 2000 is no clock time but the time since the start of the
    trace set, told as such: '+0:40:09.738' (Alibaba's tables count milliseconds from 0)."""
    ns = int(ns)
    cut = -9 + digits if digits else -10  # the text ends in '.fffffffff': keep `digits` of it
    if ns >= DATED_FROM * 1e9:
        text = fmt_timestamp(ns)[:cut] if cut else fmt_timestamp(ns)
        return (text if date else text[11:]) + " UTC"
    sec, frac = divmod(abs(ns), 1_000_000_000)
    text = f"{'-' if ns < 0 else '+'}{sec // 3600}:{sec % 3600 // 60:02d}:{sec % 60:02d}.{frac:09d}"
    return text[:cut] if cut else text


def fmt_clock(ns: int) -> str:
    """Epoch ns -> '19:05:50.157218983' (time of day, UTC)."""
    return fmt_timestamp(ns)[11:]


#: nouns whose singular is not the plural less its final "s"
_SINGULAR = {"processes": "process", "categories": "category", "replicas": "replica", "analyses": "analysis",
             "matches": "match", "classes": "class", "series": "series", "queries": "query", "entries": "entry"}


def singular(noun: str) -> str:
    """'requests' -> 'request', 'processes' -> 'process', 'read calls' -> 'read call'."""
    head, _, last = noun.rpartition(" ")
    one = _SINGULAR.get(last, last[:-1] if last.endswith("s") and not last.endswith("ss") else last)
    return f"{head} {one}" if head else one


def count_of(n: int, noun: str, adjective: str = "") -> str:
    """'1 outlying process', '7 outlying processes', '1,200 requests' (``noun`` in the plural)."""
    return f"{n:,} {adjective + ' ' if adjective else ''}{singular(noun) if n == 1 else noun}"


def count_that(n: int, noun: str) -> str:
    """'1 line that is', '3 lines that are' (``noun`` in the plural): a note's count of what a
    reader skipped, before what they are not ('... no JSON (cut) skipped')."""
    return f"{count_of(n, noun)} that {'is' if n == 1 else 'are'}"


def first_of(items, k: int) -> str:
    """The first ``k`` of ``items`` in a note, '...' for the rest: 'web-01, web-02, ...'."""
    items = list(items)
    return ", ".join(map(str, items[:k])) + (", ..." if len(items) > k else "")


def fmt_ratio(x: float) -> str:
    """How many times: '1.4x', '24x', '2,389x' (no decimals where they would not be read)."""
    if x >= 100:
        return f"{x:,.0f}x"
    if x >= 10:
        return f"{x:.0f}x"
    return f"{x:.1f}x"
