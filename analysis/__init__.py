"""perftriage's analysis engine: readers -> columnar tables -> analyses -> findings.

Never imports textual or the ``tui`` package: everything here runs headless.
"""

__version__ = "0.1.0"
