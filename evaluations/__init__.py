"""``make eval``: accuracy of the analyses against ground truth, printed as figures."""
