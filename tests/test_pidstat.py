"""pidstat's reports (sysstat) as per-thread resource time series: real recordings of a thread
pool and of worker processes with one deviating member each (tests/data/pidstat/README.md), the
forms pidstat writes them in, and what the thread analysis says of them."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import sniff_file
from perftriage.analysis.threads.covariance import resolution_floor
from perftriage.analysis.threads.deviation import sums_of_others
from perftriage.analysis.threads.pidstat import read_pidstat
from perftriage.analysis.threads.series import read_thread_metrics

from conftest import ROOT

DATA = ROOT / "tests" / "data" / "pidstat"
THREADS_H, BLOCKS, PROCS = DATA / "pidstat-h.txt.gz", DATA / "pidstat-blocks.txt.gz", DATA / "pidstat-procs.txt.gz"


def _text(path) -> str:
    return gzip.decompress(path.read_bytes()).decode()


def test_both_forms_of_one_recording_read_the_same():
    h, b = read_pidstat(THREADS_H), read_pidstat(BLOCKS)
    assert sniff_file(THREADS_H) == sniff_file(BLOCKS) == "threads"
    assert h.n_threads == b.n_threads == 9 and h.ids == b.ids
    assert set(h.groups["pool"]) == {"worker", "python"} and h.groups["process"][0] == "python3[11125]"
    assert len(h.time) == len(b.time) == 9 * 60
    assert (h.time == b.time).all() and h.time[0] == 1795792587.0  # 2026-11-27 15:16:27 (11/27/26 in its first line)
    for m in ("%usr", "%CPU", "kB_wr/s"):  # -u and -d in both (two pidstats: each sampled at its own instants)
        for i in range(h.n_threads):
            x, y = h.samples(i)[:, h.metrics.index(m)], b.samples(i)[:, b.metrics.index(m)]
            assert abs(x.mean() - y.mean()) <= 0.1 * max(x.mean(), 1.0), (m, h.ids[i])
    assert "cswch/s" in h.metrics and "cswch/s" not in b.metrics  # -w only in the first
    assert h.units["kB_wr/s"] == "kB/s" and h.units["%usr"] == "%" and h.units["RSS"] == "KiB"
    worker5 = h.ids.index("11171")
    writes = h.samples(worker5)[:, h.metrics.index("kB_wr/s")]
    assert writes[:15].sum() == 0 and (writes[25:] > 0).mean() > 0.8  # from 20 s on


@pytest.mark.parametrize("path,who", [(THREADS_H, "Thread 11171 (worker-5) in pool worker"),
                                      (BLOCKS, "Thread 11171 (worker-5) in pool worker"),
                                      (PROCS, "Process python3[12644] in program python3")])
def test_the_deviating_worker_is_the_one_finding(path, who):
    """The worker that writes is named, by its writes, and nothing else: two threads whose
    %system never left 0 where the others' did once or twice in 60 s were a cluster of their own
    (their covariance singular in %system, and in %CPU - %usr)."""
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(path), "--format", "json", "-q"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    found = [f for f in rep["findings"] if f["analysis"] == "threads" and "top down" not in f["title"]]
    assert [f["title"].split(":")[0] for f in found] == [who], [f["title"] for f in found]
    assert found[0]["title"].split(": ", 1)[1].startswith("kB_wr/s mean ")
    assert any("%CPU" in n and "add up to" in n for f in rep["findings"] for n in f["evidence"]) or \
        any("%CPU" in n and "add up to" in n for n in rep["notes"])


def _variant(tmp_path, name, edit):
    p = tmp_path / name
    p.write_text(edit(_text(THREADS_H)))
    return p


def test_twelve_hour_clocks_epoch_seconds_other_dates_and_decimal_commas(tmp_path):
    base = read_pidstat(THREADS_H)

    def twelve(text):  # 15:16:27 -> 03:16:27 PM
        return "\n".join(f"0{int(ln[:2]) - 12}{ln[2:8]} PM{ln[8:]}" if ln[:2].isdigit() else ln for ln in text.split("\n"))

    def epoch(text):  # older sysstat's -h: seconds since the epoch
        out = []
        for ln in text.split("\n"):
            if ln[:2].isdigit():
                h, m, s = int(ln[:2]), int(ln[3:5]), int(ln[6:8])
                ln = f"{1795737600 + h * 3600 + m * 60 + s}{ln[8:]}"
            out.append(ln)
        return "\n".join(out)

    def german(text):  # LC_ALL=de_DE: 27.11.2026, decimal commas
        import re

        head, _, body = text.partition("\n")
        return head.replace("11/27/26", "27.11.2026") + "\n" + re.sub(r"(\d)\.(\d\d)\b", r"\1,\2", body)

    for edit in (twelve, epoch, german, lambda t: t.replace("11/27/26", "2026-11-27", 1),
                 lambda t: t.replace("11/27/26", "27/11/26", 1)):
        ts = read_pidstat(_variant(tmp_path, "v.txt", edit))
        assert ts.ids == base.ids and np.array_equal(ts.time, base.time) and np.array_equal(ts.values, base.values, equal_nan=True)


def test_past_midnight_is_the_next_day(tmp_path):
    def late(text):  # 15:16:27 .. 15:17:26 -> 23:59:30 .. 00:00:29
        out = []
        for ln in text.split("\n"):
            if ln[:2].isdigit():
                t = (int(ln[3:5]) * 60 + int(ln[6:8]) - (16 * 60 + 27) + 86370) % 86400
                ln = f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}{ln[8:]}"
            out.append(ln)
        return "\n".join(out)

    ts = read_pidstat(_variant(tmp_path, "late.txt", late))
    t = ts.times(0)
    assert np.all(np.diff(t) == 1.0) and t[0] == 1795737600 + 86370  # 2026-11-27 23:59:30, then on into the 28th


def test_damaged_reports(tmp_path):
    text = _text(THREADS_H)
    cut = tmp_path / "cut.txt"
    cut.write_text(text[: len(text) // 2 + 37])  # cut in the middle of a row
    ts = read_pidstat(cut)
    assert ts.n_threads == 9 and any("its last line is cut" in n for n in ts.notes)
    complete = text[: len(text) // 2 + 37].split("\n")[:-1]
    assert len(ts.time) == sum("|__" in ln for ln in complete)  # each whole thread row, none of the cut one
    head_only = tmp_path / "head.txt"
    head_only.write_text("\n".join(text.split("\n")[:3]) + "\n")
    with pytest.raises(InputError, match="holds no task rows") as e:
        read_thread_metrics(head_only)
    assert "head.txt" in str(e.value) and "\n" not in str(e.value)
    bad_date = tmp_path / "date.txt"
    bad_date.write_text(text.replace("11/27/26", "99/99/99", 1))
    with pytest.raises(InputError, match="no date it can read"):
        read_pidstat(bad_date)


def test_a_metric_the_others_add_up_to():
    rng = np.random.default_rng(1)
    usr, sys_, other = rng.random(200), rng.random(200), rng.random(200)
    v = np.column_stack([usr, sys_, other, np.round(usr + sys_, 2)])
    assert sums_of_others(v, np.ones(4, bool)).tolist() == [False, False, False, True]
    v[:, 3] = usr + rng.random(200)  # not a sum
    assert not sums_of_others(v, np.ones(4, bool)).any()


def test_resolution_floor_only_where_a_value_is_held():
    steady = np.zeros((60, 2))
    steady[:, 1] = np.linspace(0, 1, 60)  # continuous: no floor
    blips = steady.copy()
    blips[[5, 40], 0] = 1.0  # whole steps over a held 0
    f = resolution_floor([steady, blips], np.ones(2))
    assert f[:, 1].tolist() == [0.0, 0.0] and f[0, 0] == pytest.approx(1 / 60) and f[1, 0] == pytest.approx(1 / 60)


def test_the_hosts_clock_is_read_in_this_machines_time_zone():
    """pidstat prints the host's clock; perftriage runs on that host as a rule: its times are read
    in this machine's zone. In UTC+1 (TZ=CET-1) the first sample, 15:16:27 by the
    report, is 14:16:27 UTC; the note says the zone."""
    code = ("from perftriage.analysis.threads.pidstat import read_pidstat\n"
            f"ts = read_pidstat({str(THREADS_H)!r})\nprint(ts.time[0]); print(ts.notes[0])")
    for tz, want, zone in (("UTC0", 1795792587.0, "(UTC)"), ("CET-1", 1795792587.0 - 3600, "(UTC+01:00)")):  # POSIX zones: no tzdata needed
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                             env={**os.environ, "TZ": tz})
        assert out.returncode == 0, out.stderr
        first, note = out.stdout.splitlines()[:2]
        assert float(first) == want and note.endswith(f"read in this machine's time zone {zone}"), (tz, out.stdout)
