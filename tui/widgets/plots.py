"""Charts drawn with plotext into rich Text (bars, scatter, lines), colourless under NO_COLOR.

plotext keeps one global figure: every chart is built under a lock, from whatever thread."""

from __future__ import annotations

import os
import threading

from rich.text import Text

from .row_table import elide_middle

LEGEND_NAME = 32  # a series' name in the legend: at most this wide


class _Plotext:
    """plotext, imported at the first chart: not among the imports before the app's first
    screen (36 ms of them)."""

    def __getattr__(self, name: str):
        import plotext  # noqa: PLC0415

        return getattr(plotext, name)


plt = _Plotext()

_LOCK = threading.Lock()
SERIES_COLORS = ["blue", "red", "green", "orange", "magenta", "cyan", "yellow", "gray", "white", "violet"]
RICH_COLORS = ["blue", "red", "green", "dark_orange", "magenta", "cyan", "yellow", "grey50", "white", "violet"]  # the same, for rich
# each series also has a marker of its own, so that the plot reads without colour (NO_COLOR, a
# ticket pasted as text): points and lines, and bar fills
POINT_MARKERS = ["•", "x", "o", "+", "*", "#", "@", "%", "=", "~"]
BAR_MARKERS = ["█", "░", "▒", "#", "=", "+", "x", "o", "*", "~"]


def _start(width: int, height: int, title: str = "") -> None:
    plt.clear_figure()
    plt.plotsize(max(20, width), max(6, height))
    if os.environ.get("NO_COLOR"):
        plt.theme("clear")
    else:
        plt.theme("pro")
    if title:  # plotext leaves out a title wider than the chart: cut it to fit instead
        plt.title(title if len(title) <= width - 4 else title[:max(1, width - 5)] + "…")


def _finish(legend: list[tuple[str, str]] | None = None) -> Text:
    """The chart, then its legend on a line of its own below the plot area (marker, name), so
    that it never hides a series."""
    out = plt.build()
    plt.clear_figure()
    lines = out.split("\n")
    while len(lines) > 1 and not plt.uncolorize(lines[-1]).strip():  # the empty x-label line: a line for the legend
        lines.pop()
    out = "\n".join(lines)
    text = Text.from_ansi(out) if not os.environ.get("NO_COLOR") else Text(plt.uncolorize(out))
    if legend:
        key = Text("\n")
        for i, (marker, name) in enumerate(legend):
            if i:
                key.append("   ")
            style = None if os.environ.get("NO_COLOR") else RICH_COLORS[i % len(RICH_COLORS)]
            key.append(f"{marker * 2} ", style=style)
            key.append(elide_middle(name, LEGEND_NAME))  # a server named by a 64-hex hash: its ends
        text.append_text(key)
    return text


def bars(labels: list[str], series: dict[str, list[float]], width: int, height: int, title: str = "",
         horizontal: bool = False) -> Text:
    with _LOCK:
        _start(width, height, title)
        names = list(series)
        if len(names) == 1:
            plt.bar(labels, series[names[0]], orientation="horizontal" if horizontal else "vertical",
                    color=SERIES_COLORS[0], width=0.6, marker=BAR_MARKERS[0])
            return _finish()
        plt.multiple_bar(labels, [series[n] for n in names], color=SERIES_COLORS[: len(names)],
                         marker=BAR_MARKERS[: len(names)], orientation="horizontal" if horizontal else "vertical")
        return _finish([(BAR_MARKERS[i % len(BAR_MARKERS)], n) for i, n in enumerate(names)])


def scatter(groups: dict[str, tuple[list[float], list[float]]], width: int, height: int, title: str = "",
            log: bool = True) -> Text:
    with _LOCK:
        _start(width, height, title)
        legend = []
        for i, (name, (x, y)) in enumerate(groups.items()):
            if len(x):
                marker = POINT_MARKERS[i % len(POINT_MARKERS)]
                plt.scatter(list(x), list(y), color=SERIES_COLORS[i % len(SERIES_COLORS)], marker=marker)
                legend.append((marker, name))
        if log:
            plt.xscale("log")
            plt.yscale("log")
        return _finish(legend if len(legend) > 1 else None)


def line(x: list[float], y: list[float], width: int, height: int, title: str = "", mark: float | None = None) -> Text:
    with _LOCK:
        _start(width, height, title)
        plt.plot(list(x), list(y), marker="dot", color=SERIES_COLORS[0])
        if mark is not None:
            plt.vertical_line(mark, color=SERIES_COLORS[1])
        return _finish()


def line_series(x: list[float], series: dict[str, list[float]], width: int, height: int, title: str = "",
                xticks: tuple[list[float], list[str]] | None = None) -> Text:
    """Several lines on shared axes (nan points skipped); ``xticks``: (positions, labels) of the
    x axis instead of plotext's numbers (times, for a chart over time)."""
    import math  # noqa: PLC0415

    with _LOCK:
        _start(width, height, title)
        if xticks is not None:
            plt.xticks(list(xticks[0]), list(xticks[1]))
        legend = []
        for i, (name, y) in enumerate(series.items()):
            pts = [(a, b) for a, b in zip(x, y) if b is not None and not math.isnan(b)]
            if pts:
                marker = POINT_MARKERS[i % len(POINT_MARKERS)]
                plt.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker,
                         color=SERIES_COLORS[i % len(SERIES_COLORS)])
                legend.append((marker, name))
        return _finish(legend if len(legend) > 1 else None)
