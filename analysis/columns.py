"""Columnar event chunks: numpy arrays, one per column, strings interned to integer codes.

Readers produce :class:`EventChunk` objects; analyses consume them chunk by chunk. No Python
object is ever created per trace event outside the reader's inner loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Value of an integer field column on rows whose event does not carry that field.
MISSING = np.iinfo(np.int64).min


class StringPool:
    """Interns strings to dense integer codes (0, 1, 2, ...)."""

    __slots__ = ("_codes", "strings")

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self.strings: list[str] = []

    def code(self, s: str) -> int:
        c = self._codes.get(s)
        if c is None:
            c = self._codes[s] = len(self.strings)
            self.strings.append(s)
        return c

    def find(self, s: str) -> int:
        """Code of ``s`` or -1 if it was never interned."""
        return self._codes.get(s, -1)

    def __getitem__(self, code: int) -> str:
        return self.strings[code] if code >= 0 else ""

    def __len__(self) -> int:
        return len(self.strings)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Vector of codes -> object array of strings ("" for -1)."""
        table = np.array(self.strings + [""], dtype=object)
        codes = np.asarray(codes)
        return table[np.where(codes < 0, len(self.strings), codes)]


@dataclass
class EventChunk:
    """A run of events in time order.

    ``event`` codes index the reader's catalogue of canonical event names; ``host`` indexes its
    host list. ``tid``/``pid`` are -1 where unknown. ``fields`` maps a payload (or context) field
    name to an int64 column (:data:`MISSING` on rows without it), a float64 column (NaN) or, for
    strings, an int32 column of :class:`StringPool` codes (-1).
    """

    ts: np.ndarray
    cpu: np.ndarray
    host: np.ndarray
    event: np.ndarray
    tid: np.ndarray
    pid: np.ndarray
    fields: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ts)

    def take(self, index) -> "EventChunk":
        """Rows selected by a boolean mask or an index array."""
        return EventChunk(
            ts=self.ts[index],
            cpu=self.cpu[index],
            host=self.host[index],
            event=self.event[index],
            tid=self.tid[index],
            pid=self.pid[index],
            fields={k: v[index] for k, v in self.fields.items()},
        )

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.ts, self.cpu, self.host, self.event, self.tid, self.pid)) + sum(
            a.nbytes for a in self.fields.values()
        )

    @staticmethod
    def concat(chunks: list["EventChunk"]) -> "EventChunk":
        """Concatenate chunks; a field missing from some chunks is filled with its missing value."""
        if not chunks:
            return empty_chunk()
        names: dict[str, np.dtype] = {}
        for c in chunks:
            for k, v in c.fields.items():
                names.setdefault(k, v.dtype)
        fields = {}
        for k, dt in names.items():
            parts = [c.fields[k] if k in c.fields else missing_column(dt, len(c)) for c in chunks]
            fields[k] = np.concatenate(parts)
        return EventChunk(
            ts=np.concatenate([c.ts for c in chunks]),
            cpu=np.concatenate([c.cpu for c in chunks]),
            host=np.concatenate([c.host for c in chunks]),
            event=np.concatenate([c.event for c in chunks]),
            tid=np.concatenate([c.tid for c in chunks]),
            pid=np.concatenate([c.pid for c in chunks]),
            fields=fields,
        )


def missing_column(dtype, n: int) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(n, np.nan, dtype)
    if dtype == np.int32:
        return np.full(n, -1, dtype)
    return np.full(n, MISSING, dtype)


def empty_chunk() -> EventChunk:
    return EventChunk(
        ts=np.empty(0, np.int64),
        cpu=np.empty(0, np.int32),
        host=np.empty(0, np.int16),
        event=np.empty(0, np.int32),
        tid=np.empty(0, np.int32),
        pid=np.empty(0, np.int32),
    )
