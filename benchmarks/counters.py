"""Counters across servers at scale: 500 servers x 200 counters x 2,000 time points.

The samples are made in memory as a reader delivers them (rows of one server at one time, one
column per counter, a few missing, two servers off phase), then: alignment into the cube
("load"), every comparative analysis (server view and time view X for all counters, the dates of
the top servers' divergences), and one counter correlated against all others, on one server and
over the fleet. Targets (issue 8): load + all comparative analyses under 10 s; the correlation of
one counter against all others under 2 s. The over-time detection (beyond PAD, added after
issue 8) is timed apart. Reading a CSV of that size is measured apart, on 5 %
of it, and extrapolated.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from perftriage.analysis.counters.correlation import correlate
from perftriage.analysis.counters.findings import CounterParams, analyse_counters
from perftriage.analysis.counters.over_time import detect_over_time
from perftriage.analysis.counters.params import TimeParams
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.counters.table import Piece, RawCounters, align
from perftriage.analysis.sim.fleet import COUNTERS, FleetConfig, simulate
from perftriage.analysis.units import count_of

from .common import row


def make_raw(S: int, C: int, T: int, seed: int = 1) -> RawCounters:
    cube, _ = simulate(FleetConfig(servers=S, points=T, seed=seed,
                                   incidents={"stuck_rng": {"server": 3, "start": 0.3}}))
    reps = -(-C // cube.shape[1])
    rng = np.random.default_rng(seed)
    big = np.concatenate([cube * (1 + rng.normal(0, 0.01, (1, cube.shape[1], 1))) for _ in range(reps)], axis=1)[:, :C]
    del cube
    names = [f"{COUNTERS[i % len(COUNTERS)]}#{i // len(COUNTERS)}" for i in range(C)]
    times = 1_767_225_600.0 + 300.0 * np.arange(T)
    offs = np.zeros(S)
    offs[:2] = 35.0
    server = np.repeat(np.arange(S, dtype=np.int32), T)
    time_ = (times[None, :] + offs[:, None]).ravel()
    values = big.transpose(0, 2, 1).reshape(S * T, C)  # rows (server, time), counter columns
    del big
    values[rng.random(values.shape) < 0.001] = np.nan
    return RawCounters([f"srv-{i:03d}" for i in range(S)], names,
                       [Piece(server, time_, np.arange(C, dtype=np.int32), values)], "generated")


def run(quick: bool = False) -> None:
    S, C, T = (50, 40, 400) if quick else (500, 200, 2000)
    t0 = time.perf_counter()
    raw = make_raw(S, C, T)
    row(f"{S} servers x {C} counters x {T:,} points", f"{S * C * T / 1e6:,.0f} M samples",
        f"generated in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    cs = align(raw)
    t_load = time.perf_counter() - t0
    del raw
    row("load: alignment into the cube", f"{t_load:.2f} s", "; ".join(cs.notes[-2:]))
    t0 = time.perf_counter()
    ca = analyse_counters(cs, CounterParams(over_time=None), correlations=False)
    t_cmp = time.perf_counter() - t0
    row("comparative analyses: server and time view X of every counter, dates", f"{t_cmp:.2f} s",
        f"{count_of(len(ca.servers), 'deviating servers')}; top {cs.servers[ca.servers[0].server] if ca.servers else '-'}")
    total = t_load + t_cmp
    row("load + all comparative analyses", f"{total:.2f} s", f"target < 10 s: {'met' if total < 10 else 'NOT MET'}")
    # beyond PAD (issue 8's target predates it): every series against its history and its peers
    t0 = time.perf_counter()
    ot = detect_over_time(cs, TimeParams(), ca.peers)
    t_ot = time.perf_counter() - t0
    row("over time: every series against its history and its peers", f"{t_ot:.2f} s",
        f"{len(ot.intervals)} intervals, {len(ot.changes)} level changes; {S * C * T / t_ot / 1e6:.1f} M samples/s; "
        f"the default report runs both ({t_cmp + t_ot:.0f} s)")
    # what the level changes cost (TimeParams.sustained), side by side
    t0 = time.perf_counter()
    detect_over_time(cs, TimeParams(sustained=False), ca.peers)
    t_plain = time.perf_counter() - t0
    row("over time without level changes", f"{t_plain:.2f} s", f"level changes cost {t_ot / t_plain:.2f}x")
    c = 0
    for scope, server in (("one server", 3), ("the fleet", None)):
        t0 = time.perf_counter()
        r = correlate(cs, c, server)
        dt = time.perf_counter() - t0
        row(f"correlation of one counter against {C - 1} others, {scope}", f"{dt:.2f} s",
            f"{len(r.strong())} at |r| >= 0.9; {r.cells:,} samples; target < 2 s: {'met' if dt < 2 else 'NOT MET'}"
            + (f"; {r.notes[0]}" if r.notes else ""))
    # CSV reading, on a slice
    n_srv = max(2, S // 20)
    sub = cs.values[:n_srv]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "counters.csv")
        with open(path, "w") as f:
            f.write("time,server," + ",".join(cs.counters) + "\n")
            times = cs.times
            for s in range(n_srv):
                block = np.column_stack([times, sub[s].T])
                lines = [f"{r[0]:.0f},{cs.servers[s]}," + ",".join(f"{v:.6g}" for v in r[1:]) for r in block]
                f.write("\n".join(lines) + "\n")
        mb = os.path.getsize(path) / 1e6
        t0 = time.perf_counter()
        load_counters([path])
        dt = time.perf_counter() - t0
    row(f"reading a wide CSV ({n_srv} servers, {mb:.0f} MB)", f"{dt:.2f} s",
        f"{mb / dt:.0f} MB/s; the whole {S}-server CSV (~{mb * S / n_srv / 1000:.1f} GB) would take "
        f"~{dt * S / n_srv:.0f} s")
    # the long form (time, server, counter, value) of part of it: a row a sample
    n_c = max(2, C // 10)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "long.csv")
        with open(path, "w") as f:
            f.write("time,server,counter,value\n")
            for s in range(n_srv):
                for c in range(n_c):
                    f.write("".join(f"{t:.0f},{cs.servers[s]},{cs.counters[c]},{v:.6g}\n"
                                    for t, v in zip(cs.times, sub[s, c])))
        mb = os.path.getsize(path) / 1e6
        t0 = time.perf_counter()
        load_counters([path])
        dt = time.perf_counter() - t0
    row(f"reading a long CSV ({n_srv} servers x {n_c} counters, a row a sample, {mb:.0f} MB)", f"{dt:.2f} s",
        f"{mb / dt:.0f} MB/s")
    sadf_read(quick)
    influx_read(quick)
    long_csv_report(quick)


def sadf_read(quick: bool = False) -> None:
    """sadf -d exports (sadf.py) as a fleet keeps them, at one second: the committed recording's
    sections (tests/data/sadf, CPU, memory, load, I/O, 3 interfaces, a disk) over hours. The rows
    go to flat arrays of numbers, a time stamp parsed once (a first version held every row as a
    list of its cells: 1.07 s and 235 MB for 180,000 rows, 0.35 s and 63 MB after)."""
    import gzip  # noqa: PLC0415
    from datetime import datetime, timedelta  # noqa: PLC0415

    from .common import ROOT, child_peak_rss  # noqa: PLC0415

    seconds = 2_000 if quick else 20_000
    src = gzip.decompress((ROOT / "tests" / "data" / "sadf" / "web-03.csv.gz").read_bytes()).decode().split("\n")
    sections, cur = [], None
    for ln in src:
        if ln.startswith("#"):
            cur = (ln, [])
            sections.append(cur)
        elif ln.strip():
            cur[1].append(ln.split(";"))
    t0 = datetime(2026, 11, 27)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "web-03.csv")
        n = 0
        with open(path, "w") as f:
            for head, rows in sections:
                first = [r for r in rows if r[2] == rows[0][2]]  # one time's rows (one per instance)
                f.write(head + "\n")
                for k in range(seconds):
                    stamp = (t0 + timedelta(seconds=k)).strftime("%Y-%m-%d %H:%M:%S UTC")
                    f.write("".join(";".join([r[0], r[1], stamp, *r[3:]]) + "\n" for r in first))
                    n += len(first)
        mb = os.path.getsize(path) / 1e6
        out, dt, peak = child_peak_rss("from perftriage.analysis.counters.readers import load_counters\n"
                                       f"cs = load_counters([{path!r}])\nprint(*cs.values.shape)")
    row(f"reading a sadf -d export ({seconds:,} s at one second, {n:,} rows, {mb:.0f} MB)", f"{dt:.2f} s",
        f"cube {out.strip()} (servers counters points); peak {peak / 2**20:.0f} MiB in its own interpreter")


def influx_read(quick: bool = False) -> None:
    """Telegraf's metrics of a day of 40 hosts every 10 s as InfluxDB gives them: line protocol
    (Telegraf's file output, an export: cpu, net per interface, system with a string field; 4
    lines a host a sample) and a Flux query's CSV (a row a value, annotated), each read in its own
    interpreter: time, peak memory, lines or rows a second."""
    from fuzzing.strategies import csv_bytes, flux_rows, line_protocol_lines  # noqa: PLC0415

    from .common import child_peak_rss  # noqa: PLC0415

    servers, samples = 40, 864 if quick else 8_640
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "telegraf.out")
        lines = line_protocol_lines(servers=servers, samples=samples)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        mb = os.path.getsize(path) / 1e6
        out, dt, peak = child_peak_rss("from perftriage.analysis.counters.readers import load_counters\n"
                                       f"cs = load_counters([{path!r}])\nprint(*cs.values.shape)")
        row(f"reading line protocol ({servers} hosts x {samples:,} samples, {len(lines):,} lines, {mb:.0f} MB)",
            f"{dt:.2f} s", f"{len(lines) / dt:,.0f} lines/s; cube {out.strip()}; peak {peak / 2**20:,.0f} MiB")
        del lines
        path = os.path.join(d, "flux.csv")
        rows = flux_rows(servers=servers, samples=samples)
        with open(path, "wb") as f:
            f.write(csv_bytes(rows))
        mb = os.path.getsize(path) / 1e6
        out, dt, peak = child_peak_rss("from perftriage.analysis.counters.readers import load_counters\n"
                                       f"cs = load_counters([{path!r}])\nprint(*cs.values.shape)")
        row(f"reading a Flux result's CSV ({len(rows):,} rows, {mb:.0f} MB)", f"{dt:.2f} s",
            f"{len(rows) / dt:,.0f} rows/s; cube {out.strip()}; peak {peak / 2**20:,.0f} MiB")


def long_csv_report(quick: bool = False) -> None:
    """The shape of real fleet exports (issue 17): tens of servers, tens of counters, thousands of
    points in one long CSV of about 150 MB, through ``perftriage report`` (reading, every view,
    the over-time detection, the findings), whole process: time and peak memory. Target: under
    10 s and 1 GB."""
    from .common import child_peak_rss  # noqa: PLC0415

    S, C, T = (10, 10, 2000) if quick else (40, 40, 11200)
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "long.csv")
        base = rng.uniform(10, 1000, (S, C))
        with open(path, "w") as f:
            f.write("timestamp,server," + ",".join(f"counter_{c}" for c in range(C)) + "\n")
            for k in range(T):
                vals = base * (1 + 0.1 * np.sin(2 * np.pi * k / 288)) + rng.normal(0, 5, (S, C))
                f.write("\n".join(f"{1_700_000_000 + 60 * k},srv-{s:02d}," + ",".join(f"{v:.3f}" for v in vals[s])
                                  for s in range(S)) + "\n")
        mb = os.path.getsize(path) / 1e6
        code = ("from perftriage.cli.main import main\nimport sys\n"
                f"sys.argv = ['perftriage', 'report', {path!r}, '-q', '-o', {os.devnull!r}]\nmain()")
        _, dt, peak = child_peak_rss(code)
        ok = dt < 10 and peak < 1 << 30
        row(f"perftriage report on one fleet CSV ({S} servers x {C} counters x {T:,} points, {mb:.0f} MB)",
            f"{dt:.2f} s", f"peak {peak / 2**20:,.0f} MiB; target < 10 s and < 1 GB: {'met' if ok else 'NOT MET'}")
