"""Hypothesis strategies, one per class of input perftriage reads, each drawing a :class:`Case`.

Every class starts from inputs perftriage reads well (the real traces in ../shared/real_traces,
the bundled samples, small hand-made documents in each format) and damages them the way real
files get damaged or the way a hostile client would shape them: wrong JSON types at any depth,
numbers beyond int64 or infinite, dates outside numpy's range, cut files, flipped bytes, packet
header fields at their extremes, rules of the wrong type, options out of range.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import struct
import time
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st

from .harness import Case

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PERFTRIAGE_SHARED", ROOT.parent / "shared"))
REAL_TRACES = SHARED / "real_traces"
#: the smaller real traces (a case copies one): UST only, kernel only, kernel + UST, and a kernel
#: trace recorded by perf (tests/data/perf: its folder holds the trace, threadpool/)
CTF_TRACES = ("tracevizlab-php-ust", "tracevizlab-wget-k-20180802-115406", "tracevizlab-cat-kern-ust", "perf")


def _ctf_source(name: str) -> Path:
    return ROOT / "tests" / "data" / "perf" if name == "perf" else REAL_TRACES / name

# -- values ---------------------------------------------------------------------------------

EXTREME_INTS = [0, -1, 1, 2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63), -(2**64), 10**30,
                10**400]
EXTREME_FLOATS = [float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 5e-324, -0.0, 1.7976931348623157e308]
WEIRD_TEXT = ["", " ", "NaN", "nan", "inf", "-inf", "1e999", "-", "\x00", "\ud800", "é", "a,b", '"', "\r", "\n",
              "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "1677-09-21T00:12:43Z", "2262-04-11T23:47:17Z",
              "2262-04-12T00:00:00Z", "1970-01-01", "2026-13-45T99:99:99", "18446744073709551616",
              "-9223372036854775809", "0x10", "1,5", "../../etc/passwd", "a" * 300]
#: the names the readers look up, so that random objects reach their code paths
KEYS = ["resourceSpans", "scopeSpans", "instrumentationLibrarySpans", "spans", "resource", "attributes", "key",
        "value", "stringValue", "intValue", "traceId", "spanId", "parentSpanId", "name", "startTimeUnixNano",
        "endTimeUnixNano", "kind", "data", "traceID", "spanID", "operationName", "references", "refType",
        "startTime", "duration", "processID", "processes", "serviceName", "tags", "id", "parentId", "timestamp",
        "localEndpoint", "remoteEndpoint", "ipv4", "port", "status", "resultType", "result", "metric", "values",
        "__name__", "instance"]

text_value = st.sampled_from(WEIRD_TEXT) | st.text(max_size=12)
scalar = (st.none() | st.booleans() | st.sampled_from(EXTREME_INTS) | st.integers(-10**20, 10**20)
          | st.sampled_from(EXTREME_FLOATS) | st.floats() | text_value)
json_value = st.recursive(
    scalar, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), c,
                                                                 max_size=4),
    max_leaves=12)
cell = (st.sampled_from(WEIRD_TEXT) | st.sampled_from(EXTREME_INTS).map(str) | st.sampled_from(EXTREME_FLOATS).map(repr)
        | st.integers(-10**12, 10**19).map(str) | st.floats(allow_nan=True).map(repr) | st.text(max_size=8))


def dumps(doc) -> bytes:
    """JSON as a careless writer makes it: NaN/Infinity allowed, lone surrogates kept as bytes."""
    return json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")


@st.composite
def mutated(draw, doc, rounds: int = 3):
    """``doc`` with a few values anywhere in it replaced by random JSON, or its lists cut or repeated."""
    doc = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(1, rounds))):
        node, path = doc, []
        while isinstance(node, (dict, list)) and node and draw(st.integers(0, 3)):
            key = draw(st.sampled_from(sorted(node)) if isinstance(node, dict) else st.integers(0, len(node) - 1))
            path.append((node, key))
            node = node[key]
        if not path:
            continue
        parent, key = path[-1]
        what = draw(st.sampled_from(["replace", "replace", "delete", "double", "empty"]))
        if what == "replace":
            parent[key] = draw(json_value)
        elif what == "delete":
            del parent[key]
        elif what == "double" and isinstance(parent[key], list):
            parent[key] = parent[key] * 2
        elif what == "empty":
            parent[key] = type(parent[key])() if isinstance(parent[key], (list, dict, str)) else None
    return doc


def nested(depth: int):
    """A list nested ``depth`` deep (Python's json recursion limit is about 1,000)."""
    return "[" * depth + "]" * depth


# -- seeds: small valid documents in each span format -------------------------------------

def _seed_traces(n_traces: int = 6):
    """(trace, span, parent, service, name, start_ns, end_ns, host) rows of a few small trees."""
    rows = []
    t0 = 1_767_225_600_000_000_000
    for t in range(n_traces):
        tid = f"{t + 1:032x}"
        base = t0 + t * 10_000_000
        rows.append((tid, f"{t:08x}00000001", "", "frontend", "GET /", base, base + 5_000_000, "fe-1"))
        rows.append((tid, f"{t:08x}00000002", f"{t:08x}00000001", "cart", "GetCart", base + 1_000_000,
                     base + 3_000_000 + t * 100_000, f"cart-{t % 2}"))
        rows.append((tid, f"{t:08x}00000003", f"{t:08x}00000002", "redis", "HGET", base + 1_200_000,
                     base + 2_000_000, "redis-0"))
    return rows


def otlp_doc():
    spans = []
    for tid, sid, parent, service, name, start, end, host in _seed_traces():
        spans.append({"resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": service}},
            {"key": "host.name", "value": {"stringValue": host}}]},
            "scopeSpans": [{"scope": {"name": "fuzz"}, "spans": [{
                "traceId": tid, "spanId": sid, "parentSpanId": parent, "name": name, "kind": 2,
                "startTimeUnixNano": str(start), "endTimeUnixNano": str(end)}]}]})
    return {"resourceSpans": spans}


def jaeger_doc():
    traces = {}
    for tid, sid, parent, service, name, start, end, host in _seed_traces():
        tr = traces.setdefault(tid, {"traceID": tid, "spans": [], "processes": {}})
        pid = f"p{len(tr['processes']) + 1}"
        tr["processes"][pid] = {"serviceName": service, "tags": [{"key": "hostname", "type": "string",
                                                                  "value": host}]}
        tr["spans"].append({"traceID": tid, "spanID": sid, "operationName": name, "processID": pid,
                            "references": [{"refType": "CHILD_OF", "traceID": tid, "spanID": parent}] if parent else [],
                            "startTime": start // 1000, "duration": (end - start) // 1000, "tags": []})
    return {"data": list(traces.values())}


def zipkin_doc():
    return [{"traceId": tid, "id": sid[-16:], **({"parentId": parent[-16:]} if parent else {}), "name": name,
             "timestamp": start // 1000, "duration": (end - start) // 1000,
             "localEndpoint": {"serviceName": service, "ipv4": "10.0.0.1", "port": 8080},
             "tags": {"hostname": host}} for tid, sid, parent, service, name, start, end, host in _seed_traces()]


def xray_segments(traces: int = 40, slow_from: int | None = None, t0: float = 1_795_860_000.0) -> list[dict]:
    """AWS X-Ray segment documents of a frontend (two EC2 instances) calling a cart service (two
    instances) that reads DynamoDB, as batch-get-traces gives them back per trace: the frontend's
    segment with its remote call as a subsegment, the cart's segment under that call with its
    DynamoDB call, and the segment X-Ray infers for DynamoDB; the cart's second instance 40 ms
    slower from trace ``slow_from`` on; every 10th trace's DynamoDB call throttled (a fault)."""
    out = []
    for k in range(traces):
        tid = f"1-{int(t0) + k:08x}-{k:024x}"
        start = t0 + k * 0.5
        cart_at = f"i-0cart{k % 2}"
        extra = 0.04 if slow_from is not None and k >= slow_from and k % 2 == 1 else 0.0
        ids = [f"{(k * 8 + j):016x}" for j in range(5)]
        db = {"id": ids[4], "name": "DynamoDB", "start_time": start + 0.012, "end_time": start + 0.016,
              "namespace": "aws", "aws": {"operation": "GetItem", "table_name": "carts"},
              "fault": k % 10 == 9, "throttle": k % 10 == 9}
        cart = {"id": ids[2], "trace_id": tid, "parent_id": ids[1], "name": "cart", "start_time": start + 0.010,
                "end_time": start + 0.020 + extra, "aws": {"ec2": {"instance_id": cart_at}},
                "http": {"request": {"method": "GET", "url": f"http://cart.internal/items/{1000 + k}"},
                         "response": {"status": 200}},
                "subsegments": [{**db, "id": ids[3]}]}
        front = {"id": ids[0], "trace_id": tid, "name": "frontend", "start_time": start, "end_time": start + 0.030 + extra,
                 "aws": {"ec2": {"instance_id": f"i-0front{k % 2}"}},
                 "http": {"request": {"method": "GET", "url": f"https://shop.example.com/cart/{1000 + k}?x=1"},
                          "response": {"status": 200}},
                 "subsegments": [{"id": ids[1], "name": "cart.internal", "namespace": "remote",
                                  "start_time": start + 0.008, "end_time": start + 0.022 + extra,
                                  "http": {"request": {"method": "GET",
                                                       "url": f"http://cart.internal/items/{1000 + k}"}}}]}
        inferred = {"id": ids[4], "trace_id": tid, "parent_id": ids[3], "name": "DynamoDB", "inferred": True,
                    "start_time": start + 0.012, "end_time": start + 0.016, "origin": "AWS::DynamoDB::Table",
                    "aws": {"operation": "GetItem"}, "fault": k % 10 == 9}
        out.append({"Id": tid, "Duration": 0.03 + extra, "LimitExceeded": False,
                    "Segments": [{"Id": d["id"], "Document": json.dumps(d)} for d in (front, cart, inferred)]})
    return out


def elastic_apm_documents(traces: int = 400, slow_from: int | None = None, t0: float = 1_795_860_000.0) -> list[dict]:
    """Elastic APM's documents as Elasticsearch holds them (processor.event transaction or span,
    timestamp.us, durations in µs): a frontend's request on one of two hosts, its call to the
    cart (a span), the cart's transaction under that call on one of two hosts with its database
    query (a span), and an error document now and then; the second cart host 40 ms slower from
    trace ``slow_from`` on."""
    out = []
    for k in range(traces):
        tid = f"{k:032x}"
        ids = [f"{(k * 8 + j + 1):016x}" for j in range(4)]
        us = int(t0 * 1e6) + k * 500_000
        extra = 40_000 if slow_from is not None and k >= slow_from and k % 2 == 1 else 0
        front = {"host": {"hostname": f"web-{k % 2}"}, "service": {"name": "frontend"}}
        cart = {"host": {"hostname": f"cart-{k % 2}"}, "service": {"name": "cart"}}
        out += [{"@timestamp": "", "processor": {"name": "transaction", "event": "transaction"},
                 "observer": {"type": "apm-server"}, "trace": {"id": tid}, "timestamp": {"us": us}, **front,
                 "transaction": {"id": ids[0], "name": "GET /cart", "type": "request", "duration": {"us": 30_000 + extra}},
                 "event": {"outcome": "success"}},
                {"processor": {"name": "transaction", "event": "span"}, "trace": {"id": tid}, "parent": {"id": ids[0]},
                 "timestamp": {"us": us + 2_000}, **front, "transaction": {"id": ids[0]},
                 "span": {"id": ids[1], "name": "GET cart", "type": "external", "duration": {"us": 25_000 + extra}},
                 "event": {"outcome": "success"}},
                {"processor": {"name": "transaction", "event": "transaction"}, "trace": {"id": tid},
                 "parent": {"id": ids[1]}, "timestamp": {"us": us + 3_000}, **cart,
                 "transaction": {"id": ids[2], "name": "GET /items", "type": "request", "duration": {"us": 20_000 + extra}},
                 "event": {"outcome": "failure" if k % 25 == 24 else "success"}},
                {"processor": {"name": "transaction", "event": "span"}, "trace": {"id": tid}, "parent": {"id": ids[2]},
                 "timestamp": {"us": us + 4_000}, **cart, "transaction": {"id": ids[2]},
                 "span": {"id": ids[3], "name": "SELECT FROM items", "type": "db", "duration": {"us": 10_000 + extra}},
                 "event": {"outcome": "success"}}]
        if k % 50 == 49:
            out.append({"processor": {"name": "error", "event": "error"}, "trace": {"id": tid}, **cart,
                        "error": {"exception": [{"message": "boom"}]}, "timestamp": {"us": us + 5_000}})
    for d in out:
        d.pop("@timestamp", None)
    return out


def skywalking_traces(traces: int = 400, slow_from: int | None = None, t0_ms: int = 1_795_860_000_000) -> list[dict]:
    """SkyWalking's queryTrace answers: a frontend's segment (its Entry span, its Exit call to the
    cart), the cart's segment (its Entry span referring to that Exit span, a Local span, an Exit
    to Redis) on one of two instances; the second 40 ms slower from trace ``slow_from`` on; every
    20th cart request an error."""
    out = []
    for k in range(traces):
        tid = f"{k:x}.{k * 7}.{t0_ms + k}"
        fseg, cseg = f"f{k:x}.1.{t0_ms + k}", f"c{k:x}.1.{t0_ms + k}"
        t = t0_ms + 500 * k
        extra = 40 if slow_from is not None and k >= slow_from and k % 2 == 1 else 0
        fe = {"serviceCode": "frontend", "serviceInstanceName": f"frontend-{k % 2}@10.0.0.{k % 2}"}
        ce = {"serviceCode": "cart", "serviceInstanceName": f"cart-{k % 2}@10.0.1.{k % 2}"}
        spans = [{"traceId": tid, "segmentId": fseg, "spanId": 0, "parentSpanId": -1, "refs": [], **fe,
                  "endpointName": "GET:/cart", "startTime": t, "endTime": t + 30 + extra, "type": "Entry",
                  "isError": False, "layer": "Http", "component": "SpringMVC"},
                 {"traceId": tid, "segmentId": fseg, "spanId": 1, "parentSpanId": 0, "refs": [], **fe,
                  "endpointName": "/items", "startTime": t + 2, "endTime": t + 26 + extra, "type": "Exit",
                  "peer": "cart:8080", "isError": False},
                 {"traceId": tid, "segmentId": cseg, "spanId": 0, "parentSpanId": -1, **ce,
                  "refs": [{"traceId": tid, "parentSegmentId": fseg, "parentSpanId": 1, "type": "CROSS_PROCESS"}],
                  "endpointName": "GET:/items", "startTime": t + 3, "endTime": t + 24 + extra, "type": "Entry",
                  "isError": k % 20 == 19},
                 {"traceId": tid, "segmentId": cseg, "spanId": 1, "parentSpanId": 0, "refs": [], **ce,
                  "endpointName": "Redis/GET", "startTime": t + 5, "endTime": t + 9, "type": "Exit", "peer": "redis:6379",
                  "isError": False}]
        out.append({"data": {"trace": {"spans": spans}}})
    return out


def jaeger_span_documents(ui: dict) -> list[dict]:
    """The spans of a Jaeger UI export as its Elasticsearch storage holds them: one document per
    span, its process inline, its start in ms beside (startTimeMillis)."""
    return [{**{k: v for k, v in sp.items() if k != "processID"}, "process": tr["processes"][sp["processID"]],
             "startTimeMillis": sp["startTime"] // 1000}
            for tr in ui["data"] for sp in tr["spans"]]


def series_export(result: list[dict]) -> list[dict]:
    """A range query's series as VictoriaMetrics exports them: values and their times in ms apart."""
    return [{"metric": x["metric"], "values": [float(v) for _, v in x["values"]],
             "timestamps": [t * 1000 for t, _ in x["values"]]} for x in result]


def prometheus_doc():
    t0 = 1_767_225_600
    result = []
    for s in range(3):
        for name in ("cpu_percent", "gc_percent"):
            result.append({"metric": {"__name__": name, "instance": f"srv-{s}"},
                           "values": [[t0 + 60 * i, str(10 + s + (i % 5))] for i in range(30)]})
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


SPAN_COLUMNS = ["trace", "span", "parent", "service", "name", "start", "end", "duration", "host", "trace_id",
                "span_id", "parent_id", "start_time", "end_time", "duration_ms", "pod", "status", "operation"]


def csv_bytes(rows, newline="\n") -> bytes:
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator=newline)
    for r in rows:
        w.writerow(r)
    return buf.getvalue().encode("utf-8", "surrogatepass")


def span_csv_rows():
    rows = [["trace", "span", "parent", "service", "name", "start", "end", "host"]]
    rows += [list(map(str, r)) for r in _seed_traces()]
    return rows


def app_insights_rows(requests: int = 1500, slow_from: int | None = None, t0: float = 1_795_860_000.0) -> list[list[str]]:
    """Application Insights' requests and dependencies as the Azure portal exports a Log Analytics
    query (union requests, dependencies): "timestamp [UTC]" in the US locale's 12-hour form,
    operation_Id the trace, operation_ParentId the parent (the trace's id for its root request),
    cloud_RoleName and cloud_RoleInstance the service and its instance, duration in ms, success.
    A frontend's request, its call to the cart, the cart's request on one of two instances; the
    second instance 80 ms slower from request ``slow_from`` on."""
    import random

    r = random.Random(1)
    rows = [["timestamp [UTC]", "id", "name", "success", "resultCode", "duration", "operation_Id",
             "operation_ParentId", "cloud_RoleName", "cloud_RoleInstance", "itemType"]]
    for k in range(requests):
        op = f"{r.getrandbits(128):032x}"
        req, dep, creq = (f"{r.getrandbits(64):016x}" for _ in range(3))
        inst = k % 2
        cart = 20 + r.random() * 5 + (80 if slow_from is not None and inst == 1 and k >= slow_from else 0)

        def ts(ms):
            t = t0 + k + ms / 1000
            return time.strftime("%m/%d/%Y, %I:%M:%S", time.gmtime(t)) + f".{int(round(t % 1 * 1000)):03d} " + \
                time.strftime("%p", time.gmtime(t))

        rows += [[ts(0), req, "GET /cart", "True", "200", f"{cart + 15:.3f}", op, op, "frontend", f"frontend-{k % 3}",
                  "request"],
                 [ts(5), dep, "GET cart/items", "True", "200", f"{cart + 2:.3f}", op, req, "frontend",
                  f"frontend-{k % 3}", "dependency"],
                 [ts(6), creq, "GET /items", "True", "200", f"{cart:.3f}", op, dep, "cart", f"cart-{inst}", "request"]]
    return rows


def rpc_id_rows():
    """The seed traces as Alibaba's call-graph table (v2021 header): each call as its caller and
    its callee logged it, the database call by the caller only."""
    rows = [["", "traceid", "timestamp", "rpcid", "um", "rpctype", "dm", "interface", "rt"]]
    for t in range(6):
        tid, ms = f"0b{t + 1:014x}", 1000 + 10 * t
        rows += [[tid, ms, "0", "USER", "http", "frontend", "GET /", -5], [tid, ms + 1, "0.1", "frontend", "rpc", "cart",
                  "GetCart", 2 + t % 2], [tid, ms + 1, "0.1", "frontend", "rpc", "cart", "GetCart", -(1 + t % 2)],
                 [tid, ms + 1, "0.1.1", "cart", "db", "redis", "", 1]]
    return [rows[0]] + [[str(i)] + list(map(str, r)) for i, r in enumerate(rows[1:])]


def counters_rows(servers: int = 4, samples: int = 24, counters=("cpu", "gc", "queue"), kinds: bool = False):
    """``kinds``: with a column naming each server's service and one naming its node (Alibaba's
    msname and nodeid)."""
    t0 = 1_767_225_600
    rows = [["time", "server", *(["msname", "nodeid"] if kinds else []), *counters]]
    for i in range(samples):
        for s in range(servers):
            rows.append([str(t0 + 300 * i), f"srv-{s}", *([f"MS_{s % 2}", f"n{s // 2}"] if kinds else []),
                         *(f"{10 + s + (i * 7 + j) % 11:.2f}" for j in range(len(counters)))])
    return rows


def flux_rows(servers: int = 4, samples: int = 24, annotated: bool = True):
    """A Flux result as InfluxDB's UI downloads it: annotation rows, a header, one table per
    series (cpu.usage_user, net.bytes_recv per interface), a blank row ending the result."""
    rows = [["#group", "false", "false", "true", "true", "false", "false", "true", "true", "true", "true"],
            ["#datatype", "string", "long", "dateTime:RFC3339", "dateTime:RFC3339", "dateTime:RFC3339", "double",
             "string", "string", "string", "string"],
            ["#default", "_result", "", "", "", "", "", "", "", "", ""]] if annotated else []
    rows.append(["", "result", "table", "_start", "_stop", "_time", "_value", "_field", "_measurement", "host", "tag"])
    t0 = 1_767_225_600  # 2026-01-01, a sample every 5 minutes
    stamps = [time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + 300 * i)) for i in range(samples)]
    table = 0
    for field, measurement, tags in (("usage_user", "cpu", ["cpu-total"]), ("bytes_recv", "net", ["eth0", "eth1"])):
        for s in range(servers):
            for tag in tags:
                rows += [["", "", str(table), "2026-01-01T00:00:00Z", "2026-01-01T02:00:00Z",
                          stamps[i], f"{10 + s + (i * 7) % 11 + i * 1e3:.2f}",
                          field, measurement, f"srv-{s}", tag] for i in range(samples)]
                table += 1
    return rows + [[]]


def line_protocol_lines(servers: int = 4, samples: int = 24, t0: int = 1_767_225_600, step: int = 10,
                        unit: int = 10**9, shift: int | None = None) -> list[str]:
    """Telegraf's metrics as its file output writes them (InfluxDB line protocol): cpu with a
    cpu tag, net per interface (bytes_recv a total since boot, integers), system with a string
    field; ``unit`` timestamps per second; server ``srv-1``'s CPU 40 points higher from sample
    ``shift`` on."""
    lines = []
    for i in range(samples):
        t = (t0 + step * i) * unit
        for s in range(servers):
            host = f"srv-{s}"
            user = 20 + (i * 7 + s) % 5 / 2 + (40 if shift is not None and s == 1 and i >= shift else 0)
            lines += [f"cpu,cpu=cpu-total,host={host} usage_user={user:.2f},usage_idle={75 - user / 2:.2f} {t}",
                      *(f"net,host={host},interface={ifc} bytes_recv={(i * 2_000_000 + s * 10**9 + k * (i * 7 % 3)):d}i,"
                        f"err_in=0i {t}" for k, ifc in enumerate(("eth0", "eth1"))),
                      f'system,host={host} load1={1 + (i + s) % 7 / 10:.2f},uptime_format="{i:2d} min" {t}']
    return lines


def dstat_rows(host: str = "web-01", samples: int = 24, tool: str = "dstat", clock: str = "time",
               start: str = "28 Nov 2026 10:00:00 UTC", delay: int = 5, high_from: int | None = None) -> list[list[str]]:
    """A dstat (or dool) CSV as ``dstat -tcdny --output FILE 5`` writes it: the preamble, the
    groups' and the columns' header rows, a first row of averages since boot (usr 90), then a
    row every ``delay`` s from ``start`` (the Date row); ``clock``: "time" (dstat's 28-11
    10:00:05, dool's Nov-28 10:00:05), "epoch" (-T) or "" (no time column); usr 40 points higher
    from row ``high_from`` on."""
    import datetime as dt

    t0 = dt.datetime.strptime(" ".join(start.split()[:4]), "%d %b %Y %H:%M:%S")
    zone = start.split()[4] if len(start.split()) > 4 else ""
    offset = {"UTC": 0, "GMT": 0, "CET": 3600, "": 0}.get(zone, 0)
    banner = "Dstat 0.7.4 CSV output" if tool == "dstat" else "dool 1.3.0 CSV output"
    rows = [[banner], ["Author:", "Dag Wieers <dag@wieers.com>", "", "", "", "URL:", "http://dag.wieers.com/"],
            ["Host:", host, "", "", "", "User:", "root"],
            ["Cmdline:", f"{tool} -{'t' if clock == 'time' else 'T' if clock == 'epoch' else ''}cdny --output "
                         f"/tmp/{host}.csv {delay}", "", "", "", "Date:", start], []]
    groups = ({"time": ["system"], "epoch": ["epoch"]}.get(clock, []) +
              ["total cpu usage", "", "", "", "", "", "dsk/total", "", "net/total", "", "system", ""])
    cols = ({"time": ["time"], "epoch": ["epoch"]}.get(clock, []) +
            ["usr", "sys", "idl", "wai", "hiq", "siq", "read", "writ", "recv", "send", "int", "csw"])
    rows += [groups, cols]
    fmt = "%d-%m %H:%M:%S" if tool == "dstat" else "%b-%d %H:%M:%S"
    for i in range(samples + 1):
        t = t0 + dt.timedelta(seconds=delay * i)
        stamp = {"time": [t.strftime(fmt)], "epoch": [f"{t.replace(tzinfo=dt.timezone.utc).timestamp() - offset:.3f}"]
                 }.get(clock, [])
        usr = 90.0 if i == 0 else 10 + (i * 7) % 5 / 2 + (40 if high_from is not None and i >= high_from else 0)
        rows.append(stamp + [f"{usr:.3f}", f"{2 + i % 3 / 4:.3f}", f"{85 - usr:.3f}", "0.1", "0", "0.2", "0",
                             str(12288 + (i * 37) % 4000), str(1234 + i % 9), "567", "345", str(678 + (i * 13) % 50)])
    return rows


def nmon_lines(host: str = "web01", samples: int = 24, start: str = "10:00:00,28-NOV-2026", step: int = 60,
               high_from: int | None = None) -> list[str]:
    """An nmon recording as ``nmon -f -s 60`` writes it: AAA and BBB lines, the sections' headers
    (CPU_ALL, MEM, NET with its trailing empty column, DISKBUSY), then a ZZZZ line and a line per
    section at each snapshot, a TOP line per process; User% 40 points higher from snapshot
    ``high_from`` on."""
    import datetime as dt

    t0 = dt.datetime.strptime(start, "%H:%M:%S,%d-%b-%Y")
    lines = ["AAA,progname,nmon", f"AAA,command,nmon -f -s {step} -c {samples}", "AAA,version,16n",
             f"AAA,host,{host}", f"AAA,interval,{step}", f"AAA,snapshots,{samples}", "AAA,cpus,4,4",
             f"AAA,time,{start.split(',')[0]}", f"AAA,date,{start.split(',')[1]}", "BBBP,000,/etc/release",
             'BBBP,001,/etc/release,"PRETTY_NAME=Debian GNU/Linux 12"',
             f"CPU_ALL,CPU Total {host},User%,Sys%,Wait%,Idle%,Steal%,Busy,CPUs",
             f"MEM,Memory MB {host},memtotal,hightotal,lowtotal,swaptotal,memfree,cached",
             f"NET,Network I/O {host},lo-read-KB/s,eth0-read-KB/s,lo-write-KB/s,eth0-write-KB/s,",
             f"DISKBUSY,Disk %Busy {host},sda,sda1",
             "TOP,%CPU Utilisation", "TOP,+PID,Time,%CPU,%Usr,%Sys,Size,ResSet,Command"]
    for i in range(samples):
        tag = f"T{i + 1:04d}"
        t = t0 + dt.timedelta(seconds=step * i)
        user = 10 + (i * 7) % 5 / 2 + (40 if high_from is not None and i >= high_from else 0)
        lines += [f"ZZZZ,{tag},{t:%H:%M:%S},{t:%d}-{t:%b}-{t:%Y}".upper(),
                  f"CPU_ALL,{tag},{user:.1f},{2 + i % 3 / 4:.1f},0.1,{88 - user:.1f},0.0,,4",
                  f"MEM,{tag},7977.4,0.0,7977.4,2048.0,{3000 + (i * 37) % 400:.1f},{2500 + i % 9:.1f}",
                  f"NET,{tag},0.1,{120 + (i * 13) % 50:.1f},0.1,{80 + i % 7:.1f},",
                  f"DISKBUSY,{tag},{(i * 3) % 10:.1f},{(i * 3) % 10:.1f}",
                  f"TOP,0012345,{tag},{user:.2f},{user - 1:.2f},1.00,123456,65432,java"]
    return lines


def vmstat_lines(samples: int = 24, t0: str = "2026-11-28 10:00:00", zone: str | None = "UTC", step: int = 5,
                 busy_from: int | None = None, every: int = 20) -> list[str]:
    """vmstat's report as procps-ng 4.0 prints ``vmstat -t 5`` (``zone`` None: without -t): its
    two header lines again every ``every`` rows, a first row of averages since boot (us 90), then a
    row every ``step`` s; us 40 points higher from row ``busy_from`` on."""
    import datetime as dt

    start = dt.datetime.strptime(t0, "%Y-%m-%d %H:%M:%S")
    groups = "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----"
    cols = " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st"
    if zone is not None:
        groups += " -----timestamp-----"
        cols += f" {zone:>20}"
    lines = []
    for i in range(samples + 1):
        if i % every == 0:
            lines += [groups, cols]
        us = 90 if i == 0 else 10 + (i * 7) % 5 + (40 if busy_from is not None and i >= busy_from else 0)
        row = (f"{1 + i % 3:2d} {0:2d} {0:6d} {21494788 - (i * 37) % 4000:8d} {21460:6d} {1852772 + i % 9:7d} "
               f"{0:4d} {0:4d} {(i * 13) % 50:5d} {72 + i % 11:5d} {966 + i % 7:4d} {912 + (i * 17) % 40:4d} "
               f"{us:2d} {5:2d} {95 - us:2d} {0:2d} {0:2d}")
        if zone is not None:
            row += f" {start + dt.timedelta(seconds=step * i):%Y-%m-%d %H:%M:%S}"
        lines.append(row)
    return lines


def collectd_files(hosts: int = 4, samples: int = 60, t0: float = 1_795_860_000.0, step: int = 10,
                   busy_from: int | None = None, store_rates: bool = False) -> dict[str, str]:
    """collectd's CSV plugin's files as it writes them under its DataDir (``HOST/PLUGIN/TYPE-DAY``):
    each host's cpu-0 jiffies (derive: integers since boot, or rates as decimals with
    ``store_rates``), load (gauges, three data sources), memory used (a gauge) and eth0's octets
    (rx and tx totals); host 1's CPU busy from sample ``busy_from`` on. Two days' files where the
    samples cross midnight. Returns {relative path: text}."""
    import datetime as dt

    out: dict[str, list[str]] = {}

    def add(host, plugin, type_, header, t, values):
        day = dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d")
        lines = out.setdefault(f"{host}/{plugin}/{type_}-{day}", [header])
        lines.append(",".join([f"{t:.3f}", *values]))

    for h in range(hosts):
        host = f"web-0{h}"
        user = idle = octets = 0
        for i in range(samples):
            t = t0 + step * i + h * 0.01
            busy = busy_from is not None and h == 1 and i >= busy_from
            du = 100 * step * (0.1 + 0.01 * (i % 3) + (0.5 if busy else 0))
            user, idle = user + du, idle + 100 * step - du
            octets += 1_000_000 + 1000 * (i % 7)
            if store_rates:
                add(host, "cpu-0", "cpu-user", "epoch,value", t, [f"{du / step:.6f}"])
                add(host, "cpu-0", "cpu-idle", "epoch,value", t, [f"{(100 * step - du) / step:.6f}"])
            else:
                add(host, "cpu-0", "cpu-user", "epoch,value", t, [f"{int(user)}"])
                add(host, "cpu-0", "cpu-idle", "epoch,value", t, [f"{int(idle)}"])
            add(host, "load", "load", "epoch,shortterm,midterm,longterm", t,
                [f"{0.5 + (i % 5) / 10:.6f}", "0.500000", "0.400000"])
            add(host, "memory", "memory-used", "epoch,value", t, [f"{2e9 + 1e6 * (i % 11):.6f}"])
            add(host, "interface-eth0", "if_octets", "epoch,rx,tx", t, [str(octets), str(octets // 2)])
    return {k: "\n".join(v) + "\n" for k, v in out.items()}


def otlp_metrics_lines(hosts: int = 4, samples: int = 30, t0: int = 1_795_860_000, step: int = 10,
                       busy_from: int | None = None, delta: bool = False) -> list[str]:
    """OpenTelemetry metrics as the collector's file exporter writes them (an export request a
    line), from the host metrics receiver: system.cpu.utilization per state (a gauge),
    system.network.io per direction (a monotonic sum, cumulative or ``delta``), system.memory.usage
    (an up-down sum) and an http.server.duration histogram; host 1's user CPU 0.4 higher from
    sample ``busy_from`` on."""
    def attr(k, v):
        return {"key": k, "value": {"stringValue": v}}

    lines = []
    io = [0] * hosts
    for i in range(samples):
        t = (t0 + step * i) * 10**9
        groups = []
        for h in range(hosts):
            user = 0.1 + 0.01 * (i % 3) + (0.4 if busy_from is not None and h == 1 and i >= busy_from else 0)
            sent = 1_000_000 + 1000 * (i % 7)
            io[h] += sent
            start = t - step * 10**9 if delta else t0 * 10**9
            groups.append({
                "resource": {"attributes": [attr("host.name", f"web-0{h}"), attr("service.name", "shop"),
                                            attr("os.type", "linux")]},
                "scopeMetrics": [{"scope": {"name": "hostmetricsreceiver"}, "metrics": [
                    {"name": "system.cpu.utilization", "unit": "1", "gauge": {"dataPoints": [
                        {"attributes": [attr("cpu", "cpu0"), attr("state", st)], "timeUnixNano": str(t),
                         "asDouble": v} for st, v in (("user", user), ("idle", 0.85 - user))]}},
                    {"name": "system.network.io", "unit": "By", "sum": {
                        "aggregationTemporality": 1 if delta else 2, "isMonotonic": True, "dataPoints": [
                            {"attributes": [attr("device", "eth0"), attr("direction", "transmit")],
                             "startTimeUnixNano": str(start), "timeUnixNano": str(t),
                             "asInt": str(sent if delta else io[h])}]}},
                    {"name": "system.memory.usage", "unit": "By", "sum": {
                        "aggregationTemporality": 2, "isMonotonic": False, "dataPoints": [
                            {"attributes": [attr("state", "used")], "timeUnixNano": str(t),
                             "asInt": str(2_000_000_000 + 1_000_000 * (i % 11))}]}},
                    {"name": "http.server.duration", "unit": "ms", "histogram": {
                        "aggregationTemporality": 2, "dataPoints": [
                            {"timeUnixNano": str(t), "count": str(10 * i), "sum": 5.0 * i}]}}]}]})
        lines.append(json.dumps({"resourceMetrics": groups}))
    return lines


def graphite_series(hosts: int = 4, samples: int = 30, t0: int = 1_795_860_000, step: int = 60,
                    busy_from: int | None = None) -> list[dict]:
    """Graphite's render API's JSON for ``servers.*.{cpu.user,cpu.system,memory.used}``: a series
    a host and metric, ``[value, unix seconds]`` points, a null now and then; host 1's cpu.user 40
    higher from point ``busy_from`` on."""
    out = []
    for h in range(hosts):
        for metric in ("cpu.user", "cpu.system", "memory.used"):
            pts = []
            for i in range(samples):
                v = {"cpu.user": 10 + (i * 7 + h) % 5 + (40 if busy_from is not None and h == 1 and i >= busy_from
                                                         else 0),
                     "cpu.system": 3 + (i + h) % 3, "memory.used": 2e9 + 1e6 * ((i + h) % 11)}[metric]
                pts.append([None if i % 17 == 16 else v, t0 + step * i])
            out.append({"target": f"servers.web{h:02d}.{metric}", "tags": {"name": f"servers.web{h:02d}.{metric}"},
                        "datapoints": pts})
    return out


def cloudwatch_metric_data(hosts: int = 6, samples: int = 288, t0: int = 1_795_860_000, step: int = 300,
                           busy_from: int | None = None, labels: str = "dynamic") -> dict:
    """``aws cloudwatch get-metric-data`` output for EC2 instances' CPUUtilization, NetworkIn and
    a still StatusCheckFailed: labelled as ``${PROP('Dim.InstanceId')} ${PROP('MetricName')}``
    (``labels="dynamic"``), or each metric a SEARCH expression of its own whose series CloudWatch
    labels by instance alone (``"search"``: Ids cpu, net, check); newest first, as CloudWatch lists
    them, ISO 8601 with +00:00 as the CLI prints them; instance 2's CPU 45 points higher from
    sample ``busy_from`` on."""
    results = []
    stamps = [time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t0 + step * i)) for i in range(samples)][::-1]
    for metric, sid in (("CPUUtilization", "cpu"), ("NetworkIn", "net"), ("StatusCheckFailed", "check")):
        for h in range(hosts):
            inst = f"i-0{h:02d}a7c3e9b1f5d2{h:02d}"
            vals = []
            for i in range(samples):
                v = {"CPUUtilization": 20 + (i * 7 + h) % 6 + (45 if busy_from is not None and h == 2 and i >= busy_from
                                                             else 0),
                     "NetworkIn": 5e6 + 1e5 * ((i + h) % 9), "StatusCheckFailed": 0.0}[metric]
                vals.append(float(v))
            label = f"{inst} {metric}" if labels == "dynamic" else inst
            results.append({"Id": f"m{len(results)}" if labels == "dynamic" else sid, "Label": label,
                            "Timestamps": stamps, "Values": vals[::-1], "StatusCode": "Complete"})
    return {"MetricDataResults": results, "Messages": []}


def gcp_time_series(hosts: int = 5, samples: int = 240, t0: int = 1_795_860_000, step: int = 60,
                    busy_from: int | None = None) -> dict:
    """Cloud Monitoring's timeSeries.list response for GCE instances: CPU utilization (a GAUGE, the
    instance's name a metric label), bytes received (a DELTA over each minute, int64 as strings),
    disk operations since boot (CUMULATIVE) and the load balancer's latencies (a distribution);
    newest points first, as the API lists them; instance 1's CPU 0.5 higher from ``busy_from`` on."""
    def iso(t):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

    out = []
    for h in range(hosts):
        name, iid = f"web-{h}", str(7_000_000_000_000_000 + h)
        res = {"type": "gce_instance", "labels": {"project_id": "shop", "instance_id": iid, "zone": f"europe-west1-{'bcd'[h % 3]}"}}
        cpu, rx, ops = [], [], []
        total = 10_000 * h
        for i in range(samples):
            t = t0 + step * i
            cpu.append({"interval": {"startTime": iso(t), "endTime": iso(t)},
                        "value": {"doubleValue": 0.2 + 0.01 * ((i * 7 + h) % 5)
                                  + (0.5 if busy_from is not None and h == 1 and i >= busy_from else 0)}})
            rx.append({"interval": {"startTime": iso(t - step), "endTime": iso(t)},
                       "value": {"int64Value": str(600_000 + 6_000 * ((i + h) % 4))}})
            total += 1200 + 60 * (i % 3)
            ops.append({"interval": {"startTime": iso(t0 - 86400), "endTime": iso(t)}, "value": {"int64Value": str(total)}})
        out += [{"metric": {"type": "compute.googleapis.com/instance/cpu/utilization", "labels": {"instance_name": name}},
                 "resource": res, "metricKind": "GAUGE", "valueType": "DOUBLE", "points": cpu[::-1]},
                {"metric": {"type": "compute.googleapis.com/instance/network/received_bytes_count",
                            "labels": {"instance_name": name, "loadbalanced": "false"}},
                 "resource": res, "metricKind": "DELTA", "valueType": "INT64", "points": rx[::-1]},
                {"metric": {"type": "agent.googleapis.com/disk/operation_count",
                            "labels": {"device": "sda", "direction": "read"}},
                 "resource": res, "metricKind": "CUMULATIVE", "valueType": "INT64", "points": ops[::-1]}]
    out.append({"metric": {"type": "loadbalancing.googleapis.com/https/total_latencies", "labels": {}},
                "resource": {"type": "https_lb_rule", "labels": {"url_map_name": "shop"}}, "metricKind": "DELTA",
                "valueType": "DISTRIBUTION", "points": [{"interval": {"startTime": iso(t0), "endTime": iso(t0 + step)},
                                                         "value": {"distributionValue": {"count": "10"}}}]})
    return {"timeSeries": out, "unit": ""}


def azure_metrics(vm: str, samples: int = 240, t0: int = 1_795_860_000, step: int = 60, busy_from: int | None = None,
                  k: int = 0) -> dict:
    """``az monitor metrics list`` output for one VM: Percentage CPU (average), Available Memory
    Bytes, and Disk Read Bytes per LUN (a dimension, total); its CPU 40 points higher from
    ``busy_from`` on."""
    rid = f"/subscriptions/0000/resourceGroups/shop/providers/Microsoft.Compute/virtualMachines/{vm}"
    stamps = [time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t0 + step * i)) for i in range(samples)]

    def metric(name, unit, series):
        return {"id": f"{rid}/providers/Microsoft.Insights/metrics/{name}", "name": {"localizedValue": name,
                "value": name}, "unit": unit, "errorCode": "Success", "resourceGroup": "shop",
                "type": "Microsoft.Insights/metrics", "timeseries": series}

    def data(agg, f):
        return [{"timeStamp": s, **{a: (f(i) if a == agg else None) for a in ("average", "count", "maximum",
                                                                               "minimum", "total")}}
                for i, s in enumerate(stamps)]

    cpu = data("average", lambda i: 12 + (i * 7 + k) % 5 + (40 if busy_from is not None and i >= busy_from else 0))
    mem = data("average", lambda i: 6e9 + 1e7 * ((i + k) % 7))
    disk = [{"metadatavalues": [{"name": {"localizedValue": "LUN", "value": "LUN"}, "value": str(lun)}],
             "data": data("total", lambda i: 1e6 * (lun + 1) + 1e4 * (i % 3))} for lun in (0, 1)]
    return {"cost": 0, "interval": "PT1M", "namespace": "Microsoft.Compute/virtualMachines",
            "resourceregion": "westeurope", "timespan": f"{stamps[0]}/{stamps[-1]}",
            "value": [metric("Percentage CPU", "Percent", [{"metadatavalues": [], "data": cpu}]),
                      metric("Available Memory Bytes", "Bytes", [{"metadatavalues": [], "data": mem}]),
                      metric("Disk Read Bytes", "Bytes", disk)]}


def datadog_query(hosts: int = 5, samples: int = 240, t0: int = 1_795_860_000, step: int = 60,
                  busy_from: int | None = None) -> list[dict]:
    """Datadog's query API answers for ``avg:system.cpu.user{*} by {host}`` and
    ``avg:system.disk.in_use{*} by {host,device}``: a series a host (and device), ``[ms, value]``
    points, a null now and then; host 2's CPU 40 points higher from ``busy_from`` on."""
    def answer(metric, query, tagsets, f):
        series = []
        for tags in tagsets:
            h = int(tags[0].rsplit("-", 1)[1])
            pts = [[float((t0 + step * i) * 1000), None if i % 23 == 22 else f(h, i, tags)] for i in range(samples)]
            series.append({"metric": metric, "display_name": metric, "scope": ",".join(tags), "tag_set": tags,
                           "pointlist": pts, "aggr": "avg", "expression": query, "interval": step, "length": samples,
                           "start": t0 * 1000, "end": (t0 + step * (samples - 1)) * 1000, "unit": None})
        return {"status": "ok", "res_type": "time_series", "series": series, "query": query,
                "from_date": t0 * 1000, "to_date": (t0 + step * samples) * 1000, "message": "", "group_by": ["host"]}

    hosts_ = [[f"host:web-{h}"] for h in range(hosts)]
    disks = [[f"host:web-{h}", f"device:/dev/sd{d}"] for h in range(hosts) for d in "ab"]
    return [answer("system.cpu.user", "avg:system.cpu.user{*} by {host}", hosts_,
                   lambda h, i, _: 15.0 + (i * 7 + h) % 5 + (40 if busy_from is not None and h == 2 and i >= busy_from
                                                             else 0)),
            answer("system.disk.in_use", "avg:system.disk.in_use{*} by {host,device}", disks,
                   lambda h, i, tags: 0.4 + (0.1 if tags[1].endswith("b") else 0) + 0.001 * (i % 3))]


def pdh_rows(machines: int = 4, threads: bool = False, samples: int = 24, machine: bool = False):
    """A Windows performance counter log (PDH-CSV): a fleet's counters, or a process's threads
    (the Thread object, with their ids), and with ``machine`` its machine's CPU and free memory
    beside them."""
    if threads:
        cols = [f"\\\\WEB01\\Thread(w3wp/{i})\\{c}" for i in range(machines)
                for c in ("% Processor Time", "Context Switches/sec", "ID Thread", "ID Process")]
        cols += ["\\\\WEB01\\Processor(_Total)\\% Processor Time", "\\\\WEB01\\Memory\\Available MBytes"] * machine
    else:
        cols = [f"\\\\WEB0{m}\\{c}" for m in range(machines)
                for c in ("Processor(_Total)\\% Processor Time", "Memory\\Available MBytes")]
    rows = [["(PDH-CSV 4.0) (Pacific Standard Time)(480)", *cols]]
    for i in range(samples):
        row = [f"11/27/2026 08:{i // 4:02d}:{i % 4 * 15:02d}.{(i * 37) % 1000:03d}"]
        for m in range(machines):
            row += ([f"{10 + (i * 7 + m) % 11:.3f}", f"{200 + m}", str(4000 + 4 * m), "4242"] if threads else
                    [f"{30 + (i * 7 + m) % 11:.6f}", " " if i == 3 else f"{4000 + m}"])
        if threads and machine:
            row += [f"{30 + i % 5:.3f}", f"{4000 - i}"]
        rows.append(row)
    return rows


def thread_rows(threads: int = 4, samples: int = 30):
    t0 = 1_767_225_600
    rows = [["time", "thread", "process", "cpu", "io", "wait"]]
    for i in range(samples):
        for t in range(threads):
            rows.append([f"{t0 + i * 0.5:.1f}", f"w{t}", "app", f"{0.2 + (i * t) % 7 / 10:.2f}", str(i % 3),
                         f"{(i + t) % 5 / 10:.1f}"])
    return rows


STATES = ("RU", "RS", "BP", "BD", "BN", "BS", "BI", "BF", "BT")


def features_rows(n: int = 40):
    """What ``perftriage features`` writes: one row per request with its time in each state."""
    rows = [["id", "kind", "host", "pid", "tid", "start_ns", "end_ns", "TT_ns", *(f"{s}_ns" for s in STATES),
             *(f"{s}_n" for s in STATES), "syscalls", "states", "comm"]]
    t0 = 1_767_225_600_000_000_000
    for i in range(n):
        ns = [(i * 7919 + k * 104_729) % 3_000_000 for k in range(len(STATES))]
        if i % 10 == 9:
            ns[3] += 50_000_000  # a few requests wait on the disk
        start = t0 + i * 100_000_000
        rows.append([str(i + 1), "request", "web-1", "100", str(100 + i % 4), str(start), str(start + sum(ns)),
                     str(sum(ns)), *map(str, ns), *(str(1 + (i + k) % 5) for k in range(len(STATES))),
                     "read write" + (" fsync" if i % 10 == 9 else ""), "RU BD RU", "php-fpm"])
    return rows


def clouddiag_rows():
    """The first calls of the bundled CloudDiag log (host,timestamp,request_id,mid,caller_mid,method,flag)."""
    path = ROOT / "sample_traces" / "microservices" / "clouddiag-log" / "calls.log"
    with open(path, newline="") as f:
        return [row for _, row in zip(range(400), csv.reader(f))]


@st.composite
def damaged_rows(draw, rows, rounds: int = 4):
    """CSV rows with cells replaced, rows cut, duplicated or widened, the header changed."""
    rows = [list(r) for r in rows]
    for _ in range(draw(st.integers(1, rounds))):
        what = draw(st.sampled_from(["cell", "cell", "cell", "header", "cut_row", "extra_cell", "dup_rows",
                                     "drop_rows", "one_more_sample"]))
        i = draw(st.integers(1, max(1, len(rows) - 1))) if len(rows) > 1 else 0
        if what == "cell" and rows[i]:
            rows[i][draw(st.integers(0, len(rows[i]) - 1))] = draw(cell)
        elif what == "header" and rows[0]:
            rows[0][draw(st.integers(0, len(rows[0]) - 1))] = draw(st.sampled_from(SPAN_COLUMNS + ["", "time", "value",
                                                                                                 "metric", "thread"]))
        elif what == "cut_row":
            rows[i] = rows[i][: draw(st.integers(0, len(rows[i])))]
        elif what == "extra_cell":
            rows[i] = rows[i] + [draw(cell)]
        elif what == "dup_rows":
            rows = rows + rows[1:]  # the body repeated
        elif what == "drop_rows":
            del rows[i:i + draw(st.integers(1, 10))]
        elif what == "one_more_sample" and len(rows) > 1:
            extra = list(rows[-1])
            if extra:
                extra[0] = draw(cell)
            rows.append(extra)
    return rows


def maybe_gzip(draw, data: bytes, name: str) -> tuple[str, bytes]:
    how = draw(st.sampled_from(["plain", "plain", "plain", "gzip", "gzip_cut"]))
    if how == "plain":
        return name, data
    z = gzip.compress(data)
    if how == "gzip_cut":
        z = z[: draw(st.integers(0, max(0, len(z) - 1)))]
    return name + ".gz", z


REPORT = ["report", "-q", "-o", "{out}"]


# -- classes ----------------------------------------------------------------------------------

@st.composite
def spans_json(draw):
    fmt = draw(st.sampled_from(["otlp", "otlp_lines", "jaeger", "jaeger_docs", "zipkin", "zipkin_v1", "deep", "raw",
                                "tempo", "xray", "elastic_apm", "skywalking"]))
    if fmt == "skywalking":  # queryTrace answers one a line, damaged
        data, name = b"\n".join(dumps(draw(mutated(a, rounds=2))) for a in skywalking_traces(traces=6)), "sw.json"
    elif fmt == "elastic_apm":  # Elastic APM's documents as a search's hits, or elasticdump's lines, damaged
        docs = draw(mutated(elastic_apm_documents(traces=6), rounds=4))
        if draw(st.booleans()):
            data, name = dumps({"hits": {"total": {"value": len(docs)}, "hits": [{"_source": d} for d in docs]}}), "apm.json"
        else:
            data, name = b"\n".join(dumps({"_index": "apm", "_source": d}) for d in docs), "apm.ndjson"
    elif fmt == "xray":  # batch-get-traces output, its documents (JSON in JSON) damaged as values or as text
        traces = xray_segments(traces=6)
        for t in traces:
            for seg in t["Segments"]:
                if draw(st.integers(0, 3)) == 0:
                    doc = draw(mutated(json.loads(seg["Document"]), rounds=2))
                    seg["Document"] = json.dumps(doc) if draw(st.booleans()) else json.dumps(doc)[: draw(st.integers(0, 80))]
        data, name = dumps(draw(mutated({"Traces": traces, "UnprocessedTraceIds": []}, rounds=2))), "xray.json"
    elif fmt == "zipkin_v1":  # endpoints in annotations, as Zipkin v1 has them
        doc = []
        for sp in zipkin_doc():
            ep = sp.pop("localEndpoint", None) or {}
            t, d = sp.get("timestamp", 0), sp.get("duration", 0)
            sp["annotations"] = [{"timestamp": t, "value": "sr", "endpoint": ep},
                                 {"timestamp": t + d, "value": "ss", "endpoint": ep}]
            sp["binaryAnnotations"] = [{"key": k, "value": str(v), "endpoint": ep} for k, v in sp.pop("tags", {}).items()]
            doc.append(sp)
        data, name = dumps(draw(mutated(doc, rounds=4))), "zipkin-v1.json"
    elif fmt == "jaeger_docs":  # Jaeger's span documents as Elasticsearch gives them back: one a line, or hits
        docs = jaeger_span_documents(jaeger_doc())
        if draw(st.booleans()):
            data = b"\n".join(dumps(draw(mutated(d, rounds=2)) if draw(st.booleans()) else d) for d in docs)
        else:
            data = dumps(draw(mutated({"hits": {"hits": [{"_source": d} for d in docs]}}, rounds=4)))
        name = "jaeger-span.json"
    elif fmt == "tempo":  # Grafana Tempo's forms of OTLP: "batches" (API v1), {"trace": {...}} (API v2)
        doc = otlp_doc()
        groups = doc.pop("resourceSpans")
        doc = {"batches": groups} if draw(st.booleans()) else {"trace": {"resourceSpans": groups}}
        data, name = dumps(draw(mutated(doc, rounds=4))), "trace.json"
    elif fmt == "deep":
        data, name = nested(draw(st.sampled_from([500, 1000, 5000, 100_000]))).encode(), "spans.json"
        data = b'{"resourceSpans": ' + data + b"}"
    elif fmt == "raw":
        data, name = dumps(draw(json_value)), draw(st.sampled_from(["spans.json", "trace.json", "x.jsonl"]))
    elif fmt == "otlp_lines":
        docs = [draw(mutated(otlp_doc())) if draw(st.booleans()) else otlp_doc() for _ in range(3)]
        data, name = b"\n".join(dumps(d) for d in docs), "spans.otlp.jsonl"
    else:
        seed = {"otlp": otlp_doc, "jaeger": jaeger_doc, "zipkin": zipkin_doc}[fmt]()
        if draw(st.booleans()):  # with spans that failed, as each format says it (damaged alike)
            with_failures(seed, fmt)
        data, name = dumps(draw(mutated(seed, rounds=4))), f"{fmt}.json"
    name, data = maybe_gzip(draw, data, name)
    return Case("spans_json", {name: data}, [*REPORT, "{in}/" + name, "--min-category", "2"], f"{fmt} {name}",
                timeout_s=60)


def with_failures(doc, fmt: str) -> None:
    """Every third span of a seed document marked failed, in its format's way (OTLP's status,
    Jaeger's and Zipkin's error tags)."""
    if fmt == "otlp":
        spans = [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]
        for i, sp in enumerate(spans[::3]):
            sp["status"] = {"code": 2 if i % 2 else "STATUS_CODE_ERROR", "message": "boom"}
    elif fmt == "jaeger":
        for tr in doc["data"]:
            for sp in tr["spans"][::3]:
                sp["tags"] = [{"key": "error", "type": "bool", "value": True},
                              {"key": "otel.status_code", "type": "string", "value": "ERROR"}]
    else:
        for sp in doc[::3]:
            sp["tags"]["error"] = "boom"


@st.composite
def span_csv(draw):
    fmt = draw(st.sampled_from(["span_csv", "span_csv", "clouddiag_log", "rpc_ids", "app_insights"]))
    seed, name = {"span_csv": (span_csv_rows(), "spans.csv"), "clouddiag_log": (clouddiag_rows(), "calls.log"),
                  "rpc_ids": (rpc_id_rows(), "MSCallGraph_0.csv"),
                  "app_insights": (app_insights_rows(requests=8), "query_data.csv")}[fmt]
    rows = draw(damaged_rows(seed))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    name, data = maybe_gzip(draw, csv_bytes(rows, newline), name)
    if fmt == "clouddiag_log":
        name = "clouddiag-log/" + name
    return Case("span_csv", {name: data}, [*REPORT, "{in}/" + name, "--min-category", "2"], name)


@st.composite
def features_csv(draw):
    rows = draw(damaged_rows(features_rows()))
    name, data = maybe_gzip(draw, csv_bytes(rows), "features.csv")
    return Case("features", {name: data}, [*REPORT, "{in}/" + name], name)


@st.composite
def counters(draw):
    fmt = draw(st.sampled_from(["csv", "csv", "prometheus", "sadf", "influx", "id_rows", "grafana", "perfmon",
                                "export", "line_protocol", "dstat", "sar_text", "nmon", "vmstat", "iostat",
                                "collectd", "otlp_metrics", "graphite", "cloudwatch", "gcp", "azure", "datadog"]))
    if fmt == "datadog":  # Datadog's query API answers, one a line, damaged or cut
        data = b"\n".join(dumps(draw(mutated(a, rounds=3))) for a in datadog_query(hosts=3, samples=20))
        if draw(st.booleans()):
            data = data[: draw(st.integers(1, len(data)))]
        return Case("counters", {"dd.json": data}, [*REPORT, "{in}/dd.json"], "Datadog query answers")
    if fmt == "azure":  # az monitor metrics list's output, a VM a document one a line, damaged or cut
        data = b"\n".join(dumps(draw(mutated(azure_metrics(f"vm-{k}", samples=20, k=k), rounds=3))) for k in range(3))
        if draw(st.booleans()):
            data = data[: draw(st.integers(1, len(data)))]
        return Case("counters", {"azure.json": data}, [*REPORT, "{in}/azure.json"], "Azure Monitor metrics")
    if fmt == "gcp":  # Cloud Monitoring's timeSeries.list response damaged as a document, or cut
        data = dumps(draw(mutated(gcp_time_series(hosts=3, samples=20), rounds=4)))
        if draw(st.booleans()):
            data = data[: draw(st.integers(1, len(data)))]
        return Case("counters", {"ts.json": data}, [*REPORT, "{in}/ts.json"], "Cloud Monitoring time series")
    if fmt == "cloudwatch":  # get-metric-data's output damaged as a document, or cut
        doc = cloudwatch_metric_data(hosts=3, samples=30, labels=draw(st.sampled_from(["dynamic", "search"])))
        data = dumps(draw(mutated(doc, rounds=4)))
        if draw(st.booleans()):
            data = data[: draw(st.integers(1, len(data)))]
        return Case("counters", {"cw.json": data}, [*REPORT, "{in}/cw.json"], "CloudWatch get-metric-data")
    if fmt == "graphite":  # Graphite's render API: its JSON damaged as a document, or its CSV as rows
        series = graphite_series()
        if draw(st.booleans()):
            name, data = "render.json", dumps(draw(mutated(series, rounds=4)))
        else:
            rows = [[s["target"], time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)), "" if v is None else str(v)]
                    for s in series for v, t in s["datapoints"]]
            name, data = "render.csv", csv_bytes(draw(damaged_rows(rows)))
        return Case("counters", {name: data}, [*REPORT, "{in}/" + name], "graphite " + name)
    if fmt == "otlp_metrics":  # the collector's file exporter's lines, some damaged as documents, one cut
        lines = otlp_metrics_lines(delta=draw(st.booleans()))
        data = b"\n".join(dumps(draw(mutated(json.loads(ln), rounds=2))) if draw(st.integers(0, 3)) == 0 else
                          ln.encode() for ln in lines)
        if draw(st.booleans()):
            data = data[: draw(st.integers(1, len(data)))]
        name, data = maybe_gzip(draw, data, "metrics.json")
        return Case("counters", {name: data}, [*REPORT, "{in}/" + name], "OTLP metrics")
    if fmt == "collectd":  # a collectd DataDir, a few of its files damaged as rows
        files = {}
        for rel, text in collectd_files(hosts=3, samples=20).items():
            if draw(st.integers(0, 4)) == 0:
                text = csv_bytes(draw(damaged_rows([ln.split(",") for ln in text.splitlines()], rounds=2))).decode(
                    "utf-8", "surrogatepass")
            files["csv/" + rel] = text.encode("utf-8", "surrogatepass")
        return Case("counters", files, [*REPORT, "{in}/csv"], "collectd DataDir")
    if fmt == "iostat":  # iostat's real report, its lines damaged as words
        name, data = "web-01.txt", draw(damaged_recording("iostat/iostat-xt.txt.gz", " ", keep_first=True))
    elif fmt == "vmstat":  # vmstat's report, its rows damaged as words
        rows = draw(damaged_rows([ln.split() for ln in vmstat_lines(zone=draw(st.sampled_from(["UTC", "CET", None])))]))
        name, data = "web-01.txt", "\n".join(" ".join(r) for r in rows).encode("utf-8", "surrogatepass")
    elif fmt == "nmon":  # an nmon recording, its lines damaged as rows
        name, data = "web01_261128_1000.nmon", csv_bytes(draw(damaged_rows([ln.split(",") for ln in nmon_lines()])))
    elif fmt == "sar_text":  # sar -A's real text report, its lines damaged as words
        name, data = "web-01.txt", draw(damaged_recording("sar/sa-busy.txt.gz", " ", keep_first=True))
    elif fmt == "dstat":  # a dstat or dool CSV, its preamble, headers and rows damaged as rows
        tool, clock = draw(st.sampled_from(["dstat", "dool"])), draw(st.sampled_from(["time", "epoch", ""]))
        name, data = "web-01.csv", csv_bytes(draw(damaged_rows(dstat_rows(tool=tool, clock=clock))))
    elif fmt == "line_protocol":  # Telegraf's file output, its lines damaged as rows of head, fields, timestamp
        rows = draw(damaged_rows([[line.split(" ", 1)[0], *line.split(" ", 1)[1].rsplit(" ", 1)]
                                  for line in line_protocol_lines()]))
        name, data = "metrics.out", "\n".join(" ".join(r) for r in rows).encode("utf-8", "surrogatepass")
    elif fmt == "export":  # VictoriaMetrics' export: a series a line, some lines damaged as documents
        lines = series_export(prometheus_doc()["data"]["result"])
        data = b"\n".join(dumps(draw(mutated(x, rounds=2))) if draw(st.booleans()) else dumps(x) for x in lines)
        if draw(st.booleans()):
            data = data[: draw(st.integers(1, len(data)))]  # a download stopped mid-line
        name = "export.jsonl"
    elif fmt == "perfmon":  # a Windows fleet's performance counter log
        name, data = "perfmon.csv", csv_bytes(draw(damaged_rows(pdh_rows())))
    elif fmt == "grafana":  # a Grafana panel's CSV: series named by label sets, as columns or as rows
        names = [f'node_load1{{instance="10.0.0.{s}:9100", job="node"}}' for s in range(4)]
        when = [f"2026-01-01 00:{i:02d}:00" for i in range(24)]
        rows = ([["Series", "Time", "Value"]] + [[n, w, f"{1 + (i * 7 + s) % 11 / 10:.2f}"] for s, n in enumerate(names)
                                                 for i, w in enumerate(when)] if draw(st.booleans()) else
                [["Time", *names]] + [[w, *(f"{1 + (i * 7 + s) % 11 / 10:.2f}" for s in range(4))]
                                      for i, w in enumerate(when)])
        name, data = "grafana.csv", csv_bytes(draw(damaged_rows(rows)))
    elif fmt == "id_rows":  # no header, a row per sample: a server's id, a time, numbers (Alibaba's machine_usage)
        rows = [[f"m_{s}", str(386640 + 10 * i), f"{40 + (i * 7 + s) % 11}", "", "", f"{30 + s:.2f}"]
                for i in range(24) for s in range(4)]
        name, data = "machine_usage.csv", csv_bytes(draw(damaged_rows(rows)))
    elif fmt == "influx":  # a Flux result (InfluxDB's CSV), its annotations and tables damaged as rows
        rows = draw(damaged_rows(flux_rows(annotated=draw(st.booleans()))))
        name, data = "telegraf.csv", csv_bytes(rows)
    elif fmt == "csv":
        kinds = draw(st.booleans())
        rows = draw(damaged_rows(counters_rows(servers=6 if kinds else 4, kinds=kinds)))
        name, data = "counters.csv", csv_bytes(rows)
    elif fmt == "sadf":  # real sadf -d exports (tests/data/sadf), damaged as ;-separated rows
        files = {f"web-0{k + 1}.csv": draw(damaged_recording(f"sadf/web-0{k + 1}.csv.gz", ";"))
                 for k in range(draw(st.integers(1, 3)))}
        return Case("counters", files, [*REPORT, *("{in}/" + n for n in files)], "sadf " + ", ".join(files))
    else:
        name, data = "counters.prom.json", dumps(draw(mutated(prometheus_doc(), rounds=4)))
    name, data = maybe_gzip(draw, data, name)
    return Case("counters", {name: data}, [*REPORT, "{in}/" + name], name)


RULE_KEYS = ["counter", "view", "statistic", "op", "value", "quantile", "percent_from_median", "zscore"]


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(repr(v), repr(v))
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(str(v))


@st.composite
def rules(draw):
    good = {"counter": "cpu", "view": "detail", "statistic": "any", "op": ">", "value": 15}
    fmt = draw(st.sampled_from(["toml", "toml", "xml", "raw"]))
    if fmt == "toml":
        lines = []
        for _ in range(draw(st.integers(0, 3))):
            rule = dict(good)
            for k in draw(st.lists(st.sampled_from(RULE_KEYS), max_size=3)):
                rule[k] = draw(scalar | st.lists(scalar, max_size=2) | st.sampled_from(
                    ["server", "time", "quantile", "median", "GreaterThan", "<=", "??", "*"]))
            lines.append("[[rule]]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in rule.items()]
        text, name = "\n".join(lines) + "\n", "rules.toml"
    elif fmt == "xml":
        parts = []
        for _ in range(draw(st.integers(0, 3))):
            val = draw(text_value | st.sampled_from(EXTREME_INTS).map(str))
            applies = draw(st.sampled_from(["DetailView", "ServerView", "TimeView", "", "Nowhere"]))
            stat = draw(st.sampled_from(["Any", "Average", "Median", "Quantile", "", "Bogus"]))
            op = draw(st.sampled_from(["GreaterThan", "LessThan", "", "Sideways"]))
            parts.append(f'<PerformanceCounter Name="{draw(st.sampled_from(["cpu", "gc", "*", ""]))}">'
                         f'<Rule AppliesTo="{applies}"><Statistic>{stat}</Statistic>'
                         f"<ExpectedValue>{val}</ExpectedValue><ComparisonOperator>{op}</ComparisonOperator>"
                         "</Rule></PerformanceCounter>")
        text = "<ThresholdConfig>" + "".join(parts) + "</ThresholdConfig>"
        text = text[: draw(st.integers(0, len(text)))] if draw(st.integers(0, 4)) == 0 else text
        name = "rules.xml"
    else:
        text, name = draw(st.text(max_size=200)), draw(st.sampled_from(["rules.toml", "rules.xml"]))
    files = {name: text.encode("utf-8", "surrogatepass"), "counters.csv": csv_bytes(counters_rows())}
    return Case("rules", files, [*REPORT, "{in}/counters.csv", "--rules", "{in}/" + name], f"{fmt} rules")


@lru_cache(maxsize=None)
def recording_lines(name: str, n: int = 120) -> tuple[str, ...]:
    """The first lines of a real recording in tests/data (pidstat, top, sadf)."""
    text = gzip.decompress((ROOT / "tests" / "data" / name).read_bytes()).decode()
    return tuple(text.split("\n")[:n])


@st.composite
def damaged_recording(draw, name: str, sep: str, keep_first: bool = False) -> bytes:
    """A real recording's first lines, its rows (split at ``sep``) damaged as CSV rows are (the
    first line kept whole where ``keep_first``), the text cut now and then."""
    rows = [ln.split(sep) for ln in recording_lines(name)]
    rows = [rows[0]] + draw(damaged_rows(rows[1:] or [[]])) if keep_first else draw(damaged_rows(rows))
    text = "\n".join(sep.join(r) for r in rows)
    if draw(st.integers(0, 3)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text.encode("utf-8", "surrogatepass")


@st.composite
def pidstat_report(draw):
    """A real pidstat report (one line per task, or blocks) or top's batch output, its rows
    damaged as words."""
    name = draw(st.sampled_from(["pidstat/pidstat-h.txt.gz", "pidstat/pidstat-blocks.txt.gz",
                                 "pidstat/pidstat-procs.txt.gz", "top/top-H.txt.gz"]))
    name, data = maybe_gzip(draw, draw(damaged_recording(name, " ", keep_first=True)), "pidstat.txt")
    return Case("thread_csv", {name: data}, [*REPORT, "{in}/" + name, "--replicates", "10"], f"pidstat {name}")


@st.composite
def thread_csv(draw):
    fmt = draw(st.sampled_from(["long", "wide", "pidstat", "perfmon"]))
    if fmt == "pidstat":
        return draw(pidstat_report())
    if fmt == "perfmon":  # a Windows performance counter log of a process's threads, and its machine's counters
        rows = draw(damaged_rows(pdh_rows(threads=True, machine=draw(st.booleans()))))
        name, data = maybe_gzip(draw, csv_bytes(rows), "threads.csv")
        return Case("thread_csv", {name: data}, [*REPORT, "{in}/" + name, "--replicates", "10"], f"{fmt} {name}")
    rows = thread_rows()
    if fmt == "wide":
        by_time: dict[str, dict[str, str]] = {}
        for t, th, _, cpu, io_, wait in rows[1:]:
            by_time.setdefault(t, {})[f"{th}:cpu"] = cpu
            by_time[t][f"{th}:wait"] = wait
        cols = sorted({c for v in by_time.values() for c in v})
        rows = [["time", *cols]] + [[t, *(v.get(c, "") for c in cols)] for t, v in by_time.items()]
    rows = draw(damaged_rows(rows))
    name, data = maybe_gzip(draw, csv_bytes(rows), "threads.csv")
    return Case("thread_csv", {name: data}, [*REPORT, "{in}/" + name, "--replicates", "10"], f"{fmt} {name}")


NUMERIC_OPTIONS = ["--eps", "--min-samples", "--minor-fraction", "--k", "--replicates", "--thread-metrics",
                   "--server-x", "--time-x", "--min-correlation", "--alpha", "--beta", "--min-category", "--top"]
OPTION_VALUES = ["nan", "NaN", "inf", "-inf", "-1", "0", "1e-9", "1e308", "1e999", "1000000000",
                 "18446744073709551616", "x", "", "1e3", "0.5", "3", "-0", "0x10", "1_000", " 2"]


SHORT_OR_BAD = {"nan", "NaN", "inf", "-inf", "-1", "0", "1e-9", "1e999", "x", "", "0.5", "-0", "0x10", " 2", "3",
                "18446744073709551616"}


@st.composite
def options(draw):
    kind = draw(st.sampled_from(["counters", "spans", "threads", "sample", "thresholds", "columns", "record"]))
    files = {"counters.csv": csv_bytes(counters_rows())} if kind == "counters" else \
        {"spans.csv": csv_bytes(span_csv_rows())} if kind == "spans" else \
        {"threads.csv": csv_bytes(thread_rows())} if kind == "threads" else {}
    target = "{in}/" + next(iter(files)) if files else "{in}"
    args = []
    for opt in draw(st.lists(st.sampled_from(NUMERIC_OPTIONS), min_size=1, max_size=3)):
        args += [opt, draw(st.sampled_from(OPTION_VALUES) | st.floats().map(repr) | st.integers().map(str))]
    if kind == "sample":
        argv = ["sample", "--out", "{work}/s", draw(st.sampled_from(["--seed", "--rate", "--requests", "--servers",
                                                                   "--points", "--cpus", "--slowdown"])),
                draw(st.sampled_from(OPTION_VALUES)), "--system", "fleet", "--servers", "3", "--points", "50"]
        return Case("options", files, argv, " ".join(argv), may_write=["s"])
    if kind == "record":  # sampling this very process for a moment
        opt = draw(st.sampled_from(["--interval", "--duration", "--pid"]))
        vals = {"--interval": "0.05", "--duration": "0.3", "--pid": str(os.getpid())}
        # a valid long --duration is a long recording, not a hang: durations drawn stay short
        vals[opt] = draw(st.sampled_from([v for v in OPTION_VALUES if opt != "--duration" or v in SHORT_OR_BAD]))
        argv = ["record", "threads", "-o", "{work}/t.csv"] + [x for k, v in vals.items() for x in (k, v)]
        return Case("options", {}, argv, " ".join(argv), may_write=["t.csv"], timeout_s=30)
    if kind == "thresholds":
        args = ["--thresholds", draw(st.sampled_from(["", ",", "nan", "1,2,x", "-5", "1e999", "200,250,300"]))]
        target = "{in}"
    if kind == "columns":
        files = {"spans.csv": csv_bytes(span_csv_rows())}
        target = "{in}/spans.csv"
        args = ["--columns", draw(st.sampled_from(["", "=", "trace=", "trace=nope", "start=end,end=start", "x=y",
                                                   "trace=trace,trace=span"]))]
    return Case("options", files, [*REPORT, target, *args], " ".join(args))


PREFIXES = [b"", b'{"resourceSpans"', b"time,server,", b"\x1f\x8b\x08", b"/* CTF 1.8", b"\xef\xbb\xbf", b"\xc1\x1f\xfc\xc1",
            b"\x57\x1d\xd1\x75", b"trace,span,parent,service,name,start,end\r", b'{"data":[{"traceID"', b'[{"traceId"',
            b"<ThresholdConfig", b'{"status":"success","data":{"result":']


@st.composite
def any_bytes(draw):
    prefix = draw(st.sampled_from(PREFIXES))
    data = prefix + draw(st.binary(max_size=2000))
    name = draw(st.sampled_from(["x.csv", "x.json", "x.jsonl", "x.gz", "x.toml", "x", "metadata", "spans.otlp.json"]))
    shape = draw(st.sampled_from(["file", "folder", "trace_folder"]))
    if shape == "file":
        return Case("bytes", {name: data}, [*REPORT, "{in}/" + name], f"{name} {prefix!r}")
    if shape == "folder":
        return Case("bytes", {"d/" + name: data, "d/y.bin": draw(st.binary(max_size=200))}, [*REPORT, "{in}/d"],
                    f"folder {name} {prefix!r}")
    return Case("bytes", {"t/metadata": data, "t/chan_0": draw(st.binary(max_size=4096))}, [*REPORT, "{in}/t"],
                f"trace folder with metadata {prefix[:10]!r}")


# -- CTF traces -------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _trace_parts(name: str) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(folder of a trace relative to the copy, its metadata text, its stream files) per trace."""
    from perftriage.analysis.ctf.metadata import read_metadata_text

    out = []
    root = _ctf_source(name)
    for meta in sorted(root.rglob("metadata")):
        folder = meta.parent
        streams = tuple(sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != "metadata"))
        out.append((str(folder.relative_to(root)), read_metadata_text(meta), streams))
    return tuple(out)


FIELD_EXTREMES = [0, 1, 8, 64, 2**31, 2**32 - 1, 2**63, 2**64 - 1]


@st.composite
def ctf_mutation(draw):
    from perftriage.analysis.ctf.metadata import packet_fields

    name = draw(st.sampled_from(CTF_TRACES))
    src = _ctf_source(name)
    folder, text, streams = draw(st.sampled_from(_trace_parts(name)))
    rel = lambda f: (folder + "/" + f) if folder != "." else f  # noqa: E731
    files: dict[str, bytes] = {}
    remove: list[str] = []
    what = draw(st.sampled_from(["flip", "flip", "truncate", "header", "header", "metadata", "no_index", "ctf2",
                                 "ctf2"]))
    stream = draw(st.sampled_from(streams))
    data = bytearray((src / rel(stream)).read_bytes())
    if what == "flip" and data:
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        files[rel(stream)] = bytes(data)
    elif what == "truncate":
        files[rel(stream)] = bytes(data[: draw(st.integers(0, len(data)))])
    elif what == "header" and data:
        order, found = packet_fields(text)
        field = draw(st.sampled_from(sorted(found)))
        off, width = found[field]
        value = draw(st.sampled_from(FIELD_EXTREMES)) % (1 << (8 * width))
        # the n-th packet (walked by packet_size), or every packet
        psize_off, psize_w = found.get("packet_size", (None, None))
        positions, pos = [], 0
        while psize_off is not None and pos + psize_off + psize_w <= len(data) and len(positions) < 10_000:
            positions.append(pos)
            step = int.from_bytes(data[pos + psize_off: pos + psize_off + psize_w], "little" if order == "<" else "big")
            if step < 8 or step % 8:
                break
            pos += step // 8
        positions = positions or [0]
        chosen = positions if draw(st.booleans()) else [draw(st.sampled_from(positions))]
        fmt = order + {1: "B", 2: "H", 4: "I", 8: "Q"}[width]
        for p in chosen:
            if p + off + width <= len(data):
                struct.pack_into(fmt, data, p + off, value)
        files[rel(stream)] = bytes(data)
        what = f"header {field}={value} in {len(chosen)} packet(s)"
    elif what == "metadata":
        meta = bytearray((src / rel("metadata")).read_bytes())
        how = draw(st.sampled_from(["cut", "flip", "text"]))
        if how == "cut":
            meta = meta[: draw(st.integers(0, len(meta)))]
        elif how == "flip" and meta:
            for _ in range(draw(st.integers(1, 4))):
                meta[draw(st.integers(0, len(meta) - 1))] ^= 1 << draw(st.integers(0, 7))
        else:
            meta = bytearray(text.replace(draw(st.sampled_from(["event", "uint32_t", "clock", "stream_id", "="])),
                                          draw(st.sampled_from(["", "x", "event {", "}}"])), 1).encode())
        files[rel("metadata")] = bytes(meta)
        what = f"metadata {how}"
    elif what == "ctf2":
        files[rel("metadata")], what = draw(ctf2_metadata_case(text))
        if draw(st.booleans()) and data:  # and a stream cut short
            files[rel(stream)] = bytes(data[: draw(st.integers(0, len(data)))])
            what += ", a stream cut short"
    if draw(st.booleans()):
        remove.append(rel("index"))
    # the thread analysis on, with 100 bootstrap replicates a scale rather than 1000: a damaged
    # trace reaches it all the same, in a tenth of the time (11 s a case on tracevizlab-cat-kern-ust)
    argv = draw(st.sampled_from([[*REPORT, "{in}/trace", "--replicates", "100"],
                                 [*REPORT, "{in}/trace", "--no-thread-metrics"], ["info", "{in}/trace"]]))
    return Case("ctf", {"trace/" + k: v for k, v in files.items()}, argv, f"{name}/{rel(stream)}: {what}",
                copy_from={"trace": src}, timeout_s=120, remove=["trace/" + r for r in remove])


JSON_ODDITIES = [None, -1, 0, 3, 65, 2**70, 1.5, "x", "", [], {}, True, [[0, 1]], {"path": ["id"]}]


@st.composite
def ctf2_metadata_case(draw, tsdl: str):
    """(metadata bytes, what was done): the trace's metadata as CTF 2 (fuzzing/ctf2_writer.py),
    whole or damaged: cut, bits flipped, or one property of one fragment removed or given an odd
    value; as text or in packets."""
    from .ctf2_writer import ctf2_metadata, packetized

    form = draw(st.sampled_from(["modules", "tools"]))
    text = ctf2_metadata(tsdl, form)
    how = draw(st.sampled_from(["whole", "cut", "flip", "edit", "edit", "edit"]))
    if how == "edit":
        frags = [json.loads(p) for p in text.split("\x1e")[1:]]
        places = []  # (container, key) of every property and element, fragment by fragment

        def walk(node):
            items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            for k, v in items:
                places.append((node, k))
                walk(v)

        walk(frags)
        node, key = places[draw(st.integers(0, len(places) - 1))]
        if isinstance(node, dict) and draw(st.booleans()):
            del node[key]
            how = f"edit: {key!r} removed"
        else:
            node[key] = draw(st.sampled_from(JSON_ODDITIES))
            how = f"edit: {key!r} = {node[key]!r}"
        text = "".join("\x1e" + json.dumps(f) + "\n" for f in frags)
    data = text.encode()
    if how == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "flip" and data:
        b = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            b[draw(st.integers(0, len(b) - 1))] ^= 1 << draw(st.integers(0, 7))
        data = bytes(b)
    packets = draw(st.booleans())
    return (packetized(data.decode("utf-8", "replace")) if packets else data), \
        f"CTF 2 metadata ({form}, {'packets' if packets else 'text'}) {how}"


#: every class, by name
CLASSES = {
    "ctf": ctf_mutation(),
    "spans_json": spans_json(),
    "span_csv": span_csv(),
    "counters": counters(),
    "rules": rules(),
    "thread_csv": thread_csv(),
    "features": features_csv(),
    "options": options(),
    "bytes": any_bytes(),
}
