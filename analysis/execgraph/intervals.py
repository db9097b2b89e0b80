"""The per-thread state machine, vectorised: one chunk's rows of every thread (switches,
wake-ups, fork, exit, system calls, sorted by thread and event order) become closed state
intervals, and each thread's state is carried into the next chunk."""

from __future__ import annotations

import numpy as np

from .graph import BLOCKED, BP, EXITED, RS, RU, UNKNOWN

# scheduler status from sched_switch's prev_state / statedump
WAIT_CPU, WAIT_BLOCKED, WAIT_FORK, RUN, DEAD, NOSTATE = 0, 1, 2, 3, 4, 5

# per-thread row kinds: 0 switch-in, 1 switch-out (arg 1: blocked), 2 wake-up (arg: wake index),
# 3 fork (the child), 4 exit, 5 syscall entry (arg: id), 6 syscall exit (arg: id), 7 carried
# state of a thread from the previous chunk
K_IN, K_OUT, K_WAKE, K_FORK, K_EXIT, K_SC_IN, K_SC_OUT, K_CARRY = range(8)


def chunk_intervals(tid, seq, ts, kind, arg, c_status, c_sc, c_exit, c_known, sd_status, begin):
    """Closed intervals of one chunk's rows (sorted by thread, event order) and the state each
    thread carries into the next chunk. A thread's first row is its carried state (K_CARRY) when
    it was seen before; else its state before that row is the statedump's, or inferred from the
    row: a switch-out or a syscall means it was running, a wake-up that it was blocked (the
    reference creates unknown wake-up targets WAIT_BLOCKED), a switch-in that it waited for a
    CPU, a fork that it did not exist yet."""
    n = len(tid)  # at least one row (the builder skips a chunk with none)
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

    # status set by each non-wake row (a carried row sets the carried status). sched_process_exit
    # sets nothing: the kernel runs the thread's exit path after it (closing its files, waking a
    # parent in wait()) until its last switch-out, which leaves it dead (the reference keeps an
    # exiting task RUNNING, too)
    # A system call's entry or exit is the thread running: where its switch-in was lost (perf
    # drops the scheduler's events on a CPU leaving idle on some kernels; LTTng discards events
    # when its buffers are full), it is running from there, not waiting for a CPU to its switch-out
    sc_rows = (kind == K_SC_IN) | (kind == K_SC_OUT)
    setter = (kind <= K_OUT) | (kind == K_FORK) | is_carry | sc_rows
    status_set = np.full(n, -1, np.int8)
    status_set[(kind == K_IN) | sc_rows] = RUN
    out_rows = kind == K_OUT
    status_set[out_rows] = np.where(arg[out_rows] == 1, WAIT_BLOCKED, WAIT_CPU)
    status_set[kind == K_FORK] = WAIT_FORK
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
    lead_state = interval_state(init_status[~is_carry[g]], init_sc[new_g])
    out = {
        "tid": np.concatenate([tid[new_g], tid[c_rows]]).astype(np.int32),
        "start": np.concatenate([np.full(len(new_g), begin, np.int64), ts[c_rows]]),
        "end": np.concatenate([ts[new_g], ts[nxt]]),
        "state": np.concatenate([lead_state, interval_state(status_after[c_rows], sc_after[c_rows])]).astype(np.int8),
        "wake": np.concatenate([np.where(effective[new_g], arg[new_g], -1), wake_of]).astype(np.int32),
        "sc": np.concatenate([init_sc[new_g], sc_after[c_rows]]).astype(np.int16),
    }
    last = np.flatnonzero(last_of_group)
    carry = {int(t): (int(a), int(s_), int(st), int(sc), int(ex), int(kn)) for t, a, s_, st, sc, ex, kn in
             zip(tid[last].tolist(), ts[last].tolist(), seq[last].tolist(), status_after[last].tolist(),
                 sc_after[last].tolist(), exited[last].tolist(), known_g.tolist())}
    return out, carry, revealed


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


def interval_state(status, sc):
    out = np.full(len(status), UNKNOWN, np.int8)
    out[(status == RUN) & (sc >= 0)] = RS
    out[(status == RUN) & (sc < 0)] = RU
    out[(status == WAIT_CPU) | (status == WAIT_FORK)] = BP
    out[status == WAIT_BLOCKED] = BLOCKED
    out[status == DEAD] = EXITED
    return out
