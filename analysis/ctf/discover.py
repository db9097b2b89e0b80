"""Finding CTF traces under the paths the user gives.

A CTF trace is a folder holding a ``metadata`` file and one data stream file per CPU (LTTng
layout). A session folder (``kernel/`` + ``ust/uid/.../64-bit/``) holds several traces; they are
all found and later read together, merged by time.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from perftriage.analysis.errors import InputError
from perftriage.analysis.units import count_of

# LTTng's stream files: <channel>_<cpu> (kernel: channel0_0; ust: ust_0...)
_STREAM_NAME = re.compile(r"^[A-Za-z][\w-]*_\d+$")
# Packetized metadata starts with this magic (either byte order); text metadata with "/* CTF",
# CTF 2 metadata (JSON fragments) with an ASCII record separator.
_METADATA_MAGIC = (b"\x57\x1d\xd1\x75", b"\x75\xd1\x1d\x57")


@dataclass(frozen=True)
class TraceDir:
    path: Path
    stream_files: tuple[Path, ...]
    problems: tuple[str, ...] = ()  # parts of the input that could not be read (said as partial data)

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
    text = head.lstrip()
    return head[:4] in _METADATA_MAGIC or text.startswith(b"/* CTF") or text.startswith(b"\x1e")  # RS: CTF 2 JSON


def _walk(p: Path, onerror=None):
    """os.walk through linked folders too (a session folder whose traces are links to where they
    were recorded), each real folder once: a link back up does not loop."""
    seen: set[str] = set()
    for root, dirs, files in os.walk(p, onerror=onerror, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        yield root, dirs, files


def looks_like_ctf(path: str | os.PathLike) -> bool:
    """True if ``path`` is a folder that holds a CTF trace at any depth (cheap check)."""
    p = Path(path)
    if not p.is_dir():
        return False
    for root, dirs, files in _walk(p):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if "metadata" in files and is_ctf_metadata(Path(root) / "metadata"):
            return True
    return False


def find_traces(paths) -> list[TraceDir]:
    """All CTF traces under ``paths`` (folders), sorted by path. Raises InputError naming the
    path when a path does not exist, is not a folder, or holds no usable trace."""
    found: dict[Path, TraceDir] = {}
    for raw in paths:
        if isinstance(raw, str) and "://" in raw:
            raise InputError(raw, "a server, not a CTF trace folder (a Prometheus server's counters are read by "
                                  "perftriage report or open)")
        p = Path(raw)
        if not p.exists():
            raise InputError(p, "no such file or folder")
        if not p.is_dir():
            if p.name == "metadata":
                p = p.parent
            else:
                raise InputError(p, "not a CTF trace folder (a CTF trace is a folder with a 'metadata' file)")
        before = len(found)
        lost: list[str] = []  # what under this path cannot be read: said, never silently left out

        def unlistable(err: OSError) -> None:
            lost.append(f"{err.filename}: cannot be listed ({err.strerror or err}): not read")

        here = []
        for root, dirs, files in _walk(p, onerror=unlistable):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "index")
            root_p = Path(root)
            if "metadata" not in files:
                orphans = [f for f in files if _STREAM_NAME.match(f)]
                if orphans:
                    lost.append(f"{root_p}: {count_of(len(orphans), 'stream files')} ({', '.join(sorted(orphans)[:3])}) without a "
                                "metadata file: not read")
                continue
            if not is_ctf_metadata(root_p / "metadata"):
                raise InputError(root_p / "metadata", "not CTF metadata (neither packetized nor text '/* CTF' header nor "
                                                      "CTF 2 JSON fragments)")
            names = sorted(f for f in files if f != "metadata" and not f.startswith("."))
            streams = tuple(root_p / f for f in names if (root_p / f).is_file())
            skipped = [f for f in names if not (root_p / f).is_file()]
            if not streams:
                raise InputError(root_p, "CTF trace has a metadata file but no stream files")
            problems = tuple(f"{root_p / f}: not a readable regular file (a broken or looping link?): not read"
                             for f in skipped)
            here.append((root_p, streams, problems))
        for i, (root_p, streams, problems) in enumerate(here):
            found[root_p.resolve()] = TraceDir(root_p, streams, problems + (tuple(lost) if i == 0 else ()))
        if len(found) == before:
            if lost:
                raise InputError(p, "no CTF trace could be read: " + lost[0])
            raise InputError(p, "no CTF trace found (no 'metadata' file in this folder or below)")
    return [found[k] for k in sorted(found)]
