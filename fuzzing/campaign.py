"""Drawing many cases of each class with hypothesis and tallying how each ended."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hyp_seed

from .harness import Case, run_case
from .strategies import CLASSES

CLASS_NAMES = list(CLASSES)


@dataclass
class ClassResult:
    cls: str
    tried: int = 0
    failed: int = 0
    exits: Counter = field(default_factory=Counter)
    slowest_s: float = 0.0
    peak_mib: float = 0.0
    examples: dict = field(default_factory=dict)  # problem -> (describe, argv, stderr) of its first case
    cases: dict = field(default_factory=dict)  # problem -> its first Case (to write out as a reproducer)


def fuzz_settings(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                    suppress_health_check=list(HealthCheck), print_blob=False)


def run_class(name: str, examples: int, base: Path, seed: int | None = None, log=None) -> ClassResult:
    res = ClassResult(name)

    def one(case: Case) -> None:
        out = run_case(case, base)
        res.tried += 1
        res.exits[out.exit if out.exit is not None else out.signal] += 1
        res.slowest_s = max(res.slowest_s, out.elapsed_s)
        res.peak_mib = max(res.peak_mib, out.peak_mib)
        if out.problems:
            res.failed += 1
            for problem in out.problems:
                key = problem.split(":")[0]
                res.examples.setdefault(key, (case.describe, case.argv, out.stderr))
                res.cases.setdefault(key, case)
        if log and res.tried % 50 == 0:
            log(f"{name}: {res.tried} tried, {res.failed} failed")

    test = given(CLASSES[name])(one)
    test = fuzz_settings(examples)(test)
    if seed is not None:
        test = hyp_seed(seed)(test)
    test()
    return res


def run_campaign(names, examples: int, base: Path, seed: int | None = None, log=None) -> list[ClassResult]:
    return [run_class(n, examples, base / n, seed, log) for n in names]


def table_lines(results: list[ClassResult]) -> list[str]:
    """Per class: inputs tried, failures, the exit codes seen (with how often), slowest run, peak."""
    out = [f"{'class':<12} {'tried':>6} {'failed':>6}  {'exits (count)':<40} slowest, peak"]
    for r in results:
        exits = ", ".join(f"{k}:{v}" for k, v in sorted(r.exits.items(), key=str))
        out.append(f"{r.cls:<12} {r.tried:>6} {r.failed:>6}  {exits:<40} {r.slowest_s:.1f} s, {r.peak_mib:,.0f} MiB")
    return out
