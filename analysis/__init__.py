"""perftriage's analysis engine: readers -> columnar tables -> analyses -> findings.

Installed as ``perftriage.analysis``. Never imports textual or ``perftriage.tui``: everything
here runs headless.
"""
