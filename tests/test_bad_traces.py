"""Damaged input: one clear line naming the file; what can be read is read; nothing is written."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from perftriage.analysis.ctf.discover import find_traces
from perftriage.analysis.ctf.metadata import read_metadata_text
from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.summary import summarize
from perftriage.analysis.errors import InputError

from conftest import REAL_TRACE_EVENTS, ROOT, needs_bt2, real_trace

pytestmark = needs_bt2


def tree_digest(path) -> str:
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            h.update(p.encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def test_missing_folder():
    with pytest.raises(InputError, match="no such file or folder"):
        find_traces(["/nonexistent/trace"])


def test_folder_without_metadata(copy_trace):
    t = copy_trace("tracevizlab-php-ust")
    (t / "metadata").unlink()
    with pytest.raises(InputError) as e:
        CtfReader([t])
    assert str(t) in str(e.value) and "metadata" in str(e.value)


def test_truncated_metadata_is_refused_instead_of_hanging_babeltrace2(copy_trace):
    t = copy_trace("tracevizlab-php-ust")
    meta = t / "metadata"
    meta.write_bytes(meta.read_bytes()[:3000])
    with pytest.raises(InputError) as e:
        CtfReader([t])
    assert str(meta) in str(e.value) and "truncated" in str(e.value)


def test_garbage_metadata(copy_trace):
    t = copy_trace("tracevizlab-php-ust")
    (t / "metadata").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(InputError, match="not CTF metadata"):
        CtfReader([t])


def test_text_metadata_with_bad_syntax_names_the_trace(copy_trace):
    t = copy_trace("tracevizlab-php-ust")
    text = read_metadata_text(t / "metadata")
    (t / "metadata").write_text(text.replace("event {", "event {{ oops", 1))
    with pytest.raises(InputError) as e:
        CtfReader([t])
    assert str(t) in str(e.value)
    assert "\n" not in str(e.value)


def test_truncated_stream_is_salvaged_and_reported(copy_trace):
    t = copy_trace("tracevizlab-wget-k-20180802-115043")
    stream = t / "kernel" / "k_3"
    size = stream.stat().st_size
    with open(stream, "r+b") as f:
        f.truncate(size - 5000)
    s = summarize([t])
    total = REAL_TRACE_EVENTS["tracevizlab-wget-k-20180802-115043"]
    assert 0 < s.events < total  # the whole packets were read, the cut one was not
    problems = [p for tr in s.traces for p in tr.problems]
    assert len(problems) == 1 and str(stream) in problems[0] and "cut short" in problems[0]


def test_cli_reports_damage_with_exit_code_4_and_never_writes_into_the_trace(copy_trace):
    t = copy_trace("tracevizlab-wget-k-20180802-115043")
    with open(t / "kernel" / "k_1", "r+b") as f:
        f.truncate(100_000)
    before = tree_digest(t)
    r = subprocess.run([sys.executable, "-m", "perftriage", "info", str(t)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 4
    assert "k_1" in r.stderr and "cut short" in r.stderr
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(t), "-o", str(t / "kernel" / "r.md")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3 and "refusing to write inside the input trace folder" in r.stderr
    assert tree_digest(t) == before


def test_empty_file_given_as_input(tmp_path):
    f = tmp_path / "empty.csv"
    f.write_text("")
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(f)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3
    assert r.stderr.strip() == f"perftriage: {f}: file is empty"


def test_without_bt2_ctf_fails_with_one_line_and_exit_5(tmp_path):
    # hide bt2 from a child interpreter
    shim = tmp_path / "nobt2"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text("import sys\nsys.modules['bt2'] = None\n")
    env = dict(os.environ, PYTHONPATH=f"{shim}{os.pathsep}{ROOT}")
    r = subprocess.run([sys.executable, "-m", "perftriage", "info", str(real_trace("tracevizlab-php-ust"))],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 5
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "python3-bt2" in lines[0]
