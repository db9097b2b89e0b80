"""OpenTelemetry OTLP JSON, as the collector's file exporter writes it: one
ExportTraceServiceRequest per line (``resourceSpans`` > ``scopeSpans`` > ``spans``), or one
such document for the whole file. Ids are hex (base64 also accepted)."""

from __future__ import annotations

import json
from pathlib import Path

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import open_data

from .ids import is_empty_id, to_id64
from .k8s import service_of_pod
from .table import SpanBuilder

REPLICA_KEYS = ("service.instance.id", "k8s.pod.name", "host.name", "host.id", "container.id", "net.host.name")


def _attrs(lst) -> dict:
    out = {}
    for a in lst or ():
        v = a.get("value", {})
        for k in ("stringValue", "intValue", "doubleValue", "boolValue"):
            if k in v:
                out[a.get("key")] = v[k]
                break
    return out


def sniff(path: Path, head: bytes) -> bool:
    return b'"resourceSpans"' in head[:4096]


def read(path: Path, b: SpanBuilder) -> None:
    try:
        f = open_data(path)
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    with f:
        text_start = f.read(1)
        f.seek(0)
        if text_start == "{":
            # one document per line (file exporter), or one big document
            first = f.readline()
            try:
                doc = json.loads(first)
                docs = [doc]
                lines = f
            except json.JSONDecodeError:
                f.seek(0)
                try:
                    docs = [json.load(f)]
                except json.JSONDecodeError as exc:
                    raise InputError(path, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
                lines = ()
            for doc in docs:
                _doc(doc, b)
            for line in lines:
                line = line.strip()
                if not line:
                    continue
                try:
                    _doc(json.loads(line), b)
                except json.JSONDecodeError:
                    b.problem("unparsable", f"{path.name}: a line is not JSON")
        else:
            raise InputError(path, "not OTLP JSON (expected an object with resourceSpans)")


def _doc(doc: dict, b: SpanBuilder) -> None:
    for rs in doc.get("resourceSpans", ()):
        attrs = _attrs(rs.get("resource", {}).get("attributes"))
        service = str(attrs.get("service.name", ""))
        replica = next((str(attrs[k]) for k in REPLICA_KEYS if k in attrs), service or "?")
        if not service or service.startswith("unknown_service"):
            pod = attrs.get("k8s.pod.name")
            service = str(attrs.get("k8s.deployment.name") or attrs.get("k8s.statefulset.name")
                          or (service_of_pod(str(pod)) if pod else None) or service)
        for ss in rs.get("scopeSpans", rs.get("instrumentationLibrarySpans", ())):
            for sp in ss.get("spans", ()):
                try:
                    parent = sp.get("parentSpanId")
                    b.add(sp["traceId"], to_id64(sp["spanId"]), None if is_empty_id(parent) else to_id64(parent),
                          service, sp.get("name", "?"), replica, int(sp["startTimeUnixNano"]),
                          int(sp["endTimeUnixNano"]))
                except (KeyError, TypeError, ValueError):
                    b.problem("unparsable", "an OTLP span without traceId/spanId/times")
