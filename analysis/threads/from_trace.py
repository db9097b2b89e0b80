"""Per-thread resource time series derived from an LTTng kernel trace: the thread-pool analysis
(paper 003) on the same trace the request pipeline reads.

Per thread and per time window, from the execution graph (analysis/execgraph/):

- ``CPU``: percent of the window the thread ran (user mode or in a system call);
- ``Syscalls``: system calls it entered, per second;
- ``Blocked``: percent of the window it was blocked (any reason);
- ``Preempted``: percent of the window it was runnable but waiting for a CPU;
- ``Handles``: file descriptors opened minus closed since the trace began (open, openat,
  creat, socket, accept, accept4, dup*, pipe* (two), eventfd*, epoll_create*, signalfd,
  timerfd_create, memfd_create, inotify_init* count +1; close -1): a level, like the paper's
  Handles, relative to the start of the trace;
- ``Mappings``: memory mappings made minus unmade (mmap, mremap +1 / munmap -1) since the trace
  began: the graph keeps system calls, not their arguments, so sizes are not known;
- ``Disk wait``: percent of the window it was blocked waiting for the disk;
- ``Sleep``: percent of the window it was blocked until a timer woke it (a sleep, a timed wait);
  these two by their level only (most windows of most threads hold none).

The system's background (kernel threads, the idle task, the tracer's own threads: see
``execgraph.tasks``) is left out unless ``background`` is set: it would otherwise be ranked as
the most deviating threads (the tracer's consumer is busy exactly when the traced work is).

Groups for the top-down walk: machine (host), process (the process's name and pid), pool (the
thread's name, its number taken off: the threads of one pool share it) and thread (tid). Only
alike abstractions are compared (``ThreadSeries.kinds``): processes with the processes of the
same program, threads with the threads of their pool; a process's pools are looked into one by
one, never ranked against each other (Xorg against java, a browser's IO thread against its
compositor: no pool of workers, different jobs). Only threads present and active
(running or entering system calls) in at least ``min_windows`` windows are kept (a covariance
needs samples; a daemon asleep through the trace has none to compare), and at most ``max_threads``
of them, the busiest first.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from perftriage.analysis.execgraph import tasks
from perftriage.analysis.execgraph.events import SLEEP_CALLS, SYNC_CALLS
from perftriage.analysis.execgraph.graph import BLOCKED, BP, RS, RU, ST_BD, ST_BS, ExecGraph
from perftriage.analysis.units import count_of

from .series import ThreadSeries, build, pool_name, program_of

METRICS = ("CPU", "Syscalls", "Blocked", "Preempted", "Handles", "Mappings", "Disk wait", "Sleep")
OPENERS = {"open": 1, "openat": 1, "openat2": 1, "creat": 1, "socket": 1, "accept": 1, "accept4": 1, "dup": 1,
           "dup2": 1, "dup3": 1, "pipe": 2, "pipe2": 2, "eventfd": 1, "eventfd2": 1, "epoll_create": 1,
           "epoll_create1": 1, "signalfd": 1, "signalfd4": 1, "timerfd_create": 1, "memfd_create": 1,
           "inotify_init": 1, "inotify_init1": 1, "socketpair": 2, "close": -1}
MIN_AUTO_WINDOW_NS = 10_000_000
# Handles and Mappings are counted from the trace's start (what was open before is not seen):
# "net", so that a thread that closed more files than it opened reads -1 net open files, not -1 open files
UNITS = {"CPU": "%", "Syscalls": "calls/s", "Blocked": "%", "Preempted": "%", "Handles": "net open files",
         "Mappings": "net mappings", "Disk wait": "%", "Sleep": "%"}
# Disk wait: blocked and woken by a block device (BD), or blocked in a call that waits for the disk
# by what it is (a sync: events.SYNC_CALLS), whoever wakes it (a kworker, or a wake-up the trace
# lost): Blocked alone is mostly a pool's threads waiting for work, where one that syncs a file per
# request is lost. Sleep: blocked until a timer woke it (BS: a sleep, a timed wait run out), or in
# a sleep call whose wake-up the trace lost: a worker that naps on each request (a back-off, a
# throttle) is apart by it where its Blocked share is its peers' (they wait for work instead)
MAPPERS = {"mmap": 1, "mmap2": 1, "mremap": 1, "munmap": -1}


def cumulative_time(starts, ends, on, edges):
    """Time spent in intervals where ``on`` holds, from the first interval to each edge."""
    dur = np.where(on, ends - starts, 0).astype(np.float64)
    prefix = np.r_[0.0, np.cumsum(dur)]
    k = np.searchsorted(ends, edges, "right")  # intervals wholly before each edge
    k = np.minimum(k, len(starts))
    part = np.zeros(len(edges))
    inside = k < len(starts)
    kk = k[inside]
    part[inside] = np.where(on[kk], np.clip(edges[inside] - starts[kk], 0, None), 0)
    return prefix[k] + part


def host_roles(busiest: dict[str, dict[str, float]]) -> dict[str, str]:
    """Each host's role, what makes hosts alike to compare: its name without its number where
    another host's name has the same stem (web-01, web-02: web); else the program its threads
    ran most (alpha, bravo and charlie each busiest running apache2: apache2), as names given
    each its own way say nothing of what a host does."""
    stems = Counter(program_of(h) for h in busiest)
    out = {}
    for h, cpu in busiest.items():
        stem = program_of(h)
        if stems[stem] > 1 or not cpu:
            out[h] = stem
        else:
            out[h] = max(cpu.items(), key=lambda kv: (kv[1], kv[0]))[0]
    return out


def thread_series_from_graphs(graphs: dict[str, ExecGraph], window_s: float | None = None, windows: int = 200,
                              min_windows: int = 10, max_threads: int = 400, background: bool = False) -> ThreadSeries:
    times, keys, vals = [], [], []
    widths = []
    groups = {"machine": [], "process": [], "pool": [], "program": [], "role": [], "name": []}
    busiest: dict[str, dict[str, float]] = {}  # host -> program -> its threads' time on a CPU
    notes = []
    for host, g in graphs.items():
        span = max(g.end - g.begin, 1)
        # by default the span / 200, never under 10 ms: over a shorter window a thread's CPU or
        # blocked share is 0 or 100% by the scheduler's time slices, not by what it does
        w = int(window_s * 1e9) if window_s else max(span // windows, MIN_AUTO_WINDOW_NS)
        n_win = max(int(span // w), 1)
        widths.append(w)
        edges_all = g.begin + w * np.arange(n_win + 1, dtype=np.int64)
        names = g.syscall_names
        d_handles = np.array([OPENERS.get(n, 0) for n in names], np.int64)
        d_maps = np.array([MAPPERS.get(n, 0) for n in names], np.int64)
        is_sync = np.array([n in SYNC_CALLS for n in names] + [False], bool)  # [-1]: in no call
        is_sleep = np.array([n in SLEEP_CALLS for n in names] + [False], bool)
        cand = []
        skipped = idle = 0
        for i, tid in enumerate(g.tids.tolist()):
            lo, hi = int(g.thread_lo[i]), int(g.thread_hi[i])
            if hi <= lo or tid <= 0:
                continue
            if not background and tasks.background(g, tid):
                skipped += 1
                continue
            s, e, st = g.iv_start[lo:hi], g.iv_end[lo:hi], g.iv_state[lo:hi]
            alive = (st != 5) & (st != 4)  # not exited, not unknown
            if not alive.any():
                continue
            a = int(s[alive][0])
            z = int(e[alive][-1])
            w0 = int(np.searchsorted(edges_all, a, "right")) - 1
            w1 = int(np.searchsorted(edges_all, z, "left"))
            if w1 - max(w0, 0) < min_windows:
                continue
            # active (running, or entering a system call) in at least min_windows windows: a
            # thread asleep through the trace has no covariance to compare
            busy = s[(st == RU) | (st == RS)]
            sl = g.syscalls_of(tid)
            active = np.unique(np.r_[np.searchsorted(edges_all, busy, "right"),
                                     np.searchsorted(edges_all, g.sc_entry[sl], "right")])
            if len(active) < min_windows:
                idle += 1
                continue
            run = float(np.where((st == RU) | (st == RS), e - s, 0).sum())
            cand.append((run, tid, i, max(w0, 0), min(w1, n_win)))
        if skipped:
            notes.append(f"{host}: {count_of(skipped, 'threads')} of the system's background (kernel threads, the tracer's "
                         "own threads: lttng-*, perf) left out (--background keeps them)")
        if idle:
            notes.append(f"{host}: {count_of(idle, 'threads')} active in fewer than {min_windows} windows (asleep through the "
                         "trace) left out")
        if len(cand) > max_threads:
            notes.append(f"{host}: {len(cand)} threads live for {min_windows}+ windows; the {max_threads} busiest kept")
            cand = sorted(cand, reverse=True)[:max_threads]
        for run, tid, i, w0, w1 in cand:
            lo, hi = int(g.thread_lo[i]), int(g.thread_hi[i])
            s, e, st = g.iv_start[lo:hi], g.iv_end[lo:hi], g.iv_state[lo:hi]
            edges = edges_all[w0:w1 + 1]
            width = np.diff(edges).astype(np.float64)
            cpu = np.diff(cumulative_time(s, e, (st == RU) | (st == RS), edges)) / width * 100
            blk = np.diff(cumulative_time(s, e, st == BLOCKED, edges)) / width * 100
            pre = np.diff(cumulative_time(s, e, st == BP, edges)) / width * 100
            waits = (st == BLOCKED) & ((g.iv_block[lo:hi] == ST_BD) | is_sync[g.iv_syscall[lo:hi]])
            disk = np.diff(cumulative_time(s, e, waits, edges)) / width * 100
            naps = (st == BLOCKED) & ((g.iv_block[lo:hi] == ST_BS) | is_sleep[g.iv_syscall[lo:hi]])
            sleep = np.diff(cumulative_time(s, e, naps, edges)) / width * 100
            sl = g.syscalls_of(tid)
            entry, sid = g.sc_entry[sl], g.sc_id[sl]
            win = np.searchsorted(edges, entry, "right") - 1
            inwin = (win >= 0) & (win < len(width))
            calls = np.bincount(win[inwin], minlength=len(width)).astype(np.float64) / (width / 1e9)
            before = ~inwin & (entry < edges[0])
            h0 = float(d_handles[sid[before]].sum()) if len(d_handles) else 0.0
            m0 = float(d_maps[sid[before]].sum()) if len(d_maps) else 0.0
            handles = h0 + np.cumsum(np.bincount(win[inwin], weights=d_handles[sid[inwin]] if len(d_handles) else None,
                                                 minlength=len(width)))
            maps = m0 + np.cumsum(np.bincount(win[inwin], weights=d_maps[sid[inwin]] if len(d_maps) else None,
                                              minlength=len(width)))
            n = len(width)
            times.append((edges[:-1] + edges[1:]) / 2e9)
            keys += [str(tid)] * n
            vals.append(np.column_stack([cpu, calls, blk, pre, handles, maps, disk, sleep]))
            info = g.threads.get(tid)
            pid = tasks.pid_of(g, tid)
            leader = g.threads.get(pid)
            pname = (leader.comm if leader is not None and leader.comm else (info.comm if info else "")) or "?"
            groups["machine"] += [host] * n
            groups["process"] += [f"{pname}[{pid}]"] * n
            groups["pool"] += [pool_name(g.comm(tid))] * n
            groups["name"] += [g.comm(tid)] * n  # its own name, said beside its id
            groups["program"] += [pname] * n
            groups["role"] += [host] * n  # its role below, once every host's busiest program is known
            busiest.setdefault(host, {})
            busiest[host][pname] = busiest[host].get(pname, 0.0) + run
    role = host_roles(busiest)
    groups["role"] = [role[h] for h in groups["role"]]
    if not vals:
        ts = build(np.zeros(0), [], {}, np.zeros((0, len(METRICS))), METRICS, "kernel trace")
    else:
        ts = build(np.concatenate(times), keys, groups, np.vstack(vals), METRICS, "kernel trace")
    ts.units = dict(UNITS)
    ts.level_only = ("Disk wait", "Sleep")  # most windows of most threads hold none: by their level only
    # only alike abstractions are compared: hosts of one role (numbered names: web-01, web-02;
    # else the program each ran most), processes of one program (prefork workers, a fleet's
    # daemons), threads of one pool; a process's pools each do their own job
    ts.kinds = {"machine": "role", "process": "program", "pool": "pool"}
    wtxt = ", ".join(sorted({f"{w / 1e6:g} ms" for w in widths})) or "-"
    ts.notes = notes + [f"per-thread metrics from the kernel trace ({', '.join(METRICS)}) in windows of {wtxt}; "
                        f"{count_of(ts.n_threads, 'threads')} present and active in {min_windows}+ windows"]
    return ts
