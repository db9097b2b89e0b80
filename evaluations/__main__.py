"""Run the evaluations: ``python -m evaluations [NAME...] [--quick]``."""

from __future__ import annotations

import argparse
import importlib
import sys

EVALS = ["request_outliers", "requests_perf", "calltree_diagnosis", "calltree_real", "thread_deviations", "counter_incidents", "counters_real", "counters_pods", "cross_host", "damaged_inputs"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m evaluations")
    p.add_argument("names", nargs="*", help=f"evaluations to run (default: all of {', '.join(EVALS)})")
    p.add_argument("--quick", action="store_true", help="fewer and smaller cases (a smoke run)")
    args = p.parse_args(argv)
    failed = []
    for name in args.names or EVALS:
        if name not in EVALS:
            p.error(f"unknown evaluation {name}")
        mod = importlib.import_module(f"evaluations.{name}")
        print(f"\n== {name}: {mod.__doc__.strip().splitlines()[0]}")
        if not mod.run(quick=args.quick):
            failed.append(name)
    if failed:
        print(f"\ntargets not met: {', '.join(failed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
