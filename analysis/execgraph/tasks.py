"""Who the tasks of a kernel trace are: the system's background (kernel threads, the idle task,
the tracer's own threads) apart from the work the trace was recorded for, and processes as
their threads taken together, with how much of their life the trace saw.

A kernel thread is known by the statedump (``type`` 1), by its parent (kthreadd, pid 2, forks
every kernel thread) or, for traces without either, by the names the kernel gives its threads
(``kworker/0:1``, ``ksoftirqd/3``, ``rcu_sched``...). The tracer's threads are LTTng's
(``lttng-sessiond``, ``lttng-consumerd``, ``lttng-runas``, the ``lttng`` command itself) and
perf's (``perf``, writing out what it records; ``perf-exec``, its command before the exec).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from .graph import EXITED, RS, RU, ExecGraph

USER, KERNEL, IDLE, TRACER = "user", "kernel thread", "idle", "tracer"
BACKGROUND = (KERNEL, IDLE, TRACER)
KTHREADD = 2  # the kernel's thread that forks every kernel thread
WHOLE = "whole"


def span_words(started_before: bool, running_after: bool) -> str:
    """How much of a task's life the trace holds, in the words units and findings use."""
    if started_before and running_after:
        return "longer than the trace"
    if started_before:
        return "started before the trace"
    if running_after:
        return "still running at the end"
    return WHOLE

# compiled on first use (functools.cache): the alternation takes 22 ms to compile, at every start
# of the report and of the app otherwise
_KERNEL_NAMES_PATTERN = (
    r"^(kworker|ksoftirqd|kthreadd|migration|rcu_|rcu/|watchdog|cpuhp|idle_inject|irq/|kswapd|kcompactd|khugepaged|"
    r"khungtaskd|kauditd|kblockd|kintegrityd|kdevtmpfs|kthrotld|kstrp|ksmd|kipmi|jbd2/|ext4-|xfs|btrfs|scsi_|"
    r"oom_reaper|writeback|crypto|bioset|md|mm_percpu_wq|netns|devfreq_wq|edac-poller|ipv6_addrconf|"
    r"acpi_thermal_pm|kaluad|kmpath|nvme|card\d|i915|ttm_swap|spl_|z_|txg_|arc_|dbu_|iscsi|zswap|"
    r"charger_manager|ecryptfs|hwrng|irq_|led_workqueue|loop\d|mld|napi|nfsiod|rpciod|uas|usb-storage|"
    r"xprtiod|kvm|vhost|kernel)")
_TRACER_NAMES = re.compile(r"^(lttng($|-)|perf$|perf-exec$)")


@functools.cache
def _kernel_names() -> re.Pattern:
    return re.compile(_KERNEL_NAMES_PATTERN)


def pid_of(g: ExecGraph, tid: int) -> int:
    """The process of ``tid``: its pid where the trace says one, else the thread itself (a thread
    seen without a statedump or fork counts as its own process)."""
    t = g.threads.get(tid)
    return t.pid if t is not None and t.pid is not None and t.pid > 0 else tid


def role(g: ExecGraph, tid: int) -> str:
    """USER, KERNEL, IDLE or TRACER."""
    if tid <= 0:
        return IDLE
    t = g.threads.get(tid)
    name = g.comm(tid)
    if t is not None and t.kernel:
        return KERNEL
    if _TRACER_NAMES.match(name):
        return TRACER
    if t is not None and t.kernel is None and _kernel_names().match(name):
        return KERNEL
    if name.startswith("swapper"):
        return IDLE
    return USER


def background(g: ExecGraph, tid: int) -> bool:
    return role(g, tid) in BACKGROUND


def gone_ts(g: ExecGraph, tid: int) -> int | None:
    """When a thread that exited was last switched out (its exit path done), or None."""
    i = g.tid_index.get(tid)
    if i is None:
        return None
    hi = int(g.thread_hi[i])
    if hi <= int(g.thread_lo[i]) or g.iv_state[hi - 1] != EXITED:
        return None
    t = g.threads.get(tid)
    if t is None or t.exit_ts is None:
        return None
    return int(g.iv_start[hi - 1])


@dataclass
class Process:
    host: str
    pid: int
    name: str
    tids: list[int]
    leader: int  # the thread whose critical path is the process's (its main thread, if seen)
    start: int  # fork of its main thread, or the trace's start
    end: int  # when its last thread was gone, or the trace's end
    started_before: bool  # it existed when the trace began
    running_after: bool  # some thread of it was still alive when the trace ended
    role: str
    run_ns: int  # time its threads spent running (user mode or in system calls)

    @property
    def whole(self) -> bool:
        return not (self.started_before or self.running_after)

    @property
    def span(self) -> str:
        return span_words(self.started_before, self.running_after)


def processes(g: ExecGraph) -> list[Process]:
    """Every process of the graph with at least one thread (the idle task excluded)."""
    by_pid: dict[int, list[int]] = {}
    for tid, t in g.threads.items():
        if tid <= 0 or tid not in g.tid_index:
            continue
        by_pid.setdefault(pid_of(g, tid), []).append(tid)
    run = _run_time(g)
    out = []
    for pid, tids in by_pid.items():
        tids.sort()
        leader = pid if pid in tids else max(tids, key=lambda x: run.get(x, 0))
        lt = g.threads[leader]
        forked = lt.fork_ts is not None
        start = lt.fork_ts if forked else g.begin
        gone = [gone_ts(g, t) for t in tids]
        running_after = any(x is None for x in gone)
        end = g.end if running_after else max(gone)
        if end <= start:
            continue
        out.append(Process(g.host, pid, g.comm(leader), tids, leader, int(start), int(end), not forked, running_after,
                           role(g, leader), sum(run.get(t, 0) for t in tids)))
    return out


def _run_time(g: ExecGraph) -> dict[int, int]:
    """Running time (RU + RS) of every thread, from the interval arrays at once."""
    if len(g.tids) == 0:
        return {}
    d = np.where((g.iv_state == RU) | (g.iv_state == RS), g.iv_end - g.iv_start, 0)
    c = np.r_[0, np.cumsum(d)]
    tot = c[g.thread_hi] - c[g.thread_lo]
    return dict(zip(g.tids.tolist(), tot.tolist()))
