"""The task running on each CPU, from ``sched_switch``: the thread of kernel events whose trace has
no ``tid`` context, filled in vectorised form per chunk and carried from chunk to chunk."""

from __future__ import annotations

import numpy as np

from perftriage.analysis.columns import MISSING


def _compiled():
    try:
        from ._decode import current_tasks  # noqa: PLC0415  (built by make setup with the C decoder)
    except ImportError:
        return None
    return current_tasks


HOSTS, CPUS = 16, 4096  # (host, cpu) as one key, host * CPUS + cpu, where every host and CPU is below these
_KEYS = HOSTS * CPUS


def _small_keys(host: np.ndarray, cpu: np.ndarray) -> bool:
    """Whether every (host, cpu) makes a key below _KEYS (16 bits)."""
    return bool(host.min() >= 0 and host.max() < HOSTS and cpu.min() >= 0 and cpu.max() < CPUS)


class CurrentTask:
    """Per (host, cpu): the task running now, carried from chunk to chunk.

    Where the C decoder is built, a chunk is done in one pass in C (``_decode.current_tasks``:
    23 ms -> under 1 ms a chunk of 131,000 events, on the analysing process, the busier one);
    the state is then two arrays indexed by host * 4096 + cpu. Otherwise, and for a chunk with
    a host or CPU beyond that, the vectorised rules below (the state as a dict)."""

    def __init__(self, compiled: bool = True):
        self.current: dict[tuple[int, int], int] = {}
        self._c = _compiled() if compiled else None
        self._state = np.zeros(_KEYS, np.int64)  # the C state: the task per key, and whether known
        self._known = np.zeros(_KEYS, np.uint8)

    def fill(self, tid, need, is_switch, host, cpu, prev_tid, next_tid) -> None:
        """Set tid[i] (where need[i]) to the task current on that CPU at row i, in place."""
        if self._c is not None and len(tid):
            if _small_keys(host, cpu):
                self._c(tid, np.ascontiguousarray(need, np.bool_), np.ascontiguousarray(is_switch, np.bool_),
                        np.ascontiguousarray(host, np.int16), np.ascontiguousarray(cpu, np.int32),
                        np.ascontiguousarray(prev_tid, np.int64), np.ascontiguousarray(next_tid, np.int64),
                        self._state, self._known)
                return
            self._to_dict()
            self._fill(tid, need, is_switch, host, cpu, prev_tid, next_tid)
            self._from_dict()
            return
        self._fill(tid, need, is_switch, host, cpu, prev_tid, next_tid)

    def _to_dict(self) -> None:
        for k in np.flatnonzero(self._known).tolist():
            self.current[divmod(k, CPUS)] = int(self._state[k])

    def _from_dict(self) -> None:
        for (h, c), t in self.current.items():
            if 0 <= h < HOSTS and 0 <= c < CPUS:
                self._state[h * CPUS + c] = t
                self._known[h * CPUS + c] = 1

    def _fill(self, tid, need, is_switch, host, cpu, prev_tid, next_tid) -> None:
        rows = np.flatnonzero(need | is_switch)
        if len(rows) == 0:
            return
        h, c = host[rows].astype(np.int64), cpu[rows].astype(np.int64)
        if _small_keys(h, c):
            key = (h * CPUS + c).astype(np.uint16)  # a stable sort of 16-bit keys is a radix sort: 2x faster
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
