"""vmstat's report (``vmstat -t 5 > web-01.txt``; procps): one host's counters, a row per
interval, the server named after its file (vmstat prints no host).

Two header lines, repeated every screenful: the groups (``procs -----memory----- ---swap--
-----io---- -system-- ------cpu----- -----timestamp-----``) and the columns (``r b swpd free buff
cache si so bi bo in cs us sy id wa st [gu] [ZONE]``, ``inact active`` for ``buff cache`` with
``-a``). A counter is ``GROUP.COLUMN`` (``cpu.us``, ``memory.free``, ``io.bo``, ``system.cs``).
With ``-t`` each row ends with its date and time (the zone is the columns line's last word: the
host's local time, read as UTC unless it says UTC, said); without, the rows are numbered
(``--interval`` apart, as a CSV's without times). The first row holds averages since the host's
boot (vmstat prints it before its first interval): it is left out.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import open_data
from perftriage.analysis.timeparse import column_to_seconds
from perftriage.analysis.units import count_of

from .table import Piece, RawCounters

#: each column's group, as vmstat's first header line names them
GROUPS = {**dict.fromkeys(("r", "b"), "procs"),
          **dict.fromkeys(("swpd", "free", "buff", "cache", "inact", "active"), "memory"),
          **dict.fromkeys(("si", "so"), "swap"), **dict.fromkeys(("bi", "bo"), "io"),
          **dict.fromkeys(("in", "cs"), "system"), **dict.fromkeys(("us", "sy", "id", "wa", "st", "gu"), "cpu")}
_GROUPS_LINE = re.compile(r"-*procs-*\s+-+\s*memory\s*-+")  # -w: --procs--
_STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


def sniff(head: bytes) -> bool:
    text = head.decode("utf-8", "replace").lstrip("\ufeff \r\n")
    return bool(_GROUPS_LINE.match(text))


def read_vmstat(path, names_, row_interval: float | None = None) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names); ``row_interval``:
    seconds between rows when they carry no time (--interval)."""
    path = Path(path)
    columns: list[str] | None = None
    zone = ""
    rows, stamps = [], []
    odd = 0
    expect_columns = stamped = False
    with open_data(path) as f:
        for line in f:
            if _GROUPS_LINE.match(line.strip()):
                expect_columns = True  # vmstat repeats its two header lines every screenful
                stamped = "timestamp" in line  # -t: the columns line ends with the zone
                continue
            words = line.split()
            if not words:
                continue
            if expect_columns:
                expect_columns = False
                cols = words[:-1] if stamped else words
                if columns is not None and cols != columns:
                    raise InputError(path, f"a header of other columns midway ({' '.join(cols)[:60]!r}): "
                                           "two vmstat reports in one file; give each its own")
                columns, zone = cols, words[-1] if stamped else zone
                continue
            if columns is None:
                raise InputError(path, "a row before vmstat's two header lines (procs ---memory--- ..., r b swpd ...)")
            stamp = " ".join(words[-2:]) if len(words) >= 2 and _STAMP.match(" ".join(words[-2:])) else ""
            values = words[:-2] if stamp else words
            if len(values) != len(columns) or (stamped and not stamp):  # -t: a row whose time is cut off
                odd += 1
                continue
            try:
                rows.append([float(x) for x in values])
            except ValueError:
                odd += 1
                continue
            stamps.append(stamp)
    if columns is None or len(rows) < 2:
        raise InputError(path, "no row of numbers under vmstat's header after its first (averages since boot)"
                         if columns is not None else "no vmstat header (procs ---memory--- ..., r b swpd ...)")
    rows, stamps = rows[1:], stamps[1:]  # averages since the host's boot
    values = np.array(rows)
    timed = all(stamps)
    notes = [f"{path.name}: vmstat's report; its first row (averages since the host's boot) left out"]
    from .readers import server_of_file  # noqa: PLC0415 (readers imports this module)

    if timed:
        time = column_to_seconds(stamps, path)
        if zone.upper() not in ("UTC", "GMT"):
            notes.append(f"{path.name}: vmstat's times ({zone or 'no zone named'}: the host's local ones) read as UTC")
    elif not row_interval:
        raise InputError(path, "vmstat's report without times (vmstat -t prints them): give the delay it was run "
                               "with, e.g. --interval 5")
    else:
        time = np.arange(len(rows), dtype=np.float64) * row_interval
    if odd:
        notes.append(f"{path.name}: {count_of(odd, 'rows')} of another number of columns than the header, or not "
                     "numbers, skipped")
    server = names_.server(server_of_file(path))
    names = [f"{GROUPS[c]}.{c}" if c in GROUPS else c for c in columns]
    piece = Piece(np.full(len(rows), server, np.int32), time, np.array([names_.counter(n) for n in names], np.int32),
                  values)
    return RawCounters(names_.server_list, names_.counter_list, [piece], str(path), notes, True, numbered=not timed,
                       local=timed and zone.upper() not in ("UTC", "GMT"))
