"""Reading a whole JSON span file, with the one-line errors perftriage gives for bad input."""

from __future__ import annotations

import json
from pathlib import Path

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import json_or_lines, open_data


def load_json(path: Path):
    try:
        with open_data(path) as f:
            return json.load(f)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None


def search_documents(path: Path) -> list | None:
    """Documents as Elasticsearch or OpenSearch give them back: a search's answer (its
    ``hits.hits``), elasticdump's lines or one document a line (a line cut or damaged: None in its
    place), a JSON array, or one document; each hit's ``_source`` in its place. None where the
    file is one JSON value that holds no documents (a search's hits that are no array, a number)."""
    docs, whole = json_or_lines(path)
    if whole:
        doc = docs[0]
        if isinstance(doc, dict):
            hits = doc.get("hits")
            doc = hits.get("hits") if isinstance(hits, dict) else [doc]
        if not isinstance(doc, list):
            return None
        docs = doc
    return [d["_source"] if isinstance(d, dict) and isinstance(d.get("_source"), dict) else d for d in docs]
