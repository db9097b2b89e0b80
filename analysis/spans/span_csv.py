"""Span CSV files with a header. Columns are recognised by their usual names (case, spaces,
dashes and underscores ignored), or mapped explicitly with ``--columns key=COLUMN,...``:

======== =================================================================================
key      recognised names
======== =================================================================================
trace    trace_id, traceid, trace, request_id, requestid, request
span     span_id, spanid, span, id, mid
parent   parent_id, parent_span_id, parentspanid, parent, caller_mid, callermid, parent_span,
         pid (the AIOps challenges' exports)
service  service, service_name, servicename, svc, component, app
replica  replica, instance, service_instance_id, pod, pod_name, host, hostname, node, container,
         cmdb_id (AIOps: the pod or container), host_ip, ip
name     operation, operation_name, operationname, name, span_name, spanname, method, endpoint,
         interface, url, call_type (callType)
start    start, start_time, starttime, start_ns/_us/_ms/_s, timestamp, ts, begin
end      end, end_time, endtime, end_ns/_us/_ms/_s, finish
duration duration, duration_ns/_us/_ms/_s, latency, elapsed, elapsed_time (elapsedTime)
======== =================================================================================

A file without a service or a replica column (every span would be one service's, on one
replica), without a parent column (every span a request of its own) or without an operation
column is read, and the report's notes say what it lacked and how to name the column.

Without a service column, the service is the pod's (Kubernetes naming: ``orders-6d4b9c7f5-x2k8q``
is ``orders``; see :mod:`.k8s`), else the replica's name; ``--columns service=...`` wins.
Parent ids that say "no parent" (``root``, ``null``, ``-1``, empty, zeros) mark a root span.

Times: a unit suffix decides (``start_us``); without one, epoch values are read by magnitude
(s, ms, µs or ns) and ISO 8601 is accepted; a duration without suffix takes the start's unit
(ms when the start has none either). Either ``end`` or ``duration`` is needed.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
from perftriage.analysis.columnar_csv import FROM_BYTES, polars_for
from perftriage.analysis.errors import InputError
from perftriage.analysis.units import count_of
from perftriage.analysis.inputs import is_gzip, open_data
from perftriage.analysis.timeparse import NS_MAX, UNIT_NS, epoch_unit, in_ns_range, to_ns

from .ids import ROOT_MARKERS, is_empty_id, to_id64
from .k8s import service_of_pod
from .status import StatusScheme
from .table import Labels, SpanBuilder

NAMES = {
    # (Application Insights' requests and dependencies: operation_Id, id, operation_ParentId,
    # cloud_RoleName, cloud_RoleInstance, "timestamp [UTC]", duration in ms, success)
    "trace": ("traceid", "trace", "requestid", "request", "tracecontext", "operationid"),
    "span": ("spanid", "span", "id", "mid"),
    "parent": ("parentid", "parentspanid", "parent", "callermid", "parentspan", "pid", "operationparentid"),
    "service": ("service", "servicename", "svc", "component", "app", "application", "cloudrolename", "rolename"),
    "replica": ("replica", "instance", "serviceinstanceid", "instanceid", "pod", "podname", "host", "hostname",
                "node", "container", "containerid", "cmdbid", "hostip", "ip", "cloudroleinstance", "roleinstance"),
    "name": ("operation", "operationname", "name", "spanname", "method", "endpoint", "rpc", "interface", "url",
             "calltype"),
    "start": ("start", "starttime", "timestamp", "ts", "begin", "starttimeunixnano", "timestamputc"),
    "end": ("end", "endtime", "finish", "endtimeunixnano"),
    "duration": ("duration", "latency", "elapsed", "durationtime", "elapsedtime"),
    # the span's outcome (status.py reads it): OpenTelemetry's status, an error flag, HTTP or gRPC codes
    "status": ("status", "statuscode", "otelstatuscode", "spanstatus", "statuscodestring", "error", "iserror",
               "haserror", "httpstatuscode", "httpresponsestatuscode", "grpcstatuscode", "rpcgrpcstatuscode",
               "responsecode", "success", "issuccess", "succeeded"),
}
REQUIRED = ("trace", "span")
POLARS_FROM_BYTES = FROM_BYTES  # files from this size are read by polars (_read_polars)
POLARS_BATCH = 500_000  # rows at a time


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
    delim = "\t" if first.count("\t") > first.count(",") else ","  # as read() decides
    cols = map_columns(next(csv.reader([first], delimiter=delim)))
    return all(k in cols for k in REQUIRED) and "start" in cols and ("end" in cols or "duration" in cols)


def read(path: Path, b: SpanBuilder, explicit: dict[str, str] | None = None) -> None:
    try:
        f = open_data(path, newline="")
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
        lacking = []  # (the --columns key to give, what its absence means)
        if "parent" not in cols:
            lacking.append(("parent", "no parent column: every span is a request of its own"))
        if "name" not in cols:
            lacking.append(("name", "no operation column: a service's spans are one method, '?'"))
        if "service" not in cols and "replica" not in cols:
            lacking.append(("service", "no service nor replica column: every span is one service's, on one replica"))
        for key, what in lacking:
            b.notes.append(f"{path.name}: {what} (header: {', '.join(header[:12])}); name the column with "
                           f"--columns {key}=COLUMN")
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
        xi = cols.get("status", (None, None))[0]
        status = StatusScheme(header[xi]) if xi is not None else None  # which spans failed, when a column says
        b.status_known |= status is not None
        if _read_polars(path, header, delim, cols, b, status):
            return
        rows = list(rd)
        if not any(r and (len(r) > 1 or r[0].strip()) for r in rows):
            raise InputError(path, "no data rows under the header")
        if _read_fast(path, rows, width, cols, b, status):
            return
        failed = {}
        if status is not None:
            distinct = list({r[xi] for r in rows if len(r) > xi})
            failed = dict(zip(distinct, status.failed(distinct).tolist()))
        pods: dict[str, str] = {}  # pod -> its service, when no service column says it

        def service_of(replica: str) -> str:
            s = pods.get(replica)
            if s is None:
                s = pods[replica] = service_of_pod(replica) or replica
            return s

        for lineno, r in enumerate(rows, 2):
            if not r or (len(r) == 1 and not r[0].strip()):
                continue
            if len(r) < width:
                b.problem("unparsable", f"{path.name}:{lineno}: {count_of(len(r), 'fields')}, the header has {width}")
                continue
            try:
                start = to_ns(r[st_i], st_unit)
                if st_unit is None and du is not None and du_unit is None and not _is_iso(r[st_i]):
                    du_unit = epoch_unit(float(r[st_i]))
                if en is not None and r[en[0]].strip():
                    end = to_ns(r[en[0]], en[1] or (st_unit if not _is_iso(r[st_i]) else None))
                else:
                    end = in_ns_range(start + int(round(float(r[du[0]]) * UNIT_NS[du_unit or "ms"])), r[du[0]])
                parent = r[pi] if pi is not None else None
                replica = r[ri].strip() if ri is not None else ""
                service = r[svi].strip() if svi is not None else service_of(replica) if replica else ""
                b.add(r[ti].strip(), to_id64(r[si]), None if is_empty_id(parent) else to_id64(parent), service,
                      r[ni].strip() if ni is not None else "?", replica or service or "?", start, end,
                      xi is not None and failed.get(r[xi], False))
            except (ValueError, KeyError, IndexError, OverflowError):
                b.problem("unparsable", f"{path.name}:{lineno}: unreadable times or ids")


def _is_iso(text: str) -> bool:
    t = text.strip()
    return "-" in t[1:] or "T" in t or ":" in t


def _ids(col) -> np.ndarray | None:
    """Hex ids (any width up to 128 bits; the low 64 bits), as int64, like :func:`to_id64`; None
    when some are not hex, or could be decimal (all digits, not 16 or 32 wide)."""
    if any(len(x) not in (16, 32) for x in col) and all(x.isdigit() for x in col):
        return None
    try:
        v = np.array([int(x[-16:], 16) for x in col], dtype=np.uint64)
    except ValueError:
        return None
    return v.view(np.int64)


def _read_fast(path: Path, rows: list, width: int, cols: dict, b: SpanBuilder,
               status: StatusScheme | None = None) -> bool:
    """The common export (hex ids, integer epoch times) column by column, with numpy: about 5x
    the row-by-row path. False (nothing added) when any row needs the careful path."""
    body = [r for r in rows if r and not (len(r) == 1 and not r[0].strip())]
    if not body or any(len(r) != width for r in body):
        return False
    c = list(zip(*body))
    st_i, st_unit = cols["start"]
    en, du = cols.get("end"), cols.get("duration")
    try:
        start = np.array(c[st_i], dtype=np.int64)
        end = np.array(c[en[0]], dtype=np.int64) if en is not None else None
        dur = np.array(c[du[0]], dtype=np.float64) if en is None else None
    except (ValueError, OverflowError):
        return False
    times = _times_ns(start, st_unit or epoch_unit(float(start[0])), cols, end, dur)
    if times is None:
        return False
    start, end = times
    span = _ids(c[cols["span"][0]])
    if span is None:
        return False
    pi = cols.get("parent", (None, None))[0]
    if pi is not None:
        praw = np.char.lower(np.char.strip(np.array(c[pi], dtype=str)))
        is_root = np.isin(praw, list(ROOT_MARKERS)) | (np.char.strip(praw, "0") == "")
        parent = np.zeros(len(body), np.int64)
        if (~is_root).any():
            pv = _ids(praw[~is_root].tolist())
            if pv is None:
                return False
            parent[~is_root] = pv
        has_parent = ~is_root
    else:
        parent, has_parent = np.zeros(len(body), np.int64), np.zeros(len(body), bool)
    ri, svi, ni = (cols.get(k, (None, None))[0] for k in ("replica", "service", "name"))
    n = len(body)
    replica = _stripped(c[ri]) if ri is not None else None
    if svi is not None:
        service = _stripped(c[svi])
    elif replica is not None:
        of = {r: service_of_pod(r) or r for r in set(replica)}
        service = [of[r] for r in replica]
    else:
        service = [""] * n
    if replica is None:
        replica = [s or "?" for s in service]
    name = _stripped(c[ni]) if ni is not None else ["?"] * n
    trace = _stripped(c[cols["trace"][0]])
    error = None
    if status is not None:
        outcome = Labels.of(c[cols["status"][0]], n)
        error = status.failed(outcome.values)[outcome.index]
    b.add_columns(trace, span, parent, has_parent, service, name, replica, start, end, error)
    return True


def _times_ns(start: np.ndarray, unit: str, cols: dict, end: np.ndarray | None,
              dur: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """Start (int64 epoch in ``unit``) and end (int64, in the end column's unit, else ``unit``)
    or duration (float64, in its column's unit, else ``unit``) as int64 nanoseconds; None where a
    time is beyond int64 nanoseconds or a duration is not finite (the careful path names the rows)."""
    if np.abs(start).max() > NS_MAX // UNIT_NS[unit]:
        return None
    start = start * UNIT_NS[unit]
    en, du = cols.get("end"), cols.get("duration")
    if en is not None:
        if np.abs(end).max() > NS_MAX // UNIT_NS[en[1] or unit]:
            return None
        return start, end * UNIT_NS[en[1] or unit]
    dur = np.round(dur * UNIT_NS[du[1] or unit])
    if not np.isfinite(dur).all() or np.abs(dur).max() > 2**62 or np.abs(start).max() > 2**62:
        return None
    return start, start + dur.astype(np.int64)


def _stripped(col) -> list[str]:
    """A column's values without surrounding spaces (as they come when none has any)."""
    return [x.strip() for x in col] if any(x[:1].isspace() or x[-1:].isspace() for x in col) else list(col)


def _read_polars(path: Path, header: list[str], delim: str, cols: dict, b: SpanBuilder,
                 status: StatusScheme | None = None) -> bool:
    """The common export (hex ids, integer epoch times) of a large file (columnar_csv's size) by
    polars' columnar reader, a batch of rows at a time, as :func:`_read_fast` reads it: a day of
    OnlineBoutique spans six times over (5 million spans, 915 MB) in a fraction of the time and
    memory of the csv module's rows. False (nothing added) where polars is missing or any cell
    needs the careful path."""
    pl = polars_for(path, POLARS_FROM_BYTES)
    if pl is None or _last_row_short(path, delim, len(header)):
        return False
    lf = pl.scan_csv(path, has_header=True, infer_schema=False, separator=delim,
                     new_columns=[f"c{i}" for i in range(len(header))])
    got = SpanBuilder()  # added to b when every batch was read: all or nothing
    got.status_known = status is not None
    unit: list = []  # the start's unit, decided by the file's first value
    batches = lf.collect_batches(chunk_size=POLARS_BATCH)
    while True:
        try:
            df = next(batches, None)
        except (pl.exceptions.PolarsError, OSError, ValueError):  # ragged rows, bad quoting: the careful path
            return False
        if df is None:
            break
        df = df.filter(~pl.all_horizontal(pl.all().is_null()))  # blank lines
        if df.height and not _polars_batch(pl, df, cols, unit, got, status):
            return False
    if not len(got):
        return False
    b.extend(got)
    return True


def _last_row_short(path: Path, delim: str, width: int) -> bool:
    """Whether the file's last row has fewer fields than the header (a file cut while written):
    polars would fill the missing cells (an end time cut to its first digits read as a time in
    1970), the row paths count the row unreadable. A gzip file cut short fails to decompress."""
    if is_gzip(path):
        return False
    with open(path, "rb") as f:
        f.seek(max(0, f.seek(0, 2) - 65536))
        tail = f.read().rstrip(b"\r\n").rsplit(b"\n", 1)[-1].decode("utf-8", "replace")
    try:
        row = next(csv.reader([tail], delimiter=delim), [])
    except csv.Error:  # a stray carriage return: the row paths say what they make of it
        return True
    return 0 < len(row) < width


def _polars_batch(pl, df, cols: dict, unit: list, b: SpanBuilder, status: StatusScheme | None = None) -> bool:
    """One batch of rows (a polars frame of text columns c0, c1...) into ``b``; False where a cell
    needs the careful path."""

    def text(i: int):
        return df.get_column(f"c{i}").fill_null("").str.strip_chars()

    def integers(i: int):
        v = text(i).cast(pl.Int64, strict=False)
        return None if v.null_count() else v.to_numpy()

    def ids(col):
        """Hex ids as int64 (the low 64 bits, as to_id64), None where some are not hex or could be
        decimal (all digits, not 16 or 32 wide: the careful path decides)."""
        if col.null_count() or not col.str.contains(r"^[0-9a-fA-F]+$").all():
            return None
        if (~col.str.len_chars().is_in([16, 32])).any() and col.str.contains(r"^[0-9]+$").all():
            return None
        low = col.str.slice(-16).str.zfill(16)
        hi = low.str.slice(0, 8).str.to_integer(base=16, strict=False).to_numpy().astype(np.uint64)
        lo = low.str.slice(8, 8).str.to_integer(base=16, strict=False).to_numpy().astype(np.uint64)
        return ((hi << np.uint64(32)) | lo).view(np.int64)

    st_i, st_unit = cols["start"]
    en, du = cols.get("end"), cols.get("duration")
    start = integers(st_i)
    end = integers(en[0]) if en is not None else None
    dur = text(du[0]).cast(pl.Float64, strict=False) if en is None else None
    if start is None or (en is not None and end is None) or (dur is not None and dur.null_count()):
        return False
    if not unit:
        unit.append(st_unit or epoch_unit(float(start[0])))
    times = _times_ns(start, unit[0], cols, end, dur.to_numpy() if dur is not None else None)
    if times is None:
        return False
    start, end = times
    span = ids(df.get_column(f"c{cols['span'][0]}").str.strip_chars())
    if span is None:
        return False
    n = df.height
    pi = cols.get("parent", (None, None))[0]
    if pi is not None:
        praw = text(pi).str.to_lowercase()
        is_root = (praw.is_in(list(ROOT_MARKERS)) | (praw.str.strip_chars("0") == "")).to_numpy()
        parent = np.zeros(n, np.int64)
        if (~is_root).any():
            pv = ids(praw.filter(pl.Series(~is_root)))
            if pv is None:
                return False
            parent[~is_root] = pv
        has_parent = ~is_root
    else:
        parent, has_parent = np.zeros(n, np.int64), np.zeros(n, bool)

    labels = Labels.of_series
    ri, svi, ni = (cols.get(k, (None, None))[0] for k in ("replica", "service", "name"))
    replica = labels(text(ri)) if ri is not None else None
    if svi is not None:
        service = labels(text(svi))
    elif replica is not None:
        service = _mapped(replica, lambda r: service_of_pod(r) or r)
    else:
        service = Labels([""], np.zeros(n, np.int64))
    if replica is None:
        replica = _mapped(service, lambda s: s or "?")
    name = labels(text(ni)) if ni is not None else Labels(["?"], np.zeros(n, np.int64))
    error = None
    if status is not None:
        outcome = labels(text(cols["status"][0]))
        error = status.failed(outcome.values)[outcome.index]
    b.add_columns(labels(text(cols["trace"][0])), span, parent, has_parent, service, name, replica, start, end,
                  error)
    return True


def _mapped(labels: Labels, f) -> Labels:
    """Labels whose values are ``f`` of these (a pod's service), values that become one merged,
    still in the order they first occur in the rows."""
    new = [f(v) for v in labels.values]
    distinct = list(dict.fromkeys(new))
    at = {v: i for i, v in enumerate(distinct)}
    return Labels(distinct, np.array([at[v] for v in new] or [0], np.int64)[labels.index])
