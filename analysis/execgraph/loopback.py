"""Packets between tasks of one host, matched chunk by chunk without a loop over rows.

On one host a packet is queued by its sender (``net_dev_queue``, keyed by its skb address) and
received by a softirq on some CPU (``netif_receive_skb``), which then wakes the reader. The
rules, applied to each row in trace order with what the rows before it left:

- a **send** in process context records (skb address -> send time, sender);
- a **receive** records (its CPU -> receive time, skb address, receive number); received by a
  running task, it is an *arrival*: from the latest send of its skb address when that send is
  at most ``flight_ns`` older and by another task (loopback), otherwise, when the packet has a
  header (a receive number), one to match with another host's sends at the end;
- a **wake-up in a network context** within ``delay_ns`` of the latest receive on its CPU is
  that packet's: linked to the latest send (so far) of the receive's skb address when that send
  is at most ``flight_ns`` older than the receive, otherwise, when the receive has a number,
  left to match with another host's sends.

Each "latest before" is one sorted search over (key, position) for the whole chunk; what the
chunk leaves (the latest send of each address, the latest receive of each CPU) is carried to
the next as small arrays (:class:`HostNet`). Sends older than the flight time cannot match
anything later and are forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_I64 = np.int64


def _empty() -> np.ndarray:
    return np.zeros(0, _I64)


@dataclass
class HostNet:
    """What one host's packets so far leave for the next chunk (one row per key)."""

    send_skb: np.ndarray = field(default_factory=_empty)  # latest send of each skb address
    send_ts: np.ndarray = field(default_factory=_empty)
    send_tid: np.ndarray = field(default_factory=_empty)
    recv_cpu: np.ndarray = field(default_factory=_empty)  # latest receive of each CPU
    recv_ts: np.ndarray = field(default_factory=_empty)
    recv_skb: np.ndarray = field(default_factory=_empty)
    recv_no: np.ndarray = field(default_factory=_empty)


@dataclass
class ChunkRows:
    """One host's packet rows of a chunk, each kind in trace order; ``pos`` orders all kinds
    together (distinct across kinds)."""

    send_pos: np.ndarray
    send_skb: np.ndarray
    send_ts: np.ndarray
    send_tid: np.ndarray  # -1: sent from an interrupt or by no known task (recorded by nobody)
    recv_pos: np.ndarray
    recv_cpu: np.ndarray
    recv_ts: np.ndarray
    recv_skb: np.ndarray
    recv_no: np.ndarray  # -1: no header to match with another host
    recv_tid: np.ndarray  # the running task that received it (-1: received in an interrupt)
    wake_pos: np.ndarray
    wake_cpu: np.ndarray
    wake_ts: np.ndarray
    wake_id: np.ndarray


@dataclass
class ChunkLinks:
    link_wake: np.ndarray  # wake-ups that deliver a loopback packet: wake-up number,
    link_tid: np.ndarray  # its sender,
    link_ts: np.ndarray  # and its send time
    arr_tid: np.ndarray  # arrivals (receives by a running task), in trace order: the receiver,
    arr_ts: np.ndarray  # the receive time,
    arr_sender: np.ndarray  # the loopback sender (-1: from another host, to match at the end),
    arr_send_ts: np.ndarray  # its send time (-1 likewise)
    arr_recv_no: np.ndarray  # the receive number of those to match at the end (-1: loopback)
    remote_wake: np.ndarray  # wake-ups by a packet to match at the end,
    remote_recv_no: np.ndarray  # and its receive number


def latest_before(e_key: np.ndarray, e_pos: np.ndarray, q_key: np.ndarray, q_pos: np.ndarray) -> np.ndarray:
    """For each query (key, position): the index of the entry with that key at the greatest
    position below the query's, -1 if none. Entry positions are distinct within a key and
    differ from the queries'; carried entries sit at position -1."""
    if len(e_key) == 0 or len(q_key) == 0:
        return np.full(len(q_key), -1, _I64)
    _, inv = np.unique(np.concatenate([e_key, q_key]), return_inverse=True)
    inv = inv.astype(_I64, copy=False)
    ek, qk = inv[:len(e_key)], inv[len(e_key):]
    span = int(max(e_pos.max(), q_pos.max())) + 2
    ecode = ek * span + (e_pos + 1)
    order = np.argsort(ecode, kind="stable")
    i = np.searchsorted(ecode[order], qk * span + (q_pos + 1), side="left") - 1
    ok = i >= 0
    ok[ok] = ek[order[i[ok]]] == qk[ok]
    return np.where(ok, order[np.maximum(i, 0)], -1)


def _last_per_key(key: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Indices of the entry at the greatest position of each key."""
    order = np.lexsort((pos, key))
    k = key[order]
    last = np.r_[k[1:] != k[:-1], True] if len(k) else np.zeros(0, bool)
    return order[last]


def match_chunk(state: HostNet, rows: ChunkRows, has_skb: bool, delay_ns: int, flight_ns: int,
                horizon: int) -> ChunkLinks:
    """Apply the module's rules to one chunk of one host; ``state`` is updated in place with
    what the chunk leaves (sends older than ``horizon`` dropped)."""
    # the sends a later row may find: the carried ones (position -1), then this chunk's in process context
    keep = rows.send_tid > 0 if has_skb else np.zeros(len(rows.send_pos), bool)
    s_skb = np.concatenate([state.send_skb, rows.send_skb[keep]])
    s_pos = np.concatenate([np.full(len(state.send_skb), -1, _I64), rows.send_pos[keep]])
    s_ts = np.concatenate([state.send_ts, rows.send_ts[keep]])
    s_tid = np.concatenate([state.send_tid, rows.send_tid[keep]])
    r_cpu = np.concatenate([state.recv_cpu, rows.recv_cpu])
    r_pos = np.concatenate([np.full(len(state.recv_cpu), -1, _I64), rows.recv_pos])
    r_ts = np.concatenate([state.recv_ts, rows.recv_ts])
    r_skb = np.concatenate([state.recv_skb, rows.recv_skb])
    r_no = np.concatenate([state.recv_no, rows.recv_no])

    sends = has_skb and len(s_skb) > 0  # without skb addresses no packet is found again

    # arrivals: receives by a running task
    a = np.flatnonzero(rows.recv_tid > 0)
    a_ts, a_tid, a_no = rows.recv_ts[a], rows.recv_tid[a], rows.recv_no[a]
    local = np.zeros(len(a), bool)
    sender = send_ts = np.full(len(a), -1, _I64)
    if sends and len(a):
        s = latest_before(s_skb, s_pos, rows.recv_skb[a], rows.recv_pos[a])
        si = np.maximum(s, 0)
        age = a_ts - s_ts[si]
        local = (s >= 0) & (age >= 0) & (age <= flight_ns) & (s_tid[si] != a_tid)
        sender, send_ts = np.where(local, s_tid[si], -1), np.where(local, s_ts[si], -1)
    kept = local | (a_no >= 0)

    # wake-ups in network contexts: the latest receive on their CPU, then that packet's latest send
    g = latest_before(r_cpu, r_pos, rows.wake_cpu, rows.wake_pos)
    w = np.flatnonzero(g >= 0)
    w = w[rows.wake_ts[w] - r_ts[g[w]] <= delay_ns]
    gw = g[w]
    linked = np.zeros(len(w), bool)
    si = np.zeros(len(w), _I64)
    if sends and len(w):
        s = latest_before(s_skb, s_pos, r_skb[gw], rows.wake_pos[w])
        si = np.maximum(s, 0)
        flight = r_ts[gw] - s_ts[si]
        linked = (s >= 0) & (flight >= 0) & (flight <= flight_ns)
    remote = ~linked & (r_no[gw] >= 0)
    si = si[linked]
    out = ChunkLinks(
        link_wake=rows.wake_id[w[linked]], link_tid=s_tid[si] if sends else _empty(),
        link_ts=s_ts[si] if sends else _empty(),
        arr_tid=a_tid[kept], arr_ts=a_ts[kept], arr_sender=sender[kept], arr_send_ts=send_ts[kept],
        arr_recv_no=np.where(local, -1, a_no)[kept],
        remote_wake=rows.wake_id[w[remote]], remote_recv_no=r_no[gw][remote],
    )

    # what the chunk leaves
    last = _last_per_key(s_skb, s_pos)
    last = last[s_ts[last] >= horizon] if len(last) > 64 else last
    state.send_skb, state.send_ts, state.send_tid = s_skb[last], s_ts[last], s_tid[last]
    last = _last_per_key(r_cpu, r_pos)
    state.recv_cpu, state.recv_ts, state.recv_skb, state.recv_no = r_cpu[last], r_ts[last], r_skb[last], r_no[last]
    return out
