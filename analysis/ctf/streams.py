"""Checking CTF stream files packet by packet, and salvaging the whole packets of damaged ones.

babeltrace2 refuses a whole trace when one stream file ends in the middle of a packet (a copy
cut short, a disk that filled up). Here each stream file is walked by its packet headers
(packet_size from the layout the metadata declares); when one is cut short, the trace is read
through a temporary view where that file holds only its whole packets. The originals are never
written to; the view lives in a temporary folder and says what was dropped.
"""

from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .metadata import PacketLayout

PACKET_MAGIC = 0xC1FC1FC1


@dataclass(frozen=True)
class StreamCheck:
    path: Path
    size: int
    good_bytes: int  # bytes in whole packets from the start of the file
    packets: int
    problem: str | None  # None when the file is whole


def check_stream(path: Path, layout: PacketLayout) -> StreamCheck:
    size = path.stat().st_size
    if size == 0:
        return StreamCheck(path, 0, 0, 0, None)
    fmt = {4: "I", 8: "Q"}
    need = max(layout.packet_size_offset + layout.packet_size_bytes,
               layout.content_size_offset + layout.content_size_bytes)
    off = packets = 0
    o = layout.byte_order
    with open(path, "rb") as f:
        while off < size:
            f.seek(off)
            head = f.read(need)
            if len(head) < need:
                return StreamCheck(path, size, off, packets, f"cut short inside the packet header at byte {off:,}")
            if layout.magic_offset is not None:
                magic = struct.unpack_from(o + "I", head, layout.magic_offset)[0]
                if magic != PACKET_MAGIC:
                    return StreamCheck(path, size, off, packets, f"no packet magic at byte {off:,} (corrupt data)")
            psize = struct.unpack_from(o + fmt[layout.packet_size_bytes], head, layout.packet_size_offset)[0]
            csize = struct.unpack_from(o + fmt[layout.content_size_bytes], head, layout.content_size_offset)[0]
            # the content holds at least the header fields read here (babeltrace2 2.0.4 aborts
            # on a content_size smaller than its packet header)
            if psize == 0 or psize % 8 or csize > psize or csize < need * 8:
                return StreamCheck(path, size, off, packets, f"packet at byte {off:,} declares impossible sizes")
            if off + psize // 8 > size:
                return StreamCheck(path, size, off, packets,
                                   f"cut short: packet at byte {off:,} needs {psize // 8:,} bytes, "
                                   f"only {size - off:,} remain")
            off += psize // 8
            packets += 1
    return StreamCheck(path, size, off, packets, None)


def salvage_view(trace_path: Path, stream_files, checks: list[StreamCheck]) -> tuple[tempfile.TemporaryDirectory, Path]:
    """A temporary trace folder: metadata and whole streams linked, damaged ones cut to whole packets."""
    tmp = tempfile.TemporaryDirectory(prefix="perftriage-salvage-")
    view = Path(tmp.name) / trace_path.name
    view.mkdir()
    os.symlink((trace_path / "metadata").resolve(), view / "metadata")
    by_path = {c.path: c for c in checks}
    for f in stream_files:
        c = by_path.get(f)
        if c is None or c.problem is None:
            os.symlink(f.resolve(), view / f.name)
        elif c.good_bytes > 0:
            with open(f, "rb") as src, open(view / f.name, "wb") as dst:
                remaining = c.good_bytes
                while remaining:
                    buf = src.read(min(remaining, 1 << 20))
                    if not buf:
                        break
                    dst.write(buf)
                    remaining -= len(buf)
        # a file without a single whole packet is left out of the view
    return tmp, view

