"""A fleet of actor-system servers (Orleans-like, the system of paper 004) with its performance
counters, and the paper's incidents injected by parameter: the ground truth for PAD's analyses.

The model, per 5-minute interval (all servers share one load curve: a day's swing plus noise):

- new actors arrive with the load and are *placed* on a random server (multinomial shares);
  each lives a while (exponential), so every server holds about the same number of actors;
- requests follow the actors a server holds; CPU, scheduler and message queues, latency follow
  the server's utilisation (queues and latency grow as 1 / (1 - u));
- messages: requests fan out to other servers (sent here, received by others) and to storage;
- the grain directory is a DHT: each server owns a partition of it and receives the remote
  registrations and lookups of the actors hashed to it (about 1 / servers of them);
- memory: a base, a share per actor, the message buffer pool in use; garbage-collection time
  grows with memory pressure and lengthens latency.

Each server has its own small, lasting bias (hardware, placement luck) and its own noise; about
0.5 % of samples are missing; two servers sample 30-40 s off the others' phase.

Incidents (any combination, each with a start):

- ``stuck_rng``: the placement's random generator gets stuck on one server: from the start
  every new actor goes there (the paper's section III.A): its actors, requests, CPU, queues,
  latency, directory registrations grow more and more;
- ``buffer_leak``: the message buffer pool leaks on every server from the start (section III.B):
  buffers in use grow with traffic, available memory shrinks, GC time and latency grow together;
- ``hot_partition``: one server's DHT partition turns hot (a popular key range): its remote
  lookups and registrations, received messages and CPU jump.

``ground_truth.json`` names for each incident the server(s), the counters it moves and the
start (time and grid index).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from perftriage.analysis.atomic import new_folder
from perftriage.analysis.counters.table import CounterSet

INCIDENTS = ("stuck_rng", "buffer_leak", "hot_partition")

COUNTERS = (
    "Runtime.CPU.Percent", "Runtime.GC.PercentOfTimeInGC", "Runtime.GC.Gen0PerMin", "Runtime.GC.Gen2PerMin",
    "Runtime.Memory.AvailableMB", "Runtime.Memory.PrivateMB", "Runtime.Memory.WorkingSetMB", "Runtime.Memory.HeapMB",
    "Runtime.ThreadPool.Threads", "Runtime.Handles",
    "Messaging.Sent.PerMin", "Messaging.Received.PerMin", "Messaging.Sent.KBPerMin", "Messaging.Received.KBPerMin",
    "Messaging.Dropped.PerMin", "MessageQueue.Send.Length", "MessageQueue.Receive.Length",
    "MessageQueue.NumQueuedMsgs", "Scheduler.QueueLength", "Scheduler.WorkItemsPerMin",
    "Actors.Count", "Actors.ActivationsPerMin", "Actors.DeactivationsPerMin", "Actors.PlacedPerMin",
    "Directory.Registrations.Local.PerMin", "Directory.Registrations.Remote.PerMin",
    "Directory.Lookups.Local.PerMin", "Directory.Lookups.Remote.PerMin", "Directory.CacheHitRatio",
    "Directory.PartitionSize",
    "Requests.PerMin", "Requests.Failed.PerMin", "Requests.TimedOut.PerMin", "Requests.Latency.P50ms",
    "Requests.Latency.P99ms", "Gateway.Clients", "Gateway.Received.PerMin", "Timers.Active", "Reminders.Active",
    "Storage.Reads.PerMin", "Storage.Writes.PerMin", "Storage.Latency.ms", "Network.KBIn.PerMin",
    "Network.KBOut.PerMin", "Network.Connections", "Disk.ReadKB.PerMin", "Disk.WriteKB.PerMin",
    "BufferPool.InUse", "BufferPool.Allocated", "Exceptions.PerMin",
)

# the counters each incident moves (the ground truth an analysis should point at)
AFFECTED = {
    "stuck_rng": ("Actors.Count", "Actors.PlacedPerMin", "Actors.ActivationsPerMin", "Actors.DeactivationsPerMin",
                  "Requests.PerMin", "Runtime.CPU.Percent", "Messaging.Sent.PerMin", "Messaging.Received.PerMin",
                  "Messaging.Sent.KBPerMin", "Messaging.Received.KBPerMin", "MessageQueue.Send.Length",
                  "MessageQueue.Receive.Length", "MessageQueue.NumQueuedMsgs", "Scheduler.QueueLength",
                  "Scheduler.WorkItemsPerMin", "Requests.Latency.P50ms", "Requests.Latency.P99ms",
                  "Directory.Registrations.Local.PerMin", "Directory.Lookups.Local.PerMin", "Timers.Active",
                  "Reminders.Active", "Storage.Reads.PerMin", "Storage.Writes.PerMin", "Network.KBIn.PerMin",
                  "Network.KBOut.PerMin", "Runtime.Memory.PrivateMB", "Runtime.Memory.WorkingSetMB",
                  "Runtime.Memory.HeapMB", "Runtime.Memory.AvailableMB", "Requests.Failed.PerMin",
                  "Requests.TimedOut.PerMin", "Runtime.ThreadPool.Threads", "Exceptions.PerMin",
                  "Gateway.Received.PerMin", "BufferPool.InUse", "Runtime.GC.Gen0PerMin"),
    "buffer_leak": ("BufferPool.InUse", "BufferPool.Allocated", "Runtime.Memory.AvailableMB",
                    "Runtime.Memory.PrivateMB", "Runtime.Memory.WorkingSetMB", "Runtime.Memory.HeapMB",
                    "Runtime.GC.PercentOfTimeInGC", "Runtime.GC.Gen2PerMin", "Runtime.GC.Gen0PerMin",
                    "Requests.Latency.P50ms", "Requests.Latency.P99ms", "Requests.TimedOut.PerMin",
                    "Requests.Failed.PerMin", "MessageQueue.NumQueuedMsgs", "MessageQueue.Receive.Length",
                    "MessageQueue.Send.Length", "Scheduler.QueueLength", "Exceptions.PerMin",
                    "Runtime.CPU.Percent"),
    "hot_partition": ("Directory.Lookups.Remote.PerMin", "Directory.Registrations.Remote.PerMin",
                      "Directory.PartitionSize", "Messaging.Received.PerMin", "Messaging.Received.KBPerMin",
                      "Messaging.Sent.PerMin", "Messaging.Sent.KBPerMin", "Network.KBIn.PerMin",
                      "Network.KBOut.PerMin", "Runtime.CPU.Percent", "MessageQueue.Receive.Length",
                      "MessageQueue.NumQueuedMsgs", "Scheduler.QueueLength", "Scheduler.WorkItemsPerMin",
                      "Requests.Latency.P50ms", "Requests.Latency.P99ms", "Directory.CacheHitRatio"),
}


@dataclass
class FleetConfig:
    servers: int = 25
    points: int = 288  # a day at 5 minutes
    interval_s: float = 300.0
    seed: int = 1
    incidents: dict = field(default_factory=dict)  # kind -> {"start": fraction of the run, "server": index}
    start_time_s: float = 1_767_225_600.0
    missing: float = 0.005
    offset_servers: int = 2

    def validate(self) -> None:
        if self.servers < 3 or self.points < 20:
            raise ValueError("a fleet needs at least 3 servers and 20 points")
        for k, v in self.incidents.items():
            if k not in INCIDENTS:
                raise ValueError(f"unknown incident {k!r}; known: {', '.join(INCIDENTS)}")
            if not 0 <= float(v.get("start", 0.3)) < 1:
                raise ValueError(f"{k}: start is a fraction of the run, in [0, 1)")
            if not 0 <= int(v.get("server", 0)) < self.servers:
                raise ValueError(f"{k}: server must be within 0..{self.servers - 1}")


def random_incidents(rng: np.random.Generator, servers: int, kinds=INCIDENTS) -> dict:
    """Each kind once, on a random server, starting between 20 % and 45 % of the run."""
    return {k: {"start": float(rng.uniform(0.2, 0.45)), "server": int(rng.integers(servers))} for k in kinds}


def _ar1(rng, shape, phi, sd):
    shape = (shape,) if isinstance(shape, int) else shape
    e = rng.normal(0, sd, shape)
    out = np.empty(shape)
    out[..., 0] = e[..., 0]
    for t in range(1, shape[-1]):
        out[..., t] = phi * out[..., t - 1] + e[..., t]
    return out


def simulate(cfg: FleetConfig) -> tuple[np.ndarray, dict]:
    """(servers, counters, points) values and the ground truth."""
    cfg.validate()
    rng = np.random.default_rng(cfg.seed)
    S, T = cfg.servers, cfg.points
    t = np.arange(T)
    day = T * cfg.interval_s / 86400.0
    phase = rng.uniform(0, 2 * np.pi)
    load = 1.0 + 0.25 * np.sin(2 * np.pi * t / max(T / max(day, 1e-9), 1) + phase) + _ar1(rng, T, 0.9, 0.02)
    load = np.clip(load, 0.3, None)
    bias = 1 + rng.normal(0, 0.03, S)  # each server's lasting difference
    inc = {k: dict(v) for k, v in cfg.incidents.items()}
    starts = {k: int(round(float(v.get("start", 0.3)) * T)) for k, v in inc.items()}
    # -- placement and actors
    new_total = 400 * load * (1 + rng.normal(0, 0.02, T))
    share = rng.dirichlet(np.full(S, 400.0), T).T  # (S, T) random placement
    if "stuck_rng" in inc:
        k, t0 = int(inc["stuck_rng"].get("server", 0)), starts["stuck_rng"]
        share[:, t0:] = 0.0
        share[k, t0:] = 1.0
    placed = rng.poisson(np.clip(share * new_total, 0, None)).astype(float)
    life = 0.02
    actors = np.empty((S, T))
    a = np.full(S, 400 / life / S) * bias
    for i in range(T):
        a = a * (1 - life) + placed[:, i]
        actors[:, i] = a
    deact = actors * life * (1 + rng.normal(0, 0.03, (S, T)))
    # -- requests, utilisation
    req = actors * 0.6 * load * (1 + _ar1(rng, (S, T), 0.7, 0.03))
    cap = 0.6 * (400 / life / S) * 1.25 / 0.55  # a normal server runs at about 55 % utilisation
    u = req / cap
    # hot DHT partition: extra directory traffic handled on one server
    hot = np.zeros((S, T))
    if "hot_partition" in inc:
        k, t0 = int(inc["hot_partition"].get("server", 0)), starts["hot_partition"]
        hot[k, t0:] = 1.0
    dir_remote_lookups = (req.sum(0) / S) * 0.8 * (1 + 4.0 * hot) * (1 + rng.normal(0, 0.04, (S, T)))
    u = u + 0.25 * hot * load
    # buffer pool leak: buffers not returned, growing with traffic
    leak_mb = np.zeros((S, T))
    if "buffer_leak" in inc:
        t0 = starts["buffer_leak"]
        per_msg = rng.uniform(0.9, 1.1, S)[:, None] * 5e-3
        leak_mb[:, t0:] = np.cumsum(req[:, t0:] * 2.5 * per_msg * cfg.interval_s / 60, axis=1)
    total_mb = 16384.0
    used = 2500 + actors * 0.35 + 400 * load + leak_mb + _ar1(rng, (S, T), 0.8, 40)
    pressure = np.clip(used / total_mb, 0, 0.99)
    gc = np.clip(2 + 60 * pressure ** 3 + rng.normal(0, 0.4, (S, T)), 0, 100)
    uu = np.clip(u * (1 + gc / 100), 0, 0.97)
    cpu = np.clip(100 * (0.05 + 0.9 * uu) + rng.normal(0, 1.5, (S, T)), 0, 100)
    queue = uu / (1 - uu)
    lat50 = 4.0 / (1 - uu) * (1 + gc / 50) * (1 + rng.normal(0, 0.05, (S, T)))
    lat99 = lat50 * (3.0 + rng.normal(0, 0.15, (S, T)))
    # the share of requests timing out rises with the tail latency, at most half of them (the
    # exponential alone gave 1e18 timeouts a minute at 1 s of p99)
    timeout = req * np.clip(1e-4 * np.exp(np.minimum((lat99 - 40) / 25, 50)), 0, 0.5)
    sent = req * 2.5 * (1 + rng.normal(0, 0.02, (S, T)))
    received = sent.sum(0) / S * (1 + rng.normal(0, 0.02, (S, T))) + dir_remote_lookups * 0.5
    buffers = 2000 + sent * 0.05 + leak_mb * 8
    values = {
        "Runtime.CPU.Percent": cpu,
        "Runtime.GC.PercentOfTimeInGC": gc,
        "Runtime.GC.Gen0PerMin": rng.poisson(np.clip(req / 300 * (1 + pressure), 0, None)).astype(float),
        "Runtime.GC.Gen2PerMin": rng.poisson(np.clip(0.2 + 20 * pressure ** 4, 0, None)).astype(float),
        "Runtime.Memory.AvailableMB": total_mb - used,
        "Runtime.Memory.PrivateMB": used * 0.92,
        "Runtime.Memory.WorkingSetMB": used * 0.85 + rng.normal(0, 20, (S, T)),
        "Runtime.Memory.HeapMB": used * 0.7 + _ar1(rng, (S, T), 0.5, 30),
        "Runtime.ThreadPool.Threads": np.round(40 + 20 * uu + rng.normal(0, 1.5, (S, T))),
        "Runtime.Handles": np.round(1800 + rng.normal(0, 25, (S, T))),
        "Messaging.Sent.PerMin": sent,
        "Messaging.Received.PerMin": received,
        "Messaging.Sent.KBPerMin": sent * 1.4 * (1 + rng.normal(0, 0.03, (S, T))),
        "Messaging.Received.KBPerMin": received * 1.4 * (1 + rng.normal(0, 0.03, (S, T))),
        "Messaging.Dropped.PerMin": rng.poisson(np.full((S, T), 0.3)).astype(float),
        "MessageQueue.Send.Length": rng.poisson(np.clip(queue * 1.2, 0, None)).astype(float),
        "MessageQueue.Receive.Length": rng.poisson(np.clip(queue * 1.5, 0, None)).astype(float),
        "MessageQueue.NumQueuedMsgs": rng.poisson(np.clip(queue * 2.7, 0, None)).astype(float),
        "Scheduler.QueueLength": rng.poisson(np.clip(queue * 3, 0, None)).astype(float),
        "Scheduler.WorkItemsPerMin": (req + received) * (1 + rng.normal(0, 0.02, (S, T))),
        "Actors.Count": np.round(actors),
        "Actors.ActivationsPerMin": placed * 1.05 + rng.normal(0, 2, (S, T)),
        "Actors.DeactivationsPerMin": deact,
        "Actors.PlacedPerMin": placed,
        "Directory.Registrations.Local.PerMin": placed / S * (1 + rng.normal(0, 0.05, (S, T))),
        "Directory.Registrations.Remote.PerMin": (new_total / S) * (1 + 4.0 * hot) * (1 + rng.normal(0, 0.05, (S, T))),
        "Directory.Lookups.Local.PerMin": req * 0.2 / S * (1 + rng.normal(0, 0.05, (S, T))),
        "Directory.Lookups.Remote.PerMin": dir_remote_lookups,
        "Directory.CacheHitRatio": np.clip(0.93 - 0.05 * hot + rng.normal(0, 0.005, (S, T)), 0, 1),
        "Directory.PartitionSize": np.round(actors.sum(0) / S * (1 + 1.5 * hot) + rng.normal(0, 30, (S, T))),
        "Requests.PerMin": req,
        "Requests.Failed.PerMin": rng.poisson(np.clip(req * 2e-4 + timeout, 0, None)).astype(float),
        "Requests.TimedOut.PerMin": rng.poisson(np.clip(timeout, 0, None)).astype(float),
        "Requests.Latency.P50ms": lat50,
        "Requests.Latency.P99ms": lat99,
        "Gateway.Clients": np.round(120 + rng.normal(0, 4, (S, T))),
        "Gateway.Received.PerMin": req * 0.3 * (1 + rng.normal(0, 0.03, (S, T))),
        "Timers.Active": np.round(actors * 0.5 + rng.normal(0, 10, (S, T))),
        "Reminders.Active": np.round(actors * 0.05 + rng.normal(0, 3, (S, T))),
        "Storage.Reads.PerMin": req * 0.3 * (1 + rng.normal(0, 0.04, (S, T))),
        "Storage.Writes.PerMin": req * 0.1 * (1 + rng.normal(0, 0.04, (S, T))),
        "Storage.Latency.ms": 8 + _ar1(rng, (S, T), 0.6, 0.6),
        "Network.KBIn.PerMin": received * 1.5 + req * 0.4,
        "Network.KBOut.PerMin": sent * 1.5 + req * 0.5,
        "Network.Connections": np.round(S * 2 + 120 + rng.normal(0, 2, (S, T))),
        "Disk.ReadKB.PerMin": np.abs(300 + _ar1(rng, (S, T), 0.7, 40)),
        "Disk.WriteKB.PerMin": np.abs(900 + _ar1(rng, (S, T), 0.7, 80)),
        "BufferPool.InUse": buffers,
        "BufferPool.Allocated": buffers * 1.2 + np.abs(_ar1(rng, (S, T), 0.8, 60)),
        "Exceptions.PerMin": rng.poisson(np.clip(1 + timeout * 2, 0, None)).astype(float),
    }
    cube = np.stack([values[c] for c in COUNTERS], axis=1)
    truth = {"generator": "perftriage sample fleet", "config": asdict(cfg), "interval_s": cfg.interval_s,
             "incidents": []}
    for kind, v in inc.items():
        t0 = starts[kind]
        servers = list(range(S)) if kind == "buffer_leak" else [int(v.get("server", 0))]
        truth["incidents"].append({
            "kind": kind, "servers": [f"silo-{s + 1:02d}" for s in servers], "counters": list(AFFECTED[kind]),
            "start_index": t0, "start_time": cfg.start_time_s + t0 * cfg.interval_s,
        })
    return cube, truth


def server_names(n: int) -> list[str]:
    return [f"silo-{s + 1:02d}" for s in range(n)]


def fleet_counters(cfg: FleetConfig) -> tuple[CounterSet, dict]:
    """The fleet as an aligned counter set (no missing samples, no clock offsets)."""
    cube, truth = simulate(cfg)
    cs = CounterSet(server_names(cfg.servers), list(COUNTERS), cfg.start_time_s, cfg.interval_s, cube, "generated")
    return cs, truth


def write_fleet_sample(out: str | os.PathLike, cfg: FleetConfig) -> dict:
    """counters.csv (wide: time, server, one column per counter), ground_truth.json, rules.toml."""
    cube, truth = simulate(cfg)
    rng = np.random.default_rng([cfg.seed, 7])
    S, C, T = cube.shape
    names = server_names(S)
    offsets = np.zeros(S)
    if cfg.offset_servers:
        offsets[rng.choice(S, min(cfg.offset_servers, S), replace=False)] = rng.uniform(30, 40, min(cfg.offset_servers, S))
    missing = rng.random((S, C, T)) < cfg.missing
    out = Path(out)
    with new_folder(out) as tmp:
        with open(tmp / "counters.csv", "w") as f:
            f.write("time,server," + ",".join(COUNTERS) + "\n")
            for s in range(S):
                times = cfg.start_time_s + np.arange(T) * cfg.interval_s + offsets[s]
                for i in range(T):
                    vals = ["" if missing[s, c, i] else f"{cube[s, c, i]:.6g}" for c in range(C)]
                    f.write(f"{times[i]:.0f},{names[s]}," + ",".join(vals) + "\n")
        truth["clock_offsets_s"] = {names[s]: float(offsets[s]) for s in range(S) if offsets[s]}
        (tmp / "ground_truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        (tmp / "rules.toml").write_text(SAMPLE_RULES)
    return truth


SAMPLE_RULES = '''# Threshold rules for perftriage (PAD's threshold analysis); see README "Counters".

# the paper's Listing 1: GC above 15 % of the time, anywhere, any time
[[rule]]
counter = "Runtime.GC.PercentOfTimeInGC"
view = "detail"
statistic = "any"
op = ">"
value = 15

# and: the fleet's mean number of queued messages above 5 at some time
[[rule]]
counter = "MessageQueue.NumQueuedMsgs"
view = "time"
statistic = "mean"
op = ">"
value = 5

# a server whose median CPU is more than 30 % away from the fleet's
[[rule]]
counter = "Runtime.CPU.Percent"
view = "server"
statistic = "median"
op = ">"
percent_from_median = 30

# p99 latency: an outlier time point for the fleet (z-score over the time view)
[[rule]]
counter = "Requests.Latency.P99ms"
view = "time"
statistic = "median"
zscore = 3
'''
