"""dstat's and dool's CSV (``dstat -tcdngy --output web-01.csv 5``, ``dool --more --output ...``):
one server's counters, a row per interval.

The file opens with a preamble (``"Dstat 0.7.4 CSV output"`` or ``"dool 1.3.0 CSV output"``, the
author, ``"Host:","web-01"``, ``"Cmdline:","dstat ... 5",,,,"Date:","28 Nov 2026 10:00:00 UTC"``),
then two header rows: the plugins' groups (``"total cpu usage",,,,,,"dsk/total",,``: a group
spans the empty cells after it) and their columns (``"usr","sys",...,"read","writ"``). A counter
is ``GROUP.COLUMN`` (``total cpu usage.usr``, ``dsk/total.writ``, ``net/total.recv``): values as
the plugins compute them (bytes, per second, percents), not scaled as on the terminal. A run
appended to the file (``--output`` to an existing file) adds its own Host/Cmdline rows and
headers.

Times: the ``epoch`` column (``-T``) where there is one; else the ``time`` column (``-t``) as
dstat (``28-11 10:00:05``) or dool (``Nov-28 10:00:05``) print it, with no year (the Date row
gives it, a year turning counted) or with no date (``DSTAT_TIMEFMT=%H:%M:%S``: the Date row's
day, a midnight passed counted); else rows as far apart as the command line's delay from the
Date row's time. The host's local time is read as UTC unless the Date row says UTC or GMT, said
in a note. The first row of each run holds averages since the host's boot (dstat prints it
before its first interval): it is left out.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import csv_rows
from perftriage.analysis.units import count_of
from perftriage.analysis.values import numbers

from .table import Piece, RawCounters

_BANNER = re.compile(r'"?(dstat|dool) [^"]*csv output"?', re.IGNORECASE)
#: the time column's formats: dstat's default, dool's, a time of day alone, a full date
_TIME_FORMATS = ("%d-%m %H:%M:%S", "%b-%d %H:%M:%S", "%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%d-%m-%Y %H:%M:%S")
_PREAMBLE = ("author:", "host:", "cmdline:", "user:", "url:")


def sniff(head: bytes) -> bool:
    text = head.decode("utf-8", "replace").lstrip("\ufeff \r\n")
    return bool(_BANNER.match(text.split("\n", 1)[0].strip()))


class _Run:
    """One run's rows: its header, host, start and delay, and its rows of values."""

    def __init__(self, host: str, date: str, cmdline: str):
        self.host, self.date, self.cmdline = host, date, cmdline
        self.groups: list[str] | None = None
        self.columns: list[str] | None = None
        self.rows: list[list[str]] = []


def _runs(path: Path) -> tuple[list[_Run], str]:
    """The file's runs, and the tool that wrote it (dstat, dool)."""
    runs: list[_Run] = []
    tool = "dstat"
    host = date = cmdline = ""
    run = None
    with csv_rows(path, encoding="utf-8-sig") as rd:
        for row in rd:
            cells = [c.strip() for c in row]
            if not any(cells):
                continue
            first = cells[0].lower()
            banner = _BANNER.fullmatch(cells[0])
            if banner:
                tool = banner[1].lower()
            if banner or first in _PREAMBLE:
                if run is not None and run.columns is not None:  # an appended run begins
                    run = None
                if first == "host:":
                    host = cells[1] if len(cells) > 1 else ""
                if first == "cmdline:":
                    cmdline = cells[1] if len(cells) > 1 else ""
                    date = next((cells[i + 1] for i in range(len(cells) - 1) if cells[i].lower() == "date:"), "")
                continue
            if run is None:
                run = _Run(host, date, cmdline)
                runs.append(run)
            if run.groups is None:
                run.groups = cells
            elif run.columns is None:
                run.columns = cells
            else:
                run.rows.append(cells)
    return runs, tool


def _names(groups: list[str], columns: list[str]) -> list[str]:
    """Each column's counter name: its group (spanning the empty cells after it) and its name."""
    out, group = [], ""
    for i, col in enumerate(columns):
        g = groups[i] if i < len(groups) else ""
        group = g or group
        out.append(f"{group}.{col}" if group and col else col or group or f"column {i + 1}")
    return out


def _start(date: str) -> _dt.datetime | None:
    """The Date row's time ('28 Nov 2026 10:00:00 UTC', its zone's name as the host printed it)."""
    parts = date.split()
    try:
        return _dt.datetime.strptime(" ".join(parts[:4]), "%d %b %Y %H:%M:%S")
    except ValueError:
        return None


def _delay(cmdline: str) -> float:
    """The seconds between rows: the command line's trailing ``delay [count]`` (1 without)."""
    tail = []
    for word in reversed(cmdline.split()):
        if not word.isdigit():
            break
        tail.insert(0, int(word))
    return float(tail[0]) if tail and tail[0] > 0 else 1.0


def _clock_times(cells: list[str], start: _dt.datetime | None, path: Path) -> np.ndarray:
    """The time column's cells as unix seconds (local times as UTC): the format the first cell
    has, the year or the day from the Date row where the cells lack them, each turn of a year or
    a day counted; NaN for a cell that is no time."""
    fmt = next((f for c in cells[:20] for f in _TIME_FORMATS if _parses(c.split(".")[0], f)), None)
    if fmt is None:
        raise InputError(path, f"its time column holds no time dstat or dool prints ({cells[0][:30]!r} first)")
    base = start or _dt.datetime(1970, 1, 1)
    out = np.full(len(cells), np.nan)
    prev = None
    shift = 0  # years (month-day times) or days (times of day) turned since the first row
    for i, cell in enumerate(cells):
        whole, _, ms = cell.partition(".")  # dool --debug adds milliseconds
        try:  # the year given with the text, where it lacks one: 29-02 is a day of a leap year only
            t = _dt.datetime.strptime(whole, fmt) if "%Y" in fmt else \
                _dt.datetime.strptime(f"{base.year + shift} {whole}", "%Y " + fmt) if "%d" in fmt else \
                _dt.datetime.combine(base.date() + _dt.timedelta(days=shift), _dt.datetime.strptime(whole, fmt).time())
        except ValueError:
            continue
        if prev is not None and t < prev - _dt.timedelta(hours=12) and "%Y" not in fmt:
            shift += 1  # a new year, or past midnight
            t = t.replace(year=t.year + 1) if "%d" in fmt else t + _dt.timedelta(days=1)
        prev = t
        out[i] = t.replace(tzinfo=_dt.timezone.utc).timestamp() + (int(ms) / 1000 if ms.isdigit() else 0)
    return out


def _parses(text: str, fmt: str) -> bool:
    try:
        _dt.datetime.strptime(text, fmt) if "%Y" in fmt else _dt.datetime.strptime(f"2000 {text}", "%Y " + fmt)
    except ValueError:
        return False
    return True


def read_dstat(path, names_) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names)."""
    path = Path(path)
    runs, tool = _runs(path)
    runs = [r for r in runs if r.columns is not None]
    if not runs:
        raise InputError(path, "a dstat / dool CSV without its two header rows (the plugins' groups, their columns)")
    from .readers import server_of_file  # noqa: PLC0415 (readers imports this module)

    pieces, notes, local, numbered_from, dropped, odd = [], [], set(), [], 0, 0
    text_columns: set[str] = set()
    for run in runs:
        names = _names(run.groups or [], run.columns)
        width = len(names)
        rows = [r for r in run.rows if len(r) == width]
        odd += len(run.rows) - len(rows)
        if rows:
            rows, dropped = rows[1:], dropped + 1  # averages since boot
        if not rows:
            continue
        cols = list(zip(*rows))
        lower = [c.lower() for c in run.columns]
        start = _start(run.date)
        zone = run.date.split()[4] if len(run.date.split()) > 4 else ""
        if "epoch" in lower:
            time = numbers(cols[lower.index("epoch")])
            skip = {lower.index("epoch")} | ({lower.index("time")} if "time" in lower else set())
        elif "time" in lower:
            time = _clock_times(list(cols[lower.index("time")]), start, path)
            skip = {lower.index("time")}
            if zone.upper() not in ("UTC", "GMT"):
                local.add(zone or "no zone named")
        elif start is not None:
            time = start.replace(tzinfo=_dt.timezone.utc).timestamp() + _delay(run.cmdline) * (1 + np.arange(len(rows)))
            skip = set()
            numbered_from.append(f"{_delay(run.cmdline):g} s")
            if zone.upper() not in ("UTC", "GMT"):
                local.add(zone or "no zone named")
        else:
            raise InputError(path, "no time column (dstat -t or -T) and no Date: in its Cmdline row to count "
                                   "its rows from")
        keep, values = [], []
        for j in range(width):
            if j in skip:
                continue
            v = numbers(cols[j])
            if np.isnan(v).all() and any(cols[j]):
                text_columns.add(names[j])  # a top-* plugin's process names
                continue
            keep.append(names[j])
            values.append(v)
        ok = ~np.isnan(time)
        if not keep or not ok.any():
            continue
        server = names_.server(run.host or server_of_file(path))
        pieces.append(Piece(np.full(int(ok.sum()), server, np.int32), time[ok],
                            np.array([names_.counter(n) for n in keep], np.int32), np.column_stack(values)[ok]))
    if not pieces:
        raise InputError(path, "no row of numbers under its dstat / dool header")
    notes.append(f"{path.name}: a {tool} CSV; "
                 f"{count_of(dropped, 'first rows')} (averages since the host's boot) left out")
    if odd:
        notes.append(f"{path.name}: {count_of(odd, 'rows')} with another number of cells than the header skipped")
    if text_columns:
        notes.append(f"{path.name}: {count_of(len(text_columns), 'columns')} of text, no counter: "
                     f"{', '.join(sorted(text_columns)[:4])}")
    if numbered_from:
        notes.append(f"{path.name}: no time column (dstat -t or -T): rows {numbered_from[0]} apart (its command "
                     "line's delay) from its Date row's time")
    if local:
        notes.append(f"{path.name}: the host's local times ({', '.join(sorted(local))}) read as UTC")
    from_name = not any(r.host for r in runs)
    return RawCounters(names_.server_list, names_.counter_list, pieces, str(path), notes, from_name,
                       local=bool(local))
