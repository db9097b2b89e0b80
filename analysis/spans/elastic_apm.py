"""Elastic APM's transactions and spans as Elasticsearch gives them back: a search's
``hits.hits[]._source``, elasticdump's lines ``{"_source": ...}``, one document a line (NDJSON) or
a JSON array; fields nested (``{"trace": {"id"}}``) or dotted (``"trace.id"``, Kibana's fields).

A document whose ``processor.event`` is ``transaction`` is a server span (a request its service
served), ``span`` a span within one (a call out, a database query); errors and metrics are left
out. Its trace ``trace.id``, its id ``transaction.id`` or ``span.id``, its parent ``parent.id``
(none: a trace's root), its name ``transaction.name`` or ``span.name``, its duration
``transaction.duration.us`` or ``span.duration.us`` from ``timestamp.us`` (else ``@timestamp``),
its service ``service.name``, its replica ``host.hostname`` (else ``host.name``,
``kubernetes.pod.name``, ``container.id``, ``service.node.name``; else the service); failed where
``event.outcome`` is ``failure``.
"""

from __future__ import annotations

from pathlib import Path

from perftriage.analysis.timeparse import parse_iso_ns

from .ids import to_id64
from .jsonfile import search_documents
from .table import SpanBuilder

REPLICA_FIELDS = ("host.hostname", "host.name", "kubernetes.pod.name", "container.id", "service.node.name")
_MISSING = object()


def sniff(path: Path, head: bytes) -> bool:
    h = head[:8192]
    return (b'"processor"' in h or b'"processor.event"' in h) and b'"trace' in h and \
        (b'"transaction' in h or b'"span' in h) and (b'"apm-server"' in h or b'"duration"' in h or b'.us"' in h)


def _get(doc: dict, dotted: str, default=_MISSING):
    """A field nested (``{"trace": {"id": ...}}``) or dotted (``{"trace.id": ...}``)."""
    if dotted in doc:
        return doc[dotted]
    cur = doc
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return default
        cur = cur[part]
    return cur


def read(path: Path, b: SpanBuilder) -> None:
    b.status_known = True  # event.outcome
    other = 0
    for d in search_documents(path) or [None]:  # (a file of no documents: one unreadable)
        if not isinstance(d, dict):
            b.problem("unparsable", "an Elastic APM document that is not an object (a line cut or damaged)")
            continue
        event = _get(d, "processor.event", None)
        if event not in ("transaction", "span"):
            other += 1  # errors, metrics, onboarding documents
            continue
        try:
            trace, ident = _get(d, "trace.id", None), _get(d, f"{event}.id", None)
            if not trace or not ident:
                raise ValueError("no trace.id or no id")
            trace, me = str(trace), to_id64(str(ident))
            parent = _get(d, "parent.id", None)
            up = to_id64(str(parent)) if parent else None
            micros = _get(d, "timestamp.us", None)
            start = int(micros) * 1000 if micros is not None else parse_iso_ns(str(_get(d, "@timestamp")))
            end = start + int(float(_get(d, f"{event}.duration.us")) * 1000)
        except (TypeError, ValueError, OverflowError):
            b.problem("unparsable", "an Elastic APM document without trace.id, its id, its time or its duration")
            continue
        if end < start:
            b.problem("unparsable", "an Elastic APM document without trace.id, its id, its time or its duration")
            continue
        service = str(_get(d, "service.name", "?"))
        replica = next((str(v) for f in REPLICA_FIELDS if (v := _get(d, f, None))), service)
        name = str(_get(d, f"{event}.name", "?"))
        b.add(trace, me, up, service, name, replica, start, end, _get(d, "event.outcome", None) == "failure")
    if other:
        b.notes.append(f"{path.name}: {other:,} Elastic APM document{'s' if other != 1 else ''} other than "
                       "transactions and spans (errors, metrics) left out")
