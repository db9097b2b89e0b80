"""Python objects through a pipe between a process and the child it forked: one frame per
object, its pickle then its arrays' bytes as they are (pickle protocol 5, out of band: no copy).
Shared by the readers that decode in child processes (ctf/isolated.py, ctf/split.py,
spans/halves.py)."""

from __future__ import annotations

import os
import pickle
import struct

_FRAME = struct.Struct("<Q")


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int) -> bytearray | None:
    out = bytearray(n)
    view = memoryview(out)
    got = 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if not k:
            return None
        got += k
    return out


def send(fd: int, obj) -> None:
    """One frame: the pickle, then the arrays' bytes as they are (out of band: no copy)."""
    buffers: list = []
    data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    _write_all(fd, _FRAME.pack(len(data)) + _FRAME.pack(len(raws)) + b"".join(_FRAME.pack(r.nbytes) for r in raws))
    _write_all(fd, data)
    for r in raws:
        _write_all(fd, r)


def receive(fd: int):
    """One frame (None at the end of the pipe: the writer ended or died before a whole frame)."""
    head = _read_exact(fd, 2 * _FRAME.size)
    if head is None:
        return None
    size, nbuf = _FRAME.unpack_from(head, 0)[0], _FRAME.unpack_from(head, _FRAME.size)[0]
    sizes = _read_exact(fd, nbuf * _FRAME.size) if nbuf else bytearray()
    data = _read_exact(fd, size) if sizes is not None else None
    if data is None:
        return None
    buffers = []
    for i in range(nbuf):
        b = _read_exact(fd, _FRAME.unpack_from(sizes, i * _FRAME.size)[0])
        if b is None:
            return None
        buffers.append(b)
    return pickle.loads(data, buffers=buffers)
