"""Jaeger's spans as its storage holds them: one document per span, its process inline
(``{"traceID", "spanID", "operationName", "references", "startTime" (µs), "duration" (µs),
"tags", "process": {"serviceName", "tags"}}``), as Elasticsearch or OpenSearch give them back (a
search's ``hits.hits[]._source``, elasticdump's lines ``{"_source": ...}``), one a line (NDJSON)
or a JSON array of them. The UI's export (``{"data": [traces]}``) is jaeger.py's."""

from __future__ import annotations

import json
from pathlib import Path

from perftriage.analysis.errors import InputError

from .jaeger import _MISSING, _add, _process
from .jsonfile import search_documents
from .table import SpanBuilder


def sniff(path: Path, head: bytes) -> bool:
    h = head[:4096]
    return b'"traceID"' in h and b'"spanID"' in h and b'"process"' in h and b'"data"' not in h \
        and b'"resourceSpans"' not in h


def _documents(path: Path) -> list:
    """The span documents of a file: a JSON array, a search's answer, or one document a line (a
    line cut or damaged: None, counted as such)."""
    docs = search_documents(path)
    if docs is None:
        raise InputError(path, "not Jaeger span documents (an array, a search's hits, or one a line)")
    return docs


def read(path: Path, b: SpanBuilder) -> None:
    b.status_known = True  # a span that failed carries an error tag
    procs: dict = {}
    for d in _documents(path):
        if not isinstance(d, dict):
            b.problem("unparsable", "a Jaeger span document that is not an object (a line cut or damaged)")
            continue
        p = d.get("process")
        name = p.get("serviceName", "?") if isinstance(p, dict) else "?"
        tags = p.get("tags", ()) if isinstance(p, dict) else ()
        key = (str(name), json.dumps(tags, sort_keys=True, default=str) if tags else "")
        if key not in procs:  # a process by its service and tags: its replica a host or pod tag, else the service
            replica = _process("", tags if isinstance(tags, list) else (), name)
            procs[key] = (str(name) if replica == f"{name}/" else replica, str(name))
        _add(b, procs, key, d.get("references"), d.get("startTime", _MISSING), d.get("traceID", _MISSING),
             d.get("spanID", _MISSING), d.get("operationName", "?"), d.get("duration", 0), d.get("tags"))
