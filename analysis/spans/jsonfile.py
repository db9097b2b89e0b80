"""Reading a whole JSON span file, with the one-line errors perftriage gives for bad input."""

from __future__ import annotations

import json
from pathlib import Path

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import open_data


def load_json(path: Path):
    try:
        with open_data(path) as f:
            return json.load(f)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None


def load_bytes(path: Path) -> bytes:
    """The file's bytes (decompressed), for a decoder of its own; an error reading it is one line."""
    try:
        with open_data(path, binary=True) as f:
            return f.read()
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None


def json_or_lines(path: Path) -> tuple[list, bool]:
    """A file that is one JSON document, or one a line (NDJSON: a search's dump, an exporter's
    file): its documents, each line that is no JSON (cut, damaged) a None in its place; and
    whether it was one document. No document at all is one line naming the file."""
    text = load_bytes(path).decode("utf-8-sig", "replace")
    try:
        return [json.loads(text)], True
    except json.JSONDecodeError:
        pass
    docs = []
    for ln in text.splitlines():
        if ln.strip():
            try:
                docs.append(json.loads(ln))
            except json.JSONDecodeError:
                docs.append(None)
    if not any(d is not None for d in docs):
        raise InputError(path, "not valid JSON, nor a JSON document a line")
    return docs, False
