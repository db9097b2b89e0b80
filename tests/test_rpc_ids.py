"""Call-graph tables of rpcids (Alibaba's microservice traces, v2021 and v2022 headers): calls
recorded by both sides become a client and a server span, a lone record the callee's span, and
every call hangs under the nearest recorded call up its rpcid."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from perftriage.analysis.errors import InputError
from perftriage.analysis.spans import read_spans, sniff_format
from perftriage.analysis.spans.table import MISSING_PARENT, ROOT

from conftest import ROOT as REPO

V2021 = ",traceid,timestamp,rpcid,um,rpctype,dm,interface,rt\n"
V2022 = "timestamp,traceid,service,rpc_id,um,uminstanceid,rpctype,interface,dm,dminstanceid,rt\n"  # as documented


def _v2021(path, rows):
    path.write_text(V2021 + "".join(f"{i},{','.join(map(str, r))}\n" for i, r in enumerate(rows)))
    return path


def _spans(table):
    """trace -> {(method, replica): (parent's method or None, duration ms)}"""
    out: dict = {}
    for i in range(len(table)):
        p = int(table.parent[i])
        up = table.methods[table.method[p]] if p >= 0 else {ROOT: None, MISSING_PARENT: "missing"}[p]
        key = (table.methods[table.method[i]], table.replicas[table.replica[i]])
        out.setdefault(table.traces[table.trace[i]], {})[key] = (up, (table.end[i] - table.start[i]) / 1e6)
    return out


def test_calls_become_client_and_server_spans_under_the_nearest_recorded_call(tmp_path):
    # traceid, timestamp (ms), rpcid, um, rpctype, dm, interface, rt
    rows = [("t1", 1000, "0", "USER", "http", "A", "home", -20),  # the entry: only its callee logged it
            ("t1", 1001, "0.1", "A", "rpc", "B", "getB", 13),  # both sides, the caller's first
            ("t1", 1002, "0.1", "A", "rpc", "B", "getB", -11),
            ("t1", 1003, "0.1.1", "B", "db", "db_1", "", 3),  # a database: only the caller logs it
            ("t1", 1004, "0.2.1", "(?)", "rpc", "D", "getD", -2),  # its caller's call 0.2 was lost
            ("t1", 1005, "0.3", "A", "mc", "", "", 0),  # a cache, no name, no time
            ("t2", 2000, "0.1.1", "B", "rpc", "C", "getC", -4)]  # a request whose first calls were lost
    t = read_spans([_v2021(tmp_path / "MSCallGraph_0.csv", rows)])
    got = _spans(t)
    assert got["t1"] == {("A:home", "A"): (None, 20.0),
                         ("A:getB", "A"): ("A:home", 13.0),  # the caller's side, in the caller
                         ("B:getB", "B"): ("A:getB", 11.0),  # the callee's side, under it
                         ("db_1:db", "db_1"): ("B:getB", 3.0),
                         ("D:getD", "D"): ("A:home", 2.0),  # under 0, the nearest recorded call up its id
                         ("?:mc", "?"): ("A:home", 0.0)}
    # no call up its rpcid: the request's one orphan, taken as its root as in any span format
    assert got["t2"] == {("C:getC", "C"): (None, 4.0)} and t.problems.rootless == 1
    assert any("1 call whose caller's call was not recorded" in n for n in t.notes)
    assert t.start.min() == 1000 * 10**6


def test_v2022_names_the_containers_and_zero_times_take_the_free_side(tmp_path):
    p = tmp_path / "CallGraph_0.csv"
    p.write_text(V2022 + "5,t1,S_1,0.1,A,a-1,rpc,getB,B,b-2,7\n"
                         "6,t1,S_1,0.1,A,a-1,rpc,getB,B,b-2,0\n"  # the callee's own time rounded to 0 ms
                         "7,t1,S_1,0.1.1,B,b-2,mq,,UNKNOWN,,4\n")
    assert sniff_format(p, p.read_bytes()) == "rpc-ids"
    got = _spans(read_spans([p]))["t1"]
    assert got == {("A:getB", "a-1"): (None, 7.0), ("B:getB", "b-2"): ("A:getB", 0.0),
                   ("?:mq", "?"): ("B:getB", 4.0)}


def test_rows_that_cannot_be_read_are_counted_and_an_empty_table_is_one_error(tmp_path):
    rows = [("t1", 1000, "0", "USER", "http", "A", "home", -20), ("t1", 1001, "0.1", "A", "rpc", "B", "x", "n/a"),
            ("", 1002, "0.2", "A", "rpc", "B", "x", 3), ("t1", 1003, "0.x", "A", "rpc", "B", "x", 3),
            ("t1", "", "0.4", "A", "rpc", "B", "x", 3)]
    t = read_spans([_v2021(tmp_path / "a.csv", rows)])
    assert len(t) == 1 and t.problems.unparsable == 4
    assert any("4 rows without a trace id, an rpcid of dotted numbers, a timestamp or an rt" in d
               for d in t.problems.details)
    stray = tmp_path / "quote.csv"  # an unclosed quote (which polars refuses): the csv module's rows
    stray.write_text(V2021 + '0,t,1,0,U,http,A,x,-5\n1,t,2,0.1,A,rpc\n2,"t,3,0.2,A,rpc,B,y,3\n')
    t = read_spans([stray])
    assert len(t) == 1 and t.problems.unparsable == 2
    assert "quote.csv: 2 rows with fewer fields than the header" in t.problems.details
    with pytest.raises(InputError, match="b.csv: no data rows under the header"):
        read_spans([_v2021(tmp_path / "b.csv", [])])
    with pytest.raises(InputError, match="c.csv: no row with a trace id"):
        read_spans([_v2021(tmp_path / "c.csv", rows[1:])])


def _slow_table(path, n=1200, slow_from=600, seed=3):
    """An entry A calling B (which calls a database) and C (three containers, calling a cache);
    from request ``slow_from`` on, C's own work is six times as long on container c-1."""
    rnd = random.Random(seed)
    lines = [V2022]
    for k in range(n):
        tid, t0, c = f"0b{k:014x}", 1000 + 500 * k, f"c-{k % 3}"
        b_own, c_own = rnd.uniform(2, 4), rnd.uniform(3, 5) * (6 if k >= slow_from and c == "c-1" else 1)
        db, mc = rnd.uniform(1, 3), rnd.uniform(0.5, 1)
        b_cli, c_cli = b_own + db + rnd.uniform(0.5, 1.5), c_own + mc + rnd.uniform(0.5, 1.5)
        rec = [(t0, "0", "rpc", "USER", "", "home", "A", "a-0", -(1.5 + b_cli + c_cli)),
               (t0 + 1, "0.1", "rpc", "A", "a-0", "getB", "B", "b-0", b_cli),
               (t0 + 1, "0.1", "rpc", "A", "a-0", "getB", "B", "b-0", -(b_own + db)),
               (t0 + 2, "0.1.1", "db", "B", "b-0", "", "db_1", "", db),
               (t0 + 2 + round(b_cli), "0.2", "rpc", "A", "a-0", "getC", "C", c, c_cli),
               (t0 + 2 + round(b_cli), "0.2", "rpc", "A", "a-0", "getC", "C", c, -(c_own + mc)),
               (t0 + 3 + round(b_cli), "0.2.1", "mc", "C", c, "", "mc_1", "", mc)]
        rnd.shuffle(rec)  # the tables are not in call order
        lines += [f"{ts},{tid},S_1,{rpc},{um},{ui},{typ},{itf},{dm},{di},{round(rt)}\n"
                  for ts, rpc, typ, um, ui, itf, dm, di, rt in rec]
    path.write_text("".join(lines))
    return path


def test_the_report_names_the_slow_container_of_an_alibaba_table(tmp_path):
    import json

    p = _slow_table(tmp_path / "CallGraph_0.csv")
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", p, "--format", "json"], capture_output=True,
                       text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    first = doc["findings"][0]
    assert first["analysis"] == "calltrees" and "getC" in first["title"] and "c-1" in first["subject"], first
    # C's server span calls the cache with no client span between: its own work, not the link to the cache
    assert not any("mc_1" in f["title"] for f in doc["findings"]), [f["title"] for f in doc["findings"]]
    assert any(f["title"].startswith("C:getC took ") and " as long on c-1 from +0:0" in f["title"]
               for f in doc["findings"]), [f["title"] for f in doc["findings"]]
    assert any("call-graph table of rpcids" in n for n in doc["notes"])
    # the table's times have no date: the onset is told as the time since the start, not in 1970
    pair = next(f for f in doc["findings"] if f["title"] == "C:getC is slow on c-1")
    assert any(e.startswith("it started at +0:05:") for e in pair["evidence"]), pair["evidence"]
    assert "1970" not in r.stdout
    info = subprocess.run([sys.executable, "-m", "perftriage", "info", p], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert "  time  +0:00:01 .. +0:10:00 (no date: the time since the start)" in info.stdout, info.stdout
