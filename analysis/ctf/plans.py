"""What the reader does with each event class and each rare message, whichever decoder runs
(the Python loop of sink.py or the C one of native.py): both describe an event class as a
:class:`ClassInfo` (names and kinds of its members) and streams, packets and discarded events as
plain values, and this module decides the plan (which members to decode into which columns)
and keeps the buffers and per-trace facts (:class:`SinkState`)."""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from perftriage.analysis.columns import MISSING

from . import perf
from .names import canonical_event_name

if TYPE_CHECKING:
    from .reader import CtfReader

_TID_CONTEXT = ("vtid", "tid")
_PID_CONTEXT = ("vpid", "pid")

# Column kinds.
INT, STR, FLOAT = 0, 1, 2

# Member kinds (what the field class is), the column kind each decodes to.
MEMBER_COLUMN_KIND = {
    "signed": INT, "unsigned": INT, "unsigned64": INT, "bool": INT,
    "string": STR, "double": FLOAT, "single": FLOAT,
}
NESTED = "nested"  # dotted fields under one member, each decoded to an integer

MAX_CPUS = 1 << 16  # a packet's cpu_id beyond this is damage, not a CPU


@dataclass(frozen=True)
class ClassInfo:
    """An event class as the decoders describe it: ``context``/``payload`` list (name, member
    kind) per structure member, None when the class has no such structure."""

    address: int
    name: str | None
    trace_class: int
    supports_packets: bool
    context: list | None
    payload: list | None


@dataclass(frozen=True)
class MemberPlan:
    """One member to decode: into ``buf``, from member ``index`` of the payload or the context,
    read as ``kind`` (a member kind, or NESTED with ``paths``: (column, names under the member))."""

    buf: "ColumnBuf"
    index: int
    kind: str
    in_ctx: bool
    paths: tuple = ()


class ColumnBuf:
    """Sparse column being filled (Python decoder): row numbers and values, scattered into a
    dense column later. ``index``: its number in the C decoder."""

    __slots__ = ("name", "kind", "rows", "vals", "index")

    def __init__(self, name: str, kind: int, index: int = -1):
        self.name = name
        self.kind = kind
        self.index = index
        self.clear()

    def clear(self) -> None:
        self.rows = array("q")
        self.vals = array("d") if self.kind == FLOAT else array("q")


def dense(kind: int, n: int, rows: np.ndarray, vals: np.ndarray) -> np.ndarray:
    if kind == FLOAT:
        out = np.full(n, np.nan)
    elif kind == STR:
        out = np.full(n, -1, np.int32)
    else:
        out = np.full(n, MISSING, np.int64)
    if len(rows):
        out[rows] = vals
    return out


class Plan:
    """Per event class: what to do with each of its events."""

    __slots__ = ("code", "host", "keep", "kernel", "ctx_tid", "ctx_pid", "members", "has_packet", "index", "has_ctx",
                 "compiled")

    def __init__(self, code, host, keep, kernel, ctx_tid, ctx_pid, members, has_packet):
        self.index = -1  # position in the state's plan list (set when registered)
        self.has_ctx = ctx_tid is not None or ctx_pid is not None
        self.code = code
        self.host = host
        self.keep = keep
        self.kernel = kernel
        self.ctx_tid = ctx_tid  # (member index, member kind) or None
        self.ctx_pid = ctx_pid
        self.members: list[MemberPlan] = members
        self.has_packet = has_packet
        self.compiled = None  # the Python decoder's getters, made on first use


@dataclass(frozen=True)
class RawChunk:
    """The columns of a chunk as decoded, before the reader expands plans and tracks tasks."""

    n: int
    ts: np.ndarray
    cpu: np.ndarray
    plan: np.ndarray
    ctx_rows: np.ndarray
    ctx_tid: np.ndarray
    ctx_pid: np.ndarray
    columns: dict  # name -> dense column, or (kind, rows, values) when ``sparse``
    sparse: bool = False

    def densified(self) -> "RawChunk":
        if not self.sparse:
            return self
        cols = {name: dense(kind, self.n, rows, vals) for name, (kind, rows, vals) in self.columns.items()}
        return RawChunk(self.n, self.ts, self.cpu, self.plan, self.ctx_rows, self.ctx_tid, self.ctx_pid, cols)


class SinkState:
    """Buffers and catalogues the decoder fills; owned by the reader, shared with the sink.

    With a C ``decoder`` (native.py), the per-event buffers live in it; the Python decoder appends
    to the arrays here."""

    def __init__(self, reader: "CtfReader", decoder=None):
        self.reader = reader
        self.decoder = decoder
        self.plans: dict[int, Plan | None] = {}
        self.plan_list: list[Plan] = []
        self._tables: dict | None = None
        self.packet_cpu: dict[int, int] = {}
        self.trace_of_class: dict[int, int] = {}  # trace class address -> trace index
        self.trace_hosts: dict[int, int] = {}  # trace index -> host code
        self.columns: dict[str, ColumnBuf] = {}
        self.asked: set[str] = set()
        self.last_ts: int | None = None
        self.internal_error: BaseException | None = None  # a bug of ours: raised as is
        self.read_error: BaseException | None = None  # babeltrace2 could read no further
        self.reset()

    def reset(self):
        self.ts = array("q")
        self.cpu = array("i")
        self.plan = array("i")
        self.ctx_rows = array("q")
        self.ctx_tid = array("q")
        self.ctx_pid = array("q")
        for buf in self.columns.values():
            buf.clear()

    @property
    def n(self) -> int:
        return self.decoder.n if self.decoder is not None else len(self.ts)

    def register(self, plan: Plan) -> Plan:
        plan.index = len(self.plan_list)
        self.plan_list.append(plan)
        self._tables = None
        return plan

    def plan_tables(self) -> dict[str, np.ndarray]:
        """Per plan index: event code, host, kernel?, kept? (to expand the per-event plan ids)."""
        if self._tables is None:
            pl = self.plan_list
            self._tables = {
                "code": np.array([p.code for p in pl], np.int32),
                "host": np.array([p.host for p in pl], np.int16),
                "kernel": np.array([p.kernel for p in pl], bool),
                "keep": np.array([p.keep for p in pl], bool),
            }
        return self._tables

    def column(self, name: str, kind: int) -> ColumnBuf:
        buf = self.columns.get(name)
        if buf is None:
            index = self.decoder.add_column(kind) if self.decoder is not None else -1
            buf = self.columns[name] = ColumnBuf(name, kind, index)
        elif buf.kind != kind:
            # the same field name with another type in another event: keep both, apart
            return self.column(f"{name}:{('int', 'str', 'float')[kind]}", kind)
        return buf

    # -- the chunk --------------------------------------------------------------------------

    def take(self, sparse: bool = False) -> RawChunk:
        """The chunk decoded so far; the buffers start a new one. ``sparse`` (C decoder): the
        columns as (kind, rows, values), a fraction of their dense size (to send them elsewhere)."""
        if self.decoder is not None:
            return self._take_native(sparse)
        n = self.n

        def arr(a, dtype):
            return np.frombuffer(a, dtype=dtype).copy() if len(a) else np.empty(0, dtype)

        cols = {}
        for name, buf in self.columns.items():
            if len(buf.rows) or "." not in name:  # nested fields live on few events: only where seen
                vals = arr(buf.vals, np.float64 if buf.kind == FLOAT else np.int64)
                cols[name] = dense(buf.kind, n, arr(buf.rows, np.int64), vals)
        raw = RawChunk(n, arr(self.ts, np.int64), arr(self.cpu, np.int32), arr(self.plan, np.int32),
                       arr(self.ctx_rows, np.int64), arr(self.ctx_tid, np.int64), arr(self.ctx_pid, np.int64), cols)
        self.reset()
        return raw

    def _take_native(self, sparse: bool = False) -> RawChunk:
        n, ts, cpu, plan, ctx_rows, ctx_tid, ctx_pid, colbufs, packets = self.decoder.take()
        cols = {}
        for name, buf in self.columns.items():
            rows, vals = colbufs[buf.index]
            if len(rows) or "." not in name:
                vals = np.frombuffer(vals, np.float64 if buf.kind == FLOAT else np.int64)
                rows = np.frombuffer(rows, np.int64)
                cols[name] = (buf.kind, rows, vals) if sparse else dense(buf.kind, n, rows, vals)
        if len(packets):
            pairs = np.unique(np.frombuffer(packets, np.int64).reshape(-1, 2), axis=0)
            for tc, cpu_id in pairs.tolist():
                self.packet_seen(tc, cpu_id)
        return RawChunk(n, np.frombuffer(ts, np.int64), np.frombuffer(cpu, np.int32), np.frombuffer(plan, np.int32),
                        np.frombuffer(ctx_rows, np.int64), np.frombuffer(ctx_tid, np.int64),
                        np.frombuffer(ctx_pid, np.int64), cols, sparse)

    # -- rare messages ----------------------------------------------------------------------

    def stream_begins(self, trace_class: int, stream_name: str | None, env: dict) -> None:
        """The first stream of a trace: which of our folders it is, its host, domain and tracer."""
        if trace_class in self.trace_of_class:
            return
        reader = self.reader
        index = self._trace_index_of(stream_name)
        self.trace_of_class[trace_class] = index
        meta = reader.traces[index]
        meta.env = env
        meta.hostname = reader._host_names[index] or str(env.get("hostname") or env.get("host") or "?")
        meta.domain = str(env.get("domain", "?"))
        tracer = env.get("tracer_name", "?")
        ver = ".".join(str(env[k]) for k in ("tracer_major", "tracer_minor", "tracer_patchlevel") if k in env)
        meta.tracer = f"{tracer} {ver}".strip()
        self.trace_hosts[index] = reader.host_code(meta.hostname)

    def _trace_index_of(self, stream_name: str | None) -> int:
        """Which of our trace folders a stream belongs to (by its file path, else by order)."""
        reader = self.reader
        name = os.path.dirname(stream_name or "")
        for i, read_path in enumerate(reader._read_paths):
            if name == str(read_path) or os.path.abspath(name) == os.path.abspath(read_path):
                return i
        return len(self.trace_of_class) % max(1, len(reader.trace_dirs))

    def packet_cpu_id(self, trace_class: int, cpu: int | None) -> int:
        """A packet's cpu_id as the CPU of its events: -1 when absent or not a CPU number (said)."""
        if cpu is None:
            return -1
        if not 0 <= cpu < MAX_CPUS and cpu != -1:
            t = self.reader.traces[self.trace_of_class.get(trace_class, 0)]
            msg = f"packets with cpu_id {cpu} (not a CPU number): their events are on no CPU"
            if msg not in t.problems and len(t.problems) < 20:
                t.problems.append(msg)
            return -1
        self.packet_seen(trace_class, cpu)
        return cpu

    def packet_seen(self, trace_class: int, cpu: int) -> None:
        if cpu >= 0:
            self.reader.traces[self.trace_of_class.get(trace_class, 0)].cpus.add(cpu)

    def discarded(self, trace_class: int, what: str, count: int | None) -> None:
        meta = self.reader.traces[self.trace_of_class.get(trace_class, 0)]
        if what == "events":
            if count is None:
                meta.discarded_events_unknown += 1
            else:
                meta.discarded_events += int(count)
        else:
            meta.discarded_packets += int(count) if count is not None else 1

    # -- plans ------------------------------------------------------------------------------

    def make_plan(self, info: ClassInfo) -> Plan | None:
        """What to decode from events of this class (None: nothing, they are skipped)."""
        reader = self.reader
        spec = reader.spec
        trace_index = self.trace_of_class.get(info.trace_class, 0)
        meta = reader.traces[trace_index]
        kernel = meta.domain == "kernel"
        by_perf = perf.is_perf(meta.tracer)
        name = perf.event_name(info.name) if by_perf else canonical_event_name(info.name)
        ctx_tid = _context_member(info.context, _TID_CONTEXT)
        ctx_pid = _context_member(info.context, _PID_CONTEXT)
        internal = []
        if name in perf.RAW and by_perf:  # system calls by number: named per event (reader.py)
            keep = perf.raw_keeps(spec, name)
            wanted = perf.raw_fields(spec, name) if keep else []
            internal = [perf.SYSCALL_ID_FIELD]
        else:
            keep = spec.keeps(name)
            wanted = spec.fields_for(name) if keep else []
        if kernel and ctx_tid is None and name == "sched_switch":
            internal += [f for f in ("prev_tid", "next_tid") if f not in wanted]
        if by_perf and (keep or internal) and ctx_tid is None:  # each event's thread and process
            internal += [f for f in (perf.TID_FIELD, perf.PID_FIELD) if f not in wanted]
        renamed = perf.FIELDS.get(name, {}) if by_perf else {}
        if not keep and not internal:
            return None
        if "*" in wanted:
            star = [k.lstrip("_") for k, _ in info.payload] if info.payload is not None else []
            if by_perf:  # perf's bookkeeping in every event (its thread and process are the event's own)
                star = [k for k in star if k not in perf.BOOKKEEPING]
            wanted = [w for w in wanted if w != "*"] + [k for k in star if k not in wanted]
        decoded = reader.event_fields.setdefault(name, [])
        groups: dict[str, list] = {}  # top-level member -> its dotted fields, in order
        for fname in wanted:
            if "." in fname:
                groups.setdefault(fname.split(".")[0], []).append(fname)
        members = []
        for fname in list(wanted) + internal:
            top, *inner = fname.split(".")
            if inner and groups.get(top, [None])[0] != fname:
                continue  # decoded with its group (under the group's first field)
            if top in renamed:
                if renamed[top] is None:
                    continue  # perf records no such field
                idx, kind = _member_index(info.payload, renamed[top])
            else:
                idx, kind = _member_index(info.payload, top)
            in_ctx = False
            if idx is None:
                idx, kind = _member_index(info.context, top)
                in_ctx = True
            if idx is None:
                continue
            paths = ()
            if inner:
                names = groups[top]
                bufs = [self.column(n, INT) for n in names]
                for b_ in bufs:
                    self.asked.add(b_.name)
                    if b_.name not in decoded:
                        decoded.append(b_.name)
                paths = tuple((b_, tuple(n.split(".")[1:])) for b_, n in zip(bufs, names))
                kind, col_kind = NESTED, INT
            else:
                col_kind = MEMBER_COLUMN_KIND.get(kind)
                if col_kind is None:
                    continue
            buf = self.column(fname, col_kind)
            if fname in wanted:
                self.asked.add(buf.name)
                if buf.name not in decoded:
                    decoded.append(buf.name)
            members.append(MemberPlan(buf, idx, kind, in_ctx, paths))
        return self.register(Plan(
            code=reader.event_code(name),
            host=self.trace_hosts.get(trace_index, 0),
            keep=1 if keep else 0,
            kernel=1 if kernel else 0,
            ctx_tid=ctx_tid,
            ctx_pid=ctx_pid,
            members=members,
            has_packet=info.supports_packets,
        ))


def _member_index(members, name):
    if members is None:
        return None, None
    for i, (k, kind) in enumerate(members):
        if k == name or k == "_" + name:
            return i, kind
    return None, None


def _context_member(members, names):
    """(member index, member kind) of the first of ``names`` in a context that is an integer."""
    for name in names:
        idx, kind = _member_index(members, name)
        if idx is not None and MEMBER_COLUMN_KIND.get(kind) == INT:
            return idx, kind
    return None
