"""AWS X-Ray traces: ``aws xray batch-get-traces`` output (``{"Traces": [{"Id", "Segments": [{"Id",
"Document": "<a segment document as JSON text>"}]}]}``, pages concatenated or one a line), or
segment documents themselves (as the SDKs send them to the daemon: an array, or one a line).

A segment document (``{"name", "id", "trace_id", "start_time", "end_time", "parent_id",
"subsegments", "http", "aws", "fault", "error"}``; times in seconds since the epoch) is a server
span of the service it names, on the replica its ``aws`` block names (the EC2 instance, the ECS
container, the EKS pod; else the service); its operation the request's method and path (``GET
/cart/{n}``: a path's numbers and long hex ids as ``{n}``), else its name. Its subsegments,
nested to any depth, are spans of the same service and replica, their operation the AWS call
(``DynamoDB.GetItem``), the remote request (``GET api.example.com``) or their name; a segment
whose ``parent_id`` is a subsegment of another service (a downstream call, or the segment X-Ray
infers for an AWS resource) is that call's child. A subsegment sent as a document of its own
(``"type": "subsegment"``, as an SDK streams a long request's) is a span of the service and replica
of the segment its ``parent_id`` leads to, through other such documents; of its own name where that
segment is not in the inputs. A segment is failed when its ``fault`` flag
is set (a 5xx), a subsegment (a call out) when ``fault`` or ``error`` is (a 4xx answer to
a call is the caller's failure). A segment still in progress (no ``end_time``) is left out,
counted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from perftriage.analysis.inputs import json_or_lines

from .ids import to_id64
from .table import SpanBuilder

_ID_IN_PATH = re.compile(r"(?<=/)(?:\d+|[0-9a-fA-F-]{16,})(?=/|$)")


def sniff(path: Path, head: bytes) -> bool:
    h = head.lstrip()[:4096]
    return (b'"Traces"' in h and b'"Segments"' in h and b'"Document"' in h) or \
        (b'"trace_id"' in h and b'"start_time"' in h and b'"name"' in h and b'"traceId"' not in h
         and b'"resourceSpans"' not in h)


def _documents(path: Path) -> list:
    """The file's segment documents (parsed), and None for each that is not one."""
    docs, _ = json_or_lines(path)
    out = []
    for d in docs:
        if isinstance(d, dict) and isinstance(d.get("Traces"), list):  # a page of batch-get-traces
            for t in d["Traces"]:
                for s in (t.get("Segments") or []) if isinstance(t, dict) else [None]:
                    doc = s.get("Document") if isinstance(s, dict) else None
                    try:
                        out.append(json.loads(doc) if isinstance(doc, str) else doc)
                    except json.JSONDecodeError:
                        out.append(None)
        elif isinstance(d, list):
            out.extend(d)
        else:
            out.append(d)
    return out


def _operation(doc: dict, segment: bool) -> str:
    """What a segment served or a subsegment called, in words a method has."""
    aws = doc.get("aws") if isinstance(doc.get("aws"), dict) else {}
    if not segment and aws.get("operation"):
        return f"{doc.get('name', '?')}.{aws['operation']}"
    http = doc.get("http") if isinstance(doc.get("http"), dict) else {}
    req = http.get("request") if isinstance(http.get("request"), dict) else {}
    url = str(req.get("url") or "")
    if url:
        rest = url.split("://", 1)[-1]
        host, _, tail = rest.partition("/")
        where = _ID_IN_PATH.sub("{n}", "/" + tail.split("?", 1)[0])
        return f"{req.get('method', '')} {where if segment else host}".strip()
    return str(doc.get("name", "?"))


def _replica(doc: dict, service: str) -> str:
    aws = doc.get("aws") if isinstance(doc.get("aws"), dict) else {}
    for key, field in (("ec2", "instance_id"), ("ecs", "container"), ("eks", "pod"), ("ecs", "container_id")):
        block = aws.get(key)
        if isinstance(block, dict) and block.get(field):
            return str(block[field])
    return service


def _owners(docs: list) -> tuple[dict, dict]:
    """Each id's (service, replica) where a segment holds it, and each subsegment document's
    parent id: what a subsegment sent on its own is resolved through."""
    owner: dict = {}
    up: dict = {}

    def hold(doc: dict, who: tuple, depth: int = 0) -> None:
        if isinstance(doc.get("id"), str):
            owner[doc["id"]] = who
        subs = doc.get("subsegments")
        if isinstance(subs, list) and depth < 64:
            for sub in subs:
                if isinstance(sub, dict):
                    hold(sub, who, depth + 1)

    for doc in docs:
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
            continue
        if doc.get("type") == "subsegment":
            up[doc["id"]] = doc.get("parent_id")
        else:
            service = str(doc.get("name", "?"))
            hold(doc, (service, _replica(doc, service)))
    return owner, up


def _owner(doc: dict, owner: dict, up: dict) -> tuple | None:
    """The (service, replica) of the segment a subsegment document's parent ids lead to."""
    at = doc.get("parent_id")
    for _ in range(64):
        if not isinstance(at, str):
            return None
        if at in owner:
            return owner[at]
        if at not in up:
            return None
        at = up[at]
    return None


def read(path: Path, b: SpanBuilder) -> None:
    b.status_known = True  # fault and error flags
    in_progress = 0
    docs = _documents(path)
    owner, up = _owners(docs)
    for doc in docs:
        if not isinstance(doc, dict):
            b.problem("unparsable", "an X-Ray segment document that is not an object (a line cut or damaged)")
            continue
        if doc.get("in_progress") and doc.get("end_time") is None:
            in_progress += 1
            continue
        segment = doc.get("type") != "subsegment"
        service = str(doc.get("name", "?"))
        service, replica = (None if segment else _owner(doc, owner, up)) or (service, _replica(doc, service))
        _add(b, doc, str(doc.get("trace_id", "")), service, replica, segment=segment)
    if in_progress:
        b.notes.append(f"{path.name}: {in_progress:,} X-Ray segment{'s' if in_progress != 1 else ''} still in "
                       "progress (no end time) left out")


def _add(b: SpanBuilder, doc: dict, trace: str, service: str, replica: str, segment: bool,
         parent: int | None = None, depth: int = 0) -> None:
    """A segment or subsegment and, below it, its subsegments; a problem counted where one does
    not fit (no id, no time)."""
    try:
        if not trace or "id" not in doc or doc.get("start_time") is None or doc.get("end_time") is None:
            raise KeyError("trace_id/id/start_time/end_time")
        me = to_id64(doc["id"])
        up = parent if parent is not None else to_id64(doc["parent_id"]) if doc.get("parent_id") else None
        failed = bool(doc.get("fault")) or (not segment and bool(doc.get("error")))
        b.add(trace, me, up, service, _operation(doc, segment), replica, round(float(doc["start_time"]) * 1e9),
              round(float(doc["end_time"]) * 1e9), failed)
    except (KeyError, TypeError, ValueError, OverflowError):
        b.problem("unparsable", "an X-Ray segment without trace_id, id or times")
        return
    subs = doc.get("subsegments")
    if isinstance(subs, list) and depth < 64:
        for sub in subs:
            if isinstance(sub, dict):
                _add(b, sub, trace, service, replica, False, me, depth + 1)
            else:
                b.problem("unparsable", "an X-Ray subsegment that is not an object")
