"""Decoding shared out among child processes by stream file, merged by time (``--jobs``).

One decoding process (isolated.py) runs at about the speed of ``babeltrace2 -o dummy``. Where
more cores are free than the analysis uses, the stream files of the traces (one per CPU and
channel) are shared out among several, balanced by size; each decodes its own through
babeltrace2 over a temporary view of the trace folder (its metadata and those stream files,
linked: the trace folder is never written to), with the reader's own loop under the same memory
cap (isolated.py's child). The parent

- maps each child's catalogue codes (event names, strings, hosts) to its own as the child adds
  them, and each child's columns to the parent's names (the same field name with another type
  gets its own column, as one decoder does);
- merges the children's time-ordered chunks by timestamp: rows up to the earliest "last row"
  among the children still reading can be delivered, in time order (a stable merge: the rows of
  one stream keep their order, so the current task per CPU is tracked as with one decoder);
- adds up what the children say of each trace (CPUs, discarded events, problems);
- stops where the first damaged stream stopped its child (the time of that child's last row), as
  babeltrace2's muxer stops one decoder, and says the place among all the events delivered.

Rows with the same timestamp in streams of different children may come in another order than
babeltrace2's muxer puts them (2 of 450,000 events on the web server sample).
"""

from __future__ import annotations

import os
import queue
import signal
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import TraceReadError
from perftriage.analysis.frames import receive as _receive

from .isolated import _child, died, raise_failure
from .native import native_sink_class, new_state
from .plans import FLOAT, INT, STR, RawChunk, dense
from .sink import build_graph
from .spec import ReadProgress

MIN_BYTES_PER_DECODER = 32 << 20  # less trace than this per process: a second one costs more than it gains
# at most so many (unless PERFTRIAGE_DECODERS says): each holds about 100 MiB (babeltrace2 and its
# buffers), and the one reading process merges every chunk, so more would wait on it (measured
# here on 2 cores only: 2 and 3 processes)
MAX_DECODERS = 8
_KIND_NAMES = {INT: "int", STR: "str", FLOAT: "float"}


def stream_files(reader) -> list[list[Path]]:
    """Per trace folder of ``reader``: the stream files its read path holds (a salvage view
    holds only those with whole packets)."""
    out = []
    for td, read_path in zip(reader.trace_dirs, reader._read_paths):
        rp = Path(read_path)
        out.append([rp / f.name for f in td.stream_files if (rp / f.name).exists()])
    return out


def decoders_for(reader, allowed: int) -> int:
    """How many decoding processes read ``reader``'s traces when ``allowed`` may: at most one per
    stream file and per MIN_BYTES_PER_DECODER of trace, and MAX_DECODERS. ``PERFTRIAGE_DECODERS=N`` sets it (at
    most one per stream file), for tests and benchmarks."""
    files = sum(len(f) for f in stream_files(reader))
    forced = os.environ.get("PERFTRIAGE_DECODERS", "")
    if forced.isdigit() and int(forced) >= 1:
        return max(1, min(int(forced), files))
    return max(1, min(allowed, MAX_DECODERS, files, reader.bytes_total // MIN_BYTES_PER_DECODER))


def stream_groups(files: list[list[Path]], k: int) -> list[dict[int, list[Path]]]:
    """The stream files shared out among at most ``k`` groups ({trace index: files}): the
    biggest first, each to the group with the fewest bytes so far."""
    items = sorted(((f.stat().st_size, i, str(f), f) for i, fs in enumerate(files) for f in fs),
                   key=lambda x: (-x[0], x[1], x[2]))
    loads = [0] * k
    groups: list[dict[int, list[Path]]] = [{} for _ in range(k)]
    for size, i, _, f in items:
        g = min(range(k), key=lambda j: (loads[j], j))
        loads[g] += size
        groups[g].setdefault(i, []).append(f)
    return [g for g in groups if g]


def make_views(reader, groups) -> tuple[tempfile.TemporaryDirectory, list[list[tuple[int, Path]]]]:
    """A temporary folder per group and trace, holding the trace's metadata and the group's
    stream files (links); per group: (trace index, view folder)."""
    tmp = tempfile.TemporaryDirectory(prefix="perftriage-split-")
    views = []
    for g, group in enumerate(groups):
        paths = []
        for i in sorted(group):
            view = Path(tmp.name) / str(g) / str(i) / reader.trace_dirs[i].path.name
            view.mkdir(parents=True)
            os.symlink((Path(reader._read_paths[i]) / "metadata").resolve(), view / "metadata")
            for f in group[i]:
                os.symlink(f.resolve(), view / f.name)
            paths.append((i, view))
        views.append(paths)
    return tmp, views


def _prepare(reader, views):
    """In a child: the (state, graph) decoding the stream files of ``views``."""
    for i, view in views:
        reader._read_paths[i] = view  # a stream names its trace by its folder (SinkState._trace_index_of)
    state = new_state(reader)
    graph = build_graph([reader.trace_dirs[i] for i, _ in views], [v for _, v in views], state,
                        native_sink_class(), indices=[i for i, _ in views])
    return state, graph


class _Rows:
    """Rows of one child's chunk in the parent's codes (``plan``: the child's plan index), the
    columns sparse as the child sent them (kind, rows, values): they become dense only in the
    merged chunk, written once where each row goes."""

    __slots__ = ("decoder", "ts", "cpu", "plan", "ctx", "cols")

    def __init__(self, decoder, ts, cpu, plan, ctx, cols):
        self.decoder, self.ts, self.cpu, self.plan = decoder, ts, cpu, plan
        self.ctx = ctx  # (rows, tid, pid) of the events with a thread context
        self.cols = cols

    def split(self, at: int) -> tuple["_Rows", "_Rows"]:
        """The rows before ``at`` and those from it."""
        def cut(rows, *values):
            i = int(np.searchsorted(rows, at))
            return (rows[:i], *(v[:i] for v in values)), (rows[i:] - at, *(v[i:] for v in values))

        ctx = cut(*self.ctx)
        cols = {name: (kind, cut(rows, vals)) for name, (kind, (rows, vals)) in self.cols.items()}
        first = _Rows(self.decoder, self.ts[:at], self.cpu[:at], self.plan[:at], ctx[0],
                      {name: (kind, parts[0]) for name, (kind, parts) in cols.items()})
        rest = _Rows(self.decoder, self.ts[at:], self.cpu[at:], self.plan[at:], ctx[1],
                     {name: (kind, parts[1]) for name, (kind, parts) in cols.items()})
        return first, rest


class _Decoder:
    """One decoding child as the parent sees it: its frames (read by a thread of their own, so
    that the child decodes on while the parent merges), its catalogue codes in the parent's, its
    rows not yet delivered."""

    def __init__(self, number: int, pid: int, fd: int, reader, traces: list[int]):
        self.number, self.pid, self.fd = number, pid, fd
        self.traces_read = traces  # indices of the trace folders it reads
        self.frames: queue.Queue = queue.Queue(maxsize=2)
        self._stop = threading.Event()
        self.names = list(range(len(reader.event_names)))  # child code -> parent code
        self.strings = list(range(len(reader.strings.strings)))
        self.hosts = list(range(len(reader.hosts)))
        self.columns: dict[str, str] = {}  # its column name -> the parent's
        self.tables: dict | None = None  # its plan tables, in the parent's codes
        self.trace_facts: list[dict] | None = None  # what it last said of each trace
        self.pending: list[_Rows] = []
        self.done = False  # its last frame came
        self.ended = False  # it said so (end, error or raise): nothing to kill
        self.last_ts: int | None = None
        self.failure: tuple[str, str] | None = None  # (path, cause) when its read stopped on damage
        self.thread = threading.Thread(target=self._feed, name=f"perftriage-decoder-{number}", daemon=True)

    @property
    def stopped_at(self) -> int:
        """The time past which nothing is delivered once its read stopped on damage: its last
        row's (before its first row: before everything)."""
        return self.last_ts if self.last_ts is not None else -(2**63)

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self.frames.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _feed(self) -> None:
        try:
            while True:
                frame = _receive(self.fd)
                if not self._put(frame) or frame is None or frame[0] in ("end", "error", "raise"):
                    return
        except Exception as exc:  # noqa: BLE001  (a pipe that fails: said by the parent)
            self._put(("raise", (type(exc).__name__, str(exc), ""), None))

    def close(self) -> None:
        self._stop.set()
        if not self.ended:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.thread.is_alive():
            self.thread.join()
        if self.pid:
            os.waitpid(self.pid, 0)
            self.pid = 0
        os.close(self.fd)

    # -- codes ------------------------------------------------------------------------------

    def apply_catalogues(self, reader, delta: dict) -> None:
        self.names.extend(reader.event_code(n) for n in delta["names"])
        self.strings.extend(reader.strings.code(s) for s in delta["strings"])
        self.hosts.extend(reader.host_code(h) for h in delta["hosts"])

    def apply_columns(self, reader, state, delta: dict) -> None:
        for name, cols in delta["event_fields"].items():
            have = reader.event_fields.setdefault(name, [])
            have.extend(c for c in (self.columns.get(c, c) for c in cols) if c not in have)
        state.asked |= {self.columns.get(c, c) for c in delta["asked"]}
        self.trace_facts = delta["traces"]

    def set_tables(self, tables: dict) -> None:
        names, hosts = np.asarray(self.names, np.int32), np.asarray(self.hosts, np.int16)
        self.tables = {"code": names[tables["code"]], "host": hosts[tables["host"]],
                       "kernel": tables["kernel"], "keep": tables["keep"]}

    def rows(self, raw, kinds: dict[str, int]) -> _Rows:
        """A child's chunk with the parent's string codes and column names (``kinds``: the
        parent's columns and their kinds, added to)."""
        strings = None
        cols = {}
        for name, (kind, rows, vals) in raw.columns.items():
            mine = self.columns.get(name)
            if mine is None:
                mine = self.columns[name] = _column_name(name, kind, kinds)
            if kind == STR and len(vals):
                if strings is None:
                    strings = np.asarray(self.strings, np.int64)
                vals = strings[vals]
            cols[mine] = (kind, (rows, vals))
        return _Rows(self, raw.ts, raw.cpu, raw.plan, (raw.ctx_rows, raw.ctx_tid, raw.ctx_pid), cols)


def _column_name(name: str, kind: int, kinds: dict[str, int]) -> str:
    """The parent's name of a child's column: its own, unless a column of that name holds
    another kind of value (then ``name:kind``, as SinkState.column names it)."""
    have = kinds.setdefault(name, kind)
    if have == kind:
        return name
    other = f"{name.split(':')[0]}:{_KIND_NAMES[kind]}"
    kinds.setdefault(other, kind)
    return other


def _merge_trace_facts(reader, base: list[dict], decoders: list[_Decoder]) -> None:
    """What the children said of each trace, added up into the parent's (from ``base``, the
    facts at the fork, which every child started from)."""
    for i, t in enumerate(reader.traces):
        said = [d.trace_facts[i] for d in decoders if d.trace_facts is not None]
        if not said:
            continue
        b = base[i]
        for key in ("hostname", "domain", "tracer", "env", "begin_ns", "end_ns"):
            for s in said:
                if s[key] != b[key]:
                    setattr(t, key, s[key])
                    break
        t.cpus.update(*(s["cpus"] for s in said))
        for key in ("discarded_events", "discarded_events_unknown", "discarded_packets"):
            setattr(t, key, b[key] + sum(s[key] - b[key] for s in said))
        for s in said:
            t.problems.extend(p for p in s["problems"] if p not in t.problems)


def _chunk(parts: list[_Rows], decoders: list[_Decoder], kinds: dict[str, int]):
    """(raw chunk, plan tables) of ``parts`` in time order; the plans of all children in one
    table. Each column is made once, at its merged size: every part's values are written where
    its rows go."""
    offsets, tables, at = {}, [], 0
    for d in decoders:
        if d.tables is not None:
            offsets[d.number] = at
            tables.append(d.tables)
            at += len(d.tables["code"])
    table = {k: np.concatenate([t[k] for t in tables]) for k in ("code", "host", "kernel", "keep")}
    starts = np.cumsum([0] + [len(p.ts) for p in parts])
    n = int(starts[-1])
    ts = np.concatenate([p.ts for p in parts])
    where = None  # where each row of the parts goes (None: where it is)
    if len({p.decoder.number for p in parts}) > 1:
        order = np.argsort(ts, kind="stable")  # runs in time order each: a merge of runs
        ts = ts[order]
        where = np.empty(n, np.int64)
        where[order] = np.arange(n)

    def placed(rows_of_part: np.ndarray, start: int) -> np.ndarray:
        rows = rows_of_part + start
        return rows if where is None else where[rows]

    def joined(arrays):
        out = np.empty(n, arrays[0].dtype)
        for a, start in zip(arrays, starts):
            out[slice(start, start + len(a)) if where is None else where[start:start + len(a)]] = a
        return out

    cpu = joined([p.cpu for p in parts])
    plan = joined([p.plan + offsets[p.decoder.number] for p in parts])
    cols = {}
    for name, kind in kinds.items():
        if "." in name and not any(name in p.cols for p in parts):
            continue  # nested fields live on few events: only where seen, as with one decoder
        out = dense(kind, n, np.empty(0, np.int64), np.empty(0))
        for p, start in zip(parts, starts):
            if name in p.cols:
                rows, vals = p.cols[name][1]
                out[placed(rows, start)] = vals
        cols[name] = out
    # the rows with a thread context, in any order (the reader scatters their values)
    ctx_rows = np.concatenate([placed(p.ctx[0], start) for p, start in zip(parts, starts)])
    tid = np.concatenate([p.ctx[1] for p in parts])
    pid = np.concatenate([p.ctx[2] for p in parts])
    return RawChunk(n, ts, cpu, plan, ctx_rows, tid, pid, cols), table


def _frame(d: _Decoder, reader, state, kinds: dict[str, int], base: list[dict], decoders: list[_Decoder]) -> None:
    """Take the next frame of child ``d`` (waits for it)."""
    frame = d.frames.get()
    if frame is None:  # ended without saying so: babeltrace2 aborted, or ran out of its memory
        d.done = True
        _, status = os.waitpid(d.pid, 0)
        d.pid = 0
        d.ended = True
        d.failure = (", ".join(str(reader.trace_dirs[i].path) for i in d.traces_read), died(status))
        return
    kind, item, delta = frame
    if delta is not None:
        d.apply_catalogues(reader, delta)
    if kind == "chunk":
        raw, tables = item
        d.set_tables(tables)
        if raw.n:
            d.pending.append(d.rows(raw, kinds))
            d.last_ts = int(raw.ts[-1])
    if delta is not None:
        d.apply_columns(reader, state, delta)
        _merge_trace_facts(reader, base, decoders)
    if kind == "error":
        d.done = d.ended = True
        d.failure = (item[0], item[3])
    elif kind == "raise":
        d.done = d.ended = True
        raise_failure(item)
    elif kind == "end":
        d.done = d.ended = True


def _merged(reader, state, decoders: list[_Decoder], base: list[dict]):
    """The reader's items (see CtfReader._produce) from the children's, merged by time."""
    kinds: dict[str, int] = {}
    produced = 0
    last_report = 0.0
    while True:
        for d in decoders:
            while not d.done and not d.pending:
                _frame(d, reader, state, kinds, base, decoders)
        reading = [d for d in decoders if not d.done]
        limit = min((d.pending[-1].ts[-1] for d in reading), default=None)
        failed = [d for d in decoders if d.failure is not None]
        stop = min((d.stopped_at for d in failed), default=None)
        last = stop is not None and (limit is None or limit >= stop)
        if stop is not None and (limit is None or stop < limit):
            limit = stop
        parts = []
        for d in decoders:
            keep = []
            for p in d.pending:
                at = len(p.ts) if limit is None else int(np.searchsorted(p.ts, limit, side="right"))
                now, later = p.split(at) if at < len(p.ts) else (p, None)
                if len(now.ts):
                    parts.append(now)
                if later is not None:
                    keep.append(later)
            d.pending = keep
        if parts:
            raw, tables = _chunk(parts, decoders, kinds)
            produced += raw.n
            state.last_ts = int(raw.ts[-1])
            yield "chunk", (raw, tables)
        if last:
            first = min(failed, key=lambda d: d.stopped_at)
            path, cause = first.failure
            yield "error", TraceReadError(path, f"{reader._stopped_at(state, produced)}: {cause}", produced)
            return
        if not reading:
            break
        if reader.progress is not None and time.monotonic() - last_report >= reader.progress_every:
            last_report = time.monotonic()
            yield "progress", reader._progress(state, produced)
    yield "progress", ReadProgress(produced, reader.bytes_total, reader.bytes_total)


def shared_out(reader, k: int):
    """The views of the stream files shared out among at most ``k`` processes, for
    :func:`in_children`; None where they cannot be made (no writable temporary folder: one
    process decodes)."""
    try:
        return make_views(reader, stream_groups(stream_files(reader), k))
    except OSError:
        return None


def in_children(reader, state, shared):
    """The reader's items (see CtfReader._produce), decoded by child processes each reading
    the stream files of one view of ``shared`` (:func:`shared_out`)."""
    tmp, views = shared
    base = [dict(t.__dict__, cpus=set(t.cpus), problems=list(t.problems)) for t in reader.traces]
    decoders: list[_Decoder] = []
    try:
        for number, group in enumerate(views):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - a child; checked through the parent
                os.close(r)
                for d in decoders:
                    os.close(d.fd)
                _child(reader, None, None, w, None, prepare=lambda g=group: _prepare(reader, g))
            os.close(w)
            decoders.append(_Decoder(number, pid, r, reader, [i for i, _ in group]))
        for d in decoders:
            d.thread.start()
        yield from _merged(reader, state, decoders, base)
    finally:
        for d in decoders:
            d.close()
        tmp.cleanup()
