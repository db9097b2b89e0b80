"""A pane whose analysis has nothing to show for the loaded inputs: says what it needs."""

from __future__ import annotations

from textual.widgets import Static


class PendingPane(Static):
    DEFAULT_CSS = """
    PendingPane { padding: 1 2; color: $text-muted; height: 1fr; }
    """

    def __init__(self, what: str, needs: str, **kwargs):
        super().__init__(f"{what}\n\nNothing to show: {needs}", **kwargs)
