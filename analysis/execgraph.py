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

from dataclasses import dataclass, field

import numpy as np

from .columns import MISSING
from .ctf.reader import CtfReader, ReadSpec

# interval states in the graph
RU, RS, BP, BLOCKED, UNKNOWN, EXITED = 0, 1, 2, 3, 4, 5

# what a blocked interval becomes when its waker is not followed (critical-path states)
# (the numbering of path states lives in critical_path.STATES; these codes are shared)
ST_RU, ST_RS, ST_BP, ST_BD, ST_BN, ST_BS, ST_BI, ST_BF, ST_BT = range(9)
FOLLOW = -1  # blocked interval woken by a task: the critical path follows the waker

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
 C_IPI_OUT, C_EXEC, C_PKT_IN, C_PKT_OUT) = range(22)

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
        return {n: (np.concatenate(v) if v else np.empty(0, np.int64)) for n, v in self.parts.items()}


class GraphBuilder:
    """Chunk consumer that keeps compact rows of the graph events and builds one
    :class:`ExecGraph` per kernel-traced host at the end."""

    def __init__(self):
        self.reader: CtfReader | None = None
        self._cat = np.zeros(0, np.int8)
        self._scid = np.zeros(0, np.int32)
        self.syscall_names: list[str] = []
        self._sc_index: dict[str, int] = {}
        self._seq = 0
        self.sw = _Parts("seq", "ts", "host", "cpu", "prev", "state", "next", "prev_comm", "next_comm")
        self.wk = _Parts("seq", "ts", "host", "cpu", "cat", "target", "cur")
        self.fk = _Parts("seq", "ts", "host", "parent", "ppid", "child", "cpid", "comm")
        self.ex = _Parts("seq", "ts", "host", "tid", "cat", "name")
        self.sd = _Parts("seq", "host", "tid", "pid", "status", "name")
        self.sc = _Parts("seq", "ts", "host", "tid", "id", "exit")
        self.ic = _Parts("seq", "ts", "host", "cpu", "ctx", "exit")
        self.first_ts: dict[int, int] = {}
        self.last_ts: dict[int, int] = {}

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

    def consume(self, chunk) -> None:
        n = len(chunk)
        if n == 0:
            return
        self._refresh_codes()
        seq = self._seq + np.arange(n, dtype=np.int64)
        self._seq += n
        cat = self._cat[chunk.event]
        f = chunk.fields
        ts, host, cpu, tid = chunk.ts, chunk.host, chunk.cpu, chunk.tid
        for h in np.unique(host).tolist():
            first = int(ts[np.argmax(host == h)])
            self.first_ts.setdefault(h, first)
            self.last_ts[h] = int(ts[len(host) - 1 - np.argmax(host[::-1] == h)])

        def col(name, m, fill=MISSING):
            c = f.get(name)
            return c[m] if c is not None else np.full(int(m.sum()), fill)

        m = cat == C_SWITCH
        if m.any():
            self.sw.add(seq=seq[m], ts=ts[m], host=host[m], cpu=cpu[m], prev=col("prev_tid", m),
                        state=col("prev_state", m), next=col("next_tid", m), prev_comm=col("prev_comm", m, -1),
                        next_comm=col("next_comm", m, -1))
        m = (cat == C_WAKING) | (cat == C_WAKEUP) | (cat == C_WAKEUP_NEW) | (cat == C_TTWU)
        if m.any():
            self.wk.add(seq=seq[m], ts=ts[m], host=host[m], cpu=cpu[m], cat=cat[m], target=col("tid", m),
                        cur=tid[m])
        m = cat == C_FORK
        if m.any():
            self.fk.add(seq=seq[m], ts=ts[m], host=host[m], parent=col("parent_tid", m), ppid=col("parent_pid", m),
                        child=col("child_tid", m), cpid=col("child_pid", m), comm=col("child_comm", m, -1))
        m = (cat == C_EXIT) | (cat == C_EXEC)
        if m.any():
            self.ex.add(seq=seq[m], ts=ts[m], host=host[m], tid=col("tid", m), cat=cat[m],
                        name=col("filename", m, -1))
        m = cat == C_STATEDUMP
        if m.any():
            self.sd.add(seq=seq[m], host=host[m], tid=col("tid", m), pid=col("pid", m), status=col("status", m),
                        name=col("name", m, -1))
        m = (cat == C_SC_ENTRY) | (cat == C_SC_EXIT)
        if m.any():
            self.sc.add(seq=seq[m], ts=ts[m], host=host[m], tid=tid[m], id=self._scid[chunk.event[m]],
                        exit=(cat[m] == C_SC_EXIT))
        m = (cat >= C_IRQ_IN) & (cat <= C_IPI_OUT) | (cat == C_PKT_IN) | (cat == C_PKT_OUT)
        if m.any():
            c = cat[m]
            ctx = np.zeros(int(m.sum()), np.int64)
            irq = col("irq", m, 0)
            vec = col("vec", m, 0)
            is_irq = (c == C_IRQ_IN) | (c == C_IRQ_OUT)
            is_soft = (c == C_SOFT_IN) | (c == C_SOFT_OUT)
            ctx[is_irq] = CTX_IRQ + np.where(irq[is_irq] == MISSING, 0, irq[is_irq])
            ctx[is_soft] = CTX_SOFTIRQ + np.where(vec[is_soft] == MISSING, 0, vec[is_soft])
            ctx[(c == C_HRT_IN) | (c == C_HRT_OUT)] = CTX_HRTIMER
            ctx[(c == C_IPI_IN) | (c == C_IPI_OUT)] = CTX_IPI
            ctx[(c == C_PKT_IN) | (c == C_PKT_OUT)] = CTX_PACKET
            is_exit = np.isin(c, (C_IRQ_OUT, C_SOFT_OUT, C_HRT_OUT, C_IPI_OUT, C_PKT_OUT))
            self.ic.add(seq=seq[m], ts=ts[m], host=host[m], cpu=cpu[m], ctx=ctx, exit=is_exit)

    def finish(self) -> dict[str, ExecGraph]:
        reader = self.reader
        sw, wk, fk, ex, sd, sc, ic = (p.get() for p in (self.sw, self.wk, self.fk, self.ex, self.sd, self.sc, self.ic))
        graphs = {}
        kernel_hosts = {reader.host_code(t.hostname) for t in reader.traces if t.domain == "kernel"}
        for h in sorted(kernel_hosts):
            if h not in self.first_ts:
                continue

            def sel(d):
                m = d["host"] == h
                return {k: v[m] for k, v in d.items()}

            graphs[reader.hosts[h]] = build_graph(
                reader.hosts[h], self.first_ts[h], self.last_ts[h], sel(sw), sel(wk), sel(fk), sel(ex), sel(sd),
                sel(sc), sel(ic), self.syscall_names, reader.strings,
            )
        return graphs


# -- building -----------------------------------------------------------------------------------


def wake_contexts(wk: dict, ic: dict) -> np.ndarray:
    """Context code of every wake-up row: CTX_NONE (process context) or the innermost interrupt
    context active on its CPU at that moment."""
    n = len(wk["seq"])
    out = np.zeros(n, np.int64)
    if n == 0 or len(ic["seq"]) == 0:
        return out
    for cpu in np.unique(wk["cpu"]).tolist():
        wi = np.flatnonzero(wk["cpu"] == cpu)
        ii = np.flatnonzero(ic["cpu"] == cpu)
        if len(ii) == 0:
            continue
        # merge the CPU's interrupt rows and wake rows in event order
        seqs = np.concatenate([ic["seq"][ii], wk["seq"][wi]])
        is_wake = np.r_[np.zeros(len(ii), bool), np.ones(len(wi), bool)]
        order = np.argsort(seqs, kind="stable")
        is_wake = is_wake[order]
        src = np.concatenate([ii, wi])[order]
        delta = np.zeros(len(order), np.int64)
        ic_rows = src[~is_wake]
        delta[~is_wake] = np.where(ic["exit"][ic_rows], -1, 1)
        s = np.cumsum(delta)
        depth = s - np.minimum(np.minimum.accumulate(s), 0)  # clamped at 0: stray exits ignored
        # for each level L, the positions of entries that left the stack at depth L
        entry_pos = np.flatnonzero((~is_wake) & (delta > 0))
        wake_pos = np.flatnonzero(is_wake)
        wake_depth = depth[wake_pos]
        ctx_here = np.zeros(len(wake_pos), np.int64)
        entry_depth = depth[entry_pos]
        for level in np.unique(wake_depth[wake_depth > 0]).tolist():
            ents = entry_pos[entry_depth == level]
            w_sel = np.flatnonzero(wake_depth == level)
            k = np.searchsorted(ents, wake_pos[w_sel]) - 1
            ok = k >= 0
            ctx_here[w_sel[ok]] = ic["ctx"][src[ents[k[ok]]]]
        out[src[wake_pos]] = ctx_here
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


def build_graph(host, begin, end, sw, wk, fk, ex, sd, sc, ic, syscall_names, strings) -> ExecGraph:
    # wake-up family, chosen once (reference rule)
    cats = wk["cat"]
    if (cats == C_TTWU).any():
        family, keep = "sched_ttwu", cats == C_TTWU
    elif (cats == C_WAKING).any():
        family, keep = "sched_waking", (cats == C_WAKING) | (cats == C_WAKEUP_NEW)
    else:
        family, keep = "sched_wakeup", (cats == C_WAKEUP) | (cats == C_WAKEUP_NEW)
    wk = {k: v[keep] for k, v in wk.items()}
    wctx = wake_contexts(wk, ic)
    nw = len(wk["seq"])

    threads: dict[int, ThreadInfo] = {}

    def info(tid) -> ThreadInfo:
        t = threads.get(tid)
        if t is None:
            t = threads[tid] = ThreadInfo(tid)
        return t

    # thread names and pids (statedump, fork, switch, exec): small loops over thread-level rows
    for tid, pid, name in zip(sd["tid"].tolist(), sd["pid"].tolist(), sd["name"].tolist()):
        t = info(tid)
        t.pid = pid
        if name >= 0:
            t.comm = strings[name]
    for ts, parent, ppid, child, cpid, comm in zip(fk["ts"].tolist(), fk["parent"].tolist(), fk["ppid"].tolist(),
                                                   fk["child"].tolist(), fk["cpid"].tolist(), fk["comm"].tolist()):
        t = info(child)
        t.fork_ts, t.parent, t.pid = ts, parent, cpid
        if comm >= 0:
            t.comm = strings[comm]
        if info(parent).pid < 0:
            info(parent).pid = ppid
    if len(sw["seq"]):
        # last known name per tid from sched_switch (next_comm), vectorised
        tids = np.concatenate([sw["next"], sw["prev"]])
        comms = np.concatenate([sw["next_comm"], sw["prev_comm"]])
        order = np.lexsort((np.concatenate([sw["seq"], sw["seq"]]), tids))
        last = np.r_[tids[order][1:] != tids[order][:-1], True]
        for tid, c in zip(tids[order][last].tolist(), comms[order][last].tolist()):
            if c >= 0 and tid != 0 and not info(tid).comm:
                info(tid).comm = strings[c]
    for ts, tid, cat, name in zip(ex["ts"].tolist(), ex["tid"].tolist(), ex["cat"].tolist(), ex["name"].tolist()):
        t = info(tid)
        if cat == C_EXIT:
            t.exit_ts = ts
        elif name >= 0:
            t.comm = strings[name].rsplit("/", 1)[-1][:15]

    # -- per-thread rows ------------------------------------------------------------------
    # kinds: 0 switch-in (RUN), 1 switch-out (status from prev_state), 2 wake, 3 fork (child),
    # 4 exit, 5 syscall entry, 6 syscall exit
    k_tid, k_seq, k_ts, k_kind, k_arg = [], [], [], [], []

    def add(tid, seq, ts, kind, arg):
        k_tid.append(np.asarray(tid, np.int64))
        k_seq.append(np.asarray(seq, np.int64))
        k_ts.append(np.asarray(ts, np.int64))
        k_kind.append(np.full(len(seq), kind, np.int8))
        k_arg.append(np.asarray(arg, np.int64))

    add(sw["next"], sw["seq"], sw["ts"], 0, np.zeros(len(sw["seq"])))
    blocked = np.where(sw["state"] == MISSING, 1, (sw["state"] & 3) != 0)
    add(sw["prev"], sw["seq"], sw["ts"], 1, blocked.astype(np.int64))
    add(wk["target"], wk["seq"], wk["ts"], 2, np.arange(nw))
    add(fk["child"], fk["seq"], fk["ts"], 3, np.zeros(len(fk["seq"])))
    ex_exit = ex["cat"] == C_EXIT
    add(ex["tid"][ex_exit], ex["seq"][ex_exit], ex["ts"][ex_exit], 4, np.zeros(int(ex_exit.sum())))
    add(sc["tid"], sc["seq"], sc["ts"], 5, sc["id"])
    tid = np.concatenate(k_tid)
    seq = np.concatenate(k_seq)
    ts = np.concatenate(k_ts)
    kind = np.concatenate(k_kind)
    arg = np.concatenate(k_arg)
    # syscall exits are kind 6
    sc_rows = kind == 5
    sc_exit_flag = np.zeros(len(kind), bool)
    sc_exit_flag[np.flatnonzero(sc_rows)] = sc["exit"].astype(bool)
    kind[sc_exit_flag] = 6
    valid = (tid > 0) & (tid != MISSING)
    tid, seq, ts, kind, arg = tid[valid], seq[valid], ts[valid], kind[valid], arg[valid]
    order = np.lexsort((seq, tid))
    tid, seq, ts, kind, arg = tid[order], seq[order], ts[order], kind[order], arg[order]
    n = len(tid)
    new_thread = np.r_[True, tid[1:] != tid[:-1]] if n else np.zeros(0, bool)
    group_start = np.maximum.accumulate(np.where(new_thread, np.arange(n), 0)) if n else np.zeros(0, np.int64)
    g = np.flatnonzero(new_thread)

    idx = np.arange(n)
    # initial status of each thread (before its first row): the statedump's, else inferred from
    # the first row: a switch-out or a syscall means it was running, a wake-up that it was
    # blocked (the reference creates unknown wake-up targets WAIT_BLOCKED), a switch-in that it
    # was waiting for a CPU, a fork that it did not exist yet
    sd_status = {}
    for t_, st in zip(sd["tid"].tolist(), sd["status"].tolist()):
        # LTTng statedump status: 1 WAIT_FORK, 2 WAIT_CPU, 5 WAIT (blocked), 6 RUN
        sd_status[t_] = {1: WAIT_FORK, 2: WAIT_CPU, 5: WAIT_BLOCKED, 6: RUN}.get(st, NOSTATE)
    infer = np.array([WAIT_CPU, RUN, WAIT_BLOCKED, DEAD, RUN, RUN, RUN], np.int8)
    g_first = kind[g]
    init_status = np.array([sd_status.get(int(t), NOSTATE) for t in tid[g].tolist()], np.int8) \
        if n else np.zeros(0, np.int8)
    init_status = np.where(init_status == NOSTATE, infer[g_first], init_status).astype(np.int8)
    gid = np.cumsum(new_thread) - 1 if n else np.zeros(0, np.int64)
    init_row = init_status[gid] if n else init_status

    # status set by each non-wake row; a switch-out after the thread's exit leaves it dead
    setter = (kind <= 1) | (kind == 3) | (kind == 4)
    status_set = np.full(n, -1, np.int8)
    status_set[kind == 0] = RUN
    out_rows = kind == 1
    status_set[out_rows] = np.where(arg[out_rows] == 1, WAIT_BLOCKED, WAIT_CPU)
    status_set[kind == 3] = WAIT_FORK
    status_set[kind == 4] = DEAD
    if n:
        last_exit = np.maximum.accumulate(np.where(kind == 4, idx, -1))
        status_set[out_rows & (last_exit >= group_start)] = DEAD

    def last_in_group(mask):
        if n == 0:
            return np.zeros(0, np.int64)
        last = np.maximum.accumulate(np.where(mask, idx, -1))
        return np.where(last >= group_start, last, -1)

    last_setter = last_in_group(setter)
    status_before_wake = np.where(last_setter >= 0, status_set[np.maximum(last_setter, 0)], init_row)
    # a wake-up is effective if the thread was blocked (or forked) and it is the first since
    is_wake = kind == 2
    effective = np.zeros(n, bool)
    wake_idx = np.flatnonzero(is_wake)
    if len(wake_idx):
        ls = last_setter[wake_idx]
        same_group_prev = np.r_[False, group_start[wake_idx][1:] == group_start[wake_idx][:-1]]
        prev_ls = np.r_[-2, ls[:-1]]
        first_since = ~(same_group_prev & (prev_ls == ls))
        eff = first_since & np.isin(status_before_wake[wake_idx], (WAIT_BLOCKED, WAIT_FORK))
        effective[wake_idx[eff]] = True
    # status after each row: forward fill over setters and effective wakes
    st_val = np.where(effective, WAIT_CPU, status_set).astype(np.int8)
    last_st = last_in_group(setter | effective)
    status_after = np.where(last_st >= 0, st_val[np.maximum(last_st, 0)], init_row).astype(np.int8)
    # syscall after each row: forward fill of entries (id) and exits (-1)
    sc_row = (kind == 5) | (kind == 6)
    sc_val = np.where(kind == 5, arg, -1)
    last_sc = last_in_group(sc_row)
    # before a thread's first syscall row: inside that syscall if the first one is an exit
    first_sc_in_group = _first_in_group(sc_row, group_start, n)
    init_sc = np.where((first_sc_in_group >= 0) & (kind[np.maximum(first_sc_in_group, 0)] == 6),
                       arg[np.maximum(first_sc_in_group, 0)], -1)
    sc_after = np.where(last_sc >= 0, sc_val[np.maximum(last_sc, 0)], init_sc)

    # -- intervals: [ts_i, ts_{i+1}) per row, plus [begin, first row) per thread ----------
    next_ts = np.r_[ts[1:], end] if n else ts
    last_of_group = np.r_[new_thread[1:], True] if n else new_thread
    next_ts = np.where(last_of_group, np.maximum(end, ts), next_ts)
    state = _interval_state(status_after, sc_after)
    # the wake that ends a blocked interval: the next row, if it is an effective wake
    nxt_eff = np.r_[effective[1:], False] if n else effective
    ends_by_wake = (~last_of_group) & nxt_eff
    wake_of = np.full(n, -1, np.int64)
    wake_of[ends_by_wake] = arg[np.flatnonzero(ends_by_wake) + 1]
    # leading interval of each thread
    lead_state = _interval_state(init_status, init_sc[g]) if n else np.zeros(0, np.int8)
    lead_wake = np.where(effective[g], arg[g], -1) if n else g
    lead_start = np.full(len(g), begin, np.int64)
    all_tid = np.concatenate([tid[g], tid]) if n else tid
    all_start = np.concatenate([lead_start, ts]) if n else ts
    all_end = np.concatenate([ts[g], next_ts]) if n else ts
    all_state = np.concatenate([lead_state, state]).astype(np.int8) if n else np.zeros(0, np.int8)
    all_wake = np.concatenate([lead_wake, wake_of]) if n else wake_of
    all_sc = np.concatenate([init_sc[g], sc_after]) if n else sc_after
    all_seq = np.concatenate([np.full(len(g), -1, np.int64), seq]) if n else seq
    order = np.lexsort((all_seq, all_tid))
    all_tid, all_start, all_end = all_tid[order], all_start[order], all_end[order]
    all_state, all_wake, all_sc = all_state[order], all_wake[order], all_sc[order]
    # drop empty intervals, then merge runs with nothing new (same state, syscall and no wake)
    keep = all_end > all_start
    all_tid, all_start, all_end = all_tid[keep], all_start[keep], all_end[keep]
    all_state, all_wake, all_sc = all_state[keep], all_wake[keep], all_sc[keep]
    m = len(all_tid)
    if m:
        same = np.r_[False, (all_tid[1:] == all_tid[:-1]) & (all_state[1:] == all_state[:-1])
                     & (all_sc[1:] == all_sc[:-1]) & (all_state[1:] != BLOCKED) & (all_start[1:] == all_end[:-1])]
        heads = np.flatnonzero(~same)
        tails = np.r_[heads[1:], m] - 1
        all_tid, all_start, all_state = all_tid[heads], all_start[heads], all_state[heads]
        all_sc = all_sc[heads]
        all_end = all_end[tails]
        all_wake = all_wake[tails]
    # blocked intervals: how they end
    iv_block = np.full(len(all_tid), ST_BT, np.int8)
    iv_waker = np.full(len(all_tid), -1, np.int64)
    iv_ctx = np.full(len(all_tid), -1, np.int64)
    b = np.flatnonzero(all_state == BLOCKED)
    if len(b):
        w = all_wake[b]
        has = w >= 0
        ctx = np.where(has, wctx[np.maximum(w, 0)] if nw else 0, -1)
        waker = np.where(has, wk["cur"][np.maximum(w, 0)] if nw else -1, -1)
        iv_ctx[b] = ctx
        st = np.full(len(b), ST_BT, np.int8)
        proc = has & (ctx == CTX_NONE)
        follow = proc & (waker > 0)
        st[follow] = FOLLOW
        st[proc & ~follow] = ST_BI  # woken from the idle task's context: no task to follow
        irq = has & (ctx != CTX_NONE)
        st[irq] = block_state_of_context(ctx[irq])
        futex_id = syscall_names.index("futex") if "futex" in syscall_names else -99
        st[(~has) & (all_sc[b] == futex_id)] = ST_BF
        iv_block[b] = st
        iv_waker[b] = np.where(follow, waker, -1)
    # thread index
    if len(all_tid):
        heads = np.flatnonzero(np.r_[True, all_tid[1:] != all_tid[:-1]])
        tids = all_tid[heads]
        lo = heads
        hi = np.r_[heads[1:], len(all_tid)]
    else:
        tids = lo = hi = np.zeros(0, np.int64)
    for t_ in tids.tolist():
        info(t_)
    # system calls: pairs entry -> exit per thread
    sct, scs, sce, sci = _pair_syscalls(sc, begin, end)
    for t_, a, b_ in _first_last(all_tid, all_start, all_end):
        ti = info(t_)
        ti.first_ts, ti.last_ts = a, b_
    return ExecGraph(
        host=host, begin=begin, end=end, tids=tids, thread_lo=lo, thread_hi=hi,
        iv_start=all_start, iv_end=all_end, iv_state=all_state, iv_block=iv_block, iv_waker=iv_waker,
        iv_ctx=iv_ctx, iv_syscall=all_sc.astype(np.int32), sc_tid=sct, sc_entry=scs, sc_exit=sce, sc_id=sci,
        syscall_names=list(syscall_names), threads=threads, wakeup_family=family,
    )


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


def _pair_syscalls(sc, begin, end):
    """(tid, entry, exit, id) of every system call, sorted by (tid, entry). An exit without
    entry began before the trace (entry = trace begin); an entry without exit lasts to the end."""
    if len(sc["seq"]) == 0:
        e = np.zeros(0, np.int64)
        return e, e, e, e.astype(np.int32)
    tid = sc["tid"].astype(np.int64)
    valid = tid > 0
    tid, ts, ex_, sid, seq = tid[valid], sc["ts"][valid], sc["exit"][valid].astype(bool), sc["id"][valid], sc["seq"][valid]
    order = np.lexsort((seq, tid))
    tid, ts, ex_, sid = tid[order], ts[order], ex_[order], sid[order]
    n = len(tid)
    same_next = np.r_[tid[1:] == tid[:-1], False]
    entry = ~ex_
    paired = entry & same_next & np.r_[ex_[1:], False]
    # entries
    ent_rows = np.flatnonzero(entry)
    exit_ts = np.where(paired[ent_rows], ts[np.minimum(ent_rows + 1, n - 1)], end)
    # exits without a preceding entry of the same thread
    prev_is_entry = np.r_[False, entry[:-1] & (tid[1:] == tid[:-1])]
    orphan_exit = np.flatnonzero(ex_ & ~prev_is_entry)
    out_tid = np.concatenate([tid[ent_rows], tid[orphan_exit]])
    out_entry = np.concatenate([ts[ent_rows], np.full(len(orphan_exit), begin, np.int64)])
    out_exit = np.concatenate([exit_ts, ts[orphan_exit]])
    out_id = np.concatenate([sid[ent_rows], sid[orphan_exit]]).astype(np.int32)
    o = np.lexsort((out_entry, out_tid))
    return out_tid[o], out_entry[o], out_exit[o], out_id[o]


def _first_last(tid, start, end):
    if len(tid) == 0:
        return []
    heads = np.flatnonzero(np.r_[True, tid[1:] != tid[:-1]])
    tails = np.r_[heads[1:], len(tid)] - 1
    # the first interval of a thread may be its "before it existed" lead: skip it
    return zip(tid[heads].tolist(), start[heads].tolist(), end[tails].tolist())

