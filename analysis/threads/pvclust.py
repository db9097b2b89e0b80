"""Approximately unbiased (AU) p-values of the clusters of a Ward dendrogram by multiscale
bootstrap (Shimodaira; pvclust 2.2's algorithm), for abstractions compared through the
Förstner–Moonen distance of their covariance matrices.

The observations resampled are *blocks of time points*: each abstraction's samples are cut
into ``blocks`` consecutive blocks by relative position in its lifetime, and a replicate draws
blocks (the same block positions for every abstraction, as pvclust draws the same rows for
every item) with replacement. Resampling blocks rather than single points keeps the
autocorrelation of resource time series inside each block (a block bootstrap), and makes the
replicates cheap: each abstraction's covariance is rebuilt from per-block sums. Scales
r = n'/n from 0.5 to 1.4 (n' blocks drawn out of n), ``replicates`` per scale.

For every cluster of the original tree: BP_r = share of the scale-r replicates whose tree has
the same cluster; scales with 0.001 < BP_r < 0.999 are fitted (at least 3, else AU = BP = 1 if
the mean BP >= 0.5 else 0): z_r = -Phi^-1(BP_r) = v sqrt(r) + c / sqrt(r), weighted least squares
with weights 1 / var_r, var_r = BP_r (1 - BP_r) / (phi(z_r)^2 B); AU = 1 - Phi(v - c),
BP = 1 - Phi(v + c).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import numpy as np

from perftriage.analysis.stats import norm_cdf, norm_pdf, norm_ppf

from .covariance import cov_from_moments, fm_condensed

SCALES = tuple(round(0.5 + 0.1 * i, 1) for i in range(10))


@dataclass
class BootstrapResult:
    au: np.ndarray  # per merge (row of the linkage matrix), 0..1
    bp: np.ndarray
    se: np.ndarray  # standard error of AU
    replicates: int  # per scale
    scales: tuple
    blocks: int


def block_moments(groups: list[list[np.ndarray]], scale: np.ndarray, blocks: int):
    """Per abstraction and block: sample count, sum and sum of outer products of the scaled
    metrics. ``groups``: per abstraction, the sample arrays of its members (each in time order).

    Each abstraction's samples are first centred on their own mean (a shift within an
    abstraction leaves every covariance rebuilt from its blocks unchanged): sums of raw values
    lose the covariance to cancellation when a metric's level is far above its spread (a
    timestamp, a byte count of 1e9 that moves by 1e3), and the bootstrap then clustered
    matrices with eigenvalues of -1e15 x their trace."""
    k, p = len(groups), len(scale)
    n = np.zeros((k, blocks))
    s1 = np.zeros((k, blocks, p))
    s2 = np.zeros((k, blocks, p, p))
    for a, members in enumerate(groups):
        valid = [z[~np.isnan(z).any(axis=1)] for z in (x / scale for x in members)]
        count = sum(len(z) for z in valid)
        centre = sum(z.sum(axis=0) for z in valid) / count if count else np.zeros(p)
        for z in valid:
            z = z - centre
            m = len(z)
            if m == 0:
                continue
            b = np.minimum((np.arange(m) * blocks) // m, blocks - 1)
            # b never decreases: each block is a run of rows, summed by one reduceat per array
            ub, starts = np.unique(b, return_index=True)
            n[a] += np.bincount(b, minlength=blocks)
            s1[a, ub] += np.add.reduceat(z, starts, axis=0)
            s2[a, ub] += np.add.reduceat(z[:, :, None] * z[:, None, :], starts, axis=0)
    return n, s1, s2


def clusters_of(Z: np.ndarray, k: int) -> list[int]:
    """The members of each merge of a linkage matrix, as integer bit masks."""
    members = [1 << i for i in range(k)]
    for a, b in Z[:, :2].astype(np.int64).tolist():
        members.append(members[a] | members[b])
    return members[k:]


def _scale_counts(args) -> np.ndarray:
    """BP of every target cluster at one scale (a module-level function: runs in a worker process)."""
    from scipy.cluster.hierarchy import linkage  # noqa: PLC0415 (imported where used: not at the app's start)

    si, r, replicates, seed, blocks, k, p, flat_n, flat_s1, flat_s2, ridge_eps, targets = args
    target = {m: i for i, m in enumerate(targets)}
    nb = max(2, int(round(blocks * r)))
    rng = np.random.default_rng([seed, si])
    counts = np.zeros(len(target))
    diag = np.arange(p)
    done = 0
    while done < replicates:
        m = min(50, replicates - done)  # 50 replicates: the working arrays stay in L2 (measured 6% faster than 200)
        draw = rng.integers(0, blocks, (m, nb))
        C = np.zeros((m, blocks))
        np.add.at(C, (np.repeat(np.arange(m), nb), draw.ravel()), 1.0)
        N = C @ flat_n
        S1 = (C @ flat_s1).reshape(m, k, p)
        S2 = (C @ flat_s2).reshape(m, k, p, p)
        cov = cov_from_moments(N, S1, S2)
        cov[..., diag, diag] += ridge_eps  # (k, p): the ridge and the resolution floor, on the variances
        d = fm_condensed(cov)
        for row in d:
            for mask in clusters_of(linkage(row, method="ward"), k):
                i = target.get(mask)
                if i is not None:
                    counts[i] += 1
        done += m
    return counts / replicates


def multiscale_bootstrap(Z: np.ndarray, moments, ridge_eps: np.ndarray, replicates: int = 1000,
                         scales=SCALES, seed: int = 0, workers: int | None = None,
                         progress=None) -> BootstrapResult:
    """``ridge_eps`` (abstractions, metrics): what each variance gets added (the ridge and the
    resolution floor); ``progress(scales done, scales, processes)`` as each scale's replicates
    are counted."""
    n, s1, s2 = moments
    k, blocks, p = s1.shape
    targets = clusters_of(Z, k)
    flat_n = n.T  # (blocks, k)
    flat_s1 = np.ascontiguousarray(s1.transpose(1, 0, 2).reshape(blocks, k * p))
    flat_s2 = np.ascontiguousarray(s2.transpose(1, 0, 2, 3).reshape(blocks, k * p * p))
    workers = min(len(scales), workers or os.cpu_count() or 1)
    tasks = [(si, r, replicates, seed, blocks, k, p, flat_n, flat_s1, flat_s2, ridge_eps, targets)
             for si, r in enumerate(scales)]
    bp_rs = np.array(_run_scales(tasks, workers, progress))  # (scales, clusters)
    actual_r = np.array([max(2, int(round(blocks * r))) / blocks for r in scales])
    au, bp, se = _fit(bp_rs, actual_r, replicates)
    return BootstrapResult(au, bp, se, replicates, tuple(scales), blocks)


_POOL = None
_POOL_LOCK = threading.Lock()


def _one_blas_thread() -> None:
    """In a worker process: one BLAS thread (the workers already fill the cores; measured on 2
    cores: 2.05x with one BLAS thread per worker, 1.5x with the default)."""
    try:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415

        threadpool_limits(1)
    except ImportError:
        pass


def _run_scales(tasks, workers: int, progress=None) -> list:
    """The scales in worker processes when there is more than one core: numpy's small
    eigen-decompositions hold the GIL, so threads give 1.3x on 2 cores, processes 2x. The
    processes come from a fork server (a clean single-threaded process started once), never
    from a fork of this one: the app runs analyses in worker threads, where forking is unsafe.
    Any trouble with processes: threads."""
    global _POOL
    if workers > 1 and len(tasks) > 1 and os.environ.get("PERFTRIAGE_NO_PROCESSES") != "1":
        try:
            with _POOL_LOCK:
                if _POOL is None:
                    _POOL = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("forkserver"),
                                                initializer=_one_blas_thread)
                pool = _POOL
            return _in_order(pool, tasks, progress, workers)
        except (OSError, BrokenProcessPool, ValueError, RuntimeError):
            with _POOL_LOCK:
                _POOL = None
    with ThreadPoolExecutor(max_workers=max(1, workers)) as ex:
        return _in_order(ex, tasks, progress, workers)


def _in_order(ex, tasks, progress, workers: int) -> list:
    """The tasks' results in order, saying each one done as it comes."""
    from concurrent.futures import as_completed  # noqa: PLC0415

    futures = [ex.submit(_scale_counts, t) for t in tasks]
    if progress is not None:
        done = 0
        for f in as_completed(futures):
            if f.exception() is None:  # a broken pool's failures are not progress (the caller retries)
                done += 1
                progress(done, len(futures), workers)
    return [f.result() for f in futures]


def _fit(bp_rs: np.ndarray, r: np.ndarray, B: int):
    n_cl = bp_rs.shape[1]
    au = np.zeros(n_cl)
    bp = np.zeros(n_cl)
    se = np.zeros(n_cl)
    for c in range(n_cl):
        x = bp_rs[:, c]
        use = (x > 0.001) & (x < 0.999)
        if use.sum() < 3:
            v = 1.0 if x.mean() >= 0.5 else 0.0
            au[c] = bp[c] = v
            continue
        z = -norm_ppf(x[use])
        rr = r[use]
        var = x[use] * (1 - x[use]) / (norm_pdf(z) ** 2 * B)
        w = 1 / var
        X = np.column_stack([np.sqrt(rr), 1 / np.sqrt(rr)])
        XtW = X.T * w
        V = np.linalg.inv(XtW @ X)
        v_, c_ = V @ (XtW @ z)
        au[c] = 1 - norm_cdf(v_ - c_)
        bp[c] = 1 - norm_cdf(v_ + c_)
        h = np.array([1.0, -1.0])
        se[c] = norm_pdf(v_ - c_) * np.sqrt(h @ V @ h)
    return au, bp, se
