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
