"""Requests cut out of a trace by start/end marker events, as a columnar request table.

Built-in markers (the real instrumentation's names and fields):

- ``ust_php:request_entry`` / ``ust_php:request_exit`` (LTTng PHP extension): paired per thread
  (``vtid``); fields ``path``, ``uri``, ``method``, ``querystring``.
- ``ust_apache:request_entry`` / ``ust_apache:request_exit`` (mod_lttng): paired by ``id``;
  entry fields ``host``, ``method``, ``uri``, ``protocol``..., exit field ``status``.

Any other pair is given as a :class:`MarkerSpec` (``--request-start``, ``--request-end``,
``--request-key``; the key defaults to the thread, ``vtid``).

Pairing: starts and ends are sorted by (host, key, time); a start is paired with the next
event of the same key when that is an end. Starts without an end (the trace stopped first) and
ends without a start (the request began before tracing) are counted, not guessed.
"""

from __future__ import annotations

import numpy as np

from perftriage.analysis.columns import MISSING
from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.spec import ReadSpec

from .params import APACHE, BUILTIN_MARKERS, PHP, MarkerSpec  # noqa: F401 (APACHE: its home before)
from .table import BASE_COLUMNS, RequestTable


class _Side:
    """Rows of start (or end) events gathered over the chunks."""

    def __init__(self):
        self.parts: list[dict[str, np.ndarray]] = []

    def add(self, chunk, rows, field_names):
        part = {
            "ts": chunk.ts[rows],
            "host": chunk.host[rows],
            "tid": chunk.tid[rows],
            "pid": chunk.pid[rows],
        }
        for f in field_names:
            col = chunk.fields.get(f)
            if col is not None:
                part["f:" + f] = col[rows]
        self.parts.append(part)

    def collect(self) -> dict[str, np.ndarray]:
        if not self.parts:
            return {}
        keys: list[str] = []
        for p in self.parts:
            keys.extend(k for k in p if k not in keys)
        out = {}
        for k in keys:
            arrs = [p[k] if k in p else None for p in self.parts]
            dt = next(a.dtype for a in arrs if a is not None)
            fill = -1 if dt == np.int32 else (np.nan if dt.kind == "f" else MISSING)
            out[k] = np.concatenate(
                [a if a is not None else np.full(len(p["ts"]), fill, dt) for a, p in zip(arrs, self.parts)]
            )
        return out


class MarkerRequests:
    """Chunk consumer: pairs start/end markers into a :class:`RequestTable`."""

    def __init__(self, markers=BUILTIN_MARKERS):
        self.markers = tuple(markers)
        self.reader: CtfReader | None = None
        self._sides = [(_Side(), _Side()) for _ in self.markers]
        self._codes: list[tuple[int, int]] = []

    def read_spec(self) -> ReadSpec:
        fields: dict[str, list[str]] = {}
        for m in self.markers:
            s = fields.setdefault(m.start, [])
            s.extend(f for f in m.start_fields if f not in s)
            e = fields.setdefault(m.end, [])
            e.extend(f for f in m.end_fields if f not in e)
            if not m.keyed_by_thread:
                for ev in (m.start, m.end):
                    if m.key not in fields[ev]:
                        fields[ev].append(m.key)
        events = []
        for m in self.markers:
            events.extend([m.start, m.end])
        return ReadSpec(fields={k: tuple(v) for k, v in fields.items()}, events=events)

    def bind(self, reader: CtfReader) -> None:
        self.reader = reader
        self._codes = [(reader.event_code(m.start), reader.event_code(m.end)) for m in self.markers]

    def consume(self, chunk) -> None:
        # each side keeps its own event's fields (those decoded for it), not every column of
        # the chunk: a web server's chunk has some 40 (0.7 s of the read at 50,000 requests)
        decoded = self.reader.event_fields
        for (start_side, end_side), (cs, ce), m in zip(self._sides, self._codes, self.markers):
            for side, code, event in ((start_side, cs, m.start), (end_side, ce, m.end)):
                rows = np.flatnonzero(chunk.event == code)
                if len(rows):
                    side.add(chunk, rows, decoded.get(event, ()))

    def finish(self) -> RequestTable:
        tables = [
            self._pair(m, s.collect(), e.collect()) for m, (s, e) in zip(self.markers, self._sides)
        ]
        return RequestTable.concat([t for t in tables if t is not None])

    def merge(self, tables: list[RequestTable]) -> RequestTable:
        """The table ``finish`` would make of all the traces, from the tables of readers that
        read them apart (one per host): per marker, its rows of every table in start order
        (requests numbered again where they are numbered by start)."""
        tables = [t for t in tables if t is not None]
        out = []
        kinds = set()
        for m in self.markers:
            kind = m.kind or m.start
            if kind in kinds:  # markers of one kind: their rows were taken with the first
                continue
            kinds.add(kind)
            part = RequestTable.concat([t.take(np.flatnonzero(t.kind == kind)) for t in tables])
            if not len(part):
                continue
            part = part.take(np.argsort(part.start, kind="stable"))
            if m.keyed_by_thread:
                part.id = np.arange(len(part), dtype=np.int64)
            out.append(part)
        merged = RequestTable.concat(out)
        merged.unmatched_starts = sum(t.unmatched_starts for t in tables)
        merged.unmatched_ends = sum(t.unmatched_ends for t in tables)
        return merged

    def _pair(self, m: MarkerSpec, starts: dict, ends: dict) -> RequestTable | None:
        if not starts and not ends:
            return None
        reader = self.reader
        ns, ne = len(starts.get("ts", ())), len(ends.get("ts", ()))
        if ns == 0 or ne == 0:
            t = RequestTable.empty()
            t.unmatched_starts, t.unmatched_ends = ns, ne
            return t

        def key_of(side):
            if m.keyed_by_thread:
                return side["tid"].astype(np.int64)
            col = side.get("f:" + m.key)
            if col is None:
                return np.full(len(side["ts"]), MISSING, np.int64)
            return col.astype(np.int64)

        ts = np.concatenate([starts["ts"], ends["ts"]])
        host = np.concatenate([starts["host"], ends["host"]]).astype(np.int64)
        key = np.concatenate([key_of(starts), key_of(ends)])
        is_end = np.r_[np.zeros(ns, bool), np.ones(ne, bool)]
        order = np.lexsort((is_end, ts, key, host))
        same = (host[order][1:] == host[order][:-1]) & (key[order][1:] == key[order][:-1])
        pair = (~is_end[order][:-1]) & is_end[order][1:] & same
        si = order[:-1][pair]  # indices into the start side
        ei = order[1:][pair] - ns  # indices into the end side
        paired_starts = len(si)
        st = starts
        hosts = np.array(reader.hosts + ["?"], dtype=object)
        host_idx = np.where(st["host"][si] >= 0, st["host"][si], len(reader.hosts))
        fields: dict[str, np.ndarray] = {}
        start_names = self._field_names(starts, m.start, m.start_fields)
        end_names = self._field_names(ends, m.end, m.end_fields)
        for name in start_names:
            fields[self._column_name(name)] = self._decode(starts["f:" + name][si])
        for name in end_names:
            col = self._column_name(name)
            if col not in fields:
                fields[col] = self._decode(ends["f:" + name][ei])
        if m.keyed_by_thread:
            ids = np.arange(paired_starts, dtype=np.int64)
        else:
            ids = key_of(starts)[si]
        order_t = np.argsort(st["ts"][si], kind="stable")
        if m.keyed_by_thread:
            ids = np.empty(paired_starts, np.int64)
            ids[order_t] = np.arange(paired_starts)  # ids in start-time order
        table = RequestTable(
            id=ids,
            kind=np.full(paired_starts, m.kind or m.start, dtype=object),
            host=hosts[host_idx],
            pid=np.where(st["pid"][si] >= 0, st["pid"][si], -1).astype(np.int64),
            tid=st["tid"][si].astype(np.int64),
            start=st["ts"][si],
            end=ends["ts"][ei],
            fields=fields,
            unmatched_starts=ns - paired_starts,
            unmatched_ends=ne - paired_starts,
        )
        return table.take(order_t)

    def _field_names(self, side: dict, event: str, wanted) -> list[str]:
        """Columns decoded for ``event`` that the marker asked for ("*": all of them)."""
        decoded = self.reader.event_fields.get(event, [])
        have = [f for f in decoded if "f:" + f in side]
        if "*" in wanted:
            return have
        return [f for f in wanted if f in have]

    @staticmethod
    def _column_name(name: str) -> str:
        return f"field_{name}" if name in BASE_COLUMNS else name

    def _decode(self, col: np.ndarray) -> np.ndarray:
        if col.dtype == np.int32:  # string codes
            return self.reader.strings.decode(col)
        out = col.astype(object)
        if col.dtype.kind == "i":
            out[col == MISSING] = ""
        return out


# the last word of a start event's name and of its end's: request_begin / request_end
_PAIRS = (("begin", "end"), ("start", "end"), ("start", "stop"), ("entry", "exit"), ("enter", "exit"),
          ("begin", "finish"), ("start", "finish"))
# providers of events that are not an application's own: the kernel's tracepoint subsystems (a
# perf recording may keep their names as subsystem:event) and LTTng's own user-space providers
# (its statedump's start/end, function entry/exit on every call)
_NOT_MARKERS = frozenset(
    "sched irq timer block kmem syscalls raw_syscalls power workqueue net skb signal writeback ext4 xfs "
    "btrfs napi sock tcp udp random rcu task module filemap pagemap compaction vmscan huge_memory migrate "
    "oom cgroup printk irq_vectors mce msr x86_fpu ftrace lock rpm clk regmap scsi nvme jbd2 f2fs kvm "
    "kvmmmu iommu dma_fence drm i915 amdgpu io_uring mmap_lock percpu alarmtimer".split())


def marker_candidates(event_counts: dict[str, int], most: int = 2) -> list[tuple[str, str, int, int]]:
    """Pairs of an application's own events that look like a request's start and end, for a
    trace without the built-in markers: user-space events (``provider:name``: LTTng-UST's, a
    perf recording's uprobes ``probe_srv:request_begin`` or USDT probes) of one provider whose
    names differ only in their last word (begin/end, start/stop, entry/exit...; not a function's
    entry and exit), both seen and about as many ends as starts. (start, end, starts, ends), the
    most frequent first."""
    out = []
    for start, n_start in event_counts.items():
        provider, sep, name = start.partition(":")
        if not sep or not n_start or provider in _NOT_MARKERS or provider.startswith("lttng_ust"):
            continue
        for a, b in _PAIRS:
            lead = name[:-len(a)]
            if not name.endswith(a) or (lead and lead[-1] not in "_-.") or lead.startswith("func"):
                continue  # request_begin, not rebegin; a function's entry and exit are every call's
            end = f"{provider}:{lead}{b}"
            n_end = event_counts.get(end, 0)
            if n_end and min(n_start, n_end) >= 0.5 * max(n_start, n_end):
                out.append((start, end, n_start, n_end))
    out.sort(key=lambda c: (-min(c[2], c[3]), c[0]))
    return out[:most]
