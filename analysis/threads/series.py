"""Per-thread resource time series as one columnar table, and the CSV forms users bring.

All samples of all threads in three arrays: ``time`` (seconds since the epoch, float64),
``values`` (samples x metrics, float64) and, per thread, the slice of its samples
(``lo``/``hi``; a thread's samples are contiguous and in time order). Each thread has an id and
its groups (machine, process, pool, wave) for the top-down abstractions.

CSV forms (header required; columns matched case-insensitively, ``-``/``_``/spaces ignored):

- **long**: ``time, thread, [machine, process, pool, wave,] METRIC...``: one row per sample of a
  thread, one column per metric (any numeric column that is not a time, id or group column);
- **narrow**: ``time, thread, [groups...], metric, value``: one row per sample of one metric;
- **wide**: ``time, THREAD:METRIC...``: one row per time, one column per thread and metric
  (``thread:metric`` or ``metric@thread``), groups unknown.

Times: unix seconds / ms / µs / ns (decided by magnitude) or ISO 8601. Rows need not be sorted.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perftriage.analysis.columnar_csv import FROM_BYTES, frame, polars_for, sorted_codes
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import csv_rows
from perftriage.analysis.inputs import read_head, register_file_kind
from perftriage.analysis.labelsets import label_set
from perftriage.analysis.timeparse import column_to_seconds
from perftriage.analysis.values import drop_impossible, impossible_note

GROUPS = ("machine", "process", "pool", "wave")
GROUP_NAMES = {
    "machine": ("machine", "host", "hostname", "node", "server"),
    "process": ("process", "pid", "processname", "proc", "comm"),
    "pool": ("pool", "threadpool", "threadname", "name", "group"),
    "wave": ("wave", "slot", "batch"),
}
TIME_NAMES = ("time", "timestamp", "ts", "t", "datetime", "date")
THREAD_NAMES = ("thread", "tid", "threadid", "thread_id", "lwp")


@dataclass
class ThreadSeries:
    time: np.ndarray  # (N,) float64 seconds
    values: np.ndarray  # (N, p) float64
    lo: np.ndarray  # (threads,) first sample row
    hi: np.ndarray  # (threads,) one past the last
    ids: list[str]
    groups: dict[str, list[str]]  # group -> per-thread value ("" when unknown)
    metrics: list[str]
    source: str = ""
    notes: list[str] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)  # metric -> unit ('%', 'calls/s'), where known
    # level -> the group column that tells each abstraction's kind there: abstractions of different
    # kinds do different work and are not compared with one another (a kernel trace's processes
    # by program, its pools each of its own kind); none: a level's abstractions are alike, as the
    # paper's waves or machines, and as a CSV's levels are taken
    kinds: dict[str, str] = field(default_factory=dict)
    # metrics compared by their level only (the window and departure checks, the words), not in
    # the covariance distances: a sparse one (a disk wait most windows have none of) makes the
    # quietest member of any pool a cluster of its own there
    level_only: tuple[str, ...] = ()

    def unit(self, metric: str) -> str:
        u = self.units.get(metric, "")
        return u if u in ("", "%") or u.startswith("/") else " " + u

    @property
    def n_threads(self) -> int:
        return len(self.ids)

    def samples(self, i: int) -> np.ndarray:
        return self.values[self.lo[i]:self.hi[i]]

    def times(self, i: int) -> np.ndarray:
        return self.time[self.lo[i]:self.hi[i]]

    def label(self, i: int) -> str:
        parts = [self.groups[g][i] for g in GROUPS if g in self.groups and self.groups[g][i]]
        return "/".join(parts + [self.ids[i]])

    def threads_of(self, thread: str, machine: str | None = None) -> list[int]:
        """The threads whose id is ``thread`` on ``machine`` (any machine where the series have
        none or it is not given): an id is its machine's own (tid 2124 on two hosts)."""
        machines = self.groups.get("machine")
        return [i for i, t in enumerate(self.ids) if t == thread
                and (machine is None or machines is None or machines[i] in ("", machine))]

    def levels(self) -> list[str]:
        """The grouping levels present, top-down, then 'thread'."""
        return [g for g in GROUPS if g in self.groups and len(set(self.groups[g])) > 1] + ["thread"]


_UNIT = re.compile(r"^(.*?\S)\s*[(\[]([^()\[\]]+)[)\]]$")


def _units_from_names(ts: ThreadSeries) -> None:
    """Metrics named with their unit, ``CPU(%)`` or ``Resident [bytes]`` (as perftriage record
    writes them, and many exports do): the name without it, the unit in ``ts.units``, so that a
    finding says '59.5%' and '2.1e+08 bytes'. A name that would be taken twice stays whole."""
    split = [_UNIT.match(m) for m in ts.metrics]
    names = [s.group(1) if s else m for s, m in zip(split, ts.metrics)]
    if len(set(names)) < len(names):
        return
    for s, name in zip(split, names):
        if s:
            ts.units[name] = s.group(2).strip()
        else:
            suffix = _SUFFIX.search(name)
            if suffix:  # cpu_percent, rss_bytes, wait_ms: the name kept whole, its unit known
                ts.units[name] = _SUFFIX_UNITS[suffix.group(1).lower()]
    ts.metrics = names


#: a metric name's unit suffix (``cpu_percent``, ``rss_bytes``, ``blocked_ms``, ``syscalls_per_s``)
_SUFFIX_UNITS = {"percent": "%", "pct": "%", "bytes": "bytes", "kib": "KiB", "kb": "kB", "mib": "MiB",
                 "mb": "MB", "ms": "ms", "us": "µs", "ns": "ns", "seconds": "s", "secs": "s", "sec": "s",
                 "per_s": "/s", "per_sec": "/s", "per_second": "/s", "ps": "/s"}
_SUFFIX = re.compile(r"[_.\-](" + "|".join(sorted(_SUFFIX_UNITS, key=len, reverse=True)) + r")$", re.IGNORECASE)


_NUMBER = re.compile(r"[-_#:./\s]*\d+$")  # a name's trailing number, with what separates it


def pool_name(name: str) -> str:
    """The pool a thread belongs to, from its name: its number taken off ('pool-1-thread-3' and
    'pool-1-thread-12' -> 'pool-1-thread', 'worker-7' -> 'worker'); a name that is only a number
    stays."""
    return _NUMBER.sub("", name) or name


def program_of(process: str) -> str:
    """The program a process runs, from its name: its pid taken off ('1234:nginx', 'nginx[1234]',
    'nginx-3' -> 'nginx'); '' for a bare pid (all such processes one kind)."""
    return _NUMBER.sub("", re.sub(r"\[\d+\]$", "", re.sub(r"^\d+:", "", process.strip())))


def set_kinds(ts: ThreadSeries, pool_column: str = "pool") -> None:
    """Which of a CSV's levels hold abstractions of different kinds (``ThreadSeries.kinds``): its
    pools (a pool, thread-pool or thread-name column: different pools do different work) and its
    processes, by the program each runs. A column called 'group' may be anything (waves): its
    abstractions stay alike, as the paper's."""
    if "pool" in ts.groups and pool_column != "group":
        ts.kinds["pool"] = "pool"
    if "process" in ts.groups:
        programs = [program_of(p) or "unnamed" for p in ts.groups["process"]]
        if len(set(programs)) > 1:  # one program (or bare pids only): its processes are alike
            ts.groups["program"] = programs
            ts.kinds["process"] = "program"


def plural(level: str) -> str:
    """process -> processes, thread -> threads."""
    return level + ("es" if level.endswith("s") else "s")


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9@:]", "", s.strip().lower())


SCOPES = ("process", "machine")  # the groups within which a thread id names one thread


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for a column of few distinct strings, by a
    dict (0.1 s for 2 million rows where sorting the objects took 2.6 s)."""
    seen: dict = {}
    codes = np.fromiter((seen.setdefault(v, len(seen)) for v in values.tolist()), np.int64, len(values))
    firsts = np.empty(len(seen), dtype=object)
    firsts[:] = list(seen)
    order = np.argsort(firsts, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return firsts[order], rank[codes]


def build(time, thread_keys, group_cols: dict, values, metrics, source="") -> ThreadSeries:
    """Sort samples by (thread, time) and make the table. ``thread_keys``: per-sample thread id
    strings; ``group_cols``: group -> per-sample strings."""
    keys = np.asarray(thread_keys, dtype=object)
    uniq, inv = _factorize(keys)
    # a thread id is its machine's and its process's own: tid 2124 on two hosts, a JVM's
    # pool-1-thread-1 in two processes are two threads (they were one, their samples interleaved)
    scope = [_factorize(np.asarray(group_cols[g], dtype=object))[1] for g in SCOPES if g in group_cols and len(keys)]
    order = np.lexsort((time, *scope, inv))  # by id first, as ever where ids are unique
    inv, time, values = inv[order], np.asarray(time)[order], np.asarray(values, np.float64)[order]
    new = inv[1:] != inv[:-1]
    for code in scope:
        code = code[order]
        new |= code[1:] != code[:-1]
    bounds = np.flatnonzero(np.r_[True, new, True]) if len(inv) else np.array([0])
    lo, hi = bounds[:-1], bounds[1:]
    ids = [str(uniq[inv[a]]) for a in lo]
    groups = {}
    for g, col in group_cols.items():
        col = np.asarray(col, dtype=object)[order]
        groups[g] = [str(col[a]) for a in lo]
    if not values.flags.writeable:
        values = values.copy()
    dropped = drop_impossible(values)
    ts = ThreadSeries(time=time, values=values, lo=lo, hi=hi, ids=ids, groups=groups, metrics=list(metrics),
                      source=source)
    if dropped:
        ts.notes.append(impossible_note(dropped))
    return ts


def sniff(path: Path, head: bytes) -> bool:
    first = head.decode("utf-8", "replace").split("\n", 1)[0]
    if "," not in first:
        return False
    raw = next(csv.reader([first]))
    cols = [_norm(c) for c in raw]
    has_time = any(c in TIME_NAMES for c in cols)
    if not has_time:
        return False
    if any(c in THREAD_NAMES for c in cols):
        return True
    # columns thread:metric or metric@thread; a Prometheus label set (instance="10.0.0.1:9100") is
    # a counter's series, not a thread's
    return sum(1 for c, r in zip(cols, raw) if (":" in c or "@" in c) and label_set(r) is None) >= 2


def read_csv(path) -> ThreadSeries:
    path = Path(path)
    with csv_rows(path) as rd:
        header = next(rd, None)
        if not header:
            raise InputError(path, "file is empty")
        names = [_norm(h) for h in header]
        cols = _columns_fast(path, header, names)  # a large file of complete rows: polars' columnar reader
        if cols is None:
            rows = [r for r in rd if r and (r[0].strip() or "".join(r).strip())]  # blank lines skipped
    width = len(header)
    short = 0
    if cols is None:
        short = sum(1 for r in rows if len(r) < width)
        if short:
            rows = [r for r in rows if len(r) >= width]
        if not rows:
            raise InputError(path, "no data rows under the header")
        cols = list(zip(*rows))
    t_i = next((i for i, n in enumerate(names) if n in TIME_NAMES), None)
    if t_i is None:
        raise InputError(path, f"no time column (looked for {', '.join(TIME_NAMES)}; header: {', '.join(header[:8])})")
    time = column_to_seconds(cols[t_i], path)
    th_i = next((i for i, n in enumerate(names) if n in THREAD_NAMES), None)
    notes = [f"{short:,} row{'s' if short != 1 else ''} with fewer fields than the header skipped"] if short else []
    group_idx: dict[str, int] = {}
    if th_i is None:
        ts = _read_wide(path, header, names, cols, time, t_i)
    else:
        for g, alts in GROUP_NAMES.items():
            i = next((i for i, n in enumerate(names) if n in alts and i not in (t_i, th_i)
                      and i not in group_idx.values()), None)
            if i is not None:
                group_idx[g] = i
        used = {t_i, th_i, *group_idx.values()}
        if "metric" in names and "value" in names:
            ts = _read_narrow(path, names, cols, time, th_i, group_idx)
        else:
            metric_idx = [i for i in range(width) if i not in used]
            vals, metrics = [], []
            for i in metric_idx:
                try:
                    vals.append(_floats(cols[i]))
                    metrics.append(header[i].strip())
                except ValueError:
                    notes.append(f"column {header[i]!r} is not numeric: ignored")
            if not metrics:
                raise InputError(path, "no numeric metric column besides time, thread and group columns")
            ts = build(time, cols[th_i], {g: cols[i] for g, i in group_idx.items()}, np.column_stack(vals), metrics,
                       str(path))
    ts.notes = notes + ts.notes
    ts.source = str(path)
    _units_from_names(ts)
    set_kinds(ts, names[group_idx["pool"]] if "pool" in group_idx else "pool")
    return ts


POLARS_FROM_BYTES = FROM_BYTES  # thread CSVs from this size are read by polars


def _columns_fast(path: Path, header: list[str], names: list[str]) -> list[np.ndarray] | None:
    """The columns of a large CSV (POLARS_FROM_BYTES) by polars, ``names`` its header's
    normalised names: numbers as numbers, labels (thread, group, metric name) and anything else as
    text, one object per distinct value; None for a small file, without polars, or where any row
    is short, long or has an empty cell (the csv module's path says what it skips). 2 million rows
    of 6 columns: the file read in 2.1 s and 525 MiB against 10.6 s and 1.37 GB."""
    pl = polars_for(path, POLARS_FROM_BYTES)
    if pl is None:
        return None
    labels = {i for i, n in enumerate(names)  # thread, group, metric-name columns: text, whatever they hold
              if n in THREAD_NAMES or n == "metric" or any(n in alts for alts in GROUP_NAMES.values())}
    try:
        df = frame(pl, path, header, set())
        if not len(df) or len(df.columns) != len(header) or df.null_count().sum_horizontal().item():
            return None
        cols = []
        for i, name in enumerate(df.columns):
            col = df.get_column(name)
            if i not in labels:
                try:  # numbers: no text object per cell (2 million rows of 6 columns held 1.2 GB as text)
                    cols.append(col.cast(pl.Float64).to_numpy())
                    continue
                except Exception:  # noqa: BLE001 (not all numbers: as text, and the reader says so)
                    pass
            # text: one object per distinct value, shared by its rows
            values, codes = sorted_codes(col)
            cols.append(np.asarray(values, dtype=object)[codes])
        return cols
    except Exception:  # noqa: BLE001 (anything polars refuses: the careful path reads it and says why)
        return None


def _floats(col) -> np.ndarray:
    """A column of text as numbers, an empty cell NaN; ValueError where a cell is not a number."""
    if isinstance(col, np.ndarray) and col.dtype.kind == "f":  # read as numbers already (_columns_fast)
        return col
    try:
        return np.asarray(col, dtype=object).astype(np.float64)
    except ValueError:  # empty cells (or text: raised again below)
        return np.array([x if x.strip() else "nan" for x in col], dtype=np.float64)


def _read_narrow(path, names, cols, time, th_i, group_idx) -> ThreadSeries:
    m_i, v_i = names.index("metric"), names.index("value")
    metric = np.asarray(cols[m_i], dtype=object)
    metrics = sorted(set(metric.tolist()))
    thread = np.asarray(cols[th_i], dtype=object)
    try:
        value = np.array(cols[v_i], dtype=np.float64)
    except ValueError:
        raise InputError(path, "the value column is not numeric") from None
    # pivot: one row per (thread, time), a thread in its process and machine (build's SCOPES)
    key = np.char.add(np.char.add(thread.astype(str), "\x00"), time.astype(str))
    for g in SCOPES:
        if g in group_idx:
            key = np.char.add(np.char.add(key, "\x00"), np.asarray(cols[group_idx[g]], dtype=object).astype(str))
    uk, inv = np.unique(key, return_inverse=True)
    mi = np.searchsorted(np.array(metrics, dtype=object), metric)
    vals = np.full((len(uk), len(metrics)), np.nan)
    vals[inv, mi] = value
    first = np.full(len(uk), -1)
    first[inv[::-1]] = np.arange(len(inv))[::-1]
    return build(time[first], thread[first], {g: np.asarray(cols[i], dtype=object)[first] for g, i in group_idx.items()},
                 vals, metrics, str(path))


def _read_wide(path, header, names, cols, time, t_i) -> ThreadSeries:
    pairs = {}
    for i, h in enumerate(header):
        if i == t_i:
            continue
        h = h.strip()
        if ":" in h:
            thread, metric = h.split(":", 1)
        elif "@" in h:
            metric, thread = h.split("@", 1)
        else:
            continue
        pairs.setdefault(thread.strip(), {})[metric.strip()] = i
    if not pairs:
        raise InputError(path, "no thread column, and no THREAD:METRIC columns for the wide form")
    metrics = sorted({m for d in pairs.values() for m in d})
    t_all, th_all, v_all = [], [], []
    for thread, d in pairs.items():
        v = np.full((len(time), len(metrics)), np.nan)
        for m, i in d.items():
            v[:, metrics.index(m)] = _floats(cols[i])
        t_all.append(time)
        th_all += [thread] * len(time)
        v_all.append(v)
    return build(np.concatenate(t_all), th_all, {}, np.vstack(v_all), metrics, str(path))


def sniff_any(path: Path, head: bytes) -> bool:
    """A thread metrics file: a CSV of one of the forms above, or pidstat's report."""
    from .perfmon import sniff as sniff_perfmon  # noqa: PLC0415
    from .pidstat import sniff as sniff_pidstat  # noqa: PLC0415 (pidstat.py builds on this module)
    from .top import sniff as sniff_top  # noqa: PLC0415

    return sniff(path, head) or sniff_pidstat(path, head) or sniff_top(path, head) or sniff_perfmon(path, head)


def read_thread_metrics(path, local_zone: str | None = None) -> ThreadSeries:
    """A thread metrics file, whichever its form: pidstat's report (pidstat.py), top's batch
    output (top.py), a Windows performance counter log (perfmon.py), else a CSV. ``local_zone``:
    the zone of pidstat's and top's host clock (--timezone; None: this machine's)."""
    from .perfmon import read_perfmon_threads, sniff as sniff_perfmon  # noqa: PLC0415
    from .pidstat import read_pidstat, sniff as sniff_pidstat  # noqa: PLC0415
    from .top import read_top, sniff as sniff_top  # noqa: PLC0415

    head = read_head(path)
    if sniff_pidstat(Path(path), head):
        return read_pidstat(path, local_zone)
    if sniff_top(Path(path), head):
        return read_top(path, local_zone)
    if sniff_perfmon(Path(path), head):
        return read_perfmon_threads(path)
    return read_csv(path)


register_file_kind("threads", sniff_any)
