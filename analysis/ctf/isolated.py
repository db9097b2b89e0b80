"""Decoding in a child process, under a memory limit: whatever babeltrace2 does with a damaged
trace (abort, or allocate a corrupted sequence length until the host runs out of memory), the
reader gets what was decoded before, then one error naming the trace.

The child is forked when the read starts (the graph, the plans and the catalogues are already
there); it runs the reader's own loop and sends each chunk with sparse columns (values and
rows, a fraction of the dense size) and what it added to the catalogues (event names, strings,
hosts, trace facts), framed and pickled, through a pipe. The parent applies the additions to its
reader, so chunk codes mean the same on both sides, and densifies the columns.
"""

from __future__ import annotations

import os
import signal
import traceback

from perftriage.analysis.errors import TraceReadError
from perftriage.analysis.frames import receive as _receive
from perftriage.analysis.frames import send as _send

CAP_EXTRA = 1 << 30  # the child may grow by this much beyond the parent's size at the fork (it needs ~100 MiB)


def status_bytes(field: str) -> int:
    """A memory figure of this process from /proc/self/status ("VmSize", "VmHWM"...), in bytes;
    0 where /proc does not say."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class _Sent:
    """How much of the reader's catalogues the child has sent."""

    def __init__(self, reader):
        self.names = len(reader.event_names)
        self.strings = len(reader.strings.strings)
        self.hosts = len(reader.hosts)

    def delta(self, reader, state) -> dict:
        d = {
            "names": reader.event_names[self.names:],
            "strings": reader.strings.strings[self.strings:],
            "hosts": reader.hosts[self.hosts:],
            "traces": [dict(t.__dict__) for t in reader.traces],
            "event_fields": {k: list(v) for k, v in reader.event_fields.items()},
            "asked": set(state.asked) if state is not None else set(),
        }
        self.names, self.strings, self.hosts = len(reader.event_names), len(reader.strings.strings), len(reader.hosts)
        return d


def _child(reader, state, graph, w: int, go: int | None, prepare=None) -> None:
    """In the child: the reader's loop, every item sent; never returns. With ``go`` (lockstep),
    each item is made only when the parent asks for it (one byte): the two never run at once.
    ``prepare``: makes the (state, graph) to run here, under the memory cap (split.py)."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's; it kills the child
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)  # babeltrace2's and glib's own lines of a crash: the parent says it in one line
        try:
            import resource  # noqa: PLC0415

            cap = status_bytes("VmSize") + CAP_EXTRA
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        except (ImportError, ValueError, OSError):
            pass
        sent = _Sent(reader)

        def send(kind, item):
            _send(w, (kind, item, sent.delta(reader, state)))

        if prepare is not None:
            state, graph = prepare()

        items = reader._produce(state, graph, sparse=True)
        while True:
            if go is not None and not os.read(go, 1):
                return  # the parent stopped reading
            try:
                kind, item = next(items)
            except StopIteration:
                break
            if kind == "error":  # TraceReadError does not pickle: its parts do
                item = (item.path, item.problem, item.events_read, getattr(item, "cause", item.problem))
            send(kind, item)
        send("end", None)
    except BaseException as exc:  # noqa: BLE001  (handed to the parent, which raises it)
        try:
            send("raise", (type(exc).__name__, str(exc), traceback.format_exc()))
        except BaseException:  # noqa: BLE001
            code = 1
    finally:
        os._exit(code)


def _apply(reader, state, delta: dict) -> None:
    for name in delta["names"]:
        reader.event_code(name)
    for s in delta["strings"]:
        reader.strings.code(s)
    for h in delta["hosts"]:
        reader.host_code(h)
    for t, d in zip(reader.traces, delta["traces"]):
        t.__dict__.update(d)
    for k, v in delta["event_fields"].items():
        reader.event_fields[k] = v
    state.asked |= delta["asked"]


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"signal {signal.Signals(sig).name}"
        except ValueError:
            return f"signal {sig}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def died(status: int) -> str:
    """What to say of a decoding child that ended without saying so (its wait status)."""
    return (f"babeltrace2 stopped decoding ({_how(status)}, e.g. a corrupted length in an event asking for more "
            "memory than allowed): the trace is damaged there")


def raise_failure(item) -> None:
    """Raise what a child's "raise" item says (its exception's name, text and traceback)."""
    name, text, tb = item
    if name == "KeyboardInterrupt":
        raise KeyboardInterrupt
    raise RuntimeError(f"the decoding process failed: {name}: {text}\n{tb}")


def in_child(reader, state, graph, lockstep: bool = False):
    """The reader's items (see CtfReader._produce), decoded in a child process. ``lockstep``
    (--jobs 1): the child decodes only while the parent waits for the next item."""
    r, w = os.pipe()
    go_r, go_w = os.pipe() if lockstep else (None, None)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; checked through the parent
        os.close(r)
        if go_w is not None:
            os.close(go_w)
        _child(reader, state, graph, w, go_r)
    os.close(w)
    if go_r is not None:
        os.close(go_r)
    ended = False
    produced = 0
    try:
        while True:
            if go_w is not None:
                os.write(go_w, b"1")
            frame = _receive(r)
            if frame is None:
                break
            kind, item, delta = frame
            _apply(reader, state, delta)
            if kind == "chunk":
                raw, tables = item
                produced += raw.n
                if raw.n:
                    state.last_ts = int(raw.ts[-1])
                yield "chunk", (raw.densified(), tables)
            elif kind == "progress":
                yield kind, item
            elif kind == "error":
                ended = True
                yield "error", TraceReadError(*item[:3])
                return
            elif kind == "raise":
                ended = True
                raise_failure(item)
            else:  # "end"
                ended = True
                return
        # the child ended without saying so: babeltrace2 aborted, or ran out of its memory
        _, status = os.waitpid(pid, 0)
        pid = 0
        yield "error", TraceReadError(reader._path_of_component(None),
                                      f"{reader._stopped_at(state, produced)}: {died(status)}", produced)
    finally:
        os.close(r)
        if go_w is not None:
            os.close(go_w)
        if pid:
            if not ended:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            os.waitpid(pid, 0)
