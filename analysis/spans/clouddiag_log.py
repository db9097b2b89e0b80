"""The CloudDiag tracing log (paper 002, section IV): one line per method invocation and per
return, written by the host that runs the method::

    host,timestamp,request_id,mid,caller_mid,method,flag

``timestamp``: ns since the epoch (or any unit, decided by magnitude, or ISO 8601); ``mid``: the
invocation's id (the entry method's is the request id); ``caller_mid``: the caller's mid, empty
(or 0) for the entry method; ``flag``: ``invoke`` or ``return`` (``I``/``R`` accepted). A header
line is optional. Call relations come from the mids only: the invocation and return of one method
are logged by the same host, so its duration never mixes two clocks, and clock drift between
hosts cannot reorder calls. The service of a method is its name up to the last dot
(``AliStorage.readFile`` -> ``AliStorage``).
"""

from __future__ import annotations

from pathlib import Path

from perftriage.analysis.errors import InputError
from perftriage.analysis.units import count_of
from perftriage.analysis.inputs import open_data
from perftriage.analysis.timeparse import to_ns

from .ids import is_empty_id, to_id64
from .table import SpanBuilder

FLAGS_IN = {"invoke", "i", "call", "enter", "entry", "start"}
FLAGS_OUT = {"return", "r", "ret", "exit", "end"}


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def sniff(path: Path, head: bytes) -> bool:
    for line in head.decode("utf-8", "replace").splitlines()[:5]:
        parts = [p.strip().lower() for p in line.split(",")]
        if len(parts) == 7:
            # a data line has a number for its timestamp: a span CSV's header ending in `end`
            # (trace,span,parent,service,name,start,end) is not a log line
            if parts[:2] == ["host", "timestamp"] or (parts[6] in FLAGS_IN | FLAGS_OUT and _number(parts[1])):
                return True
    return False


def read(path: Path, b: SpanBuilder) -> None:
    open_calls: dict[tuple[str, str], tuple] = {}
    try:
        f = open_data(path)
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    with f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 7:
                b.problem("unparsable", f"{path.name}:{lineno}: {count_of(len(parts), 'fields')}, expected 7")
                continue
            host, ts, req, mid, caller, method, flag = parts
            fl = flag.lower()
            if lineno == 1 and host.lower() == "host":
                continue
            try:
                t = to_ns(ts, None)
            except ValueError:
                b.problem("unparsable", f"{path.name}:{lineno}: bad timestamp {ts!r}")
                continue
            key = (req, mid)
            if fl in FLAGS_IN:
                open_calls[key] = (host, t, caller, method)
            elif fl in FLAGS_OUT:
                start = open_calls.pop(key, None)
                if start is None:
                    b.problem("unparsable", f"{path.name}:{lineno}: return of {method} without its invocation")
                    continue
                h, t0, caller_mid, m = start
                parent = None if (is_empty_id(caller_mid) or caller_mid == mid) else to_id64(caller_mid)
                service = m.rsplit(".", 1)[0] if "." in m else m
                operation = m.rsplit(".", 1)[1] if "." in m else m
                b.add(req, to_id64(mid), parent, service, operation, h, t0, t)
            else:
                b.problem("unparsable", f"{path.name}:{lineno}: flag {flag!r} is neither invoke nor return")
    for _ in open_calls:
        b.problem("unfinished")
