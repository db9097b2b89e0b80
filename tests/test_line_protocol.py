"""InfluxDB's line protocol: Telegraf's file output and InfluxDB's exports, read as counters
across servers."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fuzzing.strategies import line_protocol_lines
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

from conftest import first_finding_row

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_793_491_200  # 2026-11-01 00:00:00 UTC
SERVERS = [f"srv-{s}" for s in range(6)]


def test_telegrafs_file_output_reads_as_counters_across_servers(tmp_path):
    p = tmp_path / "metrics.out"
    p.write_text("\n".join(line_protocol_lines(servers=6, samples=240, t0=T0, shift=160)) + "\n")
    assert classify([str(p)]).files["counters"] == [p]
    cs = load_counters([p])
    assert cs.servers == SERVERS and cs.n_points == 240 and cs.interval == 10 and cs.start == T0
    # the tag with one value over the file (cpu=cpu-total) is left off, the interface tells two
    # series apart, a total since boot is compared by its rate, a string field is no counter
    assert sorted(cs.counters) == ["cpu.usage_idle", "cpu.usage_user", "net.err_in{interface=eth0}",
                                   "net.err_in{interface=eth1}", "rate(net.bytes_recv{interface=eth0})",
                                   "rate(net.bytes_recv{interface=eth1})", "system.load1"], cs.counters
    assert any("metrics.out: 1,440 values that are no number (string or boolean fields) left out" == n
               for n in cs.notes), cs.notes
    assert any("InfluxDB line protocol (timestamps in ns): 7 counters" in n for n in cs.notes), cs.notes
    cpu = cs.values[:, cs.counters.index("cpu.usage_user"), :]
    assert np.nanmedian(cpu[1, 170:]) == pytest.approx(61, abs=1.5) and np.nanmedian(cpu[0]) == pytest.approx(21, abs=1.5)
    rate = cs.values[:, cs.counters.index("rate(net.bytes_recv{interface=eth0})"), :]
    assert np.nanmedian(rate) == pytest.approx(2_000_000 / 10)
    first = first_finding_row(p)
    assert "| counters | srv-1: cpu.usage_" in first and "cpu.usage_idle" in first and \
        "at another level since 2026-11-01 00:26:40 UTC" in first, first
    info = subprocess.run([sys.executable, "-m", "perftriage", "info", str(p)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert "counters: InfluxDB line protocol" in info.stdout, info.stdout


def test_an_influxdb_export_with_its_ddl_and_timestamps_in_seconds(tmp_path):
    """``influx_inspect export``'s comments and DDL statements are skipped; timestamps written
    with another precision are read by their magnitude."""
    lines = line_protocol_lines(servers=3, samples=30, t0=T0, unit=1)
    p = tmp_path / "export.lp.gz"
    p.write_bytes(gzip.compress(("# INFLUXDB EXPORT: 1677-09-21T00:12:43Z - 2262-04-11T23:47:16Z\n# DDL\n"
                                 "CREATE DATABASE telegraf WITH NAME autogen\n# DML\n# CONTEXT-DATABASE:telegraf\n"
                                 "# CONTEXT-RETENTION-POLICY:autogen\n# writing tsm data\n"
                                 + "\n".join(lines) + "\n").encode()))
    cs = load_counters([p])
    assert cs.servers == SERVERS[:3] and cs.n_points == 30 and cs.interval == 10 and cs.start == T0
    assert any("InfluxDB line protocol (timestamps in s)" in n for n in cs.notes), cs.notes
    assert not any("no point of line protocol" in n for n in cs.notes), cs.notes  # the DDL is no damage


def test_escaped_names_quoted_strings_and_kinds(tmp_path):
    """A backslash escapes a comma, a space or an equals sign in a name or a tag's value; a
    string field may hold them all, and an escaped quote; a tag naming a server's kind makes the
    kinds of peers."""
    lines = []
    for i in range(40):
        t = (T0 + 60 * i) * 1_000_000_000
        for s in range(4):
            role = "db" if s < 2 else "web"
            lines.append(fr'disk\ io,host=h{s},role={role},path=/var/lib\,data,note=a\=b '
                         fr'busy\ pct={10 + s + i % 3}.5,msg="it said \"a, b=c\" ok",ok=true,reads={100 * i}u {t}')
    p = tmp_path / "disk.lp"
    p.write_text("\n".join(lines) + "\n")
    cs = load_counters([p])
    assert cs.servers == ["h0", "h1", "h2", "h3"] and cs.n_points == 40 and cs.interval == 60
    assert sorted(cs.counters) == ["disk io.busy pct", "rate(disk io.reads)"], cs.counters  # reads: a total
    assert cs.kinds == ["db", "db", "web", "web"] and cs.kind_column == "role"
    busy = cs.values[:, cs.counters.index("disk io.busy pct"), :]
    assert busy[3, 0] == 13.5 and busy[0, 2] == 12.5
    assert any("320 values that are no number" in n for n in cs.notes), cs.notes  # msg and ok, 2 a line


def test_damaged_lines_are_counted_and_a_file_without_a_point_is_one_line(tmp_path):
    lines = line_protocol_lines(servers=4, samples=60, t0=T0)
    damaged = list(lines)
    damaged[10] = damaged[10][:17]  # cut inside its tags: no fields
    damaged[23] = damaged[23].replace("load1=", "load1=abc", 1)  # no number, no string
    damaged[30] = damaged[30].rsplit(" ", 1)[0]  # no timestamp
    damaged[40] = damaged[40] + "999999999999"  # a timestamp no int64 holds
    damaged[41] = damaged[41].rsplit(" ", 1)[0] + " 9300000000000000000"  # 19 digits, still beyond int64
    p = tmp_path / "damaged.out"
    p.write_text("\n".join(damaged) + "\n")
    cs = load_counters([p])
    assert cs.servers == SERVERS[:4] and cs.n_points == 60
    assert any(n.startswith("damaged.out: 4 lines that are no point of line protocol skipped (the first: ")
               for n in cs.notes), cs.notes
    assert any(n.startswith("damaged.out: 1 point without a timestamp left out") for n in cs.notes), cs.notes
    untimed = tmp_path / "untimed.out"
    untimed.write_text("\n".join(line.rsplit(" ", 1)[0] for line in lines[:40]) + "\n")
    with pytest.raises(InputError) as err:
        load_counters([untimed])
    assert str(err.value).startswith(f"{untimed}: ") and "no point of line protocol with a number and a timestamp" \
        in str(err.value), err.value
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(untimed)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1 and str(untimed) in out.stderr, out.stderr


def test_text_of_key_value_pairs_is_no_line_protocol(tmp_path):
    """A log of KEY=VALUE words, a CSV: not taken for points."""
    from perftriage.analysis.counters.line_protocol import sniff

    assert not sniff(b"level=info msg=started t=1\nlevel=warn msg=slow t=2\n")
    assert not sniff(b"time,server,cpu\n1,a,2\n2,a,3\n")
    assert not sniff(b"# only a comment\n")
    assert sniff(b"cpu,host=a usage=1 1793491200000000000\ncpu,host=b usage=2 1793491200000000000\n")
