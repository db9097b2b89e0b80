"""Apache SkyWalking's traces as its query API gives them back (JSON): the GraphQL ``queryTrace``
answer ``{"data": {"trace": {"spans": [...]}}}`` (traces one a line, or a JSON array of them, or
of their spans), each span ``{"traceId", "segmentId", "spanId", "parentSpanId", "refs":
[{"parentSegmentId", "parentSpanId"}], "serviceCode", "serviceInstanceName", "endpointName",
"startTime", "endTime" (ms), "type": "Entry" | "Exit" | "Local", "isError"}``.

A span is known by its segment and its number in it (SkyWalking numbers each segment's spans
from 0): its parent the span ``parentSpanId`` of its own segment, or, for a segment's first span
(``parentSpanId`` -1), the span its first ref names in another segment (the Exit span of the
service that called it); none: a trace's root. Its service ``serviceCode``, its replica
``serviceInstanceName``, its operation ``endpointName``; failed where ``isError``.
"""

from __future__ import annotations

from pathlib import Path

from perftriage.analysis.inputs import json_records

from .ids import to_id64
from .table import SpanBuilder


def sniff(path: Path, head: bytes) -> bool:
    h = head[:8192]
    return b'"segmentId"' in h and b'"spanId"' in h and (b'"serviceCode"' in h or b'"endpointName"' in h)


def _spans(path: Path) -> list:
    """The spans of a file of queryTrace answers, traces or spans."""
    out = []
    for doc in json_records(path):
        if isinstance(doc, dict) and isinstance(doc.get("data"), dict):
            doc = doc["data"].get("trace")
        if isinstance(doc, dict) and isinstance(doc.get("spans"), list):
            out.extend(doc["spans"])
        else:
            out.append(doc)
    return out


def _key(segment, number) -> int:
    return to_id64(f"{segment}#{int(number)}")


def read(path: Path, b: SpanBuilder) -> None:
    b.status_known = True  # isError
    for s in _spans(path):
        if not isinstance(s, dict):
            b.problem("unparsable", "a SkyWalking span that is not an object (a line cut or damaged)")
            continue
        try:
            trace, seg = str(s["traceId"]), str(s["segmentId"])
            me = _key(seg, s["spanId"])
            up_no = int(s.get("parentSpanId", -1))
            up = _key(seg, up_no) if up_no >= 0 else None
            if up is None:
                ref = next((r for r in s.get("refs") or [] if isinstance(r, dict) and r.get("parentSegmentId")), None)
                up = _key(ref["parentSegmentId"], ref.get("parentSpanId", 0)) if ref else None
            start, end = int(s["startTime"]) * 1_000_000, int(s["endTime"]) * 1_000_000
        except (KeyError, TypeError, ValueError, OverflowError):
            b.problem("unparsable", "a SkyWalking span without traceId, segmentId, spanId or its times")
            continue
        service = str(s.get("serviceCode") or "?")
        b.add(trace, me, up, service, str(s.get("endpointName") or "?"), str(s.get("serviceInstanceName") or service),
              start, end, bool(s.get("isError")))
