"""Spans as a columnar table, whatever format they came from.

One row per span (a method invocation): its request (trace), its own id and its parent's
(64-bit integers: the hex ids of OpenTelemetry/Jaeger/Zipkin and the MIDs of the CloudDiag log
format alike), the method (service + operation), the replica that ran it (host / instance / pod),
start and end in ns. Strings are interned to codes. Readers append to a :class:`SpanBuilder`
batch after batch; :meth:`SpanBuilder.finish` resolves parents with one sort (never per span in
Python) and counts what is wrong instead of failing: duplicate span ids, missing parents
(orphans), negative durations, cycles.
"""

from __future__ import annotations

import itertools
from array import array
from dataclasses import dataclass, field, fields

import numpy as np

from perftriage.analysis.columns import StringPool
from perftriage.analysis.timeparse import NS_MAX, NS_MIN
from perftriage.analysis.units import count_of

ROOT = -1  # parent of a root span
MISSING_PARENT = -2  # parent id given but not found in the request


@dataclass
class SpanProblems:
    duplicates: int = 0  # the same span id twice with different contents (the later ones dropped)
    repeated: int = 0  # the same span twice, identical (files that overlap): counted once, not a problem
    rootless: int = 0  # requests without a root span whose one orphan was taken as their root
    orphans: int = 0  # parent id not among the request's spans
    negative: int = 0  # end before start (kept with duration 0)
    cycles: int = 0  # spans whose ancestors loop (detached: treated as orphans)
    unparsable: int = 0  # lines / records that could not be read
    unfinished: int = 0  # invocations whose return was never logged (dropped)
    details: list = field(default_factory=list)  # a few examples, for the report

    def total(self) -> int:
        """Problems that lose or distort data (repeated identical spans and promoted roots are not)."""
        return self.duplicates + self.orphans + self.negative + self.cycles + self.unparsable + self.unfinished

    def lines(self) -> list[str]:
        out = []
        if self.repeated:
            out.append(f"{count_of(self.repeated, 'spans')} given twice, identical (overlapping files): counted once")
        if self.rootless:
            out.append(f"{count_of(self.rootless, 'requests')} without a root marker: "
                       f"{'its' if self.rootless == 1 else 'their'} one span whose parent never occurs taken as the root")
        for one, many, n in (("duplicate span id", "duplicate span ids", self.duplicates),
                             ("orphan span (parent not found)", "orphan spans (parent not found)", self.orphans),
                             ("negative duration", "negative durations", self.negative),
                             ("span in a parent cycle", "spans in parent cycles", self.cycles),
                             ("unreadable record", "unreadable records", self.unparsable),
                             ("invocation without a return (dropped)", "invocations without a return (dropped)",
                              self.unfinished)):
            if n:
                out.append(f"{n:,} {one if n == 1 else many}")
        return out


@dataclass
class SpanTable:
    trace: np.ndarray  # int32 request code
    span: np.ndarray  # int64 span id
    parent: np.ndarray  # int64 row of the parent span, ROOT or MISSING_PARENT
    method: np.ndarray  # int32 code into methods
    service: np.ndarray  # int32 code into services
    replica: np.ndarray  # int32 code into replicas
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns
    traces: list[str]
    methods: list[str]
    services: list[str]
    replicas: list[str]
    problems: SpanProblems = field(default_factory=SpanProblems)
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how the readers read the files (a column they lacked)
    #: bool per span: it ended in an error (OTLP status ERROR, Jaeger/Zipkin's error tag, a CSV's
    #: status column); None where no input said anything of errors (no status in its format)
    error: np.ndarray | None = None
    #: the spans carry no status: ``error`` says which ran an error handler (status.from_error_handlers)
    error_inferred: bool = False

    def __len__(self) -> int:
        return len(self.span)

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.trace, self.span, self.parent, self.method, self.service, self.replica,
                                      self.start, self.end)) + (0 if self.error is None else self.error.nbytes)


class Labels:
    """A column of strings as its distinct values and each row's index into them (a reader that
    knows the distinct values, say one service per resource, gives them so; the others are
    interned here). The values are numbered in the order they first occur in the rows, every one
    of them used: so they are coded in that order without a sort."""

    def __init__(self, values: list, index: np.ndarray):
        self.values = values
        self.index = index

    @classmethod
    def of(cls, column, n: int) -> "Labels":
        # each row: the position of the first row with its value (C-level map, no Python frame
        # per row), then those positions numbered in order
        seen: dict = {}
        first = np.fromiter(map(seen.setdefault, column, itertools.count()), np.int64, n)
        number = np.zeros(n, np.int64)
        number[np.fromiter(seen.values(), np.int64, len(seen))] = np.arange(len(seen))
        return cls(list(seen), number[first])

    @classmethod
    def of_series(cls, col) -> "Labels":
        """A polars column of strings (no nulls), by polars: its distinct values in the order they
        first occur, each row's index into them."""
        values = col.unique(maintain_order=True)
        index = col.replace_strict(values, np.arange(len(values), dtype=np.int64))
        return cls(values.to_list(), index.to_numpy().astype(np.int64, copy=False))

    def codes(self, pool: "StringPool") -> np.ndarray:
        """The rows' codes in ``pool``; distinct values new to it coded in the order they first
        occur in the rows."""
        table = np.array([pool.code(str(v)) for v in self.values] or [-1], np.int32)
        return table[self.index]


class SpanBuilder:
    """Collects raw spans (ids as 64-bit ints, names as strings) from one or more readers."""

    def __init__(self):
        self._trace = array("i")
        self._span = array("q")
        self._parent = array("q")
        self._has_parent = array("b")
        self._method = array("i")
        self._service = array("i")
        self._replica = array("i")
        self._start = array("q")
        self._end = array("q")
        self._error = array("b")
        self.status_known = False  # a reader whose format says which spans failed read some spans
        self.traces = StringPool()
        self.methods = StringPool()
        self.services = StringPool()
        self.replicas = StringPool()
        self.problems = SpanProblems()
        self.sources: list[str] = []
        self.notes: list[str] = []

    def __len__(self) -> int:
        return len(self._span)

    def add(self, trace: str, span: int, parent: int | None, service: str, operation: str, replica: str,
            start: int, end: int, error: bool = False) -> None:
        """One span; all or nothing: whatever a reader hands over that cannot be stored (a time
        beyond int64 nanoseconds, an id that is not a 64-bit integer, a name that is not text)
        raises before any column grows, so a reader that counts it unreadable keeps the columns
        aligned."""
        if not (NS_MIN <= start <= NS_MAX and NS_MIN <= end <= NS_MAX):  # also False for NaN
            self.problem("unparsable", f"a span of trace {str(trace)[:40]} with a time beyond 64-bit nanoseconds "
                                       "(before 1677 or after 2262)")
            return
        for v in (span, parent if parent is not None else 0):
            if not (isinstance(v, (int, np.integer)) and NS_MIN <= v <= NS_MAX):
                raise ValueError(f"span id {v!r} is not a 64-bit integer")
        codes = (self.traces.code(trace), self.methods.code(f"{service}:{operation}" if service else operation),
                 self.services.code(service), self.replicas.code(replica))
        self._trace.append(codes[0])
        self._span.append(span)
        self._parent.append(parent if parent is not None else 0)
        self._has_parent.append(0 if parent is None else 1)
        self._method.append(codes[1])
        self._service.append(codes[2])
        self._replica.append(codes[3])
        self._start.append(int(start))
        self._end.append(int(end))
        self._error.append(1 if error else 0)

    def add_columns(self, trace, span: np.ndarray, parent: np.ndarray, has_parent: np.ndarray, service, operation,
                    replica, start: np.ndarray, end: np.ndarray, error: np.ndarray | None = None) -> None:
        """Many spans at once: ``trace``, ``service``, ``operation``, ``replica`` are sequences of
        strings (interned once per distinct value) or :class:`Labels`, the others arrays
        (``error``: which spans failed, None for none)."""
        n = len(span)
        if n == 0:
            return
        trace, service, operation, replica = (x if isinstance(x, Labels) else Labels.of(x, n)
                                              for x in (trace, service, operation, replica))
        # methods: the distinct (service, operation) pairs of the batch
        nop = max(1, len(operation.values))
        pair = service.index.astype(np.int64) * nop + operation.index
        upair, first, pinv = np.unique(pair, return_index=True, return_inverse=True)
        by_first = np.argsort(first, kind="stable")  # the pairs in the order they first occur
        number = np.empty(len(upair), np.int64)
        number[by_first] = np.arange(len(upair))
        names = []
        for p in upair[by_first].tolist():
            sv, op = str(service.values[p // nop]), str(operation.values[p % nop])
            names.append(f"{sv}:{op}" if sv else op)
        method = Labels(names, number[pinv.reshape(-1)])
        self._trace.frombytes(trace.codes(self.traces).tobytes())
        self._span.frombytes(np.asarray(span, np.int64).tobytes())
        self._parent.frombytes(np.where(has_parent, parent, 0).astype(np.int64).tobytes())
        self._has_parent.frombytes(np.asarray(has_parent, bool).astype(np.int8).tobytes())
        self._method.frombytes(method.codes(self.methods).tobytes())
        self._service.frombytes(service.codes(self.services).tobytes())
        self._replica.frombytes(replica.codes(self.replicas).tobytes())
        self._start.frombytes(np.asarray(start, np.int64).tobytes())
        self._end.frombytes(np.asarray(end, np.int64).tobytes())
        self._error.frombytes((np.zeros(n, np.int8) if error is None else np.asarray(error, bool).astype(np.int8)).tobytes())

    def extend(self, other: "SpanBuilder") -> None:
        """Append another builder's spans (the second half of a file, read by a child process:
        halves.py) after these, its strings coded in this builder's pools in the order they
        first occur there; its problems added to these (details up to five, these first)."""
        n = len(other)
        self.notes += [x for x in other.notes if x not in self.notes]
        for mine, theirs, col, src in ((self.traces, other.traces, self._trace, other._trace),
                                       (self.methods, other.methods, self._method, other._method),
                                       (self.services, other.services, self._service, other._service),
                                       (self.replicas, other.replicas, self._replica, other._replica)):
            if n:
                table = np.array([mine.code(x) for x in theirs.strings] or [-1], np.int32)
                col.frombytes(table[np.frombuffer(src, np.int32)].tobytes())
        for col, src in ((self._span, other._span), (self._parent, other._parent), (self._has_parent, other._has_parent),
                         (self._start, other._start), (self._end, other._end), (self._error, other._error)):
            col.extend(src)
        self.status_known |= other.status_known
        theirs = other.problems
        for f in fields(SpanProblems):
            if f.name != "details":
                setattr(self.problems, f.name, getattr(self.problems, f.name) + getattr(theirs, f.name))
        self.problems.details.extend(theirs.details[:max(0, 5 - len(self.problems.details))])

    def problem(self, kind: str, detail: str | None = None) -> None:
        setattr(self.problems, kind, getattr(self.problems, kind) + 1)
        if detail and len(self.problems.details) < 5:
            self.problems.details.append(detail)

    def finish(self) -> SpanTable:
        trace = np.frombuffer(self._trace, np.int32).copy() if len(self._trace) else np.zeros(0, np.int32)
        span = np.frombuffer(self._span, np.int64).copy() if len(self._span) else np.zeros(0, np.int64)
        pid = np.frombuffer(self._parent, np.int64).copy() if len(self._parent) else np.zeros(0, np.int64)
        has_parent = np.frombuffer(self._has_parent, np.int8).astype(bool) if len(self._has_parent) else \
            np.zeros(0, bool)
        start = np.frombuffer(self._start, np.int64).copy() if len(self._start) else np.zeros(0, np.int64)
        end = np.frombuffer(self._end, np.int64).copy() if len(self._end) else np.zeros(0, np.int64)
        error = np.frombuffer(self._error, np.int8).astype(bool) if len(self._error) else np.zeros(0, bool)
        n = len(span)
        probs = self.problems
        # one sort for duplicates and parents: span ids (64-bit) are ranked with the parent ids,
        # so that (request, rank) fits one int64 key
        ids, inv = np.unique(np.concatenate([span, pid]), return_inverse=True)
        inv = inv.reshape(-1)
        u = np.int64(max(1, len(ids)))
        key = trace.astype(np.int64) * u + inv[:n]
        order = np.argsort(key, kind="stable")
        sk = key[order]
        # duplicates: the same (request, span id) twice; the later ones are dropped
        dup = np.zeros(n, bool)
        if n > 1:
            same = sk[1:] == sk[:-1]
            a, b = order[:-1][same], order[1:][same]
            dup[b] = True
            identical = (start[b] == start[a]) & (end[b] == end[a])
            probs.repeated += int(identical.sum())
            probs.duplicates += int((~identical).sum())
        keep = ~dup
        qkey = (trace.astype(np.int64) * u + inv[n:])[keep]
        kept_sorted = order[keep[order]]
        sk = key[kept_sorted]
        order = (np.cumsum(keep) - 1)[kept_sorted]  # positions among the kept rows, in key order
        cols = {k: v[keep] for k, v in dict(trace=trace, span=span, pid=pid, has_parent=has_parent, start=start,
                                             end=end, error=error, method=np.frombuffer(self._method, np.int32)[:n] if n else
                                             np.zeros(0, np.int32), service=np.frombuffer(self._service, np.int32)[:n]
                                             if n else np.zeros(0, np.int32), replica=np.frombuffer(
                                                 self._replica, np.int32)[:n] if n else np.zeros(0, np.int32)).items()}
        n = len(cols["span"])
        neg = cols["end"] < cols["start"]
        probs.negative += int(neg.sum())
        cols["end"] = np.where(neg, cols["start"], cols["end"])
        pos = np.searchsorted(sk, qkey)
        found = (pos < n) & (sk[np.minimum(pos, max(n - 1, 0))] == qkey) if n else np.zeros(0, bool)
        parent = np.full(n, ROOT, np.int64)
        hp = cols["has_parent"]
        parent[hp & found] = order[pos[hp & found]]
        parent[hp & ~found] = MISSING_PARENT
        # a request without a root whose one orphan names a parent that never occurs: that span
        # is its root (exports that mark a root with an id of their own)
        tr = cols["trace"]
        has_root = np.zeros(len(self.traces.strings) + 1, bool)
        has_root[tr[parent == ROOT]] = True
        orphan = parent == MISSING_PARENT
        per = np.bincount(tr[orphan], minlength=len(has_root))
        promote = orphan & ~has_root[tr] & (per[tr] == 1)
        parent[promote] = ROOT
        probs.rootless += int(promote.sum())
        probs.orphans += int((hp & ~found).sum()) - int(promote.sum())
        # a span that is its own parent, or ancestors that loop: detach
        parent = _break_cycles(parent, probs)
        return SpanTable(
            trace=cols["trace"].astype(np.int32), span=cols["span"], parent=parent,
            method=cols["method"].astype(np.int32), service=cols["service"].astype(np.int32),
            replica=cols["replica"].astype(np.int32), start=cols["start"], end=cols["end"],
            traces=self.traces.strings, methods=self.methods.strings, services=self.services.strings,
            replicas=self.replicas.strings, problems=probs, sources=list(self.sources), notes=list(self.notes),
            error=cols["error"] if self.status_known else None,
        )


def _break_cycles(parent: np.ndarray, probs: SpanProblems) -> np.ndarray:
    """Detach spans whose chain of parents never reaches a root (a cycle), vectorised: follow
    parents by pointer doubling; what has not reached a root after log2(n) doublings loops."""
    n = len(parent)
    if n == 0:
        return parent
    up = follow(np.where(parent >= 0, parent, np.arange(n)))  # roots and orphans point to themselves
    top_is_root = parent[up] < 0
    in_cycle = ~top_is_root
    if in_cycle.any():
        probs.cycles += int(in_cycle.sum())
        parent = parent.copy()
        parent[in_cycle] = MISSING_PARENT
    return parent


def follow(up: np.ndarray) -> np.ndarray:
    """Where each index's chain of pointers ``up`` ends (an index pointing to itself ends one),
    by pointer doubling: log2(n) + 1 rounds at most, fewer where every chain has ended. A chain
    that loops ends somewhere on its loop."""
    for _ in range(int(np.ceil(np.log2(len(up) + 1))) + 1):
        nxt = up[up]
        if np.array_equal(nxt, up):
            break
        up = nxt
    return up


def ancestors(parent: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per span: whether it is an ancestor of one of ``rows`` (their parents, theirs, up to the
    roots), level by level, each span marked once (``parent``: a table's, loops broken)."""
    out = np.zeros(len(parent), bool)
    up = parent[rows]
    while True:
        up = up[up >= 0]
        up = up[~out[up]]
        if not len(up):
            return out
        out[up] = True
        up = parent[up]
