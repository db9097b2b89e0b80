"""Critical-path breakdown of one request: a stacked bar of its states and a per-thread
timeline in characters (like Trace Compass's critical path view)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from perftriage.analysis.requests.states import STATE_CHAR, STATE_NAMES, STATES
from perftriage.analysis.units import count_of, fmt_duration

if TYPE_CHECKING:
    from perftriage.analysis.requests.path_view import PathView

# background colours that read on 16-colour terminals; the letter tells the state without colour
STATE_STYLE = {
    "RU": "black on green",
    "RS": "white on blue",
    "BP": "black on yellow",
    "BD": "white on magenta",
    "BN": "black on cyan",
    "BS": "black on white",
    "BI": "white on red",
    "BF": "black on bright_red",
    "BT": "white on bright_black",
}


def legend(view: PathView) -> Text:
    t = Text()
    for name, share in view.shares():
        t.append(f" {STATE_CHAR[name]} ", style=STATE_STYLE[name])
        t.append(f" {name} {share * 100:.0f}%  ")
    return t


def bar(view: PathView, width: int) -> Text:
    t = Text()
    for k in view.bar(width):
        name = STATES[k]
        t.append(STATE_CHAR[name], style=STATE_STYLE[name])
    return t


def timeline(view: PathView, width: int, max_threads: int | None = None) -> list[Text]:
    rows = view.timeline(1)
    label_w = min(22, max((len(lbl) for lbl, _ in rows), default=0))
    cells_w = max(10, width - label_w - 3)
    out = []
    all_rows = view.timeline(cells_w)
    shown = all_rows if max_threads is None else all_rows[:max_threads]
    for lbl, cells in shown:
        t = Text(f"{lbl[:label_w]:<{label_w}} ", style="bold")
        t.append("▕")
        for c in cells:
            if c < 0:
                t.append(" ")
            else:
                name = STATES[c]
                t.append(STATE_CHAR[name], style=STATE_STYLE[name])
        t.append("▏")
        out.append(t)
    if max_threads is not None and len(all_rows) > max_threads:
        out.append(Text(f"… {len(all_rows) - max_threads:,} more threads on the path (enter shows all)", style="dim"))
    return out


def state_key() -> Text:
    t = Text()
    for name in STATES:
        t.append(f" {STATE_CHAR[name]} ", style=STATE_STYLE[name])
        t.append(f" {name} {STATE_NAMES[name]}\n")
    return t


class PathBreakdown(Static):
    """Shows a :class:`PathView` (or a message)."""

    DEFAULT_CSS = """
    PathBreakdown { height: auto; max-height: 9; padding: 0 0; }
    """

    def __init__(self, max_threads: int | None = 4, **kwargs):
        super().__init__("", **kwargs)
        self.max_threads = max_threads
        self.view: PathView | None = None

    def show_view(self, view: PathView | None, message: str = "") -> None:
        self.view = view
        self.message = message
        self.refresh_view()

    def on_resize(self, event) -> None:
        self.refresh_view()

    def refresh_view(self) -> None:
        view = self.view
        if view is None:
            self.update(Text(getattr(self, "message", ""), style="dim"))
            return
        width = max(20, (self.size.width or 80) - 1)
        away = "".join(f", {fmt_duration(ns)} on {host}" for host, ns in view.elsewhere())
        lines = [Text(f"critical path {fmt_duration(view.total)} over {count_of(len(view.thread_order), 'threads')}"
                      f"{away}:", style="bold"), legend(view),
                 bar(view, width)]
        lines += timeline(view, width, self.max_threads)
        out = Text()
        for i, line in enumerate(lines):
            if i:
                out.append("\n")
            out.append_text(line)
        self.update(out)
