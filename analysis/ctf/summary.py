"""``perftriage info``: what a set of CTF traces holds, from one pass that decodes no payload."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .reader import CtfReader
from .spec import ProgressFn, ReadSpec, TraceMeta


@dataclass
class TraceSummary:
    traces: list[TraceMeta]
    hosts: list[str]
    event_counts: dict[str, int]
    events: int
    begin_ns: int | None
    end_ns: int | None
    error: str | None = None  # set when reading stopped part-way; counts cover what was read
    per_host_events: dict[str, int] = field(default_factory=dict)
    decoder: str = ""  # which decoder read (the C one over libbabeltrace2, or the Python one), and why

    @property
    def duration_s(self) -> float:
        if self.begin_ns is None or self.end_ns is None:
            return 0.0
        return (self.end_ns - self.begin_ns) / 1e9


class EventCounter:
    """Chunk consumer: events per name and per host, and the time span."""

    def __init__(self):
        self.counts = np.zeros(0, np.int64)
        self.host_counts = np.zeros(0, np.int64)
        self.begin = None
        self.end = None
        self.reader: CtfReader | None = None

    def read_spec(self) -> ReadSpec:
        return ReadSpec()

    def bind(self, reader: CtfReader) -> None:
        self.reader = reader

    def consume(self, chunk) -> None:
        c = np.bincount(chunk.event, minlength=len(self.reader.event_names))
        self.counts = np.pad(self.counts, (0, len(c) - len(self.counts))) + c
        h = np.bincount(chunk.host, minlength=len(self.reader.hosts))
        self.host_counts = np.pad(self.host_counts, (0, len(h) - len(self.host_counts))) + h
        if len(chunk):
            if self.begin is None:
                self.begin = int(chunk.ts[0])
            self.end = int(chunk.ts[-1])

    def finish(self) -> TraceSummary:
        reader = self.reader
        names = reader.event_names
        event_counts = {names[i]: int(n) for i, n in enumerate(self.counts) if n}
        return TraceSummary(
            traces=reader.traces,
            hosts=list(reader.hosts),
            event_counts=dict(sorted(event_counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            events=int(self.counts.sum()),
            begin_ns=self.begin,
            end_ns=self.end,
            per_host_events={reader.hosts[i]: int(n) for i, n in enumerate(self.host_counts) if n},
            decoder=reader.decoder_name,
        )


def summarize(paths, progress: ProgressFn | None = None, decoders: int = 1) -> TraceSummary:
    """What the traces under ``paths`` hold, read with up to ``decoders`` decoding processes."""
    from .pipeline import read_once  # noqa: PLC0415

    result = read_once(paths, [EventCounter()], progress=progress, decoders=decoders)
    summary = result.results[0]
    if result.error is not None:
        summary.error = str(result.error)
    return summary


def merge_summaries(parts: list[TraceSummary], order: list[str] | None = None) -> TraceSummary:
    """One summary of traces read apart (a distributed read: one reader per host); traces in
    ``order`` (their paths) when given. Counts add up; the range spans them all."""
    traces = [t for p in parts for t in p.traces]
    if order is not None:
        rank = {path: i for i, path in enumerate(order)}
        traces.sort(key=lambda t: rank.get(t.path, len(rank)))
    counts: dict[str, int] = {}
    per_host: dict[str, int] = {}
    hosts: list[str] = []
    for p in parts:
        for k, v in p.event_counts.items():
            counts[k] = counts.get(k, 0) + v
        for k, v in p.per_host_events.items():
            per_host[k] = per_host.get(k, 0) + v
        hosts.extend(h for h in p.hosts if h not in hosts)
    begins = [p.begin_ns for p in parts if p.begin_ns is not None]
    ends = [p.end_ns for p in parts if p.end_ns is not None]
    errors = [p.error for p in parts if p.error]
    return TraceSummary(
        traces=traces, hosts=hosts, event_counts=dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        events=sum(p.events for p in parts), begin_ns=min(begins) if begins else None,
        end_ns=max(ends) if ends else None, error="; ".join(errors) or None, per_host_events=per_host,
        decoder=parts[0].decoder if parts else "",
    )
