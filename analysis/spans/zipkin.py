"""Zipkin v2 JSON: a list of spans (or a list of traces, each a list of spans); times in µs;
the replica is the local endpoint (ipv4/ipv6 and port) unless a host/pod tag names it."""

from __future__ import annotations

from pathlib import Path

from perftriage.analysis.errors import InputError

from .ids import is_empty_id, to_id64
from .jsonfile import load_json
from .table import SpanBuilder

REPLICA_TAGS = ("hostname", "host", "k8s.pod.name", "service.instance.id")


def sniff(path: Path, head: bytes) -> bool:
    h = head.lstrip()[:4096]
    return h.startswith(b"[") and b'"traceId"' in h and b'"resourceSpans"' not in h


def read(path: Path, b: SpanBuilder) -> None:
    doc = load_json(path)
    if not isinstance(doc, list):
        raise InputError(path, "not Zipkin v2 JSON (expected a list of spans)")
    spans = doc
    if doc and isinstance(doc[0], list):
        spans = [s for trace in doc for s in trace]
    for sp in spans:
        try:
            ep = sp.get("localEndpoint") or {}
            tags = sp.get("tags") or {}
            service = ep.get("serviceName", "")
            replica = next((str(tags[k]) for k in REPLICA_TAGS if k in tags), None)
            if replica is None:
                addr = ep.get("ipv4") or ep.get("ipv6") or service or "?"
                replica = f"{addr}:{ep['port']}" if "port" in ep else addr
            start = int(sp["timestamp"]) * 1000
            parent = sp.get("parentId")
            b.add(sp["traceId"], to_id64(sp["id"]), None if is_empty_id(parent) else to_id64(parent), service,
                  sp.get("name", "?"), replica, start, start + int(sp.get("duration", 0)) * 1000)
        except (KeyError, TypeError, ValueError, AttributeError):
            b.problem("unparsable", "a Zipkin span without traceId/id/timestamp")
