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


class TraceReadError(InputError):
    """Reading a trace failed part-way; what was read before the fault was delivered."""

    def __init__(self, path, problem: str, events_read: int = 0):
        self.events_read = events_read
        super().__init__(path, problem)


class MissingDependency(PerftriageError):
    """An optional system package is not installed (e.g. babeltrace2's Python bindings)."""
