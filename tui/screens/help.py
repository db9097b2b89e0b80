"""The help screen (?): the keys of the pane shown first, then every other pane's; made from the
bindings themselves, so a key added to a pane is in the help. As wide and tall as the terminal,
scrolled with j/k like the lists."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# what a key does, where the binding's one-word description is not enough (by action)
LONG = {
    "help": "this help (j/k scroll it, escape closes it)",
    "quit": "quit at once, whatever runs",
    "export": "export all findings to a Markdown file (written atomically)",
    "cancel": "while the analysis runs: stop it and keep what is shown",
    "back": "back where the last link came from (like a browser)",
    "cursor_down": "next row", "cursor_up": "previous row", "first": "first row", "last": "last row",
    "page_down": "page down", "page_up": "page up",
    "select": "open the highlighted row (what it opens is said per pane below)",
    "filter": "filter: keep rows containing the text (uri, method, host, kind, tid, id)",
    "clear_filter": "clear the filter; with nothing to clear, back where a link came from",
    "sort": "sort: outliers first / slowest first / by start time",
    "next_notable": "next notable request (outlier, else slower than p95)",
    "prev_notable": "previous notable request; with a filter, n / N go to the next / previous match",
    "next_match": "with a filter: the next / previous match, round at the ends (as in less)",
    "filter_rows": "keep the rows containing a text, with a match count in the header",
    "clear_row_filter": "all the rows again (after /)",
    "its_cluster": "the highlighted request's cluster, in the Clusters pane",
    "its_threads": "the highlighted request's thread, in the Threads pane (with thread metrics)",
    "its_host": "the counters of the highlighted request's host, in the Counters pane (with counters of it)",
    "next_view": "next view of the highlighted row",
    "up": "up a level; at the top, back where a link came from",
    "correlations": "the counters that move with the highlighted one",
    "what_changed": "on an unusual interval, with spans given too: the requests before and after its start, "
                    "in Call trees",
}
# what enter opens, per pane
ENTER = {
    "Requests": "the request in full: the critical path of every thread, its segments",
    "Clusters": "the highlighted cluster's requests, in the Requests pane",
    "Threads": "open the highlighted comparison, or go down into the highlighted abstraction's threads (or the next level)",
    "Findings": "what the finding is about: its cluster, request, (method, replica), threads or server",
}
VIEWS = {
    "Clusters": "distinctive n-grams / state counts / Isomap map / inertia curve",
    "Call trees": "the method on each replica / an example call tree / against the reference / the links "
                  "between services (time between client and server)",
    "Threads": "metrics against the majority / plot / dendrogram with heights and AU",
    "Counters": "the server against the fleet / over time / correlations",
}
NAMES = {"slash": "/", "question_mark": "?", "escape": "esc", "enter": "enter", "down": "↓", "up": "↑",
         "pagedown": "pgdn", "pageup": "pgup", "home": "home", "end": "end", "space": "space",
         "ctrl+d": "^d", "ctrl+u": "^u", "ctrl+c": "^c", "ctrl+p": "^p", "tab": "tab"}
LETTERS = [
    ("u s", "running in user mode (RU) / in a system call (RS)"),
    ("p", "preempted: runnable, waiting for a CPU (BP)"),
    ("D N T", "blocked on disk (BD) / network (BN) / a timer (BS)"),
    ("I F ?", "blocked on an interrupt (BI) / in futex (BF) / on a task not followed (BT)"),
]


def what(binding: Binding) -> str:
    """What a key does: the long text for its action (arguments aside), else its description."""
    return LONG.get(binding.action.split("(", 1)[0], binding.description)


def key_names(binding: Binding) -> str:
    return ", ".join(NAMES.get(k.strip(), k.strip()) for k in binding.key.split(","))


def pane_sections() -> list[tuple[str, list[Binding]]]:
    """(pane title, its own bindings) for every pane, in the tabs' order."""
    from perftriage.tui.panes.calltrees import CallTreesPane  # noqa: PLC0415
    from perftriage.tui.panes.clusters import ClustersPane  # noqa: PLC0415
    from perftriage.tui.panes.counters import CountersPane  # noqa: PLC0415
    from perftriage.tui.panes.findings import FindingsPane  # noqa: PLC0415
    from perftriage.tui.panes.requests import RequestsPane  # noqa: PLC0415
    from perftriage.tui.panes.threads import ThreadsPane  # noqa: PLC0415

    out = []
    for title, cls in (("Requests", RequestsPane), ("Clusters", ClustersPane), ("Call trees", CallTreesPane),
                       ("Threads", ThreadsPane), ("Counters", CountersPane), ("Findings", FindingsPane)):
        seen, keys = set(), []
        for klass in cls.__mro__:  # the pane's own bindings, then those it inherits (v: next view)
            for b in getattr(klass, "BINDINGS", []) if "BINDINGS" in vars(klass) else []:
                b = b if isinstance(b, Binding) else Binding(*b)
                if b.action not in seen:
                    seen.add(b.action)
                    keys.append(b)
        out.append((title, keys))
    return out


def help_sections(current: str | None = None) -> list[tuple[str, list[tuple[str, str]]]]:
    """Every key, (section, [(keys, what)]): the pane ``current`` first, then everywhere, the
    lists, the other panes."""
    from perftriage.tui.app import PerftriageApp  # noqa: PLC0415
    from perftriage.tui.widgets.row_table import RowTable  # noqa: PLC0415

    panes = []
    for title, binds in pane_sections():
        keys = [(key_names(b), what(b)) for b in binds]
        if title in ENTER:
            keys.append(("enter", ENTER[title]))
        if title in VIEWS:
            keys = [(k, f"view: {VIEWS[title]}" if w == LONG["next_view"] else w) for k, w in keys]
        if title == "Call trees":
            keys.append(("tab", "between the ranked (method, replica) pairs and the categories"))
        panes.append((title, keys))
    everywhere = []
    for b in PerftriageApp.BINDINGS:
        if b.action.startswith("tab("):
            continue
        everywhere.append((key_names(b), what(b)))
    everywhere.insert(2, ("1 .. 6", "Requests, Clusters, Call trees, Threads, Counters, Findings"))
    everywhere.append(("^p", "the command palette: go to a pane, export, quit..."))
    lists = [(key_names(b), what(b)) for b in RowTable.BINDINGS]
    out = [(f"This pane: {title}", keys) for title, keys in panes if title == current]
    out += [("Everywhere", everywhere), ("Lists", lists)]
    out += [(title, keys) for title, keys in panes if title != current]
    out += [("Critical path letters", LETTERS), ("Dialogs", [("esc", "close")])]
    return out


def help_text(current: str | None = None) -> str:
    """The help as plain text (what the screen shows, unwrapped)."""
    lines = []
    for title, keys in help_sections(current):
        lines += [title] + [f"  {k:<20} {what}" for k, what in keys] + [""]
    return "\n".join(lines)


def help_renderable(current: str | None = None):
    """The help as the screen shows it: a section title, then keys and what they do, what wraps
    under what (a grid)."""
    from rich.console import Group  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    parts = [Text("perftriage keys  (j/k scroll, escape closes)", style="bold"), Text("")]
    for title, keys in help_sections(current):
        parts.append(Text(title, style="bold"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(width=20, no_wrap=True)
        grid.add_column(ratio=1)
        for k, what in keys:
            grid.add_row("  " + k, what)
        parts += [grid, Text("")]
    parts.append(Text("Runs over SSH: no mouse needed; NO_COLOR is respected; 80x24 at least."))
    return Group(*parts)


class HelpScreen(ModalScreen):
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "close"),
        Binding("j,down", "scroll(1)", "down", show=False),
        Binding("k,up", "scroll(-1)", "up", show=False),
        Binding("space,pagedown,ctrl+d", "scroll(10)", "page down", show=False),
        Binding("pageup,ctrl+u", "scroll(-10)", "page up", show=False),
        Binding("g,home", "scroll(-100000)", "top", show=False),
        Binding("G,end", "scroll(100000)", "bottom", show=False),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 100%; height: 100%; border: round $accent; background: $surface;
                                  padding: 0 1; }
    """

    def __init__(self, current: str | None = None):
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_renderable(self.current), id="help-text")

    def action_scroll(self, lines: int) -> None:
        box = self.query_one(VerticalScroll)
        box.scroll_to(y=max(0, box.scroll_y + lines), animate=False)
