"""Large CSV files through polars' multi-threaded columnar reader, for the readers of any method
(counters, thread metrics, spans): the module only for files big enough to pay for its import (0.2 s),
and a frame whose columns are read as numbers or as text as the caller says."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .inputs import is_encoded, is_utf16, open_data

FROM_BYTES = 8 << 20  # files from this size are read by polars (its import costs 0.2 s)


def polars_for(path: Path, from_bytes: int = FROM_BYTES):
    """The polars module for a file of ``from_bytes`` or more; None for a smaller file, UTF-16
    text or without polars."""
    try:
        if Path(path).stat().st_size < from_bytes or is_utf16(path):  # UTF-16: the readers' own paths decode it
            return None
        import polars as pl  # noqa: PLC0415
    except (ImportError, OSError):
        return None
    return pl


def frame(pl, path: Path, header: list[str], numeric: set[int]):
    """The CSV as a polars frame, columns c0, c1..., those in ``numeric`` read as numbers from the
    start and the others as text (inferred, a column whose first rows hold 'nan' is text, and the
    whole file went through numpy's parser after polars': measured on a 73 MB wide export with
    gaps written 'nan', 2.7 s against 0.5 s). Raises what polars raises."""
    names_in = [f"c{i}" for i in range(len(header))]
    kinds = [pl.Float64 if i in numeric else pl.String for i in range(len(header))]
    if not is_encoded(path):
        return pl.read_csv(path, has_header=True, new_columns=names_in, schema_overrides=kinds)  # mapped, not copied
    with open_data(path, binary=True) as f:
        return pl.read_csv(f, has_header=True, new_columns=names_in, schema_overrides=kinds)


def sorted_codes(col) -> tuple[list, np.ndarray]:
    """A polars column of labels (no nulls) as its distinct values, sorted, and each row's index
    into them."""
    return col.unique().sort().to_list(), (col.rank("dense").to_numpy() - 1).astype(np.int64)
