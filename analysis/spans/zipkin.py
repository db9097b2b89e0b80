"""Zipkin v2 JSON: a list of spans (or a list of traces, each a list of spans); times in µs;
the replica is the local endpoint (ipv4/ipv6 and port) unless a host/pod tag names it.

Decoded by msgspec into structs holding only the fields read (a span's annotations and remote
endpoint are skipped by the decoder); a document whose shape does not fit them (a span that is
not an object) is read by json as a whole, which counts what it cannot use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from perftriage.analysis.errors import InputError

from .ids import is_empty_id, to_id64
from .jsonfile import load_bytes, load_json
from .table import SpanBuilder

REPLICA_TAGS = ("hostname", "host", "k8s.pod.name", "service.instance.id")


def sniff(path: Path, head: bytes) -> bool:
    h = head.lstrip()[:4096]
    return h.startswith(b"[") and b'"traceId"' in h and b'"resourceSpans"' not in h


_MISSING = msgspec.UNSET


class _Span(msgspec.Struct, gc=False):
    traceId: Any = _MISSING
    id: Any = _MISSING
    parentId: Any = None
    name: Any = "?"
    timestamp: Any = _MISSING
    duration: Any = 0
    localEndpoint: Any = None
    tags: Any = None


_SPANS = msgspec.json.Decoder(list[_Span])
_TRACES = msgspec.json.Decoder(list[list[_Span]])


def read(path: Path, b: SpanBuilder) -> None:
    raw = load_bytes(path)
    b.status_known = True  # a span that failed carries an error tag
    for decoder in (_SPANS, _TRACES):  # a list of spans, or of traces
        try:
            doc = decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
        spans = doc if decoder is _SPANS else [s for trace in doc for s in trace]
        for sp in spans:
            _add(b, sp.traceId, sp.id, sp.parentId, sp.name, sp.timestamp, sp.duration, sp.localEndpoint, sp.tags)
        return
    _read_any(path, b)  # the whole document as json reads it: its error, or what fits


def _add(b: SpanBuilder, trace, sid, parent, name, timestamp, duration, ep, tags) -> None:
    """One span, or a problem counted (a field _MISSING or of a type that does not fit)."""
    try:
        ep = ep or {}
        tags = tags or {}
        service = ep.get("serviceName", "")
        replica = next((str(tags[k]) for k in REPLICA_TAGS if k in tags), None)
        if replica is None:
            addr = ep.get("ipv4") or ep.get("ipv6") or service or "?"
            replica = f"{addr}:{ep['port']}" if "port" in ep else addr
        if _MISSING in (trace, sid, timestamp):
            raise KeyError("traceId/id/timestamp")
        start = int(timestamp) * 1000
        failed = "error" in tags or str(tags.get("otel.status_code", "")).upper() == "ERROR"  # Zipkin's convention
        b.add(trace, to_id64(sid), None if is_empty_id(parent) else to_id64(parent), service, name, replica,
              start, start + int(duration) * 1000, failed)
    except (KeyError, TypeError, ValueError, AttributeError):
        b.problem("unparsable", "a Zipkin span without traceId/id/timestamp")


def _read_any(path: Path, b: SpanBuilder) -> None:
    """The document as json reads it, for a shape the structs do not fit."""
    b.status_known = True
    doc = load_json(path)
    if not isinstance(doc, list):
        raise InputError(path, "not Zipkin v2 JSON (expected a list of spans)")
    spans = doc
    if doc and isinstance(doc[0], list):
        spans = [s for trace in doc for s in (trace if isinstance(trace, list) else [trace])]
    for sp in spans:
        if not isinstance(sp, dict):
            b.problem("unparsable", "a Zipkin span that is not an object")
            continue
        _add(b, sp.get("traceId", _MISSING), sp.get("id", _MISSING), sp.get("parentId"), sp.get("name", "?"),
             sp.get("timestamp", _MISSING), sp.get("duration", 0), sp.get("localEndpoint"), sp.get("tags"))
