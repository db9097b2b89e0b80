"""Per-request execution-state features (paper 001, section III.B), and their CSV forms.

For every request: the duration and the number of segments of each state on its critical path
(RU, RS, BP, BD, BN, BS, BI, BF, BT; durations sum to TT), the state sequence along the path,
and the system calls its own thread made within the request (names, in order).

CSV export (``perftriage features PATH -o features.csv``), one row per request, a header::

    id,kind,host,pid,tid,start_ns,end_ns,TT_ns,RU_ns,...,BT_ns,RU_n,...,BT_n,syscalls,states[,marker fields]

``*_ns`` are durations in nanoseconds, ``*_n`` segment counts, ``syscalls`` and ``states`` are
space-separated sequences; when critical paths crossed to other traced hosts, two more columns:
``elsewhere_host`` (the other host holding most of the path's time) and ``elsewhere_ns`` (that
time; not a state). Import accepts this form, any CSV whose state duration columns are
named ``<STATE>_ns`` / ``_us`` / ``_ms`` / ``_s`` (bare state names are read as milliseconds), and
the published form of the paper's dataset (github.com/qfournier/request_analysis: headerless
``<pid>_times.csv`` with the id, 10 state durations in ns and the total, beside
``<pid>_count.csv``, ``<pid>_syscalls.csv``), so features made elsewhere can be analysed here.
"""

from __future__ import annotations

import csv
import io
import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.execgraph.graph import ExecGraph
from perftriage.analysis.execgraph.store import release_freed_memory
from perftriage.analysis.inputs import read_text
from perftriage.analysis.units import count_of

from .critical_path import STATES, finders, walk_many
from .table import RequestTable

# the 10 states of the published dataset, in its column order
PUBLISHED_STATES = ("UNKNOWN", "SYSTEMCALL", "USERMODE", "BLOCKED_IO", "BLOCKED_CPU", "BLOCKED_WAITKERNEL",
                    "BLOCKED_FOR_FUTEX", "BLOCKED_WAITPROCESS", "BLOCKED_CPU_FUTEX", "TRASH")
_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


@dataclass
class Ragged:
    """Variable-length integer sequences, one per row (CSR form), over a vocabulary."""

    values: np.ndarray  # int32 (int8 for the states of the critical paths)
    offsets: np.ndarray  # int64, len = rows + 1
    vocab: list[str]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def row(self, i: int) -> np.ndarray:
        return self.values[self.offsets[i]: self.offsets[i + 1]]

    def names(self, i: int) -> list[str]:
        return [self.vocab[v] for v in self.row(i).tolist()]

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def take(self, index) -> "Ragged":
        idx = np.arange(len(self))[index]
        lens = self.lengths()[idx]
        off = np.r_[0, np.cumsum(lens)].astype(np.int64)
        total = int(off[-1])
        if total:
            src = np.repeat(self.offsets[idx] - off[:-1], lens) + np.arange(total)
            vals = self.values[src]
        else:
            vals = np.empty(0, np.int32)
        return Ragged(vals, off, self.vocab)

    @staticmethod
    def from_lists(seqs, vocab: list[str] | None = None) -> "Ragged":
        """From sequences of names, one per row (any iterable: the names of a row are coded and
        dropped before the next row; a features CSV holds tens of millions of them)."""
        vocab = list(vocab or [])
        index = {v: i for i, v in enumerate(vocab)}
        code = index.__getitem__
        vals = array("i")
        off = array("q", [0])
        for names in seqs:
            n0 = len(vals)
            try:
                vals.extend(map(code, names))
            except KeyError:  # a name not seen yet: this row one name at a time
                del vals[n0:]
                for name in names:
                    i = index.get(name)
                    if i is None:
                        i = index[name] = len(vocab)
                        vocab.append(name)
                    vals.append(i)
            off.append(len(vals))
        return Ragged(np.frombuffer(vals, np.int32).copy() if len(vals) else np.empty(0, np.int32),
                      np.frombuffer(off, np.int64).copy(), vocab)

    @staticmethod
    def from_texts(texts, vocab: list[str] | None = None) -> "Ragged":
        """From whitespace-separated names, one text per row."""
        return Ragged.from_lists((text.split() for text in texts), vocab)

    @staticmethod
    def empty(rows: int) -> "Ragged":
        return Ragged(np.empty(0, np.int32), np.zeros(rows + 1, np.int64), [])


@dataclass
class FeatureTable:
    """One row per request. ``durations``/``counts`` are (rows, len(states)); ns and segments."""

    id: np.ndarray
    kind: np.ndarray
    host: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    states: list[str]
    durations: np.ndarray
    counts: np.ndarray | None
    total: np.ndarray
    syscalls: Ragged
    state_seq: Ragged
    fields: dict[str, np.ndarray] = field(default_factory=dict)
    source: str = "trace"
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.id)

    def take(self, index) -> "FeatureTable":
        return FeatureTable(
            id=self.id[index], kind=self.kind[index], host=self.host[index], pid=self.pid[index],
            tid=self.tid[index], start=self.start[index], end=self.end[index], states=list(self.states),
            durations=self.durations[index], counts=None if self.counts is None else self.counts[index],
            total=self.total[index], syscalls=self.syscalls.take(index), state_seq=self.state_seq.take(index),
            fields={k: v[index] for k, v in self.fields.items()}, source=self.source, notes=list(self.notes),
        )

    def dominant(self, i: int) -> tuple[str, float]:
        """The state with the largest share of request i's time, and that share."""
        d = self.durations[i]
        k = int(np.argmax(d))
        tot = float(self.total[i]) or float(d.sum()) or 1.0
        return self.states[k], float(d[k]) / tot

    def label(self, i: int) -> str:
        for name in ("uri", "path", "comm", "url", "name"):
            col = self.fields.get(name)
            if col is not None and col[i] not in ("", None, "-"):
                return str(col[i])
        return f"{self.kind[i]} #{self.id[i]}"


# -- extraction from traces ----------------------------------------------------------------------


def extract_features(graphs: dict[str, ExecGraph], requests: RequestTable, progress=None,
                     compiled: bool = True) -> FeatureTable:
    """Critical-path features of every request (requests of hosts without a kernel trace get
    zero features and a note)."""
    return merge_batches([extract_batch(graphs, requests, progress, compiled)])


@dataclass
class FeatureBatch:
    """The features of some of the requests, and what the notes about them count."""

    table: FeatureTable
    no_host: int  # requests of hosts without a kernel trace
    missing_thread: int  # requests on threads the kernel trace never shows


def extract_batch(graphs: dict[str, ExecGraph], requests: RequestTable, progress=None,
                  compiled: bool = True) -> FeatureBatch:
    """Critical-path features of ``requests`` (a batch of them or all; merge_batches joins
    batches into the table extract_features would make of them all, notes included).

    Batched (critical_path.walk_many): every path is walked in C (``compiled``, when built)
    straight into per-request sums, or by the Python walk into one shared Path, clipped and merged
    for all requests in one vectorised pass; the system calls inside each request's window are
    found per thread, for all its requests at once."""
    n = len(requests)
    bt = STATES.index("BT")
    path_finders = finders(graphs)  # paths cross to other traced hosts through packets
    starts, ends = requests.start.astype(np.int64), requests.end.astype(np.int64)
    tids = requests.tid.astype(np.int64)
    missing_thread = sum(1 for h, t in zip(requests.host, tids.tolist())
                         if h in path_finders and t not in path_finders[h].g.tid_index)
    if progress is not None:
        progress(0, n)
    sums = walk_many(path_finders, requests.host, tids, starts, ends, compiled=compiled)
    release_freed_memory()  # the walk's growing buffers, freed into the heap
    if progress is not None:
        progress(n, n)
    dur, cnt, own = sums.dur, sums.cnt, sums.own
    seq_vals, seq_lens = sums.seq, sums.seq_len  # int8: a state per segment, tens of millions of them
    elsewhere_host = np.full(n, "", dtype=object)  # the other host holding most of the path's time
    elsewhere_ns = np.zeros(n, np.int64)
    _elsewhere(sums, elsewhere_host, elsewhere_ns)
    no_host = np.flatnonzero(own < 0)
    if len(no_host):  # no kernel trace for the request's host: the whole window is BT, one segment
        dur[no_host, bt] = ends[no_host] - starts[no_host]
        cnt[no_host, bt] = 1
        offsets = np.r_[0, np.cumsum(seq_lens)]
        seq_vals = np.insert(seq_vals, offsets[no_host], bt)
        seq_lens = seq_lens.copy()
        seq_lens[no_host] = 1
    sc_vals, sc_lens, vocab = _syscalls_in_windows(graphs, requests, own >= 0)
    table = FeatureTable(
        id=requests.id, kind=requests.kind, host=requests.host, pid=requests.pid, tid=requests.tid,
        start=requests.start, end=requests.end, states=list(STATES), durations=dur, counts=cnt,
        total=requests.end - requests.start,
        syscalls=Ragged(sc_vals, np.r_[0, np.cumsum(sc_lens)].astype(np.int64), vocab),
        state_seq=Ragged(seq_vals, np.r_[0, np.cumsum(seq_lens)].astype(np.int64), list(STATES)),
        fields={**requests.fields, "elsewhere_host": elsewhere_host, "elsewhere_ns": elsewhere_ns},
    )
    return FeatureBatch(table, len(no_host), missing_thread)


def merge_batches(batches: list[FeatureBatch]) -> FeatureTable:
    """The batches' rows in order, as one table (they share their vocabulary: the graphs'), with
    the notes about all of them; the columns of paths that crossed to other hosts only when one
    did."""
    tables = [b.table for b in batches]
    ft = tables[0] if len(tables) == 1 else concat(tables)
    if len(tables) > 1:
        ft.source = tables[0].source
        ft.state_seq = Ragged(ft.state_seq.values.astype(tables[0].state_seq.values.dtype), ft.state_seq.offsets,
                              ft.state_seq.vocab)
    if "elsewhere_ns" in ft.fields and not ft.fields["elsewhere_ns"].any():
        ft.fields = {k: v for k, v in ft.fields.items() if k not in ("elsewhere_host", "elsewhere_ns")}
    no_host = sum(b.no_host for b in batches)
    missing_thread = sum(b.missing_thread for b in batches)
    ft.notes = []
    if no_host:
        ft.notes.append(f"{count_of(no_host, 'requests')} from hosts without a kernel trace: no critical path")
    if missing_thread:
        ft.notes.append(f"{count_of(missing_thread, 'requests')} on threads the kernel trace never shows "
                        "(a PID namespace? vtid differs from tid): their time is all BT")
    return ft


def _elsewhere(sums, host_out, ns_out) -> None:
    """For each request whose path crossed to other traced hosts: the other host holding most of
    the path's time, and that time (ties: the host the path reached first)."""
    big = np.iinfo(np.int64).max
    n = len(sums.own)
    if not n or sums.first.shape[1] < 2:
        return
    reached = sums.first < big
    has = sums.own >= 0
    reached[np.flatnonzero(has), sums.own[has]] = False
    crossed = np.flatnonzero(reached.any(axis=1))
    if not len(crossed):
        return
    reached = reached[crossed]
    t = np.where(reached, sums.host_time[crossed], -1)
    best = t.max(axis=1)
    j = np.where(reached & (t == best[:, None]), sums.first[crossed], big).argmin(axis=1)
    host_out[crossed] = [sums.graphs[o].host for o in j.tolist()]
    ns_out[crossed] = t[np.arange(len(crossed)), j]


def _syscalls_in_windows(graphs, requests: RequestTable, has_graph: np.ndarray):
    """The system calls each request's thread entered inside its window (entry in [start, end]),
    as vocabulary ids: per (host, thread), two searchsorted for all of its requests."""
    n = len(requests)
    # the vocabulary: the system calls of every graph in the order of their first call (then by
    # name); a graph's own order is the order its reader met the event classes, which depends on
    # how the hosts were read (together or apart). N-grams of equal weight rank in this order.
    first: dict[str, int] = {}
    for g in graphs.values():
        t = np.full(len(g.syscall_names), np.iinfo(np.int64).max, np.int64)
        step = 1 << 20  # calls at a time: an intp copy of every call's id is 20 MiB at 50,000 requests
        for lo in range(0, len(g.sc_id), step):
            np.minimum.at(t, g.sc_id[lo:lo + step].astype(np.intp), g.sc_entry[lo:lo + step])
        for name, v in zip(g.syscall_names, t.tolist()):
            first[name] = min(v, first.get(name, v))
    vocab = sorted(first, key=lambda name: (first[name], name))
    vocab_index = {name: i for i, name in enumerate(vocab)}
    maps = {h: np.array([vocab_index[name] for name in g.syscall_names], np.int32).reshape(-1)
            for h, g in graphs.items()}  # graph syscall ids -> table vocabulary ids
    first = np.zeros(n, np.int64)  # index of the first call in the graph's system call table
    lens = np.zeros(n, np.int64)
    hosts = np.asarray(requests.host, dtype=object)
    for h, g in graphs.items():
        rows = np.flatnonzero((hosts == h) & has_graph)
        if not len(rows):
            continue
        tids = requests.tid[rows].astype(np.int64)
        order = np.argsort(tids, kind="stable")
        rows, tids = rows[order], tids[order]
        bounds = np.flatnonzero(np.r_[True, tids[1:] != tids[:-1], True])
        for lo_r, hi_r in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            sl = g.syscalls_of(int(tids[lo_r]))
            entries = g.sc_entry[sl]
            r = rows[lo_r:hi_r]
            a = np.searchsorted(entries, requests.start[r].astype(np.int64), "left")
            b = np.searchsorted(entries, requests.end[r].astype(np.int64), "right")
            first[r] = sl.start + a
            lens[r] = np.maximum(b - a, 0)
    total = int(lens.sum())
    vals = np.empty(total, np.int32)
    offsets = np.cumsum(lens) - lens  # where each request's calls go in vals
    graph_list = list(graphs.items())
    code = np.full(n, -1, np.int16)  # each request's graph, as an index into graph_list
    for k, (h, _) in enumerate(graph_list):
        code[hosts == h] = k
    # a block of requests at a time: the per-call temporaries (source index, graph code) stay
    # small beside the graph, where at once they were 51 MiB at 50,000 requests, at the peak
    for lo in range(0, n, WINDOW_BLOCK):
        hi = min(lo + WINDOW_BLOCK, n)
        ln = lens[lo:hi]
        m = int(ln.sum())
        if m == 0:
            continue
        at = int(offsets[lo])
        src = np.repeat(first[lo:hi] - (offsets[lo:hi] - at), ln) + np.arange(m)
        out = vals[at:at + m]
        if len(graph_list) == 1:
            h, g = graph_list[0]
            out[:] = maps[h][g.sc_id[src]]
            continue
        gc = np.repeat(code[lo:hi], ln)
        for k, (h, g) in enumerate(graph_list):
            sel = gc == k
            if sel.any():
                out[sel] = maps[h][g.sc_id[src[sel]]]
    return vals, lens, vocab


WINDOW_BLOCK = 4096  # requests whose system calls are gathered at once


# -- CSV ----------------------------------------------------------------------------------------

BASE = ("id", "kind", "host", "pid", "tid", "start_ns", "end_ns", "TT_ns")


def to_csv(ft: FeatureTable) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    extra = [f for f in ft.fields if f not in BASE]
    w.writerow(list(BASE) + [f"{s}_ns" for s in ft.states]
               + ([f"{s}_n" for s in ft.states] if ft.counts is not None else []) + ["syscalls", "states"] + extra)
    dur = ft.durations.astype(np.int64) if np.issubdtype(ft.durations.dtype, np.integer) else ft.durations
    for i in range(len(ft)):
        row = [ft.id[i], ft.kind[i], ft.host[i], ft.pid[i], ft.tid[i], ft.start[i], ft.end[i], ft.total[i]]
        row += [_num(v) for v in dur[i].tolist()]
        if ft.counts is not None:
            row += ft.counts[i].tolist()
        row += [" ".join(ft.syscalls.names(i)), " ".join(ft.state_seq.names(i))]
        row += [ft.fields[f][i] for f in extra]
        w.writerow(row)
    return buf.getvalue()


def _num(v):
    return int(v) if float(v).is_integer() else v


def read_features(path: str | os.PathLike) -> FeatureTable:
    """A feature table from our CSV, a CSV with state duration columns, or the published form."""
    path = Path(path)
    if path.name.endswith("_times.csv") or path.name.endswith("_count.csv"):
        return read_published(path)
    text = read_text(path)
    rows = list(csv.reader(io.StringIO(text)))
    header = [h.strip() for h in rows[0]]
    body = [r for r in rows[1:] if r and any(c.strip() for c in r)]
    if not body:
        raise InputError(path, "has a header but no rows")
    col = {h: i for i, h in enumerate(header)}
    # state duration columns: NAME_<unit> or bare state names (milliseconds)
    states, dcols, scale = [], [], []
    for h in header:
        base, _, unit = h.rpartition("_")
        if (unit in _UNIT and base and base not in ("start", "end", "TT", "duration", "total", "elsewhere")
                and not base.endswith("_n")):
            states.append(base)
            dcols.append(col[h])
            scale.append(_UNIT[unit])
    notes = []
    bare = [h for h in header if (h in STATES or h in PUBLISHED_STATES) and h not in states]
    if bare:
        states += bare
        dcols += [col[h] for h in bare]
        scale += [1e6] * len(bare)
        notes.append(f"{path.name}: state columns without a unit suffix ({', '.join(bare)}) read as milliseconds")
    if not states:
        raise InputError(path, "no state duration columns: expected RU_ns, RS_ns, ... (or <state>_ms), "
                               f"found {', '.join(header[:12])}")
    n = len(body)
    width = len(header)
    for k, r in enumerate(body):
        if len(r) != width:
            raise InputError(path, f"row {k + 2} has {count_of(len(r), 'columns')}, the header has {width}")

    def numbers(ci, what, cast=float):
        out = np.empty(n)
        for k, r in enumerate(body):
            try:
                out[k] = cast(r[ci]) if r[ci].strip() else 0.0
            except ValueError:
                raise InputError(path, f"row {k + 2}: {what} {r[ci]!r} is not a number") from None
        bad = ~(np.abs(out) < 2.0**63)  # NaN, infinite, or beyond 64-bit nanoseconds
        if bad.any():
            k = int(np.argmax(bad))
            raise InputError(path, f"row {k + 2}: {what} {body[k][ci]!r} is not a finite number of 64 bits")
        return out

    dur = np.column_stack([numbers(c, header[c]) * s for c, s in zip(dcols, scale)])
    if (dur < 0).any():
        raise InputError(path, "negative state durations")
    counts = None
    ccols = [col.get(f"{s}_n") for s in states]
    if all(c is not None for c in ccols):
        counts = np.column_stack([numbers(c, header[c]) for c in ccols]).astype(np.int64)
        if (counts < 0).any():
            k, j = (int(x[0]) for x in np.nonzero(counts < 0))
            raise InputError(path, f"row {k + 2}: {header[ccols[j]]} {body[k][ccols[j]]!r} is negative (a count)")
    total = None
    for name, sc in (("TT_ns", 1.0), ("TT_ms", 1e6), ("duration_ns", 1.0), ("duration_ms", 1e6), ("TT", 1e6)):
        if name in col:
            total = numbers(col[name], name) * sc
            break
    if total is None:
        total = dur.sum(axis=1)
        notes.append(f"{path.name}: no TT column; total = sum of the state durations")

    def text_col(name, default):
        c = col.get(name)
        return np.array([r[c] if c is not None else default for r in body], dtype=object)

    def int_col(*names):
        for name in names:
            if name in col:
                return numbers(col[name], name).astype(np.int64)
        return np.full(n, -1, np.int64)

    ids = text_col("id", "")
    if "id" not in col:
        ids = np.arange(n).astype(object)
    start = int_col("start_ns")
    end = int_col("end_ns")
    syscalls = Ragged.from_texts(r[col["syscalls"]] for r in body) if "syscalls" in col else Ragged.empty(n)
    state_seq = Ragged.from_texts((r[col["states"]] for r in body), list(states)) if "states" in col \
        else Ragged.empty(n)
    known = set(BASE) | {header[c] for c in dcols} | {f"{s}_n" for s in states} | {"syscalls", "states"}
    fields = {h: text_col(h, "") for h in header if h not in known}
    if "elsewhere_ns" in fields:  # ours: time of the path on another traced host
        fields["elsewhere_ns"] = numbers(col["elsewhere_ns"], "elsewhere_ns").astype(np.int64)
    return FeatureTable(
        id=ids, kind=text_col("kind", "csv"), host=text_col("host", ""), pid=int_col("pid"), tid=int_col("tid"),
        start=start, end=end, states=states, durations=dur, counts=counts, total=total, syscalls=syscalls,
        state_seq=state_seq, fields=fields, source=str(path), notes=notes,
    )


def read_published(path: Path) -> FeatureTable:
    """The paper's published dataset: ``<pid>_times.csv`` (+ ``_count``, ``_syscalls``)."""
    stem = path.name.rsplit("_", 1)[0]
    folder = path.parent
    times_p = folder / f"{stem}_times.csv"
    if not times_p.exists():
        raise InputError(times_p, "missing (the published form needs <pid>_times.csv)")
    ids, dur, total = [], [], []
    with open(times_p, newline="") as f:
        for k, r in enumerate(csv.reader(f)):
            if not r:
                continue
            if len(r) != 12:
                raise InputError(times_p, f"row {k + 1} has {count_of(len(r), 'columns')}; the published form has 12 "
                                          "(id, 10 state durations, total)")
            try:
                vals = [float(v) for v in r[1:]]
            except ValueError:
                raise InputError(times_p, f"row {k + 1}: not numbers") from None
            ids.append(r[0])
            dur.append(vals[:10])
            total.append(vals[10])
    if not ids:
        raise InputError(times_p, "file is empty")
    n = len(ids)
    counts = None
    count_p = folder / f"{stem}_count.csv"
    if count_p.exists():
        rows = [r for r in csv.reader(open(count_p, newline="")) if r]
        if len(rows) != n:
            raise InputError(count_p, f"has {count_of(len(rows), 'rows')}, {times_p.name} has {n}")
        counts = np.array([[float(v) for v in r[1:-1]] for r in rows], np.int64)
        if counts.shape[1] != 10:
            raise InputError(count_p, f"has {counts.shape[1]} state counts per row, expected 10")
    sys_p = folder / f"{stem}_syscalls.csv"
    syscalls = Ragged.empty(n)
    if sys_p.exists():
        rows = [r for r in csv.reader(open(sys_p, newline="")) if r]
        if len(rows) != n:
            raise InputError(sys_p, f"has {count_of(len(rows), 'rows')}, {times_p.name} has {n}")
        syscalls = Ragged.from_lists([r[1:-1] for r in rows])
    pid = np.array([int(i.split("_")[0]) if i.split("_")[0].isdigit() else -1 for i in ids], np.int64)
    tid = np.array([int(i.split("_")[1]) if len(i.split("_")) > 2 and i.split("_")[1].isdigit() else -1
                    for i in ids], np.int64)
    start = np.array([int(i.split("_")[-1]) if i.split("_")[-1].isdigit() else -1 for i in ids], np.int64)
    total_a = np.array(total)
    return FeatureTable(
        id=np.array(ids, dtype=object), kind=np.full(n, "published", object), host=np.full(n, "", object),
        pid=pid, tid=tid, start=start, end=np.where(start >= 0, start + total_a.astype(np.int64), -1),
        states=list(PUBLISHED_STATES), durations=np.array(dur), counts=counts, total=total_a, syscalls=syscalls,
        state_seq=Ragged.empty(n), source=str(times_p),
    )


def concat(tables: list[FeatureTable]) -> FeatureTable:
    """Rows of several tables with the same states (e.g. the published files of several pids)."""
    if len(tables) == 1:
        return tables[0]
    states = tables[0].states
    for t in tables[1:]:
        if t.states != states:
            raise InputError(t.source, f"its states {t.states} differ from {tables[0].source}'s {states}")
    index: dict[str, int] = {}
    seqs_vals, seqs_off = [], [np.zeros(1, np.int64)]
    base = 0
    for t in tables:
        m = np.array([index.setdefault(v, len(index)) for v in t.syscalls.vocab], np.int32) \
            if t.syscalls.vocab else np.empty(0, np.int32)
        seqs_vals.append(m[t.syscalls.values] if len(t.syscalls.values) else np.empty(0, np.int32))
        seqs_off.append(t.syscalls.offsets[1:] + base)
        base += int(t.syscalls.offsets[-1])
    vocab = sorted(index, key=index.get)
    names = []
    for t in tables:
        names.extend(f for f in t.fields if f not in names)
    counts = None if any(t.counts is None for t in tables) else np.concatenate([t.counts for t in tables])
    st_vals = [t.state_seq.values for t in tables]
    st_off = [np.zeros(1, np.int64)]
    b = 0
    for t in tables:
        st_off.append(t.state_seq.offsets[1:] + b)
        b += int(t.state_seq.offsets[-1])
    return FeatureTable(
        id=np.concatenate([t.id for t in tables]), kind=np.concatenate([t.kind for t in tables]),
        host=np.concatenate([t.host for t in tables]), pid=np.concatenate([t.pid for t in tables]),
        tid=np.concatenate([t.tid for t in tables]), start=np.concatenate([t.start for t in tables]),
        end=np.concatenate([t.end for t in tables]), states=list(states),
        durations=np.concatenate([t.durations for t in tables]), counts=counts,
        total=np.concatenate([t.total for t in tables]),
        syscalls=Ragged(np.concatenate(seqs_vals).astype(np.int32), np.concatenate(seqs_off), vocab),
        state_seq=Ragged(np.concatenate(st_vals).astype(np.int32), np.concatenate(st_off), list(states)),
        fields={f: np.concatenate([t.fields.get(f, np.full(len(t), "", object)) for t in tables]) for f in names},
        source=", ".join(t.source for t in tables), notes=[n for t in tables for n in t.notes],
    )


def requests_of_features(ft: FeatureTable) -> RequestTable:
    """A request table for features read from CSV (start -1 when the CSV gives no times)."""
    start = np.where(ft.start >= 0, ft.start, -1).astype(np.int64)
    return RequestTable(id=ft.id, kind=ft.kind, host=ft.host, pid=ft.pid, tid=ft.tid, start=start,
                        end=start + ft.total.astype(np.int64), fields=dict(ft.fields))
