"""Critical paths across two traced hosts: is a remote database's slow disk found on the web requests' paths?

Two-host samples (``perftriage sample --db-host``: PHP workers on web-01, the database on db-01,
TCP packets with their headers between them) with the cause ``slow_db`` (the database reads
from a slow disk), over several seeds, clock offsets (-40 ms .. +40 ms, far more than a packet's
flight) and drifts (-50 .. +50 ppm). Printed per case and overall:

- packet wake-ups resolved to their sender on the other host (of those the simulator made);
- the clock fit's error at mid-trace against the configured clock, in microseconds;
- recall: slow_db requests whose critical path is BD-dominated with both traces read; the same
  without db-01's trace (the wait is then BN: what a single-host analysis sees);
- precision: of the web-01 requests that are BD-dominated and spent most of their path on db-01,
  the share that are slow_db.

Target: every packet wake-up resolved, clock error below the LAN latency (60 us), recall and
precision >= 95%.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np

from perftriage.analysis.ctf.pipeline import read_once
from perftriage.analysis.execgraph.builder import GraphBuilder
from perftriage.analysis.requests.critical_path import STATES
from perftriage.analysis.requests.features import extract_features
from perftriage.analysis.requests.markers import MarkerRequests
from perftriage.analysis.sim.sample import write_webserver_sample
from perftriage.analysis.sim.webserver import DEFAULT_MIX, WebServerConfig

CASES = [  # (seed, clock offset ms, drift ppm)
    (21, 3.2, 12.0), (22, -40.0, -50.0), (23, 40.0, 50.0), (24, 0.0, 0.0), (25, -0.05, 30.0), (26, 12.5, -20.0),
]


def _case(root: Path, seed: int, offset_ms: float, drift_ppm: float, requests: int) -> dict:
    cfg = WebServerConfig(requests=requests, seed=seed, db_host="db-01", db_clock_offset_ms=offset_ms,
                          db_clock_drift_ppm=drift_ppm, mix={**DEFAULT_MIX, "slow_db": 0.04})
    st = write_webserver_sample(root / f"s{seed}", cfg)
    truth = json.loads((st.out / "ground_truth.json").read_text())
    cause = {r["rid"]: r["cause"] for r in truth["requests"]}
    out = {}
    for name, paths in (("both", [st.out]), ("web", [st.out / "web-01"])):
        builder = GraphBuilder()
        graphs, req = read_once(paths, [builder, MarkerRequests()]).results
        ft = extract_features(graphs, req)
        c = np.array([cause[int(q.rsplit("rid=", 1)[1])] for q in req.fields["querystring"]])
        bd = np.array(STATES)[np.argmax(ft.durations, axis=1)] == "BD"
        slow = c == "slow_db"
        out[name] = {"recall": (int((bd & slow).sum()), int(slow.sum()))}
        if name == "both":
            m = builder.matches
            fit = graphs["web-01"].clocks["db-01"]
            t = int(np.median(req.start))
            want = offset_ms * 1e6 + drift_ppm * 1e-6 * (t - cfg.epoch_ns)
            out["clock_err_us"] = abs(fit.shift(t) - want) / 1e3
            out["wakes"] = (len(m.remote), len(m.remote) + m.unmatched_wakes)
            elsewhere = ft.fields.get("elsewhere_ns", np.zeros(len(ft)))
            remote_bd = bd & (elsewhere > 0.5 * ft.total)
            out["precision"] = (int((remote_bd & slow).sum()), int(remote_bd.sum()))
    return out


def run(quick: bool = False) -> bool:
    t0 = time.perf_counter()
    cases = CASES[:2] if quick else CASES
    requests = 300 if quick else 1500
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed, off, drift in cases:
            rows.append((seed, off, drift, _case(Path(tmp), seed, off, drift, requests)))
    print(f"{len(cases)} two-host samples of {requests:,} requests, {time.perf_counter() - t0:.1f} s")
    print(f"{'seed':>4} {'offset':>9} {'drift':>8} {'wakes resolved':>15} {'clock err':>10} "
          f"{'recall (both)':>14} {'recall (web only)':>18} {'precision':>10}")
    tot = {"wakes": [0, 0], "both": [0, 0], "web": [0, 0], "precision": [0, 0]}
    worst_clock = 0.0
    for seed, off, drift, r in rows:
        for k, v in (("wakes", r["wakes"]), ("both", r["both"]["recall"]), ("web", r["web"]["recall"]),
                     ("precision", r["precision"])):
            tot[k][0] += v[0]
            tot[k][1] += v[1]
        worst_clock = max(worst_clock, r["clock_err_us"])
        f = lambda v: f"{v[0]}/{v[1]}"  # noqa: E731
        print(f"{seed:>4} {off:>+7.2f}ms {drift:>+5.0f}ppm {f(r['wakes']):>15} {r['clock_err_us']:>8.1f}us "
              f"{f(r['both']['recall']):>14} {f(r['web']['recall']):>18} {f(r['precision']):>10}")
    ratio = {k: v[0] / v[1] if v[1] else float("nan") for k, v in tot.items()}
    print(f"overall: packet wake-ups resolved {ratio['wakes']:.1%}; worst clock error {worst_clock:.1f} us; "
          f"slow_db found as BD: {ratio['both']:.1%} with both traces, {ratio['web']:.1%} from web-01 alone; "
          f"precision {ratio['precision']:.1%}")
    ok = (ratio["wakes"] == 1.0 and worst_clock < 60 and ratio["both"] >= 0.95 and ratio["precision"] >= 0.95)
    print(f"target (all wake-ups, clock < 60 us, recall and precision >= 95%): {'met' if ok else 'NOT met'}")
    return ok
