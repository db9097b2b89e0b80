from __future__ import annotations

import json
import os

import pytest

from perftriage.analysis.atomic import atomic_write
from perftriage.analysis.errors import InputError
from perftriage.analysis.findings import Finding, Report, Table, clean_text, render, report_markdown


def sample_report() -> Report:
    return Report(
        inputs=["/traces/a"],
        created="2026-11-22T10:00:00+00:00",
        findings=[
            Finding("requests", "Slowest requests", "php #3 /cart", score=2.0, evidence=["median 1 ms"],
                    tables=[Table(["id", "uri"], [[3, "/a|b"], [4, "\x1b[31mred\x1b[0m"]])],
                    parameters={"top": 20, "eps": 0.025}),
            Finding("trace", "The tracer lost events", "host k", score=9.0, severity="warning", evidence=["12 lost"]),
        ],
        notes=["partial data: k_1 cut short"],
    )


def test_markdown_ranks_by_severity_then_score_and_is_clean_for_tickets():
    md = report_markdown(sample_report())
    assert md.index("The tracer lost events") < md.index("Slowest requests")
    assert "\x1b" not in md
    assert "| 3 | /a\\|b |" in md  # pipes escaped so the table keeps its columns
    assert "| 4 | red |" in md
    assert "`eps=0.025`" in md and "`top=20`" in md
    assert "partial data: k_1 cut short" in md
    # every table row has the same number of cells as its header
    for block in md.split("\n\n"):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        if rows:
            counts = {len(r.replace("\\|", "")[1:-1].split("|")) for r in rows}
            assert len(counts) == 1, block


def test_json_round_trips():
    data = json.loads(render(sample_report(), "json"))
    assert [f["title"] for f in data["findings"]] == ["The tracer lost events", "Slowest requests"]
    assert data["findings"][1]["parameters"] == {"top": 20, "eps": 0.025}


def test_bad_severity_is_refused():
    with pytest.raises(ValueError):
        Finding("x", "t", "s", severity="bad")


def test_clean_text_strips_escapes_and_controls():
    assert clean_text("a\x1b[1mb\x1b[0m\x07c") == "ab c"


def test_atomic_write_replaces_whole_file_and_keeps_old_one_on_failure(tmp_path):
    target = tmp_path / "out.md"
    atomic_write(target, "first\n")
    assert target.read_text() == "first\n"

    with pytest.raises(TypeError):
        atomic_write(target, 12345)  # not str/bytes: the write fails half-way
    assert target.read_text() == "first\n"
    assert sorted(os.listdir(tmp_path)) == ["out.md"]  # no temporary file left behind


def test_atomic_write_refuses_trace_folders_and_input_files(tmp_path):
    trace = tmp_path / "trace"
    (trace / "kernel").mkdir(parents=True)
    with pytest.raises(InputError, match="inside the input trace folder"):
        atomic_write(trace / "kernel" / "x.md", "x", protect=[trace])
    data = tmp_path / "in.csv"
    data.write_text("a,b\n")
    with pytest.raises(InputError, match="overwrite an input file"):
        atomic_write(data, "x", protect=[data])
    assert data.read_text() == "a,b\n"
    with pytest.raises(InputError, match="does not exist"):
        atomic_write(tmp_path / "nope" / "x.md", "x")


def test_new_folder_appears_whole_or_not_at_all(tmp_path):
    import pytest

    from perftriage.analysis.atomic import new_folder
    from perftriage.analysis.errors import InputError

    out = tmp_path / "sample"
    with pytest.raises(RuntimeError):
        with new_folder(out) as tmp:
            (tmp / "half.csv").write_text("x")
            raise RuntimeError("generator failed")
    assert not out.exists() and list(tmp_path.iterdir()) == []
    with new_folder(out) as tmp:
        (tmp / "whole.csv").write_text("x")
    assert (out / "whole.csv").read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["sample"]
    with pytest.raises(InputError, match="not empty"):
        new_folder(out)


def test_a_device_or_a_pipe_is_written_into_not_replaced(tmp_path):
    # renamed over, /dev/null became a regular file (as root, where one may: make test did it
    # each run through 'report -o /dev/null'); a named pipe is read by whoever waits on it
    import stat
    import subprocess
    import sys
    import threading

    from conftest import ROOT

    fifo = tmp_path / "findings.md"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    atomic_write(fifo, "# findings\n")
    reader.join(10)
    assert got == ["# findings\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["findings.md"]  # no temporary file beside it
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(ROOT / "sample_traces" / "fleet"), "-q",
                        "-o", os.devnull], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
