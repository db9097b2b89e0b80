"""Writing user files atomically, and never inside a trace folder."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .errors import InputError


def is_stream(target: Path) -> bool:
    """Whether ``target`` is there and not a regular file nor a folder: a device, a pipe or a socket
    (/dev/null, /dev/stdout, a named pipe), written into as it is, never replaced."""
    try:
        mode = target.stat().st_mode  # through links: /dev/stdout is one
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def check_target(path: str | os.PathLike, protect=()) -> Path:
    """Raise InputError if ``path`` cannot or must not be written (checked before long work)."""
    target = Path(path)
    if is_stream(target):
        return target
    parent = target.parent if str(target.parent) else Path(".")
    resolved_parent = parent.resolve()
    for p in protect:
        pp = Path(p).resolve()
        if pp == target.resolve():
            raise InputError(target, "refusing to overwrite an input file")
        if pp.is_dir() and (resolved_parent == pp or pp in resolved_parent.parents):
            raise InputError(target, f"refusing to write inside the input trace folder {p}")
    if not parent.is_dir():
        raise InputError(target, "the folder to write into does not exist")
    if target.is_dir():
        raise InputError(target, "is a folder, not a file")
    if not os.access(parent, os.W_OK):
        raise InputError(target, "the folder is not writable")
    return target


def atomic_write(path: str | os.PathLike, data: str | bytes, protect=()) -> Path:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one.

    The data goes to a temporary file in the same folder, is flushed to disk, then renamed over
    the target; a device, pipe or socket (/dev/null, /dev/stdout) is written into as it is.
    ``protect``: folders (e.g. the input traces) that must never be written into."""
    target = check_target(path, protect)
    if is_stream(target):  # renamed over, /dev/null would become a file (as root, where one may)
        with open(target, "wb" if isinstance(data, bytes) else "w",
                  **({} if isinstance(data, bytes) else {"encoding": "utf-8", "newline": "\n"})) as f:
            f.write(data)
        return target
    parent = target.parent if str(target.parent) else Path(".")
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": "\n"})) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target


class new_folder:
    """A folder written whole or not at all: ``with new_folder(out) as tmp:`` writes into a hidden
    sibling that is renamed to ``out`` when the block ends without error (removed otherwise).
    ``out`` must not exist, or be an empty folder."""

    def __init__(self, out: str | os.PathLike):
        self.out = Path(out)
        if self.out.exists() and (not self.out.is_dir() or any(self.out.iterdir())):
            raise InputError(self.out, "already exists and is not empty: choose a new folder (nothing was written)")
        parent = self.out.parent if str(self.out.parent) else Path(".")
        if not parent.is_dir():
            raise InputError(self.out, "the folder to create it in does not exist")
        self.tmp = parent / f".{self.out.name}.partial-{os.getpid()}"

    def __enter__(self) -> Path:
        import shutil  # noqa: PLC0415

        shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp.mkdir()
        return self.tmp

    def __exit__(self, exc_type, exc, tb) -> bool:
        import shutil  # noqa: PLC0415

        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return False
        if self.out.exists():
            self.out.rmdir()
        os.replace(self.tmp, self.out)
        return False
