"""Each trace's time range, from ctf.fs's ``babeltrace.trace-infos`` query, asked in a child process.

babeltrace2 2.0.4 aborts the whole process (SIGABRT, "Component is NULL") when that query meets
some damaged packet headers, although reading the same trace through a graph fails cleanly. The
query therefore runs in a forked child: an abort there costs only the time range (used for
progress and for saying how far into the trace a read stopped), and the graph that reads the
trace afterwards reports the damage as an ordinary error.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
from pathlib import Path

from .bt2_support import error_text


class RangeQueryFailed(Exception):
    """The query crashed on this trace (babeltrace2 aborted the child that asked it): its range is unknown."""


def _query(bt2, path: Path) -> tuple[int, int] | None:
    fs = bt2.find_plugin("ctf").source_component_classes["fs"]
    infos = bt2.QueryExecutor(fs, "babeltrace.trace-infos", params={"inputs": [str(path)]}).query()
    begins, ends = [], []
    for info in infos:
        for s in info["stream-infos"]:
            if "range-ns" in s:
                begins.append(int(s["range-ns"]["begin"]))
                ends.append(int(s["range-ns"]["end"]))
    return (min(begins), max(ends)) if begins else None


def _child(bt2, paths: list[Path], w: int) -> None:
    """One JSON line per trace, written as soon as it is known (what the parent keeps if a later
    query aborts)."""
    for p in paths:
        try:
            item = {"range": _query(bt2, p)}
        except bt2._Error as exc:
            item = {"error": error_text(exc)[0]}
        except Exception as exc:  # noqa: BLE001 - anything else is reported, the parent decides
            item = {"error": f"{type(exc).__name__}: {exc}"}
        os.write(w, (json.dumps(item) + "\n").encode())


def _forked(work, log: bool = False) -> tuple[bytes, int]:
    """``work(w)`` run in a forked child that writes to the pipe ``w``: what it wrote and how it
    ended (waitpid's status). babeltrace2's own log lines (stderr) go to that pipe too with
    ``log``, else nowhere: the parent says a crash in one line."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, checked through the parent
        code = 0
        try:
            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            faulthandler.disable()
            os.dup2(w if log else os.open(os.devnull, os.O_WRONLY), 2)
            work(w)
        except BaseException:  # noqa: BLE001 - an error, not a crash: the parent decides
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    return data, status


def _ask(bt2, paths: list[Path]) -> tuple[list, str | None]:
    """The answers a child gave before it ended, and how it ended when that was not normal."""
    data, status = _forked(lambda w: _child(bt2, paths, w))
    answers = []
    for line in data.decode("utf-8", "replace").splitlines()[: len(paths)]:
        item = json.loads(line)
        answers.append(str(item["error"]) if "error" in item else (tuple(item["range"]) if item["range"] else None))
    if len(answers) == len(paths):
        return answers, None
    if os.WIFSIGNALED(status):
        return answers, f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return answers, f"exit status {os.waitstatus_to_exitcode(status)}"


def trace_ranges(bt2, paths: list[Path]) -> list:
    """Per path: ``(begin_ns, end_ns)``; None when the trace declares no range; a str, the query's
    error message (the trace cannot be opened); or :class:`RangeQueryFailed` when the query
    crashed on that trace (the traces after it are asked again in a new child)."""
    results: list = []
    while len(results) < len(paths):
        answers, crash = _ask(bt2, paths[len(results):])
        results.extend(answers)
        if crash is not None and len(results) < len(paths):
            results.append(RangeQueryFailed(f"babeltrace2's trace-infos query crashed ({crash})"))
    return results


def open_crash(bt2, path: Path) -> str | None:
    """Whether babeltrace2 aborts building the trace's classes from its metadata (a precondition
    of its library failed: variant options whose values overlap, say), tried in a forked child
    before this process builds them: the abort's message, else None (opened, or an error that
    the reader says as for any trace)."""

    def build(_w) -> None:
        graph = bt2.Graph()
        graph.add_component(bt2.find_plugin("ctf").source_component_classes["fs"], "src",
                            params={"inputs": [str(path)]}, logging_level=bt2.LoggingLevel.NONE)

    data, status = _forked(build, log=True)  # babeltrace2's fatal log line, for the parent to say
    log = data.decode("utf-8", "replace")
    if not os.WIFSIGNALED(status):
        return None
    fatal = [ln for ln in log.splitlines() if " F " in ln and "Aborting" not in ln]
    fatal = [ln for ln in fatal if "precondition not satisfied" not in ln] or fatal  # the condition itself
    reason = fatal[0].split(" ", 6)[-1] if fatal else ""
    reason = reason.split("@", 1)[-1].split(" ", 1)[-1] if "@" in reason else reason
    return (reason.split(": addr=")[0].strip() or "no message") + f" ({signal.Signals(os.WTERMSIG(status)).name})"
