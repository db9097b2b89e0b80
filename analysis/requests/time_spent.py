"""Where the processes of a kernel trace spent their time, in plain words: for a trace recorded
around a command (wget, apt, cat, a test run), the first question is what that command waited
for. No markers are needed: a process's life in the trace is followed along its main thread's
critical path (the same path the request analysis uses), so a wait on another process (a DNS
resolver, a disk flush by a kernel worker) is charged to what that process did.

Findings:

- one per notable foreground process (the longest-lived processes whose whole life the trace
  holds; where none, the busiest ones): "wget spent 78% of its 235 ms waiting for the network",
  the other states with their times, the processes its path went through, its CPU time;
- one table of the trace's processes (foreground first, background marked), with lifetime,
  span within the trace, CPU time and where their time went.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perftriage.analysis.execgraph import tasks
from perftriage.analysis.execgraph.graph import ExecGraph
from perftriage.analysis.findings import Finding, Table
from perftriage.analysis.units import count_of, fmt_duration, fmt_when

from .critical_path import STATES, finders
from .states import STATE_WORDS



@dataclass
class ProcessTime:
    """One process's time along its critical path."""

    process: tasks.Process
    durations: np.ndarray  # ns per state (indexed like STATES)
    through: list[tuple[str, int]]  # (other process, ns of the path in it), most first
    by_state: dict[str, list[tuple[str, int]]]  # state -> (process, ns), most first ('' = the process itself)

    @property
    def total(self) -> int:
        return int(self.durations.sum())

    @property
    def own_ns(self) -> int:
        """Time of the path in the process's own threads."""
        return self.total - sum(ns for _, ns in self.through)

    def mostly_waited_for(self) -> str | None:
        """The other process that holds more of the path than the process itself (a wrapper such
        as sudo or a shell waiting for its command), or None."""
        if self.through and self.through[0][1] > self.own_ns:
            return self.through[0][0]
        return None

    def shares(self) -> list[tuple[str, float, int]]:
        tot = float(self.total) or 1.0
        order = np.argsort(-self.durations, kind="stable")
        return [(STATES[k], float(self.durations[k]) / tot, int(self.durations[k])) for k in order
                if self.durations[k] > 0]


def process_time(g: ExecGraph, p: tasks.Process, finder) -> ProcessTime:
    seg = finder.path(p.leader, p.start, p.end).segments(g)
    d = seg.durations()
    dur = seg.end - seg.start
    hosts = seg.hosts_of()
    through: dict[str, int] = {}
    by_state: dict[str, dict[str, int]] = {}
    own = set(p.tids)
    graphs = finder.graphs or {g.host: g}
    for tid, h, ns, st in zip(seg.tid.tolist(), hosts.tolist(), dur.tolist(), seg.state.tolist()):
        if h == 0 and tid in own:
            label = ""
        else:
            host = seg.hosts[h] if seg.hosts else g.host
            gx = graphs.get(host, g)
            pid = tasks.pid_of(gx, tid)
            name = gx.comm(pid) if pid in gx.threads else gx.comm(tid)
            who = tasks.role(gx, tid)
            if who == tasks.TRACER:
                name = f"{name}, the tracer"
            elif who == tasks.KERNEL:
                name = f"kernel thread {gx.comm(tid)}"
            elif who == tasks.IDLE:
                name = "interrupts"
            label = name if h == 0 else f"{host}: {name}"
            through[label] = through.get(label, 0) + ns
        per = by_state.setdefault(STATES[st], {})
        per[label] = per.get(label, 0) + ns
    return ProcessTime(p, d, sorted(through.items(), key=lambda x: -x[1]),
                       {k: sorted(v.items(), key=lambda x: -x[1]) for k, v in by_state.items()})


def notable(procs: list[tasks.Process], top: int) -> list[tasks.Process]:
    """The processes a trace was most likely recorded for: foreground processes whose whole life
    the trace holds, longest first; where there are none, the foreground ones that ran most."""
    fg = [p for p in procs if p.role == tasks.USER]
    whole = sorted((p for p in fg if p.whole), key=lambda p: (-(p.end - p.start), p.pid))
    if whole:
        return whole[:top]
    return sorted((p for p in fg if p.run_ns > 0), key=lambda p: (-p.run_ns, p.pid))[:top]


def _phrase(state: str, share: float, ns: int) -> str:
    return f"{STATE_WORDS.get(state, state)} {share * 100:.0f}% ({fmt_duration(ns)})"


def _headline(pt: ProcessTime) -> tuple[str, str]:
    """('wget spent 78% of its 235 ms waiting for the network', severity)."""
    p = pt.process
    shares = pt.shares()
    life = fmt_duration(p.end - p.start)
    of = f"its {life}" if p.whole else f"its {life} in the trace"
    if not shares:
        return f"{p.name} left no trace of its time ({of})", "info"
    s, share, _ = shares[0]
    title = f"{p.name} spent {share * 100:.0f}% of {of} {STATE_WORDS.get(s, s)}{_who(pt, s)}"
    if len(shares) > 1 and shares[1][1] >= 0.1:
        s2, sh2, _ = shares[1]
        title += f", {sh2 * 100:.0f}% {STATE_WORDS.get(s2, s2)}{_who(pt, s2)}"
    return title, "warning"


def _who(pt: ProcessTime, state: str) -> str:
    """Who holds a state's time when the process itself holds less than half of it:
    ' (most of it in apt-check)', or ' (apt-check 48%, itself 40%)'."""
    per = pt.by_state.get(state, [])
    tot = float(sum(ns for _, ns in per)) or 1.0
    own = sum(ns for name, ns in per if name == "")
    if not per or own >= tot / 2:
        return ""
    if per[0][1] > tot / 2:
        return f" (most of it in {per[0][0]})"
    return " (" + ", ".join(f"{name or 'itself'} {ns / tot * 100:.0f}%" for name, ns in per[:2]) + ")"


def time_spent_finding(pt: ProcessTime, rank: int = 0) -> Finding:
    p = pt.process
    title, severity = _headline(pt)
    shares = pt.shares()
    life = fmt_duration(p.end - p.start)
    if p.whole:
        span = f"its whole life, {life} from {fmt_when(p.start, digits=9)}"
    else:
        span = f"{life} of it, {p.span} ({fmt_when(p.start, digits=9)} to {fmt_when(p.end, digits=9)})"
    evidence = [f"{p.name} (pid {p.pid}, {count_of(len(p.tids), 'threads')}) on {p.host}: "
                f"the trace holds {span}"]
    if shares:
        evidence.append("along its critical path: " + ", ".join(_phrase(s, sh, ns) for s, sh, ns in shares[:4]))
    if pt.through:
        tot = float(pt.total) or 1.0
        evidence.append("through other processes (their time on its path): " + ", ".join(
            f"{name} {fmt_duration(ns)} ({ns / tot * 100:.0f}%)" for name, ns in pt.through[:5]))
    busy = p.run_ns / max(p.end - p.start, 1)
    evidence.append(f"its own threads ran {fmt_duration(p.run_ns)} on a CPU ("
                    + (f"{busy:.1f} CPUs on average over its life" if busy > 1.05 else
                       f"{busy * 100:.0f}% of its life") + " in the trace)")
    evidence.append("details: critical-path states: " + ", ".join(f"{s} {sh * 100:.0f}%" for s, sh, _ in shares))
    return Finding(
        analysis="requests",
        title=title,
        subject=f"{p.name} [pid {p.pid}] on {p.host}",
        score=1000.0 - rank,  # in the order the processes were chosen: the longest-lived first
        severity=severity,
        evidence=evidence,
        parameters={"units": "processes", "pid": p.pid, "host": p.host, "from_ns": p.start, "to_ns": p.end,
                    "span": p.span},
        # its row in the request list: the process (units processes) or its main thread (units threads)
        target={"kind": "request", "id": int(p.pid), "host": str(p.host)},
    )


def processes_table(procs_of: dict[str, list[tasks.Process]], times: dict[tuple[str, int], ProcessTime],
                    background: bool, top: int) -> Table | None:
    rows = []
    for host, procs in procs_of.items():
        for p in procs:
            if p.role in tasks.BACKGROUND and not background and p.run_ns == 0:
                continue
            pt = times.get((host, p.pid))
            where = ", ".join(f"{s} {sh * 100:.0f}%" for s, sh, _ in pt.shares()[:3]) if pt is not None else ""
            rows.append((p.role in tasks.BACKGROUND, not p.whole, -(p.end - p.start), -p.run_ns,
                         [p.name, p.pid, host, p.role, p.span, fmt_duration(p.end - p.start), fmt_duration(p.run_ns),
                          len(p.tids), where]))
    if not rows:
        return None
    rows.sort(key=lambda r: r[:4])
    shown = [r[-1] for r in rows[:top]]
    return Table(["process", "pid", "host", "role", "in the trace", "lifetime", "CPU", "threads", "critical path"],
                 shown, caption=f"{len(shown)} of {count_of(len(rows), 'processes')}: whole foreground ones first, "
                                "the system's background last")


def time_spent_findings(graphs: dict[str, ExecGraph], background: bool = False, top: int = 3,
                        table_rows: int = 30, max_wrappers: int = 8) -> list[Finding]:
    times: dict[tuple[str, int], ProcessTime] = {}
    fs = finders(graphs)
    chosen: list[ProcessTime] = []
    procs_of = {host: tasks.processes(g) for host, g in graphs.items()}
    for host, g in graphs.items():
        procs = procs_of[host]
        if background:
            procs = [tasks.Process(**{**p.__dict__, "role": tasks.USER}) if p.role != tasks.IDLE else p for p in procs]
        kept = 0
        for p in notable(procs, top + max_wrappers):
            if kept == top:
                break
            pt = process_time(g, p, fs[host])
            times[(host, p.pid)] = pt
            if pt.mostly_waited_for() is not None:
                continue  # a wrapper (sudo, a shell): the process it waited for says more
            chosen.append(pt)
            kept += 1
    chosen.sort(key=lambda pt: -(pt.process.end - pt.process.start))
    out = [time_spent_finding(pt, i) for i, pt in enumerate(chosen[:top])]
    table = processes_table(procs_of, times, background, table_rows)
    if table is not None and out:
        fg = sum(1 for procs in procs_of.values() for p in procs if p.role == tasks.USER)
        out.append(Finding(
            analysis="requests",
            title="Processes in the trace",
            subject=", ".join(pt.process.name for pt in chosen[:top]),
            score=0.0,
            severity="info",
            evidence=[f"{count_of(fg, 'foreground processes')}; where the time of "
                      + ("the one above went, along its critical path" if len(out) == 1 else
                         f"the {len(out)} above went, along their critical paths")],
            tables=[table],
            parameters={"units": "processes", "background": background},
            target={"kind": "pane", "pane": "requests"},
        ))
    return out
