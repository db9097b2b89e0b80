"""Robust PCA by the inexact augmented Lagrange multiplier method (Lin, Chen & Ma, 2010), as
CloudDiag uses it: M = L + E, L low rank, E sparse.

    min ||L||_* + lambda ||E||_1  s.t.  M = L + E,   lambda = 1 / sqrt(max(m, n))

Y = M / max(||M||_2, ||M||_inf / lambda); L = E = 0; mu = 1.25 / ||M||_2; mu_bar = 1e7 mu; rho = 1.5.
Repeat: E = shrink(M - L + Y/mu, lambda/mu); (U, S, V) = svd(M - E + Y/mu); L = U shrink(S, 1/mu) V';
Z = M - L - E; Y += mu Z; mu = min(rho mu, mu_bar); stop when ||Z||_F / ||M||_F < tol or after
max_iter iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RPCAResult:
    L: np.ndarray
    E: np.ndarray
    iterations: int
    converged: bool


def _shrink(X: np.ndarray, tau: float) -> np.ndarray:
    return np.sign(X) * np.maximum(np.abs(X) - tau, 0.0)


def _svt(X: np.ndarray, tau: float) -> np.ndarray:
    """Singular value thresholding: U shrink(S, tau) V' of X. A call-tree matrix is tall (many
    requests, a few calls), so its right singular vectors come from the small n x n Gram matrix
    (an eigendecomposition of n x n, then one m x n x n product) instead of an SVD of m x n."""
    m, n = X.shape
    if m < 4 * n:
        U, S, Vt = np.linalg.svd(X, full_matrices=False)
        S = np.maximum(S - tau, 0.0)
        r = int((S > 0).sum())
        return (U[:, :r] * S[:r]) @ Vt[:r]
    w, V = np.linalg.eigh(X.T @ X)
    s = np.sqrt(np.maximum(w, 0.0))
    keep = s > tau
    if not keep.any():
        return np.zeros_like(X)
    V = V[:, keep]
    scale = (s[keep] - tau) / s[keep]
    return X @ ((V * scale) @ V.T)


def rpca(M: np.ndarray, lam: float | None = None, tol: float = 1e-7, max_iter: int = 1000) -> RPCAResult:
    M = np.asarray(M, dtype=np.float64)
    m, n = M.shape
    if m == 0 or n == 0:
        return RPCAResult(M.copy(), np.zeros_like(M), 0, True)
    lam = lam if lam is not None else 1.0 / np.sqrt(max(m, n))
    norm2 = np.linalg.norm(M, 2)
    norm_fro = np.linalg.norm(M, "fro")
    if norm2 == 0:
        return RPCAResult(M.copy(), np.zeros_like(M), 0, True)
    Y = M / max(norm2, np.abs(M).max() / lam)
    L = np.zeros_like(M)
    E = np.zeros_like(M)
    mu = 1.25 / norm2
    mu_bar = mu * 1e7
    rho = 1.5
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        E = _shrink(M - L + Y / mu, lam / mu)
        L = _svt(M - E + Y / mu, 1.0 / mu)
        Z = M - L - E
        Y = Y + mu * Z
        mu = min(rho * mu, mu_bar)
        if np.linalg.norm(Z, "fro") / norm_fro < tol:
            converged = True
            break
    return RPCAResult(L, E, it, converged)


def column_cosines(M: np.ndarray, L: np.ndarray) -> np.ndarray:
    """CloudDiag's beta per column: |<M(i), L(i)>| / (||M(i)|| ||L(i)||) (0 where L(i) is 0)."""
    num = np.abs((M * L).sum(axis=0))
    den = np.linalg.norm(M, axis=0) * np.linalg.norm(L, axis=0)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
