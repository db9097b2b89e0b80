"""Readers of performance counters across servers: CSV (long or wide) and Prometheus range-query
JSON. Each returns :class:`RawCounters`; :func:`load_counters` reads several files of one
dataset (say one per server) and aligns them.

CSV (header required; names matched case-insensitively, ``-``/``_``/spaces ignored):

- **long**: ``time, server, counter, value``: one row per sample of one counter;
- **wide**: ``time, server, COUNTER...``: one row per server and time, one column per counter.

The server column may be called server, instance, host, hostname, node, machine, silo, pod,
podname or container (or those with id or name: node_id, machine_id, instance_id...); the counter column counter, metric or name. Columns named as times besides
the one read (``Time`` and ``TimeStamp``) are no counters. A file without a server column is one
server's, named after the file (``web-01.csv``: web-01; one file per server, as exports per host
come). Times: unix seconds / ms / µs / ns (by magnitude), ISO 8601 or Go's time.Time text. Empty
cells are missing samples.

A server's file may have numbered rows instead of times (a first column idx, index, row, sample
or unnamed holding 0, 1, 2...; datasets published without their timestamps): the time between
two rows is the user's (``--interval 5m``), and times are then only times since the start.

A server's file may have no header at all (comma-separated numbers from the first line on, as
datasets like SMD publish ``machine-1-1.txt``): its columns are counters m1, m2, ... (numbered
from 1, as such datasets' labels number them), its rows numbered (``--interval``), unless the
first column holds unix times (increasing, mostly evenly spaced), which are then its times.

sysstat: ``sadf -d`` exports of each server's sar archive (sadf.py).

Prometheus: the JSON body of ``/api/v1/query_range`` (``resultType`` "matrix"), or a list of
them, or a JSON-lines file of them. The server is a label (``instance`` by default); the counter
is ``__name__`` with the other labels, e.g. ``node_cpu_seconds_total{cpu="0",mode="idle"}``.
"""

from __future__ import annotations

import csv
import json
import re
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

from perftriage.analysis import perfmon
from perftriage.analysis.columnar_csv import FROM_BYTES, polars_for, sorted_codes
from perftriage.analysis.columnar_csv import frame as _frame
from perftriage.analysis.errors import InputError, reading
from perftriage.analysis.inputs import (csv_rows, open_data, read_head, read_text, register_also_kind,
                                        register_file_kind, register_folder_kind)
from perftriage.analysis.labelsets import counter_names, label_set, servers_of_series
from perftriage.analysis.timeparse import column_to_seconds as to_seconds
from perftriage.analysis.units import count_of, count_that, first_of

from . import (azure_monitor, cloudwatch, collectd, datadog, dstat, gcp_monitoring, graphite, influx, line_protocol, nmon, otlp_metrics,
               sadf, vmstat)
from .sadf import read_sadf
from .cumulative import CUMULATIVE_ENDINGS, rate_cumulative
from .table import DATED_FROM, CounterSet, Piece, RawCounters, align

TIME_NAMES = ("time", "timestamp", "ts", "t", "datetime", "date")
SERVER_NAMES = ("server", "instance", "host", "hostname", "node", "machine", "silo", "pod", "podname", "container",
                "cmdbid", "hostip",  # cmdb_id: the pod or host of the AIOps challenges' metric exports
                "serverid", "servername", "instanceid", "hostid", "nodeid", "nodename", "machineid", "containerid",
                "containername", "msinstanceid", "vm", "vmid")  # msinstanceid, nodeid: Alibaba's 2021 tables
COUNTER_NAMES = ("counter", "metric", "name", "countername", "metricname", "kpiname", "kpi",
                 "series")  # series: Grafana's CSV of a panel, series as rows (Series, Time, Value)
#: a column naming each server's kind (the service a container runs, a scrape job, a role): servers of
#: one kind are peers, whatever their names say (Alibaba's tables name containers by a hash, their
#: service in msname)
KIND_NAMES = ("msname", "service", "servicename", "app", "application", "appname", "job", "role", "kind",
              "deployment", "tier", "pool", "servergroup", "hostgroup")
THREAD_NAMES = ("thread", "tid", "threadid", "lwp")
ID_NAMES = ("id", "traceid", "spanid", "parentid", "parentspanid", "requestid", "uuid", "guid")
INDEX_NAMES = ("idx", "index", "row", "rownumber", "sample", "")  # a first column numbering rows


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.strip().lower())


def _floats(col, path: Path, what: str) -> np.ndarray:
    try:
        return np.array(col, dtype=np.float64)
    except ValueError:
        pass
    try:
        return np.array([x if x.strip() else "nan" for x in col], dtype=np.float64)
    except ValueError:
        bad = next(x for x in col if not _is_number(x))
        raise InputError(path, f"{what} is not numeric (e.g. {bad[:30]!r})") from None


def _codes(col) -> tuple[np.ndarray, np.ndarray]:
    """A column of labels as its distinct values and each row's index into them."""
    return np.unique(np.asarray(col, dtype=object), return_inverse=True)


def _is_number(x: str) -> bool:
    try:
        float(x if x.strip() else "nan")
        return True
    except ValueError:
        return False


# -- CSV ---------------------------------------------------------------------------------------

def _raw_header(head: bytes) -> list[str] | None:
    """The cells of a file's first line as written; None when it holds no comma."""
    first = head.decode("utf-8", "replace").split("\n", 1)[0].strip("\r\ufeff")
    return next(csv.reader([first])) if "," in first else None


def _header(head: bytes) -> list[str] | None:
    raw = _raw_header(head)
    return None if raw is None else [_norm(c) for c in raw]


def sniff_csv(path: Path, head: bytes) -> bool:
    cols = _header(head)
    if not cols or any(c in THREAD_NAMES for c in cols):
        return False
    if _numbers_row(_raw_header(head)):
        return _headerless(head)
    if _id_row(_raw_header(head)):
        return _id_rows(head)
    if not any(c in TIME_NAMES for c in cols):
        return _numbered_rows(head, cols)
    if any(c in SERVER_NAMES for c in cols):
        return _some_counter(head, cols)
    return _one_server_file(head, cols)


def _numbered_rows(head: bytes, cols: list[str]) -> bool:
    """A server's counters by row number: a first column idx/index/row/sample (or unnamed) counting
    up by one, numbers in every other column, no server column."""
    if len(cols) < 2 or cols[0] not in INDEX_NAMES or any(c in SERVER_NAMES for c in cols):
        return False
    rows = _first_rows(head.decode("utf-8", "replace").splitlines())
    if len(rows) < 2 or not all(r[0].strip() and _is_number(r[0]) for r in rows):
        return False
    first = [float(r[0]) for r in rows]
    return all(b - a == 1 for a, b in zip(first, first[1:])) and _mostly_numbers(rows, len(cols), {0})


def _one_server_file(head: bytes, cols: list[str]) -> bool:
    """Whether a CSV with a time column and no server column is one server's counters: besides the
    time, numbers only in its first rows (the long form's counter names aside), and not thread
    metrics (columns named ``thread:tid`` or ``thread@host``, which the thread reader takes)."""
    lines = head.decode("utf-8", "replace").splitlines()
    if len(cols) < 2 or sum(1 for c in _raw_header(head) if (":" in c or "@" in c) and label_set(c) is None) >= 2:
        return False
    t_i = next(i for i, c in enumerate(cols) if c in TIME_NAMES)
    text_ok = {i for i, c in enumerate(cols) if c in COUNTER_NAMES} if "value" in cols else set()
    rows = _first_rows(lines)
    return bool(rows) and _mostly_numbers(rows, len(cols), {t_i} | text_ok)


def _numbers_row(cells: list[str]) -> bool:
    """Whether a first line's cells are two or more numbers (no header names)."""
    return len(cells) >= 2 and all(c.strip() and _is_number(c) for c in cells)


def _headerless(head: bytes) -> bool:
    """Counters without a header: numbers only in the first line, the same number of cells in the
    first lines, numbers in them but for a damaged cell or two."""
    lines = [ln for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()]
    rows = list(csv.reader(lines[:6]))[:-1] if len(head) >= 65536 else list(csv.reader(lines[:5]))
    return len(rows) >= 2 and len({len(r) for r in rows}) == 1 and _mostly_numbers(rows, len(rows[0]), set())


#: a server's id in a file's first column (m_1932, web-01, 10.0.0.7, i-0ab12): a letter or digit
#: first, no spaces, not a number
_ID = re.compile(r"[A-Za-z0-9][\w.:\-/]{0,79}")
#: published fleets whose files have no header, by their width and their ids: their columns' names
KNOWN_ID_ROWS = {
    # Alibaba's cluster-trace-v2018 machine_usage.csv (4,034 machines, 8 days, about every 10 s)
    (9, "m_"): ("Alibaba's cluster-trace-v2018 machine_usage", ("machine_id", "time_stamp"),
                ("cpu_util_percent", "mem_util_percent", "mem_gps", "mkpi", "net_in", "net_out", "disk_io_percent")),
}


def _id_row(cells: list[str]) -> bool:
    """A first line that is no header but a sample: a server's id, then a time and counters
    (numbers, or empty where a sample is missing)."""
    return (len(cells) >= 3 and _ID.fullmatch(cells[0].strip()) is not None and not _is_number(cells[0])
            and bool(cells[1].strip()) and _is_number(cells[1])
            and all(_is_number(c) for c in cells[2:]) and any(c.strip() for c in cells[2:]))


def _id_rows(head: bytes) -> bool:
    """Counters without a header, each row a server's id, a time and numbers (Alibaba's
    machine_usage): the same width in the first lines, each such a row."""
    lines = [ln for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()]
    rows = list(csv.reader(lines[:6]))[:-1] if len(head) >= 65536 else list(csv.reader(lines[:5]))
    return len(rows) >= 2 and len({len(r) for r in rows}) == 1 and all(_id_row(r) for r in rows)


def _first_rows(lines: list[str]) -> list[list[str]]:
    """The cells of a file's first data rows (up to four) in its head, less the last line read
    (the head may end within it), blank lines left out."""
    return [r for r in csv.reader(lines[1:6]) if r and any(x.strip() for x in r)][:-1]


def _mostly_numbers(rows: list[list[str]], width: int, skip: set[int]) -> bool:
    """Counters' cells in a file's first rows: numbers, but for a damaged cell or two (the reader
    says which column it could not read), and every column a number somewhere (a column of text,
    a log's messages, is no counter)."""
    cols = [i for i in range(width) if i not in skip]
    cells = [(i, r[i]) for r in rows for i in cols if i < len(r) and r[i].strip()]
    if not cols or not cells:
        return False
    numeric = {i for i, x in cells if _is_number(x)}
    good = sum(1 for i, x in cells if _is_number(x))
    return numeric == {i for i, _ in cells} and good >= 0.8 * len(cells)


def server_of_file(path: Path) -> str:
    """The server a file without a server column is about: its name less .gz, .csv, .txt."""
    name = Path(path).name
    for suffix in (".gz", ".csv", ".tsv", ".txt"):
        if name.lower().endswith(suffix):
            name = name[:-len(suffix)]
    return name or Path(path).name


def read_csv(path, interner: "_Names | None" = None, row_interval: float | None = None) -> RawCounters:
    """``row_interval``: seconds between two rows of a file whose rows are numbered, not timed."""
    path = Path(path)
    names_ = interner or _Names()
    with csv_rows(path, encoding="utf-8-sig") as rd:
        header = next(rd, None)
        if not header or not any(h.strip() for h in header):
            raise InputError(path, "file is empty")
        if _numbers_row(header) or _id_row(header):
            if not _id_row(header):
                nums = _headerless_numbers(path)
                if nums is not None:
                    return _read_headerless(path, None, names_, row_interval, nums)
            rows = [header] + [r for r in rd if r and any(x.strip() for x in r)]
            if _id_row(header):
                return _read_id_rows(path, rows, names_)
            return _read_headerless(path, rows, names_, row_interval)
        names = [_norm(h) for h in header]
        numbered = not any(n in TIME_NAMES for n in names) and bool(names) and names[0] in INDEX_NAMES
        if numbered and not row_interval:
            raise InputError(path, f"its rows are numbered ({header[0].strip() or 'first column'}), not timed: give "
                                   "the time between two rows, e.g. --interval 5m")
        fast = _read_wide_fast(path, header, names_, row_interval if numbered else None)
        if fast is None and not numbered:
            fast = _read_long_fast(path, header, names_)
        if fast is not None:
            return fast
        rows = [r for r in rd if r and any(x.strip() for x in r)]
    width = len(header)
    notes = []
    short = sum(1 for r in rows if len(r) < width)
    if short:
        rows = [r for r in rows if len(r) >= width]
        notes.append(f"{path.name}: {short:,} row{'s' if short != 1 else ''} with fewer fields than the header "
                     "skipped")
    if not rows:
        raise InputError(path, "no data rows under the header")
    t_i, s_i, c_i, v_i = _columns(names)
    if t_i is None and numbered:
        t_i = 0
    if t_i is None:
        raise InputError(path, f"needs a time column (header: {', '.join(header[:8])})")
    cols = list(zip(*rows))
    del rows
    time = _floats(cols[t_i], path, f"the row numbers ({header[0]!r})") * row_interval if numbered \
        else _seconds(cols[t_i], path, notes, blanks=True)
    long = c_i is not None and v_i is not None
    split = None  # series named by label sets (Grafana's CSV): each series' server from its labels
    if s_i is None:
        if long:
            c_uniq, c_inv = _codes(cols[c_i])
            split = _series_split([str(u) for u in c_uniq])
        else:
            split = _series_split([header[i].strip() for i in range(width) if i not in _not_counters(names, t_i, s_i)])
    if split:
        notes.append(f"{path.name}: series named by label sets (Grafana's CSV of a panel): each one's server from its "
                     f"label {split[2]!r}, {count_of(len(set(split[0])), 'servers')}")
        if re.fullmatch(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?", str(cols[t_i][0]).strip()):
            notes.append(f"{path.name}: its times carry no zone (Grafana writes them in the browser's): read as UTC")
    if s_i is None and not split:  # one server's file: named after it
        server = np.full(len(time), names_.server(server_of_file(path)), np.int32)
    elif s_i is not None:
        server = names_.servers_of(cols[s_i])
    k_i = _kind_column(names, t_i, s_i, c_i, v_i)
    if k_i is not None:
        names_.set_kinds(server, *_codes(cols[k_i]), header[k_i].strip())
    if long and split:
        value = _floats(cols[v_i], path, "the value column")
        server = np.array([names_.server(x) for x in split[0]], np.int32)[c_inv]
        pieces = _by_counter(server, time, value, np.array(split[1], dtype=object), c_inv, names_)
    elif long:
        value = _floats(cols[v_i], path, "the value column")
        pieces = _by_counter(server, time, value, *_codes(cols[c_i]), names_)
    elif split:  # wide, a column per series: a piece per column, its server's
        pieces = []
        for i, srv, name in zip([i for i in range(width) if i not in _not_counters(names, t_i, s_i)], *split[:2]):
            v = _counter_column(cols[i], path, header[i], notes)
            if v is not None:
                pieces.append(Piece(np.full(len(time), names_.server(srv), np.int32), time,
                                    np.array([names_.counter(name)], np.int32), v[:, None]))
        if not pieces:
            raise InputError(path, "no numeric counter column besides time")
    else:  # wide
        used = _not_counters(names, t_i, s_i)
        labels, dup = _column_labels(header)
        if dup:
            notes.append(f"{path.name}: {dup}")
        vals, cidx = [], []
        for i in range(width):
            if i in used:
                continue
            v = _counter_column(cols[i], path, header[i], notes)
            if v is not None:
                vals.append(v)
                cidx.append(names_.counter(labels[i]))
        if not vals:
            raise InputError(path, "no numeric counter column besides time and server (nor counter and value columns)")
        pieces = [Piece(server, time, np.array(cidx, np.int32), np.column_stack(vals))]
    return RawCounters(names_.server_list, names_.counter_list, pieces, str(path), notes, s_i is None and not split,
                       numbered, local=any(n.endswith("read as UTC") for n in notes))


def _series_split(names: list[str]) -> tuple[list[str], list[str], str] | None:
    """Series named by label sets with a label naming a server, two or more (labelsets.py): each
    one's server and counter, and the label; None otherwise."""
    return servers_of_series(names, SERVER_NAMES, _norm)


def _columns(names: list[str]) -> tuple[int | None, int | None, int | None, int | None]:
    """The time, server, counter and value columns of a CSV header (normalised names), None for
    those it lacks."""
    t_i = next((i for i, n in enumerate(names) if n in TIME_NAMES), None)
    s_i = next((i for i, n in enumerate(names) if n in SERVER_NAMES), None)
    c_i = next((i for i, n in enumerate(names) if n in COUNTER_NAMES and i not in (t_i, s_i)), None)
    v_i = next((i for i, n in enumerate(names) if n == "value"), None)
    return t_i, s_i, c_i, v_i


def _kind_column(names: list[str], t_i: int | None, s_i: int | None, c_i: int | None = None,
                 v_i: int | None = None) -> int | None:
    """The column naming each server's kind (KIND_NAMES; the first), None without one or without
    a server column (a file of one server's: a column naming several services would be the servers)."""
    if s_i is None:
        return None
    taken = {t_i, s_i, c_i, v_i} | _other_times(names, t_i)
    return next((i for i, n in enumerate(names) if n in KIND_NAMES and i not in taken), None)


def _not_counters(names: list[str], t_i: int | None, s_i: int | None) -> set[int]:
    """The columns of a wide CSV that hold no counter: the time and the server, other times,
    other columns naming a server (Alibaba's nodeid beside msinstanceid) and the kind column."""
    return ({t_i, s_i, _kind_column(names, t_i, s_i)} | _other_times(names, t_i)
            | {i for i, n in enumerate(names) if n in SERVER_NAMES}) - {None}


def _seconds(col, path: Path, notes: list[str], blanks: bool = False) -> np.ndarray:
    """A time column as seconds (timeparse's units by magnitude, ISO 8601); times that are no dates,
    counted in thousands (0 to 43,200,000 by 30,000: Alibaba's 2021 tables, milliseconds from the
    start of the trace set), as milliseconds, not seconds 8 hours apart, with a note."""
    time = to_seconds(col, path, blanks=blanks)
    v = time[np.isfinite(time)]
    if not len(v) or v.max() >= DATED_FROM or v.min() < 0 or np.any(v % 1000):
        return time
    steps = np.diff(np.unique(v))
    if not len(steps) or np.median(steps) < 1000:
        return time
    notes.append(f"{path.name}: times from {v.min():,.0f} to {v.max():,.0f} by {np.median(steps):,.0f}, no dates: "
                 "read as milliseconds since the start")
    return time / 1000


#: a column named as a time, with its unit or epoch (TimeUnixNano, timestamp_ms, epoch): no counter
_TIME_LIKE = re.compile(r"(unix)?(time|timestamp|ts|date|datetime|epoch)(unix)?"
                        r"(nanos?|ns|us|micros?|ms|millis?|s|secs?|seconds)?")


def _other_times(names: list[str], t_i: int | None) -> set[int]:
    """The columns named as times besides the one read as the time (``Time`` and ``TimeStamp``:
    the same instant twice, or a damaged copy of it; a log's ``TimeUnixNano``): no counter."""
    return {i for i, n in enumerate(names) if (n in TIME_NAMES or _TIME_LIKE.fullmatch(n)) and i != t_i}


def _some_counter(head: bytes, cols: list[str]) -> bool:
    """Whether a CSV with a time and a server column holds a counter: a column besides those (and
    other times, ids, and the long form's counter names) whose cells in the first rows are numbers.
    A log (time, node, pod, trace id, message) holds none."""
    t_i = next(i for i, c in enumerate(cols) if c in TIME_NAMES)
    s_i = next(i for i, c in enumerate(cols) if c in SERVER_NAMES)
    skip = _not_counters(cols, t_i, s_i) | {i for i, c in enumerate(cols) if c in COUNTER_NAMES
                                           or c in ID_NAMES}  # ids (a trace's, a span's) are no counts
    rows = _first_rows(head.decode("utf-8", "replace").splitlines())
    if not rows:
        return True  # too few rows to tell: the reader says what it finds
    for i in range(len(cols)):
        cells = [r[i] for r in rows if i < len(r) and r[i].strip()]
        if i not in skip and cells and all(_is_number(x) for x in cells):
            return True
    return False


def _counter_column(col, path: Path, label: str, notes: list[str]) -> np.ndarray | None:
    """A counter's column as floats. A damaged cell or a few (at most 1% of the column) are missing
    samples, with a note; more: not a counter (None, with a note)."""
    try:
        return _floats(col, path, f"column {label!r}")
    except InputError:
        ok = np.array([_is_number(x) for x in col])
        bad = int((~ok).sum())
        if bad <= max(1, 0.01 * len(ok)) and ok.any():
            first = next(x for x, good in zip(col, ok) if not good)
            notes.append(f"{path.name}: column {label!r}: {bad} cell{'s' if bad != 1 else ''} not a number "
                         f"(e.g. {first[:20]!r}) read as missing")
            return _floats([x if good else "" for x, good in zip(col, ok)], path, label)
        notes.append(f"{path.name}: column {label!r} is not numeric: ignored")
        return None


def _unix_times(v: np.ndarray) -> bool:
    """Whether a column of numbers is unix times: increasing, from 2000 to 2100 in s, ms, µs or ns,
    nine steps in ten within 10% of the usual step (a counter that only grows is rarely so even)."""
    if len(v) < 3 or not np.isfinite(v).all() or not (np.diff(v) > 0).all():
        return False
    if not any(DATED_FROM * f <= v[0] and v[-1] <= 4.2e9 * f for f in (1.0, 1e3, 1e6, 1e9)):
        return False
    d = np.diff(v)
    step = np.median(d)
    return float(np.mean(np.abs(d - step) <= 0.1 * step)) >= 0.9


def _usual_width(path: Path, rows: list[list[str]]) -> tuple[list[list[str]], int, list[str]]:
    """The rows of a file without a header that have its usual number of fields (a damaged first
    line is no rule), that number, and a note on the rows skipped."""
    width = Counter(len(r) for r in rows).most_common(1)[0][0]
    short = sum(1 for r in rows if len(r) != width)
    if not short:
        return rows, width, []
    return ([r for r in rows if len(r) == width], width,
            [f"{path.name}: {count_of(short, 'rows')} with another number of fields than most skipped"])


def _headerless_numbers(path: Path) -> np.ndarray | None:
    """A file without a header that is plain numbers, every row as wide (SMD's and ASD's form), as
    one array through numpy's C parser: 0.09 s for a machine's 28,479 rows x 38 against 0.8 s
    through the csv module; None for any other (the careful path says what is wrong)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an empty body: the careful path
            with open_data(path) as f:
                nums = np.loadtxt(f, delimiter=",", ndmin=2, comments=None, quotechar='"')
    except (ValueError, UserWarning, InputError, OSError, EOFError):
        return None
    return nums if nums.size else None


def _read_headerless(path: Path, rows: list[list[str]] | None, names_: "_Names",
                     row_interval: float | None, nums: np.ndarray | None = None) -> RawCounters:
    """One server's counters without a header (see the module's doc): m1, m2, ... by column;
    from its rows, or ``nums`` where it is plain numbers (_headerless_numbers)."""
    if nums is None:
        rows, _, notes = _usual_width(path, rows)
        cols = list(zip(*rows))
        del rows
        first = _floats(cols[0], path, "the first column") if all(_is_number(x) for x in cols[0]) else None
    else:
        notes, cols = [], list(nums.T)
        first = cols[0]
    timed = first is not None and _unix_times(first)
    if timed:
        time = to_seconds(first, path)
        cols = cols[1:]
    elif not row_interval:
        raise InputError(path, "has no header and no time column: its rows are taken as numbered; give the time "
                               "between two rows, e.g. --interval 5m")
    else:
        time = np.arange(len(cols[0]), dtype=np.float64) * row_interval
    vals, cidx = [], []
    for j, col in enumerate(cols):
        v = col if nums is not None else _counter_column(col, path, f"m{j + 1}", notes)
        if v is not None:
            vals.append(v)
            cidx.append(names_.counter(f"m{j + 1}"))
    if not vals:
        raise InputError(path, "no numeric counter column")
    server = np.full(len(time), names_.server(server_of_file(path)), np.int32)
    how = f"the first column read as unix times, the others as counters m1..m{len(cols)}" if timed else \
        f"columns read as counters m1..m{len(cols)}"
    values = np.column_stack(vals) if nums is None else nums[:, 1:] if timed else nums  # (not copied again)
    return RawCounters(names_.server_list, names_.counter_list,
                       [Piece(server, time, np.array(cidx, np.int32), values)], str(path), notes, True, not timed, how)


def _read_id_rows(path: Path, rows: list[list[str]], names_: "_Names") -> RawCounters:
    """Counters without a header, a row per sample: the server's id, the time, the counters (m1,
    m2... or a published fleet's names, KNOWN_ID_ROWS); an empty cell is a missing sample."""
    rows, width, notes = _usual_width(path, rows)
    ids = {r[0][:2] for r in rows[:50]}
    known = KNOWN_ID_ROWS.get((width, ids.pop())) if len(ids) == 1 else None
    names = known[2] if known else tuple(f"m{j + 1}" for j in range(width - 2))
    cols = list(zip(*rows))
    del rows
    server = names_.servers_of(cols[0])
    time = _seconds(cols[1], path, notes)
    vals, cidx = [], []
    for j, col in enumerate(cols[2:]):
        if not any(x.strip() for x in col):  # never sampled (Alibaba's mem_gps and mkpi, at times)
            continue
        v = _counter_column(col, path, names[j], notes)
        if v is not None:
            vals.append(v)
            cidx.append(names_.counter(names[j]))
    if not vals:
        raise InputError(path, "no numeric counter column after the server's id and the time")
    how = (f"read as {known[0]} ({', '.join(known[1] + known[2])})" if known else
           f"the first column read as the server, the second as the time, the others as counters m1..m{width - 2}")
    notes.append(f"{path.name}: no header: {how}")
    return RawCounters(names_.server_list, names_.counter_list,
                       [Piece(server, time, np.array(cidx, np.int32), np.column_stack(vals))], str(path), notes)


def _read_wide_fast(path: Path, header: list[str], names_: "_Names",
                    row_interval: float | None = None) -> RawCounters | None:
    """A wide CSV of plain numbers through numpy's C parser (about 6x Python's csv module); None
    when the file needs the careful path (long form, empty cells, ISO times, short rows...).
    ``row_interval``: its first column numbers the rows, this many seconds apart."""
    names = [_norm(h) for h in header]
    t_i, s_i, _, v_i = _columns(names)
    if row_interval:
        t_i = 0
    if t_i is None or v_i is not None:
        return None
    skip = _not_counters(names, t_i, s_i)
    cols = [i for i in range(len(header)) if i not in skip]
    if not cols or (s_i is None and _series_split([header[i].strip() for i in cols])):
        return None  # no counter, or series named by label sets: the careful path
    k_i = _kind_column(names, t_i, s_i)
    got = _read_polars(path, header, t_i, s_i, cols, k_i)
    if got is not None:
        nums, srv_names, srv_codes, kinds = got
        server = np.array([names_.server(n.strip()) for n in srv_names], np.int32)[srv_codes] if len(srv_codes) \
            else np.zeros(0, np.int32)
    else:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # an empty file body: careful path
                nums = np.loadtxt(path, delimiter=",", skiprows=1, usecols=[t_i] + cols, ndmin=2,
                                  encoding="utf-8-sig", quotechar='"')
                srv, kind = (None if i is None else
                             np.loadtxt(path, delimiter=",", skiprows=1, usecols=[i], dtype=str, ndmin=1,
                                        encoding="utf-8-sig", quotechar='"') for i in (s_i, k_i))
        except (ValueError, UserWarning):
            return None
        server = names_.servers_of(np.char.strip(srv)) if len(nums) and srv is not None else None
        kinds = None if kind is None else _codes(kind)
    if len(nums) == 0:
        return None
    if s_i is None:  # one server's file: named after it
        server = np.full(len(nums), names_.server(server_of_file(path)), np.int32)
    if kinds is not None:
        names_.set_kinds(server, *kinds, header[k_i].strip())
    notes = []
    time = nums[:, 0] * row_interval if row_interval else _seconds(nums[:, 0], path, notes)
    labels, dup = _column_labels(header)
    cidx = np.array([names_.counter(labels[i]) for i in cols], np.int32)
    return RawCounters(names_.server_list, names_.counter_list, [Piece(server, time, cidx, nums[:, 1:])], str(path),
                       notes + ([f"{path.name}: {dup}"] if dup else []), s_i is None, bool(row_interval))


POLARS_FROM_BYTES = FROM_BYTES  # files from this size are read by polars (its import costs 0.2 s)


def _polars(path: Path):
    """The polars module for a file of POLARS_FROM_BYTES or more; None for a smaller file or
    without polars."""
    return polars_for(path, POLARS_FROM_BYTES)


def _read_polars(path: Path, header: list[str], t_i: int, s_i: int, cols: list[int], k_i: int | None = None):
    """(numbers (rows, 1 + counters) with the time first, server names, per-row server codes,
    the kind column's (distinct values, per-row codes) or None without ``k_i``) of a plain numeric
    counter CSV, by polars' multi-threaded columnar reader: measured on a 121 MB
    long CSV (360,000 rows x 42 columns), 0.57 s against 1.2 s for pyarrow's reader and 3.3 s for
    numpy's loadtxt (two columns passes). None when polars is missing, the file is small, or any
    column is not plain numbers (the careful paths decide then)."""
    pl = _polars(path)
    if pl is None:
        return None
    try:
        df = _frame(pl, path, header, {t_i, *cols})
        num_cols = [df.columns[i] for i in [t_i] + cols]
        if any(not df.schema[c].is_numeric() for c in num_cols):
            return None
        nums = df.select([pl.col(c).cast(pl.Float64) for c in num_cols]).to_numpy()
        kinds = None if k_i is None else sorted_codes(df.get_column(df.columns[k_i]).cast(pl.Utf8).fill_null(""))
        if s_i is None:  # one server's file: the caller names it
            return nums, [], np.zeros(0, np.int64), kinds
        servers = df.get_column(df.columns[s_i]).cast(pl.Utf8)
        if servers.null_count():  # a row without its server: the careful path says what it makes of it
            return None
        names, codes = sorted_codes(servers)
    except Exception:  # noqa: BLE001 (anything polars refuses goes to the careful path, which says what is wrong)
        return None
    return nums, names, codes, kinds


def _read_long_fast(path: Path, header: list[str], names_: "_Names") -> RawCounters | None:
    """A long CSV (time, server, counter, value) through polars' columnar reader, from
    POLARS_FROM_BYTES on: the same pieces as the csv module's path (one per counter, rows in the
    file's order), which parses about 24 MB/s. None when polars is missing, the file is small, the
    times are not numbers (ISO: the careful path) or any cell does not fit (the careful path says
    what is wrong)."""
    t_i, s_i, c_i, v_i = _columns([_norm(h) for h in header])
    if t_i is None or c_i is None or v_i is None:
        return None
    pl = _polars(path)
    if pl is None:
        return None
    try:
        df = _frame(pl, path, header, {t_i, v_i})
        if not len(df):
            return None
        names_in = df.columns
        labels = [df.get_column(names_in[c_i])] + ([df.get_column(names_in[s_i])] if s_i is not None else [])
        if any(col.null_count() for col in labels):  # an empty name: the careful path decides
            return None
        notes = []
        time = _seconds(df.get_column(names_in[t_i]).to_numpy(), path, notes)
        value = df.get_column(names_in[v_i]).to_numpy().astype(np.float64, copy=False)
        cnames, inv = sorted_codes(labels[0])
        if s_i is None and _series_split([str(c) for c in cnames]):
            return None  # series named by label sets: the careful path
        if s_i is None:  # one server's file: named after it
            server = np.full(len(time), names_.server(server_of_file(path)), np.int32)
        else:
            snames, scode = sorted_codes(labels[1])
            server = np.array([names_.server(n.strip()) for n in snames], np.int32)[scode]
        k_i = _kind_column([_norm(h) for h in header], t_i, s_i, c_i, v_i)
        if k_i is not None:
            names_.set_kinds(server, *sorted_codes(df.get_column(names_in[k_i]).fill_null("")), header[k_i].strip())
    except InputError:
        raise
    except Exception:  # noqa: BLE001 (anything polars refuses goes to the careful path, which says what is wrong)
        return None
    return RawCounters(names_.server_list, names_.counter_list, _by_counter(server, time, value, cnames, inv, names_),
                       str(path), notes, s_i is None, False)


def _by_counter(server: np.ndarray, time: np.ndarray, value: np.ndarray, uniq, inv: np.ndarray,
                names_: "_Names") -> list[Piece]:
    """A long file's samples as one piece per counter, rows in the file's order (``uniq``: the
    counter names, sorted; ``inv``: each row's index into them)."""
    idx = np.array([names_.counter(str(u)) for u in uniq], np.int32)
    o = np.argsort(inv, kind="stable")
    bounds = np.flatnonzero(np.r_[True, inv[o][1:] != inv[o][:-1], True])
    return [Piece(server[o[a:b]], time[o[a:b]], idx[inv[o[a:a + 1]]], value[o[a:b]][:, None])
            for a, b in zip(bounds[:-1], bounds[1:])]


def _column_labels(header: list[str]) -> tuple[list[str], str]:
    """Counter names of a wide CSV's columns; a name that repeats gets " (2)", " (3)"... (and a
    note says so) rather than one column silently overwriting another."""
    seen: dict[str, int] = {}
    out, dups = [], []
    for h in header:
        name = h.strip()
        k = seen.get(name, 0) + 1
        seen[name] = k
        out.append(name if k == 1 else f"{name} ({k})")
        if k == 2:
            dups.append(name)
    said = "a column" if len(dups) == 1 else "columns"
    return out, (f"{said} named twice, read as NAME (2), ...: {', '.join(dups)}" if dups else "")


class _Names:
    """Server and counter names shared by the files of one dataset."""

    def __init__(self):
        self.server_list: list[str] = []
        self.counter_list: list[str] = []
        self._s: dict[str, int] = {}
        self._c: dict[str, int] = {}
        self.kind_rows: dict[int, Counter] = {}  # server -> its rows of each kind, from a column naming it
        self.kind_column = ""  # that column's name as written

    def server(self, name: str) -> int:
        i = self._s.get(name)
        if i is None:
            i = self._s[name] = len(self.server_list)
            self.server_list.append(name)
        return i

    def counter(self, name: str) -> int:
        i = self._c.get(name)
        if i is None:
            i = self._c[name] = len(self.counter_list)
            self.counter_list.append(name)
        return i

    def set_kinds(self, server: np.ndarray, names, codes: np.ndarray, column: str) -> None:
        """Count each server's kind from a column naming it: rows of servers ``server``, the
        column's distinct values ``names`` and each row's index into them (an empty cell: none)."""
        K = max(len(names), 1)
        pairs, rows = np.unique(server.astype(np.int64) * K + codes, return_counts=True)
        for s, k, n in zip(*np.divmod(pairs, K), rows.tolist()):
            name = "" if names[k] is None else str(names[k]).strip()
            if name:
                got = self.kind_rows.setdefault(int(s), Counter())
                got[name] += n
        self.kind_column = self.kind_column or column

    def kinds(self) -> tuple[list[str], dict[int, tuple[str, str]]]:
        """Each server's kind (the one most of its rows give; "" none), and the servers given two
        kinds or more: (the kind kept, another)."""
        out, clash = [""] * len(self.server_list), {}
        for s, got in self.kind_rows.items():
            ranked = got.most_common()
            out[s] = ranked[0][0]
            if len(ranked) > 1:
                clash[s] = (ranked[0][0], ranked[1][0])
        return out, clash

    def servers_of(self, col) -> np.ndarray:
        uniq, inv = _codes(col)
        idx = np.array([self.server(str(u).strip()) for u in uniq], np.int32)
        return idx[inv]


def _secs_text(s: float) -> str:
    return f"{s / 3600:g} h" if s >= 3600 and s % 3600 == 0 else f"{s / 60:g} min" if s >= 60 and s % 60 == 0 \
        else f"{s:g} s"


# -- Prometheus ----------------------------------------------------------------------------------

def sniff_prometheus(path: Path, head: bytes) -> bool:
    """A Prometheus range query's answer, or VictoriaMetrics' export (``/api/v1/export``: a
    series a line, ``{"metric": {...}, "values": [...], "timestamps": [ms...]}``)."""
    h = head.lstrip()[:4096]
    return h[:1] in (b"{", b"[") and ((b'"resultType"' in head and b'"matrix"' in head) or is_series_export(h))


def is_series_export(head: bytes) -> bool:
    """VictoriaMetrics' export: JSON lines ``{"metric": ..., "values": ..., "timestamps": ...}``."""
    h = head.lstrip()
    return h.startswith(b'{"metric"') and b'"timestamps"' in h[:4096]


def is_cumulative(name: str, types: dict | None = None) -> bool:
    """Whether metric ``name`` is a cumulative counter: its type in ``types`` (the server's
    metadata) when known, else its name's ending."""
    kind = (types or {}).get(name)
    if kind in ("counter", "histogram", "summary"):
        return kind == "counter" or name.endswith(("_count", "_sum", "_bucket"))
    if kind is not None:
        return False
    return name.endswith(CUMULATIVE_ENDINGS)


def per_second(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A cumulative series' rate per second between consecutive samples, at the later one; a
    value that drops is a restart (counted from zero, as Prometheus's rate() does)."""
    o = np.argsort(t, kind="stable")
    t, v = t[o], v[o]
    dv = np.diff(v)
    dv = np.where(dv < 0, v[1:], dv)
    dt = np.diff(t)
    ok = dt > 0
    return t[1:][ok], dv[ok] / dt[ok]


def matrix_pieces(results: list, source, server_label: str, names_: "_Names",
                  types: dict | None = None) -> tuple[list[Piece], list[str]]:
    """Pieces of a Prometheus matrix (``data.result``: ``{"metric": {...}, "values": [[t, "v"],
    ...]}`` per series). The server is the ``server_label`` label; the counter the metric name
    with the labels that tell its series apart (``node_cpu_seconds_total{cpu="0",mode="idle"}``):
    a label with one value over every series of a name (``job``) is left out of it. A
    cumulative counter (``types``, else its name's ending) becomes ``rate(NAME)`` per second."""
    series, unlabelled = [], 0
    for r in results:
        labels = dict(r.get("metric") or {})
        server = labels.pop(server_label, None)
        if server is None:
            unlabelled += 1
            continue
        series.append((str(server), str(labels.pop("__name__", "") or "value"), labels, r.get("values") or []))
    kind = _kind_label(series)
    if kind is not None:  # each server's kind: the label, left out of the counters' names
        got = [x[2].pop(kind, "") for x in series]
        have = [i for i, x in enumerate(series) if x[3]]  # a series without samples names no server
        if have:
            names_.set_kinds(np.array([names_.server(series[i][0]) for i in have], np.int64),
                             *_codes([got[i] for i in have]), kind)
    labels_of = counter_names([(name, labels) for _, name, labels, _ in series])
    pieces, rated = [], set()
    for (server, name, labels, vals), label in zip(series, labels_of):
        if not vals:
            continue
        try:
            arr = np.array([(float(t), float(v)) for t, v in vals], np.float64)
        except (TypeError, ValueError):
            raise InputError(source, f"series {label} of {server}: values must be [time, \"number\"] pairs") from None
        t, v = arr[:, 0], arr[:, 1]
        if is_cumulative(name, types):
            t, v = per_second(t, v)
            label = f"rate({label})"
            rated.add(name)
            if not len(t):
                continue
        pieces.append(Piece(np.full(len(t), names_.server(server), np.int32), t,
                            np.array([names_.counter(label)], np.int32), v[:, None]))
    notes = []
    if unlabelled:
        notes.append(f"{source}: {unlabelled} series without the {server_label!r} label were left out "
                     "(--server-label names another)")
    if rated:
        notes.append(f"{source}: cumulative counters read as rates per second (rate(NAME)): "
                     + ", ".join(sorted(rated)[:6]) + (", ..." if len(rated) > 6 else ""))
    return pieces, notes


def _kind_label(series: list) -> str | None:
    """The label of (server, name, labels, values) ``series`` that names each server's kind (a
    KIND_NAMES one: job, service, app, role...): the first with two values or more over the
    servers and one on each server's series (a server scraped by two jobs: no kind from it)."""
    present = {k for _, _, labels, _ in series for k in labels}
    for want in KIND_NAMES:
        for k in sorted(present):
            if _norm(k) != want:
                continue
            of: dict[str, set] = {}
            for server, _, labels, _ in series:
                of.setdefault(server, set()).add(labels.get(k, ""))
            if all(len(v) == 1 for v in of.values()) and len({next(iter(v)) for v in of.values()} - {""}) >= 2:
                return k
    return None


def read_prometheus(path, server_label: str = "instance", interner: "_Names | None" = None) -> RawCounters:
    path = Path(path)
    names_ = interner or _Names()
    text = read_text(path)
    cut = 0
    try:
        docs = [json.loads(text)]
    except json.JSONDecodeError as exc:
        try:  # JSON lines
            docs = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError:
            if not is_series_export(text.encode()[:4096]):
                raise InputError(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
            docs = []  # an export of a series a line: a line cut or damaged is that series lost, said
            for line in text.splitlines():
                if not line.strip():
                    continue
                try:
                    docs.append(json.loads(line))
                except json.JSONDecodeError:
                    cut += 1
    results = []
    for d in docs:
        if isinstance(d, dict) and "timestamps" in d and "metric" in d:  # VictoriaMetrics' export: a series
            results.append(_exported_series(d))
            continue
        for item in (d if isinstance(d, list) else [d]):
            data = item.get("data", item) if isinstance(item, dict) else None
            if not isinstance(data, dict) or data.get("resultType") != "matrix":
                raise InputError(path, 'not a Prometheus range-query result (expected data.resultType "matrix")')
            results += data.get("result") or []
    pieces, notes = matrix_pieces(results, path.name, server_label, names_)
    if not pieces:
        raise InputError(path, f"no series with samples and a {server_label!r} label")
    if cut:
        notes.append(f"{path.name}: {count_that(cut, 'lines')} no JSON (cut or "
                     f"damaged): {'its series' if cut == 1 else 'their series'} left out")
    return RawCounters(names_.server_list, names_.counter_list, pieces, str(path), notes)


def _exported_series(d: dict) -> dict:
    """A series of VictoriaMetrics' export (its values, their times in ms) as a range query's
    result gives it (``values``: [time in s, value] pairs); what does not fit stays for
    matrix_pieces to count."""
    t, v = d.get("timestamps"), d.get("values")
    if not isinstance(t, list) or not isinstance(v, list):
        return {"metric": d.get("metric"), "values": None}
    return {"metric": d.get("metric"), "values": [[ms / 1000 if isinstance(ms, (int, float)) else ms, x]
                                                   for ms, x in zip(t, v)]}


# -- several files -------------------------------------------------------------------------------

#: the forms of counter files other than a CSV of counters: the words perftriage info says, the
#: test on a file's path and first bytes, the reader (path, names, server label, row interval);
#: asked in this order, a counter CSV where none says yes
_FORMS = (
    ("Prometheus range-query JSON", sniff_prometheus, lambda p, n, label, _: read_prometheus(p, label, n)),
    ("sadf -d export", sadf.sniff, lambda p, n, _label, interval: read_sadf(p, n, interval)),
    ("InfluxDB CSV (a Flux result)", influx.sniff,
     lambda p, n, *_: influx.read_influx(p, n, SERVER_NAMES, KIND_NAMES, _norm)),
    ("Windows performance counter log (PDH-CSV)", lambda p, h: perfmon.sniff(h), lambda p, n, *_: read_perfmon(p, n)),
    ("InfluxDB line protocol", lambda p, h: line_protocol.sniff(h),
     lambda p, n, *_: line_protocol.read_line_protocol(p, n, SERVER_NAMES, KIND_NAMES, _norm)),
    ("dstat / dool CSV", lambda p, h: dstat.sniff(h), lambda p, n, *_: dstat.read_dstat(p, n)),
    ("nmon recording", lambda p, h: nmon.sniff(h), lambda p, n, *_: nmon.read_nmon(p, n)),
    ("vmstat report", lambda p, h: vmstat.sniff(h), lambda p, n, _label, interval: vmstat.read_vmstat(p, n, interval)),
    ("collectd CSV file", collectd.sniff, lambda p, n, *_: collectd.read_collectd(p, n)),
    ("OpenTelemetry metrics (OTLP JSON)", lambda p, h: otlp_metrics.sniff(h),
     lambda p, n, *_: otlp_metrics.read_otlp_metrics(p, n)),
    ("Graphite render API output", lambda p, h: graphite.sniff(h), lambda p, n, *_: graphite.read_graphite(p, n)),
    ("Amazon CloudWatch metric data (JSON)", lambda p, h: cloudwatch.sniff(h),
     lambda p, n, *_: cloudwatch.read_cloudwatch(p, n)),
    ("Google Cloud Monitoring time series (JSON)", lambda p, h: gcp_monitoring.sniff(h),
     lambda p, n, *_: gcp_monitoring.read_gcp_monitoring(p, n)),
    ("Azure Monitor metrics (JSON)", lambda p, h: azure_monitor.sniff(h),
     lambda p, n, *_: azure_monitor.read_azure_monitor(p, n)),
    ("Datadog metrics (query API JSON)", lambda p, h: datadog.sniff(h), lambda p, n, *_: datadog.read_datadog(p, n)),
)


def counter_form(path: Path, head: bytes):
    """The form of counter file ``path`` in words, and its reader (path, names, server label, row
    interval) -> RawCounters."""
    return next(((form, read) for form, sniff, read in _FORMS if sniff(path, head)),
                ("counter CSV", lambda p, n, _label, interval: read_csv(p, n, interval)))


def from_local(t: np.ndarray, zone: str) -> np.ndarray:
    """Times read as UTC that were ``zone``'s local clock (an IANA name, Europe/Paris), moved to
    UTC: each quarter of an hour by its own offset (summer time's too; the hour a clock repeats
    when summer time ends read as its first)."""
    import datetime as _dt  # noqa: PLC0415
    from zoneinfo import ZoneInfo  # noqa: PLC0415

    tz = ZoneInfo(zone)
    q = np.floor(np.where(np.isfinite(t), t, 0) / 900).astype(np.int64)
    uniq, inv = np.unique(q, return_inverse=True)
    offset = np.array([tz.utcoffset(_dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=int(k) * 900)).total_seconds()
                       for k in uniq])
    return t - offset[inv.ravel()]


def load_counters(paths, server_label: str = "instance", interval: float | None = None,
                  servers: list[RawCounters] = (), row_interval: float | None = None,
                  local_zone: str | None = None) -> CounterSet:
    """Read the files of one dataset (CSV and Prometheus JSON mixed) and align them, with the
    counters already fetched from ``servers`` (a running Prometheus's). ``row_interval``: seconds
    between two rows of files whose rows are numbered, not timed (--interval); ``local_zone``: the
    zone of the files whose times are a host's local clock (sar's, vmstat's, nmon's...; None: read
    as UTC, as their notes say; --timezone)."""
    paths = [Path(p) for p in paths]
    if not paths and not servers:
        raise InputError(None, "no counter file given")
    names_ = _Names()
    pieces, notes, by_name, numbered, timed = [], [], [], [], [str(raw.source) for raw in servers]
    headerless: dict[str, list[str]] = {}  # how their columns were read -> the files without a header
    for raw in servers:  # renumbered into this dataset's names
        srv = np.array([names_.server(n) for n in raw.servers], np.int32)
        cnt = np.array([names_.counter(n) for n in raw.counters], np.int32)
        for piece in raw.pieces:
            pieces.append(Piece(srv[piece.server], piece.time, cnt[piece.counters], piece.values))
        if raw.kinds is not None:
            names_.set_kinds(srv, *_codes(raw.kinds), raw.kind_column)
        notes += raw.notes
    for p in paths:
        form, read = counter_form(p, read_head(p))
        with reading(p, form):
            raw = read(p, names_, server_label, row_interval)
        if raw.local and local_zone:  # a host's local clock in the zone the user named
            raw.pieces = [Piece(pc.server, from_local(pc.time, local_zone), pc.counters, pc.values) for pc in raw.pieces]
            raw.notes = [n[:-len("read as UTC")] + f"read in {local_zone} (--timezone)" if n.endswith("read as UTC")
                         else n for n in raw.notes]
        pieces += raw.pieces
        notes += raw.notes
        if raw.server_from_name:
            by_name.append(server_of_file(p))
        if raw.headerless:
            headerless.setdefault(raw.headerless, []).append(p.name)
        (numbered if raw.numbered else timed).append(str(p))
    if numbered and timed:
        raise InputError(numbered[0], f"its rows are numbered, while {timed[0]} has times: they cannot be aligned "
                                      "(give the files of one kind)")
    for how, names in headerless.items():
        notes.append(f"{len(names)} file{'s' if len(names) != 1 else ''} without a header ({first_of(names, 3)}): "
                     f"{how} (numbered from 1)")
    if numbered:
        notes.append(f"rows numbered, not timed: {_secs_text(row_interval)} apart (--interval); times are since the "
                     "start only")
    if by_name:
        notes.append(f"{len(by_name)} file{'s' if len(by_name) != 1 else ''} without a server column: each is the "
                     f"server named after it ({first_of(by_name, 5)})")
    sources = [str(p) for p in paths] + [raw.source for raw in servers]
    source = sources[0] if len(sources) == 1 else \
        f"{paths[0].parent} ({len(paths)} files)" if not servers else f"{', '.join(sources[:3])}"
    kinds = None
    if names_.kind_rows:
        kinds, clash = names_.kinds()
        if clash:
            s, (kept, other) = next(iter(clash.items()))
            notes.append(f"{count_of(len(clash), 'servers')} of two kinds or more in column {names_.kind_column!r} "
                         f"(e.g. {names_.server_list[s]}: {kept}, {other}): each taken to be of the kind most of "
                         "its rows give")
    raw = RawCounters(names_.server_list, names_.counter_list, pieces, source, notes, numbered=bool(numbered),
                      kinds=kinds, kind_column=names_.kind_column)
    with reading(source, "set of counters that can be aligned"):
        cs = align(raw, interval)
    rate_cumulative(cs)  # totals that only grow, from files that do not say so (Prometheus's are rated above)
    return cs


def read_perfmon(path: Path, names_: "_Names") -> RawCounters:
    """A Windows performance counter log (PDH-CSV, ../perfmon.py) of one server or several: each
    counter path's machine its server (the file's name where the log names none), its counter the
    rest of the path ('Processor(_Total)\\% Processor Time')."""
    log = perfmon.read_log(path)
    threads = {(p.machine, p.instance) for p in log.paths if p.is_thread}
    by_machine: dict[str, list[int]] = {}
    for j, p in enumerate(log.paths):
        if not (p.is_thread and len(threads) >= 2):  # a process's threads: the thread analysis's
            by_machine.setdefault(p.machine, []).append(j)
    if not by_machine:
        raise InputError(path, "a performance counter log of threads only: no counter of its machine")
    pieces = []
    for machine, cols in by_machine.items():
        server = names_.server(machine or server_of_file(path))
        pieces.append(Piece(np.full(len(log.time), server, np.int32), log.time,
                            np.array([names_.counter(log.paths[j].name) for j in cols], np.int32), log.values[:, cols]))
    notes = log.notes + [f"{path.name}: a Windows performance counter log (PDH-CSV) of "
                         f"{count_of(len(by_machine), 'machines')}; its times written on {log.zone!r} read as UTC by "
                         "the log's bias"]
    if len(threads) >= 2:
        notes.append(f"{path.name}: its threads' counters (Thread(process/N)) are read by the thread analysis, "
                     "the others as counters")
    return RawCounters(names_.server_list, names_.counter_list, pieces, str(path), notes, "" in by_machine)


def _thread_log(head: bytes) -> bool:
    """A performance counter log of a process's threads: the thread analysis's (its machine's
    other counters, where it has them, are read as counters too)."""
    return perfmon.sniff(head) and perfmon.threads_in(head) >= 2


register_file_kind("counters", lambda p, h: not _thread_log(h)
                   and (sniff_csv(p, h) or any(sniff(p, h) for _, sniff, _ in _FORMS)))
register_also_kind("counters", lambda p, h: _thread_log(h) and perfmon.others_in(h) > 0)
register_folder_kind("counters", collectd.tree_files)
