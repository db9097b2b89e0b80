"""Google Cloud Monitoring time series as its API gives them back (JSON): ``projects.timeSeries.list``'s
response ``{"timeSeries": [...], "nextPageToken"}`` (pages one a line, or one document), or a
list of time series (a client library's objects as JSON).

A time series: ``{"metric": {"type": "compute.googleapis.com/instance/cpu/utilization", "labels":
{...}}, "resource": {"type": "gce_instance", "labels": {"instance_id", "zone", ...}}, "metricKind":
"GAUGE" | "DELTA" | "CUMULATIVE", "valueType", "points": [{"interval": {"startTime", "endTime"},
"value": {"doubleValue" | "int64Value" | "boolValue" | "distributionValue"}}]}``. Its server is
the first of its metric's then its resource's labels that names one (``instance_name``,
``pod_name``, ``node_name``, ``instance_id``, ``host``...; an instance's id is its name where
another series names both: the agent's metrics give only the id), else the file's; its counter the
metric's type without the service's domain (``instance/cpu/utilization``) with the metric's other
labels that tell its series apart (``{loadbalanced=true}``; a label with one value over a type's
series left off, as InfluxDB's tags are: influx.series_counters). A GAUGE is a level; a
CUMULATIVE series is read as its rate per second from each point to the next, a DELTA one as its
value over its own interval (``rate(instance/network/received_bytes_count)``); distributions are
left out, said. A point's time is its interval's end (UTC, RFC 3339); the API lists them newest
first.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import json_records
from perftriage.analysis.timeparse import column_to_seconds
from perftriage.analysis.units import count_of, count_that, first_of

from .cumulative import rate_series
from .influx import series_counters
from .table import RawCounters

#: labels naming a server, the metric's looked at before the resource's, the first present wins
SERVER_LABELS = ("instance_name", "pod_name", "pod", "node_name", "host", "hostname", "instance_id", "container_name")


def sniff(head: bytes) -> bool:
    h = head.lstrip()[:8192]
    return h[:1] in (b"{", b"[") and (b'"timeSeries"' in h or (b'"metricKind"' in h and b'"points"' in h))


def _labels(block) -> dict[str, str]:
    labels = block.get("labels") if isinstance(block, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def _number(value) -> float | None:
    """A point's typed value as a number (a bool as 0 or 1); None for a distribution or none."""
    if not isinstance(value, dict):
        return None
    for key in ("doubleValue", "int64Value", "boolValue"):
        if key in value:
            try:
                return float(value[key])
            except (TypeError, ValueError, OverflowError):
                return None
    return None


def read_gcp_monitoring(path, names_) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names)."""
    path = Path(path)
    series: dict[tuple, int] = {}
    rated: set[int] = set()
    ends, begins, values, sid = [], [], [], []
    bad, distributions = 0, set()
    docs = json_records(path, "timeSeries")  # pages, or a list of time series
    # an instance's id -> its name, from the series that have both (compute's metrics name the
    # instance, the agent's only give its resource's id)
    named: dict[str, str] = {}
    for ts in docs:
        if isinstance(ts, dict) and isinstance(ts.get("metric"), dict):
            iid, iname = _labels(ts.get("resource")).get("instance_id"), _labels(ts["metric"]).get("instance_name")
            if iid and iname:
                named[iid] = iname
    for ts in docs:
        metric = ts.get("metric") if isinstance(ts, dict) else None
        if not isinstance(metric, dict) or not metric.get("type") or not isinstance(ts.get("points"), list):
            bad += 1
            continue
        mtype = str(metric["type"])
        name = mtype.split(".com/", 1)[-1] if ".com/" in mtype else mtype
        own, res = _labels(metric), _labels(ts.get("resource"))
        key_label = next((k for k in SERVER_LABELS if own.get(k)), "")
        server = own.pop(key_label) if key_label else named.get(res.get("instance_id")) or \
            next((res[k] for k in SERVER_LABELS if res.get(k)), "")
        kind = str(ts.get("metricKind") or "GAUGE")
        rate = kind in ("CUMULATIVE", "DELTA")
        key = (f"rate({name}" if rate else name, tuple(sorted(own.items())), server, "")
        for p in ts["points"]:
            interval = p.get("interval") if isinstance(p, dict) else None
            v = _number(p.get("value")) if isinstance(p, dict) else None
            if v is None or not isinstance(interval, dict) or not isinstance(interval.get("endTime"), str):
                if isinstance(p, dict) and isinstance(p.get("value"), dict) and "distributionValue" in p["value"]:
                    distributions.add(name)
                else:
                    bad += 1
                continue
            i = series.get(key)
            if i is None:
                i = series[key] = len(series)
                if rate:
                    rated.add(i)
            ends.append(interval["endTime"])
            begins.append(interval.get("startTime") if kind == "DELTA" and isinstance(interval.get("startTime"), str)
                          else "")
            values.append(v)
            sid.append(i)
    if not values:
        raise InputError(path, "no point of a Cloud Monitoring time series with a number"
                         + (" (distributions only)" if distributions else ""))
    time = column_to_seconds(ends, path, blanks=True)
    begin = column_to_seconds(begins, path, blanks=True) if any(begins) else np.full(len(time), np.nan)
    value = np.asarray(values, dtype=np.float64)
    ids = np.asarray(sid, np.int64)
    rate_series(time, value, ids, begin, rated)  # a CUMULATIVE series' first point has none (left out)
    keep = np.isfinite(value) & np.isfinite(time)
    notes = []
    if bad:
        notes.append(f"{path.name}: {count_that(bad, 'series or points')} no Cloud "
                     "Monitoring time series or point with a number skipped")
    if distributions:
        notes.append(f"{path.name}: {count_of(len(distributions), 'metrics')} of distributions left out: "
                     f"{first_of(sorted(distributions), 4)}")
    return series_counters(path, names_, list(series), ids[keep], time[keep], value[keep], "", notes,
                           "Google Cloud Monitoring time series", naming="TYPE{the labels that tell its series apart}",
                           closing=rated)
