"""Finding CTF traces under the paths the user gives.

A CTF trace is a folder holding a ``metadata`` file and one data stream file per CPU (LTTng
layout). A session folder (``kernel/`` + ``ust/uid/.../64-bit/``) holds several traces; they are
all found and later read together, merged by time.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from perftriage.analysis.errors import InputError

# Packetized metadata starts with this magic (either byte order); text metadata with "/* CTF".
_METADATA_MAGIC = (b"\x57\x1d\xd1\x75", b"\x75\xd1\x1d\x57")


@dataclass(frozen=True)
class TraceDir:
    path: Path
    stream_files: tuple[Path, ...]

    @property
    def size(self) -> int:
        return sum(f.stat().st_size for f in self.stream_files)


def is_ctf_metadata(path: Path) -> bool:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a pipe would wait forever for its first byte
            return False
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return head[:4] in _METADATA_MAGIC or head.lstrip().startswith(b"/* CTF")


def looks_like_ctf(path: str | os.PathLike) -> bool:
    """True if ``path`` is a folder that holds a CTF trace at any depth (cheap check)."""
    p = Path(path)
    if not p.is_dir():
        return False
    for root, dirs, files in os.walk(p):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if "metadata" in files and is_ctf_metadata(Path(root) / "metadata"):
            return True
    return False


def find_traces(paths) -> list[TraceDir]:
    """All CTF traces under ``paths`` (folders), sorted by path. Raises InputError naming the
    path when a path does not exist, is not a folder, or holds no usable trace."""
    found: dict[Path, TraceDir] = {}
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputError(p, "no such file or folder")
        if not p.is_dir():
            if p.name == "metadata":
                p = p.parent
            else:
                raise InputError(p, "not a CTF trace folder (a CTF trace is a folder with a 'metadata' file)")
        before = len(found)
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "index")
            if "metadata" not in files:
                continue
            root_p = Path(root)
            if not is_ctf_metadata(root_p / "metadata"):
                raise InputError(root_p / "metadata", "not CTF metadata (neither packetized nor text '/* CTF' header)")
            streams = tuple(
                sorted(
                    root_p / f
                    for f in files
                    if f != "metadata" and not f.startswith(".") and (root_p / f).is_file()
                )
            )
            if not streams:
                raise InputError(root_p, "CTF trace has a metadata file but no stream files")
            found[root_p.resolve()] = TraceDir(root_p, streams)
        if len(found) == before:
            raise InputError(p, "no CTF trace found (no 'metadata' file in this folder or below)")
    return [found[k] for k in sorted(found)]
