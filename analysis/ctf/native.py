"""The C decoder (``_decode.c``, built by ``make setup`` against Debian's libbabeltrace2-dev):
the same sink as sink.py's Python decoder, with the per-event loop in C. The sink hands the C
decoder its message iterator; the decoder pulls and decodes message batches itself and comes
back only when the chunk is full, when an event class needs a plan (made by plans.py from the
class description the decoder returns), or for a stream beginning, a bad packet cpu_id or
discarded events. Where the module was not built (no compiler or headers), or
``PERFTRIAGE_READER=python``, the Python decoder reads: :func:`reader_choice` says which and why.
"""

from __future__ import annotations

import os

from .bt2_support import import_bt2, take_error
from .plans import NESTED, ClassInfo, SinkState
from .sink import SinkCommon

_GETTER_CODES = {"signed": 0, "unsigned": 1, "unsigned64": 1, "string": 2, "bool": 3, "double": 4, "single": 5,
                 NESTED: 6}


def _module():
    try:
        from . import _decode  # noqa: PLC0415  (built by make setup where a compiler and headers exist)
    except ImportError as exc:
        return None, str(exc)
    return _decode, None


def reader_choice() -> tuple[bool, str]:
    """(use the C decoder?, a few words saying which decoder reads and why)."""
    if os.environ.get("PERFTRIAGE_READER", "").lower() == "python":
        return False, "Python decoder (bt2), chosen by PERFTRIAGE_READER=python"
    mod, why = _module()
    if mod is None:
        return False, ("Python decoder (bt2): the C decoder is not built (make setup builds it where gcc, "
                       f"python3-dev and libbabeltrace2-dev are installed): {why}")
    return True, f"C decoder over libbabeltrace2 {mod.LIBBABELTRACE2_MAJOR}.{mod.LIBBABELTRACE2_MINOR}"


def new_state(reader) -> SinkState:
    mod, _ = _module()
    return SinkState(reader, decoder=mod.Decoder(reader.strings.code))


def _plan_args(plan):
    def ctx(c):
        return None if c is None else (c[0], _GETTER_CODES[c[1]])

    members = []
    for m in plan.members:
        paths = [(b.index, names) for b, names in m.paths] if m.kind == NESTED else None
        members.append((m.buf.index, m.index, _GETTER_CODES[m.kind], 1 if m.in_ctx else 0, paths))
    return plan.index, 1 if plan.has_packet else 0, ctx(plan.ctx_tid), ctx(plan.ctx_pid), members


PAUSE_EVENTS = 16384  # back to the reader after so many events (at a batch's end): progress stays live

_SINK_CLASS = None


def native_sink_class():
    global _SINK_CLASS
    if _SINK_CLASS is None:
        _SINK_CLASS = _make_native_sink_class()
    return _SINK_CLASS


def _make_native_sink_class():
    bt2 = import_bt2()
    mod, _ = _module()
    R_FULL, R_PAUSE, R_END, R_AGAIN, R_ERROR = mod.R_FULL, mod.R_PAUSE, mod.R_END, mod.R_AGAIN, mod.R_ERROR
    R_PLAN, R_STREAM, R_DISCARDED, R_BAD_CPU = mod.R_PLAN, mod.R_STREAM, mod.R_DISCARDED, mod.R_BAD_CPU

    class NativeSink(SinkCommon, bt2._UserSinkComponent):
        def _user_graph_is_configured(self):
            super()._user_graph_is_configured()
            self._iter_addr = int(self._iter._ptr)

        def _consume(self):
            st = self._state
            dec = st.decoder
            limit = st.reader.spec.chunk_events
            try:
                while True:
                    why = dec.run(self._iter_addr, limit, PAUSE_EVENTS)
                    r = why[0]
                    if r == R_FULL or r == R_PAUSE:
                        return
                    if r == R_PLAN:
                        _, address, name, trace_class, packets, context, payload = why
                        plan = st.make_plan(ClassInfo(address, name, trace_class, bool(packets), context, payload))
                        if plan is None:
                            dec.set_plan(address, -1, 0, None, None, [])
                        else:
                            dec.set_plan(address, *_plan_args(plan))
                    elif r == R_STREAM:
                        st.stream_begins(why[1], why[2], why[3])
                    elif r == R_BAD_CPU:
                        st.packet_cpu_id(why[1], why[2])
                    elif r == R_DISCARDED:
                        st.discarded(why[1], why[2], why[3])
                    elif r == R_END:
                        raise bt2.Stop
                    elif r == R_AGAIN:
                        raise bt2.TryAgain
                    elif r == R_ERROR:
                        # the muxer or a source failed: keep babeltrace2's error; the reader
                        # delivers what was read, then reports it
                        st.read_error = take_error(bt2, f"message iterator status {why[1]}")
                        raise bt2.Stop
            finally:
                st.last_ts = dec.last_ts

    return NativeSink
