"""Span CSV files with a header. Columns are recognised by their usual names (case, spaces,
dashes and underscores ignored), or mapped explicitly with ``--columns key=COLUMN,...``:

======== =================================================================================
key      recognised names
======== =================================================================================
trace    trace_id, traceid, trace, request_id, requestid, request
span     span_id, spanid, span, id, mid
parent   parent_id, parent_span_id, parentspanid, parent, caller_mid, callermid
service  service, service_name, servicename, svc, component, app
replica  replica, instance, service_instance_id, pod, pod_name, host, hostname, node, container
name     operation, operation_name, operationname, name, span_name, spanname, method, endpoint
start    start, start_time, starttime, start_ns/_us/_ms/_s, timestamp, ts, begin
end      end, end_time, endtime, end_ns/_us/_ms/_s, finish
duration duration, duration_ns/_us/_ms/_s, latency, elapsed
======== =================================================================================

Times: a unit suffix decides (``start_us``); without one, epoch values are read by magnitude
(s, ms, µs or ns) and ISO 8601 is accepted; a duration without suffix takes the start's unit
(ms when the start has none either). Either ``end`` or ``duration`` is needed.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from perftriage.analysis.errors import InputError
from perftriage.analysis.timeparse import UNIT_NS, epoch_unit, to_ns

from .ids import is_empty_id, to_id64
from .table import SpanBuilder

NAMES = {
    "trace": ("traceid", "trace", "requestid", "request", "tracecontext"),
    "span": ("spanid", "span", "id", "mid"),
    "parent": ("parentid", "parentspanid", "parent", "callermid", "parentspan"),
    "service": ("service", "servicename", "svc", "component", "app", "application"),
    "replica": ("replica", "instance", "serviceinstanceid", "instanceid", "pod", "podname", "host", "hostname",
                "node", "container", "containerid"),
    "name": ("operation", "operationname", "name", "spanname", "method", "endpoint", "rpc"),
    "start": ("start", "starttime", "timestamp", "ts", "begin", "starttimeunixnano"),
    "end": ("end", "endtime", "finish", "endtimeunixnano"),
    "duration": ("duration", "latency", "elapsed", "durationtime"),
}
REQUIRED = ("trace", "span")


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9µ]", "", name.lower())


def _split_unit(name: str) -> tuple[str, str | None]:
    n = name.strip().lower()
    for suffix, unit in (("_ns", "ns"), ("_us", "us"), ("_µs", "us"), ("_ms", "ms"), ("_s", "s"),
                         ("nanos", "ns"), ("micros", "us"), ("millis", "ms"), ("unixnano", "ns")):
        if n.endswith(suffix):
            return n[: -len(suffix)], unit
    return n, None


def map_columns(header: list[str], explicit: dict[str, str] | None = None) -> dict[str, tuple[int, str | None]]:
    """key -> (column index, unit from the name)."""
    out: dict[str, tuple[int, str | None]] = {}
    by_norm = {}
    for i, h in enumerate(header):
        base, unit = _split_unit(h)
        by_norm.setdefault(_norm(h), (i, unit))
        by_norm.setdefault(_norm(base), (i, unit))
    if explicit:
        lower = {h.strip().lower(): i for i, h in enumerate(header)}
        for key, col in explicit.items():
            if key not in NAMES:
                raise ValueError(f"--columns: unknown key {key!r} (known: {', '.join(NAMES)})")
            i = lower.get(col.strip().lower())
            if i is None:
                raise ValueError(f"--columns: no column {col!r} in the header")
            out[key] = (i, _split_unit(header[i])[1])
    for key, names in NAMES.items():
        if key in out:
            continue
        for n in names:
            if n in by_norm and by_norm[n][0] not in {v[0] for v in out.values()}:
                out[key] = by_norm[n]
                break
    return out


def sniff(path: Path, head: bytes) -> bool:
    first = head.decode("utf-8", "replace").split("\n", 1)[0]
    if "," not in first and "\t" not in first:
        return False
    cols = map_columns(next(csv.reader([first])))
    return all(k in cols for k in REQUIRED) and "start" in cols and ("end" in cols or "duration" in cols)


def read(path: Path, b: SpanBuilder, explicit: dict[str, str] | None = None) -> None:
    try:
        f = open(path, "r", encoding="utf-8", errors="replace", newline="")
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    with f:
        sample = f.read(4096)
        f.seek(0)
        delim = "\t" if sample.count("\t") > sample.count(",") else ","
        rd = csv.reader(f, delimiter=delim)
        header = next(rd, None)
        if not header:
            raise InputError(path, "file is empty")
        try:
            cols = map_columns(header, explicit)
        except ValueError as exc:
            raise InputError(path, str(exc)) from None
        missing = [k for k in REQUIRED + ("start",) if k not in cols]
        if "end" not in cols and "duration" not in cols:
            missing.append("end or duration")
        if missing:
            raise InputError(path, f"span CSV lacks {', '.join(missing)} columns (header: {', '.join(header[:10])}); "
                                   "name them with --columns key=COLUMN")
        ti, si = cols["trace"][0], cols["span"][0]
        pi = cols.get("parent", (None, None))[0]
        svi = cols.get("service", (None, None))[0]
        ri = cols.get("replica", (None, None))[0]
        ni = cols.get("name", (None, None))[0]
        st_i, st_unit = cols["start"]
        en = cols.get("end")
        du = cols.get("duration")
        du_unit = du[1] if du else None
        width = len(header)
        for lineno, r in enumerate(rd, 2):
            if not r or (len(r) == 1 and not r[0].strip()):
                continue
            if len(r) < width:
                b.problem("unparsable", f"{path.name}:{lineno}: {len(r)} fields, the header has {width}")
                continue
            try:
                start = to_ns(r[st_i], st_unit)
                if st_unit is None and du is not None and du_unit is None and not _is_iso(r[st_i]):
                    du_unit = epoch_unit(float(r[st_i]))
                if en is not None and r[en[0]].strip():
                    end = to_ns(r[en[0]], en[1] or (st_unit if not _is_iso(r[st_i]) else None))
                else:
                    end = start + int(round(float(r[du[0]]) * UNIT_NS[du_unit or "ms"]))
                parent = r[pi] if pi is not None else None
                service = r[svi].strip() if svi is not None else ""
                b.add(r[ti].strip(), to_id64(r[si]), None if is_empty_id(parent) else to_id64(parent), service,
                      r[ni].strip() if ni is not None else "?", r[ri].strip() if ri is not None else (service or "?"),
                      start, end)
            except (ValueError, KeyError, IndexError):
                b.problem("unparsable", f"{path.name}:{lineno}: unreadable times or ids")


def _is_iso(text: str) -> bool:
    t = text.strip()
    return "-" in t[1:] or "T" in t or ":" in t
