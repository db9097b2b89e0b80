"""What an analysis asks a CTF reader for (:class:`ReadSpec`: the events to keep and the fields to
decode into columns) and what the reader tells about each trace (:class:`TraceMeta`) and its
progress (:class:`ReadProgress`)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

DEFAULT_CHUNK_EVENTS = 1 << 17


@dataclass(frozen=True)
class ReadSpec:
    """What an analysis asks the reader for.

    ``fields`` maps a canonical event name or a glob (``syscall_exit_*``) to payload or context
    field names to decode into columns named after the field. A dotted name reaches inside
    structures and variants (``network_header.transport_header.seq``: the selected option of
    each variant on the way); it decodes to an integer column, MISSING where an event's variant
    holds no such member, and an array of integers to one integer (elements big-endian, e.g. an
    IPv4 address; wider than 63 bits, e.g. IPv6, folded to 63 bits). ``events``: globs of
    canonical names to keep (None keeps every event). Fields nobody asked for are never decoded.
    """

    fields: Mapping[str, Sequence[str]] = field(default_factory=dict)
    events: Sequence[str] | None = None
    chunk_events: int = DEFAULT_CHUNK_EVENTS

    def fields_for(self, name: str) -> list[str]:
        out: list[str] = []
        for pat, names in self.fields.items():
            if pat == name or fnmatch.fnmatchcase(name, pat):
                out.extend(n for n in names if n not in out)
        return out

    def keeps(self, name: str) -> bool:
        if self.events is None:
            return True
        return any(p == name or fnmatch.fnmatchcase(name, p) for p in self.events)


@dataclass
class TraceMeta:
    """What the trace's metadata says about one trace folder."""

    path: str
    hostname: str = "?"
    domain: str = "?"
    tracer: str = "?"
    env: dict = field(default_factory=dict)
    begin_ns: int | None = None
    end_ns: int | None = None
    size: int = 0
    cpus: set = field(default_factory=set)
    discarded_events: int = 0
    discarded_events_unknown: int = 0  # discarded-event records whose count was not known
    discarded_packets: int = 0
    problems: list = field(default_factory=list)  # damage found and worked around (partial data)
    notes: list = field(default_factory=list)  # what else a reader of the findings should know of it
    defined_events: tuple = ()  # raw event names the metadata declares
    ctf_version: str = "1.8"  # "2": JSON metadata, read through its TSDL translation (ctf2.py)


@dataclass(frozen=True)
class ReadProgress:
    events: int
    bytes_done: int  # estimated from the time position within each trace's time range
    bytes_total: int


ProgressFn = Callable[[ReadProgress], None]
