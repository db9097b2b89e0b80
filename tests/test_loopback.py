"""The chunk-at-once matching of one host's packets (execgraph/loopback.py) against the rules
applied row by row, as the module's docstring states them, over random chunks in sequence
(state carried from one to the next, skb addresses and CPUs reused, ages around the limits)."""

from __future__ import annotations

import numpy as np
import pytest

from perftriage.analysis.execgraph.loopback import ChunkRows, HostNet, latest_before, match_chunk

DELAY, FLIGHT = 1_000, 10_000


def _row_by_row(state: dict, rows: ChunkRows, has_skb: bool):
    """The rules, one row at a time, with dicts: state = {"send": {skb: (ts, tid)}, "recv": {cpu: (ts, skb, no)}}."""
    items = ([(int(p), 0, i) for i, p in enumerate(rows.send_pos)] + [(int(p), 1, i) for i, p in enumerate(rows.recv_pos)]
             + [(int(p), 2, i) for i, p in enumerate(rows.wake_pos)])
    links, arrivals, remote = {}, [], []
    for _, kind, i in sorted(items):
        if kind == 0:
            if has_skb and rows.send_tid[i] > 0:
                state["send"][int(rows.send_skb[i])] = (int(rows.send_ts[i]), int(rows.send_tid[i]))
        elif kind == 1:
            ts, skb, no, tid = int(rows.recv_ts[i]), int(rows.recv_skb[i]), int(rows.recv_no[i]), int(rows.recv_tid[i])
            state["recv"][int(rows.recv_cpu[i])] = (ts, skb, no)
            if tid > 0:
                sent = state["send"].get(skb) if has_skb else None
                if sent is not None and 0 <= ts - sent[0] <= FLIGHT and sent[1] != tid:
                    arrivals.append((tid, ts, sent[1], sent[0], -1))
                elif no >= 0:
                    arrivals.append((tid, ts, -1, -1, no))
        else:
            got = state["recv"].get(int(rows.wake_cpu[i]))
            if got is None or int(rows.wake_ts[i]) - got[0] > DELAY:
                continue
            sent = state["send"].get(got[1]) if has_skb else None
            if sent is not None and 0 <= got[0] - sent[0] <= FLIGHT:
                links[int(rows.wake_id[i])] = (sent[1], sent[0])
            elif got[2] >= 0:
                remote.append((int(rows.wake_id[i]), got[2]))
    return links, arrivals, remote


def _random_chunk(rng, t0: int, first_pos: int, wake0: int, recv0: int) -> tuple[ChunkRows, int]:
    n = int(rng.integers(0, 60))
    kind = rng.integers(0, 3, n)
    pos = np.arange(first_pos, first_pos + n, dtype=np.int64)
    ts = t0 + np.cumsum(rng.choice([0, 250, 500, 1000], n))  # ages often exactly at the limits
    skb = rng.integers(0, 6, n) * 0x100
    cpu = rng.integers(0, 3, n)
    tid = rng.choice([-1, 0, 100, 200, 300], n)
    s, r, w = kind == 0, kind == 1, kind == 2
    nr = int(r.sum())
    no = np.where(rng.random(nr) < 0.6, recv0 + np.arange(nr), -1)
    return ChunkRows(send_pos=pos[s], send_skb=skb[s], send_ts=ts[s], send_tid=tid[s],
                     recv_pos=pos[r], recv_cpu=cpu[r], recv_ts=ts[r], recv_skb=skb[r], recv_no=no, recv_tid=tid[r],
                     wake_pos=pos[w], wake_cpu=cpu[w], wake_ts=ts[w],
                     wake_id=wake0 + np.arange(int(w.sum()), dtype=np.int64)), int(ts[-1]) if n else t0


@pytest.mark.parametrize("seed", range(40))
def test_chunk_at_once_matching_equals_the_rules_applied_row_by_row(seed):
    rng = np.random.default_rng(seed)
    has_skb = seed % 8 != 7
    state, ref = HostNet(), {"send": {}, "recv": {}}
    t, pos, wake0, recv0 = 0, 0, 0, 0
    seen = {"links": 0, "local": 0, "remote": 0}
    for _ in range(6):
        rows, t = _random_chunk(rng, t, pos, wake0, recv0)
        pos, wake0, recv0 = pos + 100, wake0 + len(rows.wake_id), recv0 + 100
        links, arrivals, remote = _row_by_row(ref, rows, has_skb)
        got = match_chunk(state, rows, has_skb, DELAY, FLIGHT, horizon=t - FLIGHT)
        assert dict(zip(got.link_wake.tolist(), zip(got.link_tid.tolist(), got.link_ts.tolist()))) == links
        assert list(zip(got.arr_tid.tolist(), got.arr_ts.tolist(), got.arr_sender.tolist(), got.arr_send_ts.tolist(),
                        got.arr_recv_no.tolist())) == arrivals
        assert list(zip(got.remote_wake.tolist(), got.remote_recv_no.tolist())) == remote
        seen["links"] += len(links)
        seen["local"] += sum(a[2] >= 0 for a in arrivals)
        seen["remote"] += len(remote)
    # the latest receive of each CPU is carried as the rules leave it
    assert dict(zip(state.recv_cpu.tolist(), zip(state.recv_ts.tolist(), state.recv_skb.tolist(),
                                                 state.recv_no.tolist()))) == ref["recv"]
    if has_skb and seed < 8:  # the random chunks do reach every outcome
        assert seen["links"] and seen["local"] and seen["remote"], seen


def test_latest_before_finds_the_entry_of_the_same_key_just_before_each_query():
    e_key = np.array([5, 5, 7, 5, 7])
    e_pos = np.array([-1, 4, 2, 9, -1])
    q_key = np.array([5, 5, 5, 7, 7, 9])
    q_pos = np.array([0, 5, 10, 1, 3, 8])
    assert latest_before(e_key, e_pos, q_key, q_pos).tolist() == [0, 1, 3, 4, 2, -1]
