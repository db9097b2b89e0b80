"""Helpers shared by the benchmarks: timing, peak memory of a child process, trace cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("PERFTRIAGE_BENCH_DIR", ROOT / "bench-traces"))


def timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


PEAK_SNIPPET = """
def _peak_rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) * 1024
    return 0
"""


def child_peak_rss(code: str) -> tuple[str, float, int]:
    """Run Python code in a fresh interpreter; returns (stdout, seconds, its peak RSS in bytes).

    The peak is the child's own VmHWM (high-water mark of its address space since exec): rusage's
    ru_maxrss would also count the parent's pages shared before the exec."""
    wrapped = PEAK_SNIPPET + code + "\nprint('__PEAK__', _peak_rss())\n"
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True, cwd=ROOT)
    dt = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    lines = out.stdout.splitlines()
    peak = int(lines[-1].split()[1])
    return "\n".join(lines[:-1]), dt, peak


def babeltrace2_dummy_seconds(trace: Path) -> float | None:
    exe = shutil.which("babeltrace2")
    if exe is None:
        return None
    t = time.perf_counter()
    subprocess.run([exe, str(trace), "-o", "dummy"], check=True, capture_output=True)
    return time.perf_counter() - t


def webserver_trace(requests: int, seed: int = 11, db_host: str = "") -> Path:
    """A generated trace kept between runs (bench-traces/ is git-ignored); with ``db_host``, the
    database on a second traced host (a folder per host, packets between them)."""
    from perftriage.analysis.sim.sample import write_webserver_sample
    from perftriage.analysis.sim.webserver import DEFAULT_MIX, WebServerConfig

    path = CACHE / (f"webserver-{requests}-s{seed}" + (f"-{db_host}" if db_host else ""))
    if not (path / "ground_truth.json").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        if path.exists():
            shutil.rmtree(path)
        cfg = WebServerConfig(requests=requests, seed=seed)
        if db_host:
            cfg = WebServerConfig(requests=requests, seed=seed, db_host=db_host, db_clock_offset_ms=3.2,
                                  db_clock_drift_ppm=12.0, mix={**DEFAULT_MIX, "slow_db": 0.02})
        write_webserver_sample(path, cfg)
    return path


def row(label: str, value: str, ref: str = "") -> None:
    print(f"  {label:<52} {value:>16}  {ref}")
