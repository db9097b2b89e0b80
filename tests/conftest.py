from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PERFTRIAGE_SHARED", ROOT.parent / "shared"))
REAL = SHARED / "real_traces"

# babeltrace2 2.0.4 event counts, from real_traces/PROVENANCE.md
REAL_TRACE_EVENTS = {
    "tc-many-threads": 240_644,
    "tracevizlab-apt": 280_137,
    "tracevizlab-wget-k-20180802-115043": 28_383,
    "tracevizlab-wget-k-20180802-115406": 17_702,
    "tracevizlab-cat-kern-ust": 102_305,
    "tracevizlab-php-ust": 1_871,
}


def real_trace(name: str) -> Path:
    p = REAL / name
    if not p.is_dir():
        pytest.fail(f"real trace {p} is missing: the tests expect ../shared/real_traces beside the clone")
    return p


def first_finding_row(*paths) -> str:
    """``perftriage report PATH...`` run as a user runs it: its summary's first row (the finding
    a ticket reader meets first); the run must succeed."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    out = subprocess.run([sys.executable, "-m", "perftriage", "report", *map(str, paths)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = [ln for ln in out.stdout.splitlines() if ln.startswith("| 1 |")]
    assert rows, out.stdout[:3000]
    return rows[0]


def has_bt2() -> bool:
    from perftriage.analysis.ctf.bt2_support import bt2_available

    return bt2_available()


needs_bt2 = pytest.mark.skipif(not has_bt2(), reason="python3-bt2 not installed (apt-get install python3-bt2)")
needs_babeltrace2 = pytest.mark.skipif(shutil.which("babeltrace2") is None, reason="babeltrace2 CLI not installed")


@pytest.fixture
def copy_trace(tmp_path):
    """A writable copy of a real trace (the originals are never written to)."""

    def make(name: str) -> Path:
        dst = tmp_path / name
        shutil.copytree(real_trace(name), dst)
        return dst

    return make
