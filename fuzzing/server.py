"""The process the fuzz children are forked from (harness._Server): imports perftriage once, then
for each request line (JSON: argv, work, base, timeout_s, memory_mib) forks one run and answers
with one line saying how it ended."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .harness import execute, warm


def main() -> None:
    warm()
    for line in sys.stdin:
        req = json.loads(line)
        out = execute(req["argv"], Path(req["work"]), Path(req["base"]), req["timeout_s"], req["memory_mib"])
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
