"""Deviating threads in thread pools (paper 003): per-thread resource time series, covariance
distances, Ward clustering with bootstrap p-values, the recursive ranking."""
