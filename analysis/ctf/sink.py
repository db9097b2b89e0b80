"""babeltrace2's side of reading: the graph (one ``source.ctf.fs`` per trace folder, the C muxer,
our sink) and the sink component that decodes batches of raw message pointers with ``_native_bt``
functions into column buffers, with a plan per event class made once (which payload or context
members to decode, with which getter, into which column)."""

from __future__ import annotations

import os
from array import array
from typing import TYPE_CHECKING

import numpy as np

from perftriage.analysis.columns import MISSING
from perftriage.analysis.errors import InputError

from .bt2_support import error_text, import_bt2, take_error
from .names import canonical_event_name

if TYPE_CHECKING:
    from .reader import CtfReader

_TID_CONTEXT = ("vtid", "tid")
_PID_CONTEXT = ("vpid", "pid")

# Plan kinds for payload members.
_INT, _STR, _FLOAT = 0, 1, 2


MAX_CPUS = 1 << 16  # a packet's cpu_id beyond this is damage, not a CPU


class _ColumnBuf:
    """Sparse column being filled: row numbers and values, scattered into a dense column later."""

    __slots__ = ("name", "kind", "rows", "vals")

    def __init__(self, name: str, kind: int):
        self.name = name
        self.kind = kind
        self.rows = array("q")
        self.vals = array("d") if kind == _FLOAT else array("q")

    def dense(self, n: int) -> np.ndarray:
        rows = np.frombuffer(self.rows, dtype=np.int64) if len(self.rows) else np.empty(0, np.int64)
        if self.kind == _FLOAT:
            out = np.full(n, np.nan)
            out[rows] = np.frombuffer(self.vals, dtype=np.float64) if len(self.vals) else []
        elif self.kind == _STR:
            out = np.full(n, -1, np.int32)
            out[rows] = np.frombuffer(self.vals, dtype=np.int64) if len(self.vals) else []
        else:
            out = np.full(n, MISSING, np.int64)
            out[rows] = np.frombuffer(self.vals, dtype=np.int64) if len(self.vals) else []
        return out

    def clear(self) -> None:
        self.rows = array("q")
        self.vals = array("d") if self.kind == _FLOAT else array("q")


class _Plan:
    """Per event class: what to do with each of its events."""

    __slots__ = ("code", "host", "keep", "kernel", "ctx_tid", "ctx_pid", "members", "has_packet", "index", "has_ctx")

    def __init__(self, code, host, keep, kernel, ctx_tid, ctx_pid, members, has_packet):
        self.index = -1  # position in the sink's plan list (set when registered)
        self.has_ctx = ctx_tid is not None or ctx_pid is not None
        self.code = code
        self.host = host
        self.keep = keep
        self.kernel = kernel
        self.ctx_tid = ctx_tid
        self.ctx_pid = ctx_pid
        self.members = members  # list of (column buffer, member index, getter, kind)
        self.has_packet = has_packet


class SinkState:
    """Buffers the sink fills; owned by the reader, shared with the bt2 sink component."""

    def __init__(self, reader: CtfReader):
        self.reader = reader
        self.plans: dict[int, _Plan | None] = {}
        self.plan_list: list[_Plan] = []
        self._tables: dict | None = None
        self.packet_cpu: dict[int, int] = {}
        self.trace_of_class: dict[int, int] = {}  # trace class address -> trace index
        self.trace_hosts: dict[int, int] = {}  # trace index -> host code
        self.columns: dict[str, _ColumnBuf] = {}
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
        return len(self.ts)

    def register(self, plan: "_Plan") -> "_Plan":
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

    def column(self, name: str, kind: int) -> _ColumnBuf:
        buf = self.columns.get(name)
        if buf is None:
            buf = self.columns[name] = _ColumnBuf(name, kind)
        elif buf.kind != kind:
            # the same field name with another type in another event: keep both, apart
            return self.column(f"{name}:{('int', 'str', 'float')[kind]}", kind)
        return buf


def _make_sink_class():
    bt2 = import_bt2()
    from bt2 import _native_bt as nbt, event_class as bt2_event_class, field_class as fcm, message as bt2_message

    get_range = nbt.bt2_self_component_port_input_get_msg_range
    END = nbt.MESSAGE_ITERATOR_NEXT_STATUS_END
    AGAIN = nbt.MESSAGE_ITERATOR_NEXT_STATUS_AGAIN
    OK = nbt.MESSAGE_ITERATOR_NEXT_STATUS_OK
    get_type = nbt.message_get_type
    EV = nbt.MESSAGE_TYPE_EVENT
    PKT_BEGIN = nbt.MESSAGE_TYPE_PACKET_BEGINNING
    STREAM_BEGIN = nbt.MESSAGE_TYPE_STREAM_BEGINNING
    DISC_EV = nbt.MESSAGE_TYPE_DISCARDED_EVENTS
    DISC_PKT = nbt.MESSAGE_TYPE_DISCARDED_PACKETS
    borrow_ev = nbt.message_event_borrow_event_const
    borrow_cls = nbt.event_borrow_class_const
    borrow_cs = nbt.message_event_borrow_default_clock_snapshot_const
    get_ns = nbt.clock_snapshot_get_ns_from_origin
    borrow_pkt = nbt.event_borrow_packet_const
    put = nbt.message_put_ref
    payload_of = nbt.event_borrow_payload_field_const
    ctx_of = nbt.event_borrow_common_context_field_const
    member = nbt.field_structure_borrow_member_field_by_index_const
    get_signed = nbt.field_integer_signed_get_value
    get_unsigned = nbt.field_integer_unsigned_get_value
    get_string = nbt.field_string_get_value
    get_double = nbt.field_real_double_precision_get_value
    get_single = nbt.field_real_single_precision_get_value
    get_bool = nbt.field_bool_get_value
    field_type = nbt.field_get_class_type
    T_VARIANT = nbt.FIELD_CLASS_TYPE_VARIANT
    T_STRUCT = nbt.FIELD_CLASS_TYPE_STRUCTURE
    T_ARRAY = nbt.FIELD_CLASS_TYPE_ARRAY
    T_SIGNED = nbt.FIELD_CLASS_TYPE_SIGNED_INTEGER
    T_UNSIGNED = nbt.FIELD_CLASS_TYPE_UNSIGNED_INTEGER
    selected = nbt.field_variant_borrow_selected_option_field_const
    array_len = nbt.field_array_get_length
    element = nbt.field_array_borrow_element_field_by_index_const
    class_of = nbt.field_borrow_class_const
    int_bits = nbt.field_class_integer_get_field_value_range
    member_count = nbt.field_class_structure_get_member_count
    member_by_index = nbt.field_structure_borrow_member_field_by_index_const
    fc_member = nbt.field_class_structure_borrow_member_by_index_const
    fc_member_name = nbt.field_class_structure_member_get_name
    fc_member_class = nbt.field_class_structure_member_borrow_field_class_const
    fc_type = nbt.field_class_get_type
    trace_class_of_stream_class = nbt.stream_class_borrow_trace_class_const
    stream_class_of_event_class = nbt.event_class_borrow_stream_class_const

    def get_u64_as_i64(f):
        # unsigned 64-bit values (kernel addresses) keep their bits in an int64 column
        v = get_unsigned(f)
        return v - (1 << 64) if v >= (1 << 63) else v

    def getter_for(fc):
        """(getter, kind) for a field class, or None when we do not decode that type."""
        if isinstance(fc, fcm._SignedIntegerFieldClassConst):
            return get_signed, _INT
        if isinstance(fc, fcm._UnsignedIntegerFieldClassConst):
            return (get_u64_as_i64 if fc.field_value_range >= 64 else get_unsigned), _INT
        if isinstance(fc, fcm._StringFieldClassConst):
            return get_string, _STR
        if isinstance(fc, fcm._BoolFieldClassConst):
            return get_bool, _INT
        if isinstance(fc, fcm._DoublePrecisionRealFieldClassConst):
            return get_double, _FLOAT
        if isinstance(fc, fcm._SinglePrecisionRealFieldClassConst):
            return get_single, _FLOAT
        return None

    def through_variants(f):
        t = field_type(f)
        while t & T_VARIANT:
            f = selected(f)
            t = field_type(f)
        return f, t

    def scalar(f):
        """An integer leaf (or an array of integers, folded into one integer), else MISSING."""
        f, t = through_variants(f)
        if t & T_SIGNED == T_SIGNED:
            return get_signed(f)
        if t & T_UNSIGNED == T_UNSIGNED:
            return get_u64_as_i64(f)
        if t & T_ARRAY:
            n = array_len(f)
            if n == 0:
                return MISSING
            e = element(f, 0)
            if field_type(e) & T_UNSIGNED != T_UNSIGNED:
                return MISSING
            w = int_bits(class_of(e))  # arrays are homogeneous: one width
            v = get_unsigned(e)
            for i in range(1, n):
                v = (v << w) | get_unsigned(element(f, i))
            if w * n > 63:  # IPv6 addresses: a 63-bit fold, good for matching, not for printing
                folded = 0
                while v:
                    folded ^= v & ((1 << 63) - 1)
                    v >>= 63
                v = folded
            return v
        return MISSING

    def nested_group(paths, bufs, state):
        """One getter for every dotted field under one top-level member: ``paths`` (tuples of
        member names) lead to integers, ``bufs`` are their columns. Per event it walks the tree
        of paths once (common prefixes once, each variant resolved once), returns the first
        field's value (the plan appends it) and appends the others itself, only where present
        (sparse columns: the rest stay MISSING). An event whose variant selects an empty
        structure (a header of unknown type) costs a handful of calls."""
        values = [MISSING] * len(paths)
        tree: dict = {}  # name -> [leaf index or None, subtree]
        for i, path in enumerate(paths):
            node = tree
            for d, name in enumerate(path):
                entry = node.setdefault(name, [None, {}])
                if d == len(path) - 1:
                    entry[0] = i
                node = entry[1]
        all_missing = [MISSING] * len(paths)
        rest = [(i, bufs[i].rows.append, bufs[i]) for i in range(1, len(paths))]

        plans: dict = {}  # (node, structure class) -> [(leaf index, subtree, member index, getter)]

        def plan_of(node, cls, key):
            """Where each name of ``node`` sits in structures of class ``cls``, and how to read
            it: found once per class (a variant's option), then by index with a fixed getter."""
            names = {}
            for q in range(member_count(cls)):
                mem = fc_member(cls, q)
                names[fc_member_name(mem)] = (q, fc_type(fc_member_class(mem)))
            out = []
            for name, (i, sub) in node.items():
                hit = names.get(name) or names.get("_" + name)
                if hit is None:
                    continue
                q, t = hit
                getter = (get_signed if t & T_SIGNED == T_SIGNED else get_u64_as_i64 if t & T_UNSIGNED == T_UNSIGNED
                          else scalar)
                out.append((i, sub, q, getter))
            plans[key] = out
            return out

        def fill(f, node):
            f, t = through_variants(f)
            if not t & T_STRUCT:
                return
            cls = class_of(f)
            key = (id(node), int(cls))
            plan = plans.get(key)
            if plan is None:
                plan = plan_of(node, cls, key)
            for i, sub, q, getter in plan:
                g = member_by_index(f, q)
                if i is not None:
                    values[i] = getter(g)
                if sub:
                    fill(g, sub)

        def get(f):
            values[:] = all_missing
            g, t = through_variants(f)
            if not (t & T_STRUCT and member_count(class_of(g)) == 0):
                fill(g, tree)
                row = len(state.ts) - 1  # this event's row: the plan appended its time first
                for i, _, buf in rest:
                    v = values[i]
                    if v != MISSING:
                        buf.rows.append(row)
                        buf.vals.append(v)
            return values[0]

        return get

    def member_index(struct_fc, name):
        if struct_fc is None:
            return None, None
        for i, (k, m) in enumerate(struct_fc.items()):
            if k == name or k == "_" + name:
                return i, m.field_class
        return None, None

    class ChunkSink(bt2._UserSinkComponent):
        def __init__(self, config, params, obj):
            self._state: SinkState = obj
            self._port = self._add_input_port("in")

        def _user_graph_is_configured(self):
            self._iter = self._create_message_iterator(self._port)

        def _plan(self, ev_ptr, cls_ptr) -> _Plan | None:
            st = self._state
            reader = st.reader
            spec = reader.spec
            ec = bt2_event_class._EventClassConst._create_from_ptr_and_get_ref(cls_ptr)
            name = canonical_event_name(ec.name)
            tc_addr = int(trace_class_of_stream_class(stream_class_of_event_class(cls_ptr)))
            trace_index = st.trace_of_class.get(tc_addr, 0)
            meta = reader.traces[trace_index]
            kernel = meta.domain == "kernel"
            sc = ec.stream_class
            ctx_fc = sc.event_common_context_field_class
            ctx_tid = context_getter(ctx_fc, _TID_CONTEXT)
            ctx_pid = context_getter(ctx_fc, _PID_CONTEXT)
            keep = spec.keeps(name)
            wanted = spec.fields_for(name) if keep else []
            internal = []
            if kernel and ctx_tid is None and name == "sched_switch":
                internal = [f for f in ("prev_tid", "next_tid") if f not in wanted]
            if not keep and not internal:
                return None
            members = []
            payload_fc = ec.payload_field_class
            if "*" in wanted:
                star = [k.lstrip("_") for k in payload_fc.keys()] if payload_fc is not None else []
                wanted = [w for w in wanted if w != "*"] + [k for k in star if k not in wanted]
            decoded = reader.event_fields.setdefault(name, [])
            groups: dict[str, list] = {}  # top-level member -> its dotted fields, in order
            for fname in wanted:
                if "." in fname:
                    groups.setdefault(fname.split(".")[0], []).append(fname)
            for fname in list(wanted) + internal:
                top, *inner = fname.split(".")
                if inner and groups.get(top, [None])[0] != fname:
                    continue  # decoded by its group's getter (the group's first field)
                idx, fc = member_index(payload_fc, top)
                source = "payload"
                if idx is None:
                    idx, fc = member_index(ctx_fc, top)
                    source = "context"
                if idx is None:
                    continue
                if inner:
                    names = groups[top]
                    bufs = [st.column(n, _INT) for n in names]
                    for b_ in bufs:
                        st.asked.add(b_.name)
                        if b_.name not in decoded:
                            decoded.append(b_.name)
                    g = (nested_group([tuple(n.split(".")[1:]) for n in names], bufs, st), _INT)
                else:
                    g = getter_for(fc)
                if g is None:
                    continue
                getter, kind = g
                buf = st.column(fname, kind)
                if fname in wanted:
                    st.asked.add(buf.name)
                    if buf.name not in decoded:
                        decoded.append(buf.name)
                members.append((buf, idx, getter, kind, source == "context"))
            return st.register(_Plan(
                code=reader.event_code(name),
                host=st.trace_hosts.get(trace_index, 0),
                keep=1 if keep else 0,
                kernel=1 if kernel else 0,
                ctx_tid=ctx_tid,
                ctx_pid=ctx_pid,
                members=members,
                has_packet=sc.supports_packets,
            ))

        def _other_message(self, msg_ptr, mtype):
            """Rare messages, handled through the public API (which takes the reference)."""
            st = self._state
            reader = st.reader
            msg = bt2_message._create_from_ptr(msg_ptr)
            if mtype == STREAM_BEGIN:
                stream = msg.stream
                trace = stream.trace
                tc_addr = trace.cls.addr
                if tc_addr not in st.trace_of_class:
                    index = self._trace_index_of(stream)
                    st.trace_of_class[tc_addr] = index
                    meta = reader.traces[index]
                    env = {k: _plain(v) for k, v in trace.environment.items()}
                    meta.env = env
                    meta.hostname = reader._host_names[index] or str(env.get("hostname", "?"))
                    meta.domain = str(env.get("domain", "?"))
                    tracer = env.get("tracer_name", "?")
                    ver = ".".join(str(env[k]) for k in ("tracer_major", "tracer_minor", "tracer_patchlevel") if k in env)
                    meta.tracer = f"{tracer} {ver}".strip()
                    st.trace_hosts[index] = reader.host_code(meta.hostname)
            elif mtype == PKT_BEGIN:
                pkt = msg.packet
                ctx = pkt.context_field
                cpu = -1
                if ctx is not None and "cpu_id" in ctx:
                    cpu = int(ctx["cpu_id"])
                index = st.trace_of_class.get(pkt.stream.trace.cls.addr, 0)
                if not 0 <= cpu < MAX_CPUS and cpu != -1:
                    t = reader.traces[index]
                    msg_ = f"packets with cpu_id {cpu} (not a CPU number): their events are on no CPU"
                    if msg_ not in t.problems and len(t.problems) < 20:
                        t.problems.append(msg_)
                    cpu = -1
                st.packet_cpu[pkt.addr] = cpu
                if cpu >= 0:
                    reader.traces[index].cpus.add(cpu)
            elif mtype == DISC_EV:
                index = st.trace_of_class.get(msg.stream.trace.cls.addr, 0)
                count = msg.count
                if count is None:
                    reader.traces[index].discarded_events_unknown += 1
                else:
                    reader.traces[index].discarded_events += int(count)
            elif mtype == DISC_PKT:
                index = st.trace_of_class.get(msg.stream.trace.cls.addr, 0)
                count = msg.count
                reader.traces[index].discarded_packets += int(count) if count is not None else 1

        def _trace_index_of(self, stream) -> int:
            """Which of our trace folders a stream belongs to (by its file path, else by order)."""
            reader = self._state.reader
            name = os.path.dirname(stream.name or "")
            for i, read_path in enumerate(reader._read_paths):
                if name == str(read_path) or os.path.abspath(name) == os.path.abspath(read_path):
                    return i
            return len(self._state.trace_of_class) % max(1, len(reader.trace_dirs))

        def _user_consume(self):
            try:
                self._consume()
            except (bt2.Stop, bt2.TryAgain):
                raise
            except Exception as exc:  # a bug of ours, not a bad trace: surface it as is
                self._state.internal_error = exc
                raise bt2.Stop from None

        def _consume(self):
            st = self._state
            status, msgs = get_range(self._iter._ptr)
            if status == END:
                raise bt2.Stop
            if status == AGAIN:
                raise bt2.TryAgain
            if status != OK:
                # the muxer or a source failed (time going backwards between packets, a damaged
                # packet...): keep babeltrace2's error; the reader delivers what was read, then
                # reports it
                st.read_error = take_error(bt2, f"message iterator status {status}")
                raise bt2.Stop
            plans = st.plans
            packet_cpu = st.packet_cpu
            ts_a = st.ts.append
            cpu_a = st.cpu.append
            plan_a = st.plan.append
            ctx_rows_a = st.ctx_rows.append
            ctx_tid_a = st.ctx_tid.append
            ctx_pid_a = st.ctx_pid.append
            intern = st.reader.strings.code
            n = len(st.ts)
            ts = None
            for m in msgs:
                mtype = get_type(m)
                if mtype != EV:
                    self._other_message(m, mtype)
                    continue
                ev = borrow_ev(m)
                cls_ptr = borrow_cls(ev)
                key = int(cls_ptr)
                try:
                    plan = plans[key]
                except KeyError:
                    plan = plans[key] = self._plan(ev, cls_ptr)
                if plan is None:
                    put(m)
                    continue
                ts = get_ns(borrow_cs(m))[1]
                ts_a(ts)
                cpu_a(packet_cpu.get(int(borrow_pkt(ev)), -1) if plan.has_packet else -1)
                plan_a(plan.index)
                if plan.has_ctx:
                    ctx = ctx_of(ev)
                    ctx_rows_a(n)
                    ctx_tid_a(plan.ctx_tid[1](member(ctx, plan.ctx_tid[0])) if plan.ctx_tid is not None else -1)
                    ctx_pid_a(plan.ctx_pid[1](member(ctx, plan.ctx_pid[0])) if plan.ctx_pid is not None else -1)
                if plan.members:
                    pl = None
                    ctx = None
                    for buf, idx, getter, kind, in_ctx in plan.members:
                        if in_ctx:
                            if ctx is None:
                                ctx = ctx_of(ev)
                            f = member(ctx, idx)
                        else:
                            if pl is None:
                                pl = payload_of(ev)
                            f = member(pl, idx)
                        v = getter(f)
                        buf.rows.append(n)
                        buf.vals.append(intern(v) if kind == _STR else v)
                n += 1
                put(m)
            if ts is not None:
                st.last_ts = ts

    def context_getter(struct_fc, names):
        """(member index, integer getter) of the first of ``names`` in a context, or None."""
        for name in names:
            idx, fc = member_index(struct_fc, name)
            if idx is not None:
                g = getter_for(fc)
                if g is not None and g[1] == _INT:
                    return idx, g[0]
        return None

    return ChunkSink


def _plain(v):
    """bt2 value -> plain Python value."""
    for t in (int, float, str):
        try:
            if isinstance(v, t) or type(v).__name__.lower().find(t.__name__) >= 0:
                return t(v)
        except (TypeError, ValueError):
            pass
    return str(v)


_SINK_CLASS = None


def _sink_class():
    """The sink class needs bt2 at definition time; it is built on first use."""
    global _SINK_CLASS
    if _SINK_CLASS is None:
        _SINK_CLASS = _make_sink_class()
    return _SINK_CLASS


def build_graph(trace_dirs, read_paths, sink_obj):
    """The bt2 graph reading ``read_paths`` (one per trace folder of ``trace_dirs``) into ``sink_obj``."""
    bt2 = import_bt2()
    graph = bt2.Graph()
    fs = bt2.find_plugin("ctf").source_component_classes["fs"]
    muxer = bt2.find_plugin("utils").filter_component_classes["muxer"]
    quiet = bt2.LoggingLevel.NONE
    ports = []
    for i, (td, read_path) in enumerate(zip(trace_dirs, read_paths)):
        try:
            src = graph.add_component(fs, f"src{i}", params={"inputs": [str(read_path)]}, logging_level=quiet)
        except bt2._Error as exc:
            msg, _ = error_text(exc)
            raise InputError(td.path, f"cannot open CTF trace: {msg}") from None
        ports.extend(src.output_ports.values())
    mux = graph.add_component(muxer, "mux", logging_level=quiet)
    for i, port in enumerate(ports):
        graph.connect_ports(port, mux.input_ports[f"in{i}"])
    sink = graph.add_component(_sink_class(), "sink", obj=sink_obj, logging_level=quiet)
    graph.connect_ports(mux.output_ports["out"], sink.input_ports["in"])
    return graph
