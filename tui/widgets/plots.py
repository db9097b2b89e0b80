"""Charts drawn with plotext into rich Text (bars, scatter, lines), colourless under NO_COLOR.

plotext keeps one global figure: every chart is built under a lock, from whatever thread."""

from __future__ import annotations

import os
import threading

import plotext as plt
from rich.text import Text

_LOCK = threading.Lock()
SERIES_COLORS = ["blue", "red", "green", "orange", "magenta", "cyan", "yellow", "gray", "white", "violet"]


def _start(width: int, height: int, title: str = "") -> None:
    plt.clear_figure()
    plt.plotsize(max(20, width), max(6, height))
    if os.environ.get("NO_COLOR"):
        plt.theme("clear")
    else:
        plt.theme("pro")
    if title:
        plt.title(title)


def _finish() -> Text:
    out = plt.build()
    plt.clear_figure()
    return Text.from_ansi(out) if not os.environ.get("NO_COLOR") else Text(plt.uncolorize(out))


def bars(labels: list[str], series: dict[str, list[float]], width: int, height: int, title: str = "",
         horizontal: bool = False) -> Text:
    with _LOCK:
        _start(width, height, title)
        names = list(series)
        if len(names) == 1:
            plt.bar(labels, series[names[0]], orientation="horizontal" if horizontal else "vertical",
                    color=SERIES_COLORS[0], width=0.6)
        else:
            plt.multiple_bar(labels, [series[n] for n in names], labels=names,
                             color=SERIES_COLORS[: len(names)], orientation="horizontal" if horizontal else "vertical")
        return _finish()


def scatter(groups: dict[str, tuple[list[float], list[float]]], width: int, height: int, title: str = "",
            log: bool = True) -> Text:
    with _LOCK:
        _start(width, height, title)
        for i, (name, (x, y)) in enumerate(groups.items()):
            if len(x):
                plt.scatter(list(x), list(y), label=name, color=SERIES_COLORS[i % len(SERIES_COLORS)], marker="dot")
        if log:
            plt.xscale("log")
            plt.yscale("log")
        return _finish()


def line(x: list[float], y: list[float], width: int, height: int, title: str = "", mark: float | None = None) -> Text:
    with _LOCK:
        _start(width, height, title)
        plt.plot(list(x), list(y), marker="dot", color=SERIES_COLORS[0])
        if mark is not None:
            plt.vertical_line(mark, color=SERIES_COLORS[1])
        return _finish()


def line_series(x: list[float], series: dict[str, list[float]], width: int, height: int, title: str = "") -> Text:
    """Several lines on shared axes (nan points skipped)."""
    import math  # noqa: PLC0415

    with _LOCK:
        _start(width, height, title)
        for i, (name, y) in enumerate(series.items()):
            pts = [(a, b) for a, b in zip(x, y) if b is not None and not math.isnan(b)]
            if pts:
                plt.plot([p[0] for p in pts], [p[1] for p in pts], label=name,
                         color=SERIES_COLORS[(i + 1) % len(SERIES_COLORS)] if i == 0 else SERIES_COLORS[0])
        return _finish()
