"""What a user chooses for the call trees of spans: CloudDiag's diagnosis and the comparison with a
reference. No numpy here (see requests/params.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DiagParams:
    alpha: float = 0.0  # CV of request latency above which a category is analysed (0: all)
    min_requests: int = 20  # categories with fewer requests are not analysed
    beta: float = 0.97  # columns whose cos(M, L) is below this are anomalous methods
    times: str = "self"  # "self" (exclusive) or "total" (inclusive, the paper's) method times
    e_z: float = 1.0  # a call is anomalous when E > e_z robust std of its column
    replica_fraction: float = 0.05  # share of a replica's calls that must be anomalous, at least
    p_value: float = 1e-4  # binomial test of that share against the category's ordinary share
    base_share: float = 0.01  # floor of the ordinary share
    max_rows: int = 200_000  # RPCA on a seeded random sample of this many requests at most

    def validate(self) -> None:
        if self.alpha < 0:
            raise ValueError("alpha must be >= 0")
        if not 0 < self.beta <= 1:
            raise ValueError("beta must be in (0, 1]")
        if self.times not in ("self", "total"):
            raise ValueError("times must be 'self' or 'total'")
        if self.min_requests < 2:
            raise ValueError("min_requests must be at least 2")
        if not 0 < self.replica_fraction <= 1:
            raise ValueError("replica_fraction must be in (0, 1]")


@dataclass
class CompareParams:
    min_ratio: float = 1.2  # median at least this much slower (or 1/this faster)
    p_value: float = 0.01
    min_calls: int = 10  # on each side
    max_samples: int = 20_000
    times: str = "self"  # method times: self or total
