"""Errors the engine raises for bad input: one line, naming the file and what is wrong."""

from __future__ import annotations

import os


class PerftriageError(Exception):
    """Base class: an error meant to be shown to the user as is, on one line."""


class InputError(PerftriageError):
    """A file or folder the user gave cannot be used: ``PATH: what is wrong``."""

    def __init__(self, path: str | os.PathLike | None, problem: str):
        self.path = os.fspath(path) if path is not None else None
        self.problem = " ".join(str(problem).split())
        super().__init__(f"{self.path}: {self.problem}" if self.path else self.problem)

    def __reduce__(self):  # pickled whole: a worker process of a distributed read raises it to the client
        return type(self), (self.path, self.problem)


class TraceReadError(InputError):
    """Reading a trace failed part-way; what was read before the fault was delivered."""

    def __init__(self, path, problem: str, events_read: int = 0):
        self.events_read = events_read
        super().__init__(path, problem)

    def __reduce__(self):
        return type(self), (self.path, self.problem, self.events_read)


class MissingDependency(PerftriageError):
    """An optional system package is not installed (e.g. babeltrace2's Python bindings)."""


#: what a reader raises when a file's content has a shape it did not expect (a number where an
#: object is, a string for a list, values beyond int64, nesting deeper than Python's stack)
SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError, OverflowError, RecursionError,
                UnicodeError, MemoryError)


class reading:
    """``with reading(path, "OTLP JSON"):`` turns any shape error of a reader into one
    :class:`InputError` naming the file (the boundary every reader sits behind)."""

    def __init__(self, path, what: str):
        self.path, self.what = path, what

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None or isinstance(exc, PerftriageError) or not isinstance(exc, SHAPE_ERRORS):
            return False
        detail = "too deeply nested" if isinstance(exc, RecursionError) else \
            "too large to hold in memory" if isinstance(exc, MemoryError) else f"{type(exc).__name__}: {exc}"
        raise InputError(self.path, f"cannot be read as {self.what} ({detail})") from None
