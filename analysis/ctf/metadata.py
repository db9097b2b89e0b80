"""CTF 1.8 metadata: checked and decoded before babeltrace2 sees it.

babeltrace2 2.0.4 loops forever on a truncated packetized metadata file, so every metadata file
is walked packet by packet here first, and a bad one is refused with one line. The decoded TSDL
text also tells us the packet layout (for salvaging truncated stream files) and the event names
a trace defines.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

from perftriage.analysis.errors import InputError

from .ctf2 import Ctf2Error, is_ctf2_text, tsdl_from_ctf2

TSDL_MAGIC = 0x75D11D57
_HEADER = 37  # magic, uuid[16], checksum, content_size, packet_size, 5 scheme/version bytes


def read_metadata_text(path: str | Path) -> str:
    """The TSDL text of a metadata file (packetized or plain, CTF 1.8 or CTF 2: ctf2.py);
    InputError if it is damaged."""
    return read_metadata(path)[0]


def read_metadata(path: str | Path) -> tuple[str, bool]:
    """(TSDL text, whether the file is CTF 2 metadata, translated to TSDL) of a metadata file."""
    path = Path(path)
    text = _metadata_text(path)
    if not is_ctf2_text(text):
        return text, False
    try:
        return tsdl_from_ctf2(text), True
    except Ctf2Error as exc:
        raise InputError(path, str(exc)) from None


def _metadata_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    if not data:
        raise InputError(path, "metadata file is empty")
    for order in ("<", ">"):
        if len(data) >= 4 and struct.unpack(order + "I", data[:4])[0] == TSDL_MAGIC:
            return _depacketize(path, data, order)
    text = data.decode("utf-8", errors="replace")
    if not text.lstrip().startswith("/* CTF") and not is_ctf2_text(text):
        raise InputError(path, "not CTF metadata (no packet magic, no '/* CTF' header, no CTF 2 JSON fragments)")
    return text


def _depacketize(path: Path, data: bytes, order: str) -> str:
    out = []
    off = 0
    n = len(data)
    while off < n:
        if n - off < _HEADER:
            raise InputError(path, f"metadata is truncated: {n - off} stray bytes at offset {off}")
        magic = struct.unpack_from(order + "I", data, off)[0]
        if magic != TSDL_MAGIC:
            raise InputError(path, f"metadata is corrupt: no packet magic at offset {off}")
        content_bits, packet_bits = struct.unpack_from(order + "II", data, off + 24)
        comp, enc, csum = data[off + 32], data[off + 33], data[off + 34]
        if comp or enc or csum:
            raise InputError(path, "metadata uses compression, encryption or checksums, which CTF readers do not support")
        if packet_bits % 8 or content_bits % 8 or content_bits > packet_bits or content_bits < _HEADER * 8:
            raise InputError(path, f"metadata is corrupt: packet at offset {off} has content {content_bits} bits "
                                   f"and size {packet_bits} bits")
        if off + packet_bits // 8 > n:
            raise InputError(path, f"metadata is truncated: packet at offset {off} needs {packet_bits // 8} bytes, "
                                   f"only {n - off} remain")
        out.append(data[off + _HEADER: off + content_bits // 8])
        off += packet_bits // 8
    return b"".join(out).decode("utf-8", errors="replace")


_EVENT_NAME = re.compile(r'event\s*\{[^}]*?\bname\s*=\s*"([^"]+)"', re.S)


_CLOCK = re.compile(r"\bclock\s*\{(.*?)\}\s*;", re.S)


def c_integer(text: str) -> int | None:
    """A TSDL integer literal as C reads it: ``0x`` hexadecimal, a leading 0 octal, else decimal;
    None where it is none (``0457...9``, an octal with a 9: a damaged digit)."""
    neg = text.startswith("-")
    digits = text[neg:]
    try:
        if digits[:2].lower() == "0x":
            v = int(digits[2:], 16)
        elif len(digits) > 1 and digits[0] == "0":
            v = int(digits[1:], 8)
        else:
            v = int(digits, 10)
    except ValueError:
        return None
    return -v if neg else v


def clock_origin_ns(text: str) -> int | None:
    """Nanoseconds from the origin of the trace's clock to its zero, when the trace has one clock
    counting nanoseconds (what LTTng writes: ``freq = 1000000000``, ``offset_s``, ``offset``);
    None otherwise (several clocks, another frequency: babeltrace2's range query says)."""
    blocks = _CLOCK.findall(re.sub(r"/\*.*?\*/", "", text, flags=re.S))
    if len(blocks) != 1:
        return None
    body = blocks[0]

    def num(name: str, default: int) -> int | None:
        m = re.search(rf"\b{name}\s*=\s*(-?(?:0x[0-9a-fA-F]+|\d+))\s*;", body)
        if m is None:
            return default if re.search(rf"\b{name}\s*=", body) is None else None
        return c_integer(m.group(1))

    freq, offset_s, offset = num("freq", 1_000_000_000), num("offset_s", 0), num("offset", 0)
    if freq != 1_000_000_000 or offset_s is None or offset is None:
        return None
    return offset_s * 1_000_000_000 + offset


def event_names(text: str) -> list[str]:
    return _EVENT_NAME.findall(text)


_ENV = re.compile(r"\benv\s*\{([^}]*)\}", re.S)


def env_value(text: str, key: str) -> str | None:
    """A string or integer from the metadata's env block (``hostname``, ``domain``...)."""
    m = _ENV.search(text)
    if not m:
        return None
    v = re.search(r"\b" + re.escape(key) + r'\s*=\s*(?:"([^"]*)"|(-?\d+))\s*;', m.group(1))
    return None if v is None else (v.group(1) if v.group(1) is not None else v.group(2))


def env_hostname(text: str) -> str | None:
    """The host a trace was recorded on: LTTng's ``hostname``, perf's ``host``."""
    name = env_value(text, "hostname")
    return name if name is not None else env_value(text, "host")


# -- packet layout, enough to walk LTTng stream files -------------------------------------------

_TYPEALIAS = re.compile(r"typealias\s+integer\s*\{([^}]*)\}\s*:=\s*([\w ]+?)\s*;", re.S)
_SIZE = re.compile(r"\bsize\s*=\s*(\d+)")
_ALIGN = re.compile(r"\balign\s*=\s*(\d+)")
_INLINE_INT = re.compile(r"integer\s*\{([^}]*)\}")
_BYTE_ORDER = re.compile(r"trace\s*\{[^}]*?byte_order\s*=\s*(\w+)", re.S)


@dataclass(frozen=True)
class PacketLayout:
    byte_order: str  # "<" or ">"
    content_size_offset: int  # byte offset of content_size (bits) in a packet
    content_size_bytes: int
    packet_size_offset: int
    packet_size_bytes: int
    magic_offset: int | None  # byte offset of the 0xC1FC1FC1 magic, if the header has one
    #: (offset, width) of the header's stream_id and stream_instance_id, when it has them: every
    #: packet of a stream file names the same stream (babeltrace2 2.0.4 aborts when one does not)
    stream_id: tuple[int, int] | None = None
    stream_instance_id: tuple[int, int] | None = None
    timestamp_begin: tuple[int, int] | None = None  # the packet context's clock values
    timestamp_end: tuple[int, int] | None = None


def _int_types(text: str) -> dict[str, tuple[int, int]]:
    types = {}
    for body, name in _TYPEALIAS.findall(text):
        size = _SIZE.search(body)
        align = _ALIGN.search(body)
        if size:
            types[" ".join(name.split())] = (int(size.group(1)), int(align.group(1)) if align else 8)
    return types


def _struct_body(text: str, start: int) -> str | None:
    i = text.find("{", start)
    if i < 0:
        return None
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1: j]
    return None


def _inline_int(m: re.Match) -> str:
    """``integer { size = 32; align = 8; ... }`` -> a type token ``__int32_8``."""
    size = _SIZE.search(m.group(1))
    align = _ALIGN.search(m.group(1))
    return f"__int{size.group(1) if size else 0}_{align.group(1) if align else 8} "


def _members(body: str, types: dict) -> list[tuple[str, int, int, int]]:
    """(name, size bits, align bits, count) of the leading simple integer members, in order."""
    out = []
    body = _INLINE_INT.sub(_inline_int, body)
    for stmt in body.split(";"):
        stmt = " ".join(stmt.split())
        if not stmt:
            continue
        m = re.match(r"(.+?)\s+(\w+)(\[(\d+)\])?$", stmt)
        if not m:
            break
        tname, name, _, count = m.groups()
        inline = re.fullmatch(r"__int(\d+)_(\d+)", tname)
        if inline:
            size, align = int(inline.group(1)), int(inline.group(2))
        elif tname in types:
            size, align = types[tname]
        else:
            out.append((name, 0, 0, 0))  # not a plain integer: offsets after it are unknown
            break
        out.append((name, size, align, int(count) if count else 1))
    return out


def packet_fields(text: str) -> tuple[str, dict[str, tuple[int, int]]]:
    """The byte order ("<" or ">") and, for each leading plain integer field of the packet header
    and context (magic, stream_id, packet_size, content_size, timestamp_begin, cpu_id...), its
    byte offset and width in every packet."""
    types = _int_types(text)
    bo = _BYTE_ORDER.search(text)
    order = ">" if bo and bo.group(1) in ("be", "network") else "<"
    h = re.search(r"packet\.header\s*:=\s*struct", text)
    header = _members(_struct_body(text, h.end()) or "", types) if h else []
    c = re.search(r"struct\s+packet_context\s*\{", text)
    if c:
        ctx = _members(_struct_body(text, c.start()) or "", types)
    else:
        c = re.search(r"packet\.context\s*:=\s*struct", text)
        ctx = _members(_struct_body(text, c.end()) or "", types) if c else []
    bit = 0
    found: dict[str, tuple[int, int]] = {}
    for name, size, align, count in header + ctx:
        # a width of 1, 2, 4 or 8 bytes, on a whole byte (damaged metadata says 24 bits, align 0:
        # offsets after it are not known here, the fields not read; babeltrace2 says what is wrong)
        if size not in (8, 16, 32, 64) or align <= 0 or align % 8:
            break
        bit = (bit + align - 1) // align * align
        found.setdefault(name, (bit // 8, size // 8))
        bit += size * count
    return order, found


def packet_layout(text: str) -> PacketLayout | None:
    """Where packet_size and content_size sit in each packet, or None if the layout is not the
    simple integer-only layout LTTng writes."""
    order, found = packet_fields(text)
    if "packet_size" not in found or "content_size" not in found:
        return None
    return PacketLayout(
        byte_order=order,
        content_size_offset=found["content_size"][0],
        content_size_bytes=found["content_size"][1],
        packet_size_offset=found["packet_size"][0],
        packet_size_bytes=found["packet_size"][1],
        magic_offset=found["magic"][0] if "magic" in found else None,
        stream_id=found.get("stream_id"),
        stream_instance_id=found.get("stream_instance_id"),
        timestamp_begin=found.get("timestamp_begin"),
        timestamp_end=found.get("timestamp_end"),
    )
