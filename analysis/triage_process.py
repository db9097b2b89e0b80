"""run_triage in a child process that can be stopped at once, its parts streamed back as they come.

The app analyses in this child (not in a thread of its own, which nothing can stop): quitting or
cancelling kills the child within milliseconds, and what was published before (triage.PARTS:
the requests, their clusters, the thread pools...) is kept. The child is a fresh interpreter
running the same ``run_triage`` as ``perftriage report``: it takes as long and as much memory,
and its imports (scipy, scikit-learn, bt2) do not delay the app's first screen.

Protocol: the parent writes ``(paths, options)`` pickled on the child's stdin; the child writes
pickled messages on its stdout, flushed one by one:

- ``("progress", Progress)``
- ``("part", name, fields)``: the TriageResult fields that changed since the last message (the
  report every time: findings are added as analyses end)
- ``("done", fields, facts)``: facts = {"peak_rss": the child's peak resident memory, bytes}
- ``("error", kind, text)``: kind "input" (a PerftriageError: one line for the user), "missing"
  (a missing dependency) or "internal" (a bug: the traceback's last line)

Anything the child or a library prints goes to its log (a temporary file), never to the terminal
the app draws on; the log's last line explains a child that died without a word.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import fields as dc_fields
from typing import Iterator

from perftriage.analysis.errors import MissingDependency, PerftriageError


class AnalysisStopped(PerftriageError):
    """The analysis was stopped (quit or cancel) before it ended."""


class TriageProcess:
    """One analysis in a child process; iterate ``messages()`` in one thread, ``stop()`` from any."""

    def __init__(self, paths=None, options=None):
        """Starts the child at once; it imports the analyses while the caller prepares ``paths``
        and ``options`` (given here, or later to ``send``)."""
        self.log = tempfile.TemporaryFile(prefix="perftriage-analysis-", suffix=".log")
        self.proc = subprocess.Popen([sys.executable, "-m", "perftriage.analysis.triage_process"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     start_new_session=True)  # Ctrl-C in the terminal is the app's
        self.stopped = False
        self.peak_rss = 0  # the child's peak resident memory, told with its result
        self._lock = threading.Lock()
        if paths is not None:
            self.send(paths, options)

    def send(self, paths, options) -> None:
        """What to analyse (once)."""
        try:
            pickle.dump(([os.fspath(p) for p in paths], options), self.proc.stdin, protocol=5)
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # the child died at start: messages() says why from its log

    def messages(self) -> Iterator[tuple]:
        """The child's messages until it ends; then AnalysisStopped when it was stopped, or
        PerftriageError with its log's last line when it died without saying why."""
        out = self.proc.stdout
        while True:
            try:
                msg = pickle.load(out)
            except (EOFError, pickle.UnpicklingError, OSError, ValueError):
                break
            if msg[0] == "done" and len(msg) > 2:
                self.peak_rss = int(msg[2].get("peak_rss", 0))
            yield msg
            if msg[0] in ("done", "error"):
                self.proc.wait()
                return
        rc = self.proc.wait()
        if self.stopped:
            raise AnalysisStopped("the analysis was stopped")
        raise PerftriageError(f"the analysis process ended unexpectedly (exit {rc}): {self.last_log_line()}")

    def stop(self) -> None:
        """Kill the child (and the processes it started: its session) at once."""
        with self._lock:
            if self.proc.poll() is not None:
                return
            self.stopped = True
            try:
                os.killpg(self.proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()

    def reap(self, timeout: float = 5.0) -> None:
        """Wait for the child to exit after its last message (killed if it does not)."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            self.proc.wait()

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def last_log_line(self) -> str:
        try:
            self.log.seek(0)
            lines = [ln for ln in self.log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        except OSError:
            return "no log"
        return lines[-1].strip() if lines else "nothing in its log"

    def close(self) -> None:
        self.stop()
        self.log.close()


def raise_error(kind: str, text: str):
    if kind == "missing":
        raise MissingDependency(text)
    if kind == "input":
        raise PerftriageError(text)
    raise PerftriageError(f"internal error in the analysis (a bug in perftriage; please report it): {text}")


def _child() -> int:
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints (libraries, C code) go to the log, not into the channel
    sys.stdout = sys.stderr
    # the analyses are imported first: the parent is still preparing what to analyse
    from perftriage.analysis.ctf.isolated import status_bytes  # noqa: PLC0415
    from perftriage.analysis.triage import Progress, TriageResult, run_triage  # noqa: PLC0415

    try:
        paths, options = pickle.load(sys.stdin.buffer)
    except EOFError:
        return 0  # the parent gave nothing to analyse (it stopped first)

    names = [f.name for f in dc_fields(TriageResult) if f.name != "publish"]
    sent: dict[str, object] = {}  # the values sent (kept: an id could be reused by a new value)

    def send(msg) -> None:
        pickle.dump(msg, channel, protocol=5)
        channel.flush()

    def changed(result) -> dict:
        out = {}
        for name in names:
            value = getattr(result, name)
            if name == "report" or name not in sent or sent[name] is not value:
                out[name] = value
                sent[name] = value
        return out

    def progress(p: Progress) -> None:
        send(("progress", p))

    delay = float(os.environ.get("PERFTRIAGE_PART_DELAY", "0") or 0)  # tests: hold after each part

    def publish(part: str, result) -> None:
        send(("part", part, changed(result)))
        if delay:
            time.sleep(delay)

    try:
        result = run_triage(paths, options, progress=progress, publish=publish)
        send(("done", changed(result), {"peak_rss": status_bytes("VmHWM")}))
    except MissingDependency as exc:
        send(("error", "missing", str(exc)))
    except PerftriageError as exc:
        send(("error", "input", str(exc)))
    except BrokenPipeError:
        return 1  # the app is gone
    except BaseException as exc:  # noqa: BLE001 - said to the app, which shows it
        import traceback  # noqa: PLC0415

        traceback.print_exc()
        send(("error", "internal", f"{type(exc).__name__}: {exc}"))
    return 0


if __name__ == "__main__":
    sys.exit(_child())
