"""Reading LTTng CTF traces into columnar chunks through babeltrace2's Python bindings.

This module is the seam behind which a compiled reader can slot in: everything above it sees
only :class:`CtfReader` (its catalogues and :meth:`CtfReader.chunks`) and :class:`EventChunk`.

How it stays fast with bt2: one ``source.ctf.fs`` component per trace folder, babeltrace2's C
muxer merges all streams of all traces by time, and our own sink (sink.py) pulls batches of raw message
pointers and decodes them with the ``_native_bt`` functions, with a plan per event class built
once (which payload members to decode, with which getter). Per event that is a dozen C calls and
a few ``array.append``; measured on this machine: ~0.8 M events/s with a handful of fields,
against 2.2 M/s for ``babeltrace2 -o dummy`` (``make bench`` prints both).

The ``tid`` column comes from the ``vtid``/``tid`` event context when the trace has one (UST,
kernel traces recorded with ``-t tid``), otherwise from the CPU's current task, tracked from
``sched_switch`` in vectorised form per chunk (the switch event itself belongs to ``prev_tid``).
"""

from __future__ import annotations

import fnmatch
import os
import queue
import threading
import time
from typing import Iterator

import numpy as np

from perftriage.analysis.columns import EventChunk, StringPool
from perftriage.analysis.errors import InputError, TraceReadError
from perftriage.analysis.units import count_of, fmt_duration, fmt_timestamp

from .bt2_support import error_text, import_bt2
from .current_task import CurrentTask
from .discover import TraceDir, find_traces
from .hosts import distinct_hosts
from .metadata import clock_origin_ns, env_hostname, env_value, event_names, packet_layout, read_metadata
from .ranges import open_crash, trace_ranges
from . import perf
from .isolated import in_child
from .native import native_sink_class, new_state, reader_choice
from .sink import SinkState, build_graph
from .spec import ProgressFn, ReadProgress, ReadSpec, TraceMeta
from .split import decoders_for, in_children, shared_out
from .streams import check_stream, salvage_view, same_stream_twice


class CtfReader:
    """Streams one or more CTF traces (e.g. a host's kernel + UST traces) as time-ordered chunks.

    Attributes filled as reading goes: ``event_names`` (code -> canonical name), ``hosts``
    (index -> hostname), ``strings`` (codes of string fields), ``traces`` (:class:`TraceMeta`).
    """

    def __init__(
        self,
        paths,
        spec: ReadSpec | None = None,
        progress: ProgressFn | None = None,
        progress_every: float = 0.2,
        host_names: dict[str, str] | None = None,
        decoders: int = 1,
    ):
        self.bt2 = import_bt2()
        self.decoders = decoders  # decoding processes allowed (split.py: the stream files shared out among them)
        self.spec = spec or ReadSpec()
        self.trace_dirs: list[TraceDir] = find_traces(paths)
        self.progress = progress
        self.progress_every = progress_every
        self.event_names: list[str] = []
        self._event_codes: dict[str, int] = {}
        self.hosts: list[str] = []
        self.event_fields: dict[str, list[str]] = {}  # canonical name -> columns decoded for it
        self.strings = StringPool()
        self.traces: list[TraceMeta] = [TraceMeta(path=str(t.path), size=t.size) for t in self.trace_dirs]
        self.events_read = 0
        self._views = []  # temporary salvage folders, alive as long as the reader
        self._env: list[tuple[str | None, str | None]] = []  # per trace: (hostname, domain) from its metadata
        self._metadata: dict = {}  # trace folder -> (TSDL text, CTF 2?), read before the checks
        self._joined = self._perf_clocks()  # perf traces' metadata on the others' clock, to merge them by time
        self._read_paths = [self._check_trace(td, meta) for td, meta in zip(self.trace_dirs, self.traces)]
        self._host_names = distinct_hosts([td.path for td in self.trace_dirs], self._env)
        if host_names:  # as named among more traces than these (hosts.host_groups)
            self._host_names = [host_names.get(str(td.path), n) for td, n in zip(self.trace_dirs, self._host_names)]
        self._query_ranges()
        self.native, self.decoder_name = reader_choice()
        self.threaded = os.environ.get("PERFTRIAGE_READ_THREAD", "1") != "0"
        # the C decoder in a child process under a memory limit (isolated.py): a damaged trace
        # that makes babeltrace2 abort or allocate without end ends the read, not perftriage
        self.isolated = os.environ.get("PERFTRIAGE_READ_PROCESS", "1") != "0"
        self._asked: set[str] = set()  # the columns the spec asked for (the state's set, once reading began)
        self._lock = threading.Lock()  # the catalogues are filled by the reading thread
        # the graph is made now: babeltrace2 opens and indexes the traces, so a trace it cannot
        # open is said here, and the read that follows does not index it again
        self._prepared = self._new_graph()

    # -- catalogues -------------------------------------------------------------------------

    def event_code(self, name: str) -> int:
        """Code of a canonical event name (allocated on first use, so it can be asked before reading)."""
        with self._lock:
            c = self._event_codes.get(name)
            if c is None:
                c = self._event_codes[name] = len(self.event_names)
                self.event_names.append(name)
            return c

    def codes_matching(self, pattern: str) -> np.ndarray:
        with self._lock:
            items = list(self._event_codes.items())
        return np.array([c for n, c in items if n == pattern or fnmatch.fnmatchcase(n, pattern)], dtype=np.int32)

    def host_code(self, name: str) -> int:
        with self._lock:
            try:
                return self.hosts.index(name)
            except ValueError:
                self.hosts.append(name)
                return len(self.hosts) - 1

    @property
    def bytes_total(self) -> int:
        return sum(t.size for t in self.traces)

    # -- set-up -----------------------------------------------------------------------------

    def _check_trace(self, td: TraceDir, meta: TraceMeta):
        """Validate metadata and streams before babeltrace2 sees them; returns the folder to read
        (the trace itself, or a salvage view when stream files are cut short)."""
        meta.problems.extend(td.problems)
        text, ctf2 = self._metadata.pop(td.path, None) or read_metadata(td.path / "metadata")
        meta.defined_events = tuple(event_names(text))
        self._env.append((env_hostname(text), env_value(text, "domain")))
        # CTF 2: babeltrace2 2.0 reads the streams under the metadata's TSDL translation (ctf2.py)
        translated = text if ctf2 else None
        view = td.path  # what babeltrace2 reads: the trace, or (CTF 2) a view with its translation
        if ctf2:
            meta.ctf_version = "2"
            view = self._view(td, [], text)
            crash = open_crash(self.bt2, view)  # babeltrace2 aborts on some metadata: in a child, not here
            if crash is not None:
                raise InputError(td.path / "metadata", f"babeltrace2 2.0 aborts on this CTF 2 metadata's translation: "
                                                       f"{crash}")
        if perf.is_perf(env_value(text, "tracer_name")) and clock_origin_ns(text) == 0:
            meta.notes.append(perf.BOOT_CLOCK)
        joined = self._joined.get(td.path)
        if joined is False:
            raise InputError(td.path / "metadata", perf.NOT_JOINED)
        if joined is not None:
            text = translated = joined
            view = self._view(td, [], text)
        layout = packet_layout(text)
        if layout is None:
            return view
        checks = [check_stream(f, layout) for f in td.stream_files]
        twice = {c.path: c for c in same_stream_twice(checks)}
        checks = [twice.get(c.path, c) for c in checks]
        _range_from_packets(meta, checks, clock_origin_ns(text))
        damaged = [c for c in checks if c.problem]
        if not damaged:
            return view
        for c in damaged:
            lost = c.size - c.good_bytes
            meta.problems.append(f"{c.path}: {c.problem}; read its {c.packets:,} whole packets, "
                                 f"{lost:,} of {c.size:,} bytes unreadable")
        if all(c.good_bytes == 0 for c in checks):
            raise InputError(td.path, "no stream file holds a single whole packet: " + damaged[0].problem)
        return self._view(td, checks, translated)

    def _perf_clocks(self) -> dict:
        """Per perf trace read with other traces: its metadata on their clock (perf.joined_clock),
        or False when its clock counts from boot and it cannot be merged with them."""
        if len(self.trace_dirs) < 2:
            return {}
        texts = {}
        for td in self.trace_dirs:
            try:
                self._metadata[td.path] = read_metadata(td.path / "metadata")  # read once: _check_trace takes it
            except (InputError, OSError, UnicodeDecodeError):
                return {}  # the trace's own check says what is wrong with it
            texts[td.path] = self._metadata[td.path][0]
        out: dict = {}
        for path, text in texts.items():
            if not perf.is_perf(env_value(text, "tracer_name")):
                continue
            host = env_hostname(text)
            same_host = [t for p, t in texts.items() if p != path and env_hostname(t) == host]
            joined = perf.joined_clock(text, same_host)
            out[path] = joined if joined is not None else False
        return out

    def _view(self, td: TraceDir, checks, metadata_text: str | None):
        tmp, view = salvage_view(td.path, td.stream_files, checks, metadata_text)
        self._views.append(tmp)
        return view

    def _query_ranges(self) -> None:
        """Each trace's time range (ranges.py: asked in a child process, which an abort of
        babeltrace2 on a damaged trace cannot take down with it)."""
        ask = [i for i, meta in enumerate(self.traces) if meta.begin_ns is None]
        if not ask:
            return  # every range came from the packet headers: no child, no second indexing
        answers = trace_ranges(self.bt2, [self._read_paths[i] for i in ask])
        for meta, td, answer in zip([self.traces[i] for i in ask], [self.trace_dirs[i] for i in ask], answers):
            if isinstance(answer, str):
                view = str(self._read_paths[self.trace_dirs.index(td)])
                raise InputError(td.path, f"cannot open CTF trace: {answer.replace(view, str(td.path))}")
            if isinstance(answer, tuple):
                meta.begin_ns, meta.end_ns = answer
            # a crashed query (RangeQueryFailed) leaves the range unknown: the read that follows
            # meets the same damage and says what it is

    # -- reading ----------------------------------------------------------------------------

    def chunks(self) -> Iterator[EventChunk]:
        """Time-ordered chunks of about ``spec.chunk_events`` events (bounded memory: a chunk is
        cut at the first message batch that reaches the limit).

        On a fault part-way (truncated stream, non-monotonic time...), the chunk read so far is
        yielded first, then :class:`TraceReadError` names the trace folder and the cause.

        With the C decoder, babeltrace2 and the decoder run in a thread of their own, without
        the GIL, while the caller analyses the chunk before (``threaded``; two chunks at most
        wait between them)."""
        state, graph = self._prepared or self._new_graph()
        self._prepared = None
        self._asked = state.asked
        split = decoders_for(self, self.decoders) if self.native and self.isolated and self.threaded else 1
        shared = shared_out(self, split) if split > 1 else None
        if shared is not None:
            graph = None  # each child opens its own stream files
            self.decoder_name = f"{reader_choice()[1]}, in {len(shared[1])} processes (the stream files shared out)"
            produce = in_children(self, state, shared)
        elif self.native and self.isolated:
            produce = in_child(self, state, graph, lockstep=not self.threaded)
        else:
            produce = self._produce(state, graph)
        if self.native and self.threaded:
            produce = _in_thread(produce)
        tracker = CurrentTask()
        try:
            for kind, item in produce:
                if kind == "chunk":
                    yield self._finish_chunk(*item, tracker)
                elif kind == "progress":
                    if self.progress is not None:
                        self.progress(item)
                else:  # "error"
                    raise item
        finally:
            produce.close()

    def _new_graph(self):
        """(sink state, bt2 graph) reading every trace of this reader."""
        if self.native:
            state = new_state(self)
            return state, build_graph(self.trace_dirs, self._read_paths, state, native_sink_class())
        state = SinkState(self)
        return state, build_graph(self.trace_dirs, self._read_paths, state)

    def _produce(self, state: SinkState, graph, sparse: bool = False):
        """Runs the graph: ("chunk", (raw chunk, plan tables)), ("progress", ReadProgress) and at
        most one ("error", TraceReadError) at the end, in order (``sparse``: chunk columns as
        rows and values, to send to another process)."""
        try:
            yield from self._run_graph(state, graph, sparse)
        finally:
            if state.decoder is not None:  # messages still pending go back while their graph lives
                state.decoder.release()

    def _run_graph(self, state: SinkState, graph, sparse: bool = False):
        bt2 = self.bt2
        limit = self.spec.chunk_events
        last_report = 0.0
        run_once = graph.run_once
        produced = 0
        while True:
            failure = None
            try:
                run_once()
            except bt2.Stop:
                if state.internal_error is not None:
                    raise state.internal_error
                if state.read_error is None:
                    break
                failure = state.read_error
            except bt2.TryAgain:
                continue
            except bt2._Error as exc:
                failure = exc
            if failure is not None:
                msg, comp = error_text(failure)
                if state.n:
                    produced += state.n
                    yield "chunk", (state.take(sparse), state.plan_tables())
                error = TraceReadError(self._path_of_component(comp), f"{self._stopped_at(state, produced)}: {msg}",
                                       produced)
                error.cause = msg  # without the place (split.py says the place among all the decoders' events)
                yield "error", error
                return
            if state.n >= limit:
                produced += state.n
                yield "chunk", (state.take(sparse), state.plan_tables())
            if self.progress is not None:
                now = time.monotonic()
                if now - last_report >= self.progress_every:
                    last_report = now
                    yield "progress", self._progress(state, produced)
        if state.n:
            produced += state.n
            yield "chunk", (state.take(sparse), state.plan_tables())
        yield "progress", ReadProgress(produced, self.bytes_total, self.bytes_total)

    def read_all(self) -> EventChunk:
        """Everything at once (for small traces and tests)."""
        return EventChunk.concat(list(self.chunks()))

    def _stopped_at(self, state: SinkState, produced: int) -> str:
        """Where a read that failed stopped: the time of the last event read, and how far into
        the traces' time range that is."""
        n = produced + state.n
        if state.last_ts is None:
            return f"reading stopped before the first event ({count_of(n, 'events')} read)"
        begins = [t.begin_ns for t in self.traces if t.begin_ns is not None]
        into = f", {fmt_duration(state.last_ts - min(begins))} into the trace" if begins else ""
        return f"reading stopped at {fmt_timestamp(state.last_ts)} UTC{into}, after {count_of(n, 'events')}"

    def _path_of_component(self, comp: str | None) -> str:
        if comp and comp.startswith("src") and comp[3:].isdigit():
            return str(self.trace_dirs[int(comp[3:])].path)
        if len(self.trace_dirs) == 1:
            return str(self.trace_dirs[0].path)
        return ", ".join(str(t.path) for t in self.trace_dirs)

    def _progress(self, state: "SinkState", produced: int) -> ReadProgress:
        done = 0
        ts = state.last_ts
        for t in self.traces:
            if t.begin_ns is None or ts is None:
                continue
            if ts >= t.end_ns:
                done += t.size
            elif ts > t.begin_ns:
                done += int(t.size * (ts - t.begin_ns) / max(1, t.end_ns - t.begin_ns))
        return ReadProgress(produced + state.n, done, self.bytes_total)

    @property
    def _raw_syscalls(self) -> bool:
        return perf.RAW_ENTRY in self._event_codes or perf.RAW_EXIT in self._event_codes

    def _name_raw_syscalls(self, event: np.ndarray, keep: np.ndarray, ids) -> tuple[np.ndarray, np.ndarray]:
        """perf's system calls by number, each named from its number (perf.py): their event codes
        and whether the spec keeps them (one look-up per distinct call)."""
        machine = next((t.env.get("machine") for t in self.traces if perf.is_perf(t.tracer)), None)
        table = perf.syscall_table(machine)
        for raw, prefix in perf.RAW.items():
            code = self._event_codes.get(raw)
            rows = np.flatnonzero(event == code) if code is not None else ()
            if not len(rows):
                continue
            nums = ids[rows] if ids is not None else np.full(len(rows), -1, np.int64)
            uniq, inverse = np.unique(nums, return_inverse=True)
            names = perf.syscall_names(prefix, uniq.tolist(), table)
            codes = np.array([self.event_code(n) for n in names], np.int32)
            kept = np.array([self.spec.keeps(n) for n in names], bool)
            event[rows] = codes[inverse]
            keep[rows] = kept[inverse]
        return event, keep

    def _finish_chunk(self, raw, tables, tracker: "CurrentTask") -> EventChunk:
        n = raw.n
        plan = raw.plan
        host = tables["host"][plan]
        event = tables["code"][plan]
        kernel = tables["kernel"][plan]
        keep = tables["keep"][plan]
        tid = np.full(n, -1, np.int32)
        pid = np.full(n, -1, np.int32)
        if len(raw.ctx_rows):
            tid[raw.ctx_rows] = raw.ctx_tid
            pid[raw.ctx_rows] = raw.ctx_pid
        cols = raw.columns
        if perf.TID_FIELD in cols:  # perf: each event's own thread and process
            _take_where_unknown(tid, cols[perf.TID_FIELD])
            _take_where_unknown(pid, cols.get(perf.PID_FIELD))
        if self._raw_syscalls:
            event, keep = self._name_raw_syscalls(event, keep, cols.get(perf.SYSCALL_ID_FIELD))
        switch_code = self._event_codes.get("sched_switch")
        if switch_code is not None and "prev_tid" in cols and "next_tid" in cols:
            tracker.fill(tid, kernel & (tid < 0), event == switch_code, host, raw.cpu, cols["prev_tid"], cols["next_tid"])
        public = {k: v for k, v in cols.items() if k in self._asked}
        chunk = EventChunk(ts=raw.ts, cpu=raw.cpu, host=host, event=event, tid=tid, pid=pid, fields=public)
        if not keep.all():
            chunk = chunk.take(keep)
        self.events_read += n
        return chunk


def _take_where_unknown(out: np.ndarray, values) -> None:
    """``out`` (a thread or process column, -1 where unknown) from ``values`` where it is unknown."""
    if values is None:
        return
    m = (out < 0) & (values >= 0) & (values <= np.iinfo(np.int32).max)
    out[m] = values[m]


def _range_from_packets(meta: TraceMeta, checks, origin: int | None) -> None:
    """The trace's time range from its packets' 64-bit timestamp_begin/end (read by the stream
    checks) and its one nanosecond clock, without babeltrace2's trace-infos query (a second
    indexing of the trace, in a forked child). The begin is the query's; the end is the last
    packet's end as written, where the query corrects the last packet of some LTTng versions to
    its last event (up to 0.2 s earlier on the real traces): the range serves progress and "how
    far into the trace", which that does not change. Left unknown otherwise (the query says)."""
    stamped = [c for c in checks if c.packets and c.first_ts is not None]
    if origin is None or not stamped or len(stamped) != sum(1 for c in checks if c.packets):
        return
    begin = origin + min(c.first_ts for c in stamped)
    end = origin + max(c.last_ts for c in stamped)
    if -(2**63) <= begin <= end < 2**63:
        meta.begin_ns, meta.end_ns = begin, end


def _in_thread(items, depth: int = 2):
    """The items of the generator ``items``, made in a thread of their own (at most ``depth``
    waiting); an exception of the generator is raised here. Closing this generator early stops
    the thread at its next item."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run():
        try:
            for item in items:
                if not put(("item", item)):
                    return
        except BaseException as exc:  # noqa: BLE001  (handed to the reading side)
            put(("raise", exc))
            return
        finally:
            items.close()
        put(("end", None))

    t = threading.Thread(target=run, name="perftriage-ctf-read", daemon=True)
    t.start()
    try:
        while True:
            kind, item = q.get()
            if kind == "item":
                yield item
            elif kind == "raise":
                raise item
            else:
                return
    finally:
        stop.set()
        t.join()
