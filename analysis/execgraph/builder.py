"""Builds the execution graph of every kernel-traced host from a stream of chunks, in vectorised
form, without a per-event Python loop.

The reader delivers the current task of every event; a streaming consumer keeps compact rows of
the events that matter (scheduler, wake-ups, fork/exit, system call entry/exit, interrupt context
entry/exit). Per CPU, the interrupt nesting depth is a clamped cumulative sum of +1/-1 (exits at
depth 0 ignored) and the context of each wake-up is the last entry that left the stack at its
depth (contexts.py); per thread, states are forward-filled over (thread, event order) with the
"effective wake-up" rule (intervals.py).

Departures from the reference, on purpose:

- a second wake-up of a thread that is already runnable is ignored (the reference's quirk
  attributes the interval after the first wake-up to the second waker);
- the interrupt context stack pops on any exit at depth > 0 (the reference pops only when the
  top matches); entries and exits of one CPU come in order, so only a lost event could tell them
  apart, and clamping at 0 keeps a trace that starts inside an interrupt correct;
- tid 0 (the idle task) is one task per CPU and is never a waker to follow;
- a thread's state before its first event is inferred from that event (intervals.py), where the
  reference has no edges: the README says why.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from perftriage.analysis.columns import MISSING
from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.spec import ReadSpec

from .contexts import CTX_NONE, CTX_PACKET, CTX_SOFTIRQ, block_state_of_context, interrupt_rows, wake_contexts
from .events import (C_EXEC, C_EXIT, C_FORK, C_IGNORE, C_IPI_OUT, C_IRQ_IN, C_NET_RECV, C_NET_SEND, C_PKT_IN, C_PKT_OUT,
                     C_SC_ENTRY, C_SC_EXIT, C_STATEDUMP, C_SWITCH, C_TTWU, C_WAKEUP, C_WAKEUP_NEW, C_WAKING,
                     GRAPH_EVENTS, GRAPH_FIELDS, SLEEP_CALLS, SYNC_CALLS, categorize)
from .graph import (Arrivals, BLOCKED, FOLLOW, FOLLOW_NET, FOLLOW_REMOTE, RS, RU, ST_BD, ST_BF, ST_BI, ST_BN, ST_BS,
                    ST_BT, ExecGraph, RemoteLinks, ThreadInfo)
from .intervals import (K_CARRY, K_EXIT, K_FORK, K_IN, K_OUT, K_SC_IN, K_SC_OUT, K_WAKE, NOSTATE, RUN, WAIT_BLOCKED,
                        WAIT_CPU, WAIT_FORK, chunk_intervals, interval_state)
from .tasks import KTHREADD
from .loopback import ChunkRows, HostNet, match_chunk
from .netmatch import Matches, PacketLog, RemoteWakes, match, packet_keys, tcp_segments
from .store import IV_DTYPES, SC_DTYPES, Parts, ThreadOrderedStore, release_freed_memory


class _HostState:
    """What the builder keeps for one host between chunks."""

    def __init__(self, first_ts: int):
        self.first_ts = first_ts
        self.last_ts = first_ts
        self.carry: dict[int, tuple] = {}  # tid -> (ts, seq, status, syscall, exited, syscall known)
        self.open_sc: dict[int, tuple] = {}  # tid -> (entry ts, syscall id)
        # closed intervals, merged chunk by chunk; each thread's last one waits in ``pending``
        # until the next chunk shows whether it continues
        self.iv = ThreadOrderedStore("tid", IV_DTYPES)
        self.pending: dict[str, np.ndarray] | None = None
        # intervals of threads not yet seen entering or leaving a system call: if their first
        # such event is an exit, they were inside that call from the start, and these change
        self.held = Parts(*IV_DTYPES)
        self.sc = ThreadOrderedStore("tid", SC_DTYPES)
        self.sd_status: dict[int, tuple[int, int]] = {}  # tid -> (status, event number) of its statedump
        self.seen: dict[int, int] = {}  # tid -> time of its first event or statedump
        # each CPU's task after its last switch, and per CPU [switches, switches whose previous
        # task is not it: the switches between were lost]
        self.cpu_task: dict[int, int] = {}
        self.switches: dict[int, list[int]] = {}
        self.threads: dict[int, ThreadInfo] = {}

    def info(self, tid: int) -> ThreadInfo:
        t = self.threads.get(tid)
        if t is None:
            t = self.threads[tid] = ThreadInfo(tid)
        return t


def _count_lost_switches(hs: _HostState, cpu: np.ndarray, prev: np.ndarray, nxt: np.ndarray) -> None:
    """Counts, per CPU, the switches whose previous task is not the one the CPU's switch before
    put on it: the switches between them are missing from the trace."""
    ok = (cpu >= 0) & (prev != MISSING) & (nxt != MISSING)
    cpu, prev, nxt = cpu[ok], prev[ok], nxt[ok]
    if not len(cpu):
        return
    order = np.argsort(cpu, kind="stable")
    c, p, n = cpu[order], prev[order], nxt[order]
    first = np.r_[True, c[1:] != c[:-1]]
    before = np.r_[-2, n[:-1]]
    before[first] = [hs.cpu_task.get(int(x), -2) for x in c[first].tolist()]  # -2: not known yet
    lost = (before != -2) & (before != p)
    last = np.r_[first[1:], True]
    for x, t in zip(c[last].tolist(), n[last].tolist()):
        hs.cpu_task[x] = t
    cpus, total = np.unique(c, return_counts=True)
    gaps = np.bincount(np.searchsorted(cpus, c[lost]), minlength=len(cpus))
    for x, k, g in zip(cpus.tolist(), total.tolist(), gaps.tolist()):
        counts = hs.switches.setdefault(x, [0, 0])
        counts[0] += k
        counts[1] += g


def _unique_pairs(a: np.ndarray, b: np.ndarray) -> list[tuple[int, int]]:
    """The distinct (a, b) pairs of two non-negative columns, by a then b. One integer key
    where both fit (a sort of 16-byte records was a tenth of the graph's building)."""
    if len(a) and int(a.max()) < 1 << 31 and int(b.max()) < 1 << 32:
        key = np.unique((a.astype(np.int64) << 32) | b.astype(np.int64))
        return list(zip((key >> 32).tolist(), (key & 0xFFFFFFFF).tolist()))
    return list(zip(*np.unique(np.stack([a, b]), axis=1).tolist()))


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
        self.wake = Parts("ctx", "cur")
        self.links: dict[int, tuple[int, int]] = {}  # wake-up number -> (sender tid, send time); few
        # packets on one host: the latest send of each skb address, the latest receive per CPU (per host)
        self.net: dict[int, HostNet] = {}
        # packets with headers, for packets between traced hosts (matched at the end)
        self.packets = PacketLog()
        self.matches = None
        self.stacks: dict[tuple[int, int], list[int]] = {}  # (host, CPU) -> interrupt contexts
        self.wake_cats: set[int] = set()
        # packets received by a running task: (host, receiver, time, sender's host, sender, send
        # time), the sender filled in at the end for a packet from another host; few
        self.arrivals: list[tuple[int, int, int, int, int, int]] = []

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
        for tid, pid, status, name, sq, t_, kind, ppid in zip(
                col("tid", m).tolist(), col("pid", m).tolist(), col("status", m).tolist(), col("name", m, -1).tolist(),
                seq[m].tolist(), ts[m].tolist(), col("type", m).tolist(), col("ppid", m).tolist()):
            hs.seen.setdefault(tid, t_)
            t = hs.info(tid)
            t.pid = pid
            if kind != MISSING:
                t.kernel = kind == 1 or ppid == KTHREADD
            if name >= 0:
                t.comm = strings[name]
            if tid not in hs.sd_status:
                hs.sd_status[tid] = ({1: WAIT_FORK, 2: WAIT_CPU, 5: WAIT_BLOCKED, 6: RUN}.get(status, NOSTATE), sq)
        m_fork = cat == C_FORK
        for t_, parent, ppid, child, cpid, comm in zip(ts[m_fork].tolist(), col("parent_tid", m_fork).tolist(),
                                                       col("parent_pid", m_fork).tolist(), col("child_tid", m_fork).tolist(),
                                                       col("child_pid", m_fork).tolist(), col("child_comm", m_fork, -1).tolist()):
            t = hs.info(child)
            t.fork_ts, t.parent = t_, parent
            if cpid != MISSING:  # perf's fork gives threads, not their process (the events' own pid do)
                t.pid = cpid
            t.kernel = ppid == KTHREADD or parent == KTHREADD or bool(hs.info(parent).kernel)
            if comm >= 0:
                t.comm = strings[comm]
            if hs.info(parent).pid < 0 and ppid != MISSING:
                hs.info(parent).pid = ppid
        # kernel events that carry their process (perf's) say each thread's (a user-space event's
        # vpid may be a container's)
        own = np.flatnonzero((cat != C_IGNORE) & (cur > 0) & (chunk.pid > 0))
        if len(own):
            t_own, p_own = cur[own], chunk.pid[own]
            runs = np.r_[True, (t_own[1:] != t_own[:-1]) | (p_own[1:] != p_own[:-1])]  # a thread runs many events
            for tid, pid in _unique_pairs(t_own[runs], p_own[runs]):
                hs.info(tid).pid = pid
        m_exit = cat == C_EXIT
        for t_, tid in zip(ts[m_exit].tolist(), col("tid", m_exit).tolist()):
            hs.info(tid).exit_ts = t_
        m = cat == C_EXEC
        exec_row: dict[int, int] = {}
        for row, tid, name in zip(np.flatnonzero(m).tolist(), col("tid", m).tolist(), col("filename", m, -1).tolist()):
            if name >= 0:
                hs.info(tid).comm = strings[name].rsplit("/", 1)[-1][:15]
                exec_row[tid] = row
        m_sw = cat == C_SWITCH
        if m_sw.any():
            _count_lost_switches(hs, cpu[m_sw], col("prev_tid", m_sw), col("next_tid", m_sw))
            # a thread's name is the last one the scheduler showed (a pool's threads are named after
            # their fork: pthread_setname_np leaves no event of its own), or its exec's if later
            rows = np.flatnonzero(m_sw)
            tids = np.concatenate([col("next_tid", m_sw), col("prev_tid", m_sw)])
            names = np.concatenate([col("next_comm", m_sw, -1), col("prev_comm", m_sw, -1)])
            rows = np.concatenate([rows, rows])
            named = (names >= 0) & (tids > 0)
            tids, names, rows = tids[named], names[named], rows[named]
            order = np.lexsort((rows, tids))[::-1]  # by thread, the last row first
            uniq, first = np.unique(tids[order], return_index=True)
            for tid, c, row in zip(uniq.tolist(), names[order][first].tolist(), rows[order][first].tolist()):
                if row > exec_row.get(tid, -1):
                    hs.info(tid).comm = strings[c]
        # wake-ups: numbered globally; the interrupt context each ran in is resolved now, with
        # each CPU's interrupt stack carried from chunk to chunk
        m_wk = (cat == C_WAKING) | (cat == C_WAKEUP) | (cat == C_WAKEUP_NEW) | (cat == C_TTWU)
        nwk = int(m_wk.sum())
        wake_ids = self._nwake + np.arange(nwk, dtype=np.int64)
        self._nwake += nwk
        m_ic = ((cat >= C_IRQ_IN) & (cat <= C_IPI_OUT)) | (cat == C_PKT_IN) | (cat == C_PKT_OUT)
        m_send, m_recv = cat == C_NET_SEND, cat == C_NET_RECV
        wctx = sctx = rctx = np.zeros(0, np.int32)
        if nwk or m_ic.any() or m_send.any() or m_recv.any():
            # the context of wake-ups and of packet sends and receives (a packet sent from an
            # interrupt, an ACK say, is no work of the task it interrupted; one received in process
            # context is the running task's)
            m_ctx = m_wk | m_send | m_recv
            ctx, is_exit = interrupt_rows(cat[m_ic], col("irq", m_ic, 0), col("vec", m_ic, 0))
            both = wake_contexts(self.stacks, h, seq[m_ctx], cpu[m_ctx], seq[m_ic], cpu[m_ic], ctx, is_exit)
            wctx, sctx, rctx = both[m_wk[m_ctx]], both[m_send[m_ctx]], both[m_recv[m_ctx]]
        if nwk or m_send.any() or m_recv.any():
            self._packet_links(h, chunk, m_wk, m_send, m_recv, wctx, wake_ids, sctx, rctx)
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

    def _packet_links(self, h: int, chunk, m_wk, m_send, m_recv, wctx, wake_ids, sctx, rctx) -> None:
        """The wake-ups of the chunk that deliver a packet another task of this host sent
        (loopback: the same skb address is queued by the sender and received by the softirq that
        wakes the reader) go to ``self.links``: wake-up number -> (sender, send time). Packets
        with an IP header are logged for matching between hosts at the end, and a wake-up that
        delivers one that is not loopback is noted with its receive: the rules are loopback.py's,
        applied to the whole chunk at once (a plain loop over the packet rows was a quarter of
        the graph's building on a busy web server). The loopback table forgets sends older than
        NET_FLIGHT_NS at the end of the chunk; the packet log keeps a few
        integers per packet with a header (~70 bytes) until the end, as the graph keeps its rows.

        A packet received in process context (no interrupt on its CPU) is the running task's: an
        arrival, linked to its sender like a wake-up (loopback now, another host's at the end),
        which the critical path follows where the receiver's history runs out."""
        wk = np.flatnonzero(m_wk)
        net_wake = np.isin(wctx, self.NET_CONTEXTS)
        wk = wk[net_wake]  # the wake-ups in a network context
        send_rows, recv_rows = np.flatnonzero(m_send), np.flatnonzero(m_recv)
        if not (len(send_rows) or len(recv_rows) or len(wk)):
            return
        ts, cpu, cur = chunk.ts, chunk.cpu, chunk.tid
        # the sender of a packet: the task running, when the send is in process context
        t = cur[send_rows]
        sender = np.where((t == MISSING) | (sctx != CTX_NONE), -1, t).astype(np.int64)
        if len(send_rows):
            self.packets.add_sends(packet_keys(chunk.fields, send_rows), ts[send_rows], h, sender,
                                   tcp_segments(chunk.fields, send_rows))
        t = cur[recv_rows]  # the receiver: the running task, for a receive in process context
        receiver = np.where((t == MISSING) | (rctx != CTX_NONE), -1, t).astype(np.int64)
        recv_no = (self.packets.add_receives(packet_keys(chunk.fields, recv_rows), ts[recv_rows], h,
                                             tcp_segments(chunk.fields, recv_rows))
                   if len(recv_rows) else np.zeros(0, np.int64))
        skb_all = chunk.fields.get("skbaddr")
        skb = (lambda r: skb_all[r]) if skb_all is not None else (lambda r: np.full(len(r), MISSING, np.int64))
        got = match_chunk(self.net.setdefault(h, HostNet()), ChunkRows(
            send_pos=send_rows, send_skb=skb(send_rows), send_ts=ts[send_rows], send_tid=sender,
            recv_pos=recv_rows, recv_cpu=cpu[recv_rows].astype(np.int64), recv_ts=ts[recv_rows],
            recv_skb=skb(recv_rows), recv_no=recv_no, recv_tid=receiver,
            wake_pos=wk, wake_cpu=cpu[wk].astype(np.int64), wake_ts=ts[wk], wake_id=wake_ids[net_wake]),
            has_skb=skb_all is not None, delay_ns=self.NET_DELAY_NS, flight_ns=self.NET_FLIGHT_NS,
            horizon=int(ts[-1]) - self.NET_FLIGHT_NS)
        self.links.update(zip(got.link_wake.tolist(), zip(got.link_tid.tolist(), got.link_ts.tolist())))
        remote = got.arr_recv_no >= 0
        self.packets.add_wakes(got.remote_wake, got.remote_recv_no)
        self.packets.add_arrivals(len(self.arrivals) + np.flatnonzero(remote), got.arr_recv_no[remote])
        self.arrivals.extend(zip(itertools.repeat(h), got.arr_tid.tolist(), got.arr_ts.tolist(),
                                 np.where(remote, -1, h).tolist(), got.arr_sender.tolist(), got.arr_send_ts.tolist()))

    def _advance(self, hs: _HostState, parts) -> None:
        tid = np.concatenate([np.asarray(p[0], np.int64) for p in parts])
        seq = np.concatenate([p[1] for p in parts])
        ts = np.concatenate([p[2] for p in parts])
        kind = np.concatenate([np.full(len(p[1]), p[3], np.int8) if np.isscalar(p[3]) else p[3] for p in parts])
        arg = np.concatenate([p[4] for p in parts])
        ok = (tid > 0) & (tid != MISSING)
        if not ok.any():  # no thread's row (all the idle task's, or tids a damaged trace lost): nothing to add
            return
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
        heads = np.flatnonzero(np.r_[True, tid[1:] != tid[:-1]]) if len(tid) else np.zeros(0, np.int64)
        for t, a in zip(tid[heads].tolist(), ts[heads].tolist()):  # a thread's first event (carried: seen before)
            hs.seen.setdefault(t, a)
        out, carry, revealed = chunk_intervals(tid, seq, ts, kind, arg, c_status, c_sc, c_exit, c_known,
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

    def gathered(self) -> "Gathered":
        """What the chunks left, handed over (the builder keeps nothing): per host its state,
        the wake-ups, the packets to match between hosts."""
        reader = self.reader
        wake = self.wake.get()
        g = Gathered(host_names=list(reader.hosts),
                     kernel_hosts={reader.host_code(t.hostname) for t in reader.traces if t.domain == "kernel"},
                     hosts=self.hosts, wake_ctx=wake["ctx"], wake_cur=wake["cur"], wake_cats=set(self.wake_cats),
                     links=self.links, packets=self.packets, arrivals=self.arrivals,
                     syscall_names=list(self.syscall_names))
        self.hosts, self.links, self.packets, self.arrivals = {}, {}, PacketLog(), []
        self.wake = Parts("ctx", "cur")
        return g

    def finish(self) -> dict[str, ExecGraph]:
        graphs, self.matches = finish_graphs([self.gathered()])
        return graphs


@dataclass
class Gathered:
    """A builder's state at the end of its chunks, before the packets are matched between hosts
    and the graphs are made. Host codes are the reader's (``host_names``); wake-ups and arrivals
    are numbered within it. A distributed read (analysis/distributed.py) makes one per host on a
    worker and matches packets of all of them on the client; a local read makes one."""

    host_names: list[str]
    kernel_hosts: set[int]
    hosts: dict[int, _HostState]
    wake_ctx: np.ndarray
    wake_cur: np.ndarray
    wake_cats: set[int]
    links: dict[int, tuple[int, int]]
    packets: PacketLog
    arrivals: list[tuple[int, int, int, int, int, int]]
    syscall_names: list[str]

    def packet_part(self) -> "PacketPart":
        return PacketPart(self.host_names, self.packets, len(self.wake_ctx), len(self.arrivals), set(self.wake_cats))


@dataclass
class PacketPart:
    """What matching packets across parts needs of a part (small: it travels to the client)."""

    host_names: list[str]
    packets: PacketLog
    n_wakes: int
    n_arrivals: int
    wake_cats: set[int]


@dataclass
class Matched:
    """What matching packets across every part told one part: its wake-ups and arrivals caused
    by another host's packet (numbered as in the part; hosts as codes into ``hosts``), the clock
    fits, and the wake-up event family of the whole trace set."""

    hosts: list[str]  # every host of every part, sorted: the codes of ``remote``, ``arrivals``, ``fits``
    fits: dict
    remote: RemoteWakes
    arrivals: RemoteWakes
    family: str


def match_parts(parts: list[PacketPart]) -> tuple[Matches, list[Matched]]:
    """Packets of every part matched together (hosts coded by sorted name, so that the result
    does not depend on how the hosts were split), then cut back per part."""
    hosts = sorted({n for p in parts for n in p.host_names})
    code = {n: i for i, n in enumerate(hosts)}
    log = PacketLog()
    wake_off, arr_off, recv_off = [], [], 0
    nw = na = 0
    for p in parts:
        remap = np.array([code[n] for n in p.host_names] or [0], np.int16)
        s, r = p.packets.sends(), p.packets.receives()
        for k in log._send:
            log._send[k].append(remap[s[k]] if k == "host" else s[k])
        for k in log._recv:
            log._recv[k].append(remap[r[k]] if k == "host" else r[k])
        w, wr = p.packets.wakes()
        log.add_wakes(w + nw, wr + recv_off)
        a, ar = p.packets.arrivals()
        log.add_arrivals(a + na, ar + recv_off)
        wake_off.append(nw)
        arr_off.append(na)
        nw += p.n_wakes
        na += p.n_arrivals
        recv_off += p.packets.n_recv
    log.n_recv = recv_off
    matches = match(log)
    cats = set().union(*(p.wake_cats for p in parts)) if parts else set()
    family = "sched_ttwu" if C_TTWU in cats else "sched_waking" if C_WAKING in cats else "sched_wakeup"
    arrivals = matches.arrivals if matches.arrivals is not None else RemoteWakes.none()
    out = []
    for p, wo, ao in zip(parts, wake_off, arr_off):
        out.append(Matched(hosts, matches.fits, _cut(matches.remote, wo, wo + p.n_wakes),
                           _cut(arrivals, ao, ao + p.n_arrivals), family))
    return matches, out


def _cut(found: RemoteWakes, lo: int, hi: int) -> RemoteWakes:
    """The rows numbered lo..hi-1 (sorted by number), renumbered from 0."""
    a, b = np.searchsorted(found.wake, [lo, hi])
    return RemoteWakes(found.wake[a:b] - lo, found.host[a:b], found.tid[a:b], found.t[a:b])


def finish_graphs(parts: list[Gathered]) -> tuple[dict[str, ExecGraph], Matches]:
    """Packets matched across the parts, then each part's graphs; hosts in the order their first
    events came (then by name)."""
    matches, matched = match_parts([p.packet_part() for p in parts])
    graphs = {}
    for p, m in zip(parts, matched):
        graphs.update(finish_part(p, m))
        release_freed_memory()
    return in_time_order(graphs), matches


def in_time_order(graphs: dict[str, ExecGraph]) -> dict[str, ExecGraph]:
    """The graphs by their hosts' first event, then by name: the same order however the hosts
    were read (together, or apart on a cluster)."""
    return {n: graphs[n] for n in sorted(graphs, key=lambda n: (graphs[n].begin, n))}


def finish_part(part: Gathered, matched: Matched) -> dict[str, ExecGraph]:
    """The graphs of one part's kernel-traced hosts (its state is used up)."""
    code = {n: i for i, n in enumerate(matched.hosts)}
    graphs = {}
    arrivals = _arrivals_by_host(part, matched)
    for h, hs in list(part.hosts.items()):
        if h not in part.kernel_hosts:
            continue
        name = part.host_names[h]
        g = graphs[name] = _finish_host(part, name, hs, matched.family, matched)
        g.clocks = {matched.hosts[b]: fit for (a, b), fit in matched.fits.items() if a == code[name]}
        if name in arrivals:
            g.arrivals = arrivals[name]
    part.hosts = {}
    return graphs


def _arrivals_by_host(part: Gathered, matched: Matched) -> dict[str, Arrivals]:
    """The packets running tasks received, with their senders (another host's from the
    matching), per receiving host; those whose sender is not known are dropped. Sender hosts
    are coded as in ``matched.hosts``."""
    rows = list(part.arrivals)
    found = matched.arrivals
    remap = [matched.hosts.index(n) for n in part.host_names]
    for i, row in enumerate(rows):
        if row[3] >= 0:  # a sender on the same host (loopback): the part's code
            rows[i] = (*row[:3], remap[row[3]], *row[4:])
    for i, hh, tid, t in zip(found.wake.tolist(), found.host.tolist(), found.tid.tolist(), found.t.tolist()):
        rows[i] = (*rows[i][:3], hh, tid, t)
    part.arrivals = []
    out = {}
    a = np.array([r for r in rows if r[4] > 0], np.int64).reshape(-1, 6)
    for h in np.unique(a[:, 0]).tolist():
        m = a[a[:, 0] == h]
        m = m[np.lexsort((m[:, 2], m[:, 1]))]
        out[part.host_names[h]] = Arrivals(m[:, 1], m[:, 2], m[:, 3].astype(np.int16), m[:, 4].astype(np.int32),
                                           m[:, 5], list(matched.hosts))
    return out


def _finish_host(part: Gathered, name: str, hs: _HostState, family: str, matched: Matched) -> ExecGraph:
    # the reading's freed chunks (in the decoding thread's heap arena too) back to the system
    # before the graph's columns are made: else they stay resident under the build's peak
    release_freed_memory()
    wctx, wake_cur = part.wake_ctx, part.wake_cur
    end = hs.last_ts
    # close what is still open at the end of the trace
    if hs.carry:
        ct = np.array(list(hs.carry), np.int64)
        cv = np.array(list(hs.carry.values()), np.int64)
        _emit_intervals(hs, dict(tid=ct.astype(np.int32), start=cv[:, 0], end=np.maximum(cv[:, 0], end),
                                 state=interval_state(cv[:, 2].astype(np.int8), cv[:, 3]),
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
    start, stop, state, wake, sc = (cols[k] for k in ("start", "end", "state", "wake", "sc"))
    del cols  # and the per-interval tid with it (27 MiB at 50,000 requests): the rows lo:hi say it
    m = len(start)
    futex_id = part.syscall_names.index("futex") if "futex" in part.syscall_names else -99
    sleep_ids = [i for i, n in enumerate(part.syscall_names) if n in SLEEP_CALLS]
    sync_ids = [i for i, n in enumerate(part.syscall_names) if n in SYNC_CALLS]
    iv_block, iv_waker = _blocked_ends(state, wake, sc, wctx, wake_cur, futex_id, sleep_ids, sync_ids)
    net_links = _network_links(tids, hi, state, iv_block, iv_waker, wake, part.links)
    remote_links = _remote_waits(state, iv_block, iv_waker, wake, matched.remote, matched.hosts)
    del wake
    release_freed_memory()
    for t_, a, z in zip(tids.tolist(), start[lo].tolist() if m else [], stop[hi - 1].tolist() if m else []):
        ti = hs.info(t_)
        ti.first_ts, ti.last_ts = a, z
        ti.seen_ts = hs.seen.get(t_, a)
    sc_parts, _, _, _ = hs.sc.finish()
    if len(sc_parts["tid"]) > 1 and not _sorted_pairs(sc_parts["tid"], sc_parts["entry"]):
        o = np.lexsort((sc_parts["entry"], sc_parts["tid"]))  # lost events can break the order
        sc_parts = {k: v[o] for k, v in sc_parts.items()}
    return ExecGraph(
        host=name, begin=hs.first_ts, end=end,
        tids=tids, thread_lo=lo, thread_hi=hi, iv_start=start, iv_end=stop, iv_state=state,
        iv_block=iv_block, iv_waker=iv_waker, iv_syscall=sc,
        sc_tid=sc_parts["tid"], sc_entry=sc_parts["entry"], sc_exit=sc_parts["exit"], sc_id=sc_parts["id"],
        syscall_names=list(part.syscall_names), threads=hs.threads, wakeup_family=family, net_links=net_links,
        switches={c: (n, lost) for c, (n, lost) in sorted(hs.switches.items())},
        remote_links=remote_links,
    )


def _blocked_ends(state, wake, sc, wctx, wake_cur, futex_id, sleep_ids=(), sync_ids=(), block: int = 1 << 20):
    """How each blocked interval ends: (path state when not followed, or FOLLOW; the waker's tid
    to follow, -1 otherwise). The wake-up's context decides the state and is not kept (no
    analysis read it: 27 MiB at 50,000 requests); without a wake-up, the system call it blocked
    in, where that says (a futex: BF, a sleep: BS, a sync: BD). Done a block of intervals at a time so that
    the temporaries stay small beside the graph."""
    n = len(state)
    iv_block = np.full(n, ST_BT, np.int8)
    iv_waker = np.full(n, -1, np.int32)
    for lo in range(0, n, block):
        b = lo + np.flatnonzero(state[lo:lo + block] == BLOCKED)
        if len(b) == 0:
            continue
        w = wake[b]
        has = w >= 0
        wi = np.maximum(w, 0)
        ctx = np.where(has, wctx[wi] if len(wctx) else 0, -1)
        waker = np.where(has, wake_cur[wi] if len(wctx) else -1, -1)
        st = np.full(len(b), ST_BT, np.int8)
        proc = has & (ctx == CTX_NONE)
        follow = proc & (waker > 0)
        st[follow] = FOLLOW
        st[proc & ~follow] = ST_BI  # woken from the idle task's context: no task to follow
        irq = has & (ctx != CTX_NONE)
        st[irq] = block_state_of_context(ctx[irq])
        st[(~has) & (sc[b] == futex_id)] = ST_BF
        if len(sleep_ids):
            st[(~has) & np.isin(sc[b], sleep_ids)] = ST_BS
        if len(sync_ids):
            st[(~has) & np.isin(sc[b], sync_ids)] = ST_BD
        iv_block[b] = st
        iv_waker[b] = np.where(follow, waker, -1)
    return iv_block, iv_waker


def _network_links(tids, hi, state, iv_block, iv_waker, wake, links) -> dict[int, int]:
    """Blocked intervals ended by a packet that a task of the host sent (loopback: few): they
    become FOLLOW_NET, their waker the sender; returns interval -> the send's time. Thread ``i``
    owns the intervals before ``hi[i]`` and from ``hi[i - 1]``."""
    out: dict[int, int] = {}
    if not links:
        return out
    linked = np.fromiter(links, np.int64, len(links))
    cand = np.flatnonzero((state == BLOCKED) & (iv_block == ST_BN) & np.isin(wake, linked))
    owner = tids[np.searchsorted(hi, cand, "right")] if len(cand) else cand
    for k, tid in zip(cand.tolist(), owner.tolist()):
        snd, t = links[int(wake[k])]
        if snd > 0 and snd != tid:
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
