"""InfluxDB's line protocol: what Telegraf's file output writes, what ``influx_inspect export``
(1.x) and ``influxd inspect export-lp`` (2.x) dump a database as, what any agent writing to
InfluxDB sends.

One point a line, ``MEASUREMENT[,TAG=VALUE...] FIELD=VALUE[,FIELD=VALUE...] [TIMESTAMP]``: a
backslash escapes a comma, a space or an equals sign in a name; a string field's value is in
double quotes; an integer ends in ``i`` (``u`` unsigned); ``t``/``true``... a boolean. The
timestamp is an integer in nanoseconds unless the writer chose another precision: its unit is
the file's largest timestamp's magnitude (s, ms, µs, ns). Lines starting with ``#`` are
comments; an export's DDL section (``CREATE DATABASE ...``) is skipped.

Each numeric field is a counter named as InfluxDB's CSV's are (influx.series_counters): the
server from the host / instance / pod tag, a tag naming a server's kind makes the kinds of peers,
``MEASUREMENT.FIELD{the tags that tell its series apart}``. String and boolean fields are left
out, a line with no timestamp too (its time was the server's when it was written), a line that
is no point is counted in a note.
"""

from __future__ import annotations

import re
from array import array
from math import inf
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import open_data
from perftriage.analysis.timeparse import UNIT_NS, epoch_unit
from perftriage.analysis.units import count_of, count_that

from .influx import series_counters

#: a line of line protocol: measurement and tags, fields, an optional timestamp
_NAME = r'(?:[^\s,=\"\\]|\\.)+'  # a name or a tag's value, a backslash escaping what follows it
_FIELD = _NAME + r'=(?:"(?:[^"\\]|\\.)*"|[^\s,=\"\\]+)'  # a string field's value is quoted
_POINT = re.compile(r'(?![#"])' + _NAME + f"(?:,{_NAME}={_NAME})* {_FIELD}(?:,{_FIELD})*" + r"(?: -?\d+)?")
_ESCAPED = re.compile(r"\\(.)")
_BOOLEAN = {"t", "T", "true", "True", "TRUE", "f", "F", "false", "False", "FALSE"}


def sniff(head: bytes) -> bool:
    """Most of the first lines that are no comment are points of line protocol."""
    lines = [ln for ln in head.decode("utf-8", "replace").lstrip("\ufeff").splitlines()[:40]
             if ln.strip() and not ln.startswith("#") and not ln.startswith("CREATE ")]
    lines = lines[:-1] if len(lines) > 1 else lines  # the head may cut the last line
    if not lines:
        return False
    return sum(bool(_POINT.fullmatch(ln.rstrip())) for ln in lines) >= max(1, 0.8 * len(lines))


def _split(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` where it is not escaped by a backslash nor inside double quotes."""
    out, start, quoted, i, n = [], 0, False, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == sep and not quoted:
            out.append(text[start:i])
            start = i + 1
        i += 1
    out.append(text[start:])
    return out


def _unescape(text: str) -> str:
    return _ESCAPED.sub(r"\1", text) if "\\" in text else text


def read_line_protocol(path, names_, server_names: tuple[str, ...], kind_names: tuple[str, ...], norm):
    """``names_``: the dataset's server and counter names (readers._Names); ``server_names`` and
    ``kind_names``: the normalised tag names that name a server and a server's kind; ``norm``:
    how a name is normalised."""
    path = Path(path)
    keys: dict[str, tuple] = {}  # MEASUREMENT,TAGS as written -> (measurement, own tags, server, kind)
    series: dict[tuple, int] = {}  # (MEASUREMENT.FIELD, own tags, server, kind) -> its index
    # each value's timestamp, number and series in flat arrays (8 bytes each, not a Python object)
    stamps, values, sid = array("q"), array("d"), array("q")
    bad = untimed = strings = 0
    first_bad = ""
    kind_tag = ""
    ddl = False
    with open_data(path, encoding="utf-8-sig") as f:
        for line in f:
            line = line.rstrip()
            if not line:
                continue
            if line.startswith("#"):  # influx_inspect export: "# DDL" (statements), then "# DML" (points)
                ddl = line.strip() == "# DDL" or (ddl and line.strip() != "# DML")
                continue
            if ddl:
                continue
            plain = "\\" not in line and '"' not in line
            parts = line.split(" ") if plain else _split(line, " ")
            if len(parts) not in (2, 3) or not parts[0] or not parts[1]:
                bad += 1
                first_bad = first_bad or line
                continue
            if len(parts) == 2:
                untimed += 1
                continue
            stamp = parts[2]
            stamp = int(stamp) if stamp.lstrip("-").isdigit() and len(stamp) <= 20 else None
            if stamp is None or not -(2**63) < stamp < 2**63:  # no int64 nanoseconds
                bad += 1
                first_bad = first_bad or line
                continue
            key = keys.get(parts[0])
            if key is None:  # a series not seen yet: its measurement and tags
                pieces = parts[0].split(",") if plain else _split(parts[0], ",")
                tags = []
                for kv in pieces[1:]:
                    k, eq, v = kv.partition("=") if plain else _split_eq(kv)
                    if not eq or not k or not v:
                        break
                    tags.append((_unescape(k), _unescape(v)))
                else:
                    server = next((v for k, v in tags if norm(k) in server_names), "")
                    kind_of = next((k for k, v in tags if norm(k) in kind_names and v != server), "")
                    kind = dict(tags).get(kind_of, "")
                    kind_tag = kind_tag or kind_of
                    own = tuple((k, v) for k, v in tags
                                if not (norm(k) in server_names and v == server) and k != kind_of)
                    key = (_unescape(pieces[0]), own, server, kind, {})
            if key is None or not key[0]:
                bad += 1
                first_bad = first_bad or line
                continue
            keys[parts[0]] = key
            meas, own, server, kind, sid_of = key  # sid_of: each field's series, by its name as written
            for kv in parts[1].split(",") if plain else _split(parts[1], ","):
                k, eq, v = kv.partition("=") if plain else _split_eq(kv)
                if not eq or not k or not v:
                    bad += 1
                    first_bad = first_bad or line
                    break
                try:
                    x = float(v[:-1] if v[-1] in "iu" else v)  # an integer: 12i, 12u
                except ValueError:
                    if v[0] == '"' or v in _BOOLEAN:
                        strings += 1
                        continue
                    x = inf
                if x - x != 0:  # inf, nan: no value line protocol writes
                    bad += 1
                    first_bad = first_bad or line
                    break
                i = sid_of.get(k)
                if i is None:
                    i = sid_of[k] = series.setdefault((f"{meas}.{_unescape(k)}", own, server, kind), len(series))
                stamps.append(stamp)
                values.append(x)
                sid.append(i)
    if not stamps:
        raise InputError(path, "no point of line protocol with a number and a timestamp (MEASUREMENT,TAGS "
                               "FIELD=VALUE TIMESTAMP)" + (f"; first line not read: {first_bad[:60]!r}" if bad else ""))
    notes = []
    if bad:
        notes.append(f"{path.name}: {count_that(bad, 'lines')} no point of line "
                     f"protocol skipped (the first: {first_bad[:60]!r})")
    if untimed:
        notes.append(f"{path.name}: {count_of(untimed, 'points')} without a timestamp left out (their time was "
                     "the database's when they were written)")
    if strings:
        notes.append(f"{path.name}: {count_that(strings, 'values')} no number "
                     "(string or boolean fields) left out")
    stamp = np.frombuffer(stamps, np.int64)
    unit = epoch_unit(float(np.abs(stamp).max()))
    time = stamp * (UNIT_NS[unit] / 1e9)
    return series_counters(path, names_, list(series), np.frombuffer(sid, np.int64), time,
                           np.frombuffer(values, np.float64), kind_tag, notes,
                           f"InfluxDB line protocol (timestamps in {unit})")


def _split_eq(text: str) -> tuple[str, str, str]:
    """``KEY=VALUE`` at its first unescaped, unquoted equals sign, as str.partition gives it."""
    parts = _split(text, "=")
    return (parts[0], "=", "=".join(parts[1:])) if len(parts) > 1 else (text, "", "")
