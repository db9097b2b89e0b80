"""Interrupt contexts: in which context each wake-up (and packet send) ran on its CPU, from each
CPU's interrupt stack, and what a blocked interval ended by a wake-up in interrupt context
becomes on the critical path (the reference's rules)."""

from __future__ import annotations

import numpy as np

from perftriage.analysis.columns import MISSING

from .events import (C_HRT_IN, C_HRT_OUT, C_IPI_IN, C_IPI_OUT, C_IRQ_IN, C_IRQ_OUT, C_PKT_IN, C_PKT_OUT, C_SOFT_IN,
                     C_SOFT_OUT)
from .graph import ST_BD, ST_BI, ST_BN, ST_BS

# interrupt contexts: code = base + number
CTX_NONE = 0
CTX_HRTIMER = 1
CTX_IPI = 2
CTX_PACKET = 3
CTX_SOFTIRQ = 100  # + vector
CTX_IRQ = 1000  # + irq number

SOFTIRQ_STATE = {  # vector -> path state when it wakes a task (reference rules)
    0: ST_BI, 1: ST_BS, 2: ST_BN, 3: ST_BN, 4: ST_BD, 5: ST_BD, 6: ST_BI, 7: ST_BI, 8: ST_BS, 9: ST_BI,
}


def interrupt_rows(cat, irq, vec):
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
