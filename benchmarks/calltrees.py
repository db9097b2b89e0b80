"""One million spans (OTLP JSON) through CloudDiag: read, assemble call trees, categorise, RPCA.

Each stage timed in a fresh process, with that process's peak memory; beside them, the time
Python's json module alone takes to parse the same file (the floor of any pure-Python OTLP
reader) and the size of the span table. Target (issue 6): under 30 s in total.
"""

from __future__ import annotations

import shutil

from .common import CACHE, child_peak_rss, row

CODE = r"""
import json, time
from perftriage.analysis.spans import read_spans
from perftriage.analysis.calltrees.trees import build_call_trees
from perftriage.analysis.calltrees.clouddiag import diagnose
path = {path!r}
t0 = time.perf_counter()
if {json_only}:
    n = 0
    with open(path) as f:
        for line in f:
            json.loads(line)
            n += 1
    print("json", time.perf_counter() - t0, n)
else:
    st = read_spans([path])
    t1 = time.perf_counter()
    trees = build_call_trees(st)
    t2 = time.perf_counter()
    diag = diagnose(trees)
    t3 = time.perf_counter()
    top = diag.ranking[0] if diag.ranking else None
    print("stages", t1 - t0, t2 - t1, t3 - t2, len(st), len(trees.categories), st.nbytes,
          (top.method_name + "@" + top.replica_name) if top else "-")
"""


def spans_file(requests: int, seed: int = 5):
    from perftriage.analysis.sim.microservices import MicroConfig, write_microservice_sample

    path = CACHE / f"microservices-{requests}-s{seed}"
    if not (path / "ground_truth.json").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        if path.exists():
            shutil.rmtree(path)
        write_microservice_sample(path, MicroConfig(requests=requests, seed=seed, scenario="replica", write_log=False))
    return path


def run(quick: bool = False) -> None:
    import json

    requests = 10_000 if quick else 185_000  # 5.4 spans per request: about a million spans
    folder = spans_file(requests)
    truth = json.loads((folder / "ground_truth.json").read_text())
    path = folder / "spans.otlp.jsonl"
    out, _, peak_json = child_peak_rss(CODE.format(path=str(path), json_only=True))
    t_json = float(out.split()[1])
    out, wall, peak = child_peak_rss(CODE.format(path=str(path), json_only=False))
    parts = out.split()
    t_read, t_trees, t_diag = map(float, parts[1:4])
    n_spans, n_cat, nbytes = int(parts[4]), int(parts[5]), int(parts[6])
    top = parts[7]
    row(f"{n_spans:,} spans of {requests:,} requests", f"{path.stat().st_size / 1e6:.0f} MB OTLP JSON",
        f"{n_cat} categories")
    row("  read into the span table", f"{t_read:.2f} s",
        f"{n_spans / t_read / 1e3:.0f} k spans/s; json.loads alone {t_json:.2f} s ({t_read / t_json:.2f}x)")
    row("  call trees and categories", f"{t_trees:.2f} s", f"{requests / t_trees / 1e3:.0f} k requests/s")
    row("  RPCA and ranking (all categories)", f"{t_diag:.2f} s", "")
    total = t_read + t_trees + t_diag
    row("total", f"{total:.2f} s", f"target < 30 s: {'met' if total < 30 else 'NOT MET'}")
    row("peak memory (process)", f"{peak / 2**20:.0f} MiB",
        f"span table {nbytes / 2**20:.0f} MiB; json-only process {peak_json / 2**20:.0f} MiB")
    slow = {f"{m.replace('.', ':', 1)}@{r}" for m, r in truth["slow_pairs"]}
    row("first pair", top, "injected" if top in slow else f"NOT injected ({', '.join(sorted(slow))})")
