"""perftriage: terminal triage of performance problems.

The one import namespace the project installs: ``perftriage.analysis`` (the engine, from the
repository's ``analysis/``), ``perftriage.tui`` (the Textual app, from ``tui/``) and
``perftriage.cli`` (the command line).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
