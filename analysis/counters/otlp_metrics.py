"""OpenTelemetry metrics as OTLP JSON: what the collector's file exporter writes (one export
request ``{"resourceMetrics": [...]}`` a line), or one such document (the HTTP protocol's body).

A resource's attributes name its server: ``host.name``, else ``k8s.pod.name``,
``service.instance.id``, ``host.id``, ``container.name``, ``k8s.node.name``; ``service.name`` (or
``k8s.deployment.name``) its kind, the peers. Each metric's data points are a series per
attribute set: ``NAME{the attributes that tell its series apart}`` (``system.cpu.utilization{
cpu=cpu0,state=user}``; an attribute with one value over a name's series left off, as InfluxDB's tags
are: influx.series_counters). A gauge and a sum that is not monotonic (an up-down counter) are
levels; a monotonic sum is read as its rate per second, ``rate(NAME{...})``: a cumulative one
from each point to the next (a restart counted from zero), a delta one as its value over its
own interval. A histogram (explicit or exponential) or a summary is its count's rate,
``rate(NAME.count{...})``, and its mean over each interval, ``NAME.mean{...}`` (its sum's rate
over its count's: a latency histogram's mean latency; its buckets are not read). Times are
nanoseconds since the epoch (UTC).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import open_data
from perftriage.analysis.units import count_of, count_that, first_of

from .cumulative import rate_series
from .influx import series_counters
from .table import RawCounters

#: resource attributes naming a server, the first present wins; and a server's kind
SERVER_ATTRIBUTES = ("host.name", "k8s.pod.name", "service.instance.id", "host.id", "container.name",
                     "k8s.node.name")
KIND_ATTRIBUTES = ("service.name", "k8s.deployment.name")
_CUMULATIVE, _DELTA = 2, 1  # OTLP's AggregationTemporality


def sniff(head: bytes) -> bool:
    return b'"resourceMetrics"' in head[:65536] or b'"resource_metrics"' in head[:65536]


def _value(v) -> str:
    """An attribute's AnyValue as text."""
    if not isinstance(v, dict):
        return str(v)
    for k in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if k in v:
            return str(v[k])
    return json.dumps(v, sort_keys=True)


def _attributes(items) -> dict[str, str]:
    out = {}
    for a in items if isinstance(items, list) else ():
        if isinstance(a, dict) and "key" in a:
            out[str(a["key"])] = _value(a.get("value"))
    return out


def _documents(path: Path):
    """The export requests of a file: one a line, or the whole file one (pretty-printed)."""
    with open_data(path) as f:
        text = f.read()
    try:
        yield json.loads(text)
        return
    except json.JSONDecodeError:
        pass
    for line in text.splitlines():
        if line.strip():
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                yield None  # a line cut (a file exporter stopped mid-write)


def _histogram(hist: dict, name: str, server: str, kind: str, temporality: int, series: dict, rated: set,
               means: set, pairs: list, times: list, values: list, sid: list, starts: list) -> int:
    """A histogram's (or a summary's) points as two series: ``rate(NAME.count`` (rated) and
    ``NAME.mean``, whose points hold the sum until its rate is divided by the count's (``pairs``);
    how many points were no such point."""
    bad = 0
    for dp in hist.get("dataPoints") or []:
        try:
            t = int(dp["timeUnixNano"]) / 1e9
            count = float(dp["count"])
            total = float(dp["sum"]) if dp.get("sum") is not None else None
            t0 = int(dp.get("startTimeUnixNano") or 0) / 1e9
        except (KeyError, TypeError, ValueError):
            bad += 1
            continue
        own = tuple(sorted(_attributes(dp.get("attributes")).items()))
        begin = t0 if temporality == _DELTA and t0 else np.nan
        for suffix, v, group in ((".mean", total, means), (".count", count, rated)):
            if v is None or not np.isfinite(v):
                continue
            i = series.setdefault((name + suffix, own, server, kind), len(series))
            group.add(i)
            if suffix == ".count" and total is not None and np.isfinite(total):
                pairs.append((len(times) - 1, len(times)))
            times.append(t)
            values.append(v)
            sid.append(i)
            starts.append(begin)
    return bad


def read_otlp_metrics(path, names_) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names)."""
    path = Path(path)
    series: dict[tuple, int] = {}
    rated: set[int] = set()
    times, values, sid = [], [], []
    starts: list[float] = []  # a delta point's start (its interval), NaN else
    kind_tag = ""
    bad = 0
    histograms: set[str] = set()
    means: set[int] = set()  # the series of histograms' means: their sums' points until the end
    pairs: list[tuple[int, int]] = []  # (a sum's point, its count's point): the mean there
    docs = 0
    for doc in _documents(path):
        docs += 1
        groups = doc.get("resourceMetrics", doc.get("resource_metrics")) if isinstance(doc, dict) else None
        if not isinstance(groups, list):
            bad += 1
            continue
        for rm in groups:
            if not isinstance(rm, dict):
                bad += 1
                continue
            res = _attributes((rm.get("resource") or {}).get("attributes") if isinstance(rm.get("resource"), dict)
                              else None)
            server = next((res[k] for k in SERVER_ATTRIBUTES if res.get(k)), "")
            kind_key = next((k for k in KIND_ATTRIBUTES if res.get(k)), "")
            kind = res.get(kind_key, "")
            kind_tag = kind_tag or kind_key
            for sm in rm.get("scopeMetrics") or rm.get("scope_metrics") or []:
                for m in (sm.get("metrics") or []) if isinstance(sm, dict) else []:
                    if not isinstance(m, dict) or not m.get("name"):
                        bad += 1
                        continue
                    name = str(m["name"])
                    data, monotonic, temporality = m.get("gauge"), False, 0
                    if data is None and isinstance(m.get("sum"), dict):
                        data = m["sum"]
                        monotonic = bool(data.get("isMonotonic"))
                        temporality = int(data.get("aggregationTemporality") or 0)
                    form = next((k for k in ("histogram", "exponentialHistogram", "summary")
                                 if isinstance(m.get(k), dict)), None) if data is None else None
                    if form is not None:  # its count and sum, as a monotonic sum's (a summary's: cumulative)
                        hist = m[form]
                        temporality = _CUMULATIVE if form == "summary" else \
                            int(hist.get("aggregationTemporality") or 0)
                        if temporality in (_CUMULATIVE, _DELTA):
                            bad += _histogram(hist, name, server, kind, temporality, series, rated, means, pairs,
                                              times, values, sid, starts)
                            histograms.add(name)
                        else:
                            bad += 1
                        continue
                    if not isinstance(data, dict):
                        bad += 1
                        continue
                    rate = monotonic and temporality in (_CUMULATIVE, _DELTA)
                    for dp in data.get("dataPoints") or []:
                        try:
                            t = int(dp["timeUnixNano"]) / 1e9
                            v = float(dp["asDouble"] if "asDouble" in dp else dp["asInt"])
                            t0 = int(dp.get("startTimeUnixNano") or 0) / 1e9
                        except (KeyError, TypeError, ValueError):
                            bad += 1
                            continue
                        if not np.isfinite(v):
                            continue
                        own = tuple(sorted(_attributes(dp.get("attributes")).items()))
                        key = (name, own, server, kind)
                        i = series.get(key)
                        if i is None:
                            i = series[key] = len(series)
                            if rate:
                                rated.add(i)
                        times.append(t)
                        values.append(v)
                        sid.append(i)
                        starts.append(t0 if rate and temporality == _DELTA and t0 else np.nan)
    if not times:
        raise InputError(path, "no gauge, sum or histogram data point in these OTLP metrics" if docs else "empty")
    time = np.asarray(times)
    value = np.asarray(values)
    ids = np.asarray(sid, np.int64)
    rate_series(time, value, ids, np.asarray(starts), rated | means)  # monotonic sums, histograms' counts and sums
    if pairs:  # a histogram's mean over each interval: its sum's rate over its count's
        at_sum, at_count = np.asarray(pairs).T
        with np.errstate(divide="ignore", invalid="ignore"):
            value[at_sum] = np.where(value[at_count] > 0, value[at_sum] / value[at_count], np.nan)
    keep = np.isfinite(value)
    notes = []
    if bad:
        notes.append(f"{path.name}: {count_that(bad, 'records')} no OTLP metric or data "
                     "point (a line cut, a field missing) skipped")
    if histograms:
        notes.append(f"{path.name}: {count_of(len(histograms), 'metrics')} of histograms or summaries read as their "
                     f"count's rate (rate(NAME.count)) and their mean over each interval (NAME.mean): "
                     f"{first_of(sorted(histograms), 4)}")
    keys = [(f"rate({k[0]}" if i in rated else k[0], *k[1:]) for k, i in series.items()]  # ids in insertion order
    return series_counters(path, names_, keys, ids[keep], time[keep], value[keep], kind_tag, notes,
                          "OpenTelemetry metrics (OTLP JSON)", naming="NAME{the attributes that tell its series apart}",
                          closing=rated)
