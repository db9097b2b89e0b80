"""Writing simulated CTF: events/s written, beside babeltrace2's C reading speed of the same trace.

Target (issue 3): at least 500,000 events/s written, so that a 10-million-event trace takes well
under a minute.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from perftriage.analysis.sim.sample import write_webserver_sample
from perftriage.analysis.sim.webserver import WebServerConfig

from .common import babeltrace2_dummy_seconds, row


def run(quick: bool = False) -> None:
    requests = 2_000 if quick else 50_000
    tmp = Path(tempfile.mkdtemp(prefix="perftriage-bench-"))
    try:
        st = write_webserver_sample(tmp / "t", WebServerConfig(requests=requests, seed=5))
        total = st.simulate_s + st.write_s
        row(f"trace: {requests:,} requests", f"{st.events:,} events", f"{st.bytes / 1e6:,.0f} MB")
        row("simulation", f"{st.simulate_s:.1f} s", f"{st.events / st.simulate_s:,.0f} events/s")
        row("CTF writing (encode + write)", f"{st.write_s:.1f} s", f"{st.events / st.write_s:,.0f} events/s written")
        row("total (simulate + write)", f"{total:.1f} s",
            f"{total * 10e6 / st.events:.0f} s for 10 M events at this rate")
        bt = babeltrace2_dummy_seconds(tmp / "t")
        if bt is not None:
            row("babeltrace2 -o dummy on the same trace", f"{bt:.1f} s", f"{st.events / bt:,.0f} events/s read")
            row("ratio: our writing / babeltrace2 reading", f"{(st.events / st.write_s) / (st.events / bt):.2f}")
        ok = st.events / st.write_s >= 500_000
        row("target >= 500,000 events/s written", "met" if ok else "NOT MET")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
