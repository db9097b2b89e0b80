"""numpy for the panes, imported when a pane first uses it (a result to show) rather than when
the app is imported: the first screen comes before numpy and the analyses' modules (0.25 s of
imports), which the app needs only for results, and these come from the analysing child later."""

from __future__ import annotations

import importlib


class LazyModule:
    """A module imported at its first attribute used."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)


np = LazyModule("numpy")
