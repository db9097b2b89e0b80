"""top's batch output (procps), as per-thread resource time series: what every Linux host can
record without installing anything, ``top -H -b -d 1 -n 600 -p PID > top.txt``.

Each iteration is a block: ``top - 16:13:06 up ...``, the summary lines (``Threads:`` with
``-H``, ``Tasks:`` without), a blank line, the column header (``PID USER PR NI VIRT RES SHR S
%CPU %MEM TIME+ COMMAND``, whichever fields were chosen), then a row per task, sorted as top
sorts them (by %CPU). With ``-H`` a row is a thread (its PID column the thread id, its command
the thread's name): the threads are compared within their pools (the name without its number);
without it a row is a process, compared with the others of its program.

Metrics: the numeric columns (%CPU, %MEM, RES, SHR, VIRT in KiB, their ``m``/``g`` suffixes
read as top scales them; a decimal comma read alike), and the state column as two 0/1 metrics,
``running`` (R) and ``I/O wait`` (D: uninterruptible, mostly a disk). TIME+ is cumulative (%CPU
says its rate) and the user, priority and nice are no metrics. top prints only the time of day:
the day is the file's last modification's (the recording ended then, the last block within a day
before it), the times read in this machine's time zone (top prints the host's clock: said).
"""

from __future__ import annotations

import os
import re
import time
from array import array
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.units import count_of
from perftriage.analysis.inputs import open_data
from perftriage.analysis.timeparse import DayClock, local_clock_to_epoch, zone_words
from perftriage.analysis.values import number

from .series import ThreadSeries, build, pool_name

_BLOCK = re.compile(r"^top - (\d{1,2}):(\d\d):(\d\d)\s")
NOT_METRICS = {"PID", "USER", "PR", "NI", "TIME+", "TIME", "COMMAND", "S", "TGID", "UID", "GROUP", "TTY", "P",
               "PPID", "nTH", "WCHAN", "Flags"}
KIB = {"VIRT", "RES", "SHR", "CODE", "DATA", "SWAP", "USED", "RSan", "RSfd", "RSlk", "RSsh"}
_SCALE = {"k": 1.0, "m": 1024.0, "g": 1024.0 ** 2, "t": 1024.0 ** 3, "p": 1024.0 ** 4, "e": 1024.0 ** 5}


def sniff(path: Path, head: bytes) -> bool:
    text = head.decode("utf-8", "replace").lstrip()
    return bool(_BLOCK.match(text)) and "COMMAND" in text[:8192]


def _number(x: str, kib: bool) -> float:
    if kib and x and x[-1].lower() in _SCALE:  # '1.2g': top scaled a memory field to fit
        return number(x[:-1]) * _SCALE[x[-1].lower()]
    return number(x)


def read_top(path, local_zone: str | None = None) -> ThreadSeries:
    """``local_zone``: the zone of the host's clock (--timezone; None: this machine's)."""
    path = Path(path)
    try:
        end = os.stat(path).st_mtime
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    cols: list[str] | None = None
    tod = None  # the block's time of day, seconds
    tods = array("d")  # per row: its block's time of day (a day added past midnight)
    codes = array("q")
    values = array("d")
    tasks: dict[str, int] = {}  # task id -> its code
    names: list[tuple] = []  # per code: (id, name)
    threads, take, kib, state_j = None, [], [], None
    seen: list[str] | None = None  # the metric columns of the first iteration: the same in every one
    clock = DayClock()
    bad, cut = 0, False
    with open_data(path) as f:
        for line in f:
            if not line.endswith("\n"):
                cut = True  # a recording cut off mid-write: its last row may hold a number cut short
                break
            m = _BLOCK.match(line)
            if m:
                tod = clock(int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3)))
                cols = None
                continue
            words = line.split()
            if not words or tod is None:
                continue
            if words[0] in ("Threads:", "Tasks:"):
                threads = words[0] == "Threads:" if threads is None else threads
                continue
            if cols is None:
                if "PID" in words and words[-1] == "COMMAND":
                    cols = words
                    take = [j for j, c in enumerate(cols[:-1]) if c not in NOT_METRICS]
                    fields = [cols[j] for j in take]
                    if seen is not None and fields != seen:
                        raise InputError(path, "top's columns change between iterations: record with one field set")
                    seen = fields
                    kib = [cols[j] in KIB for j in take]
                    state_j = cols.index("S") if "S" in cols else None
                    pid_j = cols.index("PID")
                continue
            if len(words) < len(cols):
                bad += 1
                continue
            n = len(cols) - 1
            row = [_number(words[j], k) for j, k in zip(take, kib)]
            if state_j is not None:
                s = words[state_j]
                row += [float(s == "R"), float(s == "D")]
            task = words[pid_j]
            code = tasks.get(task)
            if code is None:
                code = tasks[task] = len(names)
                names.append((task, " ".join(words[n:])))
            tods.append(tod)
            codes.append(code)
            values.extend(row)
    if not len(codes):
        raise InputError(path, "top's output holds no task rows (a 'top - HH:MM:SS' line, a header with PID and "
                               "COMMAND, then a row per task)")
    metrics = seen + (["running", "I/O wait"] if state_j is not None else [])
    vals = np.frombuffer(values, np.float64).reshape(len(codes), len(metrics)).copy()
    t = np.frombuffer(tods, np.float64)
    # the day: the file was last written as the last block was, on this machine's clock (where
    # it was recorded, as a rule), the times of day read in its time zone
    if local_zone:  # the file's last change on the host's clock, in the zone the user gave
        from zoneinfo import ZoneInfo  # noqa: PLC0415

        at = datetime.fromtimestamp(end, ZoneInfo(local_zone))
        end_tod, end_day = at.hour * 3600 + at.minute * 60 + at.second, at.date()
    else:
        local = time.localtime(end)
        end_tod = local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec
        end_day = date(local.tm_year, local.tm_mon, local.tm_mday)
    last_day = end_day - timedelta(days=int(t[-1] % 86400 > end_tod + 60))
    when, zone = local_clock_to_epoch(last_day - timedelta(days=int(t[-1] // 86400)), t, local_zone)
    code = np.frombuffer(codes, np.int64)
    info = np.array(names, dtype=object).reshape(len(names), 2)
    ids, own = info[code, 0], info[code, 1]
    groups = {"pool": np.array([pool_name(x) for x in info[:, 1]], dtype=object)[code], "name": own}
    if not threads:  # processes: each compared with the others of its program
        groups = {"process": np.array([f"{x}[{i}]" for i, x in zip(info[:, 0], info[:, 1])], dtype=object)[code],
                  "program": own}
    ts = build(when, ids, groups, vals, metrics, str(path))
    ts.units = {m: "%" if m.startswith("%") else "KiB" for m in metrics if m.startswith("%") or m in KIB}
    ts.kinds = {"pool": "pool"} if threads else {"process": "program"}
    ts.notes.append(f"top's output: {count_of(ts.n_threads, 'threads' if threads else 'processes')}, "
                    f"{count_of(len(metrics), 'metrics')}; "
                    f"top prints the time of day only: dated by the file's last change, read in "
                    f"{zone_words(local_zone)} ({zone})")
    if cut:
        ts.notes.append("its last line is cut (no end of line, as a recording stopped mid-write): left out")
    if bad:
        ts.notes.append(f"{bad:,} row{'s' if bad != 1 else ''} shorter than their header skipped")
    return ts
