"""Amazon CloudWatch metrics as the AWS CLI and the SDKs give them back (JSON):

- ``aws cloudwatch get-metric-data``: ``{"MetricDataResults": [{"Id", "Label", "Timestamps":
  [ISO 8601], "Values": [...], "StatusCode"}], "Messages": [...]}`` (pages concatenated, or
  one a line). A query of many instances at once (``SEARCH('{AWS/EC2,InstanceId}
  CPUUtilization', 'Average', 300)``, or labels such as ``${PROP('Dim.InstanceId')}
  ${PROP('MetricName')}``) labels each series with its dimension's value beside the metric's
  name: the server is the word of the labels that varies while the rest repeats for each of its
  values (every instance has its CPUUtilization, its NetworkIn: a grid, as Graphite's paths are
  read, graphite.server_part), the counter the label without it. Where no word varies so, each
  label is a counter of one server, the file's (two series of one label told apart by their Id).
- ``aws cloudwatch get-metric-statistics``: ``{"Label", "Datapoints": [{"Timestamp", "Average",
  "Maximum", ..., "ExtendedStatistics": {"p99": ...}, "Unit"}]}``: one metric of one server, the
  file's; a counter per statistic (``CPUUtilization (Average)``).

Times are UTC (ISO 8601 with their offset; CloudWatch lists them newest first). A
series CloudWatch could not give whole (``StatusCode`` PartialData or InternalError: the rest
behind a NextToken) is read as far as it goes, said.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import json_records
from perftriage.analysis.timeparse import column_to_seconds
from perftriage.analysis.units import count_of, count_that, first_of
from perftriage.analysis.values import numbers

from .graphite import server_part
from .table import Piece, RawCounters

STATISTICS = ("Average", "Maximum", "Minimum", "Sum", "SampleCount")


def sniff(head: bytes) -> bool:
    h = head.lstrip()[:4096]
    return h[:1] in (b"{", b"[") and (b'"MetricDataResults"' in h or (b'"Datapoints"' in h and b'"Label"' in h))


def _series(path: Path) -> tuple[list[tuple[str, str, list, list]], list[str], str]:
    """Each series' (label, id, times, values), notes, and the form ('data' or 'statistics')."""
    series: list[tuple[str, str, list, list]] = []
    notes: list[str] = []
    partial, bad, form = set(), 0, ""
    for doc in json_records(path):  # pages one after another, or one a line
        if not isinstance(doc, dict):
            bad += 1
            continue
        if isinstance(doc.get("MetricDataResults"), list):
            form = form or "data"
            for r in doc["MetricDataResults"]:
                if not isinstance(r, dict) or not isinstance(r.get("Timestamps"), list) \
                        or not isinstance(r.get("Values"), list) or len(r["Timestamps"]) != len(r["Values"]):
                    bad += 1
                    continue
                label = str(r.get("Label") or r.get("Id") or "?")
                series.append((label, str(r.get("Id") or ""), r["Timestamps"], r["Values"]))
                if r.get("StatusCode") not in (None, "Complete"):
                    partial.add(label)
            for m in doc.get("Messages") or []:
                if isinstance(m, dict) and m.get("Value"):
                    notes.append(f"{path.name}: CloudWatch said: {str(m.get('Code') or '')} {str(m['Value'])[:120]}")
        elif isinstance(doc.get("Datapoints"), list):
            form = form or "statistics"
            label = str(doc.get("Label") or "?")
            by_stat: dict[str, tuple[list, list]] = {}
            units = set()
            for dp in doc["Datapoints"]:
                if not isinstance(dp, dict) or "Timestamp" not in dp:
                    bad += 1
                    continue
                stats = {k: dp[k] for k in STATISTICS if k in dp}
                if isinstance(dp.get("ExtendedStatistics"), dict):
                    stats.update(dp["ExtendedStatistics"])
                for k, v in stats.items():
                    t, vals = by_stat.setdefault(k, ([], []))
                    t.append(dp["Timestamp"])
                    vals.append(v)
                if dp.get("Unit") and dp["Unit"] != "None":
                    units.add(str(dp["Unit"]))
            for k, (t, vals) in by_stat.items():
                series.append((f"{label} ({k})", "", t, vals))
            if units:
                notes.append(f"{path.name}: {label} in {', '.join(sorted(units))}")
        else:
            bad += 1
    if bad:
        notes.append(f"{path.name}: {count_that(bad, 'series or points')} no "
                     "CloudWatch metric data skipped")
    if partial:
        notes.append(f"partial data: {path.name}: CloudWatch gave {count_of(len(partial), 'series')} in part only "
                     f"(StatusCode not Complete: the rest behind a NextToken): {', '.join(sorted(partial)[:4])}")
    return series, notes, form


def read_cloudwatch(path, names_) -> RawCounters:
    """``names_``: the dataset's server and counter names (readers._Names)."""
    from .readers import server_of_file  # noqa: PLC0415 (readers imports this module)

    path = Path(path)
    series, notes, form = _series(path)
    if not series:
        raise InputError(path, "no CloudWatch metric data (MetricDataResults, or Datapoints of a metric)")
    labels = [" ".join(label.split()) for label, *_ in series]
    k = server_part(labels, sep=" ") if form == "data" else None
    own = server_of_file(path).removesuffix(".json")
    seen = Counter(labels)  # a label twice: told apart by its query's Id
    pieces, cut = [], 0
    for lab, (_, sid, stamps, values) in zip(labels, series):
        words = lab.split(" ")
        if k is not None and len(words) > k:
            # a SEARCH's series labelled by instance alone: the counter is the query's Id
            server, counter = words[k], " ".join(words[:k] + words[k + 1:]) or sid or "value"
        else:
            server, counter = own, f"{lab} ({sid})" if seen[lab] > 1 and sid else lab
        t = column_to_seconds([s if isinstance(s, str) else "" for s in stamps], path, blanks=True)
        v = numbers(values)
        ok = np.isfinite(t) & np.isfinite(v)
        cut += int((~np.isfinite(t)).sum())
        if ok.any():  # (newest first, as CloudWatch lists them: the grid puts each in its place)
            pieces.append(Piece(np.full(int(ok.sum()), names_.server(server), np.int32), t[ok],
                                np.array([names_.counter(counter)], np.int32), v[ok][:, None]))
    if cut:
        notes.append(f"{path.name}: {count_of(cut, 'points')} without a time skipped")
    if k is None:
        notes.append(f"{path.name}: CloudWatch {'metric statistics' if form == 'statistics' else 'metric data'} of "
                     f"one server, the file's ({own}): no word of its labels names one")
    else:
        hosts = sorted({lab.split(" ")[k] for lab in labels if len(lab.split(" ")) > k})
        notes.append(f"{path.name}: CloudWatch metric data; the server is word {k + 1} of the labels "
                     f"({first_of(hosts, 4)}), the counter the rest")
    return RawCounters(names_.server_list, names_.counter_list, pieces, str(path), notes, k is None)
