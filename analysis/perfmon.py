"""Windows performance counter logs as CSV (PDH-CSV): what ``typeperf -f CSV``, ``relog -f csv``
and Performance Monitor's "Save Data As... CSV" write, the form the counters of a Windows fleet
(per server: ``\\\\WEB01\\Processor(_Total)\\% Processor Time``) and of a process's threads
(``\\\\WEB01\\Thread(w3wp/12)\\% Processor Time``) come in.

The first header cell says the form and the clock: ``(PDH-CSV 4.0) (Pacific Standard Time)(480)``,
the local times of the rows and their bias in minutes (UTC = local time + bias); each other
header cell is a counter path ``\\\\MACHINE\\Object(Instance)\\Counter`` (``Object\\Counter`` for
objects without instances); each row a time (``MM/DD/YYYY HH:MM:SS.fff``) and the counters'
values, a blank (``" "``) where a counter had none.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import InputError
from .inputs import csv_rows
from .values import number

_FORM = re.compile(r"\(PDH-CSV [\d.]+\)\s*\((?P<zone>[^)]*)\)\s*\((?P<bias>-?\d+)\)")
_TIME = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4}) (\d{1,2}):(\d\d):(\d\d)(?:\.(\d{1,9}))?")


def sniff(head: bytes) -> bool:
    """A PDH-CSV log: its first cell names the form."""
    return head.lstrip(b"\xef\xbb\xbf").lstrip()[:12].lstrip(b'"').startswith(b"(PDH-CSV")


def _header_paths(head: bytes) -> list:
    first = head.decode("utf-8-sig", "replace").split("\n", 1)[0]
    try:
        cells = next(csv.reader([first]))
    except (csv.Error, StopIteration):
        return []
    return [p for p in map(parse_path, cells[1:]) if p is not None]


def threads_in(head: bytes) -> int:
    """How many threads (``Thread(process/N)`` instances) a log's header names: a log of a
    process's threads is the thread analysis's, any other a fleet's counters."""
    return len({(p.machine, p.instance) for p in _header_paths(head) if p.is_thread})


def others_in(head: bytes) -> int:
    """How many of a log's counters are not a thread's (``Processor(_Total)\\% Processor Time``,
    ``Process(w3wp)\\Handle Count``): a log of a process's threads that has them holds its
    machine's counters too."""
    return sum(not p.is_thread for p in _header_paths(head))


@dataclass(frozen=True)
class CounterPath:
    machine: str
    object: str
    instance: str  # "" for an object without instances
    counter: str

    @property
    def is_thread(self) -> bool:
        """A counter of one thread of a process (``Thread(w3wp/12)``), not of the whole object."""
        return self.object == "Thread" and "/" in self.instance

    @property
    def name(self) -> str:
        """The counter without its machine: 'Process(w3wp)\\Handle Count'."""
        return f"{self.object}({self.instance})\\{self.counter}" if self.instance else f"{self.object}\\{self.counter}"


def parse_path(text: str) -> CounterPath | None:
    """``\\\\MACHINE\\Object(Instance)\\Counter`` (the machine may be missing: a local log written
    without it), None where ``text`` is not one."""
    t = text.strip()
    machine = ""
    if t.startswith("\\\\"):
        machine, _, t = t[2:].partition("\\")
    elif t.startswith("\\"):
        t = t[1:]
    head, sep, counter = t.rpartition("\\")
    if not sep or not head or not counter:
        return None
    instance = ""
    if head.endswith(")") and "(" in head:
        at = head.index("(")
        head, instance = head[:at], head[at + 1:-1]
    return CounterPath(machine, head, instance, counter) if head else None


@dataclass
class Log:
    time: np.ndarray  # (rows,) unix seconds, UTC
    paths: list[CounterPath]  # per column
    values: np.ndarray  # (rows, columns), NaN where a counter had no value
    zone: str  # the clock the log was written in, as it says
    notes: list[str]


def read_log(path) -> Log:
    """A PDH-CSV log as its times, counter paths and values; rows cut short or whose time does not
    read are skipped (said)."""
    path = Path(path)
    with csv_rows(path, encoding="utf-8-sig") as rd:
        header = next(rd, None)
        if not header:
            raise InputError(path, "file is empty")
        form = _FORM.match(header[0].strip())
        if form is None:
            raise InputError(path, f"not a PDH-CSV log (its first cell: {header[0][:40]!r})")
        paths = [parse_path(c) for c in header[1:]]
        keep = [j for j, p in enumerate(paths) if p is not None]
        if not keep:
            raise InputError(path, "no counter path in the header (\\\\MACHINE\\Object(Instance)\\Counter)")
        stamps, rows, short, bad_time = [], [], 0, 0
        width = len(header)
        for r in rd:
            if not r or not any(c.strip() for c in r):
                continue
            if len(r) != width:
                short += 1
                continue
            m = _TIME.fullmatch(r[0].strip())
            if m is None or not (1 <= int(m.group(1)) <= 12 and 1 <= int(m.group(2)) <= 31
                                 and int(m.group(4)) <= 23 and int(m.group(5)) <= 59 and int(m.group(6)) <= 60):
                bad_time += 1
                continue
            stamps.append(m.groups())
            rows.append(r[1:])
    if not rows:
        raise InputError(path, "no sample rows under the header")
    g = np.array([[int(x or 0) for x in s[:6]] + [int((s[6] or "0").ljust(9, "0")[:9])] for s in stamps], np.int64)
    mo, d, y, h, mi, sec, ns = g.T
    days = (np.array([f"{a:04d}-{b:02d}-01" for a, b in zip(y, mo)], "datetime64[D]") - np.datetime64("1970-01-01", "D")
            ).astype(np.int64) + d - 1
    bias = int(form.group("bias"))
    time = (days * 86400 + h * 3600 + mi * 60 + sec + bias * 60).astype(np.float64) + ns / 1e9
    cells = np.array(rows, dtype=object)[:, keep]
    values = np.full(cells.shape, np.nan)
    for j in range(cells.shape[1]):
        col = cells[:, j]
        try:
            values[:, j] = np.array([x if x.strip() else "nan" for x in col], np.float64)
        except ValueError:  # a decimal comma (a German or French Windows writes 12,5), else missing
            values[:, j] = [number(x) for x in col]
    values[~np.isfinite(values)] = np.nan
    notes = []
    if short or bad_time:
        notes.append(f"{path.name}: " + ", ".join(
            x for x in (f"{short:,} row{'s' if short != 1 else ''} of another width" if short else "",
                        f"{bad_time:,} row{'s' if bad_time != 1 else ''} whose time is no MM/DD/YYYY HH:MM:SS"
                        if bad_time else "") if x) + " skipped")
    return Log(time, [paths[j] for j in keep], values, form.group("zone"), notes)
