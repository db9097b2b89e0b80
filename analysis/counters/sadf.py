"""sysstat's counters as ``sadf -d`` exports them: each Linux server's ``sar`` archive
(``/var/log/sysstat/saDD``) as semicolon-separated text, read as counters across servers; or
the archives themselves, copied from their hosts, exported by this host's sadf first (CPU,
memory, swap, load, I/O, disks, interfaces, tasks and switches).

``sadf -d /var/log/sysstat/sa27 -- -u -r -q -n DEV > web-01.csv`` writes one section per
activity, each under its header ``# hostname;interval;timestamp;[KEY;]METRIC;...``: a row per
host, interval and (for activities with instances) key: a CPU (``-1`` for all of them), a network
interface, a disk. Counters are the metrics as sar names them, with their instance where there is
one: ``%user`` (all CPUs), ``%user[cpu1]``, ``rxkB/s[eth0]``, ``%util[sda]``. The server is the
``hostname`` column (files of several hosts concatenated read alike). Times are UTC (``... UTC``,
as sadf prints them by default; with ``-t`` the hosts' local times, read as UTC, and said).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
from array import array
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import is_gzip, open_data
from perftriage.analysis.timeparse import column_to_seconds
from perftriage.analysis.values import number as _number

from . import iostat, sar_text
from .table import Piece, RawCounters

HEAD = "# hostname;interval;timestamp;"
#: the columns sadf writes between the timestamp and the metrics for activities with instances
KEYS = {"CPU", "IFACE", "DEV", "DEVICE", "FILESYSTEM", "MOUNTPOINT", "TTY", "INTR", "FCHOST", "BUS", "TYPE", "SLOT"}


def sniff(path: Path, head: bytes) -> bool:
    """sadf -d's output, or a sysstat archive it is made from."""
    if is_archive(head) or sar_text.sniff(head) or iostat.sniff(head):
        return True
    text = head.decode("utf-8", "replace").lstrip()
    return text.startswith(HEAD)


def _key_name(col: str, key: str) -> str | None:
    """The instance a row's metrics are of: None for all CPUs (sar's -1), else 'cpu1', 'eth0'."""
    if col == "CPU":
        return None if key in ("-1", "all") else f"cpu{key}"
    return key


class _Group:
    """The rows of one (header, instance): their time stamps (one object per distinct stamp),
    hosts (codes) and values (one flat array of numbers)."""

    def __init__(self, width: int):
        self.width = width
        self.stamps: list[str] = []
        self.hosts = array("i")
        self.values = array("d")


#: sysstat's archive (``/var/log/sysstat/saDD``): its magic number 0xd596, either byte order
ARCHIVE_MAGIC = (b"\x96\xd5", b"\xd5\x96")
#: the activities read from an archive: CPU, memory, swap, load, I/O, disks, interfaces, tasks
ACTIVITIES = ("-u", "-r", "-S", "-q", "-b", "-d", "-n", "DEV", "-w", "-W")


def is_archive(head: bytes) -> bool:
    return head[:2] in ARCHIVE_MAGIC and len(head) >= 64


def export_archive(path: Path) -> tuple[str, list[str]]:
    """A sysstat archive as ``sadf -d`` writes it (this host's sadf: the archive's own format, as
    copied from its host), and notes; one line naming the file where sadf cannot read it. A
    gzip-compressed archive goes to sadf decompressed, from a temporary file (never beside it)."""
    sadf = shutil.which("sadf")
    if sadf is None:
        raise InputError(path, "a sysstat (sar) archive, read through sadf, which is not installed here (Debian: "
                               "apt-get install sysstat); or give 'sadf -d FILE -- -u -r -q -b -d -n DEV' 's output")
    tmp = None
    try:
        if is_gzip(path):
            with open_data(path, binary=True) as f, tempfile.NamedTemporaryFile(
                    prefix="perftriage-sa-", delete=False) as t:
                shutil.copyfileobj(f, t)
                tmp = t.name
        out = subprocess.run([sadf, "-d", tmp or str(path), "--", *ACTIVITIES], capture_output=True, text=True,
                             errors="replace", timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(path, f"sadf could not read this sysstat archive ({exc})") from None
    finally:
        if tmp is not None:
            os.unlink(tmp)
    if tmp is not None:
        out.stdout, out.stderr = out.stdout.replace(tmp, path.name), out.stderr.replace(tmp, path.name)
    said = " ".join(out.stderr.split())[:200]
    if out.returncode != 0 and HEAD not in out.stdout:
        raise InputError(path, f"sadf cannot read this sysstat archive: {said or f'exit status {out.returncode}'}")
    notes = [f"{path.name}: read through sadf -d, which said: {said} (the records before it read)"] if said else []
    return out.stdout, notes


def read_sadf(path, names_, row_interval: float | None = None) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names); ``path`` an export,
    a sysstat archive (exported by sadf first), sar's text report (sar_text.py) or iostat's
    (iostat.py; ``row_interval``: the seconds between its reports when they carry no time)."""
    path = Path(path)
    notes_in: list[str] = []
    try:
        with open_data(path, binary=True) as raw:
            head = raw.read(4096)
        archive, sar_report = is_archive(head), sar_text.sniff(head)
        text_report = sar_report or iostat.sniff(head)
        numbered = False
        if archive or sar_report:
            text, notes_in = export_archive(path) if archive else sar_text.as_sadf(path)
            f = io.StringIO(text)
        elif text_report:
            text, notes_in, numbered = iostat.as_sadf(path, row_interval)
            f = io.StringIO(text)
        else:
            f = open_data(path)
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    groups: dict[tuple, _Group] = {}  # (section header, instance) -> its rows
    header: tuple | None = None
    first = 3
    hosts: dict[str, int] = {}
    stamps: dict[str, str] = {}  # each stamp once, whatever the instances sharing it
    short, cut = 0, False
    with f:
        for line in f:
            if not line.endswith("\n"):
                cut = True  # a last line cut mid-write
                break
            if not line.strip():
                continue
            if line.startswith("#"):
                header = tuple(line[1:].strip().split(";"))
                first = 4 if len(header) > 3 and header[3] in KEYS else 3
                continue
            if header is None:
                raise InputError(path, f"a row before any header ('{HEAD}...'): not sadf -d's output")
            cells = line.rstrip("\n").split(";")
            if len(cells) != len(header):
                short += 1
                continue
            key = (header, cells[3] if first == 4 else None)
            g = groups.get(key)
            if g is None:
                g = groups[key] = _Group(len(header) - first)
            stamp = cells[2]
            g.stamps.append(stamps.setdefault(stamp, stamp))
            h = hosts.get(cells[0])
            if h is None:
                h = hosts[cells[0]] = names_.server(cells[0].strip())
            g.hosts.append(h)
            try:
                g.values.extend([float(x) for x in cells[first:]])
            except ValueError:  # a cell that is no number (or a decimal comma): per cell
                g.values.extend([_number(x) for x in cells[first:]])
    if not groups:
        raise InputError(path, f"no rows under a header ('{HEAD}...'): sadf -d wrote nothing for these activities")
    pieces, local = [], False
    when: dict[str, float] = {}  # each distinct stamp parsed once
    owner: dict[tuple, tuple] = {}  # a metric (and its instance column) -> the first section naming it
    for hdr, key in groups:
        for m in hdr[4 if key is not None else 3:]:
            owner.setdefault((m, hdr[3] if key is not None else None), hdr)
    for (hdr, key), g in groups.items():
        first = 4 if key is not None else 3
        # a metric two sections name (retrans/s: TCP's errors' and the NFS client's) is the later
        # section's with a word of its own
        metrics = [m if owner[(m, hdr[3] if key is not None else None)] == hdr else
                   f"{m} (beside {next((x for x in hdr[first:] if x != m), '')})" for m in hdr[first:]]
        inst = _key_name(hdr[3], key) if key is not None else None
        new = [st for st in dict.fromkeys(g.stamps) if st not in when]
        if new:
            local |= not new[0].strip().endswith("UTC")
            for st, t in zip(new, column_to_seconds([st.strip().removesuffix("UTC").strip() for st in new], path)):
                when[st] = float(t)
        time = np.fromiter((when[st] for st in g.stamps), np.float64, len(g.stamps))
        vals = np.frombuffer(g.values, np.float64).reshape(len(g.stamps), g.width)
        idx = np.array([names_.counter(m if inst is None else f"{m}[{inst}]") for m in metrics], np.int32)
        pieces.append(Piece(np.frombuffer(g.hosts, np.int32).copy(), time, idx, vals.copy()))
    notes = list(notes_in)
    if local and not text_report and not numbered:  # sar's text and iostat's say so themselves
        notes.append(f"{path.name}: sadf's times without 'UTC' (sadf -t: each host's local time), read as UTC")
    if short:
        notes.append(f"{path.name}: {short:,} row{'s' if short != 1 else ''} with another number of fields than "
                     "their header skipped")
    if cut:
        notes.append(f"{path.name}: its last line is cut (no end of line): left out")
    said_local = any(n.endswith("read as UTC") for n in notes)  # sadf -t's, sar's text, iostat's local times
    return RawCounters(names_.server_list, names_.counter_list, pieces, str(path), notes, numbered=numbered,
                       local=said_local)
