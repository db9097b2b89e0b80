"""nmon recordings (a file per host) read as counters across servers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fuzzing.strategies import nmon_lines
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

from conftest import first_finding_row

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_795_860_000  # 2026-11-28 10:00:00 UTC


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_fleets_nmon_recordings_read_as_counters_and_the_busy_host_named(tmp_path):
    files = [_write(tmp_path / f"web0{h}_261128_1000.nmon", nmon_lines(f"web0{h}", samples=90,
                                                                       high_from=60 if h == 2 else None))
             for h in range(4)]
    assert classify([str(tmp_path)]).files["counters"] == sorted(files)
    cs = load_counters(files)
    assert cs.servers == ["web00", "web01", "web02", "web03"] and cs.n_points == 90 and cs.interval == 60
    assert cs.start == T0
    assert {"CPU_ALL.User%", "MEM.memfree", "NET.eth0-read-KB/s", "DISKBUSY.sda"} <= set(cs.counters)
    assert "CPU_ALL.Busy" not in cs.counters  # a column nmon leaves empty
    assert not any(c.startswith("TOP.") for c in cs.counters)
    assert any(n == "web00_261128_1000.nmon: its per-process sections (TOP) left out" for n in cs.notes), cs.notes
    user = cs.values[:, cs.counters.index("CPU_ALL.User%"), :]
    assert np.nanmedian(user[2, 60:]) == pytest.approx(51, abs=1.5) and np.nanmax(user[0]) < 13
    first = first_finding_row(tmp_path)
    assert "| web02: CPU_ALL." in first and "since 2026-11-28 11:00:00 UTC" in first, first
    info = subprocess.run([sys.executable, "-m", "perftriage", "info", str(files[0])], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert "counters: nmon recording" in info.stdout, info.stdout + info.stderr


def test_damaged_recordings(tmp_path):
    lines = nmon_lines("db1", samples=30)
    lines = [ln for ln in lines if not ln.startswith("AAA,host")]  # no host: the file's name tells it
    lines.insert(8, "MEM,T0000,1,2,3")  # values before their section's header
    bad = next(i for i, ln in enumerate(lines) if ln.startswith("ZZZZ,T0005"))
    lines[bad] = "ZZZZ,T0005,25:99:00,28-NOV-2026"  # no time: that snapshot's lines left out
    p = _write(tmp_path / "db1_261128_1000.nmon", lines)
    cs = load_counters([p])
    assert cs.servers == ["db1"] and cs.n_points == 30  # the grid keeps the snapshot, empty
    assert np.isnan(cs.values[0, :, 4]).all() and np.isfinite(cs.values[0, :, 5]).any()
    assert any("1 line out of place" in n for n in cs.notes), cs.notes
    assert any("1 snapshot time that is no time (ZZZZ lines): its snapshot left out" in n for n in cs.notes), cs.notes
    assert any("an nmon recording of a host not named (AAA,host): the file" in n for n in cs.notes), cs.notes
    cut = _write(tmp_path / "cut.nmon", nmon_lines("x", samples=3)[:16])  # cut before its first snapshot
    with pytest.raises(InputError) as err:
        load_counters([cut])
    assert str(err.value).startswith(f"{cut}: ") and "no snapshot time" in str(err.value), err.value
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(cut)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1 and str(cut) in out.stderr, out.stderr
