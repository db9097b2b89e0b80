"""Damaged and hostile inputs, generated with hypothesis, run through the ``perftriage`` command
in forked children that are watched for crashes, hangs, memory and writes (issue 18).

``python -m fuzzing [--examples N] [CLASS...]`` prints, per class of input, how many were tried
and how many failed, with one reproducer per failure; tests/test_fuzz.py runs the same classes
with a few examples each in ``make test``; ``make fuzz`` runs thousands.
"""
