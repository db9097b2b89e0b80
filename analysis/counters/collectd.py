"""collectd's CSV plugin's files: ``DataDir/HOST/PLUGIN[-INSTANCE]/TYPE[-INSTANCE]-YYYY-MM-DD``, a
file per host, plugin, type and day, each ``epoch,DS...`` (``epoch,value``, ``epoch,rx,tx``,
``epoch,shortterm,midterm,longterm``) then a line per sample (``1795860000.123,42``).

The server is the host's folder, a counter ``PLUGIN.TYPE`` with its data source where the type
has several (``cpu-0.cpu-idle``, ``interface-eth0.if_octets.rx``, ``load.load.shortterm``); a
day's file and the next day's of one counter are one series. collectd writes a gauge as a
decimal number (``%lf``) and a counter or a derive (jiffies, bytes, packets since boot) as an
integer, unless ``StoreRates`` turned it into a rate (a decimal again): a column of integers
only is a total, read as its rate per second (``rate(interface-eth0.if_octets.rx)``), a restart
counted from zero, its day's first sample from the last of the day before when that file lies
beside it (else none). ``nan`` is a missing sample.

A tree of such files (the DataDir, a host's folder) is read whole when named (see ``tree_files``).
"""

from __future__ import annotations

import datetime as dt
import gzip
import re
import zlib
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import csv_rows, read_head
from perftriage.analysis.units import count_of
from perftriage.analysis.values import numbers

from .cumulative import sample_rates
from .table import Piece, RawCounters

#: a collectd CSV file's name: its type (and type instance) and its day
FILE_NAME = re.compile(r"(?P<type>[A-Za-z0-9_.]+(?:-.+?)?)-(?P<day>\d{4}-\d\d-\d\d)(?:\.gz)?$")  # gzip: rotated
_INTEGER = re.compile(r"-?\d+$")


def sniff(path: Path, head: bytes) -> bool:
    return bool(FILE_NAME.match(Path(path).name)) and head.lstrip(b"\xef\xbb\xbf").startswith(b"epoch,")


def tree_files(folder: Path, limit: int = 200_000) -> list[Path] | None:
    """The collectd files of a DataDir (hosts' folders of plugins' folders) or of one host's
    folder, or None when ``folder`` is no such tree (its first plugin folder's files are not
    collectd's)."""
    def is_plugin_dir(d: Path) -> bool:
        try:
            first = next((f for f in sorted(d.iterdir()) if f.is_file() and not f.name.startswith(".")), None)
        except OSError:
            return False
        return first is not None and bool(FILE_NAME.match(first.name)) and _starts_with_epoch(first)

    def dirs(d: Path) -> list[Path]:
        try:
            return [c for c in sorted(d.iterdir()) if c.is_dir() and not c.name.startswith(".")]
        except OSError:
            return []

    subs = dirs(folder)
    if not subs:
        return None
    plugin_dirs = [d for d in subs if is_plugin_dir(d)]
    if not plugin_dirs:  # a DataDir: hosts' folders
        hosts = [h for h in subs if any(is_plugin_dir(d) for d in dirs(h)[:5])]
        if not hosts:
            return None
        plugin_dirs = [d for h in hosts for d in dirs(h) if is_plugin_dir(d)]
    files = [f for d in plugin_dirs for f in sorted(d.iterdir())
             if f.is_file() and FILE_NAME.match(f.name) and _starts_with_epoch(f)][:limit]
    return files or None


def _starts_with_epoch(path: Path) -> bool:
    try:
        return read_head(path, 64).lstrip(b"\xef\xbb\xbf").startswith(b"epoch,")
    except (OSError, InputError):
        return False


def read_collectd(path, names_) -> RawCounters:
    """One collectd CSV file: its host's and its plugin's from its folders."""
    path = Path(path)
    m = FILE_NAME.match(path.name)
    if m is None:
        raise InputError(path, "not a collectd CSV file's name (TYPE[-INSTANCE]-YYYY-MM-DD)")
    plugin = path.parent.name
    host = path.parent.parent.name or plugin
    rows, odd = [], 0
    with csv_rows(path, encoding="utf-8-sig") as rd:
        header = next(rd, None)
        if not header or header[0].strip() != "epoch" or len(header) < 2:
            raise InputError(path, "no collectd header (epoch,DS...)")
        width = len(header)
        for row in rd:
            if not row:
                continue
            if len(row) != width:
                odd += 1
                continue
            rows.append(row)
    if rows and not _ends_whole(path):  # its last line cut (a write under way): its number may be short
        rows.pop()
        odd += 1
    if not rows:  # a day's file just opened (collectd writes its header first): nothing yet
        return RawCounters(names_.server_list, names_.counter_list, [], str(path),
                           [f"{path}: {count_of(odd, 'lines')} of another width skipped"] if odd else [])
    cols = list(zip(*rows))
    time = numbers(cols[0])
    ok = np.isfinite(time)
    odd += int((~ok).sum())
    base = f"{plugin}.{m['type']}"
    names, values = [], []
    before = None  # the day before's last sample: the first one's base, where a total is
    for j, ds in enumerate(header[1:], start=1):
        raw = cols[j]
        v = numbers(raw)
        name = base if len(header) == 2 and ds.strip() == "value" else f"{base}.{ds.strip()}"
        if all(_INTEGER.match(x.strip()) for x in raw if x.strip() and x.strip().lower() != "nan"):
            if before is None:
                before = _day_before(path, m, width, time) or ()
            if before:  # a counter or a derive: a total since the host's boot
                v = sample_rates(np.r_[before[0], time], np.r_[before[j], v])[1:]
            else:
                v = sample_rates(time, v)
            name = f"rate({name})"
        names.append(name)
        values.append(v)
    server = names_.server(host)
    piece = Piece(np.full(int(ok.sum()), server, np.int32), time[ok],
                  np.array([names_.counter(n) for n in names], np.int32), np.column_stack(values)[ok])
    notes = []
    if odd:
        notes.append(f"{path}: {count_of(odd, 'lines')} of another width or without a time skipped")
    return RawCounters(names_.server_list, names_.counter_list, [piece], str(path), notes)


def _ends_whole(path: Path) -> bool:
    """Whether a plain file ends with a line's end (a rotated one is whole)."""
    if path.name.endswith(".gz"):
        return True
    try:
        with open(path, "rb") as f:
            return f.seek(0, 2) == 0 or (f.seek(-1, 2) >= 0 and f.read(1) in (b"\n", b"\r"))
    except OSError:
        return True


def _day_before(path: Path, m: re.Match, width: int, time: np.ndarray) -> tuple | None:
    """The last sample (its time, then its values) of the day before's file of ``path``'s counter,
    where that file lies beside it (plain or rotated) with the same columns and ends before
    ``path``'s first sample; else None."""
    try:
        day = dt.date.fromisoformat(m["day"]) - dt.timedelta(days=1)
    except (ValueError, OverflowError):
        return None
    first = time[np.isfinite(time)]
    if not len(first):
        return None
    for name in (f"{m['type']}-{day.isoformat()}", f"{m['type']}-{day.isoformat()}.gz"):
        other = path.with_name(name)
        try:
            if name.endswith(".gz"):
                with gzip.open(other, "rb") as f:
                    tail = f.read()[-4096:]
            else:
                with open(other, "rb") as f:
                    f.seek(max(0, f.seek(0, 2) - 4096))
                    tail = f.read()
        except (OSError, EOFError, zlib.error):
            continue
        lines = tail.decode("utf-8", "replace").splitlines()[1:]  # the first: the header, or cut
        if not tail.endswith(b"\n"):
            lines = lines[:-1]  # the last cut (a write under way): its number may be short
        for line in reversed(lines):
            cells = line.strip().split(",")
            if len(cells) != width:
                continue
            row = numbers(cells)
            if np.isfinite(row[0]) and row[0] < first[0]:
                return tuple(row)
            return None
    return None
