"""One pass over a set of traces feeding several consumers.

Each analysis that reads events is a :class:`ChunkConsumer`: it says which events and fields it
needs (a :class:`ReadSpec`), is bound to the reader (to learn event codes), sees every chunk in
time order, and returns its result at the end. Their specs are merged so the trace is decoded
once, with only the union of what they asked for.
"""

from __future__ import annotations

from typing import Protocol, Sequence

from perftriage.analysis.errors import TraceReadError

from .reader import CtfReader
from .spec import ProgressFn, ReadSpec


class ChunkConsumer(Protocol):
    def read_spec(self) -> ReadSpec: ...

    def bind(self, reader: CtfReader) -> None: ...

    def consume(self, chunk) -> None: ...

    def finish(self): ...


def merge_specs(specs: Sequence[ReadSpec], chunk_events: int | None = None) -> ReadSpec:
    fields: dict[str, list[str]] = {}
    events: list[str] | None = []
    for s in specs:
        for pat, names in s.fields.items():
            have = fields.setdefault(pat, [])
            have.extend(n for n in names if n not in have)
        if s.events is None:
            events = None
        elif events is not None:
            events.extend(e for e in s.events if e not in events)
    kw = {}
    if chunk_events:
        kw["chunk_events"] = chunk_events
    elif specs:
        kw["chunk_events"] = min(s.chunk_events for s in specs)
    return ReadSpec(fields={k: tuple(v) for k, v in fields.items()}, events=events, **kw)


class PassResult:
    def __init__(self, reader: CtfReader, results: list, error: TraceReadError | None):
        self.reader = reader
        self.results = results
        self.error = error


def read_once(
    paths,
    consumers: Sequence[ChunkConsumer],
    progress: ProgressFn | None = None,
    chunk_events: int | None = None,
    threaded: bool = True,
    host_names: dict[str, str] | None = None,
    decoders: int = 1,
) -> PassResult:
    """Read ``paths`` once, feed every chunk to every consumer, return their results.

    A read that stops part-way (truncated trace...) still finishes the consumers on what was
    read; the error is returned beside the results so the caller can say the data is partial.
    ``decoders``: decoding processes allowed (the stream files shared out among them: split.py)."""
    spec = merge_specs([c.read_spec() for c in consumers], chunk_events)
    reader = CtfReader(paths, spec, progress=progress, host_names=host_names, decoders=decoders)
    reader.threaded = reader.threaded and threaded  # decoding in a thread of its own beside the consumers
    for c in consumers:
        c.bind(reader)
    error = None
    try:
        for chunk in reader.chunks():
            for c in consumers:
                c.consume(chunk)
    except TraceReadError as exc:
        error = exc
    return PassResult(reader, [c.finish() for c in consumers], error)
