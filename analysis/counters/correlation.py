"""PAD's correlation analysis (paper 004, section IV, step 4): the counters that explain a counter
of interest, by Pearson (linear) and Spearman (monotonic) coefficients, |r| >= 0.9 by default.

Scope: over time on one server (its series), or over the fleet (every server at every time
point). Over the fleet Spearman ranks at most ``max_cells`` cells drawn at random (seeded; said
in the result) so that one counter against hundreds stays interactive; Pearson uses every cell.

Lag: on a server's series (or, over the fleet, on the fleet's median series) each counter is
also shifted by up to ``max_lag`` points either way; when the best lagged |r| beats the
unlagged one by ``lag_gain`` or more, the lag is reported ("follows by 3 points").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .table import CounterSet


@dataclass
class CorrelationParams:
    threshold: float = 0.9
    max_lag: int = 10
    lag_gain: float = 0.1
    max_cells: int = 100_000
    seed: int = 0


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


def _ranks(X: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank)."""
    from scipy.stats import rankdata  # noqa: PLC0415

    return rankdata(X, axis=-1)


def correlate(cs: CounterSet, counter: int, server: int | None = None,
              params: CorrelationParams | None = None) -> Correlation:
    p = params or CorrelationParams()
    C = len(cs.counters)
    notes = []
    if server is not None:
        X = cs.values[server]  # (C, T)
        series = X
    else:
        X = cs.values.transpose(1, 0, 2).reshape(C, -1)  # (C, S*T)
        with np.errstate(all="ignore"):
            import warnings  # noqa: PLC0415

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                series = np.nanmedian(cs.values, axis=0)  # (C, T): the fleet's median series
    y_all = X[counter]
    # cells where the counter of interest has a value; other counters' gaps are filled with
    # their mean (a gap then weakens a coefficient, it never makes one)
    ok = np.isfinite(y_all)
    y = y_all[ok]
    Xo = X[:, ok]
    if np.isnan(Xo).any():
        with np.errstate(all="ignore"):
            mean = np.nanmean(Xo, axis=1, keepdims=True)
        Xo = np.where(np.isnan(Xo), np.nan_to_num(mean), Xo)
    r_p = _pearson_rows(Xo, y)
    if server is None and Xo.shape[1] > p.max_cells:
        rng = np.random.default_rng(p.seed)
        pick = np.sort(rng.choice(Xo.shape[1], p.max_cells, replace=False))
        Xs, ys = Xo[:, pick], y[pick]
        notes.append(f"Spearman over {p.max_cells:,} random cells of {Xo.shape[1]:,}")
    else:
        Xs, ys = Xo, y
    r_s = _pearson_rows(_ranks(Xs), _ranks(ys))
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
    return Correlation(counter, server, rows, p, int(len(y)), notes)


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
