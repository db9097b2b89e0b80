"""Request units cut from any kernel trace, without user-space markers.

- ``threads``: each thread's lifetime, from its fork (or first appearance) to its exit (or last
  appearance), as one request; threads seen from fork to exit are complete, others are marked
  ``partial`` in the ``span`` field;
- ``syscall:NAME``: each call of one system call (e.g. every ``read``, every ``connect``) of every
  thread, from its entry to its exit.
"""

from __future__ import annotations

import numpy as np

from perftriage.analysis.errors import PerftriageError
from perftriage.analysis.execgraph.graph import ExecGraph

from .table import RequestTable

UNIT_KINDS = ("markers", "threads", "syscall:NAME")


def parse_unit(spec: str) -> tuple[str, str | None]:
    if spec in ("markers", "threads"):
        return spec, None
    if spec.startswith("syscall:") and len(spec) > 8:
        return "syscall", spec[8:]
    raise PerftriageError(f"unknown request unit {spec!r}: use markers, threads or syscall:NAME (e.g. syscall:read)")


def thread_units(graphs: dict[str, ExecGraph], min_duration_ns: int = 0) -> RequestTable:
    rows = []
    for host, g in graphs.items():
        for tid, t in sorted(g.threads.items()):
            if tid <= 0 or tid not in g.tid_index:
                continue
            start = t.fork_ts if t.fork_ts is not None else t.first_ts
            end = t.exit_ts if t.exit_ts is not None else t.last_ts
            if start is None or end is None:
                continue
            if t.fork_ts is None and start <= g.begin:
                start = g.begin
            if end <= start or end - start < min_duration_ns:
                continue
            complete = t.fork_ts is not None and t.exit_ts is not None
            rows.append((tid, host, t.pid, tid, start, end, t.comm, "complete" if complete else "partial"))
    if not rows:
        return RequestTable.empty()
    ids, hosts, pids, tids, starts, ends, comms, spans = zip(*rows)
    table = RequestTable(
        id=np.array(ids, np.int64), kind=np.full(len(rows), "thread", object), host=np.array(hosts, object),
        pid=np.array(pids, np.int64), tid=np.array(tids, np.int64), start=np.array(starts, np.int64),
        end=np.array(ends, np.int64),
        fields={"comm": np.array(comms, object), "span": np.array(spans, object)},
    )
    return table.take(np.argsort(table.start, kind="stable"))


def syscall_units(graphs: dict[str, ExecGraph], name: str) -> RequestTable:
    parts = []
    for host, g in graphs.items():
        if name not in g.syscall_names:
            continue
        sid = g.syscall_names.index(name)
        m = (g.sc_id == sid) & (g.sc_exit > g.sc_entry)
        if not m.any():
            continue
        tids = g.sc_tid[m]
        pids = np.array([g.threads[t].pid if t in g.threads else -1 for t in tids.tolist()], np.int64)
        comms = np.array([g.comm(t) for t in tids.tolist()], object)
        parts.append(RequestTable(
            id=np.zeros(int(m.sum()), np.int64), kind=np.full(int(m.sum()), f"syscall:{name}", object),
            host=np.full(int(m.sum()), host, object), pid=pids, tid=tids.astype(np.int64),
            start=g.sc_entry[m], end=g.sc_exit[m], fields={"comm": comms},
        ))
    table = RequestTable.concat(parts)
    if len(table):
        table = table.take(np.argsort(table.start, kind="stable"))
        table.id = np.arange(len(table), dtype=np.int64)
    return table
