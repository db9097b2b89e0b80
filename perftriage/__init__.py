"""perftriage: terminal triage of performance problems (CLI front door)."""

from analysis import __version__

__all__ = ["__version__"]
