"""The process the fuzz children are forked from (harness._Server): imports perftriage once, then
for each request line (JSON: argv, work, base, timeout_s, memory_mib) forks one run and answers
with one line saying how it ended."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .harness import execute, warm


def _columnar_from_the_first_byte() -> None:
    """FUZZ_COLUMNAR=1: the CSV readers' large-file paths (polars) for every file, however small,
    so that damaged inputs go through them too."""
    import perftriage.analysis.counters.readers as counters  # noqa: PLC0415
    import perftriage.analysis.spans.span_csv as spans  # noqa: PLC0415
    import perftriage.analysis.threads.series as threads  # noqa: PLC0415

    for module in (counters, spans, threads):
        module.POLARS_FROM_BYTES = 0
    spans.POLARS_BATCH = 7  # several batches of a small file


def main() -> None:
    warm()
    if os.environ.get("FUZZ_COLUMNAR") == "1":
        _columnar_from_the_first_byte()
    for line in sys.stdin:
        req = json.loads(line)
        out = execute(req["argv"], Path(req["work"]), Path(req["base"]), req["timeout_s"], req["memory_mib"])
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
