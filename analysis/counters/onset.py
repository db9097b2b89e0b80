"""When a series starts to diverge: one change point, fitted two ways in O(n).

- a *step*: y = a before the point, a + delta from it on (a hot partition, a configuration
  change);
- a *hinge*: y = a before the point, a + b (t - point) from it on (a leak, a stuck placement that
  piles work on one server more and more);
- a *jump*: y = a before the point, c + b t from it on (a level that jumps, then keeps growing:
  the timeouts of a server whose work piles up, 0 for hours then hundreds a minute and rising,
  which a hinge fitted from hours before and a step fitted late). It has one parameter more: the
  model is chosen by BIC, so it wins only where it explains much more.

A change that does not follow either shape (a level that jumps, then creeps towards a plateau,
as a server's actor count does once every new actor lands on it) bends the fitted point late:
so the point is then moved back to where the series first leaves its earlier level for good
(``run`` points in a row beyond ``k`` robust standard deviations of the points before), when
that comes earlier.

For every candidate point both models are fitted by least squares through suffix sums (both
have two parameters and the point); the fit with the smallest residual wins. Growth that speeds
up (GC time under memory pressure grows as its cube) bends late: its point comes out late. ``gain`` = 1 - SSE / SSE of a constant: how much of the series'
variation the change explains (0: none, 1: all).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np


@dataclass
class Onset:
    index: int  # first point of the change (into the original series, NaNs included)
    kind: str  # "step" | "ramp"
    gain: float  # 0..1
    before: float  # level before the change
    after: float  # level at the end (ramp) or after the step


def find_onset(y: np.ndarray, min_before: int = 2, refine: bool = True, jump: bool = True) -> Onset | None:
    """``jump``: a jump-and-slope may fit too (off for a series that keeps its daily swing, which a
    model with one parameter more follows instead of the change)."""
    o = _fit(y, min_before, jump)
    return refine_onset(y, o) if o is not None and refine else o


def refine_onset(y: np.ndarray, o: Onset, k: float = 4.0, run: int = 3) -> Onset:
    """``o`` moved back to where ``y`` first leaves its earlier level for good, when earlier."""
    t = _first_departure(np.asarray(y, np.float64), o, k, run)
    return replace(o, index=t) if t is not None and t < o.index else o


def _first_departure(y: np.ndarray, o: Onset, k: float, run: int, window: int = 60) -> int | None:
    pre = y[: o.index]
    pre = pre[np.isfinite(pre)]
    direction = np.sign(o.after - o.before)
    if len(pre) < 8 or direction == 0:
        return None
    level = float(np.median(pre))
    sigma = 1.4826 * float(np.median(np.abs(pre - level)))
    if sigma <= 0:
        sigma = float(np.std(pre)) or 1e-12
    z = np.where(np.isfinite(y), direction * (y - level) / sigma, -np.inf)
    above = z > k
    lo = max(0, o.index - window)
    for t in range(lo, min(len(y) - run + 1, o.index + 1)):
        if above[t:t + run].all():
            return t
    return None


def _fit(y: np.ndarray, min_before: int, jump: bool = True) -> Onset | None:
    y = np.asarray(y, np.float64)
    idx = np.flatnonzero(np.isfinite(y))
    if len(idx) < 2 * min_before + 2:
        return None
    v = y[idx]
    t = idx.astype(np.float64)
    n = len(v)
    sse0 = float(((v - v.mean()) ** 2).sum())
    if sse0 <= 0:
        return None
    # suffix sums over points j >= i (i = candidate change position among the finite points)
    def suffix(a):
        return np.r_[np.cumsum(a[::-1])[::-1], 0.0]

    s1, st, stt, sy, sty = suffix(np.ones(n)), suffix(t), suffix(t * t), suffix(v), suffix(t * v)
    syy = float((v * v).sum())
    Sy = float(v.sum())
    cand = np.arange(min_before, n - min_before)
    # step: two means
    m_r = s1[cand]
    m_l = n - m_r
    sy_r = sy[cand]
    sy_l = Sy - sy_r
    sse_step = syy - sy_l ** 2 / m_l - sy_r ** 2 / m_r
    # hinge at tau = t[cand - 1] (the last point before the change): h = max(0, t - tau)
    tau = t[cand - 1]
    sh = st[cand] - tau * m_r
    shh = stt[cand] - 2 * tau * st[cand] + tau * tau * m_r
    shy = sty[cand] - tau * sy_r
    det = n * shh - sh * sh
    ok = det > 1e-12
    a = np.where(ok, (shh * Sy - sh * shy) / np.where(ok, det, 1), 0)
    b = np.where(ok, (n * shy - sh * Sy) / np.where(ok, det, 1), 0)
    sse_hinge = np.where(ok, syy - a * Sy - b * shy, np.inf)
    # jump: a step and a slope from the same point (a level that jumps, then keeps growing: the
    # timeouts of a server whose work piles up); the left part's mean, the right part's own line
    syy_r = suffix(v * v)[cand]
    sse_left = (syy - syy_r) - sy_l ** 2 / m_l
    sxx = stt[cand] - st[cand] ** 2 / m_r
    sxy = sty[cand] - st[cand] * sy_r / m_r
    ok_j = (m_r >= 3) & (sxx > 1e-12)
    sse_jump = np.where(ok_j, sse_left + (syy_r - sy_r ** 2 / m_r) - sxy ** 2 / np.where(ok_j, sxx, 1), np.inf)
    i_s, i_h, i_j = int(np.argmin(sse_step)), int(np.argmin(sse_hinge)), int(np.argmin(sse_jump))
    # the model by BIC (the jump has one parameter more: it wins only where it explains much more)
    def bic(sse, k):
        return n * np.log(max(float(sse), 1e-300) / n) + k * np.log(n)

    scores = {"step": bic(sse_step[i_s], 3), "ramp": bic(sse_hinge[i_h], 3)}
    if jump:
        scores["jump"] = bic(sse_jump[i_j], 4)
    best = min(scores, key=scores.get)
    if best == "jump":
        j = int(cand[i_j])
        slope = sxy[i_j] / sxx[i_j]
        mean_t = st[cand][i_j] / m_r[i_j]
        end = sy_r[i_j] / m_r[i_j] + slope * (t[-1] - mean_t)  # the right line at the last point
        start = sy_r[i_j] / m_r[i_j] + slope * (t[j] - mean_t)
        before = float(sy_l[i_j] / m_l[i_j])
        # a jump the slope then continues: a step when the jump is most of the change, else a ramp
        kind = "step" if abs(start - before) >= 0.5 * abs(end - before) else "ramp"
        return Onset(int(idx[j]), kind, float(1 - sse_jump[i_j] / sse0), before, float(end))
    if best == "ramp":
        j = int(cand[i_h])
        return Onset(int(idx[j - 1]), "ramp", float(1 - sse_hinge[i_h] / sse0), float(a[i_h]),
                     float(a[i_h] + b[i_h] * (t[-1] - tau[i_h])))
    j = int(cand[i_s])
    return Onset(int(idx[j]), "step", float(1 - sse_step[i_s] / sse0), float(sy_l[i_s] / m_l[i_s]),
                 float(sy_r[i_s] / m_r[i_s]))
