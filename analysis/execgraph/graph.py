"""The execution graph of a host: what the reference (Trace Compass's OS execution graph,
../shared/reference/critical-path.md) keeps as vertices and edges, kept here as per-thread
**state intervals** in numpy arrays:

- for each thread (keyed by host and tid), consecutive intervals ``[start, end)`` with a state:
  running in user mode (RU), running in a system call (RS), waiting for a CPU (BP: preempted,
  or woken but not yet running, or forked but not yet run), blocked, unknown (before the thread's
  first event), exited;
- every blocked interval knows what ended it: the wake-up event, and in which context that
  wake-up ran on its CPU. In process context the waker is the task running there (a vertical
  edge waker -> wakee, to be followed by the critical path); in interrupt context the top of the
  CPU's interrupt stack gives the reason (softirq vector, IRQ number, hrtimer, IPI), as in the
  reference's rules (contexts.py);
- fork edges (parent -> child) and the system calls of every thread (entry, exit, name).

builder.py builds it from a stream of chunks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .netmatch import ClockFit

# interval states in the graph
RU, RS, BP, BLOCKED, UNKNOWN, EXITED = 0, 1, 2, 3, 4, 5

# what a blocked interval becomes when its waker is not followed (critical-path states)
# (the numbering of path states lives in requests/critical_path.STATES; these codes are shared)
ST_RU, ST_RS, ST_BP, ST_BD, ST_BN, ST_BS, ST_BI, ST_BF, ST_BT = range(9)
FOLLOW = -1  # blocked interval woken by a task: the critical path follows the waker
FOLLOW_NET = -2  # woken by a packet another task of the host sent: follow the sender up to the send
FOLLOW_REMOTE = -3  # woken by a packet a task of another traced host sent: follow it on that host


@dataclass
class ThreadInfo:
    tid: int
    pid: int = -1
    comm: str = ""
    fork_ts: int | None = None
    parent: int | None = None
    exit_ts: int | None = None
    first_ts: int | None = None  # start of its first interval (the trace's start for a thread seen later)
    last_ts: int | None = None
    seen_ts: int | None = None  # its first event (or statedump): what came before it is inferred
    kernel: bool | None = None  # a kernel thread (statedump type, or forked by kthreadd); None: not said


@dataclass
class RemoteLinks:
    """FOLLOW_REMOTE intervals of a graph (sorted), each with the sender's host and the send
    time on that host's clock; ``links[k]`` -> (host, time)."""

    k: np.ndarray
    host: np.ndarray  # index into hosts
    t: np.ndarray
    hosts: list

    @classmethod
    def empty(cls) -> "RemoteLinks":
        e = np.zeros(0, np.int64)
        return cls(e, e.astype(np.int16), e, [])

    def __len__(self) -> int:
        return len(self.k)

    def __getitem__(self, k: int) -> tuple[str, int]:
        i = int(np.searchsorted(self.k, k))
        if i >= len(self.k) or self.k[i] != k:
            raise KeyError(k)
        return self.hosts[int(self.host[i])], int(self.t[i])


@dataclass
class Arrivals:
    """Packets a running task received in process context (no wake-up: it was not waiting), each
    with its sender when known: a task of this host (loopback, matched by skb address) or of
    another traced host (matched by headers). Sorted by (receiver, receive time); the sender's
    time is on its own host's clock. The critical path follows them back to their senders where
    a waker's own history runs out before the wait began (the reference's network edges)."""

    tid: np.ndarray  # receiver
    t: np.ndarray  # receive time
    host: np.ndarray  # sender's host, index into hosts
    sender: np.ndarray
    t_sent: np.ndarray
    hosts: list

    @classmethod
    def empty(cls) -> "Arrivals":
        e = np.zeros(0, np.int64)
        return cls(e, e, e.astype(np.int16), e.astype(np.int32), e, [])

    def __len__(self) -> int:
        return len(self.tid)

    def first_of(self, tid: int) -> int:
        """Index of thread ``tid``'s first arrival, or -1."""
        a = int(np.searchsorted(self.tid, tid, "left"))
        return a if a < len(self.tid) and self.tid[a] == tid else -1


@dataclass
class ExecGraph:
    """One host's graph. Intervals are sorted by (thread, start); thread ``i`` owns
    ``iv_*[thread_lo[i]:thread_hi[i]]``; ``tid_index`` maps a tid to ``i``."""

    host: str
    begin: int
    end: int
    tids: np.ndarray
    thread_lo: np.ndarray
    thread_hi: np.ndarray
    iv_start: np.ndarray
    iv_end: np.ndarray
    iv_state: np.ndarray  # RU, RS, BP, BLOCKED, UNKNOWN, EXITED
    iv_block: np.ndarray  # for BLOCKED: path state when not followed (ST_*), or FOLLOW
    iv_waker: np.ndarray  # for FOLLOW: tid of the waker (-1 otherwise)
    iv_syscall: np.ndarray  # syscall id running during the interval (-1 none)
    sc_tid: np.ndarray  # system calls sorted by (tid, entry)
    sc_entry: np.ndarray
    sc_exit: np.ndarray
    sc_id: np.ndarray
    syscall_names: list[str]
    threads: dict[int, ThreadInfo] = field(default_factory=dict)
    wakeup_family: str = ""
    net_links: dict[int, int] = field(default_factory=dict)  # FOLLOW_NET interval -> when its packet was sent
    # FOLLOW_REMOTE interval -> (sender's host, send time on that host's clock)
    remote_links: "RemoteLinks" = field(default_factory=lambda: RemoteLinks.empty())
    clocks: dict[str, ClockFit] = field(default_factory=dict)  # other host -> this clock to that one
    arrivals: Arrivals = field(default_factory=lambda: Arrivals.empty())  # packets received while running
    # CPU -> (context switches, those whose previous task is not the one the switch before put there)
    switches: dict[int, tuple[int, int]] = field(default_factory=dict)

    def __post_init__(self):
        self.tid_index = {int(t): i for i, t in enumerate(self.tids.tolist())}
        self._starts_cache: dict[int, list] = {}

    def intervals_of(self, tid: int) -> slice:
        i = self.tid_index.get(tid)
        if i is None:
            return slice(0, 0)
        return slice(int(self.thread_lo[i]), int(self.thread_hi[i]))

    def syscalls_of(self, tid: int) -> slice:
        lo = int(np.searchsorted(self.sc_tid, tid, "left"))
        hi = int(np.searchsorted(self.sc_tid, tid, "right"))
        return slice(lo, hi)

    @property
    def n_intervals(self) -> int:
        return len(self.iv_start)

    @property
    def n_remote_links(self) -> int:
        """Waits followed to another host (the network notes count them)."""
        return len(self.remote_links)

    #: the per-interval and per-system-call tables: the graph's size (on_disk.py maps them from files)
    TABLES = ("iv_start", "iv_end", "iv_state", "iv_block", "iv_waker", "iv_syscall", "sc_tid", "sc_entry", "sc_exit",
              "sc_id")

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in self.TABLES)

    def comm(self, tid: int) -> str:
        t = self.threads.get(tid)
        return t.comm if t is not None and t.comm else ("swapper" if tid == 0 else "?")


def lost_switch_notes(graphs) -> list[str]:
    """One line per host whose trace lacks context switches (a switch whose previous task is not
    the one the CPU's switch before put there): where, how many, and what the analyses do there."""
    out = []
    for host, g in graphs.items():
        lost = {c: (n, k) for c, (n, k) in getattr(g, "switches", {}).items() if k}
        if not lost:
            continue
        where = ", ".join(f"CPU {c} {k:,} of {n:,}" for c, (n, k) in sorted(lost.items()))
        out.append(f"{host}: context switches missing from the trace ({where} switches do not follow from the one "
                   "before: the tracer lost events, or the kernel records none from idle on those CPUs); there a "
                   "thread's own events (its system calls) say when it ran, and its other states are inferred")
    return out
