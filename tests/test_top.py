"""top's batch output (procps) as per-thread resource time series: real recordings of a thread
pool with one worker that starts doing three times the work (tests/data/top/README.md), the
forms top writes, and what the thread analysis says of them."""

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
from perftriage.analysis.threads.series import read_thread_metrics

from conftest import ROOT

DATA = ROOT / "tests" / "data" / "top"
POOL = DATA / "top-H.txt.gz"
END = 1_795_796_800  # a fixed last change: 2026-11-27 16:26:40 UTC (the recording's last block: 16:18:32)


def _copy(tmp_path, edit=lambda t: t, name="top.txt", end=END):
    p = tmp_path / name
    p.write_text(edit(gzip.decompress(POOL.read_bytes()).decode()))
    os.utime(p, (end, end))
    return p


def test_a_thread_pool_read_from_top(tmp_path):
    p = _copy(tmp_path)
    assert sniff_file(p) == "threads"
    ts = read_thread_metrics(p)
    assert ts.n_threads == 9 and sorted(set(ts.groups["pool"])) == ["python", "worker"]
    assert ts.metrics == ["VIRT", "RES", "SHR", "%CPU", "%MEM", "running", "I/O wait"]
    assert ts.units["RES"] == "KiB" and ts.units["%CPU"] == "%"
    t = ts.times(0)
    assert np.all(np.diff(t) > 0.5) and len(t) == 120
    # dated by the file's last change (this machine's clock is UTC): its day, the blocks' times of day
    import re

    h, m, s = map(int, re.findall(r"^top - (\d\d):(\d\d):(\d\d)", p.read_text(), re.M)[-1])
    assert t[-1] == END - END % 86400 + h * 3600 + m * 60 + s
    # changed at 00:10 the next day: the blocks (to 16:18) were the day before
    nxt = END - END % 86400 + 86400 + 600
    assert read_thread_metrics(_copy(tmp_path, name="late.txt", end=nxt)).times(0)[-1] == t[-1]
    assert any("dated by the file's last change" in n for n in ts.notes)
    running = ts.values[:, ts.metrics.index("running")]
    assert set(np.unique(running)) <= {0.0, 1.0} and running.any()


def test_the_busier_worker_is_found():
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(POOL), "--format", "json", "-q"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    found = [f for f in rep["findings"] if f["analysis"] == "threads" and "top down" not in f["title"]]
    assert found and "(worker-5) in pool worker" in found[0]["title"], [f["title"] for f in found]
    assert "%CPU" in found[0]["title"]


def test_processes_scaled_memory_and_damage(tmp_path):
    procs = read_thread_metrics(_copy(tmp_path, lambda t: t.replace("Threads:", "Tasks:"), "procs.txt"))
    assert "process" in procs.groups and "pool" not in procs.groups and procs.kinds == {"process": "program"}

    def scaled(text):  # top scales a field that does not fit: 13.7m, 1.2g
        lines = text.split("\n")
        i = next(k for k, ln in enumerate(lines) if "worker-1" in ln)
        w = lines[i].split()
        w[5] = "13.5m"
        lines[i] = " ".join(w)
        return "\n".join(lines)

    ts = read_thread_metrics(_copy(tmp_path, scaled, "scaled.txt"))
    res = ts.values[:, ts.metrics.index("RES")]
    assert (res == 13.5 * 1024).sum() == 1 and not np.isnan(res).any()
    text = gzip.decompress(POOL.read_bytes()).decode()
    cut = tmp_path / "cut.txt"
    cut.write_text(text[: len(text) // 2 + 11])
    ts = read_thread_metrics(cut)
    assert any("last line is cut" in n for n in ts.notes)
    changed = tmp_path / "changed.txt"  # a field set changed between iterations: no series to make
    i = text.index("%MEM", 2000)
    changed.write_text(text[:i] + "%XYZ" + text[i + 4:])
    with pytest.raises(InputError, match="columns change between iterations"):
        read_thread_metrics(changed)
    head = tmp_path / "head.txt"
    head.write_text("\n".join(text.split("\n")[:7]) + "\n")
    with pytest.raises(InputError, match="holds no task rows") as e:
        read_thread_metrics(head)
    assert "head.txt" in str(e.value) and "\n" not in str(e.value)


def test_top_is_read_in_this_machines_time_zone(tmp_path):
    """In UTC+1 (TZ=CET-1) the file's last change, 16:26:40 UTC, is 17:26:40 there: the last
    block, 16:18:32 on the host's clock, that day, is 15:18:32 UTC."""
    p = _copy(tmp_path)
    code = ("from perftriage.analysis.threads.top import read_top\n"
            f"ts = read_top({str(p)!r})\nprint(ts.times(0)[-1])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                         env={**os.environ, "TZ": "CET-1"})
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.split()[-1]) == END - END % 86400 + 16 * 3600 + 18 * 60 + 32 - 3600
