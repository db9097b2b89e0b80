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
  prints the host's local time: it is read as UTC (the note says so); numbers with a decimal
  comma, as pidstat prints them in a German or French locale, read alike.

Metrics are pidstat's columns as named (``%CPU``, ``kB_wr/s``, ``cswch/s``, ``RSS``...), with
their units; the task ids, user, the processor number and the command are not metrics. Without
``-p``, pidstat lists a task in an interval only when it was active there: such a task has
samples only where it was.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import open_data

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


def read_pidstat(path) -> ThreadSeries:
    path = Path(path)
    with open_data(path) as f:
        text = f.read()
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise InputError(path, "file is empty")
    cut = not text.endswith("\n")  # a recording cut off: its last row may hold a number cut short
    if cut:
        lines.pop()
    first = _FIRST.match(lines[0])
    if first is None:
        raise InputError(path, "not pidstat's report (its first line is 'Linux VERSION (HOST) DATE ...')")
    host = first.group("host")
    midnight = datetime.combine(_day(first.group("date"), path), datetime.min.time(), timezone.utc).timestamp()
    cols: list[str] | None = None
    samples: dict[tuple, dict] = {}  # (time, process, thread) -> {metric: value}
    names: dict[tuple, tuple] = {}  # (process, thread) -> (process name, thread name)
    metrics: dict[str, None] = {}
    process, pname = "", ""
    days, last, bad, threaded = 0, None, 0, False
    for line in lines[1:]:
        words = line.split()
        if not words:
            continue
        if words[0] == "#":  # -h's header: '# Time UID TGID TID ...'
            cols = words[2:]
            continue
        t, took = _clock(words)
        if t is None:  # 'Average:' and anything else that is not a sample
            continue
        rest = words[took:]
        if rest and rest[-1] == "Command" and ("PID" in rest or "TID" in rest):
            cols = rest  # a block's header: the columns from here
            continue
        if cols is None or "Command" not in cols or len(rest) < len(cols):
            bad += 1
            continue
        n = len(cols) - 1  # the command is the rest of the line (it may hold spaces: -l)
        row = dict(zip(cols[:n], rest[:n]))
        command = " ".join(rest[n:])
        if t < 0:
            when = -t
        else:
            if last is not None and t < last - 12 * 3600:  # past midnight
                days += 1
            last = t
            when = midnight + days * 86400 + t
        if "TID" in row:
            threaded = True
            if row["TID"] == "-":  # the process's own row: its threads follow
                process, pname = row.get("TGID", ""), command
                continue
            task, tname = row["TID"], command.removeprefix("|__")
            owner = row["TGID"] if row.get("TGID", "-") != "-" else process
            proc_name = _short(pname if owner == process else tname)
        else:
            task = owner = row.get("PID", "")
            tname = proc_name = _short(command)
        key = (when, owner, task)
        values = samples.setdefault(key, {})
        for c, v in row.items():
            if c in NOT_METRICS:
                continue
            metrics.setdefault(c, None)
            try:
                values[c] = float(v)
            except ValueError:
                try:  # a decimal comma (pidstat in a de_DE or fr_FR locale: 12,50)
                    values[c] = float(v.replace(",", "."))
                except ValueError:
                    values[c] = np.nan
        names.setdefault((owner, task), (proc_name, tname))
    if not samples:
        raise InputError(path, "pidstat's report holds no task rows (a header with TID or PID and Command, "
                               "then one row per task and interval)")
    mlist = list(metrics)
    keys = list(samples)
    vals = np.full((len(keys), len(mlist)), np.nan)
    index = {m: j for j, m in enumerate(mlist)}
    for i, k in enumerate(keys):
        for m, v in samples[k].items():
            vals[i, index[m]] = v
    time = np.array([k[0] for k in keys], np.float64)
    procs = [names[(k[1], k[2])][0] for k in keys]
    groups = {"machine": [host] * len(keys), "process": [f"{procs[i]}[{k[1]}]" for i, k in enumerate(keys)],
              "program": procs}
    if threaded:  # threads in their processes, by pool; else each process is one series
        groups["pool"] = [pool_name(names[(k[1], k[2])][1]) for k in keys]
        groups["name"] = [names[(k[1], k[2])][1] for k in keys]  # the thread's own name, said beside its id
    ts = build(time, [k[2] for k in keys], groups, vals, mlist, str(path))
    ts.units = {m: unit_of(m) for m in mlist if unit_of(m)}
    # alike abstractions only: processes of one program, threads of one pool (as a kernel trace's)
    ts.kinds = {"process": "program", "pool": "pool"} if threaded else {"process": "program"}
    ts.notes.append(f"pidstat's report of {host}: {ts.n_threads} {'threads' if threaded else 'processes'}, "
                    f"{len(mlist)} metrics; its times are the host's local time, read as UTC")
    if cut:
        ts.notes.append("its last line is cut (no end of line, as a recording stopped mid-write): left out")
    if bad:
        ts.notes.append(f"{bad:,} row{'s' if bad != 1 else ''} shorter than their header skipped")
    return ts
