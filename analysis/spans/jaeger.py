"""Jaeger JSON, as the UI and the query API export it: ``{"data": [trace, ...]}``, each trace
with ``spans`` (times in µs) and ``processes`` (service name and tags)."""

from __future__ import annotations

from pathlib import Path

from perftriage.analysis.errors import InputError

from .ids import to_id64
from .jsonfile import load_json
from .table import SpanBuilder

REPLICA_TAGS = ("hostname", "k8s.pod.name", "service.instance.id", "ip", "host.name")


def sniff(path: Path, head: bytes) -> bool:
    h = head[:4096]
    return b'"data"' in h and (b'"traceID"' in h or b'"spans"' in h) and b'"resourceSpans"' not in h


def read(path: Path, b: SpanBuilder) -> None:
    doc = load_json(path)
    traces = doc.get("data") if isinstance(doc, dict) else doc
    if not isinstance(traces, list):
        raise InputError(path, "not Jaeger JSON (expected {\"data\": [traces]})")
    for tr in traces:
        procs = {}
        for pid, p in (tr.get("processes") or {}).items():
            tags = {t.get("key"): t.get("value") for t in p.get("tags", ())}
            replica = next((str(tags[k]) for k in REPLICA_TAGS if k in tags), f"{p.get('serviceName', '?')}/{pid}")
            procs[pid] = (p.get("serviceName", ""), replica)
        for sp in tr.get("spans", ()):
            try:
                service, replica = procs.get(sp.get("processID"), ("", "?"))
                parent = None
                for ref in sp.get("references") or ():
                    if ref.get("refType", "CHILD_OF") == "CHILD_OF":
                        parent = to_id64(ref["spanID"])
                        break
                start = int(sp["startTime"]) * 1000
                b.add(sp["traceID"], to_id64(sp["spanID"]), parent, service, sp.get("operationName", "?"), replica,
                      start, start + int(sp.get("duration", 0)) * 1000)
            except (KeyError, TypeError, ValueError):
                b.problem("unparsable", "a Jaeger span without traceID/spanID/startTime")
