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
