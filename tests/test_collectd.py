"""collectd's CSV plugin's files (DataDir/HOST/PLUGIN/TYPE-DAY) read as counters across servers."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fuzzing.strategies import collectd_files
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.inputs import classify

from conftest import ROOT, first_finding_row

T0 = 1_795_910_000.0  # 2026-11-28 23:53:20 UTC: the samples cross midnight, two days' files


def _tree(root: Path, **kw) -> Path:
    for rel, text in collectd_files(t0=T0, **kw).items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return root


def test_a_datadir_reads_as_a_fleets_counters_and_the_busy_host_named(tmp_path):
    data = _tree(tmp_path / "csv", samples=400, busy_from=250)
    inputs = classify([str(data)])
    files = inputs.files["counters"]
    assert len(files) == 4 * 5 * 2 and inputs.trees == {str(data): files}  # hosts x types x days
    cs = load_counters(files)
    assert cs.servers == ["web-00", "web-01", "web-02", "web-03"] and cs.interval == 10
    # totals (integers: jiffies, octets) read as their rates; gauges (decimals) as they are
    assert sorted(cs.counters) == ["load.load.longterm", "load.load.midterm", "load.load.shortterm",
                                   "memory.memory-used", "rate(cpu-0.cpu-idle)", "rate(cpu-0.cpu-user)",
                                   "rate(interface-eth0.if_octets.rx)", "rate(interface-eth0.if_octets.tx)"]
    rx = cs.values[:, cs.counters.index("rate(interface-eth0.if_octets.rx)"), :]
    assert np.nanmedian(rx) == pytest.approx(100_300, rel=0.01)  # (1e6 + ~3,000) octets per 10 s
    user = cs.values[:, cs.counters.index("rate(cpu-0.cpu-user)"), :]
    assert np.nanmedian(user[1, 260:]) == pytest.approx(61, abs=1) and np.nanmax(user[0]) < 13
    # a day's file's first sample rated from the day before's last: only the first of all has none
    for c in (c for c in cs.counters if c.startswith("rate(")):
        assert [list(np.flatnonzero(np.isnan(r))) for r in cs.values[:, cs.counters.index(c), :]] == [[0]] * 4, c
    first = first_finding_row(data)
    assert "| web-01: rate(cpu-0.cpu-" in first and "since 2026-11-29 00:35:00 UTC" in first, first
    out = subprocess.run([sys.executable, "-m", "perftriage", "info", str(data)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0 and out.stdout.count("file    ") == 1, out.stdout + out.stderr
    assert "counters: a folder of 40 files, each a collectd CSV file" in out.stdout and \
        "4 servers (web-00, web-01, web-02, web-03) x 8 counters" in out.stdout, out.stdout


def test_store_rates_a_hosts_folder_and_a_fresh_days_file(tmp_path):
    """With StoreRates, collectd writes rates (decimals): read as they are; a host's folder alone
    is that host; a day's file holding its header only (just opened) adds nothing, says nothing."""
    data = _tree(tmp_path / "csv", samples=40, store_rates=True)
    (data / "web-00" / "cpu-0" / "cpu-user-2026-11-30").write_text("epoch,value\n")
    inputs = classify([str(data / "web-00")])
    cs = load_counters(inputs.files["counters"])
    assert cs.servers == ["web-00"] and "cpu-0.cpu-user" in cs.counters and "rate(cpu-0.cpu-user)" not in cs.counters
    assert np.nanmedian(cs.values[0, cs.counters.index("cpu-0.cpu-user")]) == pytest.approx(11, abs=1)
    assert not any("cpu-user-2026-11-30" in n for n in cs.notes), cs.notes


def test_damaged_files_in_a_tree(tmp_path):
    data = _tree(tmp_path / "csv", samples=60)  # 40 on the first day, 20 on the next
    f = data / "web-02" / "load" / "load-2026-11-28"
    lines = f.read_text().splitlines()
    lines[3] = lines[3].rsplit(",", 1)[0]  # a line cut
    f.write_text("\n".join(lines) + "\n")
    (data / "web-02" / "load" / "notes-2026-11-28").write_text("not collectd's\n")  # no header: not in the tree
    rotated = data / "web-03" / "memory" / "memory-used-2026-11-28"  # a day's file compressed by logrotate
    rotated.with_name(rotated.name + ".gz").write_bytes(gzip.compress(rotated.read_bytes()))
    rotated.unlink()
    # the day before's file of a total rotated, another's last line cut (a write under way):
    # the next day's first sample rated from the last whole one
    idle = data / "web-01" / "cpu-0" / "cpu-idle-2026-11-28"
    idle.with_name(idle.name + ".gz").write_bytes(gzip.compress(idle.read_bytes()))
    idle.unlink()
    user = data / "web-01" / "cpu-0" / "cpu-user-2026-11-28"
    user_lines = user.read_text().splitlines()
    user.write_text("\n".join(user_lines[:-1]) + "\n" + user_lines[-1][:-3])
    files = classify([str(data)]).files["counters"]
    assert not any(p.name.startswith("notes-") for p in files)
    assert rotated.with_name(rotated.name + ".gz") in files
    cs = load_counters(files)
    assert cs.servers == ["web-00", "web-01", "web-02", "web-03"]
    assert np.isfinite(cs.values[3, cs.counters.index("memory.memory-used")]).sum() >= 15
    assert any(n == f"{f}: 1 line of another width or without a time skipped" for n in cs.notes), cs.notes
    assert any(n == f"{user}: 1 line of another width or without a time skipped" for n in cs.notes), cs.notes
    rated = {c: cs.values[1, cs.counters.index(f"rate(cpu-0.cpu-{c})")] for c in ("idle", "user")}
    assert list(np.flatnonzero(np.isnan(rated["idle"]))) == [0]
    gap = list(np.flatnonzero(np.isnan(rated["user"])))
    assert len(gap) == 2 and gap[0] == 0 and np.isfinite(rated["user"][gap[1] + 1]), gap  # the line cut
    assert 8 < np.nanmin(rated["user"]) and np.nanmax(rated["user"]) < 14  # no restart read where it was cut
