"""Counter files whose times are a host's local clock (sar's text, vmstat -t, nmon...): read as
UTC and said, or in the zone given with --timezone."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from fuzzing.strategies import dstat_rows, csv_bytes, nmon_lines, vmstat_lines
from perftriage.analysis.counters.readers import from_local, load_counters

from conftest import ROOT


def test_local_clock_times_move_to_utc_by_each_quarter_hours_offset():
    """Paris: UTC+2 in summer, UTC+1 in winter; on 2026-10-25 its clock went from 03:00 back to
    02:00 (02:30 happened twice: read as its first, summer's)."""
    summer = 1_782_000_000.0  # 2026-06-21 00:00:00 read as UTC
    winter = 1_795_860_000.0  # 2026-11-28 10:00:00
    repeated = 1_792_895_400.0  # 2026-10-25 02:30:00
    got = from_local(np.array([summer, winter, repeated, np.nan]), "Europe/Paris")
    assert got[:3].tolist() == [summer - 7200, winter - 3600, repeated - 7200] and np.isnan(got[3])


def test_timezone_moves_the_local_files_and_says_so(tmp_path):
    vm = tmp_path / "web-01.txt"  # vmstat -t in CET: 10:00:05 local
    vm.write_text("\n".join(vmstat_lines(samples=20, zone="CET")) + "\n")
    nm = tmp_path / "web02_261128_1000.nmon"  # nmon: 10:00:00 local
    nm.write_text("\n".join(nmon_lines("web02", samples=20, step=5)) + "\n")
    as_utc = load_counters([vm, nm])
    moved = load_counters([vm, nm], local_zone="Europe/Paris")
    assert as_utc.start == 1_795_860_005 and moved.start == 1_795_860_005 - 3600  # 09:00:05 UTC
    assert moved.servers == as_utc.servers and moved.n_points == as_utc.n_points
    np.testing.assert_array_equal(moved.values, as_utc.values)
    assert sum(n.endswith("read as UTC") for n in as_utc.notes) == 2
    assert sum(n.endswith("read in Europe/Paris (--timezone)") for n in moved.notes) == 2
    assert not any("read as UTC" in n for n in moved.notes), moved.notes
    utc = tmp_path / "web-03.csv"  # dstat's Date row says UTC: its times are not moved
    utc.write_bytes(csv_bytes(dstat_rows("web-03", samples=20)))
    assert load_counters([utc], local_zone="Europe/Paris").start == load_counters([utc]).start == 1_795_860_005


def test_timezone_on_the_command_line(tmp_path):
    sar = ROOT / "tests" / "data" / "sar" / "sa-busy.txt.gz"
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", "--timezone", "Europe/Paris", str(sar)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "its times are the hosts' local ones, read in Europe/Paris (--timezone)" in out.stdout
    assert "2026-11-27 14:4" in out.stdout and "2026-11-27 15:4" not in out.stdout  # 15:4x CET is 14:4x UTC
    bad = subprocess.run([sys.executable, "-m", "perftriage", "report", "--timezone", "Mars/Olympus", str(sar)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert bad.returncode != 0 and "--timezone: 'Mars/Olympus' is no time zone this host knows" in bad.stderr


def test_timezone_reads_pidstats_and_tops_host_clock(tmp_path):
    """pidstat and top print the host's clock, read in this machine's zone by default; with
    --timezone, in the zone given (top's day from its file's last change, in that zone too)."""
    import os
    import shutil

    from perftriage.analysis.threads.series import read_thread_metrics

    data = ROOT / "tests" / "data"
    top = tmp_path / "top-H.txt.gz"
    shutil.copy(data / "top" / "top-H.txt.gz", top)
    os.utime(top, (1_795_860_000, 1_795_860_000))  # written 2026-11-28 10:00 UTC, 19:00 in Tokyo
    # pidstat dates its report: 16:16 on 2026-11-27 is 9 hours earlier in Tokyo; top prints times of
    # day only (16:16), of the day its file was last written: in UTC, at 10:00, the day before (the
    # 27th), in Tokyo, at 19:00, that day (the 28th): 16:16 JST on the 28th, 15 hours after 16:16 UTC
    for path, hours in ((data / "pidstat" / "pidstat-h.txt.gz", 9), (top, -15)):
        utc, tokyo = read_thread_metrics(path, "UTC"), read_thread_metrics(path, "Asia/Tokyo")
        assert np.array_equal(utc.time - tokyo.time, np.full(len(utc.time), hours * 3600.0)), path
        assert any(n.endswith("read in Asia/Tokyo (--timezone) (UTC+09:00)") for n in tokyo.notes), tokyo.notes
        assert any("this machine's time zone" in n for n in read_thread_metrics(path).notes)
