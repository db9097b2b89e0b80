"""Measured values that cannot be measurements: infinite, or so large that their squares overflow.

A counter or a thread metric of ``inf`` or ``1e308`` is a broken exporter or a damaged file, not
a reading; kept, it turns every mean, variance and covariance it enters into inf or NaN (with a
numpy warning on the user's terminal and findings computed from nothing). Such values are read as
missing, and the readers say how many there were.
"""

from __future__ import annotations

import numpy as np

#: no counter or resource metric comes near this; 1e100 squared still fits a float64
LIMIT = 1e100


def drop_impossible(values: np.ndarray) -> int:
    """In place: infinite values and values beyond +-LIMIT become NaN (missing). How many did."""
    bad = (values > LIMIT) | (values < -LIMIT)  # NaN compares false; two boolean masks, no float copy
    n = int(bad.sum())
    if n:
        values[bad] = np.nan
    return n


def impossible_note(n: int) -> str:
    return (f"{n:,} value{'' if n == 1 else 's'} infinite or beyond 1e100 read as missing "
            "(no measurement is that large: a broken exporter or a damaged file)")


def number(text: str) -> float:
    """A number as a tool printed it: with a decimal point or, in a German or French locale, a
    decimal comma (12,50); NaN (missing) where it is none."""
    try:
        return float(text)
    except ValueError:
        try:
            return float(text.replace(",", "."))
        except ValueError:
            return np.nan


def numbers(cells) -> np.ndarray:
    """Cells as numbers (each as ``number`` reads it), NaN where a cell holds none or one that is
    not finite: a column of a tool's output, whole at once where every cell is a plain number."""
    try:
        out = np.array(cells, dtype=np.float64)
    except (ValueError, TypeError):
        out = np.array([number(str(x)) for x in cells], dtype=np.float64)
    out[~np.isfinite(out)] = np.nan
    return out
