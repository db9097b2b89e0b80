"""Deviating threads in thread pools (paper 003): per-thread resource time series, covariance
distances, Ward clustering with bootstrap p-values, the recursive ranking."""

from .series import ThreadSeries, read_csv  # noqa: F401  (registers the "threads" file kind)
