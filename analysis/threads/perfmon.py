"""A Windows process's threads from a performance counter log (PDH-CSV, ../perfmon.py): the
``Thread`` object's counters, ``typeperf "\\Thread(w3wp/*)\\*" -si 5 -f CSV -o threads.csv``.

A ``Thread(w3wp/12)`` column is the 12th thread of process w3wp as Windows numbers them at that
moment: when a thread ends the numbers shift, so a thread is told by its ``ID Thread`` counter,
row by row, where the log has it (``ID Process`` names the process: ``w3wp[4242]``), else by its
instance. Metrics are the thread's counters that measure it (``% Processor Time``, ``% User
Time``, ``% Privileged Time``, ``Context Switches/sec``, ``Priority Current``...); its ids, start
address, base priority, elapsed time, state and wait reason (codes, not measures) are not.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError
from perftriage.analysis.perfmon import read_log, threads_in
from perftriage.analysis.units import count_of
from perftriage.analysis.perfmon import sniff as sniff_pdh

from .series import ThreadSeries, build

NOT_METRICS = {"ID Thread", "ID Process", "Start Address", "Priority Base", "Elapsed Time", "Thread State",
               "Thread Wait Reason"}
MIN_THREADS = 2


def sniff(path: Path, head: bytes) -> bool:
    """A PDH-CSV log of two threads or more."""
    return sniff_pdh(head) and threads_in(head) >= MIN_THREADS


def _unit(counter: str) -> str:
    return "%" if counter.startswith("%") else "/s" if counter.endswith("/sec") else ""


def read_perfmon_threads(path) -> ThreadSeries:
    path = Path(path)
    log = read_log(path)
    by_instance: dict[tuple[str, str], dict[str, int]] = {}
    for j, p in enumerate(log.paths):
        if p.is_thread:
            by_instance.setdefault((p.machine, p.instance), {})[p.counter] = j
    if len(by_instance) < MIN_THREADS:
        raise InputError(path, "a performance counter log without the counters of two threads or more "
                               "(\\Thread(process/N)\\...)")
    metrics = sorted({c for cols in by_instance.values() for c in cols} - NOT_METRICS)
    if not metrics:
        raise InputError(path, "its threads' counters are ids and states only: no measure of them")
    times, keys, procs, machines, vals = [], [], [], [], []
    for (machine, instance), cols in by_instance.items():
        v = np.column_stack([log.values[:, cols[m]] if m in cols else np.full(len(log.time), np.nan)
                             for m in metrics])
        rows = np.flatnonzero(np.isfinite(v).any(axis=1))  # a thread is in the log where it has a value
        if not len(rows):
            continue
        name = instance.split("/", 1)[0]
        tid = log.values[rows, cols["ID Thread"]] if "ID Thread" in cols else None
        pid = log.values[rows, cols["ID Process"]] if "ID Process" in cols else None
        for n, r in enumerate(rows.tolist()):
            t_ok = tid is not None and np.isfinite(tid[n])
            p_ok = pid is not None and np.isfinite(pid[n])
            proc = f"{name}[{int(pid[n])}]" if p_ok else name
            keys.append(str(int(tid[n])) if t_ok else instance)  # its machine and process scope it (series.SCOPES)
            procs.append(proc)
        times.append(log.time[rows])
        machines += [machine] * len(rows)
        vals.append(v[rows])
    if not vals:
        raise InputError(path, "its threads' counters hold no value")
    groups = {"machine": np.array(machines, dtype=object), "process": np.array(procs, dtype=object),
              "program": np.array([p.split("[", 1)[0].split("#", 1)[0] for p in procs], dtype=object)}
    ts = build(np.concatenate(times), keys, groups, np.vstack(vals), metrics, str(path))
    ts.units = {m: _unit(m) for m in metrics if _unit(m)}
    ts.kinds = {"process": "program"}
    ts.notes += log.notes
    ts.notes.append(f"a Windows performance counter log (PDH-CSV) of {ts.n_threads} threads, {len(metrics)} "
                    f"counters each; its times written on {log.zone!r} read as UTC by the log's bias")
    others = sum(not p.is_thread for p in log.paths)
    if others:
        ts.notes.append(f"its {count_of(others, 'counters')} of other objects than threads are read as its "
                        "machine's counters")
    return ts
