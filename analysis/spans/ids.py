"""Span and request ids as 64-bit integers, whatever their textual form."""

from __future__ import annotations

import base64
import binascii
import hashlib

_HEX = set("0123456789abcdefABCDEF")


def to_id64(s) -> int:
    """A 64-bit signed integer for an id: hex (OpenTelemetry, Jaeger, Zipkin; the low 64 bits of
    longer ids), decimal integers, base64 (protobuf JSON), else a stable hash of the text."""
    if isinstance(s, int):
        v = s
    else:
        s = str(s).strip()
        if not s:
            return 0
        if len(s) in (16, 32) and set(s) <= _HEX:
            v = int(s[-16:], 16)  # fixed-width hex ids, even when all their digits are 0-9
        elif s.lstrip("-").isdigit():
            v = int(s)
        elif len(s) <= 32 and set(s) <= _HEX:
            v = int(s[-16:], 16)
        else:
            try:
                raw = base64.b64decode(s, validate=True)
                v = int.from_bytes(raw[-8:], "big") if raw else 0
            except (binascii.Error, ValueError):
                v = int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), "big")
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= (1 << 63) else v


#: what exports write for "no parent": a root span
ROOT_MARKERS = frozenset(("", "-", "-1", "root", "null", "none", "nil", "undefined", "n/a", "na", "nan", "0x0"))


def is_empty_id(s) -> bool:
    """A parent id that says 'no parent' (a root span): empty, zeros, or a word such as
    ``root``, ``null``, ``-1``."""
    if s is None:
        return True
    t = str(s).strip()
    return set(t) <= {"0"} or t.lower() in ROOT_MARKERS
