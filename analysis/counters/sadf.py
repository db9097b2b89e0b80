"""sysstat's counters as ``sadf -d`` exports them: each Linux server's ``sar`` archive
(``/var/log/sysstat/saDD``) as semicolon-separated text, read as counters across servers.

``sadf -d /var/log/sysstat/sa27 -- -u -r -q -n DEV > web-01.csv`` writes one section per
activity, each under its header ``# hostname;interval;timestamp;[KEY;]METRIC;...``: a row per
host, interval and (for activities with instances) key: a CPU (``-1`` for all of them), a network
interface, a disk. Counters are the metrics as sar names them, with their instance where there is
one: ``%user`` (all CPUs), ``%user[cpu1]``, ``rxkB/s[eth0]``, ``%util[sda]``. The server is the
``hostname`` column (files of several hosts concatenated read alike). Times are UTC (``... UTC``,
as sadf prints them by default; with ``-t`` the hosts' local times, read as UTC, and said).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import open_data
from perftriage.analysis.timeparse import column_to_seconds

from .table import Piece, RawCounters

HEAD = "# hostname;interval;timestamp;"
#: the columns sadf writes between the timestamp and the metrics for activities with instances
KEYS = {"CPU", "IFACE", "DEV", "DEVICE", "FILESYSTEM", "MOUNTPOINT", "TTY", "INTR", "FCHOST", "BUS", "TYPE", "SLOT"}


def sniff(path: Path, head: bytes) -> bool:
    text = head.decode("utf-8", "replace").lstrip()
    return text.startswith(HEAD)


def _key_name(col: str, key: str) -> str | None:
    """The instance a row's metrics are of: None for all CPUs (sar's -1), else 'cpu1', 'eth0'."""
    if col == "CPU":
        return None if key in ("-1", "all") else f"cpu{key}"
    return key


def read_sadf(path, names_) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names)."""
    path = Path(path)
    try:
        f = open_data(path)
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    with f:
        text = f.read()
    lines = text.splitlines()
    if not text.endswith("\n") and lines:
        lines.pop()  # a last line cut mid-write
    cut = len(text) > 0 and not text.endswith("\n")
    # rows grouped by (section header, instance column): [host, time, values...]
    groups: dict[tuple, list[list[str]]] = {}
    header: list[str] | None = None
    short = 0
    for line in lines:
        if not line.strip():
            continue
        if line.startswith("#"):
            header = line[1:].strip().split(";")
            continue
        if header is None:
            raise InputError(path, f"a row before any header ('{HEAD}...'): not sadf -d's output")
        cells = line.split(";")
        if len(cells) != len(header):
            short += 1
            continue
        keyed = header[3] in KEYS if len(header) > 3 else False
        groups.setdefault((tuple(header), cells[3] if keyed else None), []).append(cells)
    if not groups:
        raise InputError(path, f"no rows under a header ('{HEAD}...'): sadf -d wrote nothing for these activities")
    pieces, local = [], False
    for (hdr, key), rows in groups.items():
        keyed = key is not None
        first = 4 if keyed else 3
        metrics = list(hdr[first:])
        inst = _key_name(hdr[3], key) if keyed else None
        cols = list(zip(*rows))
        stamps = [s.strip() for s in cols[2]]
        local |= not stamps[0].endswith("UTC")
        time = column_to_seconds([s.removesuffix("UTC").strip() for s in stamps], path)
        server = names_.servers_of(cols[0])
        vals = np.full((len(rows), len(metrics)), np.nan)
        for j in range(len(metrics)):
            try:
                vals[:, j] = np.asarray(cols[first + j], dtype=np.float64)
            except ValueError:  # a cell that is no number: that sample missing
                vals[:, j] = [_number(x) for x in cols[first + j]]
        idx = np.array([names_.counter(m if inst is None else f"{m}[{inst}]") for m in metrics], np.int32)
        pieces.append(Piece(server, time, idx, vals))
    notes = []
    if local:
        notes.append(f"{path.name}: sadf's times without 'UTC' (sadf -t: each host's local time), read as UTC")
    if short:
        notes.append(f"{path.name}: {short:,} row{'s' if short != 1 else ''} with another number of fields than "
                     "their header skipped")
    if cut:
        notes.append(f"{path.name}: its last line is cut (no end of line): left out")
    return RawCounters(names_.server_list, names_.counter_list, pieces, str(path), notes)


def _number(x: str) -> float:
    try:
        return float(x)
    except ValueError:
        try:  # a decimal comma (a German or French locale's 12,50)
            return float(x.replace(",", "."))
        except ValueError:
            return np.nan
