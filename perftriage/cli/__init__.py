"""The ``perftriage`` command line (see main.py)."""

from .main import COMMANDS, build_parser, main

__all__ = ["COMMANDS", "build_parser", "main"]
