"""Jaeger JSON, as the UI and the query API export it: ``{"data": [trace, ...]}``, each trace
with ``spans`` (times in µs) and ``processes`` (service name and tags).

Decoded by msgspec into structs that hold only the fields read (a span's tags and logs, most of
an export's bytes, are skipped by the decoder, never built as Python objects); a document whose
shape does not fit them (a span that is not an object, say) is read by json as a whole, which
counts what it cannot use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import load_bytes

from .ids import to_id64
from .jsonfile import load_json
from .table import SpanBuilder

REPLICA_TAGS = ("hostname", "k8s.pod.name", "service.instance.id", "ip", "host.name")


def sniff(path: Path, head: bytes) -> bool:
    h = head[:4096]
    return b'"data"' in h and (b'"traceID"' in h or b'"spans"' in h) and b'"resourceSpans"' not in h


_MISSING = msgspec.UNSET


class _Span(msgspec.Struct, gc=False):
    traceID: Any = _MISSING
    spanID: Any = _MISSING
    operationName: Any = "?"
    references: Any = None
    startTime: Any = _MISSING
    duration: Any = 0
    processID: Any = None
    tags: msgspec.Raw = msgspec.Raw(b"[]")  # kept as bytes: looked into only where they mention an error


class _Process(msgspec.Struct, gc=False):
    serviceName: Any = _MISSING
    tags: Any = ()


class _Trace(msgspec.Struct, gc=False):
    spans: list[_Span] | None = None
    processes: dict[str, _Process] | None = None


class _Document(msgspec.Struct, gc=False):
    data: list[_Trace] | None = None


_DECODER = msgspec.json.Decoder(_Document | list[_Trace])


def _failed(tags) -> bool:
    """A span's tags say it failed: ``error`` true (Jaeger's convention) or OpenTelemetry's
    ``otel.status_code`` ERROR. Raw tags are decoded only where their bytes mention an error."""
    if isinstance(tags, msgspec.Raw):
        raw = bytes(tags)
        if b"error" not in raw and b"ERROR" not in raw:
            return False
        try:
            tags = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            return False
    for t in tags if isinstance(tags, list) else ():
        if not isinstance(t, dict):
            continue
        key, value = t.get("key"), t.get("value")
        if key == "error" and (value is True or str(value).lower() == "true"):
            return True
        if key == "otel.status_code" and str(value).upper() == "ERROR":
            return True
    return False


def read(path: Path, b: SpanBuilder) -> None:
    raw = load_bytes(path)
    b.status_known = True  # a span that failed carries an error tag
    try:
        doc = _DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
        _read_any(path, b)  # the whole document as json reads it: its error, or what fits
        return
    traces = doc.data if isinstance(doc, _Document) else doc
    if traces is None:
        raise InputError(path, "not Jaeger JSON (expected {\"data\": [traces]})")
    for tr in traces:
        procs = {}
        for pid, p in (tr.processes or {}).items():
            name = "?" if p.serviceName is _MISSING else p.serviceName
            procs[pid] = (_process(pid, p.tags, name), "" if p.serviceName is _MISSING else p.serviceName)
        for sp in tr.spans or ():
            _add(b, procs, sp.processID, sp.references, sp.startTime, sp.traceID, sp.spanID, sp.operationName,
                 sp.duration, sp.tags)


def _process(pid: str, tags, name) -> str:
    """A process's replica: a host or pod tag, else the service name and the process id."""
    tags = {t.get("key"): t.get("value") for t in tags or () if isinstance(t, dict)}
    return next((str(tags[k]) for k in REPLICA_TAGS if k in tags), f"{name}/{pid}")


def _add(b: SpanBuilder, procs: dict, pid, references, start, trace, span, operation, duration, tags=None) -> None:
    """One span, or a problem counted (a field _MISSING or of a type that does not fit)."""
    try:
        replica, service = procs.get(pid, ("?", ""))
        parent = None
        for ref in references or ():
            if ref.get("refType", "CHILD_OF") == "CHILD_OF":
                parent = to_id64(ref["spanID"])
                break
        if _MISSING in (start, trace, span):
            raise KeyError("traceID/spanID/startTime")
        start = int(start) * 1000
        b.add(trace, to_id64(span), parent, service, operation, replica, start, start + int(duration) * 1000,
              _failed(tags))
    except (KeyError, TypeError, ValueError):
        b.problem("unparsable", "a Jaeger span without traceID/spanID/startTime")


def _read_any(path: Path, b: SpanBuilder) -> None:
    """The document as json reads it, for a shape the structs do not fit."""
    b.status_known = True
    doc = load_json(path)
    traces = doc.get("data") if isinstance(doc, dict) else doc
    if not isinstance(traces, list):
        raise InputError(path, "not Jaeger JSON (expected {\"data\": [traces]})")
    for tr in traces:
        if not isinstance(tr, dict):
            b.problem("unparsable", "a Jaeger trace that is not an object")
            continue
        procs = {}
        for pid, p in (tr.get("processes") or {}).items():
            if isinstance(p, dict):
                procs[pid] = (_process(pid, p.get("tags", ()), p.get("serviceName", "?")), p.get("serviceName", ""))
        spans = tr.get("spans") or []
        if not isinstance(spans, list):
            raise InputError(path, f"not Jaeger JSON: a trace's spans are {type(spans).__name__}, not a list")
        for sp in spans:
            if not isinstance(sp, dict):
                b.problem("unparsable", "a Jaeger span that is not an object")
                continue
            _add(b, procs, sp.get("processID"), sp.get("references"), sp.get("startTime", _MISSING),
                 sp.get("traceID", _MISSING), sp.get("spanID", _MISSING), sp.get("operationName", "?"),
                 sp.get("duration", 0), sp.get("tags"))
