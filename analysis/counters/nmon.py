"""nmon's recording (``nmon -f -s 60 -c 1440`` writes ``HOST_YYMMDD_HHMM.nmon``; AIX's topas_nmon
alike): one host's counters, a snapshot per interval.

Comma-separated lines, each led by its section: ``AAA`` lines describe the recording (``AAA,host,
web01``, ``AAA,interval,60``), ``BBB...`` lines the machine's configuration (left out). A
section's first line names its columns (``CPU_ALL,CPU Total web01,User%,Sys%,Wait%,Idle%``,
``NET,Network I/O web01,eth0-read-KB/s,...``, ``DISKBUSY,Disk %Busy web01,sda,sdb``); each
snapshot opens with ``ZZZZ,T0001,10:00:00,28-NOV-2026`` (its time, the host's local one) and
gives a line per section (``CPU_ALL,T0001,5.0,2.0,0.1,92.9``). A counter is ``SECTION.COLUMN``
(``CPU_ALL.User%``, ``MEM.memfree``, ``NET.eth0-read-KB/s``, ``DISKBUSY.sda``). The per-process
sections (``TOP``, ``UARG``: a line per process, not per snapshot) are left out, said in a note.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import csv_rows
from perftriage.analysis.units import count_of, count_that
from perftriage.analysis.values import numbers

from .table import Piece, RawCounters

#: sections of a process each (their second column a process id, not a snapshot)
PER_PROCESS = {"TOP", "UARG"}
_MONTHS = {m: i + 1 for i, m in enumerate(("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT",
                                           "NOV", "DEC"))}


def sniff(head: bytes) -> bool:
    """Its first line is ``AAA,progname,...`` (or another AAA line), and a ZZZZ or a section's
    header follows."""
    text = head.decode("utf-8", "replace").lstrip("\ufeff \r\n")
    return text.startswith("AAA,") and ("\nZZZZ," in text or "\nCPU_ALL," in text or "AAA,progname," in text)


def _snapshot_time(cells: list[str]) -> float | None:
    """``ZZZZ,T0001,10:00:00,28-NOV-2026`` as unix seconds (the host's local time read as UTC)."""
    if len(cells) < 4:
        return None
    try:
        h, m, s = (int(x) for x in cells[2].strip().split(":"))
        d, mon, y = cells[3].strip().split("-")
        when = _dt.datetime(int(y), _MONTHS[mon.upper()[:3]], int(d), h, m, s, tzinfo=_dt.timezone.utc)
    except (ValueError, KeyError):
        return None
    return when.timestamp()


def read_nmon(path, names_) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names)."""
    path = Path(path)
    host = ""
    columns: dict[str, list[str]] = {}  # section -> its columns' names (empty names kept as "")
    stamps: dict[str, float] = {}  # T0001 -> its time
    rows: dict[str, list[tuple[str, list[str]]]] = {}  # section -> its lines' snapshots and cells
    odd = bad_time = 0
    per_process: set[str] = set()
    with csv_rows(path, encoding="utf-8-sig") as rd:
        for cells in rd:
            if not cells or not cells[0].strip():
                continue
            section = cells[0].strip()
            if section == "AAA":
                if len(cells) > 2 and cells[1].strip() == "host":
                    host = cells[2].strip()
                continue
            if section.startswith("BBB"):
                continue
            if section in PER_PROCESS:
                per_process.add(section)
                continue
            if section == "ZZZZ":
                t = _snapshot_time(cells)
                if t is None:
                    bad_time += 1
                elif len(cells) > 1:
                    stamps[cells[1].strip()] = t
                continue
            tag = cells[1].strip() if len(cells) > 1 else ""
            if len(tag) > 1 and tag[0] == "T" and tag[1:].isdigit():
                if section not in columns:
                    odd += 1  # values before their section's header
                    continue
                rows.setdefault(section, []).append((tag, cells[2:]))
            elif section not in columns:
                columns[section] = [c.strip() for c in cells[2:]]
            else:
                odd += 1
    if not stamps:
        raise InputError(path, "no snapshot time (ZZZZ,T0001,HH:MM:SS,DD-MON-YYYY): not an nmon recording, or cut "
                               "before its first snapshot")
    pieces, kept = [], 0
    server = names_.server(host or _file_server(path))
    for section, lines in rows.items():
        names = columns[section]
        when = np.array([stamps.get(tag, np.nan) for tag, _ in lines])
        ok = np.isfinite(when)
        if not ok.any():
            continue
        width = len(names)
        grid = np.full((len(lines), width), np.nan)
        for i, (_, vals) in enumerate(lines):
            if len(vals) > width:
                odd += 1
            grid[i, :min(len(vals), width)] = numbers(vals[:width])
        cols = [j for j, n in enumerate(names) if n and np.isfinite(grid[:, j]).any()]
        if not cols:
            continue
        kept += len(cols)
        pieces.append(Piece(np.full(int(ok.sum()), server, np.int32), when[ok],
                            np.array([names_.counter(f"{section}.{names[j]}") for j in cols], np.int32),
                            grid[ok][:, cols]))
    if not pieces:
        raise InputError(path, "no section's line of numbers at a snapshot (SECTION,T0001,...) in this nmon recording")
    notes = [f"{path.name}: an nmon recording of {host or 'a host not named (AAA,host): the file'}; "
             f"{count_of(kept, 'counters')} named SECTION.COLUMN; its times are the host's local ones, read as UTC"]
    if per_process:
        notes.append(f"{path.name}: its per-process sections ({', '.join(sorted(per_process))}) left out")
    if odd:
        notes.append(f"{path.name}: {count_of(odd, 'lines')} out of place (values before their section's header, "
                     "more values than its columns, a header again) skipped or cut")
    if bad_time:
        notes.append(f"{path.name}: {count_that(bad_time, 'snapshot times')} no "
                     f"time (ZZZZ lines): {'its snapshot' if bad_time == 1 else 'their snapshots'} left out")
    return RawCounters(names_.server_list, names_.counter_list, pieces, str(path), notes, not host, local=True)


def _file_server(path: Path) -> str:
    """A recording's host from its file name (``web01_261128_1000.nmon``) where AAA names none."""
    stem = path.name.split(".")[0]
    parts = stem.rsplit("_", 2)
    return parts[0] if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit() else stem
