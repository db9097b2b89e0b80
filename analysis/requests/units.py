"""Request units cut from any kernel trace, without user-space markers.

- ``processes``: each process's life within the trace, from its main thread's fork (or the
  trace's start) to when its last thread is gone (or the trace's end); its critical path is its
  main thread's;
- ``threads``: each thread's life within the trace, from its fork (or the trace's start) to its
  last switch-out after its exit (or the trace's end);
- ``syscall:NAME``: each call of one system call (e.g. every ``read``, every ``connect``) of every
  thread, from its entry to its exit;
- ``auto`` (the default): the markers when the trace has any; else processes, or threads where
  too few processes lived wholly inside the trace to be compared.

Process and thread units carry ``span`` (``whole``, ``started before the trace``, ``still
running at the end``, ``longer than the trace``) and ``role`` (``user``, ``kernel thread``,
``idle``, ``tracer``): units cut by the trace, and the system's background, are shown but never
compared with whole ones (:func:`comparable`).
"""

from __future__ import annotations

import numpy as np

from perftriage.analysis.execgraph import tasks
from perftriage.analysis.execgraph.graph import ExecGraph

from .params import parse_unit  # noqa: F401
from .table import RequestTable

UNIT_KINDS = ("auto", "markers", "processes", "threads", "syscall:NAME")
WHOLE = tasks.WHOLE


def _table(rows, kind: str) -> RequestTable:
    if not rows:
        return RequestTable.empty()
    ids, hosts, pids, tids, starts, ends, comms, spans, roles, nthreads = zip(*rows)
    fields = {"comm": np.array(comms, object), "span": np.array(spans, object), "role": np.array(roles, object)}
    if kind == "process":
        fields["threads"] = np.array(nthreads, object)
    table = RequestTable(
        id=np.array(ids, np.int64), kind=np.full(len(rows), kind, object), host=np.array(hosts, object),
        pid=np.array(pids, np.int64), tid=np.array(tids, np.int64), start=np.array(starts, np.int64),
        end=np.array(ends, np.int64), fields=fields,
    )
    return table.take(np.argsort(table.start, kind="stable"))


def process_units(graphs: dict[str, ExecGraph]) -> RequestTable:
    rows = []
    for host, g in graphs.items():
        for p in tasks.processes(g):
            rows.append((p.pid, host, p.pid, p.leader, p.start, p.end, p.name, p.span, p.role, len(p.tids)))
    return _table(rows, "process")


def thread_units(graphs: dict[str, ExecGraph], min_duration_ns: int = 0) -> RequestTable:
    rows = []
    for host, g in graphs.items():
        for tid, t in sorted(g.threads.items()):
            if tid <= 0 or tid not in g.tid_index:
                continue
            forked = t.fork_ts is not None
            start = t.fork_ts if forked else g.begin
            gone = tasks.gone_ts(g, tid)
            end = gone if gone is not None else g.end
            if end <= start or end - start < min_duration_ns:
                continue
            span = tasks.span_words(not forked, gone is None)
            rows.append((tid, host, t.pid, tid, start, end, t.comm, span, tasks.role(g, tid), 1))
    return _table(rows, "thread")


def comparable(table: RequestTable, background: bool = False) -> np.ndarray:
    """Units that may be compared with one another: whole and (unless ``background``) not the
    system's background; every unit of other kinds (markers, system calls)."""
    span, role = table.fields.get("span"), table.fields.get("role")
    out = np.ones(len(table), bool)
    if span is not None:
        out &= span == WHOLE
    if role is not None and not background:
        out &= ~np.isin(role, tasks.BACKGROUND)
    return out


def auto_units(graphs: dict[str, ExecGraph], enough: int = 20) -> tuple[str, RequestTable]:
    """Units for a trace without markers: processes, or threads where fewer than ``enough``
    processes lived wholly inside the trace but as many threads did."""
    procs = process_units(graphs)
    if comparable(procs).sum() >= enough:
        return "processes", procs
    threads = thread_units(graphs)
    if comparable(threads).sum() >= enough:
        return "threads", threads
    return "processes", procs


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


def not_compared_reason(table: RequestTable, i: int, background: bool = False) -> str:
    """Why unit ``i`` is kept out of comparisons, in a few words ('' when it is compared)."""
    span, role = table.fields.get("span"), table.fields.get("role")
    if role is not None and role[i] in tasks.BACKGROUND and not background:
        return f"background ({role[i]})"
    if span is not None and span[i] != WHOLE:
        return span[i]
    return ""


def not_compared_summary(table: RequestTable, mask: np.ndarray, background: bool = False) -> str:
    """'53 lived longer than the trace, 1 started before it, 24 are background (kernel thread,
    tracer)' for the units outside ``mask``."""
    span, role = table.fields.get("span"), table.fields.get("role")
    out = ~mask
    bg = out & np.isin(role, tasks.BACKGROUND) if role is not None and not background else np.zeros(len(table), bool)
    parts = []
    if span is not None:
        for s, words in (("longer than the trace", "lived longer than the trace"),
                         ("started before the trace", "started before it"),
                         ("still running at the end", "still running at its end")):
            k = int((out & ~bg & (span == s)).sum())
            if k:
                parts.append(f"{k:,} {words}")
    if bg.any():
        parts.append(f"{int(bg.sum()):,} are background ({', '.join(sorted(set(role[bg].tolist())))})")
    return ", ".join(parts)
