"""The task running on each CPU, from ``sched_switch``: the thread of kernel events whose trace has
no ``tid`` context, filled in vectorised form per chunk and carried from chunk to chunk."""

from __future__ import annotations

import numpy as np

from perftriage.analysis.columns import MISSING


class CurrentTask:
    """Per (host, cpu): the task running now, carried from chunk to chunk."""

    def __init__(self):
        self.current: dict[tuple[int, int], int] = {}

    def fill(self, tid, need, is_switch, host, cpu, prev_tid, next_tid) -> None:
        """Set tid[i] (where need[i]) to the task current on that CPU at row i, in place."""
        rows = np.flatnonzero(need | is_switch)
        if len(rows) == 0:
            return
        h, c = host[rows].astype(np.int64), cpu[rows].astype(np.int64)
        if 0 <= h.min() and h.max() < 16 and 0 <= c.min() and c.max() < 4096:
            key = (h * 4096 + c).astype(np.uint16)  # a stable sort of 16-bit keys is a radix sort: 2x faster
        else:
            key = h * 65536 + c
        order = np.argsort(key, kind="stable")
        rows = rows[order]
        key = key[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        seg_start = np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
        sw = is_switch[rows]
        pos = np.arange(len(rows))
        last_sw = np.maximum.accumulate(np.where(sw, pos, -1))
        # the task current *before* each row: the next_tid of the previous switch in the segment
        prev_last = np.r_[-1, last_sw[:-1]]
        prev_last = np.where(prev_last >= seg_start, prev_last, -1)
        nt = next_tid[rows]
        pt = prev_tid[rows]
        initial = np.full(len(starts), -1, np.int64)
        for s_i, s in enumerate(starts):
            k = (int(host[rows[s]]), int(cpu[rows[s]]))
            if k in self.current:
                initial[s_i] = self.current[k]
            else:
                seg_end = starts[s_i + 1] if s_i + 1 < len(starts) else len(rows)
                first = np.flatnonzero(sw[s:seg_end])
                if len(first):
                    initial[s_i] = pt[s + first[0]]
        seg_index = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(rows)]))
        cur = np.where(prev_last >= 0, nt[np.maximum(prev_last, 0)], initial[seg_index])
        # a sched_switch event itself runs in the context of prev_tid
        cur = np.where(sw, pt, cur)
        ok = need[rows]
        tid[rows[ok]] = np.where(cur[ok] == MISSING, -1, cur[ok]).astype(np.int32)
        for s_i, s in enumerate(starts):
            seg_end = starts[s_i + 1] if s_i + 1 < len(starts) else len(rows)
            k = (int(host[rows[s]]), int(cpu[rows[s]]))
            last = last_sw[seg_end - 1]
            if last >= s:
                self.current[k] = int(nt[last])
            elif k not in self.current and initial[s_i] >= 0:
                self.current[k] = int(initial[s_i])
