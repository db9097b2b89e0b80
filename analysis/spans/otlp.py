"""OpenTelemetry OTLP JSON, as the collector's file exporter writes it: one
ExportTraceServiceRequest per line (``resourceSpans`` > ``scopeSpans`` > ``spans``), or one
such document for the whole file; as Grafana Tempo gives a trace (``batches`` for
``resourceSpans``, API v1 and Grafana's trace download; ``{"trace": {"resourceSpans": ...}}``,
API v2). Ids are hex (base64 also accepted).

Decoded by msgspec into typed structs that hold only the fields read (the rest of a span, its
attributes and events, is skipped by the decoder, never built as Python objects); a resource is
kept as its raw bytes and named once per distinct resource. Spans go to the table a batch at a
time: ids of 16 hex digits converted together in numpy. A line whose types do not fit (a number
for an id, a list for a name) is read by the per-span path, which counts what it cannot use. A
large file of one request per line is read by two processes, half each (halves.py).
"""

from __future__ import annotations

import json
from itertools import chain
from operator import attrgetter
from pathlib import Path

from typing import Any

import msgspec
import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import open_data

from .halves import read_in_halves, split_at
from .ids import is_empty_id, to_id64
from .k8s import service_of_pod
from .table import Labels, SpanBuilder

REPLICA_KEYS = ("service.instance.id", "k8s.pod.name", "host.name", "host.id", "container.id", "net.host.name")
BATCH = 1 << 16  # spans per batch handed to the table


class _Status(msgspec.Struct, gc=False):
    code: Any = 0  # 2 or "STATUS_CODE_ERROR": the span failed


class _Span(msgspec.Struct, gc=False):
    traceId: str | None = None
    spanId: str | None = None
    parentSpanId: str | None = ""
    name: str = "?"
    startTimeUnixNano: int | None = None
    endTimeUnixNano: int | None = None
    status: _Status | None = None


def _failed(status) -> bool:
    """An OTLP status (struct or dict) says ERROR: code 2, or its name (exporters write either)."""
    code = status.get("code", 0) if isinstance(status, dict) else getattr(status, "code", 0)
    return code == 2 or code == "2" or (isinstance(code, str) and code.upper() in ("STATUS_CODE_ERROR", "ERROR"))


class _Scope(msgspec.Struct, gc=False):
    spans: list[_Span] = []


class _ResourceSpans(msgspec.Struct, gc=False):
    resource: msgspec.Raw = msgspec.Raw(b"{}")
    scopeSpans: list[_Scope] | None = None
    instrumentationLibrarySpans: list[_Scope] | None = None  # the name before OTLP 0.15


class _Inner(msgspec.Struct, gc=False):
    resourceSpans: list[_ResourceSpans] = []
    batches: list[_ResourceSpans] = []


class _Request(msgspec.Struct, gc=False):
    resourceSpans: list[_ResourceSpans] = []
    batches: list[_ResourceSpans] = []  # Grafana Tempo's trace by id (API v1), Grafana's download
    trace: _Inner | None = None  # Tempo's API v2: {"trace": {"resourceSpans": [...]}}

    def groups(self) -> list[_ResourceSpans]:
        inner = self.trace or _NONE
        return self.resourceSpans or self.batches or inner.resourceSpans or inner.batches


_NONE = _Inner()
_START, _END = attrgetter("startTimeUnixNano"), attrgetter("endTimeUnixNano")
_DECODER = msgspec.json.Decoder(_Request, strict=False)  # strict=False: "123" for an int, as OTLP writes times
_ANY = msgspec.json.Decoder()


def _attrs(lst) -> dict:
    out = {}
    for a in lst or ():
        v = a.get("value", {})
        for k in ("stringValue", "intValue", "doubleValue", "boolValue"):
            if k in v:
                out[a.get("key")] = v[k]
                break
    return out


def _names(attrs: dict) -> tuple[str, str]:
    """(service, replica) of a resource's attributes."""
    service = str(attrs.get("service.name", ""))
    replica = next((str(attrs[k]) for k in REPLICA_KEYS if k in attrs), service or "?")
    if not service or service.startswith("unknown_service"):
        pod = attrs.get("k8s.pod.name")
        service = str(attrs.get("k8s.deployment.name") or attrs.get("k8s.statefulset.name")
                      or (service_of_pod(str(pod)) if pod else None) or service)
    return service, replica


def sniff(path: Path, head: bytes) -> bool:
    h = head[:4096]
    return b'"resourceSpans"' in h or (b'"batches"' in h and (b'"scopeSpans"' in h or b'"instrumentationLibrarySpans"' in h))


class _Batches:
    """Spans of decoded requests, named by resource, handed to the table a batch at a time."""

    def __init__(self, b: SpanBuilder):
        self.b = b
        self.resources: dict[bytes, int] = {}  # a resource's raw JSON -> its index in names
        self.names: list[tuple[str, str]] = []  # (service, replica) of each distinct resource
        self.lists: list[list[_Span]] = []  # the spans of a batch, list by list
        self.of: list[int] = []  # the resource of each list
        self.n = 0

    def add(self, req: _Request) -> None:
        resources, lists, of = self.resources, self.lists, self.of
        for rs in req.groups():
            key = bytes(rs.resource)
            r = resources.get(key)
            if r is None:
                r = resources[key] = len(self.names)
                self.names.append(_resource_names(key))
            scopes = rs.scopeSpans if rs.scopeSpans is not None else rs.instrumentationLibrarySpans or ()
            for ss in scopes:
                if ss.spans:
                    lists.append(ss.spans)
                    of.append(r)
                    self.n += len(ss.spans)
        if self.n >= BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.n:
            return
        spans = list(chain.from_iterable(self.lists))
        # the batch's resources numbered in the order they first occur (so their names code in
        # the file's order without a sort over the spans)
        order = list(dict.fromkeys(self.of))
        number = {r: i for i, r in enumerate(order)}
        res_of_list = np.array([number[r] for r in self.of], np.int64)
        res_local = np.repeat(res_of_list, [len(x) for x in self.lists])
        self.lists, self.of, self.n = [], [], 0
        service = Labels([self.names[r][0] for r in order], res_local)
        replica = Labels([self.names[r][1] for r in order], res_local)
        try:
            trace = [s.traceId for s in spans]
            start = np.fromiter(map(_START, spans), np.int64, len(spans))  # C-level: no list of ints
            end = np.fromiter(map(_END, spans), np.int64, len(spans))
            if None in trace:
                raise TypeError
            span = _ids([s.spanId for s in spans])
            if span is None:
                raise TypeError
        except (TypeError, OverflowError, ValueError):  # a span without an id or a time, a time beyond int64
            for s, r in zip(spans, res_local.tolist()):
                _add_one(self.b, s, *self.names[order[r]])
            return
        parent, has_parent = _parents([s.parentSpanId for s in spans])
        error = np.fromiter((s.status is not None and _failed(s.status) for s in spans), bool, len(spans))
        self.b.add_columns(trace, span, parent, has_parent, service, [s.name for s in spans], replica, start, end,
                           error)


def _resource_names(raw: bytes) -> tuple[str, str]:
    try:
        res = _ANY.decode(raw)
        attrs = _attrs(res.get("attributes")) if isinstance(res, dict) else {}
    except (msgspec.DecodeError, AttributeError, TypeError):
        attrs = {}
    return _names(attrs)


_ZERO16 = "0" * 16


def _hex16(ids: list) -> np.ndarray | None:
    """Ids that are all 16 hex digits as int64 (the same as :func:`to_id64`), else None."""
    try:
        joined = "".join(ids)
        if len(joined) != 16 * len(ids):
            return None
        raw = bytes.fromhex(joined)  # C: validates and converts in one pass
    except (TypeError, ValueError):
        return None
    if len(raw) != 8 * len(ids):  # fromhex skips whitespace
        return None
    return np.frombuffer(raw, ">u8").astype(np.uint64).view(np.int64)


def _ids(ids: list) -> np.ndarray | None:
    fast = _hex16(ids)
    if fast is not None:
        return fast
    try:
        return np.array([to_id64(x) for x in ids], np.int64)
    except (TypeError, ValueError):
        return None


def _parents(ids: list) -> tuple[np.ndarray, np.ndarray]:
    """Parent ids and whether there is one (none: empty, zeros, or words such as ``root``)."""
    fast = _hex16([x or _ZERO16 for x in ids])
    if fast is not None:
        return fast, fast != 0
    has = np.array([not is_empty_id(x) for x in ids], bool)
    return np.array([to_id64(x) if h else 0 for x, h in zip(ids, has)], np.int64), has


def _add_one(b: SpanBuilder, s: _Span, service: str, replica: str) -> None:
    try:
        if s.traceId is None or s.spanId is None or s.startTimeUnixNano is None or s.endTimeUnixNano is None:
            raise KeyError
        b.add(s.traceId, to_id64(s.spanId), None if is_empty_id(s.parentSpanId) else to_id64(s.parentSpanId),
              service, s.name, replica, int(s.startTimeUnixNano), int(s.endTimeUnixNano),
              s.status is not None and _failed(s.status))
    except (KeyError, TypeError, ValueError):
        b.problem("unparsable", "an OTLP span without traceId/spanId/times")


def read(path: Path, b: SpanBuilder, jobs: int | None = None) -> None:
    """``jobs``: cores that may be used (None: those this process may run on); with two, a
    large file of one request per line is read by two processes (halves.py)."""
    try:
        f = open_data(path, binary=True)
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    with f:
        first = f.readline()
        if not first.lstrip().startswith(b"{"):
            raise InputError(path, "not OTLP JSON (expected an object with resourceSpans)")
        b.status_known = True  # OTLP spans carry their status (UNSET where the exporter set none)
        # one document per line (file exporter), or one big document
        batches = _Batches(b)
        try:
            _one(first, batches, b, path, first_line=True)
        except msgspec.DecodeError:
            f.seek(0)
            whole = f.read()
            try:
                _one(whole, batches, b, path, first_line=True)
            except msgspec.DecodeError as exc:
                raise InputError(path, f"not valid JSON ({exc})") from None
            batches.flush()
            return
        batches.flush()
        mid = split_at(path, f, f.tell(), jobs)

        def read_lines(g, builder: SpanBuilder, end: int | None) -> None:
            _lines(g, builder, path, end)

        if mid is None:
            read_lines(f, b, None)
        else:
            read_in_halves(path, f, b, mid, read_lines)


def _lines(f, b: SpanBuilder, path: Path, end: int | None) -> None:
    """The lines of f from its position, up to byte ``end`` (None: to the end)."""
    batches = _Batches(b)
    pos = f.tell() if end is not None else 0
    for line in f:
        if end is not None:
            if pos >= end:
                break
            pos += len(line)
        if not line.strip():
            continue
        try:
            _one(line, batches, b, path)
        except msgspec.DecodeError:
            b.problem("unparsable", f"{path.name}: a line is not JSON")
    batches.flush()


def _one(text: bytes, batches: _Batches, b: SpanBuilder, path: Path, first_line: bool = False) -> None:
    """One ExportTraceServiceRequest; one whose types do not fit the structs goes span by span,
    as does one msgspec refuses but Python's json reads (a lone UTF-16 surrogate escape, which
    a truncated JavaScript string leaves)."""
    try:
        batches.add(_DECODER.decode(text))
        return
    except msgspec.ValidationError:
        doc = _ANY.decode(text)
    except msgspec.DecodeError:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:  # json's words: what, and on which line
            raise msgspec.DecodeError(f"{exc.msg} at line {exc.lineno}") from None
        except (ValueError, RecursionError) as exc:
            raise msgspec.DecodeError(str(exc)) from None
    if not isinstance(doc, dict):
        if first_line:
            raise InputError(path, "not OTLP JSON (expected an object with resourceSpans)")
        b.problem("unparsable", f"{path.name}: a line is not an OTLP request object")
        return
    batches.flush()  # the table keeps the order of the file
    _doc(doc, b)


def _doc(doc: dict, b: SpanBuilder) -> None:
    """The per-span path, for documents the typed decoder refused: a span that cannot be used is
    counted; a document of the wrong shape (a number for resourceSpans) raises, and the reader's
    boundary makes that one line naming the file."""
    inner = doc.get("trace") if isinstance(doc.get("trace"), dict) else {}
    groups = doc.get("resourceSpans") or doc.get("batches") or inner.get("resourceSpans") or inner.get("batches") or ()
    for rs in groups:
        service, replica = _names(_attrs(rs.get("resource", {}).get("attributes")))
        for ss in rs.get("scopeSpans", rs.get("instrumentationLibrarySpans", ())):
            for sp in ss.get("spans", ()):
                try:
                    parent = sp.get("parentSpanId")
                    b.add(sp["traceId"], to_id64(sp["spanId"]), None if is_empty_id(parent) else to_id64(parent),
                          service, sp.get("name", "?"), replica, int(sp["startTimeUnixNano"]),
                          int(sp["endTimeUnixNano"]), _failed(sp.get("status") or {}))
                except (KeyError, TypeError, ValueError):
                    b.problem("unparsable", "an OTLP span without traceId/spanId/times")
