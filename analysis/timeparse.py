"""Timestamps of span and counter files: integers in s / ms / µs / ns since the Unix epoch, ISO
8601, or Go's time.Time as it prints itself (``2022-08-22 03:51:19.607158889 +0000 UTC
m=+0.113112869``: collectors written in Go log times so)."""

from __future__ import annotations

import datetime as _dt
import re
import warnings

import numpy as np

from .units import DATED_FROM

UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def epoch_unit(value: float) -> str:
    """The unit of an epoch timestamp from its magnitude (dates between 2001 and 2286)."""
    v = abs(value)
    if v >= 1e17:
        return "ns"
    if v >= 1e14:
        return "us"
    if v >= 1e11:
        return "ms"
    return "s"


#: Go's time.Time.String(): date, time, numeric offset, zone name, and the monotonic clock reading
_GO_TIME = re.compile(r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?) ([+-]\d\d)(\d\d) [A-Za-z]{1,6}"
                      r"(?: m=[+-]\d+(?:\.\d+)?)?")


#: a US English locale's date and 12-hour time, as the Azure portal's and Excel's CSV exports write
#: them ("11/27/2026, 10:00:00.123 AM"): month first (the AM/PM says the locale), UTC unless the
#: time says otherwise
_US_TIME = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4}),?\s+(\d{1,2}):(\d\d)(?::(\d\d)(\.\d+)?)?\s*([AaPp])\.?[Mm]\.?")


def parse_iso_ns(text: str) -> int:
    """One time as ns since the epoch: ISO 8601 (UTC unless it says its offset), Go's way of
    printing one, or a US locale's date with a 12-hour time (_US_TIME)."""
    t = text.strip()
    go = _GO_TIME.fullmatch(t)
    if go:  # the offset tells the time; the zone's name and the monotonic reading add nothing
        t = f"{go[1]}{go[2]}:{go[3]}"
    us = _US_TIME.fullmatch(t)
    if us:
        mo, d, y, h, mi, sec, frac, half = us.groups()
        h = int(h) % 12 + (12 if half.upper() == "P" else 0)
        if int(us[4]) > 12:
            raise ValueError(f"time {text!r}: no 12-hour time")
        t = f"{int(y):04d}-{int(mo):02d}-{int(d):02d}T{h:02d}:{mi}:{sec or '00'}{frac or ''}"
    t = t.replace("Z", "+00:00")
    frac_ns = 0
    if "." in t:
        head, rest = t.split(".", 1)
        digits = ""
        for ch in rest:
            if ch.isdigit():
                digits += ch
            else:
                break
        tz = rest[len(digits):]
        frac_ns = int((digits + "000000000")[:9]) if digits else 0
        t = head + tz
    d = _dt.datetime.fromisoformat(t)
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.timezone.utc)
    return in_ns_range(int(d.timestamp()) * 1_000_000_000 + frac_ns, text)


def to_ns(text: str, unit: str | None) -> int:
    """One timestamp in ns. ``unit`` None: decided from the magnitude; ISO strings allowed."""
    t = text.strip()
    if not t:
        raise ValueError("empty time")
    try:
        v = float(t) if any(c in t for c in ".eE") else int(t)
    except ValueError:
        return parse_iso_ns(t)
    u = unit or epoch_unit(v)
    if isinstance(v, float) and not np.isfinite(v):
        raise ValueError(f"time {t!r} is not a number")
    return in_ns_range(int(round(v * UNIT_NS[u])) if isinstance(v, float) else v * UNIT_NS[u], t)


#: the times an int64 of nanoseconds since the epoch holds (1677-09-21 to 2262-04-11)
NS_MIN, NS_MAX = -(2**63), 2**63 - 1


def in_ns_range(ns: int, text: str = "") -> int:
    """``ns`` if an int64 holds it; ValueError naming the time otherwise."""
    if not NS_MIN <= ns <= NS_MAX:
        raise ValueError(f"time {text or ns!r} is outside 1677-2262 (nanoseconds beyond 64 bits)")
    return ns


def column_to_seconds(col, path, blanks: bool = False) -> np.ndarray:
    """A column of timestamps as float unix seconds: numbers by magnitude (s, ms, µs, ns; one
    unit for the column, from its largest value) or ISO 8601 strings. ``path`` names the file
    in the error. ``blanks``: empty cells are NaN (the caller leaves their rows out and says
    so), else an error."""
    from .errors import InputError  # noqa: PLC0415

    if blanks and not (isinstance(col, np.ndarray) and col.dtype.kind in "fiu"):
        col = [x if not isinstance(x, str) or x.strip() else "nan" for x in col]
    try:
        v = np.array(col, dtype=np.float64)
    except ValueError:
        fast = _utc_iso_seconds(col)
        if fast is not None:
            return fast
        try:
            return np.array([np.nan if blanks and x == "nan" else parse_iso_ns(x) for x in col], np.float64) / 1e9
        except ValueError:
            raise InputError(path, "the time column holds neither numbers nor ISO 8601 times") from None
    if len(v) == 0:
        return v
    if np.isnan(v).all():
        raise InputError(path, "the time column holds no time (every cell empty or NaN)")
    return v * (UNIT_NS[epoch_unit(float(np.nanmax(np.abs(v))))] / 1e9)


def _utc_iso_seconds(col) -> np.ndarray | None:
    """A column of ISO 8601 times in UTC (``2026-11-01T00:00:00.123Z``, or with no zone; a space
    for the T), as unix seconds by numpy's parser, ten times parse_iso_ns's speed (InfluxDB's
    RFC 3339, span CSVs); None when a cell has another form (an offset, a number, a blank): the
    caller reads it cell by cell."""
    try:
        if not all(len(x) >= 19 and x[4] == "-" and x[10] in "T " and "1678" <= x[:4] <= "2261" for x in col):
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an offset: numpy warns that it drops it
            ns = np.array([x[:-1] if x[-1] == "Z" else x for x in col], dtype="datetime64[ns]")
    except (TypeError, ValueError, UserWarning, DeprecationWarning, OverflowError):
        return None
    return ns.astype(np.int64) / 1e9


_CLOCK = re.compile(r"(\+)?\s*(\d{1,4}):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?")


def user_time_ns(text: str, day_of_ns: int | None = None) -> int:
    """A time a user types: epoch (s, ms, µs, ns by magnitude), ISO 8601 (UTC unless it says
    otherwise), or, given ``day_of_ns`` (the data's start), a time of day ``HH:MM[:SS[.fff]]``
    (UTC) on its day, or ``+H:MM[:SS[.fff]]`` that long after it. Data with no date (times before
    2000, told as the time since the start: ``+0:05:12.008``) takes either form as that time."""
    t = text.strip()
    m = _CLOCK.fullmatch(t) if day_of_ns is not None else None
    if m is None:
        return to_ns(t, None)
    plus, h, mi, sec, frac = m.groups()
    h, mi = int(h), int(mi)
    if mi > 59 or int(sec or 0) > 59 or (not plus and h > 23):
        raise ValueError(f"not a time of day: {text!r}")
    ns = ((h * 60 + mi) * 60 + int(sec or 0)) * 1_000_000_000 + int((frac or "0").ljust(9, "0"))
    if day_of_ns < DATED_FROM * 1e9:  # no date: times since the start are the times themselves
        return ns
    if plus:
        return day_of_ns + ns
    day = _dt.datetime.fromtimestamp(day_of_ns // 1_000_000_000, _dt.timezone.utc).date()
    return parse_iso_ns(f"{day.isoformat()}T00:00:00") + ns


class DayClock:
    """Times of day a tool printed in order (pidstat's, top's), as seconds into the first day: a
    time more than 12 hours before the one before it is the next day's (past midnight)."""

    def __init__(self):
        self.days = 0
        self.last: float | None = None

    def __call__(self, tod: float) -> float:
        if self.last is not None and tod < self.last - 12 * 3600:
            self.days += 1
        self.last = tod
        return self.days * 86400.0 + tod


def zone_words(local_zone: str | None) -> str:
    """The zone a host's clock is read in, as a note says it."""
    return f"{local_zone} (--timezone)" if local_zone else "this machine's time zone"


def local_clock_to_epoch(day: _dt.date, seconds: np.ndarray, zone: str | None = None) -> tuple[np.ndarray, str]:
    """Times printed by a tool on the host's clock (pidstat's, top's: a date and seconds into it,
    past 86400 on the days after) as seconds since the epoch, read in this machine's time zone:
    perftriage runs on the host that recorded them, as a rule; or in ``zone`` (an IANA name the
    user gave: --timezone). Each distinct second is converted on its own (a change to or from
    summer time within the data is kept; a repeated hour read as its first). Also the zone's offset
    at the first time, as said in a note ('UTC+01:00', 'UTC')."""
    import time as _time  # noqa: PLC0415

    secs = np.asarray(seconds, np.float64)
    whole = np.floor(secs)
    uniq, inv = np.unique(whole, return_inverse=True)
    base = _dt.datetime(day.year, day.month, day.day)
    out = np.empty(len(uniq))
    tz = None
    if zone is not None:
        from zoneinfo import ZoneInfo  # noqa: PLC0415

        tz = ZoneInfo(zone)
    for i, s in enumerate(uniq.tolist()):
        t = base + _dt.timedelta(seconds=s)
        out[i] = t.replace(tzinfo=tz).timestamp() if tz is not None else \
            _time.mktime((t.year, t.month, t.day, t.hour, t.minute, t.second, 0, 0, -1))
    epoch = out[inv] + (secs - whole)
    if tz is not None:
        off = int((base + _dt.timedelta(seconds=float(whole[0]) if len(whole) else 0)).replace(tzinfo=tz)
                  .utcoffset().total_seconds())
    else:
        first = _time.localtime(float(epoch[0])) if len(epoch) else _time.localtime(0)
        off = first.tm_gmtoff
    zone = "UTC" if off == 0 else f"UTC{'+' if off > 0 else '-'}{abs(off) // 3600:02d}:{abs(off) % 3600 // 60:02d}"
    return epoch, zone
