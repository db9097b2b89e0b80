"""Execution graphs moved from the heap to memory-mapped files, for a process that keeps them
only to answer later questions (the app's analysing child, which walks the path of the request
the user opens).

A graph's interval and system-call tables (about 25 bytes per event) are written to files in the
temporary directory, mapped read-only, and the files unlinked at once: nothing is left on disk
when the process ends, however it ends. The pages then belong to the page cache, not to the
process: the kernel reads back the few a path touches and may drop them again under memory
pressure, where heap pages would have to stay. On a temporary directory in memory (tmpfs) that
would save nothing, so the graphs stay as they are; likewise when a write fails (a full disk).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .graph import ExecGraph

ARRAYS = ExecGraph.TABLES
MEMORY_FILESYSTEMS = {"tmpfs", "ramfs", "devtmpfs"}
MIN_BYTES = 1 << 20  # smaller graphs stay on the heap (a file and a mapping each is not worth it)


def filesystem_of(path: str | Path, mounts: str = "/proc/self/mounts") -> str | None:
    """The type of the file system ``path`` is on (the longest mount point above it), None when
    the mount table cannot be read."""
    try:
        lines = Path(mounts).read_text().splitlines()
    except OSError:
        return None
    target = os.path.realpath(path)
    best, kind = "", None
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, parts[2]
    return kind


def move_to_disk(graphs: dict[str, ExecGraph], directory: str | None = None, min_bytes: int = MIN_BYTES) -> int:
    """Map the graphs' large arrays from files, in place; the bytes moved off the heap (0 when the
    temporary directory is in memory, cannot be written, or the graphs are small)."""
    total = sum(g.nbytes for g in graphs.values())
    if total < min_bytes:
        return 0
    base = directory or tempfile.gettempdir()
    if filesystem_of(base) in MEMORY_FILESYSTEMS:
        return 0
    try:
        folder = tempfile.mkdtemp(prefix="perftriage-graphs-", dir=base)
    except OSError:
        return 0
    moved = 0
    try:
        for i, g in enumerate(graphs.values()):
            mapped = {}
            for name in ARRAYS:
                a = np.ascontiguousarray(getattr(g, name))
                if a.nbytes == 0:
                    continue
                path = os.path.join(folder, f"{i}-{name}.npy")
                np.save(path, a)
                mapped[name] = np.load(path, mmap_mode="r")
                os.unlink(path)
            for name, m in mapped.items():  # all of the graph's files written: swap them in together
                moved += getattr(g, name).nbytes
                setattr(g, name, m)
    except OSError:
        pass  # a full disk, say: what is mapped stays mapped, the rest on the heap
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return moved
