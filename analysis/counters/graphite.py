"""Graphite's render API (``/render?target=servers.*.cpu.*&format=json`` or ``format=csv``; what
Grafana asks a Graphite server): series named by dotted paths, ``servers.web01.cpu.user``.

JSON: ``[{"target": PATH, "datapoints": [[VALUE, UNIX_SECONDS], ...]}]`` (a ``null`` value a
missing sample); CSV: ``PATH,YYYY-MM-DD HH:MM:SS,VALUE`` (the server's local time: read as UTC,
said). A path names no server in a fixed place: the server is the part of the paths that varies
while the rest repeats for each of its values (every host has its cpu.user, its cpu.system, its
load: a grid, 80% full at least), the earliest such part whose values look like hosts' names (a
digit, a dash or an underscore in them: web01, ip-10-0-0-5) where several do; the counter the
path without it (``servers.cpu.user``). Where no part varies so, each path is a counter of one server, the
file's, said. A target that is a function (``sumSeries(servers.*.cpu.user)``) is a path as
written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import csv_rows, open_data
from perftriage.analysis.timeparse import column_to_seconds
from perftriage.analysis.units import count_that, first_of

from .table import Piece, RawCounters

_CSV_ROW = re.compile(rb"[^,\n]+,\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,[^,\n]*\r?$", re.MULTILINE)
_HOSTLIKE = re.compile(r"[0-9_-]")
_WHEN = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")  # the CSV's time, as Graphite writes it


def sniff(head: bytes) -> bool:
    h = head.lstrip()[:4096]
    if h.startswith(b"[") and b'"target"' in h and b'"datapoints"' in h:
        return True
    lines = [ln for ln in head.split(b"\n")[:20] if ln.strip()][:-1] or head.split(b"\n")[:1]
    return bool(lines) and sum(bool(_CSV_ROW.match(ln)) for ln in lines) >= 0.8 * len(lines) \
        and b"." in lines[0].split(b",")[0]


def server_part(paths: list[str], sep: str = ".") -> int | None:
    """The index of the part of the dotted ``paths`` (parts split at ``sep``) that names their
    server (see the module's notes), or None."""
    split = [p.split(sep) for p in paths]
    best = []
    for k in range(max((len(s) for s in split), default=0)):
        rests: dict[tuple, set] = {}
        for s in split:
            if len(s) > k:
                rests.setdefault(tuple(s[:k] + s[k + 1:]), set()).add(s[k])
        values = set().union(*rests.values()) if rests else set()
        # each value with (nearly) every rest: a grid of servers x counters, not a metric's leaves
        # (cpu.user and cpu.system vary too, but load has neither)
        cells = sum(len(v) for v in rests.values())
        if len(values) > 1 and cells >= 0.8 * len(values) * len(rests):
            best.append((k, values))
    if not best:
        return None
    hostlike = [k for k, values in best if all(_HOSTLIKE.search(v) for v in values)]
    return hostlike[0] if hostlike else best[0][0]


def _series(path: Path) -> tuple[list[str], list[np.ndarray], list[np.ndarray], list[str]]:
    """Each series' path, times (unix seconds) and values; notes."""
    notes: list[str] = []
    with open_data(path) as f:
        head = f.read(1)
    if head == "[":
        try:
            with open_data(path) as f:
                doc = json.load(f)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
        names, times, values, bad = [], [], [], 0
        for s in doc if isinstance(doc, list) else []:
            if not isinstance(s, dict) or not isinstance(s.get("target"), str) or not isinstance(s.get("datapoints"),
                                                                                                   list):
                bad += 1
                continue
            t, v = [], []
            for dp in s["datapoints"]:
                try:
                    value, stamp = dp
                    t.append(float(stamp))
                    v.append(np.nan if value is None else float(value))
                except (TypeError, ValueError):
                    bad += 1
            names.append(s["target"])
            times.append(np.asarray(t))
            values.append(np.asarray(v))
        if bad:
            notes.append(f"{path.name}: {count_that(bad, 'series or points')} no "
                         "Graphite series (target, datapoints) skipped")
        return names, times, values, notes
    by_name: dict[str, tuple[list, list]] = {}
    odd = 0
    with csv_rows(path, encoding="utf-8-sig") as rd:
        for row in rd:
            if len(row) != 3 or not _WHEN.fullmatch(row[1].strip()):  # a row cut, a time that is none
                odd += bool(row)
                continue
            t, v = by_name.setdefault(row[0], ([], []))
            t.append(row[1])
            try:
                v.append(float(row[2]) if row[2].strip() else np.nan)
            except ValueError:
                v.append(np.nan)
                odd += 1
    if odd:
        notes.append(f"{path.name}: {count_that(odd, 'rows')} no PATH,TIME,VALUE "
                     "skipped or left empty")
    names = list(by_name)
    times = [column_to_seconds(by_name[n][0], path, blanks=True) for n in names]
    notes.append(f"{path.name}: Graphite's CSV times (the server's local ones) read as UTC")
    return names, times, [np.asarray(by_name[n][1]) for n in names], notes


def read_graphite(path, names_) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names)."""
    path = Path(path)
    names, times, values, notes = _series(path)
    if not names:
        raise InputError(path, "no Graphite series (a target and its datapoints)")
    k = server_part(names)
    from .readers import server_of_file  # noqa: PLC0415 (readers imports this module)

    pieces = []
    for name, t, v in zip(names, times, values):
        parts = name.split(".")
        if k is not None and len(parts) > k:
            server, counter = parts[k], ".".join(parts[:k] + parts[k + 1:])
        else:
            server, counter = server_of_file(path), name
        ok = np.isfinite(t) & np.isfinite(v)
        if ok.any():
            pieces.append(Piece(np.full(int(ok.sum()), names_.server(server), np.int32), t[ok],
                                np.array([names_.counter(counter)], np.int32), v[ok][:, None]))
    if k is None:
        notes.append(f"{path.name}: no part of its paths names a server (none varies while the rest repeats): each "
                     "path a counter of one server, the file's")
    else:
        hosts = sorted({n.split(".")[k] for n in names if len(n.split(".")) > k})
        notes.append(f"{path.name}: Graphite series; the server is part {k + 1} of their paths ({first_of(hosts, 4)}), "
                     "the counter the rest")
    return RawCounters(names_.server_list, names_.counter_list, pieces, str(path), notes, k is None,
                       local=any(n.endswith("read as UTC") for n in notes))
