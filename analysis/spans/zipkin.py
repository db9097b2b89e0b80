"""Zipkin v2 JSON: a list of spans (or a list of traces, each a list of spans); times in µs;
the replica is the local endpoint (ipv4/ipv6 and port) unless a host/pod tag names it.

Zipkin v1 JSON (older instrumentations and datasets: no localEndpoint, the endpoints in
``annotations`` and ``binaryAnnotations``) is read as Zipkin's own v1-to-v2 conversion reads it:
a span both sides recorded (``cs``/``cr`` by the caller, ``sr``/``ss`` by the callee) is a client
span in the caller and its server span in the callee (the server half keeps the id, so the
callee's own calls stay its children); a one-sided span is its side's; a local span (``lc``) its
component's; ``error`` in the binary annotations a failure; times from the annotations where the
span carries none.

Decoded by msgspec into structs holding only the fields read (a span's annotations and remote
endpoint are skipped by the decoder); a document whose shape does not fit them (a span that is
not an object) is read by json as a whole, which counts what it cannot use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import load_bytes

from .ids import is_empty_id, to_id64
from .jsonfile import load_json
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
    annotations: Any = None  # v1
    binaryAnnotations: Any = None  # v1


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
            if sp.localEndpoint is None and (sp.annotations or sp.binaryAnnotations):
                _add_v1(b, sp.traceId, sp.id, sp.parentId, sp.name, sp.timestamp, sp.duration, sp.annotations,
                        sp.binaryAnnotations)
            else:
                _add(b, sp.traceId, sp.id, sp.parentId, sp.name, sp.timestamp, sp.duration, sp.localEndpoint,
                     sp.tags)
        return
    _read_any(path, b)  # the whole document as json reads it: its error, or what fits


def _add(b: SpanBuilder, trace, sid, parent, name, timestamp, duration, ep, tags) -> None:
    """One span, or a problem counted (a field _MISSING or of a type that does not fit)."""
    try:
        tags = tags or {}
        service, where = _where(ep or {})
        replica = next((str(tags[k]) for k in REPLICA_TAGS if k in tags), where)
        if _MISSING in (trace, sid, timestamp):
            raise KeyError("traceId/id/timestamp")
        start = int(timestamp) * 1000
        failed = "error" in tags or str(tags.get("otel.status_code", "")).upper() == "ERROR"  # Zipkin's convention
        b.add(trace, to_id64(sid), None if is_empty_id(parent) else to_id64(parent), service, name, replica,
              start, start + int(duration) * 1000, failed)
    except (KeyError, TypeError, ValueError, AttributeError):
        b.problem("unparsable", "a Zipkin span without traceId/id/timestamp")


_CLIENT_HALF = 0x2C5A_93E1_4B7D_0F36  # the id of a v1 span's client half: its id's bits flipped so


def _add_v1(b: SpanBuilder, trace, sid, parent, name, timestamp, duration, annotations, binary) -> None:
    """A Zipkin v1 span: one span, or a client span and its server span where both sides recorded
    it (see the module's notes); a problem counted where it does not fit."""
    try:
        at = {}
        for a in annotations or ():
            at.setdefault(a.get("value"), (int(a["timestamp"]), a.get("endpoint") or {}))
        binary = [x for x in binary or () if isinstance(x, dict)]
        failed = any(x.get("key") == "error" for x in binary)
        if _MISSING in (trace, sid):
            raise KeyError("traceId/id")
        times = [t for t, _ in at.values()]
        start = int(timestamp) if timestamp is not _MISSING and timestamp is not None else min(times)
        end = start + int(duration) if duration else max(times, default=start)
        me = to_id64(sid)
        up = None if is_empty_id(parent) else to_id64(parent)
        client = at.get("cs") or at.get("cr")
        server = at.get("sr") or at.get("ss")
        if client and server and client[1].get("serviceName") != server[1].get("serviceName"):
            c0, c1 = at.get("cs", (start, None))[0], at.get("cr", (end, None))[0]
            s0, s1 = at.get("sr", (c0, None))[0], at.get("ss", (c1, None))[0]
            half = me ^ _CLIENT_HALF
            (caller, caller_at), (callee, callee_at) = _where(client[1]), _where(server[1])
            b.add(trace, half, up, caller, name, caller_at, c0 * 1000, c1 * 1000, False)
            b.add(trace, me, half, callee, name, callee_at, s0 * 1000, s1 * 1000, failed)
            return
        ep = (server or client or (None, next((x.get("endpoint") for x in binary if x.get("endpoint")), None)))[1]
        service, replica = _where(ep or {})
        b.add(trace, me, up, service, name, replica, start * 1000, end * 1000, failed)
    except (KeyError, TypeError, ValueError, AttributeError):
        b.problem("unparsable", "a Zipkin v1 span without traceId/id or times")


def _where(ep: dict) -> tuple:
    """(service, replica) of an endpoint (v2's localEndpoint, a v1 annotation's): its address and
    port, else its service."""
    service = ep.get("serviceName", "")
    addr = ep.get("ipv4") or ep.get("ipv6") or service or "?"
    return service, (f"{addr}:{ep['port']}" if "port" in ep else addr)


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
        if sp.get("localEndpoint") is None and (sp.get("annotations") or sp.get("binaryAnnotations")):
            _add_v1(b, sp.get("traceId", _MISSING), sp.get("id", _MISSING), sp.get("parentId"), sp.get("name", "?"),
                    sp.get("timestamp", _MISSING), sp.get("duration", 0), sp.get("annotations"),
                    sp.get("binaryAnnotations"))
            continue
        _add(b, sp.get("traceId", _MISSING), sp.get("id", _MISSING), sp.get("parentId"), sp.get("name", "?"),
             sp.get("timestamp", _MISSING), sp.get("duration", 0), sp.get("localEndpoint"), sp.get("tags"))
