"""InfluxDB's CSV (Flux results): Telegraf's metrics as a user downloads them from InfluxDB, read
as counters across servers."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_793_491_200  # 2026-11-01 00:00:00 UTC
HOSTS = [f"web-{h:02d}" for h in range(6)]


def _stamp(t: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _flux(annotated: bool = True, n: int = 240, seed: int = 1) -> str:
    """Two results as the InfluxDB UI downloads them: cpu.usage_user (tag cpu=cpu-total on every
    series) and net.bytes_recv per interface (eth0, eth1; totals since boot), one table per series;
    web-03's CPU 40 points higher from point 160."""
    rng = np.random.default_rng(seed)
    out = []
    for measurement, field, tag, values in (("cpu", "usage_user", "cpu", ["cpu-total"]),
                                            ("net", "bytes_recv", "interface", ["eth0", "eth1"])):
        if annotated:
            out += ["#group,false,false,true,true,false,false,true,true,true,true",
                    "#datatype,string,long,dateTime:RFC3339,dateTime:RFC3339,dateTime:RFC3339,double,string,string,"
                    "string,string",
                    "#default,_result,,,,,,,,,"]
        out.append(f",result,table,_start,_stop,_time,_value,_field,_measurement,host,{tag}")
        table = 0
        for host in HOSTS:
            for value in values:
                total = float(rng.uniform(1e9, 5e11))
                for k in range(n):
                    if measurement == "cpu":
                        v = 20 + rng.normal(0, 1.5) + (40 if host == "web-03" and k >= 160 else 0)
                    else:
                        total += 2e6 * 10 * (1 + 0.1 * rng.standard_normal())
                        v = total
                    out.append(f",,{table},{_stamp(T0)},{_stamp(T0 + 3600)},{_stamp(T0 + 10 * k)},{v:.3f},{field},"
                               f"{measurement},{host},{value}")
                table += 1
        out.append("")  # a blank line ends a result
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("annotated", [True, False])
def test_a_flux_result_reads_as_counters_across_servers(tmp_path, annotated):
    p = tmp_path / "telegraf.csv"
    p.write_text(_flux(annotated))
    assert classify([str(p)]).files["counters"] == [p]
    cs = load_counters([p])
    assert cs.servers == HOSTS and cs.n_points == 240 and cs.interval == 10
    # a tag with one value over the file is left off; the interface tells two series apart; a
    # total since boot is compared by its rate
    assert sorted(cs.counters) == ["cpu.usage_user", "rate(net.bytes_recv{interface=eth0})",
                                   "rate(net.bytes_recv{interface=eth1})"], cs.counters
    assert any("InfluxDB's CSV (a Flux result): 3 counters named MEASUREMENT.FIELD" in n for n in cs.notes), cs.notes
    cpu = cs.values[:, cs.counters.index("cpu.usage_user"), :]
    assert np.nanmedian(cpu[3, 170:]) == pytest.approx(60, abs=2) and np.nanmedian(cpu[0]) == pytest.approx(20, abs=1)
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(p)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "| web-03: cpu.usage_user at another level since 2026-11-01 00:26:40 UTC" in out.stdout, out.stdout[:3000]


def test_a_pivoted_flux_result_has_a_counter_per_field_column(tmp_path):
    """pivot(rowKey: ["_time"], columnKey: ["_field"]): the fields as columns, gzip'd; a tag of
    digits (port) is a tag by its datatype, not a field."""
    rng = np.random.default_rng(2)
    rows = ["#datatype,string,long,dateTime:RFC3339,string,string,string,double,double",
            ",result,table,_time,_measurement,host,port,usage_user,usage_system"]
    for t, host in enumerate(HOSTS):
        rows += [f",,{t},{_stamp(T0 + 60 * k)},cpu,{host},9100,{20 + rng.normal(0, 1):.2f},{5 + rng.normal(0, 1):.2f}"
                 for k in range(100)]
    p = tmp_path / "pivoted.csv.gz"
    p.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    cs = load_counters([p])
    assert cs.servers == HOSTS and sorted(cs.counters) == ["cpu.usage_system", "cpu.usage_user"]
    assert cs.interval == 60 and cs.n_points == 100


def test_damaged_flux_results_are_read_as_far_as_they_go_or_named_in_one_line(tmp_path):
    text = _flux(n=60)
    cut = tmp_path / "cut.csv"  # the download stopped mid-row, and a string field in the middle
    lines = text.splitlines()
    lines.insert(10, lines[9].replace(",usage_user,", ",state,").replace(lines[9].split(",")[6], "running"))
    cut.write_text("\n".join(lines)[:-30])
    cs = load_counters([cut])
    assert "cpu.usage_user" in cs.counters and cs.servers == HOSTS
    assert any("1 row with another number of fields than their table's header skipped" in n for n in cs.notes)
    assert any("1 value that is no number (string or boolean fields) left out" in n for n in cs.notes), cs.notes
    empty = tmp_path / "empty.csv"  # a query that returned nothing: the header alone
    empty.write_text(",result,table,_start,_stop,_time,_value,_field,_measurement,host\n")
    with pytest.raises(InputError) as err:
        load_counters([empty])
    assert str(err.value).startswith(str(empty)) and "no numeric value" in str(err.value) and "\n" not in str(err.value)
    headless = tmp_path / "headless.csv"  # the annotations, then rows without their header
    headless.write_text("\n".join(text.splitlines()[:3] + text.splitlines()[4:20]) + "\n")
    with pytest.raises(InputError) as err:
        load_counters([headless])
    assert "a row before any header with _time and _value" in str(err.value)
