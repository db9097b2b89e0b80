"""Tiny hand-written traces: a list of events written as real CTF (kernel + UST traces).

For unit tests that need a handful of events with a known answer (a critical path written by
hand). Each event is ``(ts_ns, cpu, name, {field: value})``; fields not given are 0 / "".
String fields take Python strings; ``network_header`` takes a dict of :func:`tcp_header_slots`'
arguments (an IPv4 + TCP header). UST events (``provider:event``) take ``vpid``, ``vtid`` and
``procname`` in their field dict.
"""

from __future__ import annotations

import os
import uuid as _uuid
from pathlib import Path

import numpy as np

from perftriage.analysis.ctf.writer import CtfWriter, TraceDef

from .catalog import KERNEL_CLASSES, UST_CLASSES, UST_CONTEXT, SimClass, tcp_header_slots, unpack_tcp_header

# event names of LTTng < 2.7, for tests of the name mapping
LEGACY_CLASSES = [
    SimClass("softirq_entry", (("vec", "u32", 0),)),
    SimClass("softirq_exit", (("vec", "u32", 0),)),
    SimClass("softirq_raise", (("vec", "u32", 0),)),
    SimClass("hrtimer_expire_entry", (("hrtimer", "x64", 0), ("now", "i64", 1), ("function", "x64", 2))),
    SimClass("hrtimer_expire_exit", (("hrtimer", "x64", 0),)),
    SimClass("sys_read", (("fd", "u32", 0), ("count", "u64", 1))),
    SimClass("sys_futex", (("uaddr", "u64", 0), ("op", "i32", 1))),
    SimClass("exit_syscall", (("ret", "i64", 0),)),
]

# system calls only hand-written cases use (the simulated web server's catalogue lacks them)
EXTRA_CLASSES = [
    SimClass("syscall_entry_wait4", (("upid", "i32", 0), ("options", "i32", 1))),
    SimClass("syscall_exit_wait4", (("ret", "i64", 0),)),
    SimClass("syscall_entry_exit_group", (("error_code", "i32", 0),)),
]

EPOCH = 1_767_225_600 * 1_000_000_000  # 2026-01-01T00:00:00Z
_STRINGY = ("string", "seq8")


def write_trace(path: str | os.PathLike, events, hostname: str = "testhost", time_base: int = EPOCH) -> Path:
    """Write ``events`` under ``path`` (``kernel/`` and, if any, ``ust/``); timestamps are
    ``time_base + ts_ns``. Returns ``path``."""
    path = Path(path)
    strings: list[str] = [""]
    codes = {"": 0}

    def code(s: str) -> int:
        if s not in codes:
            codes[s] = len(strings)
            strings.append(s)
        return codes[s]

    kernel_classes = KERNEL_CLASSES + LEGACY_CLASSES + EXTRA_CLASSES
    kernel = {c.name: (i, c) for i, c in enumerate(kernel_classes)}
    ust = {c.name: (i, c) for i, c in enumerate(UST_CLASSES)}
    by_trace = {"kernel": [], "ust": []}
    for ts, cpu, name, values in sorted(events, key=lambda e: (e[0], e[1])):
        if name in kernel:
            by_trace["kernel"].append((ts, cpu, name, values))
        elif name in ust:
            by_trace["ust"].append((ts, cpu, name, values))
        else:
            raise ValueError(f"unknown event {name!r}")
    offset = time_base - 1_000_000_000
    # per host: traces of several hosts are told apart by their uuids (and their clocks')
    uuids = tuple(str(_uuid.uuid5(_uuid.NAMESPACE_DNS, f"{part}.{hostname}.perftriage.test"))
                  for part in ("clock", "kernel", "ust"))
    for domain, evs in by_trace.items():
        if not evs:
            continue
        table = kernel if domain == "kernel" else ust
        classes = kernel_classes if domain == "kernel" else UST_CLASSES
        tdef = TraceDef(domain, hostname, [c.defn for c in classes], offset, uuids[0],
                        uuids[1] if domain == "kernel" else uuids[2],
                        context=UST_CONTEXT if domain == "ust" else ())
        out = path / "kernel" if domain == "kernel" else path / "ust" / "uid" / "1000" / "64-bit"
        writer = CtfWriter(out, tdef, strings)
        for cpu in sorted({e[1] for e in evs}):
            mine = [e for e in evs if e[1] == cpu]
            n = len(mine)
            cols: dict[str, np.ndarray] = {}
            cls = np.empty(n, np.int64)
            for row, (_, _, name, values) in enumerate(mine):
                idx, sc = table[name]
                cls[row] = idx
                kinds = {f: k for f, k, _ in sc.fields}
                kinds.update({f.name: f.kind for f in (UST_CONTEXT if domain == "ust" else ())})
                for f, v in values.items():
                    if f not in kinds:
                        raise ValueError(f"{name} has no field {f!r}")
                    k = kinds[f]
                    if k == "netheader":  # {saddr, daddr, sport, dport, seq, ack, flags, tot_len[, ip_id]}
                        for c, arr in unpack_tcp_header(*tcp_header_slots(**v)).items():
                            cols.setdefault(c, np.zeros(n, np.int64))[row] = int(arr)
                        continue
                    col = cols.setdefault(f, np.zeros(n, np.int64))
                    col[row] = code(v) if (k in _STRINGY or k.startswith("chars:")) else int(v)
                # derived fields (vtids = child_tid ...) follow their source
                for f, k, src in sc.fields:
                    if isinstance(src, tuple) and src[0] == "same" and f not in values and src[1] in values:
                        cols.setdefault(f, np.zeros(n, np.int64))[row] = cols[src[1]][row]
            # string-kind columns default to "" (code 0) which is what zeros mean
            writer.write(cpu, np.array([time_base + e[0] for e in mine], np.int64), cls, cols)
        writer.close()
    return path
