"""A large file of one record per line read by two processes at once: this one reads the lines
of the first half, a forked child those of the second into a builder of its own, which comes
back through a pipe (analysis/frames.py) and is appended after the first half's spans
(:meth:`SpanBuilder.extend`): the same table as one process reading it all (the same rows, codes
and problems; the problems' few examples perhaps in another order), in about half the time on
two cores (one core decodes a collector's OTLP export at ~130 MB/s, one request a line with a
resource per span at ~130 MB/s too but 300 k spans/s).

Only for a plain file (a compressed one is decompressed in memory first and cannot be cut by
position) of at least ``SPLIT_MIN`` bytes, when two cores may be used (``--jobs``) and the
platform forks. The child opens the file on its own (a shared descriptor would share the
position), never writes anywhere but the pipe, and ends with ``os._exit``. When it dies before
its builder came back (killed, out of memory), this process reads the second half itself.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from perftriage.analysis.cores import available_cores
from perftriage.analysis.frames import receive, send

from .table import SpanBuilder

SPLIT_MIN = 64 << 20  # bytes: below, the fork and the copy back cost more than a second core gains


def split_at(path: Path, f, start: int, jobs: int | None) -> int | None:
    """Where the second half of a file's lines begins (a line start after the middle of
    [start, end of file)), or None when the file is read by one process."""
    if (jobs or available_cores()) < 2 or not hasattr(os, "fork") or not hasattr(f, "fileno"):
        return None
    try:
        size = os.fstat(f.fileno()).st_size
    except (OSError, ValueError):  # an in-memory file (decompressed gzip)
        return None
    if size - start < SPLIT_MIN:
        return None
    with open(path, "rb") as g:
        g.seek(start + (size - start) // 2)
        g.readline()  # to the end of the line the middle falls in
        mid = g.tell()
    return mid if start < mid < size else None


def read_in_halves(path: Path, f, b: SpanBuilder, mid: int, read_lines) -> None:
    """The lines of ``f`` from its position to ``mid`` into ``b`` here, those from ``mid`` on in
    a child; ``read_lines(f, builder, end)`` reads lines from f's position up to byte ``end``
    (None: to the end of the file)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; checked through the parent
        os.close(r)
        status = 0
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            child = SpanBuilder()
            with open(path, "rb") as g:
                g.seek(mid)
                read_lines(g, child, None)
            send(w, ("spans", child))
        except BaseException as exc:  # noqa: BLE001 (said to the parent, which raises it)
            try:
                send(w, ("raise", exc))
            except Exception:  # noqa: BLE001 (an exception that does not pickle)
                send(w, ("raise", RuntimeError(f"{type(exc).__name__}: {exc}")))
            status = 1
        finally:
            os._exit(status)
    os.close(w)
    frame = None
    try:
        read_lines(f, b, mid)
        frame = receive(r)
    finally:
        os.close(r)
        if frame is None:  # the child is not done (this process failed) or died
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.waitpid(pid, 0)
    if frame is None:  # the child died: the second half here
        f.seek(mid)
        read_lines(f, b, None)
        return
    kind, item = frame
    if kind == "raise":
        raise item
    b.extend(item)
