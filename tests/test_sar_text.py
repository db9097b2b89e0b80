"""sar's text report (``sar -A -f saDD > host.txt``) read as counters across servers, as sadf -d's
export of the same archive is."""

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
TEXT = ROOT / "tests" / "data" / "sar" / "sa-busy.txt.gz"  # LC_ALL=C sar -A of the busy recording
EXPORT = ROOT / "tests" / "data" / "sadf" / "web-03.csv.gz"  # sadf -d of the same recording
START = 1_795_794_105  # 2026-11-27 15:41:45, its first row


def _text() -> str:
    return gzip.decompress(TEXT.read_bytes()).decode()


def _us_locale(text: str) -> str:
    """The report as en_US prints it: the day 11/27/2026, times 03:41:44 PM."""
    def twelve(m):
        h = int(m[1])
        return f"{(h % 12) or 12:02d}:{m[2]}:{m[3]} {'PM' if h >= 12 else 'AM'}"

    text = text.replace("\t11/27/26 \t", "\t11/27/2026 \t")
    return re.sub(r"^(\d\d):(\d\d):(\d\d)", twelve, text, flags=re.MULTILINE)


def test_sars_text_holds_what_sadf_exports_of_the_same_archive(tmp_path):
    assert classify([str(TEXT)]).files["counters"] == [TEXT]
    cs = load_counters([TEXT])
    export = load_counters([EXPORT])  # its host renamed web-03, its times moved (tests/data/sadf/README.md)
    assert cs.servers == ["vm"] and cs.start == START and cs.n_points == 40 and cs.interval == 1
    common = [c for c in export.counters if c in cs.counters]
    assert len(common) == 68 and {"ldavg-1", "kbmemfree", "%util[vda]", "rxkB/s[eth0]", "bwrtn/s"} <= set(common)
    for c in common:
        np.testing.assert_array_equal(cs.values[0, cs.counters.index(c)], export.values[0, export.counters.index(c)],
                                      err_msg=c)
    # sar -A's own sections: each CPU, interrupts, sockets, NFS; a metric two sections name told apart
    assert {"%usr", "%usr[cpu0]", "%usr[cpu1]", "intr/s[sum]", "intr/s on cpu1[24]", "totsck", "retrans/s",
            "retrans/s (beside atmptf/s)"} <= set(cs.counters)
    assert np.nanmedian(cs.values[0, cs.counters.index("%usr")]) > 80  # the two spinning loops
    assert not any("already had one" in n for n in cs.notes), cs.notes
    assert any("sar's text report; its times are the hosts' local ones, read as UTC" in n for n in cs.notes)
    out = subprocess.run([sys.executable, "-m", "perftriage", "info", str(TEXT)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert "counters: sar text report" in out.stdout and "1 server (vm)" in out.stdout, out.stdout + out.stderr


def test_the_us_locales_report_and_hosts_concatenated(tmp_path):
    """AM/PM times and a four-digit year read as the C locale's 24-hour ones; two hosts'
    reports in one file (the second in ISO form, past midnight) are two servers."""
    us = tmp_path / "us.txt"
    us.write_text(_us_locale(_text()))
    a, c = load_counters([us]), load_counters([TEXT])
    assert a.start == c.start and a.counters == c.counters
    np.testing.assert_array_equal(a.values, c.values)
    second = _text().replace("(vm)", "(db-1)").replace("\t11/27/26 \t", "\t2026-11-27 \t")
    both = tmp_path / "both.txt"
    both.write_text(_text() + "\n" + second)
    cs = load_counters([both])
    assert cs.servers == ["vm", "db-1"] and cs.start == START and cs.n_points == 40
    np.testing.assert_array_equal(cs.values[0], cs.values[1])
    late = tmp_path / "late.txt"  # 23:59:44 .. 00:00:24: past midnight is the next day, not 24 hours back
    late.write_text(re.sub(r"^15:4(\d):", lambda m: "23:59:" if m[1] == "1" else "00:00:", _text(), flags=re.MULTILINE))
    cl = load_counters([late])
    assert cl.n_points == 40 and cl.start == START - 15 * 3600 - 41 * 60 - 45 + 23 * 3600 + 59 * 60 + 45
    assert float(cl.seconds(39)) == cl.start + 39


def test_damaged_reports(tmp_path):
    lines = _text().splitlines()
    lines[5] = " ".join(lines[5].split()[:4])  # a row cut short
    lines.insert(40, "15:41:44        LINUX RESTART\t(2 CPU)")
    p = tmp_path / "cut.txt"
    p.write_text("\n".join(lines) + "\n")
    cs = load_counters([p])
    assert cs.n_points == 40
    assert any(n == "cut.txt: 1 line of another number of columns than their section's header skipped"
               for n in cs.notes), cs.notes
    assert any(n == "cut.txt: 1 restart of the host (LINUX RESTART) in the report" for n in cs.notes), cs.notes
    ambiguous = tmp_path / "day.txt"
    ambiguous.write_text(_text().replace("\t11/27/26 \t", "\t11/07/26 \t"))
    assert any("its day 11/07/26 read as month/day" in n for n in load_counters([ambiguous]).notes)
    for name, text, said in (("banner.txt", lines[0] + "\n" + lines[2] + "\n", "no row under a section's header"),
                             ("nodate.txt", "\n".join(lines[2:40]) + "\n", "not a data file"),
                             ("baddate.txt", lines[0].replace("11/27/26", "13/13/26") + "\n" + "\n".join(lines[1:40]),
                              "its report's day '13/13/26' is no date")):
        f = tmp_path / name
        f.write_text(text)
        if name == "nodate.txt":
            assert classify([str(tmp_path)]).files.get("counters", []).count(f) == 0  # no banner: not sar's
            continue
        with pytest.raises(InputError) as err:
            load_counters([f])
        assert str(err.value).startswith(f"{f}: ") and said in str(err.value), err.value
