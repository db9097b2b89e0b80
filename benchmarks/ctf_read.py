"""Reading CTF into columnar chunks (bt2), beside babeltrace2's C core on the same trace, with
the reader's peak memory at two trace sizes (it must not grow with the trace)."""

from __future__ import annotations

from .common import babeltrace2_dummy_seconds, child_peak_rss, row, webserver_trace

CODE = """
import time
from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.spec import ReadSpec
spec = ReadSpec(fields={{'sched_switch': ['prev_tid', 'next_tid', 'prev_state'], 'sched_wak*': ['tid', 'target_cpu'],
                        'syscall_exit_*': ['ret'], 'irq_softirq_*': ['vec'], 'irq_handler_entry': ['irq']}})
t = time.perf_counter()
n = 0
for c in CtfReader([{path!r}], spec).chunks():
    n += len(c)
print(n, time.perf_counter() - t)
"""


def run(quick: bool = False) -> None:
    sizes = [2_000, 4_000] if quick else [25_000, 50_000]
    for requests in sizes:
        path = webserver_trace(requests)
        out, _, rss = child_peak_rss(CODE.format(path=str(path)))
        n, secs = out.split()
        n, secs = int(n), float(secs)
        row(f"{requests:,}-request trace: {n:,} events", f"{secs:.1f} s", f"{n / secs:,.0f} events/s, "
            f"peak RSS {rss / 2**20:,.0f} MiB")
        bt = babeltrace2_dummy_seconds(path)
        if bt is not None:
            row("  babeltrace2 -o dummy, same trace", f"{bt:.1f} s",
                f"{n / bt:,.0f} events/s; ours at {bt / secs:.2f}x its speed")
