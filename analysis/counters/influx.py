"""InfluxDB's CSV: what a Flux query returns (the UI's download, ``influx query --raw``, the HTTP
API's ``text/csv``), with its annotation rows (``#group``, ``#datatype``, ``#default``) or without.
Telegraf's metrics stored in InfluxDB come out so.

One value a row: ``_time``, ``_value``, ``_field``, ``_measurement`` and the series' tags
(``host``, ``cpu``, ``interface``...), tables one after another, each under its own header (their
tags may differ), results apart by a blank line. A pivoted query (``pivot(columnKey:
["_field"])``) has a column per field instead of ``_field`` and ``_value``: each numeric one is a
counter.

The server is the first tag naming one (``host``, ``instance``, ``pod``... as a counter CSV's
columns), else the file's name; a tag naming a server's kind (``service``, ``job``, ``role``...)
makes the kinds of peers; a counter is ``MEASUREMENT.FIELD`` with the other tags that tell its
series apart (``cpu.usage_user{cpu=cpu-total}``, ``net.bytes_recv{interface=eth0}``); a tag with
one value over a MEASUREMENT.FIELD's series is left off. Rows whose value is no number (a string or boolean field)
are left out, with a note.
"""

from __future__ import annotations

from array import array
from math import inf
from operator import itemgetter
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import csv_rows
from perftriage.analysis.timeparse import column_to_seconds
from perftriage.analysis.units import count_of, count_that

from .table import Piece, RawCounters

ANNOTATIONS = ("#group,", "#datatype,", "#default,")
#: the columns of a Flux table that are no tag
FIXED = {"", "result", "table", "_start", "_stop", "_time", "_value", "_field", "_measurement"}
NUMERIC_TYPES = {"double", "long", "unsignedLong"}  # a column's #datatype where it holds a field's values


def sniff(path: Path, head: bytes) -> bool:
    """A Flux result as CSV: its annotation rows, or a header with ``_time`` and ``_value`` (or
    ``_time`` and ``table``, pivoted)."""
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if first.startswith(ANNOTATIONS):
        return True
    cells = {c.strip() for c in first.split(",")}
    return "_time" in cells and ("_value" in cells or {"result", "table"} <= cells)


def _is_header(row: list[str]) -> bool:
    return "_time" in row and ("_value" in row or "table" in row)


def read_influx(path, names_, server_names: tuple[str, ...], kind_names: tuple[str, ...], norm) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names); ``server_names`` and
    ``kind_names``: the normalised tag names that name a server and a server's kind; ``norm``:
    how a name is normalised."""
    path = Path(path)
    times, values, sid = [], array("d"), array("q")  # each value's time (as written), number and series
    series: dict[tuple, int] = {}  # (MEASUREMENT.FIELD, its tags, server, kind) -> its index
    short = strings = 0
    header = None
    kind_tag = ""
    datatypes: list[str] = []  # the #datatype annotation of the table that follows, where there is one
    with csv_rows(path, encoding="utf-8-sig") as rd:
        for row in rd:
            if not row or not "".join(row).strip():
                header = None  # a result ends: the next has its own annotations and header
                datatypes = []
                continue
            if row[0].startswith("#"):
                if row[0].strip() == "#datatype":
                    datatypes = row
                continue
            if header is None or _is_header(row):
                if not _is_header(row):
                    raise InputError(path, f"a row before any header with _time and _value: {','.join(row)[:60]!r}")
                header = row
                col = {name: i for i, name in enumerate(header)}
                t_i, v_i = col["_time"], col.get("_value")
                f_i, m_i = col.get("_field"), col.get("_measurement")
                tags = [(name, i) for name, i in col.items() if name not in FIXED]
                s_i = next((i for name, i in tags if norm(name) in server_names), None)
                k_i = next((i for name, i in tags if norm(name) in kind_names and i != s_i), None)
                if k_i is not None:
                    kind_tag = header[k_i]
                tags = [(name, i) for name, i in tags if i not in (s_i, k_i)]
                fields = None  # pivoted: the numeric columns, by their datatype, else from the table's first row
                if v_i is None and len(datatypes) == len(header):
                    fields = [(name, i) for name, i in tags if datatypes[i].strip() in NUMERIC_TYPES]
                    tags = [(name, i) for name, i in tags if (name, i) not in fields]
                sid_of = {}  # the cells that tell a row's series (tags, measurement, server, kind, field) -> its
                key_of = None  # values' columns and series, under this header
                continue
            if len(row) != len(header):
                short += 1
                continue
            if v_i is None and fields is None:  # pivoted: a column per field; the others are tags
                fields = [(name, i) for name, i in tags if _number(row[i]) is not None]
                tags = [(name, i) for name, i in tags if (name, i) not in fields]
            if key_of is None:
                cells = [i for _, i in tags] + [i for i in (m_i, s_i, k_i, f_i) if i is not None]
                key_of = itemgetter(*cells) if cells else (lambda _row: ())
            ident = key_of(row)
            got = sid_of.get(ident)
            if got is None:  # a series not met under this header yet: its columns of values and their series
                own = tuple((name, row[i]) for name, i in tags if row[i] != "")
                meas = row[m_i] if m_i is not None else ""
                server, kind = row[s_i] if s_i is not None else "", row[k_i] if k_i is not None else ""
                got = sid_of[ident] = [
                    (i, series.setdefault((f"{meas}.{field}" if meas else field, own, server, kind), len(series)))
                    for field, i in ([(row[f_i] if f_i is not None else "value", v_i)] if v_i is not None else fields)]
            for i, s in got:
                try:
                    v = float(row[i])
                except ValueError:
                    v = inf
                if v - v != 0:  # no number, or none finite (a string or boolean field, inf, NaN)
                    strings += row[i] != ""
                    continue
                times.append(row[t_i])
                values.append(v)
                sid.append(s)
    if not times:
        raise InputError(path, "no numeric value under an InfluxDB header (_time, _value, _field)")
    notes = []
    if short:
        notes.append(f"{path.name}: {short:,} row{'s' if short != 1 else ''} with another number of fields than "
                     "their table's header skipped")
    if strings:
        notes.append(f"{path.name}: {count_that(strings, 'values')} no number "
                     "(string or boolean fields) left out")
    time = column_to_seconds(times, path)
    return series_counters(path, names_, list(series), np.frombuffer(sid, np.int64), time,
                           np.frombuffer(values, np.float64), kind_tag, notes, "InfluxDB's CSV (a Flux result)")


def series_counters(path: Path, names_, series: list[tuple], sid: np.ndarray, time: np.ndarray, value: np.ndarray,
                    kind_tag: str, notes: list[str], form: str,
                    naming: str = "MEASUREMENT.FIELD{the tags that tell its series apart}",
                    closing: set[int] = frozenset()) -> RawCounters:
    """InfluxDB's values as counters, whichever form they came in (OTLP metrics' too): ``series``
    each series' (MEASUREMENT.FIELD, its tags as (name, value) pairs, its server tag, its kind tag;
    "" none), ``sid``, ``time`` (unix seconds) and ``value`` each value's series, time and number.
    A tag with one value over a name's series is left off that name's counters (a tag some of its
    series lack is kept: it tells them apart); a series with no server tag is the file's.
    ``naming``: how the note says the counters are named; ``closing``: the series whose name opened
    a bracket that closes after its tags (``rate(NAME{...})``)."""
    tag_values: dict[tuple[str, str], set] = {}  # (name, tag) -> its values over the name's series
    with_tag: dict[tuple[str, str], int] = {}  # (name, tag) -> the name's series that have it
    of_name: dict[str, int] = {}  # name -> its series
    for base, own, _, _ in series:
        of_name[base] = of_name.get(base, 0) + 1
        for name, v in own:
            tag_values.setdefault((base, name), set()).add(v)
            with_tag[(base, name)] = with_tag.get((base, name), 0) + 1
    varying = {key for key, vals in tag_values.items() if len(vals) > 1 or with_tag[key] < of_name[key[0]]}
    label = np.empty(len(series), np.int32)
    for n, (base, own, _, _) in enumerate(series):
        parts = sorted(f"{name}={v}" for name, v in own if (base, name) in varying)
        label[n] = names_.counter(base + ("{" + ",".join(parts) + "}" if parts else "") + (")" if n in closing else ""))
    from .readers import server_of_file  # noqa: PLC0415 (readers imports this module)

    from_name = not any(s[2] for s in series)
    # a series whose table or line has no server tag, or an empty one: the file's
    srv = np.array([names_.server(s[2] or server_of_file(path)) for s in series], np.int32)
    counter, server = label[sid], srv[sid]
    if any(s[3] for s in series):
        uniq, inv = np.unique(np.asarray([s[3] for s in series], dtype=object), return_inverse=True)
        names_.set_kinds(server, uniq, inv.ravel()[sid], kind_tag)
    o = np.argsort(counter, kind="stable")
    bounds = np.flatnonzero(np.r_[True, counter[o][1:] != counter[o][:-1], True])
    pieces = [Piece(server[o[a:b]], time[o[a:b]], counter[o[a:a + 1]], value[o[a:b]][:, None])
              for a, b in zip(bounds[:-1], bounds[1:])]
    notes.append(f"{path.name}: {form}: {count_of(len(set(label.tolist())), 'counters')} named {naming}")
    return RawCounters(names_.server_list, names_.counter_list, pieces, str(path), notes, from_name)


def _number(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if np.isfinite(v) else None
