"""dstat's and dool's CSV output (one file per host) read as counters across servers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fuzzing.strategies import csv_bytes, dstat_rows
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

from conftest import first_finding_row

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_795_860_000  # 2026-11-28 10:00:00 UTC


def _write(path: Path, rows) -> Path:
    path.write_bytes(csv_bytes(rows))
    return path


def test_a_fleets_dstat_files_read_as_counters_and_the_busy_host_named(tmp_path):
    files = [_write(tmp_path / f"h{h}.csv", dstat_rows(f"web-0{h}", samples=120, high_from=80 if h == 2 else None))
             for h in range(4)]
    assert classify([str(tmp_path)]).files["counters"] == sorted(files)
    cs = load_counters(files)
    assert cs.servers == ["web-00", "web-01", "web-02", "web-03"]  # the Host rows, not the files' names
    assert cs.interval == 5 and cs.n_points == 120 and cs.start == T0 + 5  # the first row (since boot) left out
    assert "total cpu usage.usr" in cs.counters and "net/total.recv" in cs.counters and "system.csw" in cs.counters
    assert "time" not in cs.counters and "system.time" not in cs.counters
    usr = cs.values[:, cs.counters.index("total cpu usage.usr"), :]
    assert np.nanmax(usr[0]) < 20 and np.nanmedian(usr[2, 90:]) == pytest.approx(51, abs=1.5)
    assert any(n == "h0.csv: a dstat CSV; 1 first row (averages since the host's boot) left out" for n in cs.notes)
    first = first_finding_row(tmp_path)
    assert "| web-02: total cpu usage." in first and "since 2026-11-28 10:06:40 UTC" in first, first


def test_dools_times_across_a_new_year_in_a_local_zone_and_an_epoch_column(tmp_path):
    """dool prints Dec-31 23:59:55 with no year: the Date row's year, and the next one after
    the turn; a host's local time is read as UTC and said; an epoch column (-T) is UTC."""
    p = _write(tmp_path / "db.csv", dstat_rows("db-1", samples=6, tool="dool", start="31 Dec 2026 23:59:40 CET"))
    cs = load_counters([p])
    assert cs.start == 1_798_761_585 and cs.n_points == 6  # 2026-12-31 23:59:45, read as UTC
    assert float(cs.seconds(5)) == 1_798_761_610  # 2027-01-01 00:00:10
    assert any("the host's local times (CET) read as UTC" in n for n in cs.notes), cs.notes
    assert any(n.startswith("db.csv: a dool CSV") for n in cs.notes), cs.notes
    e = _write(tmp_path / "epoch.csv", dstat_rows("db-1", samples=6, clock="epoch", start="31 Dec 2026 23:59:40 CET"))
    ce = load_counters([e])
    assert ce.start == 1_798_761_585 - 3600 and "epoch" not in ce.counters and "epoch.epoch" not in ce.counters
    assert not any("read as UTC" in n for n in ce.notes), ce.notes


def test_a_leap_day_without_a_year_is_the_date_rows_years(tmp_path):
    """dstat's 29-02 (no year) is a day of 2028, the Date row's year; read as 1900's it was no day."""
    p = _write(tmp_path / "leap.csv", dstat_rows("h", samples=6, start="28 Feb 2028 23:59:40 UTC"))
    cs = load_counters([p])
    assert cs.n_points == 6 and cs.start == 1_835_395_185  # 2028-02-28 23:59:45
    assert float(cs.seconds(5)) == 1_835_395_210 and np.isfinite(cs.values[0, 0]).all()  # 2028-02-29 00:00:10


def test_rows_without_a_time_column_count_from_the_date_by_the_delay(tmp_path):
    p = _write(tmp_path / "w.csv", dstat_rows("w", samples=10, clock="", delay=15))
    cs = load_counters([p])
    assert cs.start == T0 + 15 and cs.interval == 15 and cs.n_points == 10
    assert any("no time column (dstat -t or -T): rows 15 s apart" in n for n in cs.notes), cs.notes


def test_an_appended_run_and_damaged_rows(tmp_path):
    """--output to an existing file appends a run under its own preamble and header: both read,
    each without its first row; a row of another width is skipped and counted; a column of
    process names (dstat --top-cpu) is no counter."""
    first = dstat_rows("web-01", samples=10)
    second = dstat_rows("web-01", samples=10, start="28 Nov 2026 10:01:00 UTC")[2:]  # no banner, no author
    second[3] = second[3] + ["most expensive", ""]  # the groups
    second[4] = second[4] + ["cpu process", "cpu%"]
    for r in second[5:]:
        r += ["kworker/0:1", "3.5"]
    rows = first + [[], []] + second
    rows[12] = rows[12][:5]  # a row cut short
    p = _write(tmp_path / "w.csv", rows)
    cs = load_counters([p])
    assert cs.servers == ["web-01"] and cs.start == T0 + 5 and float(cs.seconds(cs.n_points - 1)) == T0 + 110
    assert "most expensive.cpu%" in cs.counters and "most expensive.cpu process" not in cs.counters
    assert any("2 first rows (averages since the host's boot) left out" in n for n in cs.notes), cs.notes
    assert any("w.csv: 1 row with another number of cells than the header skipped" == n for n in cs.notes), cs.notes
    assert any("1 column of text, no counter: most expensive.cpu process" in n for n in cs.notes), cs.notes


def test_a_dstat_file_without_rows_or_times_is_one_line(tmp_path):
    rows = dstat_rows("w", samples=3, clock="")
    rows[3] = rows[3][:2]  # no Date in the Cmdline row
    cases = {"headers.csv": (dstat_rows("w", samples=3)[:7], "no row of numbers under its dstat / dool header"),
             "banner.csv": (dstat_rows("w", samples=3)[:3], "without its two header rows"),
             "nodate.csv": (rows, "no time column (dstat -t or -T) and no Date:")}
    for name, (content, said) in cases.items():
        p = _write(tmp_path / name, content)
        with pytest.raises(InputError) as err:
            load_counters([p])
        assert str(err.value).startswith(f"{p}: ") and said in str(err.value), err.value
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(tmp_path / "nodate.csv")],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1, out.stderr
