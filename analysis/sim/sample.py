"""``perftriage sample``: simulate the web server and write it as an LTTng session folder.

Layout (as ``lttng`` writes a session with a kernel and a per-UID user-space channel)::

    OUT/kernel/metadata, OUT/kernel/channel0_<cpu>
    OUT/ust/uid/1000/64-bit/metadata, .../channel0_<cpu>
    OUT/ground_truth.json        per request: cause, injected parameters; the seed and config

With a database host (``db_host``): OUT/<web host>/{kernel,ust/...}, OUT/<db host>/kernel
(its clock off by the configured offset and drift), OUT/ground_truth.json.

The folder is built under a temporary name beside OUT and renamed into place at the end, and an
existing non-empty OUT is never touched.
"""

from __future__ import annotations

import json
import os
import time
import uuid as _uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perftriage.analysis.atomic import new_folder
from perftriage.analysis.ctf.writer import CtfWriter, TraceDef

from .catalog import ALL_CLASSES, CODE, KERNEL_CLASSES, UST_CLASSES, UST_CONTEXT, UST_CONTEXT_SLOTS, unpack_tcp_header
from .webserver import DEFAULT_MIX, WebServerConfig, WebServerSim


@dataclass
class SampleStats:
    out: Path
    events: int
    kernel_events: int
    ust_events: int
    requests: int
    bytes: int
    simulate_s: float
    write_s: float
    causes: dict
    records: np.ndarray | None = None  # every simulated event (keep_records=True), for checks
    strings: list | None = None


def _columns(recs: np.ndarray, classes, class_codes: np.ndarray, context=None) -> dict[str, np.ndarray]:
    """Writer columns (field name -> values aligned with recs) from simulation records."""
    n = len(recs)
    cols: dict[str, np.ndarray] = {}
    if context:
        for name, slot in context.items():
            cols[name] = recs[:, 3 + slot].copy()
    for local, sc in enumerate(classes):
        rows = np.flatnonzero(class_codes == local)
        if not len(rows):
            continue
        for name, _kind, src in sc.fields:
            col = cols.get(name)
            if col is None:
                col = cols[name] = np.zeros(n, np.int64)
            if isinstance(src, int):
                col[rows] = recs[rows, 3 + src]
            elif src[0] == "const":
                col[rows] = src[1]
            elif src[0] == "net":
                slots = [recs[rows, 3 + src[1] + i] for i in range(4)]
                for k, v in unpack_tcp_header(*slots).items():
                    cols.setdefault(k, np.zeros(n, np.int64))[rows] = v
            else:  # ("same", other)
                col[rows] = cols[src[1]][rows]
    return cols


class _TraceOut:
    def __init__(self, path: Path, trace: TraceDef, classes, strings, context=None):
        self.writer = CtfWriter(path, trace, strings)
        self.classes = classes
        self.local = np.full(len(ALL_CLASSES), -1, np.int64)
        for i, sc in enumerate(classes):
            self.local[CODE[sc.name]] = i
        self.context = context

    def write(self, recs: np.ndarray, ncpus: int) -> None:
        mine = recs[self.local[recs[:, 2]] >= 0]
        for cpu in range(ncpus):
            r = mine[mine[:, 1] == cpu]
            if len(r):
                local = self.local[r[:, 2]]
                self.writer.write(cpu, r[:, 0], local, _columns(r, self.classes, local, self.context))


def db_clock(ts: np.ndarray, base: int, cfg: WebServerConfig) -> np.ndarray:
    """The database host's clock at web-host times ``ts``: offset and drift from the config."""
    off = int(round(cfg.db_clock_offset_ms * 1e6))
    return ts + off + np.round((ts - base) * (cfg.db_clock_drift_ppm * 1e-6)).astype(np.int64)


def write_webserver_sample(out: str | os.PathLike, cfg: WebServerConfig, progress=None,
                           keep_records: bool = False) -> SampleStats:
    out = Path(out)
    with new_folder(out) as tmp:
        return _write(tmp, out, cfg, progress, keep_records)


def write_host_pairs(out: str | os.PathLike, pairs: int, requests: int, seed: int = 40) -> list[SampleStats]:
    """A fleet of ``2 * pairs`` traced hosts: pair i (1..pairs) is a web host web-0i and its
    database host db-0i (OUT/pair-i/{web-0i,db-0i}, a ground_truth.json per pair), on a subnet
    of its own, the database's clock off by 3i ms and 5i ppm, slow_db at 4%."""
    out = Path(out)
    with new_folder(out) as tmp:
        stats = []
        for i in range(1, pairs + 1):
            cfg = WebServerConfig(requests=requests, seed=seed + i, hostname=f"web-{i:02d}", db_host=f"db-{i:02d}",
                                  subnet=10 + i, db_clock_offset_ms=3.0 * i, db_clock_drift_ppm=5.0 * i,
                                  mix={**DEFAULT_MIX, "slow_db": 0.04})
            (tmp / f"pair-{i}").mkdir()
            stats.append(_write(tmp / f"pair-{i}", out / f"pair-{i}", cfg, None, False))
        return stats


def _write(tmp: Path, out: Path, cfg: WebServerConfig, progress, keep_records: bool) -> SampleStats:
    t0 = time.perf_counter()
    model = WebServerSim(cfg)
    clock_uuid, kuuid, uuuid = model.trace_uuids()
    strings = model.sim.strings
    offset = model.base - 1_000_000_000  # clock value 0 one second before the simulation starts
    kdef = TraceDef("kernel", cfg.hostname, [c.defn for c in KERNEL_CLASSES], offset, clock_uuid, kuuid)
    udef = TraceDef("ust", cfg.hostname, [c.defn for c in UST_CLASSES], offset, clock_uuid, uuuid,
                    context=UST_CONTEXT)
    web = tmp / cfg.hostname if cfg.db_host else tmp  # two hosts: a folder per host
    kout = _TraceOut(web / "kernel", kdef, KERNEL_CLASSES, strings)
    uout = _TraceOut(web / "ust" / "uid" / "1000" / "64-bit", udef, UST_CLASSES, strings, UST_CONTEXT_SLOTS)
    dbout = None
    if cfg.db_host:  # the database host: its own clock (another machine), its own trace
        r = np.random.default_rng([cfg.seed, 0xDB])
        ddef = TraceDef("kernel", cfg.db_host, [c.defn for c in KERNEL_CLASSES], offset,
                        str(_uuid.UUID(bytes=r.bytes(16), version=4)), str(_uuid.UUID(bytes=r.bytes(16), version=4)))
        dbout = _TraceOut(tmp / cfg.db_host / "kernel", ddef, KERNEL_CLASSES, strings)
    write_s = 0.0
    total = 0
    kept: list[np.ndarray] = []

    def flush(recs: np.ndarray) -> None:
        nonlocal write_s, total
        w0 = time.perf_counter()
        recs = recs.copy()
        recs[:, 0] += model.base
        kout.write(recs, cfg.cpus)
        uout.write(recs, cfg.cpus)
        if dbout is not None:
            db = recs[recs[:, 1] >= cfg.cpus]
            db[:, 1] -= cfg.cpus
            db[:, 0] = db_clock(db[:, 0], model.base, cfg)
            dbout.write(db, cfg.db_cpus)
        write_s += time.perf_counter() - w0
        total += len(recs)
        if keep_records:
            kept.append(recs)
        if progress is not None:
            progress(model.done, len(model.requests), total)

    model.run(flush=flush)
    kout.writer.close()
    uout.writer.close()
    if dbout is not None:
        dbout.writer.close()
    truth = model.ground_truth()
    (tmp / "ground_truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    elapsed = time.perf_counter() - t0
    causes: dict[str, int] = {}
    for r in truth["requests"]:
        causes[r["cause"]] = causes.get(r["cause"], 0) + 1
    return SampleStats(
        out=out,
        events=total,
        kernel_events=kout.writer.events_written + (dbout.writer.events_written if dbout else 0),
        ust_events=uout.writer.events_written,
        requests=len(truth["requests"]),
        bytes=kout.writer.bytes_written + uout.writer.bytes_written + (dbout.writer.bytes_written if dbout else 0),
        simulate_s=elapsed - write_s,
        write_s=write_s,
        causes=dict(sorted(causes.items())),
        records=np.concatenate(kept) if keep_records and kept else None,
        strings=list(strings) if keep_records else None,
    )
