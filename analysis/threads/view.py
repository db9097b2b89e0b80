"""What the Threads pane draws, computed here: the dendrogram as text lines, and an
abstraction's metrics over time beside the majority's (the paper's Fig. 2/6)."""

from __future__ import annotations

import numpy as np

from .deviation import LevelResult
from .series import ThreadSeries


def dendrogram_lines(res: LevelResult, width: int = 60) -> list[tuple[str, bool]]:
    """The Ward tree, top down, one line per node: (text, ranked?). Internal nodes show their
    height and AU p-value; leaves their name."""
    if res.Z is None:
        return [(n, False) for n in res.names]
    k = res.k
    Z = res.Z
    au = res.boot.au if res.boot is not None else np.full(len(Z), np.nan)
    ranked = set(res.ranked_items())
    out: list[tuple[str, bool]] = []

    def walk(node: int, prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else ("└─" if last else "├─")
        if node < k:
            out.append((f"{prefix}{branch}{res.names[node]}"[:width], node in ranked))
            return
        i = node - k
        a = f"AU {au[i] * 100:.0f}" if np.isfinite(au[i]) else "AU -"
        out.append((f"{prefix}{branch}┬ h {Z[i, 2]:.3g} · {a} · {int(Z[i, 3])}"[:width], False))
        kids = [int(Z[i, 0]), int(Z[i, 1])]
        kids.sort(key=lambda c: 1 if c < k else int(Z[c - k, 3]))  # small side first, as the ranking goes
        # "· " where a tree would have blanks: leading blanks are dropped by the renderer
        child_prefix = prefix + ("" if top else ("· " if last else "│ "))
        for n, c in enumerate(kids):
            walk(c, child_prefix, n == len(kids) - 1, False)

    walk(2 * k - 2, "", True, True)
    return out


def item_series(ts: ThreadSeries, res: LevelResult, item: int, bins: int = 60):
    """Per metric of the level: the abstraction's values over its lifetime and the mean of the
    majority (abstractions not ranked), both as means over ``bins`` equal slices of each
    abstraction's samples (threads of a group are averaged sample by sample)."""
    cols = [ts.metrics.index(m) for m in res.metrics]
    ranked = set(res.ranked_items())
    majority = [i for i in range(res.k) if i not in ranked and i != item] or [i for i in range(res.k) if i != item]

    def series_of(a: int) -> np.ndarray:
        xs = [ts.samples(i)[:, cols] for i in res.members[a]]
        n = min(len(x) for x in xs)
        x = np.nanmean(np.stack([y[:n] for y in xs]), axis=0) if len(xs) > 1 else xs[0]
        b = np.minimum((np.arange(len(x)) * bins) // max(1, len(x)), bins - 1)
        out = np.full((bins, len(cols)), np.nan)
        counts = np.bincount(b, minlength=bins)
        for j in range(len(cols)):
            s = np.bincount(b, weights=np.nan_to_num(x[:, j]), minlength=bins)
            out[:, j] = np.where(counts > 0, s / np.maximum(counts, 1), np.nan)
        return out

    mine = series_of(item)
    maj = np.nanmean(np.stack([series_of(a) for a in majority]), axis=0) if majority else np.full_like(mine, np.nan)
    return res.metrics, mine, maj
