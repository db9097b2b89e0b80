"""Azure Monitor metrics as the Azure CLI and the REST API give them back (JSON): ``az monitor
metrics list`` (``{"interval", "timespan", "value": [{"id", "name": {"value"}, "unit",
"timeseries": [{"metadatavalues": [...], "data": [{"timeStamp", "average", "total", "maximum",
"minimum", "count"}]}]}]}``, a resource per call: files one after another, or one a line), and
the batch API's ``{"values": [{"resourceid", "value": [...]}]}``.

A metric's server is its resource's name, the last part of its resource id (``.../virtualMachines/
vm-web-01``, from the metric's ``id`` before ``/providers/Microsoft.Insights/metrics``); its
counter the metric's name (``Percentage CPU``) with its dimensions' values (``Disk Read Bytes{
LUN=0}``; a dimension with one value over a metric's series left off, as InfluxDB's tags are:
influx.series_counters), and the aggregation (``(average)``) where a metric has more than one.
Times are UTC (ISO 8601). A metric Azure answered with an error (``errorCode`` other than
Success) is said; its unit too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import json_or_lines
from perftriage.analysis.timeparse import column_to_seconds
from perftriage.analysis.units import count_of, count_that, first_of

from .influx import series_counters
from .table import RawCounters

AGGREGATIONS = ("average", "total", "maximum", "minimum", "count")


def sniff(head: bytes) -> bool:
    h = head.lstrip()[:8192]
    return h[:1] in (b"{", b"[") and b'"timeseries"' in h and (b'"metadatavalues"' in h
                                                              or b'"Microsoft.Insights/metrics"' in h)


def _metrics(path: Path) -> tuple[list[tuple[str, dict]], int]:
    """Each metric with the resource id it is of (from the batch API's entry where it says it);
    how many documents were no Azure Monitor answer."""
    docs, _ = json_or_lines(path)
    out, bad = [], 0
    for d in docs:
        for doc in d if isinstance(d, list) else [d]:
            if not isinstance(doc, dict):
                bad += 1
            elif isinstance(doc.get("values"), list):  # the batch API: an answer per resource
                for v in doc["values"]:
                    if isinstance(v, dict) and isinstance(v.get("value"), list):
                        out += [(str(v.get("resourceid") or ""), m) for m in v["value"]]
                    else:
                        bad += 1
            elif isinstance(doc.get("value"), list):
                out += [("", m) for m in doc["value"]]
            else:
                bad += 1
    return out, bad


def _resource(metric: dict, resource_id: str) -> str:
    rid = resource_id or str(metric.get("id") or "").split("/providers/Microsoft.Insights/metrics", 1)[0]
    return rid.rstrip("/").rsplit("/", 1)[-1]


def read_azure_monitor(path, names_) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names)."""
    path = Path(path)
    metrics, bad = _metrics(path)
    series: dict[tuple, int] = {}
    stamps, values, sid = [], [], []
    failed, units = {}, {}
    for rid, m in metrics:
        if not isinstance(m, dict) or not isinstance(m.get("timeseries"), list):
            bad += 1
            continue
        name_block = m.get("name")
        name = str(name_block.get("value") or "?") if isinstance(name_block, dict) else str(name_block or "?")
        if m.get("errorCode") not in (None, "Success"):
            failed[name] = str(m.get("errorMessage") or m["errorCode"])[:120]
        if m.get("unit"):
            units[name] = str(m["unit"])
        server = _resource(m, rid)
        found = {a for ts in m["timeseries"] if isinstance(ts, dict) for dp in ts.get("data") or []
                 if isinstance(dp, dict) for a in AGGREGATIONS if dp.get(a) is not None}
        for ts in m["timeseries"]:
            if not isinstance(ts, dict) or not isinstance(ts.get("data"), list):
                bad += 1
                continue
            dims = tuple(sorted((str((d.get("name") or {}).get("value") if isinstance(d.get("name"), dict)
                                     else d.get("name")), str(d.get("value")))
                                for d in ts.get("metadatavalues") or [] if isinstance(d, dict)))
            for dp in ts["data"]:
                if not isinstance(dp, dict) or not isinstance(dp.get("timeStamp"), str):
                    bad += 1
                    continue
                for agg in AGGREGATIONS:
                    v = dp.get(agg)
                    if v is None:
                        continue
                    try:
                        v = float(v)
                    except (TypeError, ValueError, OverflowError):
                        bad += 1
                        continue
                    key = (f"{name} ({agg})" if len(found) > 1 else name, dims, server, "")
                    i = series.setdefault(key, len(series))
                    stamps.append(dp["timeStamp"])
                    values.append(v)
                    sid.append(i)
    notes = []
    if bad:
        notes.append(f"{path.name}: {count_that(bad, 'records')} no Azure Monitor "
                     "metric, series or point skipped")
    if failed:
        notes.append(f"partial data: {path.name}: Azure Monitor answered {count_of(len(failed), 'metrics')} with an "
                     f"error: " + "; ".join(f"{k}: {v}" for k, v in list(failed.items())[:3]))
    if not values:
        raise InputError(path, "no Azure Monitor metric with a value (timeseries data of average, total, maximum, "
                               "minimum or count)")
    shown = sorted({f"{k} in {v}" for k, v in units.items() if v not in ("Unspecified", "Count")})
    if shown:
        notes.append(f"{path.name}: {first_of(shown, 6)}")
    time = column_to_seconds(stamps, path, blanks=True)
    value = np.asarray(values, dtype=np.float64)
    ids = np.asarray(sid, np.int64)
    keep = np.isfinite(value) & np.isfinite(time)
    return series_counters(path, names_, list(series), ids[keep], time[keep], value[keep], "", notes,
                           "Azure Monitor metrics", naming="METRIC{the dimensions that tell its series apart}")
