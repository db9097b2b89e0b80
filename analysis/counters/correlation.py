"""PAD's correlation analysis (paper 004, section IV, step 4): the counters that explain a counter
of interest, by Pearson (linear) and Spearman (monotonic) coefficients, |r| >= 0.9 by default.

Scope: over time on one server (its series), or over the fleet (every server at every time
point). Over the fleet Spearman ranks at most ``max_cells`` cells drawn at random (seeded; said
in the result: 20,000 cells put the standard error of rho under 0.01) so that one counter
against hundreds stays interactive; Pearson uses every cell, a block of counters at a time.

Lag: on a server's series (or, over the fleet, on the fleet's mean series) each counter is
also shifted by up to ``max_lag`` points either way; when the best lagged |r| beats the
unlagged one by ``lag_gain`` or more, the lag is reported ("follows by 3 points").
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.units import count_of

from .params import CorrelationParams
from .stats import THREADS, each_block
from .table import CounterSet


MIN_SAMPLES = 3  # fewer samples of the counter of interest: no coefficient means anything


@dataclass
class Correlated:
    counter: int
    pearson: float
    spearman: float
    lag: int = 0  # points; > 0: this counter moves after the counter of interest
    lag_r: float = float("nan")  # Pearson at that lag

    @property
    def strength(self) -> float:
        return max(abs(self.pearson), abs(self.spearman), abs(self.lag_r) if self.lag else 0.0)


@dataclass
class Correlation:
    target: int
    server: int | None  # None: over the fleet
    rows: list[Correlated]  # every other counter, strongest first
    params: CorrelationParams
    cells: int  # samples the coefficients used
    notes: list[str] = field(default_factory=list)

    def strong(self) -> list[Correlated]:
        t = self.params.threshold
        return [r for r in self.rows if abs(r.pearson) >= t or abs(r.spearman) >= t or (r.lag and abs(r.lag_r) >= t)]


def _pearson_rows(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of every row of X with y (both without NaN)."""
    Xc = X - X.mean(axis=1, keepdims=True)
    yc = y - y.mean()
    num = Xc @ yc
    den = np.sqrt((Xc * Xc).sum(axis=1) * (yc @ yc))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / den, 0.0)


def _sorted_ranks(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of X (no NaN): the order that sorts it and the ranks in that order, ties
    sharing their mean rank (1-based, as scipy's rankdata 'average')."""
    n = X.shape[-1]
    o = np.argsort(X, axis=-1)
    xs = np.take_along_axis(X, o, -1)
    idx = np.arange(n)
    new = np.ones(xs.shape, bool)  # the first of a run of equal values
    np.not_equal(xs[..., 1:], xs[..., :-1], out=new[..., 1:])
    first = np.maximum.accumulate(np.where(new, idx, 0), axis=-1)
    last = np.ones(xs.shape, bool)
    last[..., :-1] = new[..., 1:]
    end = np.minimum.accumulate(np.where(last, idx, n)[..., ::-1], axis=-1)[..., ::-1]
    return o, (first + end) / 2 + 1


def _spearman_rows(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman rho of every row of X with y (both without NaN): Pearson's r of their ranks, with
    each row's ranks left in its sorted order and y's ranks gathered to it (no scatter back), a
    block of rows at a time on up to two threads (on 200 rows x 20,000 cells: 0.6 s with scipy's
    rankdata, measured)."""
    oy, ry_sorted = _sorted_ranks(y)
    ry = np.empty(len(y))
    ry[oy] = ry_sorted
    ry -= ry.mean()
    syy = float(ry @ ry)
    out = np.zeros(len(X))

    def work(lo, hi):
        o, rx = _sorted_ranks(X[lo:hi])
        rx -= rx.mean(axis=1, keepdims=True)
        num = np.einsum("ij,ij->i", rx, ry[o])
        den = np.sqrt(np.einsum("ij,ij->i", rx, rx) * syy)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[lo:hi] = np.where(den > 0, num / den, 0.0)

    each_block(work, len(X), max(1, -(-len(X) // (2 * THREADS))))
    return out


def correlate(cs: CounterSet, counter: int, server: int | None = None,
              params: CorrelationParams | None = None) -> Correlation:
    p = params or CorrelationParams()
    C = len(cs.counters)
    notes = []
    have = int(np.isfinite(cs.values[server, counter] if server is not None else cs.values[:, counter]).sum())
    if have < MIN_SAMPLES:  # no coefficient to compute (numpy would warn of empty means on the terminal)
        where = f"on {cs.servers[server]}" if server is not None else "over the fleet"
        return Correlation(counter, server, [], p, have, [
            f"{cs.counters[counter]} has {count_of(have, 'samples')} {where}: too few to correlate "
            f"({MIN_SAMPLES} at least)"])
    if server is not None:
        r_p, r_s, n = _server_coefs(cs.values[server], counter)
        series = cs.values[server]
    else:
        r_p, r_s, n, series = _fleet_coefs(cs, counter, p, notes)
    lags, lag_r = _lags(series, counter, p.max_lag)
    rows = []
    for c in range(C):
        if c == counter:
            continue
        lag, lr = int(lags[c]), float(lag_r[c])
        base = max(abs(r_p[c]), abs(r_s[c]))
        if lag == 0 or abs(lr) < base + p.lag_gain:
            lag, lr = 0, float("nan")
        rows.append(Correlated(c, float(r_p[c]), float(r_s[c]), lag, lr))
    rows.sort(key=lambda r: -r.strength)
    return Correlation(counter, server, rows, p, n, notes)


def _filled(X: np.ndarray) -> np.ndarray:
    """Rows with their gaps filled by the row's mean (a gap then weakens a coefficient, it
    never makes one)."""
    if not np.isnan(X).any():
        return X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nan_to_num(np.nanmean(X, axis=-1, keepdims=True))
    return np.where(np.isnan(X), mean, X)


def _server_coefs(X: np.ndarray, counter: int):
    y = X[counter]
    ok = np.isfinite(y)
    Xo = _filled(X[:, ok])
    return _pearson_rows(Xo, y[ok]), _spearman_rows(Xo, y[ok]), int(ok.sum())


def _fleet_coefs(cs: CounterSet, counter: int, p: CorrelationParams, notes: list):
    S, C, T = cs.values.shape
    y = cs.values[:, counter, :]  # (S, T)
    ok = np.isfinite(y)
    n = int(ok.sum())
    yv = np.where(ok, y, 0.0)
    my = yv.sum() / max(n, 1)
    yc = np.where(ok, y - my, 0.0)
    syy = float((yc * yc).sum())
    r_p = np.zeros(C)
    series = np.zeros((C, T))  # the fleet's mean series of every counter (for the lags)
    okf = ok[:, None, :]

    def work(lo, hi):
        xb = cs.values[:, lo:hi, :]  # (S, b, T), a view
        fin = okf & ~np.isnan(xb)
        x0 = np.where(fin, xb, 0.0)
        tot, n_t = x0.sum(axis=0), fin.sum(axis=0)  # (b, T): the fleet's sum and count at each time
        with np.errstate(divide="ignore", invalid="ignore"):
            series[lo:hi] = tot / n_t
        x0 -= (tot.sum(axis=1) / np.maximum(n_t.sum(axis=1), 1))[None, :, None]
        x0 *= fin  # gaps (and cells where the counter of interest has none) at the mean: no weight
        sxy = np.einsum("sbt,st->b", x0, yc)
        sxx = np.einsum("sbt,sbt->b", x0, x0)
        with np.errstate(divide="ignore", invalid="ignore"):
            r_p[lo:hi] = np.where(sxx * syy > 0, sxy / np.sqrt(sxx * syy), 0.0)

    each_block(work, C, max(1, 16 // THREADS))  # the blocks at once: one block of 16's memory
    cells = np.flatnonzero(ok.ravel())
    if len(cells) > p.max_cells:
        rng = np.random.default_rng(p.seed)
        cells = np.sort(rng.choice(cells, p.max_cells, replace=False))
        notes.append(f"Spearman over {p.max_cells:,} random cells of {n:,}")
    si, ti = cells // T, cells % T
    Xs = _filled(cs.values[si, :, ti].T)  # (C, cells)
    r_s = _spearman_rows(Xs, y[si, ti])
    return r_p, r_s, n, series


def _lags(series: np.ndarray, target: int, max_lag: int):
    """Per counter, the lag in [-max_lag, max_lag] with the largest |Pearson r| against the target
    series, and that r."""
    C, T = series.shape
    best_lag = np.zeros(C, np.int64)
    best_r = np.zeros(C)
    y = series[target]
    for lag in range(-max_lag, max_lag + 1):
        if abs(lag) >= T - 3:
            continue
        # counter value at t + lag against the target at t
        if lag >= 0:
            a, b = y[: T - lag], series[:, lag:]
        else:
            a, b = y[-lag:], series[:, : T + lag]
        ok = np.isfinite(a) & np.isfinite(b).all(axis=0)
        if ok.sum() < 4:
            continue
        r = _pearson_rows(b[:, ok], a[ok])
        better = np.abs(r) > np.abs(best_r) + 1e-12
        best_r[better] = r[better]
        best_lag[better] = lag
    return best_lag, best_r
