"""Run the benchmarks: ``python -m benchmarks [NAME...] [--quick]``."""

from __future__ import annotations

import argparse
import importlib
import sys

BENCHES = ["ctf_write", "ctf_read", "request_pipeline", "pipeline_scale", "fleet_cluster", "app_vs_report", "real_first_open", "request_outliers", "calltrees", "spans_real", "threads", "counters", "tui_rows"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks")
    p.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(BENCHES)})")
    p.add_argument("--quick", action="store_true", help="smaller inputs (a smoke run, figures not comparable)")
    args = p.parse_args(argv)
    names = args.names or BENCHES
    for name in names:
        if name not in BENCHES:
            p.error(f"unknown benchmark {name}")
        mod = importlib.import_module(f"benchmarks.{name}")
        print(f"\n== {name}: {mod.__doc__.strip().splitlines()[0]}")
        mod.run(quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
