"""Requests and threads in real kernel traces recorded by perf, against the workload's own ground
truth: tests/data/perf/threadpool (committed), and fresh recordings of the same workload on this
machine when perf can record here (root, tracefs; tests/data/perf/record.sh).

The workload (tests/data/perf/srv.c): six worker threads serve requests marked by uprobes; every
20th request syncs a file to disk, every 20th+10 sleeps 8 ms; worker-3 spins 4x as long per
request as the others. Measured: precision and recall of the outlying requests against the sync
and sleep requests; the purity of their clusters (the share of requests whose cluster's most
common cause is theirs) and the adjusted Rand index against the two causes; and where the thread
analysis ranks worker-3 (a deviation it may or may not see: printed, no target), also with
worker-3 deviating in other ways on fresh recordings (more disk writes and syncs, more sleep,
more system calls), and where its finding names the metric it deviates by (CPU, Disk wait,
Sleep, Syscalls): first, said after others, or not said; and what is ranked in healthy pools
(worker-3 deviating in no way: false alarms; printed, no target: on these 2 s recordings, 10 ms
windows holding under one request per worker, a burst of waits for a CPU that the machine's
other processes cause is found in one or two of three; on 20 s ones, none in two).

This machine's kernel records no switch from idle on CPU 1, nor the wake-ups made in that idle
time: a sync whose wake-up was lost waits on "a task that could not be followed", and the syncs
split into clusters by how much of their wait was lost (ARI printed, no target; purity is the
target: a cluster that mixes causes misleads, one cause in two clusters does not).

Targets: precision >= 0.9, recall >= 0.9, cluster purity >= 0.95 on the committed recording;
purity >= 0.95 on fresh ones, whose precision and recall are printed: on this shared machine other
processes delay some requests for real (waiting for a CPU). Fresh recordings' recall was 0.5-0.86
now and then (0.65 once) until dense groups of exactly 5% were flagged: the 50 sleeps of 1,000
requests, alike to the microsecond, made a dense group the outlier detector left out under "less
than 5%" (now at most 10%; 17 recordings kept and read again: recall 1.0 on all but the three
whose worker-3 syncs or sleeps on every request it serves, 17% of them, as slow as the labelled
ones and as many: io 0.69 and 0.56, sleep 0.86).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

from perftriage.analysis.options import Options
from perftriage.analysis.requests.outlier_analysis import analyze_requests
from perftriage.analysis.requests.params import MarkerSpec
from perftriage.analysis.triage import run_triage
from perftriage.analysis.units import count_of

HERE = Path(__file__).resolve().parent.parent / "tests" / "data" / "perf"
MARKERS = (MarkerSpec("probe_srv:request_begin", "probe_srv:request_end", key="id"),)


def truth(path: Path) -> dict[int, tuple[int, str]]:
    """request id -> (worker, kind) from a recording's truth.txt."""
    out = {}
    for line in path.read_text().splitlines():
        rid, worker, kind = line.split()
        out[int(rid)] = (int(worker), kind)
    return out


def evaluate(trace: Path, truth_file: Path) -> dict:
    res = run_triage([trace], Options(markers=MARKERS, thread_metrics=True))
    ft = res.features
    known = truth(truth_file)
    ids = np.asarray(ft.fields["field_id"], np.int64)  # the marker's id field (the table's own id is its row)
    cause = np.array([known.get(int(i), (-1, "?"))[1] for i in ids])
    ra = analyze_requests(ft)
    y = (cause == "sync") | (cause == "sleep")
    out = ra.outliers.outlier
    tp = int((out & y).sum())
    both = out & y
    ari = adjusted_rand_score(cause[both], ra.clusters.label[both]) if both.sum() > 1 else float("nan")
    labels = ra.clusters.label[both]
    agree = sum(np.unique(cause[both][labels == c], return_counts=True)[1].max() for c in np.unique(labels))
    rank = "-"
    threads = [f for f in res.report.findings if f.analysis == "threads"]
    ranked = [f.subject for f in threads if "thread " in f.subject and "(worker-" in f.subject]
    for i, subject in enumerate(ranked, 1):
        if "(worker-3)" in subject:
            rank = str(i)
            break
    fp = out & ~y
    dominant = np.array(ft.states)[np.argmax(ft.durations[fp], axis=1)] if fp.any() else np.array([])
    states, counts = np.unique(dominant, return_counts=True)
    others = ", ".join(f"{c} {s_}" for s_, c in sorted(zip(states, counts), key=lambda x: -x[1]))
    return {"others": others or "-", "requests": len(ft), "anomalous": int(y.sum()), "outliers": int(out.sum()),
            "precision": tp / max(1, int(out.sum())), "recall": tp / max(1, int(y.sum())), "ari": ari,
            "purity": agree / max(1, int(both.sum())),
            "k": ra.clusters.k, "worker3": rank, "named": ranked[:3]}


MODES = ("cpu", "io", "sleep", "syscalls")  # how worker-3 deviates (srv.c)


#: the metric worker-3 deviates by in each mode (srv.c)
MODE_METRIC = {"cpu": "CPU", "io": "Disk wait", "sleep": "Sleep", "syscalls": "Syscalls"}


def thread_findings(trace: Path) -> list[tuple[str, list[str]]]:
    """The thread findings on the pool's workers, in the report's order: (title, the metrics its
    table names, the first leading)."""
    res = run_triage([trace], Options(markers=MARKERS, thread_metrics=True))
    return [(f.title, [row[0] for t in f.tables for row in t.rows]) for f in res.report.findings
            if f.analysis == "threads" and "(worker-" in f.subject]


def can_record() -> bool:
    return (os.geteuid() == 0 and shutil.which("perf") is not None and shutil.which("gcc") is not None
            and Path("/sys/kernel/tracing/uprobe_events").exists())


def record(out: Path, requests: int, mode: str = "cpu") -> bool:
    """A fresh recording into ``out`` (threadpool/, truth.txt), worker-3 deviating as ``mode``
    says (srv.c); False when perf could not."""
    done = subprocess.run(["sh", str(HERE / "record.sh"), str(out), str(requests), "2000", mode], capture_output=True,
                          text=True)
    if done.returncode != 0 or not (out / "threadpool" / "metadata").exists():
        print(f"  (perf could not record here: {(done.stderr or done.stdout).strip().splitlines()[-1:]})")
        return False
    return True


def run(quick: bool = False) -> bool:
    cases = [("committed", HERE / "threadpool", HERE / "truth.txt")]
    tmp = Path(tempfile.mkdtemp(prefix="perftriage-eval-"))
    try:
        if can_record():
            for i in range(1 if quick else 3):
                out = tmp / f"fresh-{i}"
                out.mkdir()
                if not record(out, 600 if quick else 1000):
                    break
                cases.append((f"fresh {i + 1}", out / "threadpool", out / "truth.txt"))
        else:
            print("  (no fresh recordings: perf needs root, tracefs and uprobes here)")
        print(f"  {'recording':<10} {'requests':>8} {'anomalous':>9} {'outliers':>8} {'precision':>9} {'recall':>7} "
              f"{'purity':>6} {'ARI':>6} {'k':>3}  {'other outliers by state':<23} worker-3 ranked (threads named)")
        rows = []
        for name, trace, truth_file in cases:
            r = evaluate(trace, truth_file)
            rows.append(r)
            print(f"  {name:<10} {r['requests']:>8,} {r['anomalous']:>9,} {r['outliers']:>8,} {r['precision']:>9.3f} "
                  f"{r['recall']:>7.3f} {r['purity']:>6.3f} {r['ari']:>6.3f} {r['k']:>3}  {r['others']:<23} {r['worker3']} ({', '.join(r['named']) or '-'})")
        if can_record():
            print("  threads: worker-3 deviating, each way on a fresh recording of 1,000 requests (printed, no target)")
            for mode in MODES:
                out = tmp / f"mode-{mode}"
                out.mkdir()
                if not record(out, 1000, mode):
                    break
                found = thread_findings(out / "threadpool")
                rank = next((i for i, (t, _) in enumerate(found, 1) if "(worker-3)" in t), None)
                others = [t for t, _ in found if "(worker-3)" not in t]
                said = found[rank - 1][1] if rank else []
                way = MODE_METRIC[mode]
                named = ("" if not rank else f"; {way} " + ("first" if said[:1] == [way] else
                                                            f"said {said.index(way) + 1}." if way in said else "NOT said"))
                # worker-3's headline, then each other thread ranked with its own
                print(f"  {mode:<9} worker-3 {'ranked ' + str(rank) if rank else 'NOT ranked'}{named}"
                      f"{'' if not rank else ' — ' + found[rank - 1][0].split(': ', 1)[1]}"
                      + "".join(f"\n            also ranked: {o.split(' in ')[0]}: {o.split(': ', 1)[1]}" for o in others))
            # a healthy pool (srv.c's worker-3 deviates in no way): whatever is ranked is a false
            # alarm; these 2 s recordings' 10 ms windows hold under one request per worker
            alarms = []
            for i in range(1 if quick else 3):
                out = tmp / f"healthy-{i}"
                out.mkdir()
                if not record(out, 1000, "none"):
                    break
                alarms.append([t.partition(": ")[0].split(" in process")[0] + ": " + t.partition(": ")[2] for t, _ in
                               thread_findings(out / "threadpool")])  # who (less its process), then what
            if alarms:
                print(f"  healthy   {count_of(sum(map(len, alarms)), 'threads')} ranked in {count_of(len(alarms), 'healthy pools')} (false alarms, "
                      "printed, no target)" + "".join(f"\n              {a}" for al in alarms for a in al))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    first, fresh = rows[0], rows[1:]
    ok = (first["precision"] >= 0.9 and first["recall"] >= 0.9 and first["purity"] >= 0.95
          and all(r["purity"] >= 0.95 for r in fresh))
    print("  targets: the committed recording precision >= 0.9, recall >= 0.9, cluster purity >= 0.95; fresh ones "
          f"purity >= 0.95: {'met' if ok else 'NOT met'}")
    print("  (a fresh recording's precision and recall are printed without a target: this shared machine's other"
          " processes delay some requests for real (BP = waiting for a CPU))")
    return ok
