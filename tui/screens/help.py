"""The help screen (?): every key, by pane."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    ("Everywhere", [
        ("?", "this help"),
        ("q", "quit"),
        ("1 .. 6", "Requests, Clusters, Call trees, Threads, Counters, Findings"),
        ("tab / shift+tab", "next / previous control"),
        ("e", "export all findings to a Markdown file (written atomically)"),
    ]),
    ("Lists", [
        ("j / k, down / up", "next / previous row"),
        ("g / G, home / end", "first / last row"),
        ("space, pgdn / pgup", "page down / up"),
        ("enter", "open the selected row"),
    ]),
    ("Requests", [
        ("/", "filter: keep rows containing the text (uri, method, host, kind, tid, id)"),
        ("escape", "clear the filter"),
        ("s", "sort outliers first / slowest first / by start time"),
        ("n / N", "next / previous notable request (outlier, else slower than p95)"),
        ("enter", "the request in full: critical path of every thread, segments"),
    ]),
    ("Clusters", [
        ("v", "view: distinctive n-grams / state counts / Isomap map / inertia curve"),
        ("enter", "list the highlighted cluster's requests in the Requests pane (escape: all)"),
    ]),
    ("Call trees", [
        ("tab", "between the ranked (method, replica) pairs and the categories"),
        ("v", "view: the method on each replica / an example call tree / against the reference"),
    ]),
    ("Threads", [
        ("enter / escape", "down into the highlighted abstraction's threads (or next level) / back up"),
        ("v", "view: metrics against the majority / plot / dendrogram with heights and AU"),
    ]),
    ("Critical path letters", [
        ("u s", "running in user mode (RU) / in a system call (RS)"),
        ("p", "preempted: runnable, waiting for a CPU (BP)"),
        ("D N T", "blocked on disk (BD) / network (BN) / a timer (BS)"),
        ("I F ?", "blocked on an interrupt (BI) / in futex (BF) / on a task not followed (BT)"),
    ]),
    ("Dialogs", [
        ("escape", "close"),
    ]),
]


def help_text() -> str:
    lines = ["[b]perftriage keys[/b]", ""]
    for section, keys in KEYS:
        lines.append(f"[b]{section}[/b]")
        for key, what in keys:
            lines.append(f"  {key:<22} {what}")
        lines.append("")
    lines.append("Runs over SSH: no mouse needed; NO_COLOR is respected; 80x24 at least.")
    return "\n".join(lines)


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 78; max-height: 22; border: round $accent; background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_text(), id="help-text")
