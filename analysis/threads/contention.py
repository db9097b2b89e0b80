"""Who ran while a thread waited for a CPU: the other threads' running time inside its waits, by
process, from a kernel trace's execution graph.

A thread ranked for its waits for a CPU (``Preempted``) is asked why: the machine's other work,
its own process's other threads, or the tracer. The trace records no CPU per interval, so the
answer is what ran anywhere on the host during its waits (on a 2-CPU host up to twice their
length): an approximation that names the busy processes, which is what a ticket needs.

The graphs are let go before the threads are analysed (they are the run's largest arrays): what
the answer needs is taken first, :func:`cpu_waits`: the compared threads' waits, and only the
running intervals of other threads that overlap one of those waits (a small share of the trace).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.execgraph import tasks
from perftriage.analysis.execgraph.graph import BP, RS, RU, ExecGraph
from perftriage.analysis.units import fmt_duration

from .from_trace import cumulative_time


CHUNK = 1 << 18  # intervals looked at at once (the temporaries stay a few MB)


def _inside(starts: np.ndarray, ends: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each [a, b): its overlap with the union of the disjoint, sorted intervals [starts, ends)."""
    every = np.ones(len(starts), bool)
    return cumulative_time(starts, ends, every, b) - cumulative_time(starts, ends, every, a)


def _union(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as disjoint sorted ones."""
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.concatenate([[True], s[1:] > reach[:-1]])
    first = np.flatnonzero(new)
    return s[first], np.maximum.reduceat(e, first) if len(first) else e[:0]


@dataclass
class HostWaits:
    waits: dict[int, tuple[np.ndarray, np.ndarray]]  # tid -> its waits for a CPU (sorted, disjoint)
    pid: dict[int, int]  # tid -> its process
    run_start: np.ndarray  # other threads' running intervals that overlap a wait
    run_end: np.ndarray
    run_tid: np.ndarray
    run_pid: np.ndarray
    names: dict[int, str]  # pid -> 'comm[pid]'


@dataclass
class CpuWaits:
    hosts: dict[str, HostWaits] = field(default_factory=dict)

    def takers(self, host: str, tid: int, t0: int, t1: int, most: int = 3) -> tuple[int, list[tuple[str, int]]]:
        """The time ``tid`` waited for a CPU within [t0, t1) (ns), and the processes that ran
        during those waits with how long (ns, the most first, at most ``most``; its own process's
        other threads as such)."""
        h = self.hosts.get(host)
        if h is None or tid not in h.waits:
            return 0, []
        s, e = h.waits[tid]
        ws, we = np.maximum(s, t0), np.minimum(e, t1)
        keep = we > ws
        ws, we = ws[keep], we[keep]
        waited = int((we - ws).sum())
        if waited <= 0:
            return 0, []
        other = h.run_tid != tid
        took = _inside(ws, we, h.run_start[other], h.run_end[other])
        hit = took > 0
        pids, at = np.unique(h.run_pid[other][hit], return_inverse=True)  # per process, not per interval
        sums = np.bincount(at, weights=took[hit], minlength=len(pids))
        mine = h.pid.get(tid, tid)
        per = sorted(((("its own process's other threads" if pid == mine else h.names.get(pid, f"?[{pid}]")), int(ns))
                      for pid, ns in zip(pids.tolist(), sums.tolist())), key=lambda kv: -kv[1])
        return waited, per[:most]

    def words(self, host: str, tid: int, t0: int, t1: int, where: str = "there") -> str | None:
        """One evidence line: what ran while the thread waited for a CPU in [t0, t1) (``where``:
        how the line names that time); None when it did not wait there."""
        waited, who = self.takers(host, tid, t0, t1)
        if waited <= 0:
            return None
        if not who:
            return (f"while it waited for a CPU ({fmt_duration(waited)} {where}), no other thread of the trace ran "
                    "(the kernel's own work, or what the trace lost)")
        return (f"while it waited for a CPU ({fmt_duration(waited)} {where}), the CPUs ran "
                + ", ".join(f"{name} {fmt_duration(ns)}" for name, ns in who))


def cpu_waits(graphs: dict[str, ExecGraph], threads: dict[str, list[int]]) -> CpuWaits:
    """What :meth:`CpuWaits.takers` needs of the graphs, for the threads ``threads`` (host ->
    tids): their waits for a CPU, and the running intervals of the other threads that overlap
    them."""
    out = CpuWaits()
    for host, tids in threads.items():
        g = graphs.get(host)
        if g is None:
            continue
        waits = {}
        for tid in tids:  # a thread's intervals are sorted and disjoint: its waits are, as they are
            sl = g.intervals_of(tid)
            bp = g.iv_state[sl] == BP
            if bp.any():
                waits[tid] = (g.iv_start[sl][bp].astype(np.int64), g.iv_end[sl][bp].astype(np.int64))
        if not waits:
            continue
        us, ue = _union(np.concatenate([s for s, _ in waits.values()]), np.concatenate([e for _, e in waits.values()]))
        parts = []
        for lo in range(0, len(g.iv_start), CHUNK):  # a chunk at a time: the graphs are still whole here
            sl = slice(lo, lo + CHUNK)
            st = g.iv_state[sl]
            idx = np.flatnonzero((st == RU) | (st == RS))
            a, b = np.asarray(g.iv_start[sl])[idx].astype(np.int64), np.asarray(g.iv_end[sl])[idx].astype(np.int64)
            parts.append(lo + idx[_inside(us, ue, a, b) > 0])
        idx = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        owner = np.searchsorted(np.asarray(g.thread_lo), idx, "right") - 1  # intervals are sorted by thread
        rtid = np.asarray(g.tids)[owner].astype(np.int64)
        keep = rtid > 0  # not the idle task
        idx, rtid = idx[keep], rtid[keep]
        uniq, inv = np.unique(rtid, return_inverse=True)
        pids = np.array([tasks.pid_of(g, int(t)) for t in uniq.tolist()], np.int64)
        names = {}
        for t, p in zip(uniq.tolist(), pids.tolist()):
            if p not in names:
                leader = g.threads.get(p)
                kind = {tasks.TRACER: " (the tracer)", tasks.KERNEL: " (a kernel thread)"}.get(tasks.role(g, int(t)), "")
                names[p] = f"{(leader.comm if leader is not None and leader.comm else g.comm(int(t))) or '?'}[{p}]{kind}"
        out.hosts[host] = HostWaits(waits, {t: tasks.pid_of(g, t) for t in waits}, g.iv_start[idx].astype(np.int64),
                                    g.iv_end[idx].astype(np.int64), rtid.astype(np.int32),
                                    (pids[inv] if len(uniq) else rtid).astype(np.int32), names)
    return out
