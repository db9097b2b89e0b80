"""iostat's report read as counters (named as sar's and sadf's), through sadf's reader."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "iostat"


def _text(name: str) -> str:
    return gzip.decompress((DATA / name).read_bytes()).decode()


def _reports(text: str) -> list[tuple[list[str], list[str]]]:
    """Each report's avg-cpu numbers and vda's line, as printed."""
    lines = text.splitlines()
    cpu = [lines[i + 1].split() for i, ln in enumerate(lines) if ln.startswith("avg-cpu:")]
    vda = [ln.split()[1:] for ln in lines if ln.startswith("vda ")]
    return list(zip(cpu, vda))


@pytest.mark.parametrize("name", ["iostat-xt.txt.gz", "iostat-xt-iso.txt.gz"])
def test_this_machines_iostat_reads_as_its_numbers(name):
    """sysstat 12.6.1's ``iostat -x -t 1 12`` recorded here, in the C locale's times and in ISO
    ones (S_TIME_FORMAT=ISO: with their offset)."""
    p = DATA / name
    assert classify([str(p)]).files["counters"] == [p]
    cs = load_counters([p])
    assert cs.servers == ["vm"] and cs.n_points == 11 and cs.interval == 1
    assert {"%user", "%iowait", "%idle", "r/s[vda]", "w_await[vda]", "aqu-sz[vda]", "%util[vda]"} <= set(cs.counters)
    reports = _reports(_text(name))[1:]  # the first, since boot, left out
    np.testing.assert_array_equal(cs.values[0, cs.counters.index("%iowait")], [float(c[3]) for c, _ in reports])
    np.testing.assert_array_equal(cs.values[0, cs.counters.index("%util[vda]")], [float(d[-1]) for _, d in reports])
    assert any("its first report (averages since the host's boot) left out" in n for n in cs.notes)
    assert any("iostat's times (the host's local ones) read as UTC" in n for n in cs.notes) == ("iso" not in name)
    out = subprocess.run([sys.executable, "-m", "perftriage", "info", str(p)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert "counters: iostat report" in out.stdout and "1 server (vm) x " in out.stdout, out.stdout + out.stderr


def test_the_us_locales_times_and_hosts(tmp_path):
    """11/28/2026 11:01:38 PM reads as the C locale's 11/28/26 23:01:38 (the recording's times
    moved 12 hours on); two hosts' reports are two servers."""
    text = _text("iostat-xt.txt.gz")
    later = re.sub(r"^(\d\d/\d\d/26) (\d\d):", lambda m: f"{m[1]} {int(m[2]) + 12:02d}:", text, flags=re.MULTILINE)
    us = re.sub(r"^(\d\d/\d\d)/26 (\d\d):(\d\d:\d\d)$",
                lambda m: f"{m[1]}/2026 {(int(m[2]) % 12) or 12:02d}:{m[3]} {'PM' if int(m[2]) >= 12 else 'AM'}",
                later, flags=re.MULTILINE)
    assert " PM\n" in us
    a = tmp_path / "web-01.txt"
    a.write_text(us.replace("(vm)", "(web-01)"))
    b = tmp_path / "web-02.txt"
    b.write_text(later.replace("(vm)", "(web-02)"))
    cs, c = load_counters([a, b]), load_counters([DATA / "iostat-xt.txt.gz"])
    assert cs.servers == ["web-01", "web-02"] and cs.start == c.start + 12 * 3600 and cs.n_points == c.n_points
    np.testing.assert_array_equal(cs.values[0], cs.values[1])
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(tmp_path)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0 and "iostat's report" in out.stdout, out.stderr


def test_damaged_and_untimed_reports(tmp_path):
    lines = _text("iostat-xt.txt.gz").splitlines()
    k = [i for i, ln in enumerate(lines) if ln.startswith("vda ")][3]
    lines[k] = " ".join(lines[k].split()[:6])  # a device's line cut short
    p = tmp_path / "cut.txt"
    p.write_text("\n".join(lines) + "\n")
    cs = load_counters([p])
    assert cs.n_points == 11 and np.isnan(cs.values[0, cs.counters.index("r/s[vda]"), 2])
    assert any("cut.txt: 1 line out of place or of another number of columns skipped" == n for n in cs.notes)
    plain = tmp_path / "plain.txt"  # iostat without -t: no time line
    plain.write_text("\n".join(ln for ln in _text("iostat-xt.txt.gz").splitlines()
                               if not re.match(r"\d\d/\d\d/\d\d \d", ln)) + "\n")
    with pytest.raises(InputError) as err:
        load_counters([plain])
    assert str(err.value) == f"{plain}: iostat's report without times (iostat -t prints them): give the delay it " \
                             "was run with, e.g. --interval 5"
    numbered, timed = load_counters([plain], row_interval=1), load_counters([DATA / "iostat-xt.txt.gz"])
    assert numbered.numbered and numbered.start == 1 and numbered.n_points == 11 and numbered.counters == timed.counters
    np.testing.assert_array_equal(numbered.values, timed.values)
    assert not any("read as UTC" in n for n in numbered.notes), numbered.notes
    days = load_counters([plain], row_interval=10 * 86400)  # reports ten days apart: past a month, still read
    assert days.n_points == 11 and days.interval == 10 * 86400
    first = tmp_path / "first.txt"  # one report only: the averages since boot
    first.write_text("\n".join(_text("iostat-xt.txt.gz").splitlines()[:9]) + "\n")
    with pytest.raises(InputError) as err:
        load_counters([first])
    assert "no report after iostat's first (averages since boot)" in str(err.value), err.value
