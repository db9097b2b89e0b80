"""The execution graph of a host, built from kernel events in vectorised form.

What the reference (Trace Compass's OS execution graph, ../shared/reference/critical-path.md)
keeps as vertices and edges is kept here as per-thread **state intervals** in numpy arrays:

- for each thread (keyed by host and tid), consecutive intervals ``[start, end)`` with a state:
  running in user mode (RU), running in a system call (RS), waiting for a CPU (BP: preempted,
  or woken but not yet running, or forked but not yet run), blocked, unknown (before the thread's
  first event), exited;
- every blocked interval knows what ended it: the wake-up event, and in which context that
  wake-up ran on its CPU. In process context the waker is the task running there (a vertical
  edge waker -> wakee, to be followed by the critical path); in interrupt context the top of the
  CPU's interrupt stack gives the reason (softirq vector, IRQ number, hrtimer, IPI), as in the
  reference's rules;
- fork edges (parent -> child) and the system calls of every thread (entry, exit, name).

How it is computed, without a per-event Python loop: the reader delivers the current task of
every event; a streaming consumer keeps compact rows of the events that matter (scheduler,
wake-ups, fork/exit, system call entry/exit, interrupt context entry/exit). At the end, per CPU,
the interrupt nesting depth is a clamped cumulative sum of +1/-1 (exits at depth 0 ignored)
and the context of each wake-up is the last entry that left the stack at its depth; per
thread, states are forward-filled over (thread, event order) with the "effective wake-up" rule.

Departures from the reference, on purpose:

- a second wake-up of a thread that is already runnable is ignored (the reference's quirk
  attributes the interval after the first wake-up to the second waker);
- the interrupt context stack pops on any exit at depth > 0 (the reference pops only when the
  top matches); entries and exits of one CPU come in order, so only a lost event could tell them
  apart, and clamping at 0 keeps a trace that starts inside an interrupt correct;
- tid 0 (the idle task) is one task per CPU and is never a waker to follow.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field

import numpy as np

from .columns import MISSING
from .ctf.reader import CtfReader, ReadSpec
from .netmatch import PACKET_FIELDS, ClockFit, PacketLog, match, packet_keys, tcp_segments

# interval states in the graph
RU, RS, BP, BLOCKED, UNKNOWN, EXITED = 0, 1, 2, 3, 4, 5

# what a blocked interval becomes when its waker is not followed (critical-path states)
# (the numbering of path states lives in critical_path.STATES; these codes are shared)
ST_RU, ST_RS, ST_BP, ST_BD, ST_BN, ST_BS, ST_BI, ST_BF, ST_BT = range(9)
FOLLOW = -1  # blocked interval woken by a task: the critical path follows the waker
FOLLOW_NET = -2  # woken by a packet another task of the host sent: follow the sender up to the send
FOLLOW_REMOTE = -3  # woken by a packet a task of another traced host sent: follow it on that host

# scheduler status from sched_switch's prev_state / statedump
WAIT_CPU, WAIT_BLOCKED, WAIT_FORK, RUN, DEAD, NOSTATE = 0, 1, 2, 3, 4, 5

# interrupt contexts: code = base + number
CTX_NONE = 0
CTX_HRTIMER = 1
CTX_IPI = 2
CTX_PACKET = 3
CTX_SOFTIRQ = 100  # + vector
CTX_IRQ = 1000  # + irq number

# row categories
(C_IGNORE, C_SWITCH, C_WAKING, C_WAKEUP, C_WAKEUP_NEW, C_TTWU, C_FORK, C_EXIT, C_STATEDUMP,
 C_SC_ENTRY, C_SC_EXIT, C_IRQ_IN, C_IRQ_OUT, C_SOFT_IN, C_SOFT_OUT, C_HRT_IN, C_HRT_OUT, C_IPI_IN,
 C_IPI_OUT, C_EXEC, C_PKT_IN, C_PKT_OUT, C_NET_SEND, C_NET_RECV) = range(24)

_EXACT = {
    "sched_switch": C_SWITCH,
    "sched_waking": C_WAKING,
    "sched_wakeup": C_WAKEUP,
    "sched_wakeup_new": C_WAKEUP_NEW,
    "sched_ttwu": C_TTWU,
    "sched_process_fork": C_FORK,
    "sched_process_exit": C_EXIT,
    "sched_process_exec": C_EXEC,
    "lttng_statedump_process_state": C_STATEDUMP,
    "irq_handler_entry": C_IRQ_IN,
    "irq_handler_exit": C_IRQ_OUT,
    "irq_softirq_entry": C_SOFT_IN,
    "irq_softirq_exit": C_SOFT_OUT,
    "timer_hrtimer_expire_entry": C_HRT_IN,
    "timer_hrtimer_expire_exit": C_HRT_OUT,
    "do_IRQ_entry": C_IRQ_IN,
    "do_IRQ_return": C_IRQ_OUT,
    "netif_receive_skb_internal_entry": C_PKT_IN,
    "netif_receive_skb_internal_return": C_PKT_OUT,
    "net_dev_queue": C_NET_SEND,
    "net_if_receive_skb": C_NET_RECV,
    "netif_receive_skb": C_NET_RECV,
}

SOFTIRQ_STATE = {  # vector -> path state when it wakes a task (reference rules)
    0: ST_BI, 1: ST_BS, 2: ST_BN, 3: ST_BN, 4: ST_BD, 5: ST_BD, 6: ST_BI, 7: ST_BI, 8: ST_BS, 9: ST_BI,
}


def categorize(name: str) -> int:
    c = _EXACT.get(name)
    if c is not None:
        return c
    if name.startswith("syscall_entry_"):
        return C_SC_ENTRY
    if name.startswith("syscall_exit_"):
        return C_SC_EXIT
    if name.startswith("x86_irq_vectors_"):
        return C_IPI_IN if name.endswith("_entry") else C_IPI_OUT if name.endswith("_exit") else C_IGNORE
    return C_IGNORE


GRAPH_EVENTS = [*_EXACT, "syscall_entry_*", "syscall_exit_*", "x86_irq_vectors_*"]
GRAPH_FIELDS = {
    "sched_switch": ("prev_tid", "prev_state", "next_tid", "prev_comm", "next_comm"),
    "sched_waking": ("tid",),
    "sched_wakeup": ("tid",),
    "sched_wakeup_new": ("tid",),
    "sched_ttwu": ("tid",),
    "sched_process_fork": ("parent_tid", "parent_pid", "child_tid", "child_pid", "child_comm"),
    "sched_process_exit": ("tid",),
    "sched_process_exec": ("tid", "filename"),
    "lttng_statedump_process_state": ("tid", "pid", "status", "name"),
    "irq_handler_entry": ("irq",),
    "irq_handler_exit": ("irq",),
    "do_IRQ_entry": ("irq",),
    "irq_softirq_entry": ("vec",),
    "irq_softirq_exit": ("vec",),
    "net_dev_queue": ("skbaddr", *PACKET_FIELDS),
    "net_if_receive_skb": ("skbaddr", *PACKET_FIELDS),
    "netif_receive_skb": ("skbaddr", *PACKET_FIELDS),
}


@dataclass
class ThreadInfo:
    tid: int
    pid: int = -1
    comm: str = ""
    fork_ts: int | None = None
    parent: int | None = None
    exit_ts: int | None = None
    first_ts: int | None = None
    last_ts: int | None = None


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
    iv_ctx: np.ndarray  # for BLOCKED: context code of the wake-up (-1: no wake-up seen)
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
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.iv_start, self.iv_end, self.iv_state, self.iv_block, self.iv_waker,
                                      self.iv_ctx, self.iv_syscall, self.sc_tid, self.sc_entry, self.sc_exit,
                                      self.sc_id))

    def comm(self, tid: int) -> str:
        t = self.threads.get(tid)
        return t.comm if t is not None and t.comm else ("swapper" if tid == 0 else "?")


class _Parts:
    """Lists of numpy arrays gathered chunk by chunk, concatenated once."""

    def __init__(self, *names):
        self.names = names
        self.parts = {n: [] for n in names}

    def add(self, **cols):
        for n in self.names:
            self.parts[n].append(cols[n])

    def get(self) -> dict[str, np.ndarray]:
        """The concatenated columns; the per-chunk pieces are released."""
        out = {}
        for n in self.names:
            v = self.parts[n]
            out[n] = np.concatenate(v) if v else np.empty(0, np.int64)
            self.parts[n] = []
        return out


# columns of the stored intervals and system calls
IV_DTYPES = dict(tid=np.int32, start=np.int64, end=np.int64, state=np.int8, wake=np.int32, sc=np.int16)
SC_DTYPES = dict(tid=np.int64, entry=np.int64, exit=np.int64, id=np.int32)


class _ThreadOrderedStore:
    """Rows added chunk by chunk, each chunk sorted by (thread, time), laid out at the end sorted
    by (thread, time) without a global sort: chunks come in time order, so a row's place is its
    thread's offset plus the rows of that thread in earlier chunks plus its rank in the chunk.

    The chunks' rows wait in an anonymous temporary file (deleted when closed, never beside the
    trace), so that while reading, memory holds one chunk, and at the end the final columns plus
    one chunk read back: the build never holds the graph twice. Without a writable temporary
    folder they wait in memory."""

    def __init__(self, key: str, dtypes: dict[str, type]):
        self.key = key
        self.dtypes = dtypes
        self.names = tuple(dtypes)
        self.chunks: list = []  # per chunk: (thread ids, their row counts, where the rows are)
        self.nrows = 0
        self._file = None
        self._spill = True

    def add(self, cols: dict[str, np.ndarray]) -> None:
        k = cols[self.key]
        n = len(k)
        if n == 0:
            return
        heads = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        u, cnt = k[heads].astype(np.int64), np.diff(np.r_[heads, n])
        arrays = [np.ascontiguousarray(cols[name], self.dtypes[name]) for name in self.names]
        where = arrays
        if self._spill:
            try:
                if self._file is None:
                    self._file = tempfile.TemporaryFile(prefix="perftriage-graph-")
                pos = self._file.tell()
                for arr in arrays:
                    arr.tofile(self._file)
                where = pos
            except OSError:  # no room or no temporary folder: keep the rows in memory
                self._spill = False
        self.chunks.append((u, cnt, n, where))
        self.nrows += n

    def _load(self, n: int, where) -> list[np.ndarray]:
        if not isinstance(where, int):
            return where
        self._file.seek(where)
        return [np.fromfile(self._file, self.dtypes[name], n) for name in self.names]

    def finish(self):
        """(columns, thread ids, lo, hi): thread ``i`` owns rows ``lo[i]:hi[i]``."""
        if self._file is not None:
            self._file.flush()
        tids = (np.unique(np.concatenate([c[0] for c in self.chunks])) if self.chunks
                else np.zeros(0, np.int64))
        counts = np.zeros(len(tids), np.int64)
        for u, cnt, _, _ in self.chunks:
            counts[np.searchsorted(tids, u)] += cnt  # a thread appears once per chunk
        lo = np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64) if len(tids) else np.zeros(0, np.int64)
        hi = lo + counts
        out = {name: np.empty(self.nrows, self.dtypes[name]) for name in self.names}
        written = np.zeros(len(tids), np.int64)
        chunks, self.chunks = self.chunks, []
        for i, (u, cnt, n, where) in enumerate(chunks):
            chunks[i] = None
            arrays = self._load(n, where)
            idx = np.searchsorted(tids, u)
            heads = np.r_[0, np.cumsum(cnt)[:-1]]
            dest = np.repeat(lo[idx] + written[idx] - heads, cnt) + np.arange(n)
            written[idx] += cnt
            for name, arr in zip(self.names, arrays):
                out[name][dest] = arr
            del arrays, dest
        if self._file is not None:
            self._file.close()
            self._file = None
        return out, tids, lo, hi


# per-thread row kinds: 0 switch-in, 1 switch-out (arg 1: blocked), 2 wake-up (arg: wake index),
# 3 fork (the child), 4 exit, 5 syscall entry (arg: id), 6 syscall exit (arg: id), 7 carried
# state of a thread from the previous chunk
K_IN, K_OUT, K_WAKE, K_FORK, K_EXIT, K_SC_IN, K_SC_OUT, K_CARRY = range(8)


class _HostState:
    """What the builder keeps for one host between chunks."""

    def __init__(self, first_ts: int):
        self.first_ts = first_ts
        self.last_ts = first_ts
        self.carry: dict[int, tuple] = {}  # tid -> (ts, seq, status, syscall, exited, syscall known)
        self.open_sc: dict[int, tuple] = {}  # tid -> (entry ts, syscall id)
        # closed intervals, merged chunk by chunk; each thread's last one waits in ``pending``
        # until the next chunk shows whether it continues
        self.iv = _ThreadOrderedStore("tid", IV_DTYPES)
        self.pending: dict[str, np.ndarray] | None = None
        # intervals of threads not yet seen entering or leaving a system call: if their first
        # such event is an exit, they were inside that call from the start, and these change
        self.held = _Parts(*IV_DTYPES)
        self.sc = _ThreadOrderedStore("tid", SC_DTYPES)
        self.sd_status: dict[int, tuple[int, int]] = {}  # tid -> (status, event number) of its statedump
        self.threads: dict[int, ThreadInfo] = {}

    def info(self, tid: int) -> ThreadInfo:
        t = self.threads.get(tid)
        if t is None:
            t = self.threads[tid] = ThreadInfo(tid)
        return t


class GraphBuilder:
    """Chunk consumer that builds one :class:`ExecGraph` per kernel-traced host.

    Intervals are made as chunks arrive: each thread's state at the end of a chunk is carried
    into the next, so memory holds the graph (closed intervals), the wake-up and interrupt
    rows needed to tell wake-up contexts at the end, and one chunk - never the trace."""

    def __init__(self):
        self.reader: CtfReader | None = None
        self._cat = np.zeros(0, np.int8)
        self._scid = np.zeros(0, np.int32)
        self.syscall_names: list[str] = []
        self._sc_index: dict[str, int] = {}
        self._seq = 0
        self._nwake = 0
        self.hosts: dict[int, _HostState] = {}
        # per wake-up (numbered globally): the context it ran in and the task it ran on
        self.wake = _Parts("ctx", "cur")
        self.links: dict[int, tuple[int, int]] = {}  # wake-up number -> (sender tid, send time); few
        # packets on one host: the latest send of each skb address, the latest receive per CPU
        self.net_send: dict[tuple[int, int], tuple[int, int]] = {}
        self.net_recv: dict[tuple[int, int], tuple[int, int, int]] = {}  # -> (ts, skb, receive number)
        # packets with headers, for packets between traced hosts (matched at the end)
        self.packets = PacketLog()
        self.matches = None
        self.stacks: dict[tuple[int, int], list[int]] = {}  # (host, CPU) -> interrupt contexts
        self.wake_cats: set[int] = set()

    def read_spec(self) -> ReadSpec:
        return ReadSpec(fields=dict(GRAPH_FIELDS), events=list(GRAPH_EVENTS))

    def bind(self, reader: CtfReader) -> None:
        self.reader = reader

    def _refresh_codes(self) -> None:
        names = self.reader.event_names
        if len(self._cat) == len(names):
            return
        cat = np.zeros(len(names), np.int8)
        scid = np.full(len(names), -1, np.int32)
        for i, n in enumerate(names):
            c = categorize(n)
            cat[i] = c
            if c in (C_SC_ENTRY, C_SC_EXIT):
                base = n.split("_", 2)[2]  # syscall_entry_read -> read
                sid = self._sc_index.get(base)
                if sid is None:
                    sid = self._sc_index[base] = len(self.syscall_names)
                    self.syscall_names.append(base)
                scid[i] = sid
        self._cat, self._scid = cat, scid

    # -- per chunk ------------------------------------------------------------------------

    def consume(self, chunk) -> None:
        n = len(chunk)
        if n == 0:
            return
        self._refresh_codes()
        seq = self._seq + np.arange(n, dtype=np.int64)
        self._seq += n
        cat = self._cat[chunk.event]
        for h in np.unique(chunk.host).tolist():
            m = chunk.host == h
            sub = chunk.take(m) if not m.all() else chunk
            self._consume_host(h, sub, cat[m] if not m.all() else cat, seq[m] if not m.all() else seq)

    def _consume_host(self, h: int, chunk, cat: np.ndarray, seq: np.ndarray) -> None:
        hs = self.hosts.get(h)
        if hs is None:
            hs = self.hosts[h] = _HostState(int(chunk.ts[0]))
        hs.last_ts = int(chunk.ts[-1])
        f = chunk.fields
        ts, cpu, cur = chunk.ts, chunk.cpu, chunk.tid
        strings = self.reader.strings

        def col(name, m, fill=MISSING):
            c = f.get(name)
            return c[m] if c is not None else np.full(int(m.sum()), fill)

        # thread facts (statedump, fork, exec, exit): few rows, plain loops
        m = cat == C_STATEDUMP
        for tid, pid, status, name, sq in zip(col("tid", m).tolist(), col("pid", m).tolist(),
                                              col("status", m).tolist(), col("name", m, -1).tolist(), seq[m].tolist()):
            t = hs.info(tid)
            t.pid = pid
            if name >= 0:
                t.comm = strings[name]
            if tid not in hs.sd_status:
                hs.sd_status[tid] = ({1: WAIT_FORK, 2: WAIT_CPU, 5: WAIT_BLOCKED, 6: RUN}.get(status, NOSTATE), sq)
        m_fork = cat == C_FORK
        for t_, parent, ppid, child, cpid, comm in zip(ts[m_fork].tolist(), col("parent_tid", m_fork).tolist(),
                                                       col("parent_pid", m_fork).tolist(), col("child_tid", m_fork).tolist(),
                                                       col("child_pid", m_fork).tolist(), col("child_comm", m_fork, -1).tolist()):
            t = hs.info(child)
            t.fork_ts, t.parent, t.pid = t_, parent, cpid
            if comm >= 0:
                t.comm = strings[comm]
            if hs.info(parent).pid < 0:
                hs.info(parent).pid = ppid
        m_exit = cat == C_EXIT
        for t_, tid in zip(ts[m_exit].tolist(), col("tid", m_exit).tolist()):
            hs.info(tid).exit_ts = t_
        m = cat == C_EXEC
        for tid, name in zip(col("tid", m).tolist(), col("filename", m, -1).tolist()):
            if name >= 0:
                hs.info(tid).comm = strings[name].rsplit("/", 1)[-1][:15]
        m_sw = cat == C_SWITCH
        if m_sw.any():
            nxt, nxt_comm = col("next_tid", m_sw), col("next_comm", m_sw, -1)
            for tid, c in zip(*np.unique(np.stack([nxt, nxt_comm]), axis=1).tolist()):
                if c >= 0 and tid > 0 and not hs.info(tid).comm:
                    hs.info(tid).comm = strings[c]
        # wake-ups: numbered globally; the interrupt context each ran in is resolved now, with
        # each CPU's interrupt stack carried from chunk to chunk
        m_wk = (cat == C_WAKING) | (cat == C_WAKEUP) | (cat == C_WAKEUP_NEW) | (cat == C_TTWU)
        nwk = int(m_wk.sum())
        wake_ids = self._nwake + np.arange(nwk, dtype=np.int64)
        self._nwake += nwk
        m_ic = ((cat >= C_IRQ_IN) & (cat <= C_IPI_OUT)) | (cat == C_PKT_IN) | (cat == C_PKT_OUT)
        m_send = cat == C_NET_SEND
        wctx = sctx = np.zeros(0, np.int32)
        if nwk or m_ic.any() or m_send.any():
            # the context of wake-ups and of packet sends (a packet sent from an interrupt, an
            # ACK say, is no work of the task it interrupted)
            m_ctx = m_wk | m_send
            ctx, is_exit = _interrupt_rows(cat[m_ic], col("irq", m_ic, 0), col("vec", m_ic, 0))
            both = wake_contexts(self.stacks, h, seq[m_ctx], cpu[m_ctx], seq[m_ic], cpu[m_ic], ctx, is_exit)
            wctx, sctx = both[m_wk[m_ctx]], both[m_send[m_ctx]]
        if nwk or m_send.any() or (cat == C_NET_RECV).any():
            self._packet_links(h, chunk, cat, seq, m_wk, wctx, wake_ids, sctx)
        if nwk:
            wcur = cur[m_wk]
            self.wake.add(ctx=wctx, cur=np.where(wcur == MISSING, -1, wcur).astype(np.int32))
            self.wake_cats.update(np.unique(cat[m_wk]).tolist())
        # per-thread rows of this chunk
        parts = []
        n_sw = int(m_sw.sum())
        if n_sw:
            state = col("prev_state", m_sw)
            blocked = np.where(state == MISSING, 1, (state & 3) != 0).astype(np.int64)
            parts.append((col("next_tid", m_sw), seq[m_sw], ts[m_sw], K_IN, np.zeros(n_sw, np.int64)))
            parts.append((col("prev_tid", m_sw), seq[m_sw], ts[m_sw], K_OUT, blocked))
        if nwk:
            parts.append((col("tid", m_wk), seq[m_wk], ts[m_wk], K_WAKE, wake_ids))
        if m_fork.any():
            parts.append((col("child_tid", m_fork), seq[m_fork], ts[m_fork], K_FORK, np.zeros(int(m_fork.sum()), np.int64)))
        if m_exit.any():
            parts.append((col("tid", m_exit), seq[m_exit], ts[m_exit], K_EXIT, np.zeros(int(m_exit.sum()), np.int64)))
        m_sc = (cat == C_SC_ENTRY) | (cat == C_SC_EXIT)
        if m_sc.any():
            kinds = np.where(cat[m_sc] == C_SC_EXIT, K_SC_OUT, K_SC_IN).astype(np.int8)
            parts.append((cur[m_sc].astype(np.int64), seq[m_sc], ts[m_sc], kinds,
                          self._scid[chunk.event[m_sc]].astype(np.int64)))
        if parts:
            self._advance(hs, parts)

    NET_CONTEXTS = (CTX_SOFTIRQ + 3, CTX_SOFTIRQ + 2, CTX_PACKET)  # NET_RX, NET_TX softirqs, packet handling
    NET_DELAY_NS = 1_000_000  # a wake-up this soon after a packet's receive on its CPU is that packet's
    NET_FLIGHT_NS = 10_000_000  # a packet received this long after a send of its skb address: that send
    # (skb addresses are reused: an older send with the same address is another packet)

    def _packet_links(self, h: int, chunk, cat, seq, m_wk, wctx, wake_ids, sctx) -> None:
        """The wake-ups of the chunk that deliver a packet another task of this host sent
        (loopback: the same skb address is queued by the sender and received by the softirq that
        wakes the reader) go to ``self.links``: wake-up number -> (sender, send time). Packets
        with an IP header are logged for matching between hosts at the end, and a wake-up that
        delivers one that is not loopback is noted with its receive. Packet rows are few: a
        plain loop over them and the wake-ups in network contexts. The loopback table forgets
        sends older than NET_FLIGHT_NS at the end of the chunk; the packet log keeps a few
        integers per packet with a header (~70 bytes) until the end, as the graph keeps its rows."""
        nwk = int(m_wk.sum())
        m_send, m_recv = cat == C_NET_SEND, cat == C_NET_RECV
        wk_pos = np.flatnonzero(m_wk)
        net_wake = np.isin(wctx, self.NET_CONTEXTS) if nwk else np.zeros(0, bool)
        send_rows, recv_rows = np.flatnonzero(m_send), np.flatnonzero(m_recv)
        rows = np.concatenate([send_rows, recv_rows, wk_pos[net_wake]])
        if len(rows) == 0:
            return
        ts, cpu, cur = chunk.ts, chunk.cpu, chunk.tid
        # the sender of a packet: the task running, when the send is in process context
        sender = np.full(len(chunk), -1, np.int64)
        if len(send_rows):
            t = cur[send_rows]
            sender[send_rows] = np.where((t == MISSING) | (sctx != CTX_NONE), -1, t)
            self.packets.add_sends(packet_keys(chunk.fields, send_rows), ts[send_rows], h, sender[send_rows],
                                   tcp_segments(chunk.fields, send_rows))
        recv_no = np.full(len(chunk), -1, np.int64)
        if len(recv_rows):
            recv_no[recv_rows] = self.packets.add_receives(packet_keys(chunk.fields, recv_rows), ts[recv_rows], h,
                                                           tcp_segments(chunk.fields, recv_rows))
        kinds = np.concatenate([np.zeros(len(send_rows), np.int8), np.ones(len(recv_rows), np.int8),
                                np.full(int(net_wake.sum()), 2, np.int8)])
        widx = np.concatenate([np.full(len(send_rows) + len(recv_rows), -1), np.flatnonzero(net_wake)])
        o = np.argsort(seq[rows], kind="stable")
        skb_all = chunk.fields.get("skbaddr")
        remote_w: list[int] = []  # wake-ups by a packet not sent on this host, and their receives
        remote_r: list[int] = []
        skb = (lambda r: int(skb_all[r])) if skb_all is not None else (lambda r: MISSING)
        for r, kd, wi in zip(rows[o].tolist(), kinds[o].tolist(), widx[o].tolist()):
            if kd == 0:
                if skb_all is not None and sender[r] > 0:
                    self.net_send[(h, skb(r))] = (int(ts[r]), int(sender[r]))
            elif kd == 1:
                self.net_recv[(h, int(cpu[r]))] = (int(ts[r]), skb(r), int(recv_no[r]))
            else:
                got = self.net_recv.get((h, int(cpu[r])))
                if got is None or int(ts[r]) - got[0] > self.NET_DELAY_NS:
                    continue
                sent = self.net_send.get((h, got[1])) if skb_all is not None else None
                if sent is not None and 0 <= got[0] - sent[0] <= self.NET_FLIGHT_NS:
                    self.links[int(wake_ids[wi])] = (sent[1], sent[0])
                elif got[2] >= 0:
                    remote_w.append(int(wake_ids[wi]))
                    remote_r.append(got[2])
        self.packets.add_wakes(remote_w, remote_r)
        horizon = int(ts[-1]) - self.NET_FLIGHT_NS
        if self.net_send and len(self.net_send) > 64:
            self.net_send = {k: v for k, v in self.net_send.items() if k[0] != h or v[0] >= horizon}

    def _advance(self, hs: _HostState, parts) -> None:
        tid = np.concatenate([np.asarray(p[0], np.int64) for p in parts])
        seq = np.concatenate([p[1] for p in parts])
        ts = np.concatenate([p[2] for p in parts])
        kind = np.concatenate([np.full(len(p[1]), p[3], np.int8) if np.isscalar(p[3]) else p[3] for p in parts])
        arg = np.concatenate([p[4] for p in parts])
        ok = (tid > 0) & (tid != MISSING)
        tid, seq, ts, kind, arg = tid[ok], seq[ok], ts[ok], kind[ok], arg[ok]
        # carried state of the threads seen before: one row at the head of each
        present = np.unique(tid).tolist()
        carried = [(t, hs.carry[t]) for t in present if t in hs.carry]
        nc = len(carried)
        c_status = np.full(len(tid) + nc, -1, np.int8)
        c_sc = np.full(len(tid) + nc, -1, np.int64)
        c_exit = np.zeros(len(tid) + nc, bool)
        c_known = np.zeros(len(tid) + nc, bool)
        if nc:
            ct = np.array([t for t, _ in carried], np.int64)
            cv = np.array([v for _, v in carried], np.int64)  # ts, seq, status, sc, exited
            tid = np.concatenate([tid, ct])
            seq = np.concatenate([seq, cv[:, 1]])
            ts = np.concatenate([ts, cv[:, 0]])
            kind = np.concatenate([kind, np.full(nc, K_CARRY, np.int8)])
            arg = np.concatenate([arg, np.zeros(nc, np.int64)])
            c_status[-nc:] = cv[:, 2]
            c_sc[-nc:] = cv[:, 3]
            c_exit[-nc:] = cv[:, 4].astype(bool)
            c_known[-nc:] = cv[:, 5].astype(bool)
        order = np.lexsort((seq, tid))
        tid, seq, ts, kind, arg = tid[order], seq[order], ts[order], kind[order], arg[order]
        c_status, c_sc, c_exit, c_known = c_status[order], c_sc[order], c_exit[order], c_known[order]
        self._pair_syscalls(hs, tid, ts, kind, arg)
        out, carry, revealed = _chunk_intervals(tid, seq, ts, kind, arg, c_status, c_sc, c_exit, c_known,
                                                hs.sd_status, hs.first_ts)
        unknown = np.array([t for t, v in carry.items() if not v[5]], np.int64)
        _emit_intervals(hs, out, unknown, revealed)
        for t, v in carry.items():
            hs.carry[t] = v

    def _pair_syscalls(self, hs: _HostState, tid, ts, kind, arg) -> None:
        m = (kind == K_SC_IN) | (kind == K_SC_OUT)
        if not m.any():
            return
        tid, ts, is_exit, sid = tid[m], ts[m], kind[m] == K_SC_OUT, arg[m]
        # open entries from earlier chunks come first in their thread
        opened = [(t, hs.open_sc.pop(t)) for t in np.unique(tid).tolist() if t in hs.open_sc]
        if opened:
            ot = np.array([t for t, _ in opened], np.int64)
            ov = np.array([v for _, v in opened], np.int64)
            tid = np.concatenate([ot, tid])
            ts = np.concatenate([ov[:, 0], ts])
            is_exit = np.concatenate([np.zeros(len(ot), bool), is_exit])
            sid = np.concatenate([ov[:, 1], sid])
            o = np.argsort(tid, kind="stable")
            tid, ts, is_exit, sid = tid[o], ts[o], is_exit[o], sid[o]
        n = len(tid)
        entry = ~is_exit
        same_next = np.r_[tid[1:] == tid[:-1], False]
        paired = entry & same_next & np.r_[is_exit[1:], False]
        ent = np.flatnonzero(paired)
        # an entry not followed by its exit in this chunk stays open (if it is the thread's last)
        last_of_thread = ~same_next
        for i in np.flatnonzero(entry & last_of_thread).tolist():
            hs.open_sc[int(tid[i])] = (int(ts[i]), int(sid[i]))
        prev_is_entry = np.r_[False, entry[:-1] & (tid[1:] == tid[:-1])]
        orphan = np.flatnonzero(is_exit & ~prev_is_entry)  # began before the trace
        rows = dict(tid=np.concatenate([tid[ent], tid[orphan]]),
                    entry=np.concatenate([ts[ent], np.full(len(orphan), hs.first_ts, np.int64)]),
                    exit=np.concatenate([ts[np.minimum(ent + 1, n - 1)], ts[orphan]]),
                    id=np.concatenate([sid[ent], sid[orphan]]))
        o = np.lexsort((rows["entry"], rows["tid"]))
        hs.sc.add({k: v[o] for k, v in rows.items()})

    # -- the end ----------------------------------------------------------------------------

    def finish(self) -> dict[str, ExecGraph]:
        reader = self.reader
        wake = self.wake.get()
        wctx, wake_cur = wake["ctx"], wake["cur"]
        links = self.links
        family = ("sched_ttwu" if C_TTWU in self.wake_cats else
                  "sched_waking" if C_WAKING in self.wake_cats else "sched_wakeup")
        graphs = {}
        kernel_hosts = {reader.host_code(t.hostname) for t in reader.traces if t.domain == "kernel"}
        self.matches = match(self.packets)
        self.packets = PacketLog()
        remote = self.matches.remote
        for h, hs in self.hosts.items():
            if h not in kernel_hosts:
                continue
            g = graphs[reader.hosts[h]] = self._finish_host(hs, wctx, wake_cur, family, links, remote)
            g.clocks = {reader.hosts[b]: fit for (a, b), fit in self.matches.fits.items() if a == h}
        self.hosts = {}
        _release_freed_memory()
        return graphs

    def _finish_host(self, hs: _HostState, wctx, wake_cur, family: str, links=None, remote=None) -> ExecGraph:
        end = hs.last_ts
        # close what is still open at the end of the trace
        if hs.carry:
            ct = np.array(list(hs.carry), np.int64)
            cv = np.array(list(hs.carry.values()), np.int64)
            _emit_intervals(hs, dict(tid=ct.astype(np.int32), start=cv[:, 0], end=np.maximum(cv[:, 0], end),
                                     state=_interval_state(cv[:, 2].astype(np.int8), cv[:, 3]),
                                     wake=np.full(len(ct), -1, np.int32), sc=cv[:, 3].astype(np.int16)),
                            ct[cv[:, 5] == 0], {})
        # what is left: held intervals of threads that never showed a system call, and each
        # thread's last run (held rows first: they are older)
        rest = hs.held.get()
        if hs.pending is not None:
            rest = {k: np.concatenate([rest[k].astype(IV_DTYPES[k]), hs.pending[k]]) for k in IV_DTYPES}
            hs.pending = None
        o = np.argsort(rest["tid"], kind="stable")
        hs.iv.add({k: v[o] for k, v in rest.items()})
        if hs.open_sc:
            ot = np.array(list(hs.open_sc), np.int64)
            ov = np.array(list(hs.open_sc.values()), np.int64)
            o = np.argsort(ot)
            hs.sc.add(dict(tid=ot[o], entry=ov[o, 0], exit=np.full(len(ot), end, np.int64), id=ov[o, 1]))
        cols, tids, lo, hi = hs.iv.finish()
        tid, start, stop, state, wake, sc = (cols[k] for k in ("tid", "start", "end", "state", "wake", "sc"))
        del cols
        m = len(tid)
        futex_id = self.syscall_names.index("futex") if "futex" in self.syscall_names else -99
        iv_block, iv_waker, iv_ctx = _blocked_ends(state, wake, sc, wctx, wake_cur, futex_id)
        net_links = _network_links(tid, state, iv_block, iv_waker, wake, links)
        remote_links = _remote_waits(state, iv_block, iv_waker, wake, remote, self.reader.hosts)
        del wake
        _release_freed_memory()
        for t_, a, z in zip(tids.tolist(), start[lo].tolist() if m else [], stop[hi - 1].tolist() if m else []):
            ti = hs.info(t_)
            ti.first_ts, ti.last_ts = a, z
        sc_parts, _, _, _ = hs.sc.finish()
        if len(sc_parts["tid"]) > 1 and not _sorted_pairs(sc_parts["tid"], sc_parts["entry"]):
            o = np.lexsort((sc_parts["entry"], sc_parts["tid"]))  # lost events can break the order
            sc_parts = {k: v[o] for k, v in sc_parts.items()}
        return ExecGraph(
            host=self.reader.hosts[next(k for k, v in self.hosts.items() if v is hs)], begin=hs.first_ts, end=end,
            tids=tids, thread_lo=lo, thread_hi=hi, iv_start=start, iv_end=stop, iv_state=state,
            iv_block=iv_block, iv_waker=iv_waker, iv_ctx=iv_ctx, iv_syscall=sc,
            sc_tid=sc_parts["tid"], sc_entry=sc_parts["entry"], sc_exit=sc_parts["exit"], sc_id=sc_parts["id"],
            syscall_names=list(self.syscall_names), threads=hs.threads, wakeup_family=family, net_links=net_links,
            remote_links=remote_links,
        )



def _blocked_ends(state, wake, sc, wctx, wake_cur, futex_id, block: int = 1 << 20):
    """How each blocked interval ends: (path state when not followed, or FOLLOW; the waker's tid
    to follow, -1 otherwise; the wake-up's context code, -1 when no wake-up was seen). Done a
    block of intervals at a time so that the temporaries stay small beside the graph."""
    n = len(state)
    iv_block = np.full(n, ST_BT, np.int8)
    iv_waker = np.full(n, -1, np.int32)
    iv_ctx = np.full(n, -1, np.int32)
    for lo in range(0, n, block):
        b = lo + np.flatnonzero(state[lo:lo + block] == BLOCKED)
        if len(b) == 0:
            continue
        w = wake[b]
        has = w >= 0
        wi = np.maximum(w, 0)
        ctx = np.where(has, wctx[wi] if len(wctx) else 0, -1)
        waker = np.where(has, wake_cur[wi] if len(wctx) else -1, -1)
        iv_ctx[b] = ctx
        st = np.full(len(b), ST_BT, np.int8)
        proc = has & (ctx == CTX_NONE)
        follow = proc & (waker > 0)
        st[follow] = FOLLOW
        st[proc & ~follow] = ST_BI  # woken from the idle task's context: no task to follow
        irq = has & (ctx != CTX_NONE)
        st[irq] = block_state_of_context(ctx[irq])
        st[(~has) & (sc[b] == futex_id)] = ST_BF
        iv_block[b] = st
        iv_waker[b] = np.where(follow, waker, -1)
    return iv_block, iv_waker, iv_ctx


def _network_links(tid, state, iv_block, iv_waker, wake, links) -> dict[int, int]:
    """Blocked intervals ended by a packet that a task of the host sent (loopback: few): they
    become FOLLOW_NET, their waker the sender; returns interval -> the send's time."""
    out: dict[int, int] = {}
    if not links:
        return out
    linked = np.fromiter(links, np.int64, len(links))
    cand = np.flatnonzero((state == BLOCKED) & (iv_block == ST_BN) & np.isin(wake, linked))
    for k in cand.tolist():
        snd, t = links[int(wake[k])]
        if snd > 0 and snd != int(tid[k]):
            iv_block[k] = FOLLOW_NET
            iv_waker[k] = snd
            out[k] = t
    return out


def _remote_waits(state, iv_block, iv_waker, wake, remote, host_names) -> RemoteLinks:
    """Blocked intervals (BN so far) ended by a wake-up a packet from another traced host
    caused (``remote``: netmatch.RemoteWakes, sorted by wake-up): they become FOLLOW_REMOTE,
    their waker the sender (a tid of that host). Vectorised: one per request round trip."""
    if remote is None or len(remote) == 0:
        return RemoteLinks.empty()
    k = np.flatnonzero((state == BLOCKED) & (iv_block == ST_BN) & np.isin(wake, remote.wake))
    j = np.searchsorted(remote.wake, wake[k])
    iv_block[k] = FOLLOW_REMOTE
    iv_waker[k] = remote.tid[j]
    return RemoteLinks(k.astype(np.int64), remote.host[j], remote.t[j], list(host_names))


def _sorted_pairs(a: np.ndarray, b: np.ndarray, block: int = 1 << 20) -> bool:
    """Whether rows are sorted by (a, b), checked a block at a time."""
    for lo in range(0, max(len(a) - 1, 0), block):
        x, y = a[lo:lo + block + 1], b[lo:lo + block + 1]
        da = np.diff(x)
        if not ((da > 0) | ((da == 0) & (np.diff(y) >= 0))).all():
            return False
    return True


def _in_syscall_from_start(cols: dict[str, np.ndarray], revealed: dict[int, int]) -> dict[str, np.ndarray]:
    """Rows of threads whose first system-call event turned out to be an exit: they were in that
    call all along (running becomes RS)."""
    sc = np.array([revealed.get(t, -1) for t in cols["tid"].tolist()], np.int64)
    fix = sc >= 0
    if not fix.any():
        return cols
    cols = dict(cols)
    cols["sc"] = np.where(fix, sc, cols["sc"]).astype(cols["sc"].dtype)
    cols["state"] = np.where(fix & (cols["state"] == RU), RS, cols["state"]).astype(cols["state"].dtype)
    return cols


def _emit_intervals(hs: _HostState, out: dict[str, np.ndarray], unknown: np.ndarray,
                    revealed: dict[int, int]) -> None:
    """Merge one chunk's closed intervals into runs and store them. Empty intervals are dropped;
    contiguous intervals of one thread with the same state and system call (not blocked: each
    blocked interval keeps its own wake-up) become one. Each thread's last run is held back in
    ``hs.pending``: the next chunk may continue it. Threads in ``unknown`` (no system-call event
    yet) are held in ``hs.held``; those in ``revealed`` are corrected and released."""
    keep = out["end"] > out["start"]
    cols = {k: v[keep] for k, v in out.items()}
    pend = hs.pending
    rest = None
    if pend is not None and len(pend["tid"]):
        here = np.isin(pend["tid"], cols["tid"])
        rest = {k: v[~here] for k, v in pend.items()}
        before = {k: v[here] for k, v in pend.items()}
        if revealed:  # the chunk's own rows already know; the older rows are corrected
            before = _in_syscall_from_start(before, revealed)
        cols = {k: np.concatenate([before[k], cols[k]]) for k in cols}
    released = None
    if revealed:
        held = hs.held.get()
        if len(held["tid"]):
            back = np.isin(held["tid"], np.fromiter(revealed, np.int64, len(revealed)))
            hs.held.add(**{k: v[~back] for k, v in held.items()})
            released = _in_syscall_from_start({k: v[back].astype(IV_DTYPES[k]) for k, v in held.items()}, revealed)
    # pending rows first, then lead intervals, then the chunk's rows: a stable sort by thread
    # keeps each thread's rows in time order
    o = np.argsort(cols["tid"], kind="stable")
    cols = {k: v[o] for k, v in cols.items()}
    m = len(o)
    if m:
        tid, state = cols["tid"], cols["state"]
        same = np.zeros(m, bool)
        same[1:] = ((tid[1:] == tid[:-1]) & (state[1:] == state[:-1]) & (state[1:] != BLOCKED)
                    & (cols["sc"][1:] == cols["sc"][:-1]) & (cols["start"][1:] == cols["end"][:-1]))
        heads = np.flatnonzero(~same)
        tails = np.r_[heads[1:] - 1, m - 1]
        merged = {k: cols[k][heads] for k in ("tid", "start", "state", "sc")}
        merged["end"] = cols["end"][tails]
        merged["wake"] = cols["wake"][tails]
        t = merged["tid"]
        last = np.r_[t[1:] != t[:-1], True]
        wait = np.isin(t, unknown) & ~last if len(unknown) else np.zeros(len(t), bool)
        if wait.any():
            hs.held.add(**{k: v[wait] for k, v in merged.items()})
        done = {k: v[~last & ~wait] for k, v in merged.items()}
        if released is not None and len(released["tid"]):
            done = {k: np.concatenate([released[k], done[k]]) for k in done}
            o = np.argsort(done["tid"], kind="stable")
            done = {k: v[o] for k, v in done.items()}
        hs.iv.add(done)
        new_pend = {k: v[last] for k, v in merged.items()}
    else:
        if released is not None and len(released["tid"]):
            hs.iv.add(released)
        new_pend = {k: v for k, v in cols.items()}
    if rest is not None and len(rest["tid"]):
        new_pend = {k: np.concatenate([rest[k], new_pend[k]]) for k in new_pend}
        o = np.argsort(new_pend["tid"], kind="stable")
        new_pend = {k: v[o] for k, v in new_pend.items()}
    hs.pending = new_pend


def _release_freed_memory() -> None:
    """Give the heap pages freed by the build back to the system (glibc keeps them otherwise)."""
    try:
        import ctypes  # noqa: PLC0415

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


def _chunk_intervals(tid, seq, ts, kind, arg, c_status, c_sc, c_exit, c_known, sd_status, begin):
    """Closed intervals of one chunk's rows (sorted by thread, event order) and the state each
    thread carries into the next chunk. A thread's first row is its carried state (K_CARRY) when
    it was seen before; else its state before that row is the statedump's, or inferred from the
    row: a switch-out or a syscall means it was running, a wake-up that it was blocked (the
    reference creates unknown wake-up targets WAIT_BLOCKED), a switch-in that it waited for a
    CPU, a fork that it did not exist yet."""
    n = len(tid)
    idx = np.arange(n)
    new_thread = np.r_[True, tid[1:] != tid[:-1]]
    group_start = np.maximum.accumulate(np.where(new_thread, idx, 0))
    g = np.flatnonzero(new_thread)
    last_of_group = np.r_[new_thread[1:], True]
    gid = np.cumsum(new_thread) - 1
    infer = np.array([WAIT_CPU, RUN, WAIT_BLOCKED, DEAD, RUN, RUN, RUN, NOSTATE], np.int8)
    # a statedump tells the state of a thread not seen before it (a later one says nothing of
    # the thread's state at its first event)
    sd = [sd_status.get(t, (NOSTATE, 0)) for t in tid[g].tolist()]
    init_status = np.array([st if sq < s0 else NOSTATE for (st, sq), s0 in zip(sd, seq[g].tolist())], np.int8)
    init_status = np.where(init_status == NOSTATE, infer[kind[g]], init_status).astype(np.int8)
    init_row = init_status[gid]
    is_carry = kind == K_CARRY

    def last_in_group(mask):
        last = np.maximum.accumulate(np.where(mask, idx, -1))
        return np.where(last >= group_start, last, -1)

    # status set by each non-wake row (a carried row sets the carried status); a switch-out after
    # the thread's exit leaves it dead
    setter = (kind <= K_OUT) | (kind == K_FORK) | (kind == K_EXIT) | is_carry
    status_set = np.full(n, -1, np.int8)
    status_set[kind == K_IN] = RUN
    out_rows = kind == K_OUT
    status_set[out_rows] = np.where(arg[out_rows] == 1, WAIT_BLOCKED, WAIT_CPU)
    status_set[kind == K_FORK] = WAIT_FORK
    status_set[kind == K_EXIT] = DEAD
    status_set[is_carry] = c_status[is_carry]
    exit_mark = (kind == K_EXIT) | (is_carry & c_exit)
    exited = last_in_group(exit_mark) >= 0
    status_set[out_rows & exited] = DEAD
    last_setter = last_in_group(setter)
    status_before = np.where(last_setter >= 0, status_set[np.maximum(last_setter, 0)], init_row)
    # a wake-up is effective if the thread was blocked (or forked) and it is the first since
    effective = np.zeros(n, bool)
    wake_idx = np.flatnonzero(kind == K_WAKE)
    if len(wake_idx):
        ls = last_setter[wake_idx]
        same_group_prev = np.r_[False, group_start[wake_idx][1:] == group_start[wake_idx][:-1]]
        prev_ls = np.r_[-2, ls[:-1]]
        first_since = ~(same_group_prev & (prev_ls == ls))
        eff = first_since & np.isin(status_before[wake_idx], (WAIT_BLOCKED, WAIT_FORK))
        effective[wake_idx[eff]] = True
    del status_before, last_setter
    st_val = np.where(effective, WAIT_CPU, status_set).astype(np.int8)
    last_st = last_in_group(setter | effective)
    status_after = np.where(last_st >= 0, st_val[np.maximum(last_st, 0)], init_row).astype(np.int8)
    del st_val, last_st, status_set, setter
    # the system call running after each row: entries set it, exits clear it, a carried row
    # restores it (if the thread was seen in a system call before); before a thread's first
    # syscall row it is inside that syscall if the first one is an exit
    sc_row = (kind == K_SC_IN) | (kind == K_SC_OUT) | (is_carry & c_known)
    sc_val = np.where(kind == K_SC_IN, arg, np.where(is_carry, c_sc, -1))
    last_sc = last_in_group(sc_row)
    first_sc = _first_in_group((kind == K_SC_IN) | (kind == K_SC_OUT), group_start, n)
    init_sc = np.where((first_sc >= 0) & (kind[np.maximum(first_sc, 0)] == K_SC_OUT),
                       arg[np.maximum(first_sc, 0)], -1)
    sc_after = np.where(last_sc >= 0, sc_val[np.maximum(last_sc, 0)], init_sc)
    # threads whose system-call state is known after the chunk, and the carried ones it became
    # known for in this chunk (with the call they were in from the start, -1 for none)
    head_known = is_carry[g] & c_known[g]
    known_g = head_known | (first_sc[g] >= 0)
    rev = is_carry[g] & ~head_known & (first_sc[g] >= 0)
    revealed = dict(zip(tid[g[rev]].tolist(), init_sc[g[rev]].tolist()))
    del last_sc, first_sc, sc_val
    # closed intervals: [ts_i, ts_{i+1}) for every row but each thread's last
    closed = ~last_of_group
    nxt = np.flatnonzero(closed) + 1
    c_rows = np.flatnonzero(closed)
    wake_of = np.where(effective[nxt], arg[nxt], -1)
    # lead intervals of new threads: [begin, first row)
    new_g = g[~is_carry[g]]
    lead_state = _interval_state(init_status[~is_carry[g]], init_sc[new_g])
    out = {
        "tid": np.concatenate([tid[new_g], tid[c_rows]]).astype(np.int32),
        "start": np.concatenate([np.full(len(new_g), begin, np.int64), ts[c_rows]]),
        "end": np.concatenate([ts[new_g], ts[nxt]]),
        "state": np.concatenate([lead_state, _interval_state(status_after[c_rows], sc_after[c_rows])]).astype(np.int8),
        "wake": np.concatenate([np.where(effective[new_g], arg[new_g], -1), wake_of]).astype(np.int32),
        "sc": np.concatenate([init_sc[new_g], sc_after[c_rows]]).astype(np.int16),
    }
    last = np.flatnonzero(last_of_group)
    carry = {int(t): (int(a), int(s_), int(st), int(sc), int(ex), int(kn)) for t, a, s_, st, sc, ex, kn in
             zip(tid[last].tolist(), ts[last].tolist(), seq[last].tolist(), status_after[last].tolist(),
                 sc_after[last].tolist(), exited[last].tolist(), known_g.tolist())}
    return out, carry, revealed


def _interrupt_rows(cat, irq, vec):
    """Context code (CTX_*) and whether it is an exit, for interrupt entry/exit rows."""
    ctx = np.zeros(len(cat), np.int64)
    is_irq = (cat == C_IRQ_IN) | (cat == C_IRQ_OUT)
    is_soft = (cat == C_SOFT_IN) | (cat == C_SOFT_OUT)
    ctx[is_irq] = CTX_IRQ + np.where(irq[is_irq] == MISSING, 0, irq[is_irq])
    ctx[is_soft] = CTX_SOFTIRQ + np.where(vec[is_soft] == MISSING, 0, vec[is_soft])
    ctx[(cat == C_HRT_IN) | (cat == C_HRT_OUT)] = CTX_HRTIMER
    ctx[(cat == C_IPI_IN) | (cat == C_IPI_OUT)] = CTX_IPI
    ctx[(cat == C_PKT_IN) | (cat == C_PKT_OUT)] = CTX_PACKET
    is_exit = np.isin(cat, (C_IRQ_OUT, C_SOFT_OUT, C_HRT_OUT, C_IPI_OUT, C_PKT_OUT))
    return ctx, is_exit


def wake_contexts(stacks: dict, host: int, w_seq, w_cpu, i_seq, i_cpu, i_ctx, i_exit) -> np.ndarray:
    """Context code of each wake-up row of one chunk of ``host``: CTX_NONE (process context) or
    the innermost interrupt context active on its CPU at that moment. ``stacks`` holds each
    (host, CPU)'s interrupt contexts at the end of the previous chunk and is updated; an exit
    with nothing on the stack (its entry was before the trace) is ignored."""
    out = np.zeros(len(w_seq), np.int32)
    for c in np.unique(np.concatenate([w_cpu, i_cpu])).tolist():
        stack = stacks.get((host, c), [])
        wi = np.flatnonzero(w_cpu == c)
        ii = np.flatnonzero(i_cpu == c)
        if len(ii) == 0:
            out[wi] = stack[-1] if stack else CTX_NONE
            continue
        # the CPU's interrupt rows and wake rows in event order
        seqs = np.concatenate([i_seq[ii], w_seq[wi]])
        order = np.argsort(seqs, kind="stable")
        is_wake = np.r_[np.zeros(len(ii), bool), np.ones(len(wi), bool)][order]
        src = np.concatenate([ii, wi])[order]
        delta = np.zeros(len(order), np.int64)
        delta[~is_wake] = np.where(i_exit[src[~is_wake]], -1, 1)
        s = len(stack) + np.cumsum(delta)
        depth = s - np.minimum(np.minimum.accumulate(s), 0)  # clamped at 0: stray exits ignored
        entry_pos = np.flatnonzero((~is_wake) & (delta > 0))
        entry_depth = depth[entry_pos]
        entry_ctx = i_ctx[src[entry_pos]]
        wake_pos = np.flatnonzero(is_wake)
        wake_depth = depth[wake_pos]
        here = np.zeros(len(wake_pos), np.int64)
        for level in np.unique(wake_depth[wake_depth > 0]).tolist():
            sel = np.flatnonzero(wake_depth == level)
            ents = np.flatnonzero(entry_depth == level)
            k = np.searchsorted(entry_pos[ents], wake_pos[sel]) - 1
            ok = k >= 0
            here[sel[ok]] = entry_ctx[ents[k[ok]]]
            # no entry at this level in the chunk yet: the one carried from before
            if level <= len(stack):
                here[sel[~ok]] = stack[level - 1]
        out[src[wake_pos]] = here
        # the stack at the end of the chunk
        final = int(depth[-1])
        new = []
        for level in range(1, final + 1):
            ents = np.flatnonzero(entry_depth == level)
            new.append(int(entry_ctx[ents[-1]]) if len(ents) else stack[level - 1])
        stacks[(host, c)] = new
    return out


def block_state_of_context(ctx: np.ndarray) -> np.ndarray:
    """Path state of a blocked interval ended by a wake-up in interrupt context ``ctx``."""
    out = np.full(len(ctx), ST_BI, np.int8)
    soft = (ctx >= CTX_SOFTIRQ) & (ctx < CTX_IRQ)
    vec = ctx - CTX_SOFTIRQ
    lut = np.full(10, ST_BI, np.int8)
    for v, st in SOFTIRQ_STATE.items():
        lut[v] = st
    out[soft] = lut[np.clip(vec[soft], 0, 9)]
    out[ctx == CTX_HRTIMER] = ST_BS
    out[ctx == CTX_PACKET] = ST_BN
    return out


def _first_in_group(mask, group_start, n):
    """For every row, the index of the first row of its group where ``mask`` holds (-1 if none)."""
    if n == 0:
        return np.zeros(0, np.int64)
    heads = np.flatnonzero(np.r_[True, group_start[1:] != group_start[:-1]])
    idx = np.where(mask, np.arange(n), n)
    first = np.minimum.reduceat(idx, heads)
    ends = np.r_[heads[1:], n]
    first = np.where(first < ends, first, -1)
    gid = np.cumsum(np.r_[True, group_start[1:] != group_start[:-1]]) - 1
    return first[gid]


def _interval_state(status, sc):
    out = np.full(len(status), UNKNOWN, np.int8)
    out[(status == RUN) & (sc >= 0)] = RS
    out[(status == RUN) & (sc < 0)] = RU
    out[(status == WAIT_CPU) | (status == WAIT_FORK)] = BP
    out[status == WAIT_BLOCKED] = BLOCKED
    out[status == DEAD] = EXITED
    return out


