"""CloudDiag on generated microservice systems: is the injected (method, replica) ranked first?

For every scenario (one slow replica of a service; one method slow on every replica from an
incident on; a slow replica among noisy replicas with latency spikes) and several seeds and
slowdowns, the generator writes OTLP JSON; perftriage reads it, builds the call trees and
ranks (method, replica) pairs with the default parameters. A case is a hit at rank 1 when the
first pair is one of the injected pairs, in the top 3 when one of the first three is. Also
printed: precision of all flagged pairs (how many are injected ones) and recall (how many
injected pairs that the requests actually called are flagged), and how many healthy systems
(nothing injected) get a false alarm. Targets, for slowdowns of 2x and 4x: rank 1 >= 90%,
top 3 >= 98%; the 1.5x cases show where the method stops seeing the anomaly. And a method
whose calls start failing (the span status): named first, and when (_failing); a method that
returns early or throws, spans without a status and no time given: its service named first
(_early).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from perftriage.analysis.calltrees.clouddiag import diagnose
from perftriage.analysis.calltrees.trees import build_call_trees
from perftriage.analysis.sim.microservices import MicroConfig, write_microservice_sample
from perftriage.analysis.spans import read_spans
from perftriage.analysis.triage import run_triage

SCENARIOS = ("replica", "method", "replica+noise")


def cases(quick: bool):
    seeds = range(1, 4) if quick else range(1, 13)
    slowdowns = (4.0,) if quick else (1.5, 2.0, 4.0)
    for scenario in SCENARIOS:
        for slowdown in slowdowns:
            for seed in seeds:
                yield MicroConfig(requests=1500 if quick else 3000, seed=seed * 7 + int(slowdown * 10), scenario=scenario,
                                  slowdown=slowdown, write_log=False)
    for seed in seeds:  # healthy systems: anything flagged is a false alarm
        yield MicroConfig(requests=1500 if quick else 3000, seed=1000 + seed, scenario="none", write_log=False)


def run(quick: bool = False) -> bool:
    rows, healthy = [], []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="perftriage-eval-") as tmp:
        for i, cfg in enumerate(cases(quick)):
            out = Path(tmp) / f"case{i}"
            truth = write_microservice_sample(out, cfg)
            slow = {(m.replace(".", ":", 1), r) for m, r in truth["slow_pairs"]}
            spans = read_spans([out / "spans.otlp.jsonl"])
            diag = diagnose(build_call_trees(spans))
            ranked = [(p.method_name, p.replica_name) for p in diag.ranking]
            if cfg.scenario == "none":
                healthy.append(len(ranked))
                continue
            called = {(spans.methods[m], spans.replicas[k]) for m, k in zip(spans.method.tolist(), spans.replica.tolist())}
            reachable = slow & called
            flagged = set(ranked)
            rows.append(dict(scenario=cfg.scenario, slowdown=cfg.slowdown, seed=cfg.seed, r1=bool(ranked) and ranked[0] in slow,
                             r3=any(p in slow for p in ranked[:3]), flagged=len(flagged),
                             tp=len(flagged & slow), reach=len(reachable), top=ranked[0] if ranked else None))
            # the whole report: does its first finding name the method (its service), or the replica?
            first = run_triage([out / "spans.otlp.jsonl"]).findings[:1]
            title = first[0].title if first else ""
            if cfg.scenario == "method":
                rows[-1]["report"] = any(m in title or all(part in title for part in m.split(":", 1)) for m, _ in slow)
                rows[-1]["service"] = any(title.startswith(m.split(":", 1)[0] + " ") or m in title for m, _ in slow)
            else:
                rows[-1]["replica"] = any(r in title for _, r in slow)
    print(f"{len(rows) + len(healthy)} cases, {time.perf_counter() - t0:.1f} s")
    print(f"{'scenario':<15} {'slowdown':>8} {'cases':>6} {'rank 1':>7} {'top 3':>7} {'precision':>9} {'recall':>7}")
    groups = {}
    for r in rows:
        groups.setdefault((r["scenario"], r["slowdown"]), []).append(r)
    for (sc, sd), g in groups.items():
        _line(f"{sc:<15} {sd:>8g}", g)
    _line(f"{'all':<15} {'':>8}", rows)
    misses = [r for r in rows if not r["r1"]]
    for r in misses[:10]:
        print(f"  miss: {r['scenario']} x{r['slowdown']:g} seed {r['seed']}: first {r['top']}")
    print(f"healthy systems (nothing injected): {sum(1 for h in healthy if h)} of {len(healthy)} flag something "
          f"({sum(healthy)} pairs in all)")
    replica = [r for r in rows if "replica" in r]
    print("one replica slow, perftriage report's first finding names it (CloudDiag, else its calls against its "
          "peers'): " + ", ".join(
              f"{sc} x{sd:g} {sum(r['replica'] for r in replica if (r['scenario'], r['slowdown']) == (sc, sd))}/"
              f"{sum(1 for r in replica if (r['scenario'], r['slowdown']) == (sc, sd))}"
              for sc, sd in sorted({(r['scenario'], r['slowdown']) for r in replica})))
    method = [r for r in rows if "report" in r]
    print("one method slow on every replica, perftriage report's first finding names it / its service (what changed "
          "over time, not CloudDiag's ranking alone): " + ", ".join(
              f"x{sd:g} {sum(r['report'] for r in method if r['slowdown'] == sd)}/"
              f"{sum(r['service'] for r in method if r['slowdown'] == sd)} of "
              f"{sum(1 for r in method if r['slowdown'] == sd)}" for sd in sorted({r['slowdown'] for r in method})))
    # the targets are stated for the slowdowns the issue names (2x and more); 1.5x shows the limit
    target = [r for r in rows if r["slowdown"] >= 2]
    r1 = sum(r["r1"] for r in target) / len(target)
    r3 = sum(r["r3"] for r in target) / len(target)
    ok = r1 >= 0.9 and r3 >= 0.98
    print(f"slowdown >= 2x: rank 1 {r1:.1%} (target >= 90%), top 3 {r3:.1%} (target >= 98%): "
          f"{'met' if ok else 'NOT met'}")
    return _failing(quick) and _early(quick) and ok


def _failing(quick: bool) -> bool:
    """A method whose calls start failing (--scenario errors: a share of its calls from a time on,
    0.05% of every call failing all along, errors propagated to the root): does the report's
    first finding name it, and when; systems with the background failures alone: a false alarm
    where anything is said to fail. Target: at 10% or more of its calls failing, named first in
    90% of the systems or more, no false alarm."""
    seeds = range(1, 4) if quick else range(1, 13)
    named: dict[float, list] = {}
    alarms = 0
    with tempfile.TemporaryDirectory(prefix="perftriage-eval-") as tmp:
        for rate in (0.3, 0.1, 0.03, 0.0):
            for seed in seeds:
                out = Path(tmp) / f"e{rate}-{seed}"
                truth = write_microservice_sample(out, MicroConfig(requests=1500 if quick else 3000, seed=500 + seed,
                                                                   scenario="errors", error_rate=rate, write_log=False))
                res = run_triage([out / "spans.otlp.jsonl"])
                fails = [f for f in res.report.ranked() if f.target.get("kind") == "failing"]
                if rate == 0.0:
                    alarms += bool(fails)
                    continue
                service, op = truth["failing_method"].split(".", 1)
                first = res.report.ranked()[0]
                top = res.failures.methods[0] if res.failures.methods else None
                hit = first.target == {"kind": "failing", "method": f"{service}:{op}"}
                late = (top.since_ns - truth["incident_start_ns"]) / 1e9 if hit and top.step else float("nan")
                named.setdefault(rate, []).append((hit, late))
    for rate, rows in named.items():
        lates = sorted(abs(x) for _, x in rows if x == x)
        print(f"a method failing {rate:.0%} of its calls from a time on: named first in {sum(h for h, _ in rows)} of "
              f"{len(rows)}, its onset found within {lates[len(lates) // 2] if lates else float('nan'):.2f} s "
              f"(median), {lates[-1] if lates else float('nan'):.2f} s at most")
    print(f"background failures alone (0.05% of every call): {alarms} of {len(seeds)} systems said to fail")
    strong = [h for rate, rows in named.items() if rate >= 0.1 for h, _ in rows]
    ok = sum(strong) >= 0.9 * len(strong) and alarms == 0
    print(f"failing methods (10% of their calls or more) named first in {sum(strong)} of {len(strong)}, "
          f"{alarms} false alarms (target >= 90%, none): {'met' if ok else 'NOT met'}")
    return ok


def _early(quick: bool) -> bool:
    """A method that from a time on returns before its own calls (--scenario return), or throws
    there and its callers give up on the calls they had left (--scenario exception), in all its
    calls or in 80% of them; spans without a status (as Nezha's), no time given: does the report's
    first finding name its service (the deeper of the services that stop calling, where the
    requests stopped first)? Healthy systems: a false alarm where any call is said to be lost.
    Target: named first in 90% or more, no false alarm."""
    seeds = range(1, 4) if quick else range(1, 13)
    named: dict[tuple, list] = {}
    with tempfile.TemporaryDirectory(prefix="perftriage-eval-") as tmp:
        for scenario in ("return", "exception"):
            for rate in (1.0, 0.8):
                for seed in seeds:
                    out = Path(tmp) / f"{scenario}{rate}-{seed}"
                    truth = write_microservice_sample(out, MicroConfig(
                        requests=1500 if quick else 3000, seed=700 + seed, scenario=scenario, fault_rate=rate,
                        write_log=False))
                    first = run_triage([out / "spans.otlp.jsonl"]).report.ranked()[:1]
                    service = truth["failing_method"].split(".", 1)[0]
                    named.setdefault((scenario, rate), []).append(bool(first) and first[0].title.startswith(service + " "))
        alarms = 0
        for seed in seeds:
            out = Path(tmp) / f"healthy{seed}"
            write_microservice_sample(out, MicroConfig(requests=1500 if quick else 3000, seed=1000 + seed,
                                                       scenario="none", write_log=False))
            lost = run_triage([out / "spans.otlp.jsonl"]).lost
            alarms += bool(lost and lost.calls)
    for (scenario, rate), hits in named.items():
        print(f"a method that {'returns early' if scenario == 'return' else 'throws'} in {rate:.0%} of its calls "
              f"from a time on, no status, no time: its service named first in {sum(hits)} of {len(hits)}")
    hits = [h for rows in named.values() for h in rows]
    ok = sum(hits) >= 0.9 * len(hits) and alarms == 0
    print(f"healthy systems: {alarms} of {len(seeds)} said to lose calls; early returns and exceptions named first in "
          f"{sum(hits)} of {len(hits)} (target >= 90%, no false alarm): {'met' if ok else 'NOT met'}")
    return ok


def _line(head: str, g: list[dict]) -> None:
    n = len(g)
    flagged = sum(r["flagged"] for r in g)
    prec = sum(r["tp"] for r in g) / flagged if flagged else float("nan")
    reach = sum(r["reach"] for r in g)
    rec = sum(r["tp"] for r in g) / reach if reach else float("nan")
    print(f"{head} {n:>6} {sum(r['r1'] for r in g) / n:>7.1%} {sum(r['r3'] for r in g) / n:>7.1%} "
          f"{prec:>9.3f} {rec:>7.3f}")
