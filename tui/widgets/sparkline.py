"""One-line sparklines in block characters, on a scale shared by several series so that a slow
replica's line stands above its peers' (nan: no data in that window, drawn as a space)."""

from __future__ import annotations

from perftriage.tui.lazy import np

BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values, lo: float | None = None, hi: float | None = None) -> str:
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    if not ok.any():
        return " " * len(v)
    lo = float(np.nanmin(v)) if lo is None else lo
    hi = float(np.nanmax(v)) if hi is None else hi
    span = hi - lo
    filled = np.where(ok, v, lo)
    idx = np.zeros(len(v), np.int64) if span <= 0 else np.clip(((filled - lo) / span * (len(BLOCKS) - 1)).round(), 0,
                                                               len(BLOCKS) - 1).astype(np.int64)
    return "".join(BLOCKS[i] if o else " " for i, o in zip(idx.tolist(), ok.tolist()))
