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
    stream: tuple[int, int] | None = None  # (stream_id, stream_instance_id) its packets name
    first_ts: int | None = None  # the clock value (cycles) of its first whole packet's beginning...
    last_ts: int | None = None  # ...and of its last whole packet's end (None: no 64-bit timestamps)


UNSET = -2  # a stream_instance_id of all ones: babeltrace2 reads it as "none" and numbers the stream itself


def _field(head: bytes, order: str, where: tuple[int, int] | None) -> int:
    """A header field's value; -1 when the layout has no such field, UNSET when all its bits are set."""
    if where is None:
        return -1
    off, width = where
    v = int.from_bytes(head[off: off + width], "little" if order == "<" else "big")
    return UNSET if v == (1 << (8 * width)) - 1 else v


def check_stream(path: Path, layout: PacketLayout) -> StreamCheck:
    size = path.stat().st_size
    if size == 0:
        return StreamCheck(path, 0, 0, 0, None)
    fmt = {4: "I", 8: "Q"}
    ids = [w for w in (layout.stream_id, layout.stream_instance_id, layout.timestamp_begin, layout.timestamp_end)
           if w is not None]
    need = max(layout.packet_size_offset + layout.packet_size_bytes,
               layout.content_size_offset + layout.content_size_bytes, *(o + w for o, w in ids))
    off = packets = 0
    o = layout.byte_order
    stream = None
    stamped = (layout.timestamp_begin is not None and layout.timestamp_end is not None
               and layout.timestamp_begin[1] == 8 and layout.timestamp_end[1] == 8)
    first_ts = last_ts = None

    def result(problem=None):
        return StreamCheck(path, size, off, packets, problem, stream, first_ts, last_ts)

    with open(path, "rb") as f:
        while off < size:
            f.seek(off)
            head = f.read(need)
            if len(head) < need:
                return result(f"cut short inside the packet header at byte {off:,}")
            if layout.magic_offset is not None:
                magic = struct.unpack_from(o + "I", head, layout.magic_offset)[0]
                if magic != PACKET_MAGIC:
                    return result(f"no packet magic at byte {off:,} (corrupt data)")
            psize = struct.unpack_from(o + fmt[layout.packet_size_bytes], head, layout.packet_size_offset)[0]
            csize = struct.unpack_from(o + fmt[layout.content_size_bytes], head, layout.content_size_offset)[0]
            # the content holds at least the header fields read here (babeltrace2 2.0.4 aborts
            # on a content_size smaller than its packet header)
            if psize == 0 or psize % 8 or csize > psize or csize < need * 8:
                return result(f"packet at byte {off:,} declares impossible sizes")
            if UNSET in (_field(head, o, layout.timestamp_begin), _field(head, o, layout.timestamp_end)):
                # babeltrace2 2.0.4 takes all ones for "no time" and fails an assertion (abort)
                return result(f"packet at byte {off:,} has a timestamp of all ones (corrupt data)")
            this = (_field(head, o, layout.stream_id), _field(head, o, layout.stream_instance_id))
            if stream is None:
                stream = this
            elif this != stream:
                return result(f"packet at byte {off:,} names another stream ({_ids_text(this)}, the file's "
                              f"first packet {_ids_text(stream)}): corrupt data")
            if off + psize // 8 > size:
                return result(f"cut short: packet at byte {off:,} needs {psize // 8:,} bytes, "
                              f"only {size - off:,} remain")
            if stamped:
                if first_ts is None:
                    first_ts = _field(head, o, layout.timestamp_begin)
                last_ts = _field(head, o, layout.timestamp_end)
            off += psize // 8
            packets += 1
    return result()


def _ids_text(ids: tuple[int, int]) -> str:
    return f"stream_id {ids[0]}" + (f", instance {ids[1]}" if ids[1] >= 0 else ", instance unset" if ids[1] == UNSET
                                    else "")


def same_stream_twice(checks: list[StreamCheck]) -> list[StreamCheck]:
    """The files that name a stream an earlier file already names (babeltrace2 2.0.4 aborts on
    "Duplicate stream ID"): each comes back with its problem, and with no bytes to read."""
    seen: dict[tuple[int, int], Path] = {}
    out = []
    numbered = any(c.stream is not None and c.stream[1] >= 0 for c in checks)
    for c in checks:
        if c.stream is None or c.stream[1] == -1:
            continue  # no instance id in the layout: babeltrace2 tells streams apart by file
        if c.stream[1] == UNSET:
            if numbered:  # babeltrace2's own number for it may be one a file already uses
                out.append(StreamCheck(c.path, c.size, 0, 0, "stream_instance_id unset (all ones) while the other "
                                                             "stream files number theirs: corrupt data, not read",
                                       c.stream))
            continue
        first = seen.setdefault(c.stream, c.path)
        if first != c.path:
            out.append(StreamCheck(c.path, c.size, 0, 0, f"names the same stream ({_ids_text(c.stream)}) as "
                                                         f"{first.name}: corrupt data, not read", c.stream))
    return out


def salvage_view(trace_path: Path, stream_files, checks: list[StreamCheck],
                 metadata_text: str | None = None) -> tuple[tempfile.TemporaryDirectory, Path]:
    """A temporary trace folder: metadata and whole streams linked, damaged ones cut to whole
    packets; the metadata written there instead when it is given (CTF 2's, translated)."""
    tmp = tempfile.TemporaryDirectory(prefix="perftriage-salvage-")
    view = Path(tmp.name) / trace_path.name
    view.mkdir()
    if metadata_text is None:
        os.symlink((trace_path / "metadata").resolve(), view / "metadata")
    else:
        (view / "metadata").write_text(metadata_text, encoding="utf-8")
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

