"""sar's text report (``sar -A -f /var/log/sysstat/sa28 > web-01.txt``, ``sar -u -r 10 60``): what
a user keeps when sadf is not at hand, read as sadf -d's export is (sadf.py).

Each host's report opens with ``Linux 6.1.0-13-amd64 (web-01)  11/28/2026  _x86_64_  (4 CPU)``
(the host, the day in the locale's form: 11/28/2026, 11/28/26, 28/11/2026, 2026-11-28,
28.11.2026), then sections: a header line (a time, then the columns: ``10:00:01 AM  CPU  %user
%nice ...``), a line per time (and instance: a CPU, an interface, a disk, a file system, wherever
its column is), blank lines, ``Average:`` lines (left out), ``LINUX RESTART`` lines (left out).
Times are the host's local ones, with AM/PM or without; a time earlier than the one before it by
hours is the next day. Several hosts' reports concatenated read alike.

The lines become sadf -d's (``# hostname;interval;timestamp;[KEY;]METRIC;...``), so that sar's
text and sadf's export name the same counters (``%user``, ``%user[cpu1]``, ``rxkB/s[eth0]``).
"""

from __future__ import annotations

import re
from pathlib import Path

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import open_data
from perftriage.analysis.units import count_of

#: the first line of a host's report: the system, its kernel, the host, the day
_BANNER = re.compile(r"(?:Linux|SunOS|AIX|HP-UX)\s+\S+\s+\((?P<host>[^)]*)\)\s+(?P<day>\d[\d./-]+\d)\b")
_TIME = re.compile(r"(\d{1,2}):(\d\d):(\d\d)(?:\s+([AaPp][Mm]))?$")
_NUMBER = re.compile(r"-?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][-+]?\d+)?")
#: the columns naming an instance (sadf.KEYS), as sar's text heads them
KEYS = {"CPU", "IFACE", "DEV", "DEVICE", "FILESYSTEM", "MOUNTPOINT", "TTY", "INTR", "FCHOST", "BUS", "TYPE", "SLOT"}


#: words of pidstat's headers: its report opens as sar's does, and is a process's threads
_PIDSTAT = {"PID", "TID", "TGID", "UID", "USER", "Command"}


def sniff(head: bytes) -> bool:
    """sysstat's banner, then a section's header led by a time (sar's, mpstat's), no task's
    (pidstat's: the thread analysis's; iostat's, without times, is not read)."""
    lines = head.decode("utf-8", "replace").lstrip("\ufeff \r\n").split("\n")
    if not _BANNER.match(lines[0].strip()) or any(_PIDSTAT & set(line.split()) for line in lines[1:40]):
        return False
    for line in lines[1:-1]:
        words = line.split()
        secs, n = _time_of(words)
        if secs is not None and words[n:]:
            return all(_NUMBER.fullmatch(w) is None for w in words[n:])  # a header, no row of numbers
    return False


def _day(text: str) -> tuple[tuple[int, int, int], bool]:
    """The report's day as (year, month, day) from the locale's form, and whether month and day
    could have been read the other way round (both 12 or less, slashes: read as the C and US
    locales write them, month first)."""
    parts = [int(x) for x in re.split(r"[./-]", text)]
    if len(parts) != 3:
        raise ValueError(text)
    if parts[0] > 31:  # 2026-11-28
        y, m, d = parts
        ambiguous = False
    elif "." in text:  # 28.11.2026 (de, ru...)
        d, m, y = parts
        ambiguous = False
    elif parts[0] > 12:  # 28/11/2026
        d, m, y = parts
        ambiguous = False
    else:  # 11/28/2026, 11/28/26
        m, d, y = parts
        ambiguous = d <= 12 and d != m
    y += 2000 if y < 100 else 0
    if not (1 <= m <= 12 and 1 <= d <= 31):
        raise ValueError(text)
    return (y, m, d), ambiguous


def _seconds(match: re.Match) -> int:
    h, mi, s, half = int(match[1]), int(match[2]), int(match[3]), (match[4] or "").upper()
    if half:
        h = h % 12 + (12 if half == "PM" else 0)
    return h * 3600 + mi * 60 + s


def _time_of(words: list[str]) -> tuple[int | None, int]:
    """A line's time of day in seconds and how many words it takes (1, or 2 with AM/PM)."""
    if not words:
        return None, 0
    two = " ".join(words[:2])
    m = _TIME.match(two) if len(words) > 1 and words[1].upper() in ("AM", "PM") else _TIME.match(words[0])
    if m is None:
        return None, 0
    return _seconds(m), 2 if m[4] else 1


def _passed(state: list, secs: int) -> None:
    """A section's clock ``state`` ([its last time of day, the midnights passed]) at ``secs``: a
    time hours earlier than the last is the next day's."""
    if state[0] is not None and secs < state[0] - 6 * 3600:
        state[1] += 1
    state[0] = secs


def as_sadf(path: Path) -> tuple[str, list[str]]:
    """The report as sadf -d's lines (times as ISO, the hosts' local ones: no UTC), and notes."""
    import datetime as _dt  # noqa: PLC0415

    out: list[str] = []
    host, day, ambiguous_days = "", None, set()
    header: list[str] | None = None
    key_at = None
    clock: dict[tuple, list] = {}  # each section's last time of day and the midnights it passed
    state = [None, 0]
    odd = restarts = 0
    with open_data(path) as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            banner = _BANNER.match(line.strip())
            if banner:
                try:
                    (y, m, d), ambiguous = _day(banner["day"])
                    day = _dt.date(y, m, d)
                except ValueError:
                    raise InputError(path, f"its report's day {banner['day']!r} is no date") from None
                if ambiguous:
                    ambiguous_days.add(banner["day"])
                host, header, clock = banner["host"].strip(), None, {}
                continue
            secs, n = _time_of(words)
            if secs is None:  # Average:, Summary:, a title line
                continue
            rest = words[n:]
            if day is None:
                raise InputError(path, "a line with a time before the report's first line (Linux VERSION (HOST) "
                                       "DAY): not sar's text report")
            if rest and rest[0].upper() == "LINUX" and len(rest) > 1 and rest[1].upper() == "RESTART":
                restarts += 1
                continue
            if rest and all(_NUMBER.fullmatch(w) is None for w in rest):  # a section's header
                key_at = next((i for i, w in enumerate(rest) if w in KEYS), None)
                header = rest
                # sar -A prints each section from the report's first time on; sar's live report
                # (sar -u -r 10 60) and sar -I print a section's header again at each interval
                state = clock.setdefault(tuple(rest), [None, 0])
                _passed(state, secs)
                keyed = [rest[key_at]] if key_at is not None else []
                metrics = [w for i, w in enumerate(rest) if i != key_at]
                if keyed == ["INTR"]:  # sar -I ALL's table: a column per CPU, "all" the sum of them
                    metrics = ["intr/s" if w == "all" else f"intr/s on {w.lower()}" for w in metrics]
                out.append("# hostname;interval;timestamp;" + ";".join(keyed + metrics))
                continue
            if header is None or len(rest) != len(header):
                odd += 1
                continue
            _passed(state, secs)
            when = _dt.datetime.combine(day, _dt.time()) + _dt.timedelta(days=state[1], seconds=secs)
            keyed = [rest[key_at]] if key_at is not None else []
            values = [w.replace(",", ".") for i, w in enumerate(rest) if i != key_at]
            out.append(";".join([host, "0", when.strftime("%Y-%m-%d %H:%M:%S"), *keyed, *values]))
    if not any(not line.startswith("#") for line in out):
        raise InputError(path, "no row under a section's header in this sar text report (a time, then its "
                               "columns)" if out else "no section of sar's text report (a time, then its columns)")
    notes = [f"{path.name}: sar's text report; its times are the hosts' local ones, read as UTC"]
    if ambiguous_days:
        notes.append(f"{path.name}: its day {sorted(ambiguous_days)[0]} read as month/day (as the C and US locales "
                     "write it)")
    if odd:
        notes.append(f"{path.name}: {count_of(odd, 'lines')} of another number of columns than their section's "
                     "header skipped")
    if restarts:
        notes.append(f"{path.name}: {count_of(restarts, 'restarts')} of the host (LINUX RESTART) in the report")
    return "\n".join(out) + "\n", notes
