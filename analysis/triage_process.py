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
- ``("done", fields, facts)``: facts = {"peak_rss": the child's peak resident memory, bytes,
  "serves_paths": whether it stays to answer path questions}
- ``("path", key, PathView or None, error text)``: the answer to a path question
- ``("error", kind, text)``: kind "input" (a PerftriageError: one line for the user), "missing"
  (a missing dependency) or "internal" (a bug: the traceback's last line)

The execution graphs (the largest part of a kernel trace's result, about 25 bytes per event) stay
in the child, in memory-mapped files once the analyses that read them are done (on_disk.py): the
app gets a ``KeptGraph`` per host instead, and asks for the critical path of the request it shows,
``(key, host, tid, t0, t1)`` pickled on the child's stdin, answered by a thread of the child while
it analyses and after. A child with graphs lives on after its result, holding only
the graphs, until the app closes its stdin (or dies) or stops it: the app's memory and the time to
send the graphs are those of the report's process, not twice.

Anything the child or a library prints goes to its log (a temporary file), never to the terminal
the app draws on; the log's last line explains a child that died without a word.
"""

from __future__ import annotations

import gc
import itertools
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from dataclasses import fields as dc_fields
from typing import Iterator

from perftriage.analysis.errors import MissingDependency, PerftriageError


class AnalysisStopped(PerftriageError):
    """The analysis was stopped (quit or cancel) before it ended."""


@dataclass(frozen=True)
class KeptGraph:
    """In the app, a host's execution graph that the analysing child keeps: the critical paths
    over it come from ``TriageProcess.path_view``."""

    host: str
    n_intervals: int


class TriageProcess:
    """One analysis in a child process; iterate ``messages()`` in one thread, ``stop()`` and
    ``path_view()`` from any."""

    def __init__(self, paths=None, options=None):
        """Starts the child at once; it imports the analyses while the caller prepares ``paths``
        and ``options`` (given here, or later to ``send``)."""
        self.log = tempfile.TemporaryFile(prefix="perftriage-analysis-", suffix=".log")
        # the child's temporary files (a damaged trace's salvaged streams, graphs on disk) in a
        # folder of this process's: a child killed at once (q, cancel) cannot remove its own, and
        # a salvage view holds copies of a trace's streams
        self.tmp = tempfile.TemporaryDirectory(prefix="perftriage-analysis-")
        self.proc = subprocess.Popen([sys.executable, "-m", "perftriage.analysis.triage_process"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     env={**os.environ, "TMPDIR": self.tmp.name},
                                     start_new_session=True)  # Ctrl-C in the terminal is the app's
        self.stopped = False
        self.peak_rss = 0  # the child's peak resident memory, told with its result
        self.serves_paths = False  # it lives on after its result, answering path questions
        self._lock = threading.Lock()
        self._stdin = threading.Lock()  # what to analyse, then path questions, one writer at a time
        self._queue: queue.Queue = queue.Queue()  # its messages but the answers, None at the end
        self._answers: dict[int, list] = {}  # path question -> [event, (view, error)]
        self._keys = itertools.count()
        self._ended = False
        self._broken = ""  # why its messages could not be read
        threading.Thread(target=self._read, name="perftriage-analysis-reader", daemon=True).start()
        if paths is not None:
            self.send(paths, options)

    def _read(self) -> None:
        """Reads the child's messages: answers go to who asked, the rest to ``messages()``."""
        out = self.proc.stdout
        while True:
            try:
                msg = pickle.load(out)
            except (EOFError, pickle.UnpicklingError, OSError, ValueError):
                break
            except Exception as exc:  # noqa: BLE001 - a message this side cannot rebuild (a bug)
                self._broken = f"a message of the analysis process could not be read: {type(exc).__name__}: {exc}"
                self.stop()
                break
            if msg[0] == "path":
                with self._lock:
                    slot = self._answers.pop(msg[1], None)
                if slot is not None:
                    slot[1] = (msg[2], msg[3])
                    slot[0].set()
                continue
            self._queue.put(msg)
        with self._lock:
            self._ended = True
            waiting, self._answers = list(self._answers.values()), {}
        for slot in waiting:
            slot[1] = (None, "the analysis process has ended")
            slot[0].set()
        self._queue.put(None)

    def send(self, paths, options) -> None:
        """What to analyse (once)."""
        try:
            with self._stdin:
                pickle.dump(([os.fspath(p) for p in paths], options), self.proc.stdin, protocol=5)
                self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the child died at start: messages() says why from its log

    def path_view(self, host: str, tid: int, t0: int, t1: int, timeout: float = 120.0):
        """The critical path of ``tid`` of ``host`` over [t0, t1] (a PathView), from the graphs
        the child keeps; PerftriageError when it cannot answer (ended, stopped, an error there)."""
        event, slot = threading.Event(), [None, None]
        with self._lock:
            if self._ended or self.stopped:
                raise PerftriageError("the analysis process has ended")
            key = next(self._keys)
            slot[0] = event
            self._answers[key] = slot
        try:
            with self._stdin:
                pickle.dump((key, host, int(tid), int(t0), int(t1)), self.proc.stdin, protocol=5)
                self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            with self._lock:
                self._answers.pop(key, None)
            raise PerftriageError("the analysis process has ended") from None
        if not event.wait(timeout):
            with self._lock:
                self._answers.pop(key, None)
            raise PerftriageError(f"no answer from the analysis process within {timeout:g} s")
        view, error = slot[1]
        if error:
            raise PerftriageError(error)
        return view

    def messages(self) -> Iterator[tuple]:
        """The child's messages until it ends; then AnalysisStopped when it was stopped, or
        PerftriageError with its log's last line when it died without saying why."""
        while True:
            msg = self._queue.get()
            if msg is None:
                break
            if msg[0] == "done" and len(msg) > 2:
                self.peak_rss = int(msg[2].get("peak_rss", 0))
                self.serves_paths = bool(msg[2].get("serves_paths"))
            yield msg
            if msg[0] in ("done", "error"):
                if not self.serves_paths:
                    self.proc.wait()
                return
        rc = self.proc.wait()
        if self._broken:
            raise PerftriageError(f"internal error in the analysis (a bug in perftriage; please report it): "
                                  f"{self._broken}")
        if self.stopped:
            raise AnalysisStopped("the analysis was stopped")
        raise PerftriageError(f"the analysis process ended unexpectedly (exit {rc}): {self.last_log_line()}")

    def has_more(self) -> bool:
        """Whether another message is waiting already (``messages()`` would not block)."""
        return not self._queue.empty()

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
        try:  # dead in milliseconds: then its temporary files go
            self.proc.wait(2.0)
        except subprocess.TimeoutExpired:
            return
        self.tmp.cleanup()

    def reap(self, timeout: float = 5.0) -> None:
        """Wait for the child to exit after its last message (killed if it does not); one that
        serves paths is left to serve them."""
        if self.serves_paths and not self.stopped:
            return
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            self.proc.wait()

    def reap_later(self) -> None:
        """``reap()`` and close the log in a thread of their own: an interpreter with scipy and
        scikit-learn loaded takes about a second to exit, which no one should wait for."""
        def reap_and_close():
            self.reap()
            if not self.serves_paths or self.stopped:
                self.log.close()
                if self.proc.poll() is not None:
                    self.tmp.cleanup()

        threading.Thread(target=reap_and_close, name="perftriage-analysis-reaper", daemon=True).start()

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
        try:
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass


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
    # the graphs this child keeps for the paths leave the heap where the report lets them go:
    # the child peaks where the report does, not 60% above (execgraph/on_disk.py)
    options.graphs_on_disk = True

    # this module runs as __main__ here: the app rebuilds the stand-ins of the importable module
    from perftriage.analysis.triage_process import KeptGraph  # noqa: PLC0415

    names = [f.name for f in dc_fields(TriageResult) if f.name != "publish"]
    sent: dict[str, object] = {}  # the values sent (kept: an id could be reused by a new value)
    kept: dict[str, object] = {}  # the graphs, kept here for the app's path questions, and their PathSource
    lock = threading.Lock()  # the main thread's messages and the answers share the channel

    def send(msg) -> None:
        with lock:
            pickle.dump(msg, channel, protocol=5)
            channel.flush()

    def changed(result) -> dict:
        out = {}
        for name in names:
            value = getattr(result, name)
            if name == "report" or name not in sent or sent[name] is not value:
                sent[name] = value
                if name == "graphs" and value:  # kept here: the app asks for the paths it shows
                    kept["graphs"] = value
                    value = {h: KeptGraph(h, g.n_intervals) for h, g in value.items()}
                out[name] = value
        return out

    def progress(p: Progress) -> None:
        send(("progress", p))

    delay = float(os.environ.get("PERFTRIAGE_PART_DELAY", "0") or 0)  # tests: hold after each part

    def publish(part: str, result) -> None:
        send(("part", part, changed(result)))
        source = kept.get("source")
        if source is not None:  # the graphs may have left the heap: the path lookups let go of it too
            source.let_go_if_moved()
        if delay:
            time.sleep(delay)

    server = threading.Thread(target=_answer_paths, args=(kept, send), name="perftriage-paths", daemon=True)
    server.start()
    try:
        result = run_triage(paths, options, progress=progress, publish=publish)
        fields = changed(result)
        serves = bool(kept.get("graphs"))
        send(("done", fields, {"peak_rss": status_bytes("VmHWM"), "serves_paths": serves}))
        if serves:  # only the graphs are kept while the app shows the requests
            from perftriage.analysis.execgraph.store import release_freed_memory  # noqa: PLC0415

            del result, fields
            sent.clear()
            gc.collect()
            release_freed_memory()
            server.join()  # until the app closes our stdin (it quit, or ran another analysis)
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


def _answer_paths(kept: dict, send) -> None:
    """The app's path questions, ``(key, host, tid, t0, t1)`` on stdin, answered from the kept
    graphs, until stdin ends."""
    source = None
    while True:
        try:
            key, host, tid, t0, t1 = pickle.load(sys.stdin.buffer)
        except (EOFError, OSError, pickle.UnpicklingError, ValueError, TypeError):
            return
        try:
            from perftriage.analysis.requests.path_view import PathSource  # noqa: PLC0415

            graphs = kept.get("graphs") or {}
            if source is None or source.graphs is not graphs:
                source = kept["source"] = PathSource(graphs)
            send(("path", key, *source.path(host, tid, t0, t1)))
        except BrokenPipeError:
            return
        except Exception as exc:  # noqa: BLE001 - said to the app, which shows it
            send(("path", key, None, f"{type(exc).__name__}: {exc}"))


if __name__ == "__main__":
    sys.exit(_child())
