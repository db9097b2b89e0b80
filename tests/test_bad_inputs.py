"""Bad input refused in one line (issue 18, first part): numeric options at the parser, pipes and
devices, bytes no sniffer understands, internal errors, a reader that goes away."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

FLEET = str(ROOT / "sample_traces" / "fleet")


def cli(*args, timeout=60, **kw):
    return subprocess.run([sys.executable, "-m", "perftriage", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, **kw)


@pytest.mark.parametrize("args", [
    ["report", FLEET, "--eps", "nan"], ["report", FLEET, "--thread-metrics", "1e-9"],
    ["report", FLEET, "--thread-metrics", "inf"], ["report", FLEET, "--replicates", "1000000000"],
    ["report", FLEET, "--server-x", "nan"], ["report", FLEET, "--minor-fraction", "-1"],
    ["report", FLEET, "--beta", "2"], ["report", FLEET, "--top", "0"], ["report", FLEET, "--k", "x"],
    ["sample", "--seed", "-1"], ["sample", "--db-host", "../escape"], ["sample", "--rate", "inf"],
    ["record", "threads", "--pid", "1", "--interval", "nan", "-o", "x.csv"],
])
def test_numbers_and_names_are_checked_at_the_parser(args, tmp_path):
    r = subprocess.run([sys.executable, "-m", "perftriage", *args], capture_output=True, text=True, cwd=tmp_path,
                       timeout=60)
    assert r.returncode == 2, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "error: argument --" in last and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_bad_rate_inside_a_value_is_a_usage_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "perftriage", "sample", "--causes", "slow_disk=nan", "--out",
                        str(tmp_path / "s")], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "bad rate 'nan' for slow_disk" in r.stderr
    assert not (tmp_path / "s").exists()


def test_pipes_are_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "spans.csv"
    os.mkfifo(fifo)
    r = cli("report", fifo, timeout=30)
    assert r.returncode == 3 and r.stderr.strip() == f"perftriage: {fifo}: not a regular file (a pipe, socket or " \
                                                      "device): perftriage reads files"
    trace = tmp_path / "trace"
    trace.mkdir()
    os.mkfifo(trace / "metadata")
    r = cli("report", trace, timeout=30)
    assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("content", [b"a,b\rc\nd,e\n", bytes(range(256)) * 20, b"\x1f\x8b\x08garbage"])
def test_bytes_no_reader_understands(tmp_path, content):
    p = tmp_path / "x.csv"
    p.write_bytes(content)
    r = cli("report", p)
    assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1 and str(p) in r.stderr
    assert "Traceback" not in r.stderr
    r = cli("report", tmp_path)  # a folder of such files
    assert r.returncode == 3 and "Traceback" not in r.stderr


def test_an_internal_error_is_one_line_and_the_traceback_is_behind_debug(monkeypatch, capsys):
    import importlib

    m = importlib.import_module("perftriage.cli.main")

    class Boom:
        @staticmethod
        def run(args):
            raise RuntimeError("kaboom")

    monkeypatch.setitem(m.SUBCOMMANDS, "info", Boom)
    assert m.main(["info", FLEET]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("perftriage: internal error: RuntimeError: kaboom")
    with pytest.raises(RuntimeError):
        m.main(["info", FLEET, "--debug"])


def test_a_reader_that_goes_away_ends_quietly():
    r = subprocess.run(f"{sys.executable} -m perftriage report {FLEET} | head -c 1 >/dev/null; "
                       "exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0 and r.stderr == ""


WRONG_SHAPES = {
    "otlp-number": '{"resourceSpans": 5}',
    "otlp-item-number": '{"resourceSpans": [3]}',
    "otlp-null-spans": '{"resourceSpans": [{"scopeSpans": [{"spans": null}]}]}',
    "jaeger-string-spans": '{"data": [{"traceID": "1", "spans": "abc"}]}',
    "prometheus-string-result": '{"status":"success","data":{"resultType":"matrix","result":"abc"}}',
    "deep": '{"resourceSpans": [' + "[" * 100_000 + "]" * 100_000 + "]}",
}


@pytest.mark.parametrize("name", sorted(WRONG_SHAPES))
def test_json_of_the_wrong_shape_is_one_line(tmp_path, name):
    p = tmp_path / f"{name}.json"
    p.write_text(WRONG_SHAPES[name])
    r = cli("report", p)
    assert r.returncode == 3, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"perftriage: {p}: ") and "Traceback" not in r.stderr


def test_rules_and_thread_csv_with_wrong_values_are_one_line(tmp_path):
    rules = tmp_path / "r.toml"
    rules.write_text('[[rule]]\ncounter = 5\nview = "detail"\nstatistic = "any"\nop = ">"\nvalue = "x"\n')
    r = cli("report", FLEET, "--rules", rules)
    assert r.returncode == 3 and r.stderr.strip().startswith(f"perftriage: {rules}: ")
    wide = tmp_path / "w.csv"
    wide.write_text("time,t1:cpu,t2:cpu,t3:cpu\n1,2,3,4\n2,x,4,5\n3,4,5,6\n")
    r = cli("report", wide)
    assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1 and str(wide) in r.stderr


def test_a_long_chain_of_calls_is_linear(tmp_path):
    from perftriage.analysis.calltrees.trees import build_call_trees
    from perftriage.analysis.spans import read_spans

    n = 20_000
    lines = ["trace_id,span_id,parent_id,service,name,start_ns,end_ns"]
    t0 = 1_700_000_000_000_000_000
    lines += [f"t1,{i + 1},{i if i else ''},svc{i % 3},op{i % 7},{t0 + i},{t0 + 2 * n - i}" for i in range(n)]
    p = tmp_path / "chain.csv"
    p.write_text("\n".join(lines) + "\n")
    trees = build_call_trees(read_spans([p]))
    (cat,) = trees.categories
    assert cat.width == n and cat.shape.count("(") == n - 1 and len(cat.shape) < 20 * n


def test_a_few_samples_over_a_long_span_are_refused_before_allocating(tmp_path):
    lines = ["time,server,cpu"] + [f"{1_700_000_000 + i * 0.001},s{i % 3},1" for i in range(6)] + \
        [f"{1_800_000_000 + i},s{i % 3},1" for i in range(6)]
    p = tmp_path / "c.csv"
    p.write_text("\n".join(lines) + "\n")
    r = cli("report", p, timeout=60)
    assert r.returncode == 3 and "the times or the sampling interval are wrong" in r.stderr


def test_a_lone_surrogate_in_a_name_is_written_escaped(tmp_path):
    import json

    spans = [{"traceId": f"{i:032x}", "spanId": f"{i + 1:016x}", "name": "x\ud800y",
              "startTimeUnixNano": str(1_700_000_000_000_000_000 + i * 10**6),
              "endTimeUnixNano": str(1_700_000_000_000_000_000 + i * 10**6 + 5000)} for i in range(30)]
    doc = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "web"}}]},
                              "scopeSpans": [{"spans": spans}]}]}
    p = tmp_path / "s.json"
    p.write_text(json.dumps(doc))
    out = tmp_path / "r.md"
    r = cli("report", p, "-q", "-o", out)
    assert r.returncode == 0 and "x\\ud800y" in out.read_text()
    r = cli("report", p, "-q", "--format", "json", env={**os.environ, "PYTHONIOENCODING": "ascii:strict", "LC_ALL": "C"})
    assert r.returncode == 0 and json.loads(r.stdout)["findings"]


def test_record_stops_on_a_zombie_and_keeps_samples_on_sigterm(tmp_path):
    import signal
    import time

    # a zombie: a child that exited and was never waited for
    child = subprocess.Popen(["sleep", "0.2"])
    time.sleep(0.6)
    out = tmp_path / "z.csv"
    r = cli("record", "threads", "--pid", child.pid, "--interval", "0.05", "-o", out, timeout=30)
    child.wait()
    assert r.returncode == 0 and "process exited" in r.stdout and out.exists()
    # SIGTERM (or SIGHUP, the SSH session closing) keeps what was sampled, no partial file left
    target = subprocess.Popen(["sleep", "30"])
    out = tmp_path / "t.csv"
    rec = subprocess.Popen([sys.executable, "-m", "perftriage", "record", "threads", "--pid", str(target.pid),
                            "--interval", "0.05", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, cwd=ROOT)
    time.sleep(2.5)
    rec.send_signal(signal.SIGTERM)
    so, se = rec.communicate(timeout=30)
    target.kill()
    target.wait()
    assert rec.returncode == 0, se
    assert "stopped by SIGTERM" in so and len(out.read_text().splitlines()) > 2
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_record_never_writes_into_a_trace_folder(tmp_path):
    import shutil

    from conftest import real_trace

    trace = tmp_path / "trace"
    shutil.copytree(real_trace("tracevizlab-php-ust"), trace)
    meta_dir = next(p.parent for p in trace.rglob("metadata"))
    r = cli("record", "threads", "--pid", os.getpid(), "--duration", "0.2", "-o", meta_dir / "x.csv", timeout=30)
    assert r.returncode == 3 and "trace folders are never written to" in r.stderr
    assert not (meta_dir / "x.csv").exists()


def test_a_seven_column_span_csv_ending_in_end_is_a_span_csv(tmp_path):
    from perftriage.analysis.spans import read_spans

    p = tmp_path / "s.csv"
    p.write_text("trace,span,parent,service,name,start,end\n"
                 "t1,1,,web,home,1700000000000000000,1700000000000100000\n"
                 "t1,2,1,db,q,1700000000000010000,1700000000000050000\n")
    t = read_spans([p])
    assert t.sources == [f"{p} (span-csv)"] and len(t) == 2 and t.problems.total() == 0


@pytest.mark.parametrize("bad", ["2262-04-12T00:00:00Z", "0001-01-01T00:00:00Z", "18446744073709551616", "1e308",
                                 "inf", "nan", "9300000000"])
def test_a_time_beyond_64_bit_nanoseconds_makes_one_span_unreadable_not_the_file(tmp_path, bad):
    ok = "1767225600000000000"
    p = tmp_path / "spans.csv"
    rows = [f"t{i},s1,,front,GET,{ok},1767225600005000000\nt{i},s2,s1,cart,Get,{ok},1767225600004000000"
            for i in range(3)]
    rows[1] = rows[1].replace(f"s2,s1,cart,Get,{ok}", f"s2,s1,cart,Get,{bad}")
    p.write_text("trace,span,parent,service,name,start,end\n" + "\n".join(rows) + "\n")
    r = cli("report", p, "--min-category", "2")
    assert r.returncode == 0, r.stderr
    assert "- 1 unreadable record\n" in r.stdout and "spans.csv:5: unreadable times or ids" in r.stdout


@pytest.mark.parametrize("fmt", ["otlp", "jaeger", "zipkin"])
def test_a_json_span_time_beyond_64_bits_is_one_unreadable_span(tmp_path, fmt):
    import json

    from fuzzing.strategies import jaeger_doc, otlp_doc, zipkin_doc

    doc = {"otlp": otlp_doc, "jaeger": jaeger_doc, "zipkin": zipkin_doc}[fmt]()
    node, key = {"otlp": lambda: (doc["resourceSpans"][1]["scopeSpans"][0]["spans"][0], "startTimeUnixNano"),
                 "jaeger": lambda: (doc["data"][0]["spans"][1], "startTime"),
                 "zipkin": lambda: (doc[1], "timestamp")}[fmt]()
    node[key] = 2**70
    p = tmp_path / f"{fmt}.json"
    p.write_text(json.dumps(doc))
    r = cli("report", p, "--min-category", "2")
    assert r.returncode == 0, r.stderr
    assert "- 1 unreadable record\n" in r.stdout and "time beyond 64-bit nanoseconds" in r.stdout


def test_a_span_a_reader_cannot_store_leaves_the_columns_aligned(tmp_path):
    """A service name that is a list failed half-way through SpanBuilder.add: the reader counted
    the span unreadable, and the columns it had grown made the whole analysis fail (IndexError)."""
    import json

    from fuzzing.strategies import zipkin_doc

    doc = zipkin_doc()
    doc[-1]["localEndpoint"]["serviceName"] = []
    p = tmp_path / "zipkin.json"
    p.write_text(json.dumps(doc))
    r = cli("report", p, "--min-category", "2")
    assert r.returncode == 0, r.stderr
    assert "- 1 unreadable record\n" in r.stdout


def test_infinite_or_absurd_measurements_are_missing_values_not_nan_findings(tmp_path):
    """A counter or thread metric of inf or 1e308 entered every mean and variance (numpy warnings on
    the terminal, findings computed from inf): it is read as missing, and said."""
    from fuzzing.strategies import counters_rows, csv_bytes, thread_rows

    rows = counters_rows()
    rows[5][2], rows[9][3] = "inf", "1e308"
    c = tmp_path / "counters.csv"
    c.write_bytes(csv_bytes(rows))
    rows = thread_rows()
    rows[7][3] = "1e308"
    t = tmp_path / "threads.csv"
    t.write_bytes(csv_bytes(rows))
    for p in (c, t):
        r = cli("report", p, "--replicates", "10")
        assert r.returncode == 0 and "Warning" not in r.stderr, r.stderr
        n = "2 values" if p == c else "1 value"
        assert f"{n} infinite or beyond 1e100 read as missing" in r.stdout


def test_a_features_csv_with_a_negative_count_or_an_absurd_time_names_the_row(tmp_path):
    from fuzzing.strategies import csv_bytes, features_rows

    for col, value, said in (("BD_n", "-3", "row 4: BD_n '-3' is negative (a count)"),
                             ("start_ns", "1e999", "row 4: start_ns '1e999' is not a finite number of 64 bits")):
        rows = features_rows()
        rows[3][rows[0].index(col)] = value
        p = tmp_path / "features.csv"
        p.write_bytes(csv_bytes(rows))
        r = cli("report", p)
        assert r.returncode == 3 and r.stderr.strip() == f"perftriage: {p}: {said}", r.stderr


def test_a_counter_sample_at_an_infinite_time_is_left_out_and_said(tmp_path):
    from fuzzing.strategies import counters_rows, csv_bytes

    rows = counters_rows()
    rows[3][0] = rows[7][0] = "-inf"
    p = tmp_path / "counters.csv"
    p.write_bytes(csv_bytes(rows))
    r = cli("report", p)
    assert r.returncode == 0 and "Warning" not in r.stderr, r.stderr
    assert "- 2 samples with a time that is not a finite number left out" in r.stdout


def test_record_ends_at_its_duration_whatever_the_interval(tmp_path):
    """--interval 1000 --duration 0.3 slept the whole interval before looking at the duration."""
    import time

    t0 = time.monotonic()
    r = cli("record", "threads", "--pid", os.getpid(), "--interval", "1000", "--duration", "0.3", "-o",
            tmp_path / "t.csv", timeout=60)
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 30 and "1 sample, " in r.stdout + r.stderr
    assert (tmp_path / "t.csv").read_text().count("\n") >= 2  # header + the threads at the end
