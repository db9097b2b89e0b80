"""vmstat's report (a file per host) read as counters across servers."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fuzzing.strategies import vmstat_lines
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

from conftest import first_finding_row

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "vmstat"
T0 = 1_795_860_000  # 2026-11-28 10:00:00 UTC


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("name,extra", [("vmstat-t.txt.gz", {"memory.buff", "memory.cache"}),
                                        ("vmstat-taw.txt.gz", {"memory.inact", "memory.active", "cpu.gu"})])
def test_this_machines_vmstat_reads_as_a_servers_counters(name, extra):
    """procps-ng 4.0.2's ``vmstat -t 1 12`` and ``vmstat -t -w -a 1 12`` recorded here."""
    p = DATA / name
    assert classify([str(p)]).files["counters"] == [p]
    rows = [ln.split() for ln in gzip.decompress(p.read_bytes()).decode().splitlines()[2:]]
    cs = load_counters([p])
    assert cs.servers == [name.split(".")[0]] and cs.n_points == 11 and cs.interval == 1
    assert {"procs.r", "memory.free", "io.bo", "system.cs", "cpu.us", "cpu.id"} | extra <= set(cs.counters)
    assert len(cs.counters) == len(rows[0]) - 2  # every column but the date and time
    us = cs.values[0, cs.counters.index("cpu.us")]
    np.testing.assert_array_equal(us, [float(r[12]) for r in rows[1:]])  # r b swpd free buff cache si so bi bo in cs us
    assert any("its first row (averages since the host's boot) left out" in n for n in cs.notes), cs.notes
    assert not any("read as UTC" in n for n in cs.notes)  # its zone is UTC


def test_a_fleets_vmstat_reports_and_the_busy_host_named(tmp_path):
    files = [_write(tmp_path / f"web-0{h}.txt", vmstat_lines(samples=120, busy_from=80 if h == 1 else None))
             for h in range(4)]
    cs = load_counters(files)
    assert cs.servers == ["web-00", "web-01", "web-02", "web-03"] and cs.n_points == 120 and cs.interval == 5
    assert cs.start == T0 + 5  # the first row left out; the header repeated every 20 rows read through
    first = first_finding_row(tmp_path)
    assert "| web-01: cpu." in first and "since 2026-11-28 10:06:40 UTC" in first, first


def test_without_times_the_delay_is_asked_and_local_times_are_said(tmp_path):
    p = _write(tmp_path / "web-01.txt", vmstat_lines(samples=30, zone=None))
    with pytest.raises(InputError) as err:
        load_counters([p])
    assert str(err.value) == f"{p}: vmstat's report without times (vmstat -t prints them): give the delay it was " \
                             "run with, e.g. --interval 5"
    cs = load_counters([p], row_interval=5)
    assert cs.n_points == 30 and cs.interval == 5 and cs.numbered
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", "--interval", "5", str(p)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0 and "rows numbered, not timed: 5 s apart" in out.stdout, out.stderr
    cet = load_counters([_write(tmp_path / "db.txt", vmstat_lines(samples=10, zone="CET"))])
    assert any("vmstat's times (CET: the host's local ones) read as UTC" in n for n in cet.notes), cet.notes


def test_damaged_reports(tmp_path):
    lines = vmstat_lines(samples=30)
    lines[10] = " ".join(lines[10].split()[:9])  # a row cut short
    lines[12] = lines[12].replace(" 0 ", " x ", 1)  # a cell that is no number
    lines[14] = lines[14].rsplit(" ", 2)[0]  # its date and time cut off: the others' times still read
    cs = load_counters([_write(tmp_path / "cut.txt", lines)])
    assert cs.n_points == 30 and not cs.numbered
    assert any("cut.txt: 3 rows of another number of columns than the header, or not numbers, skipped" == n
               for n in cs.notes), cs.notes
    two = vmstat_lines(samples=5) + [ln.replace(" buff  cache", " inact active") for ln in vmstat_lines(samples=5)]
    for name, text, said in (("two.txt", two, "two vmstat reports in one file"),
                             ("head.txt", vmstat_lines(samples=0), "no row of numbers under vmstat's header"),
                             ("rows.txt", vmstat_lines(samples=3)[1:], None)):
        f = _write(tmp_path / name, text)
        if said is None:  # its first header line gone: no vmstat report to the sniffer, nor a counter CSV
            with pytest.raises(InputError, match="unrecognised input"):
                classify([str(f)])
            continue
        with pytest.raises(InputError) as err:
            load_counters([f])
        assert str(err.value).startswith(f"{f}: ") and said in str(err.value), err.value
