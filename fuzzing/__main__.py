"""``python -m fuzzing [--examples N] [--columnar] [CLASS...]``: per class of damaged input, how many were
tried and how many failed (the target is zero), with a reproducer for each kind of failure."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from .campaign import CLASS_NAMES, run_campaign, table_lines
from .harness import write_input


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fuzzing")
    p.add_argument("classes", nargs="*", help=f"classes to run (default: all of {', '.join(CLASS_NAMES)})")
    p.add_argument("--examples", type=int, default=200, help="inputs per class (default 200)")
    p.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random)")
    p.add_argument("--keep", type=Path, metavar="DIR", help="write each failure's input there (a reproducer)")
    p.add_argument("--columnar", action="store_true",
                   help="the CSV readers' large-file paths (polars) for every file, however small")
    args = p.parse_args(argv)
    if args.columnar:
        os.environ["FUZZ_COLUMNAR"] = "1"  # the forking server's (harness._Server) environment
    for c in args.classes:
        if c not in CLASS_NAMES:
            p.error(f"unknown class {c}: one of {', '.join(CLASS_NAMES)}")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="perftriage-fuzz-") as tmp:
        results = run_campaign(args.classes or CLASS_NAMES, args.examples, Path(tmp), seed=args.seed,
                               log=lambda s: print(s, file=sys.stderr, flush=True))
    print("\n".join(table_lines(results)))
    total_failed = sum(r.failed for r in results)
    for r in results:
        for i, (problem, (describe, argv, err)) in enumerate(r.examples.items()):
            print(f"\n[{r.cls}] {problem}\n  input: {describe}\n  argv: {' '.join(argv)}\n  stderr: {err[-600:]}")
            if args.keep:
                where = args.keep / f"{r.cls}-{i}"
                write_input(r.cases[problem], where)
                print(f"  kept in {where} (as {{in}})")
    print(f"\n{sum(r.tried for r in results):,} inputs, {total_failed} failures, {time.monotonic() - t0:.0f} s")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
