"""Damaged and hostile inputs (issue 18): per class of input, how many were tried and how many ended badly (target: zero).

Each class (fuzzing/strategies.py) starts from inputs perftriage reads well: the real traces in
../shared/real_traces, small documents in every span, counter, rule and thread-metric format,
the command line's numeric options; hypothesis damages them (flipped bytes, cut files, packet
header fields at their extremes, JSON of the wrong shape at any depth, numbers beyond int64,
dates outside 1677-2262, CSV rows cut, repeated or widened, rules of the wrong type) and each
one is run as ``perftriage report`` / ``info`` / ``sample`` in a forked child. A run fails when
it crashes (a signal, a traceback, exit 1), hangs, takes more than 2 GiB, says an error in more
than one line, writes beside its input or leaves ``-o`` half-written or changed after an error.
``make fuzz`` runs thousands (``python -m fuzzing --examples N``).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from fuzzing.campaign import CLASS_NAMES, run_campaign, table_lines


def run(quick: bool = False) -> bool:
    examples = 20 if quick else 150
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="perftriage-eval-fuzz-") as tmp:
        results = run_campaign(CLASS_NAMES, examples, Path(tmp))
    print("\n".join(table_lines(results)))
    failed = sum(r.failed for r in results)
    for r in results:
        for problem, (describe, argv, err) in r.examples.items():
            print(f"  [{r.cls}] {problem}: {describe} ({' '.join(argv)}): {err.strip()[-300:]}")
    print(f"{sum(r.tried for r in results):,} inputs, {failed} failures (target 0), "
          f"{time.perf_counter() - t0:.0f} s; python -m fuzzing --examples N for more")
    return failed == 0
