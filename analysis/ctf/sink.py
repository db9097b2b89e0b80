"""babeltrace2's side of reading: the graph (one ``source.ctf.fs`` per trace folder, the C muxer,
a sink of ours) and the Python decoder, a sink component that decodes batches of raw message
pointers with ``_native_bt`` functions into the column buffers of plans.py. The C decoder
(native.py) is the same sink with the per-event loop in C; both describe event classes and
rare messages to plans.py in the same plain form, so they decode the same columns."""

from __future__ import annotations

from perftriage.analysis.columns import MISSING
from perftriage.analysis.errors import InputError

from .bt2_support import error_text, import_bt2, take_error
from .plans import NESTED, STR, ClassInfo, SinkState

__all__ = ["SinkState", "build_graph", "class_info", "python_sink_class"]


def member_kind(fc) -> str:
    """A bt2 field class as a plans.py member kind."""
    from bt2 import field_class as fcm

    if isinstance(fc, fcm._SignedIntegerFieldClassConst):
        return "signed"
    if isinstance(fc, fcm._UnsignedIntegerFieldClassConst):
        return "unsigned64" if fc.field_value_range >= 64 else "unsigned"
    if isinstance(fc, fcm._StringFieldClassConst):
        return "string"
    if isinstance(fc, fcm._BoolFieldClassConst):
        return "bool"
    if isinstance(fc, fcm._DoublePrecisionRealFieldClassConst):
        return "double"
    if isinstance(fc, fcm._SinglePrecisionRealFieldClassConst):
        return "single"
    return "other"


def _members(struct_fc):
    if struct_fc is None:
        return None
    return [(k, member_kind(m.field_class)) for k, m in struct_fc.items()]


def class_info(cls_ptr) -> ClassInfo:
    """An event class (a raw pointer) described for plans.py."""
    from bt2 import _native_bt as nbt, event_class as bt2_event_class

    ec = bt2_event_class._EventClassConst._create_from_ptr_and_get_ref(cls_ptr)
    sc = ec.stream_class
    tc = nbt.stream_class_borrow_trace_class_const(nbt.event_class_borrow_stream_class_const(cls_ptr))
    return ClassInfo(address=int(cls_ptr), name=ec.name, trace_class=int(tc), supports_packets=sc.supports_packets,
                     context=_members(sc.event_common_context_field_class), payload=_members(ec.payload_field_class))


def _plain(v):
    """bt2 value -> plain Python value."""
    for t in (int, float, str):
        try:
            if isinstance(v, t) or type(v).__name__.lower().find(t.__name__) >= 0:
                return t(v)
        except (TypeError, ValueError):
            pass
    return str(v)


def rare_message(st: SinkState, msg) -> None:
    """A stream beginning, packet beginning or discarded events/packets (a bt2 message object)."""
    import bt2

    if isinstance(msg, bt2._StreamBeginningMessageConst):
        stream = msg.stream
        trace = stream.trace
        st.stream_begins(trace.cls.addr, stream.name, {k: _plain(v) for k, v in trace.environment.items()})
    elif isinstance(msg, bt2._PacketBeginningMessageConst):
        pkt = msg.packet
        ctx = pkt.context_field
        cpu = int(ctx["cpu_id"]) if ctx is not None and "cpu_id" in ctx else None
        st.packet_cpu[pkt.addr] = st.packet_cpu_id(pkt.stream.trace.cls.addr, cpu)
    elif isinstance(msg, bt2._DiscardedEventsMessageConst):
        count = msg.count
        st.discarded(msg.stream.trace.cls.addr, "events", None if count is None else int(count))
    elif isinstance(msg, bt2._DiscardedPacketsMessageConst):
        count = msg.count
        st.discarded(msg.stream.trace.cls.addr, "packets", None if count is None else int(count))


class SinkCommon:
    """What both decoders' sink components do the same (mixed into each, before bt2's class):
    the input port, the message iterator, and a failure of ours kept for the reader."""

    def __init__(self, config, params, obj):
        self._state: SinkState = obj
        self._port = self._add_input_port("in")

    def _user_graph_is_configured(self):
        self._iter = self._create_message_iterator(self._port)

    def _user_consume(self):
        import bt2

        try:
            self._consume()
        except (bt2.Stop, bt2.TryAgain):
            raise
        except BaseException as exc:  # a bug of ours (or Ctrl-C), not a bad trace: raised as is by the reader
            self._state.internal_error = exc
            raise bt2.Stop from None


def _make_python_sink_class():
    bt2 = import_bt2()
    from bt2 import _native_bt as nbt, message as bt2_message

    get_range = nbt.bt2_self_component_port_input_get_msg_range
    END = nbt.MESSAGE_ITERATOR_NEXT_STATUS_END
    AGAIN = nbt.MESSAGE_ITERATOR_NEXT_STATUS_AGAIN
    OK = nbt.MESSAGE_ITERATOR_NEXT_STATUS_OK
    get_type = nbt.message_get_type
    EV = nbt.MESSAGE_TYPE_EVENT
    RARE = {nbt.MESSAGE_TYPE_PACKET_BEGINNING, nbt.MESSAGE_TYPE_STREAM_BEGINNING,
            nbt.MESSAGE_TYPE_DISCARDED_EVENTS, nbt.MESSAGE_TYPE_DISCARDED_PACKETS}
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

    def get_u64_as_i64(f):
        # unsigned 64-bit values (kernel addresses) keep their bits in an int64 column
        v = get_unsigned(f)
        return v - (1 << 64) if v >= (1 << 63) else v

    getters = {
        "signed": get_signed, "unsigned": get_unsigned, "unsigned64": get_u64_as_i64,
        "bool": nbt.field_bool_get_value, "string": nbt.field_string_get_value,
        "double": nbt.field_real_double_precision_get_value, "single": nbt.field_real_single_precision_get_value,
    }

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
        rest = [(i, bufs[i]) for i in range(1, len(paths))]

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
                for i, buf in rest:
                    v = values[i]
                    if v != MISSING:
                        buf.rows.append(row)
                        buf.vals.append(v)
            return values[0]

        return get

    def compile_plan(plan, st):
        """(ctx tid getter, ctx pid getter, [(buf, member index, getter, kind, in context)])."""
        def ctx(c):
            return None if c is None else (c[0], getters[c[1]])

        members = []
        for m in plan.members:
            if m.kind == NESTED:
                getter = nested_group([p for _, p in m.paths], [b for b, _ in m.paths], st)
            else:
                getter = getters[m.kind]
            members.append((m.buf, m.index, getter, m.buf.kind, m.in_ctx))
        plan.compiled = (ctx(plan.ctx_tid), ctx(plan.ctx_pid), members)

    class PythonSink(SinkCommon, bt2._UserSinkComponent):
        def _plan(self, cls_ptr):
            st = self._state
            plan = st.make_plan(class_info(cls_ptr))
            if plan is not None:
                compile_plan(plan, st)
            return plan

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
                    if mtype in RARE:
                        rare_message(st, bt2_message._create_from_ptr(m))  # takes the reference
                    else:
                        put(m)
                    continue
                ev = borrow_ev(m)
                cls_ptr = borrow_cls(ev)
                key = int(cls_ptr)
                try:
                    plan = plans[key]
                except KeyError:
                    plan = plans[key] = self._plan(cls_ptr)
                if plan is None:
                    put(m)
                    continue
                ts = get_ns(borrow_cs(m))[1]
                ts_a(ts)
                cpu_a(packet_cpu.get(int(borrow_pkt(ev)), -1) if plan.has_packet else -1)
                plan_a(plan.index)
                ctx_tid, ctx_pid, members = plan.compiled
                if plan.has_ctx:
                    ctx = ctx_of(ev)
                    ctx_rows_a(n)
                    ctx_tid_a(ctx_tid[1](member(ctx, ctx_tid[0])) if ctx_tid is not None else -1)
                    ctx_pid_a(ctx_pid[1](member(ctx, ctx_pid[0])) if ctx_pid is not None else -1)
                if members:
                    pl = None
                    ctx = None
                    for buf, idx, getter, kind, in_ctx in members:
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
                        buf.vals.append(intern(v) if kind == STR else v)
                n += 1
                put(m)
            if ts is not None:
                st.last_ts = ts

    return PythonSink


_SINK_CLASSES: dict = {}


def python_sink_class():
    """The sink class needs bt2 at definition time; it is built on first use."""
    if "python" not in _SINK_CLASSES:
        _SINK_CLASSES["python"] = _make_python_sink_class()
    return _SINK_CLASSES["python"]


def build_graph(trace_dirs, read_paths, sink_obj, sink_class=None, indices=None):
    """The bt2 graph reading ``read_paths`` (one per trace folder of ``trace_dirs``) into a sink
    of ``sink_class`` (default: the Python decoder) holding ``sink_obj``. ``indices``: the
    folders' numbers among the reader's (the source components are named after them: src3)."""
    bt2 = import_bt2()
    graph = bt2.Graph()
    fs = bt2.find_plugin("ctf").source_component_classes["fs"]
    muxer = bt2.find_plugin("utils").filter_component_classes["muxer"]
    quiet = bt2.LoggingLevel.NONE
    ports = []
    for i, (td, read_path) in enumerate(zip(trace_dirs, read_paths)):
        try:
            src = graph.add_component(fs, f"src{indices[i] if indices else i}", params={"inputs": [str(read_path)]}, logging_level=quiet)
        except bt2._Error as exc:
            msg, _ = error_text(exc)
            msg = msg.replace(str(read_path), str(td.path))  # a temporary view's path means nothing to the user
            raise InputError(td.path, f"cannot open CTF trace: {msg}") from None
        ports.extend(src.output_ports.values())
    mux = graph.add_component(muxer, "mux", logging_level=quiet)
    for i, port in enumerate(ports):
        graph.connect_ports(port, mux.input_ports[f"in{i}"])
    sink = graph.add_component(sink_class or python_sink_class(), "sink", obj=sink_obj, logging_level=quiet)
    graph.connect_ports(mux.output_ports["out"], sink.input_ports["in"])
    return graph
