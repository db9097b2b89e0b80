"""Datadog metrics as its query API gives them back (JSON; ``GET /api/v1/query?query=avg:system.cpu.
user{*} by {host}``, what the UI's "export" and the datadog-api-client return): ``{"status": "ok",
"series": [{"metric", "scope": "host:web-01", "tag_set": ["host:web-01"], "pointlist": [[ms,
value], ...], "aggr", "unit"}], "from_date", "to_date", "query"}`` (answers one a line, or one
document).

A series' server is its tag naming one (``host``, else ``pod_name``, ``kube_node``, ``container_name``,
``instance``...; from ``tag_set``, else the ``scope``), else the file's; its counter the metric
with the other tags that tell its series apart (``system.disk.used{device=/dev/sda1}``; a tag with
one value over a metric's series left off, as InfluxDB's tags are: influx.series_counters), a
``null`` a missing sample. Times are milliseconds since the epoch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import json_or_lines
from perftriage.analysis.units import count_of, count_that

from .influx import series_counters
from .table import RawCounters

SERVER_TAGS = ("host", "hostname", "pod_name", "kube_node", "container_name", "instance", "node")


def sniff(head: bytes) -> bool:
    h = head.lstrip()[:8192]
    return h[:1] in (b"{", b"[") and (b'"pointlist"' in h and (b'"series"' in h or b'"scope"' in h)
                                      or b'"res_type"' in h and b'"series"' in h)


def _tags(s: dict) -> list[tuple[str, str]]:
    tags = s.get("tag_set")
    if not isinstance(tags, list) or not tags:
        tags = str(s.get("scope") or "").split(",")
    out = []
    for t in tags:
        k, sep, v = str(t).strip().partition(":")
        if sep and k:
            out.append((k, v))
    return out


def read_datadog(path, names_) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names)."""
    path = Path(path)
    docs, _ = json_or_lines(path)
    series: dict[tuple, int] = {}
    times, values, sid = [], [], []
    bad, errors = 0, []
    for doc in docs:
        found = doc.get("series") if isinstance(doc, dict) else doc if isinstance(doc, list) else None
        if isinstance(doc, dict) and (doc.get("status") == "error" or doc.get("error") and not found):
            errors.append(str(doc.get("error") or "?")[:120])  # an error answer (with no series): said
            continue
        if not isinstance(found, list):
            bad += 1
            continue
        for s in found:
            if not isinstance(s, dict) or not s.get("metric") or not isinstance(s.get("pointlist"), list):
                bad += 1
                continue
            tags = _tags(s)
            key_tag = next((k for k in SERVER_TAGS if any(t == k and v for t, v in tags)), "")
            server = next((v for t, v in tags if t == key_tag), "") if key_tag else ""
            own = tuple(sorted((t, v) for t, v in tags if t != key_tag))
            i = series.setdefault((str(s["metric"]), own, server, ""), len(series))
            for p in s["pointlist"]:
                try:
                    t, v = p
                    t = float(t) / 1000.0
                    v = np.nan if v is None else float(v)
                except (TypeError, ValueError, OverflowError):
                    bad += 1
                    continue
                times.append(t)
                values.append(v)
                sid.append(i)
    notes = []
    if bad:
        notes.append(f"{path.name}: {count_that(bad, 'records')} no Datadog series "
                     "or point skipped")
    if errors:
        notes.append(f"partial data: {path.name}: Datadog answered {count_of(len(errors), 'queries')} with an "
                     f"error: {'; '.join(errors[:3])}")
    time, value = np.asarray(times, dtype=np.float64), np.asarray(values, dtype=np.float64)
    keep = np.isfinite(time) & np.isfinite(value)
    if not keep.any():
        raise InputError(path, "no Datadog series with a point (series of metric and pointlist)"
                         + (f": {errors[0]}" if errors else ""))
    ids = np.asarray(sid, np.int64)
    return series_counters(path, names_, list(series), ids[keep], time[keep], value[keep], "", notes,
                           "Datadog metrics", naming="METRIC{the tags that tell its series apart}")
