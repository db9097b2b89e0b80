"""pidstat's report (sysstat), as per-thread resource time series: what an SRE on a production
host records with ``pidstat -t -h -u -r -d -w -p PID 1 > pidstat.txt``, read as it is.

The forms read:

- one line per task and interval (``-h``): a ``# Time UID TGID TID %usr ...`` header, then rows;
- one block per report and interval (no ``-h``): a header line per block (``15:16:26 UID TGID
  TID %usr ... Command``, then ``... kB_rd/s ...``), the same tasks in each block, merged by
  (time, task); the ``Average:`` blocks at the end are left out;
- with ``-t`` (TGID and TID columns): a process's row (TID ``-``), then its threads' rows
  (TGID ``-``, the command ``|__name``): each thread a series in its process; without ``-t`` (a
  PID column) each process is one;
- times as ``HH:MM:SS``, with ``AM``/``PM`` in 12-hour locales, or seconds since the epoch
  (``-h`` of older sysstat); the date from the first line (``Linux 6.1.0 (host) 11/27/26
  _x86_64_ (2 CPU)``: ``MM/DD/YY``, ``DD/MM/YY`` where the first number is above 12, or ISO with
  ``S_TIME_FORMAT=ISO``); a clock going back by more than 12 hours is the next day. pidstat
  prints the host's clock: read in this machine's time zone, where the report is read as a rule
  (the note says which); numbers with a decimal
  comma, as pidstat prints them in a German or French locale, read alike.

Metrics are pidstat's columns as named (``%CPU``, ``kB_wr/s``, ``cswch/s``, ``RSS``...), with
their units; the task ids, user, the processor number and the command are not metrics. Without
``-p``, pidstat lists a task in an interval only when it was active there: such a task has
samples only where it was.
"""

from __future__ import annotations

import re
from array import array
from datetime import date
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import open_data
from perftriage.analysis.timeparse import DayClock, local_clock_to_epoch, zone_words
from perftriage.analysis.values import number as _number

from .series import ThreadSeries, build, pool_name

_FIRST = re.compile(r"^Linux\s+\S+\s+\((?P<host>[^)]*)\)\s+(?P<date>\S+)")
_CLOCK = re.compile(r"^(\d{1,2}):(\d\d):(\d\d)$")
NOT_METRICS = {"UID", "USER", "TGID", "TID", "PID", "CPU", "Command"}
IDS = {"UID", "USER", "TGID", "TID", "PID"}


def sniff(path: Path, head: bytes) -> bool:
    """pidstat's first line (``Linux VERSION (HOST) DATE ...``) and a header with a task column
    and ``Command`` among the next lines."""
    lines = head.decode("utf-8", "replace").splitlines()
    if not lines or not _FIRST.match(lines[0]):
        return False
    for line in lines[1:40]:
        words = line.split()
        if words and words[-1] == "Command" and ("PID" in words or "TID" in words):
            return True
    return False


def unit_of(metric: str) -> str:
    """pidstat's column -> its unit."""
    if metric.startswith("%"):
        return "%"
    if metric.startswith("kB_"):
        return "kB/s"
    if metric.endswith("/s"):
        return "/s"
    if metric in ("VSZ", "RSS", "StkSize", "StkRef"):
        return "KiB"
    if metric == "iodelay":
        return "ticks"
    return ""


def _short(command: str) -> str:
    """A command line (``-l``) as its program's name: '/usr/sbin/nginx -g daemon off;' -> 'nginx';
    a task's name (which may hold spaces: a JVM's 'Signal Dispatch') as it is."""
    first, _, rest = command.partition(" ")
    if rest and ("/" in first or rest.startswith("-")):
        return first.rsplit("/", 1)[-1] or command
    return command


def _day(text: str, path: Path) -> date:
    """The report's date from its first line."""
    try:
        if "-" in text:
            return date.fromisoformat(text)
        a, b, c = (int(x) for x in re.split(r"[/.]", text))
    except ValueError:
        raise InputError(path, f"pidstat's first line gives no date it can read ({text!r})") from None
    year = c + 2000 if c < 100 else c
    month, day = (b, a) if a > 12 or "." in text else (a, b)  # MM/DD/YY unless it cannot be (DD/MM/YY, DD.MM.YYYY)
    try:
        return date(year, month, day)
    except ValueError:
        raise InputError(path, f"pidstat's first line gives no date it can read ({text!r})") from None


def _clock(words: list[str]) -> tuple[float | None, int]:
    """The time at the start of a line: (seconds of the day, or since the epoch as a negative
    marker's opposite; words it took), or (None, 0) where the line starts with no time."""
    m = _CLOCK.match(words[0])
    if m is None:
        if words[0].isdigit() and len(words[0]) >= 9:  # seconds since the epoch (-h of older sysstat)
            return -float(words[0]), 1
        return None, 0
    h, mi, s = (int(x) for x in m.groups())
    took = 1
    if len(words) > 1 and words[1] in ("AM", "PM"):
        h = h % 12 + (12 if words[1] == "PM" else 0)
        took = 2
    return float(h * 3600 + mi * 60 + s), took


class _Section:
    """The rows of one header's layout, as columns: time, task (its code) and the metrics' values
    (one flat array: a huge report is held as numbers, not a Python object per row)."""

    def __init__(self, cols: list[str]):
        n = len(cols) - 1  # the command is the rest of the line
        at = {c: j for j, c in enumerate(cols)}
        self.tid, self.tgid, self.pid = at.get("TID"), at.get("TGID"), at.get("PID")
        self.take = [j for j, c in enumerate(cols[:n]) if c not in NOT_METRICS]
        self.metrics = [cols[j] for j in self.take]
        self.time = array("d")
        self.task = array("q")
        self.values = array("d")

    def add(self, when: float, task: int, words: list[str]) -> None:
        self.time.append(when)
        self.task.append(task)
        try:
            self.values.extend([float(words[j]) for j in self.take])
        except ValueError:  # a decimal comma (pidstat in a de_DE or fr_FR locale: 12,50), or no number
            self.values.extend([_number(words[j]) for j in self.take])


def read_pidstat(path, local_zone: str | None = None) -> ThreadSeries:
    """``local_zone``: the zone of the host's clock (--timezone; None: this machine's)."""
    path = Path(path)
    with open_data(path) as f:
        first_line = f.readline()
        if not first_line.strip():
            raise InputError(path, "file is empty")
        first = _FIRST.match(first_line)
        if first is None:
            raise InputError(path, "not pidstat's report (its first line is 'Linux VERSION (HOST) DATE ...')")
        host = first.group("host")
        day = _day(first.group("date"), path)
        on_clock = False  # times of day on the host's clock (else seconds since the epoch)
        cols: list[str] | None = None
        sections: dict[tuple, _Section] = {}  # one per header layout
        section = None
        tasks: dict[tuple, int] = {}  # (process, thread) -> its code
        names: list[tuple] = []  # per code: (process, thread, process name, thread name)
        process, pname = "", ""
        clock = DayClock()
        bad, threaded, cut = 0, False, False
        for line in f:
            if not line.endswith("\n"):  # a recording cut off: its last row may hold a number cut short
                cut = True
                break
            words = line.split()
            if not words:
                continue
            if words[0] == "#":  # -h's header: '# Time UID TGID TID ...'
                cols = words[2:]
                section = None
                continue
            t, took = _clock(words)
            if t is None:  # 'Average:' and anything else that is not a sample
                continue
            if words[-1] == "Command" and ("PID" in words or "TID" in words):
                cols = words[took:]  # a block's header: the columns from here
                section = None
                continue
            if cols is None or "Command" not in cols or len(words) - took < len(cols):
                bad += 1
                continue
            if section is None:
                section = sections.get(tuple(cols))
                if section is None:
                    section = sections[tuple(cols)] = _Section(cols)
                tid_j, tgid_j, pid_j = section.tid, section.tgid, section.pid
            rest = words[took:]
            n = len(cols) - 1
            command = " ".join(rest[n:])
            if t < 0:
                when = -t
            else:
                when = clock(t)  # seconds into the report's day
                on_clock = True
            if tid_j is not None:
                threaded = True
                if rest[tid_j] == "-":  # the process's own row: its threads follow
                    process, pname = rest[tgid_j] if tgid_j is not None else "", command
                    continue
                task, tname = rest[tid_j], command.removeprefix("|__")
                owner = rest[tgid_j] if tgid_j is not None and rest[tgid_j] != "-" else process
                key = (owner, task)
                code = tasks.get(key)
                if code is None:
                    code = tasks[key] = len(names)
                    names.append((owner, task, _short(pname if owner == process else tname), tname))
            else:
                task = rest[pid_j] if pid_j is not None else ""
                key = (task, task)
                code = tasks.get(key)
                if code is None:
                    code = tasks[key] = len(names)
                    names.append((task, task, _short(command), _short(command)))
            section.add(when, code, rest)
    if not any(len(sec.time) for sec in sections.values()):
        raise InputError(path, "pidstat's report holds no task rows (a header with TID or PID and Command, "
                               "then one row per task and interval)")
    # the sections merged by (task, time): a block report gives each task's metrics in several
    mlist = list(dict.fromkeys(m for sec in sections.values() for m in sec.metrics))
    parts = [(sec, np.frombuffer(sec.time, np.float64), np.frombuffer(sec.task, np.int64))
             for sec in sections.values() if len(sec.time)]
    all_t = np.concatenate([t for _, t, _ in parts])
    all_k = np.concatenate([k for _, _, k in parts])
    order = np.lexsort((all_t, all_k))
    new = np.r_[True, (all_k[order][1:] != all_k[order][:-1]) | (all_t[order][1:] != all_t[order][:-1])]
    row_of = np.empty(len(order), np.int64)
    row_of[order] = np.cumsum(new) - 1
    first_of = order[new]
    vals = np.full((int(new.sum()), len(mlist)), np.nan)
    at = 0
    for sec, t, _ in parts:
        v = np.frombuffer(sec.values, np.float64).reshape(len(t), len(sec.metrics))
        vals[row_of[at:at + len(t)][:, None], [mlist.index(m) for m in sec.metrics]] = v
        at += len(t)
    time, code = all_t[first_of], all_k[first_of]
    zone = ""
    if on_clock:
        time, zone = local_clock_to_epoch(day, time, local_zone)
    info = np.array(names, dtype=object).reshape(len(names), 4)
    owner, task, procs, tnames = (info[code, j] for j in range(4))
    groups = {"machine": np.full(len(code), host, dtype=object),
              "process": np.array([f"{p}[{o}]" for p, o in zip(info[:, 2], info[:, 0])], dtype=object)[code],
              "program": procs}
    if threaded:  # threads in their processes, by pool; else each process is one series
        groups["pool"] = np.array([pool_name(x) for x in info[:, 3]], dtype=object)[code]
        groups["name"] = tnames  # the thread's own name, said beside its id
    ts = build(time, task, groups, vals, mlist, str(path))
    ts.units = {m: unit_of(m) for m in mlist if unit_of(m)}
    # alike abstractions only: processes of one program, threads of one pool (as a kernel trace's)
    ts.kinds = {"process": "program", "pool": "pool"} if threaded else {"process": "program"}
    ts.notes.append(f"pidstat's report of {host}: {ts.n_threads} {'threads' if threaded else 'processes'}, "
                    f"{len(mlist)} metrics" + (f"; its times are the host's clock, read in {zone_words(local_zone)} "
                                               f"({zone})" if zone else ""))
    if cut:
        ts.notes.append("its last line is cut (no end of line, as a recording stopped mid-write): left out")
    if bad:
        ts.notes.append(f"{bad:,} row{'s' if bad != 1 else ''} shorter than their header skipped")
    return ts
