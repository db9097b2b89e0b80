"""Call-graph tables whose calls are named by hierarchical RPC ids, not span ids: Alibaba's
published microservice traces (cluster-trace-microservices v2021 ``MSCallGraph`` and v2022
``CallGraph``), from its EagleEye tracing, the system CloudDiag (paper 002) ran on.

One row per call as one side saw it: ``traceid``, ``timestamp`` (ms from the start of the trace
set: the tables carry no date), ``rpcid`` (``rpc_id``; ``0.1.1`` and ``0.1.2`` are two calls made
by the callee of ``0.1``), ``um`` and ``dm`` (the calling and the called microservice; v2022 also
``uminstanceid``/``dminstanceid``, their containers), ``rpctype`` (rpc, http, db, mc, mq),
``interface`` (the called interface) and ``rt`` (ms). A remote call is recorded twice with one
rpcid: by the caller with a positive rt (from sending the request to the reply), by the callee
with a negative one (minus its own time); a call to a database or a cache only by the caller.

Into spans, as OpenTelemetry would have recorded them:

- a call both sides recorded: a client span in the caller (``um``, the interface called) and
  its child, a server span in the callee (``dm``); their difference is the time between them;
- a call only the caller recorded (a database, a cache, or a callee that logged nothing): one
  span of the callee, the caller's time its only measure;
- a call only the callee recorded: its server span.

A call's parent is the callee's span of the call whose rpcid is its own less the last number;
where that call was not recorded (the tables lose some), the nearest recorded one up the ids (the
report's notes count them). A call whose rpcid has no dot starts a request. Service names the
tables leave unknown (empty, ``(?)``, ``UNKNOWN``) are ``?``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import is_encoded, open_data
from perftriage.analysis.units import count_of

from .table import Labels, SpanBuilder

#: the columns read, by their names without case, spaces or underscores
KEYS = {"trace": ("traceid",), "time": ("timestamp",), "rpc": ("rpcid",), "um": ("um",), "dm": ("dm",),
        "rt": ("rt",), "interface": ("interface",), "rpctype": ("rpctype",), "um_instance": ("uminstanceid",),
        "dm_instance": ("dminstanceid",)}
REQUIRED = ("trace", "time", "rpc", "um", "dm", "rt")
UNKNOWN = ("", "(?)", "unknown", "?", "nan", "null")
MS = 1_000_000
CLIENT = np.uint64(0x9E3779B97F4A7C15)  # a client span's id: its call's hash, these bits flipped
MAX_DEPTH = 256  # rpcids nested deeper than this are not walked up further


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _columns(header: list[str]) -> dict[str, int]:
    by_norm: dict[str, int] = {}
    for i, h in enumerate(header):
        by_norm.setdefault(_norm(h), i)
    return {key: by_norm[n] for key, names in KEYS.items() for n in names if n in by_norm}


def _header(head: bytes) -> list[str]:
    first = head.decode("utf-8", "replace").split("\n", 1)[0].rstrip("\r")
    return next(csv.reader([first]), [])


def sniff(path: Path, head: bytes) -> bool:
    cols = _columns(_header(head))
    return all(k in cols for k in REQUIRED)


def read(path: Path, b: SpanBuilder) -> None:
    import polars as pl  # noqa: PLC0415  (a dependency; imported only for this format)

    with open_data(path, binary=True) as f:
        header = _header(f.readline())
    if not header:
        raise InputError(path, "file is empty")
    cols = _columns(header)
    names = [f"c{i}" for i in range(len(header))]

    def text(key: str):
        return pl.col(f"c{cols[key]}").fill_null("").str.strip_chars() if key in cols else pl.lit("")

    def label(key: str):  # a name column as a categorical: a code per row, the strings once
        return text(key).cast(pl.Categorical)

    def frame(lf):
        lf = lf.select(trace=label("trace"), rpc=text("rpc"), time=text("time").cast(pl.Float64, strict=False),
                       rt=text("rt").cast(pl.Float64, strict=False), um=label("um"), dm=label("dm"),
                       interface=label("interface"), rpctype=label("rpctype"), um_instance=label("um_instance"),
                       dm_instance=label("dm_instance"))
        return lf.with_columns(ok=(pl.col("trace") != "") & pl.col("rpc").str.contains(r"^\d+(\.\d+)*$")
                               & pl.col("time").is_finite() & pl.col("rt").is_finite()
                               & (pl.col("time").abs() < 2**62 / MS) & (pl.col("rt").abs() < 2**62 / MS)).collect()

    try:
        opts = dict(has_header=True, infer_schema=False, new_columns=names, truncate_ragged_lines=True)
        if is_encoded(path):
            with open_data(path, binary=True) as f:
                df = frame(pl.read_csv(f, columns=sorted(cols.values()), **opts).lazy())
        else:
            df = frame(pl.scan_csv(path, **opts))
    except (pl.exceptions.PolarsError, ValueError):  # a stray quote: the csv module's rows, as span CSVs
        df = frame(_rows(pl, path, cols, b))
    if not df.height:
        raise InputError(path, "no data rows under the header")
    bad = df.height - int(df.get_column("ok").sum())
    if bad:
        b.problems.unparsable += bad
        b.problems.details.append(f"{path.name}: {count_of(bad, 'rows')} without a trace id, an rpcid of dotted "
                                  "numbers, a timestamp or an rt")
        df = df.filter(pl.col("ok"))
        if not df.height:
            raise InputError(path, "no row with a trace id, an rpcid of dotted numbers, a timestamp and an rt")
    _spans(pl, df.drop("ok"), b, path)


def _rows(pl, path: Path, cols: dict[str, int], b: SpanBuilder):
    """The table by the csv module's reader (which takes what polars' refuses), rows too short
    for the columns read counted unreadable."""
    width = max(cols.values()) + 1
    with open_data(path, newline="") as f:
        rows = csv.reader(f)
        next(rows, None)
        body, short = [], 0
        try:
            for r in rows:
                if len(r) >= width:
                    body.append(r)
                elif any(x.strip() for x in r):
                    short += 1
        except csv.Error as exc:
            raise InputError(path, f"line {rows.line_num}: {exc}") from None
    b.problems.unparsable += short
    if short:
        b.problems.details.append(f"{path.name}: {count_of(short, 'rows')} with fewer fields than the header")
    return pl.DataFrame({f"c{i}": [r[i] for r in body] for i in sorted(set(cols.values()))},
                        schema={f"c{i}": pl.String for i in sorted(set(cols.values()))}).lazy()


def _labels(col, unknown: bool = False) -> Labels:
    """A categorical column as Labels (its strings once, each row's index); ``unknown``: the names
    the tables leave unknown are '?'."""
    index = Labels.of_series(col.to_physical()).index  # codes, numbered in the order they first occur
    values = col.unique(maintain_order=True).cast(str).to_list()  # their strings, in that order
    if unknown:
        values = ["?" if v.lower() in UNKNOWN else v for v in values]
    return Labels(values, index)


def _either(pick: np.ndarray, a: Labels, b: Labels) -> Labels:
    """Per row, ``a``'s value where ``pick``, else ``b``'s; only the values used."""
    index = np.where(pick, a.index, b.index + len(a.values))
    used = np.bincount(index, minlength=len(a.values) + len(b.values)) > 0
    both = a.values + b.values
    return Labels([both[i] for i in np.flatnonzero(used)], (np.cumsum(used) - 1)[index])


def _or(a: Labels, b: Labels) -> Labels:
    """Per row, ``a``'s value where it is not empty, else ``b``'s."""
    return _either(np.array([bool(v) for v in a.values], bool)[a.index], a, b)


def _hashed(rpc):
    """A call's span id from its rpcid (a polars expression or column): the one hash for a call and
    for its children's parent."""
    return rpc.hash(seed=7)


def _up(rpc):
    """The rpcid of a call's caller's call (``0.1.2`` -> ``0.1``; ``0`` stays ``0``)."""
    return rpc.str.replace(r"\.\d+$", "")


def _spans(pl, df, b: SpanBuilder, path: Path) -> None:
    key = ["trace", "rpc"]
    # which side wrote each row: the callee's rt is negative; a 0 is the callee's where the caller's is there
    rt = pl.col("rt")
    df = df.with_columns(caller_seen=(rt > 0).any().over(key), h=_hashed(pl.col("rpc")))
    df = df.with_columns(server=(rt < 0) | ((rt == 0) & pl.col("caller_seen")))
    df = df.with_columns(has_server=pl.col("server").any().over(key))
    server = df.get_column("server").to_numpy()
    client = ~server & df.get_column("has_server").to_numpy()  # the caller's record of a call its callee recorded
    inner = server & df.get_column("caller_seen").to_numpy()  # the callee's record of a call its caller recorded
    h = df.get_column("h").to_numpy()
    # the span a call's children hang under is always its callee's (a lone caller's record stands for it)
    span = np.where(client, h ^ CLIENT, h)
    parent = np.where(inner, h ^ CLIENT, 0).astype(np.uint64)
    has_parent = inner.copy()
    # the others under the nearest recorded call up their rpcid
    present = df.select("trace", "rpc").unique().with_columns(found=pl.lit(True))
    strip = _up(pl.col("up"))
    todo = df.with_row_index("row").filter(pl.Series(~inner)).select("row", "trace", "rpc", up=pl.col("rpc"))
    todo = todo.with_columns(up=strip).filter(pl.col("up") != pl.col("rpc"))  # no dot: a request's first call
    skipped = 0
    for depth in range(MAX_DEPTH):
        if not todo.height:
            break
        j = todo.join(present, left_on=["trace", "up"], right_on=["trace", "rpc"], how="left")
        found = j.get_column("found").fill_null(False)
        hit = j.filter(found)
        if hit.height:
            rows = hit.get_column("row").to_numpy()
            parent[rows] = _hashed(hit.get_column("up")).to_numpy()
            has_parent[rows] = True
            skipped += hit.height if depth else 0
        todo = j.filter(~found).select("row", "trace", "rpc", "up").with_columns(higher=strip)
        # no recorded call up the ids at all: under its own caller's call, which the table lost (an orphan)
        lost = todo.filter(pl.col("higher") == pl.col("up"))
        if lost.height:
            rows = lost.get_column("row").to_numpy()
            parent[rows] = _hashed(_up(lost.get_column("rpc"))).to_numpy()
            has_parent[rows] = True
        todo = todo.filter(pl.col("higher") != pl.col("up")).select("row", "trace", "rpc", up=pl.col("higher"))
    if skipped:
        b.notes.append(f"{path.name}: {count_of(skipped, 'calls')} whose caller's call was not recorded, placed "
                       "under the nearest recorded call up their rpcid")
    um, dm = _labels(df.get_column("um"), True), _labels(df.get_column("dm"), True)
    service = _either(client, um, dm)
    um_i, dm_i = _labels(df.get_column("um_instance")), _labels(df.get_column("dm_instance"))
    replica = _either(client, _or(um_i, um), _or(dm_i, dm))  # the container where the table names one
    typ = _labels(df.get_column("rpctype"))
    name = _or(_labels(df.get_column("interface")), Labels([v or "?" for v in typ.values], typ.index))
    start = np.round(df.get_column("time").to_numpy() * MS).astype(np.int64)
    dur = np.round(np.abs(df.get_column("rt").to_numpy()) * MS).astype(np.int64)
    b.add_columns(_labels(df.get_column("trace")), span.view(np.int64), parent.view(np.int64), has_parent,
                  service, name, replica, start, start + dur)
    b.notes.append(f"{path.name}: a call-graph table of rpcids (Alibaba's): calls recorded by both sides are a "
                   "client and a server span; times are milliseconds from the start of the trace set, which "
                   "carries no date (shown as the time since that start, +h:mm:ss)")
