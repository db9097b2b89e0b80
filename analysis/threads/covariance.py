"""Covariance matrices of abstractions and the Förstner–Moonen distance between them (paper 003,
section IV.C).

d(A, B) = sqrt(sum_i ln^2 lambda_i), lambda_i the generalized eigenvalues of (B, A): symmetric,
and invariant to a change of units of the metrics. Computed for many pairs at once: with
A = L L' (Cholesky), the lambda_i are the eigenvalues of L^-1 B L^-T, one batched ``eigvalsh``;
the bootstrap's millions of small problems go through :func:`fm_condensed`.

Singular matrices (a metric constant within an abstraction, or two metrics proportional) are
regularised: eps * I is added with eps = ``ridge`` x the mean variance of the matrix (the metrics
are first scaled by their standard deviation over all abstractions, so that eps means the same
for every metric); which abstractions needed it is reported.

Counted metrics are read at a resolution: pidstat's %system in whole percents over 1 s, a write
rate in whole buffers. A thread whose such metric never left its usual value in 60 samples, among
threads where it left it once or twice, has a variance of zero against one of a single step: no
difference worth a distance, yet the ridge alone made it the largest of all. Where most samples of
a metric sit at one value (its mode), each abstraction's variance of it gets a floor of one step
(the smallest departure from the mode seen) in its n samples, step^2 / n (``resolution_floor``).
Metrics of continuous values (no value held by most samples) get none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Covariances:
    cov: np.ndarray  # (k, p, p), metrics in scaled units
    scale: np.ndarray  # (p,) the scaling applied to each metric
    regularised: list[int]  # abstractions whose matrix needed the ridge
    constant: list[tuple[int, int]]  # (abstraction, metric) pairs with zero variance


def scale_of(values: np.ndarray) -> np.ndarray:
    """A per-metric unit: its standard deviation over all samples (1 where constant)."""
    s = np.nanstd(values, axis=0) if np.isnan(values).any() else np.std(values, axis=0)
    return np.where(s > 0, s, 1.0)


def resolution_step(groups: list[np.ndarray], held: float = 0.5, quantum: bool = False) -> np.ndarray:
    """(p,): per metric, the step of its resolution (the smallest departure from the mode seen),
    for metrics whose mode holds ``held`` of all samples or more (counts that rarely move); 0
    elsewhere. ``quantum``: only where every departure is a whole number of steps (open files,
    mappings), not where the smallest is merely the least seen (a process writing 1,774-2,048 kB/s
    in bursts, 0 between them: a level of 1,254 kB/s is not 'within one step')."""
    p = groups[0].shape[1] if groups else 0
    step = np.zeros(p)
    if not groups:
        return step
    allv = np.vstack(groups)
    for j in range(p):
        x = allv[:, j]
        x = x[~np.isnan(x)]
        if not len(x):
            continue
        mode = float(np.median(x))  # a value most samples hold is their median (no sort: a partition)
        other = x[x != mode]
        if len(other) > (1 - held) * len(x) or not len(other):
            continue
        off = np.abs(other - mode)
        off = off[off > 1e-9 * max(float(np.abs(x).max()), 1e-300)]
        if len(off):
            step[j] = float(off.min())
            if quantum and np.abs(off / step[j] - np.round(off / step[j])).max() > 1e-6:
                step[j] = 0.0
    return step


def resolution_floor(groups: list[np.ndarray], scale: np.ndarray, held: float = 0.5) -> np.ndarray:
    """(k, p): per abstraction and metric, the variance of one step of the metric's resolution
    in its samples (step^2 / n, in units of ``scale``), for metrics whose mode holds ``held`` of
    all samples or more; 0 elsewhere (see the module's words)."""
    k = len(groups)
    if not k:
        return np.zeros((0, len(scale)))
    n = np.array([max(int((~np.isnan(x).any(axis=1)).sum()), 1) for x in groups], np.float64)
    return (resolution_step(groups, held) / scale)[None, :] ** 2 / n[:, None]


def covariances(groups: list[np.ndarray], scale: np.ndarray, ridge: float = 1e-6,
                floor: np.ndarray | None = None) -> Covariances:
    """Covariance matrix of each group's samples ((n_i, p) arrays), metrics divided by ``scale``;
    ``floor`` ((k, p), scaled units) added to the variances (:func:`resolution_floor`)."""
    p = len(scale)
    k = len(groups)
    out = np.empty((k, p, p))
    regularised, constant = [], []
    for i, x in enumerate(groups):
        z = x / scale
        z = z[~np.isnan(z).any(axis=1)]
        if len(z) < 2:
            c = np.zeros((p, p))
        else:
            c = np.cov(z, rowvar=False).reshape(p, p)
        if floor is not None:
            c[np.arange(p), np.arange(p)] += floor[i]
        out[i] = c
    return _regularise(out, scale, ridge, regularised, constant)


def _regularise(out, scale, ridge, regularised, constant) -> Covariances:
    p = out.shape[1]
    diag = np.einsum("kii->ki", out)
    for i, j in zip(*np.nonzero(diag <= 1e-12 * np.maximum(diag.max(axis=1, keepdims=True), 1e-300))):
        constant.append((int(i), int(j)))
    mean_var = np.maximum(diag.mean(axis=1), 1e-12)
    eps = ridge * mean_var
    # a matrix is regularised when it is not safely positive definite
    ev_min = np.linalg.eigvalsh(out)[:, 0]
    need = ev_min <= eps * 10
    if need.any():
        regularised.extend(np.flatnonzero(need).tolist())
        out[need] += (eps[need] * 10)[:, None, None] * np.eye(p)
    return Covariances(out, scale, regularised, constant)


def cov_from_moments(n: np.ndarray, s1: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """Covariances from sufficient statistics: counts (..., ), sums (..., p), sums of outer
    products (..., p, p)."""
    n = np.maximum(n, 2.0)[..., None, None]
    mean = s1[..., :, None] * s1[..., None, :] / n
    return (s2 - mean) / (n - 1)


def safe_cholesky(cov: np.ndarray) -> np.ndarray:
    """Cholesky factors of a batch of covariance matrices; a matrix that is not numerically
    positive definite gets a growing ridge (relative to its trace) until it is, and one that no
    ridge mends (values of wildly different magnitudes, NaN) its diagonal alone."""
    try:
        L = np.linalg.cholesky(cov)
        if np.isfinite(L).all():  # NaN in, NaN out: no error raised
            return L
    except np.linalg.LinAlgError:
        pass
    p = cov.shape[-1]
    flat = cov.reshape(-1, p, p).copy()
    try:  # the usual case, in one batch: a ridge on the matrices whose smallest eigenvalue is ~0
        tr = np.maximum(np.einsum("kii->k", flat) / p, 1e-12)
        ev = np.linalg.eigvalsh(flat)[:, 0]
        bad = ev <= tr * 1e-9
        flat[bad] += ((tr[bad] * 1e-6) - np.minimum(ev[bad], 0))[:, None, None] * np.eye(p)
        L = np.linalg.cholesky(flat)
        if np.isfinite(L).all():
            return L.reshape(cov.shape)
    except np.linalg.LinAlgError:
        pass
    flat = cov.reshape(-1, p, p)
    out = np.empty_like(flat)
    eye = np.eye(p)
    for k, m in enumerate(flat):
        tr = float(np.trace(m)) / p if np.isfinite(m).all() else np.nan
        done = False
        if np.isfinite(tr):
            tr = max(tr, 1e-12)
            for ridge in (0.0, 1e-6, 1e-4, 1e-2, 1.0):
                try:
                    out[k] = np.linalg.cholesky(m + ridge * tr * eye)
                    done = True
                    break
                except np.linalg.LinAlgError:
                    continue
        if not done:
            d = np.nan_to_num(np.diag(m), nan=1.0, posinf=1.0, neginf=1.0)
            out[k] = np.diag(np.sqrt(np.maximum(d, 1e-12)))
    return out.reshape(cov.shape)


def fm_pairs(cov: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Förstner–Moonen distances between cov[i] and cov[j] for index arrays i, j."""
    L = safe_cholesky(cov)
    Linv = np.linalg.inv(L)
    S = Linv[i] @ cov[j] @ np.swapaxes(Linv[i], -1, -2)
    lam = np.linalg.eigvalsh(S)
    lam = np.maximum(lam, 1e-300)
    return np.sqrt((np.log(lam) ** 2).sum(axis=-1))


def fm_matrix(cov: np.ndarray) -> np.ndarray:
    """The symmetric matrix of Förstner–Moonen distances between k covariance matrices."""
    k = len(cov)
    i, j = np.triu_indices(k, 1)
    d = np.zeros((k, k))
    if len(i):
        v = fm_pairs(cov, i, j)
        d[i, j] = v
        d[j, i] = v
    return d


def fm_condensed(cov: np.ndarray) -> np.ndarray:
    """Condensed distance vectors for a batch of abstraction sets, cov (B, k, p, p) -> (B, k(k-1)/2).

    By the C kernel (``_fm.c``, built by ``make setup`` where a C compiler exists) when there is
    one: 3x the component-wise series on the bootstrap's batches of 40 threads x 5 metrics, 2.3x
    LAPACK on those of 4 threads x 21 metrics (``python -m benchmarks threads``); without it, by
    :func:`fm_condensed_numpy`."""
    kernel = _fm_module()
    if kernel is not None and cov.shape[-1] <= C_MAX_METRICS:
        return fm_condensed_c(cov, kernel)
    return fm_condensed_numpy(cov)


def fm_condensed_numpy(cov: np.ndarray) -> np.ndarray:
    """:func:`fm_condensed` by numpy, whichever of the two ways is faster for the batch's shape:
    the component-wise :func:`fm_condensed_fast` pays a Python-level cost of order p^3 per call
    whatever the number of problems: it wins only when there are many (B k(k-1)/2) for the
    matrix size. Measured on this machine (near matrices, one BLAS thread): even with LAPACK from
    500 problems at p = 4, 1,400 at p = 8 and 10, 3,000 at p = 12; at p = 21 LAPACK is faster at
    every size (5x on the bootstrap batches of 4 threads of 21 metrics)."""
    B, k, p, _ = cov.shape
    problems = B * (k * (k - 1) // 2)
    if p <= FAST_MAX_METRICS and problems >= FAST_MIN_PROBLEMS_PER_P2 * p * p:
        return fm_condensed_fast(cov)
    i, j = np.triu_indices(k, 1)
    base = (np.arange(B) * k)[:, None]
    flat = cov.reshape(B * k, p, p)
    return fm_pairs(flat, (base + i).ravel(), (base + j).ravel()).reshape(B, len(i))


C_MAX_METRICS = 32  # the C kernel's bound (MAXP in _fm.c)


def _fm_module():
    try:
        from . import _fm  # noqa: PLC0415  (built by make setup where a C compiler exists)
    except ImportError:
        return None
    return _fm


def fm_condensed_c(cov: np.ndarray, kernel=None) -> np.ndarray:
    """:func:`fm_condensed` by the C kernel: the Cholesky factors of the whole batch by numpy
    (:func:`safe_cholesky`), then their inverses and every pair in C (the series of
    :func:`fm_condensed_fast` in double where the eigenvalues are near, Jacobi rotations where
    they are not), without the GIL."""
    kernel = kernel or _fm_module()
    B, k, p, _ = cov.shape
    L = np.ascontiguousarray(safe_cholesky(cov), dtype=np.float64)
    out = np.empty((B, k * (k - 1) // 2))
    kernel.distances(L, out, B, k, p)
    return out


FAST_MAX_METRICS = 12
FAST_MIN_PROBLEMS_PER_P2 = 20

NEAR = 0.6  # spectral radius of Y (|y| = |lambda - 1| / (lambda + 1)) up to which the series is used
# artanh^2(y) = sum_n a_n y^2n: a_n = sum over a + b = n - 1 of 1 / ((2a + 1)(2b + 1))
_ATANH2_COEF = [0.0] + [sum(1.0 / ((2 * a + 1) * (2 * (n - 1 - a) + 1)) for a in range(n)) for n in range(1, 10)]


def fm_condensed_fast(cov: np.ndarray) -> np.ndarray:
    """Condensed distance vectors for a batch of abstraction sets, cov (B, k, p, p) -> (B, k(k-1)/2):
    :func:`fm_pairs` for every pair of every set, about 3x faster, for the bootstrap's many
    small problems.

    Done component-wise over all (replicate, pair) problems at once, with the p x p matrix
    indices as the outer loops (numpy's batched 5x5 matmul and eigvalsh pay ~1 µs per matrix;
    a vector operation over 100,000 matrices is ~0.1 µs per matrix). Whitening uses the
    Cholesky factor's inverse (lower triangular). Then, with S = L^-1 B L^-T and its Cayley
    transform Y = (S - I)(S + I)^-1 (eigenvalues y = (lambda - 1) / (lambda + 1)):
    sum ln^2 lambda = 4 tr(artanh^2 Y) = 4 sum_n a_n tr(Y^2n), a series in even powers, to
    y^16, when the spectral radius of Y is at most ``NEAR`` (bounded by ||Y||_F and by
    ||Y^2||_F^(1/2)): lambda within [0.25, 4] after the pair's scale is taken out, error below
    1e-3 of the distance. The pairs beyond (far apart) take their eigenvalues by
    :func:`jacobi_eigvals`."""
    B, k, p, _ = cov.shape
    i, j = np.triu_indices(k, 1)
    L = safe_cholesky(cov)
    Li = np.linalg.inv(L)
    LT = np.ascontiguousarray(Li.transpose(2, 3, 1, 0))  # (p, p, k, B)
    CL = np.ascontiguousarray(L.transpose(2, 3, 1, 0))
    Lp = LT[:, :, i, :]  # (p, p, pairs, B): a gather of whole rows
    Lq = CL[:, :, j, :]
    # S = Li_i C_j Li_i^T = M M^T with M = Li_i L_j, a product of lower triangular matrices: lower
    # triangular itself (fewer products than whitening C_j directly)
    M = [[sum(Lp[a, c] * Lq[c, b] for c in range(b, a + 1)) if b <= a else None for b in range(p)]
         for a in range(p)]
    S = [[None] * p for _ in range(p)]
    for a in range(p):
        for b in range(a + 1):
            S[a][b] = sum(M[a][c] * M[b][c] for c in range(b + 1))
            S[b][a] = S[a][b]
    del M, Lp, Lq
    # take out the pair's overall scale: with m = ln det S / p (from the two log-determinants),
    # sum ln^2 lambda = sum ln^2 (lambda e^-m) + p m^2, and S e^-m has its eigenvalues' geometric
    # mean at 1: a thread that only does more of everything is then near, not far
    logdet = 2 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(axis=-1)  # (B, k)
    m = ((logdet[:, j] - logdet[:, i]) / p).T  # (pairs, B)
    scale = np.exp(-m)
    # symmetric matrices: each off-diagonal array is computed once and shared by both entries
    for a in range(p):
        for b in range(a + 1):
            S[a][b] = S[a][b] * scale
            S[b][a] = S[a][b]

    def mul(X, Y):  # symmetric result assumed (powers of one symmetric matrix)
        Z = [[None] * p for _ in range(p)]
        for a in range(p):
            for b in range(a + 1):
                Z[a][b] = sum(X[a][c] * Y[c][b] for c in range(p))
                Z[b][a] = Z[a][b]
        return Z

    def inner(X, Y):  # tr(X Y) of symmetric X, Y: the diagonal plus twice the upper half
        return (sum(X[a][a] * Y[a][a] for a in range(p))
                + 2 * sum(X[a][b] * Y[a][b] for a in range(p) for b in range(a + 1, p)))

    # Cayley transform: ln lambda = 2 artanh(y) with y = (lambda - 1) / (lambda + 1), the
    # eigenvalues of Y = (S - I)(S + I)^-1 = I - 2 (S + I)^-1 (S + I is well conditioned even
    # when S is nearly singular); sum ln^2 lambda = 4 tr(artanh^2 Y) = 4 sum_n a_n tr(Y^2n),
    # a series in even powers that converges fast: |y| <= 0.6 covers lambda in [0.25, 4]
    Lc = [[None] * p for _ in range(p)]  # Cholesky factor of S + I, component-wise
    for c in range(p):
        d = S[c][c] + 1.0 - sum(Lc[c][q] * Lc[c][q] for q in range(c)) if c else S[c][c] + 1.0
        Lc[c][c] = np.sqrt(d)
        inv = 1.0 / Lc[c][c]
        for r in range(c + 1, p):
            v = S[r][c] - sum(Lc[r][q] * Lc[c][q] for q in range(c)) if c else S[r][c]
            Lc[r][c] = v * inv
    X = [[None] * p for _ in range(p)]  # X = Lc^-1, lower triangular
    for c in range(p):
        X[c][c] = 1.0 / Lc[c][c]
    for c in range(p):
        for r in range(c + 1, p):
            X[r][c] = -sum(Lc[r][q] * X[q][c] for q in range(c, r)) * X[r][r]
    Y = [[None] * p for _ in range(p)]  # Y = I - 2 X^T X
    for a in range(p):
        for b in range(a + 1):
            w = sum(X[q][a] * X[q][b] for q in range(a, p))
            Y[a][b] = Y[b][a] = (1.0 - 2.0 * w) if a == b else -2.0 * w
    del Lc, X
    t2 = inner(Y, Y)  # tr(Y^2)
    Y2 = mul(Y, Y)
    t4 = inner(Y2, Y2)  # tr(Y^4) >= rho(Y)^4
    far = (t2 > NEAR * NEAR) & (t4 > NEAR ** 4)
    d2 = p * m * m
    near = ~far
    if near.any():
        # the terms from y^6 on in single precision (their relative error stays ~1e-6 of the
        # distance; tr(Y^2) and tr(Y^4) in double): half the memory traffic
        Y2n = [[Y2[a][b][near].astype(np.float32) for b in range(p)] for a in range(p)]
        Y4 = mul(Y2n, Y2n)
        Y6 = mul(Y2n, Y4)
        Y8 = mul(Y4, Y4)
        tr = {1: t2[near], 2: t4[near], 3: inner(Y2n, Y4), 4: inner(Y4, Y4), 5: inner(Y4, Y6),
              6: inner(Y6, Y6), 7: inner(Y6, Y8), 8: inner(Y8, Y8)}
        d2[near] += 4 * sum(_ATANH2_COEF[n] * tr[n] for n in range(1, 9))
    if far.any():
        sub = [[None] * p for _ in range(p)]
        for a in range(p):
            for b in range(a + 1):
                sub[a][b] = sub[b][a] = S[a][b][far]
        lam = np.maximum(jacobi_eigvals(sub), 1e-300)
        d2[far] += (np.log(lam) ** 2).sum(axis=0)
    return np.sqrt(np.maximum(d2, 0.0)).T  # (B, pairs)


def jacobi_eigvals(A: list, sweeps: int = 8, tol: float = 1e-18) -> np.ndarray:
    """Eigenvalues of many small symmetric matrices given component-wise (``A[i][j]`` an array
    over the matrices): cyclic Jacobi rotations as vector operations over all of them at once
    (no re-layout). After the second sweep, the matrices whose every off-diagonal entry is small
    beside its two diagonal entries (a_pq^2 <= ``tol`` |a_pp a_qq|: the criterion that keeps small
    eigenvalues accurate relative to themselves, as near-singular covariances need) are done and
    leave the working set; ``sweeps`` bounds the rest. Returns (p, matrices)."""
    p = len(A)
    n = len(A[0][0])
    out = np.empty((p, n))
    idx = np.arange(n)
    A = [[A[i][j] for j in range(p)] for i in range(p)]
    for sweep in range(sweeps):
        for a in range(p - 1):
            for b in range(a + 1, p):
                apq, app, aqq = A[a][b], A[a][a], A[b][b]
                zero = apq == 0
                with np.errstate(over="ignore", divide="ignore"):  # tiny a_pq: theta inf, t 0
                    theta = (aqq - app) / np.where(zero, 1.0, 2 * apq)
                    t = np.where(theta >= 0, 1.0, -1.0) / (np.abs(theta) + np.hypot(theta, 1.0))
                t = np.where(zero, 0.0, t)
                c = 1 / np.sqrt(t * t + 1)
                s_ = t * c
                A[a][a] = app - t * apq
                A[b][b] = aqq + t * apq
                A[a][b] = A[b][a] = np.zeros_like(apq)
                for r in range(p):
                    if r != a and r != b:
                        arp, arq = A[r][a], A[r][b]
                        A[r][a] = A[a][r] = c * arp - s_ * arq
                        A[r][b] = A[b][r] = s_ * arp + c * arq
        if sweep >= 1 and sweep < sweeps - 1:
            done = np.ones(len(idx), bool)
            for a in range(p - 1):
                for b in range(a + 1, p):
                    done &= A[a][b] * A[a][b] <= tol * np.abs(A[a][a] * A[b][b])
            if done.any():
                for i in range(p):
                    out[i, idx[done]] = A[i][i][done]
                keep = ~done
                idx = idx[keep]
                if len(idx) == 0:
                    return out
                A = [[A[i][j][keep] if j >= i else None for j in range(p)] for i in range(p)]
                for i in range(p):
                    for j in range(i):
                        A[i][j] = A[j][i]
    for i in range(p):
        out[i, idx] = A[i][i]
    return out
