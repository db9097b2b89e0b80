"""Thread pools of a load test, with injected deviations: the ground truth of paper 003's
evaluation (section V.H), generated instead of taken from a proprietary load test.

A load test runs in *waves* (threads created in the same time slot, each wave lasting about
two hours); every thread of a pool handles the same kind of work, so its five metrics (the
paper's Table I) follow the same pattern with their own noise, sampled every 7 s. Like the
paper's pool of "good" threads (twelve threads picked for their very similar behaviour), the
normal threads differ only by their noise, their speed (+-8 %) and where their memory steps fall:

- ``CPU``: percent of a core; the test's load curve (shared by all threads: ramp-up, plateau
  with slow swings) times the thread's own speed, plus AR(1) noise and short bursts;
- ``VirtualBytes``: reserved address space: a base, a part that follows the load (heap
  segments), small steps when an allocator arena grows (about one every half hour), seldom
  given back;
- ``PrivateBytes``: committed memory: a garbage-collected sawtooth around a level that follows
  the load;
- ``Handles``: open handles: a base plus connections that open and close with the load (a
  Poisson count around a load-dependent level);
- ``MicroThreads``: micro-threads the thread schedules: Poisson around the load.

Injected deviations (the paper's): a *CPU spike* (CPU ramps up over 1-3 minutes to 50-150 %,
then back down), a *memory leak* (from a random time to the end, VirtualBytes ramps to
150-300 % of its previous maximum), an *I/O leak* (Handles ramps to 125-200 % of its previous
maximum). Written as a long CSV (time, machine, process, pool, wave, thread, metrics) with
``ground_truth.json``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from perftriage.analysis.atomic import new_folder

METRICS = ("CPU", "VirtualBytes", "PrivateBytes", "Handles", "MicroThreads")
DEVIATIONS = ("cpu_spike", "memory_leak", "io_leak")
MB = 1 << 20


@dataclass
class PoolConfig:
    waves: int = 8
    threads_per_wave: int = 10
    samples: int = 1070  # per thread: 2 h 05 min at 7 s
    interval_s: float = 7.0
    seed: int = 1
    deviations: dict = field(default_factory=dict)  # "wave:thread" -> kind (thread index within its wave)
    start_time_s: float = 1_767_225_600.0
    machine: str = "loadtest-1"

    def validate(self) -> None:
        if self.waves < 1 or self.threads_per_wave < 1 or self.samples < 10:
            raise ValueError("waves and threads_per_wave must be >= 1, samples >= 10")
        for k, v in self.deviations.items():
            if v not in DEVIATIONS:
                raise ValueError(f"unknown deviation {v!r}; known: {', '.join(DEVIATIONS)}")


def _ar1(rng, n, phi, sd):
    e = rng.normal(0, sd, n)
    out = np.empty(n)
    acc = 0.0
    for i in range(n):  # n ~ 1000: cheap
        acc = phi * acc + e[i]
        out[i] = acc
    return out


def load_curve(rng, n: int) -> np.ndarray:
    """The test's load, 0..1: ramp-up over the first 5%, then a plateau with slow swings."""
    t = np.arange(n) / n
    ramp = np.clip(t / 0.05, 0, 1)
    swing = 1 + 0.12 * np.sin(2 * np.pi * (t * rng.uniform(1.5, 3) + rng.uniform(0, 1)))
    return 0.8 * ramp * swing


def good_thread(rng, load: np.ndarray) -> np.ndarray:
    """(samples, 5) metrics of a normal worker thread under the given load."""
    n = len(load)
    speed = rng.normal(1.0, 0.08)
    cpu = 40 * load * speed + _ar1(rng, n, 0.7, 3.0)
    bursts = rng.random(n) < 0.01
    cpu[bursts] += rng.uniform(5, 15, int(bursts.sum()))
    cpu = np.clip(cpu, 0, None)
    # virtual bytes: reserved address space grows in small steps now and then (an allocator
    # arena) and is seldom given back
    steps = np.where(rng.random(n) < 0.004, rng.uniform(2, 6, n) * MB, 0.0)
    virt = 300 * MB * rng.normal(1, 0.03) + 60 * MB * load + np.cumsum(steps) + rng.normal(0, 1.0 * MB, n)
    # private bytes: GC sawtooth around a load-dependent level
    level = 80 * MB + 60 * MB * load
    saw = np.zeros(n)
    period = rng.integers(25, 45)
    phase = rng.integers(0, period)
    saw = ((np.arange(n) + phase) % period) / period * 20 * MB
    priv = level + saw + rng.normal(0, 1.0 * MB, n)
    handles = 120 + rng.poisson(30 * load + 2) + rng.integers(-2, 3)
    micro = rng.poisson(8 * load + 1).astype(np.float64)
    return np.column_stack([cpu, virt, priv, handles.astype(np.float64), micro])


def inject(rng, x: np.ndarray, kind: str, interval_s: float) -> dict:
    """Inject a deviation into a thread's metrics, in place; returns what was injected."""
    n = len(x)
    if kind == "cpu_spike":
        width = int(round(rng.uniform(60, 180) / interval_s))  # 1-3 minutes
        start = int(rng.integers(int(0.05 * n), n - width - 1))
        peak = rng.uniform(50, 150)
        half = max(1, width // 2)
        ramp = np.r_[np.linspace(0, 1, half, endpoint=False), np.linspace(1, 0, width - half)]
        base = x[start:start + width, 0]
        x[start:start + width, 0] = base + (peak - base) * ramp
        return {"kind": kind, "start": start, "end": start + width, "peak_cpu": round(float(peak), 1)}
    col, lo, hi = (1, 1.5, 3.0) if kind == "memory_leak" else (3, 1.25, 2.0)
    start = int(rng.integers(int(0.1 * n), int(0.8 * n)))
    prev_max = float(x[:start, col].max())
    target = prev_max * rng.uniform(lo, hi)
    ramp = np.linspace(0, 1, n - start)
    x[start:, col] = np.maximum(x[start:, col], x[start, col] + (target - x[start, col]) * ramp)
    return {"kind": kind, "start": start, "end": n, "target_ratio": round(target / prev_max, 3)}


def random_deviations(rng, waves: int, threads: int, level: str) -> dict:
    """The paper's protocol: wave level, 2-4 deviations in 0-3 waves; thread level, 0-3
    deviations in every wave. Returns {"w:t": kind}."""
    out = {}
    if level == "waves":
        n_waves = int(rng.integers(0, 4))
        chosen = rng.choice(waves, n_waves, replace=False) if n_waves else []
        for w in chosen:
            for t in rng.choice(threads, int(rng.integers(2, 5)), replace=False):
                out[f"{w}:{t}"] = str(rng.choice(DEVIATIONS))
    else:
        for w in range(waves):
            for t in rng.choice(threads, int(rng.integers(0, 4)), replace=False):
                out[f"{w}:{t}"] = str(rng.choice(DEVIATIONS))
    return out


def generate(cfg: PoolConfig):
    """Yields (wave, thread index, thread id, (samples, 5) metrics, injected or None)."""
    cfg.validate()
    rng = np.random.default_rng(cfg.seed)
    tid = 1000
    for w in range(cfg.waves):
        load = load_curve(rng, cfg.samples)
        for t in range(cfg.threads_per_wave):
            x = good_thread(rng, load)
            kind = cfg.deviations.get(f"{w}:{t}")
            info = inject(rng, x, kind, cfg.interval_s) if kind else None
            tid += int(rng.integers(1, 40))
            yield w, t, tid, x, info


def pool_series(cfg: PoolConfig):
    """The generated load test in memory, as a ThreadSeries (waves as the group), with
    {thread id: (wave, deviation kind)} of the threads that deviate."""
    from perftriage.analysis.threads.series import build  # noqa: PLC0415

    t, th, wave, vals = [], [], [], []
    truth = {}
    for w, _, tid, x, info in generate(cfg):
        n = len(x)
        t.append(cfg.start_time_s + w * n * cfg.interval_s + np.arange(n) * cfg.interval_s)
        th += [str(tid)] * n
        wave += [f"W{w + 1}"] * n
        vals.append(x)
        if info:
            truth[str(tid)] = (f"W{w + 1}", info["kind"])
    return build(np.concatenate(t), th, {"wave": wave}, np.vstack(vals), list(METRICS)), truth


def write_threadpool_sample(out: str | os.PathLike, cfg: PoolConfig) -> dict:
    out = Path(out)
    with new_folder(out) as tmp:
        truth = {"generator": "perftriage sample threads", "config": asdict(cfg), "deviating": []}
        wave_len = cfg.samples * cfg.interval_s
        with open(tmp / "threads.csv", "w") as f:
            f.write("time,machine,process,pool,wave,thread," + ",".join(METRICS) + "\n")
            for w, t, tid, x, info in generate(cfg):
                t0 = cfg.start_time_s + w * wave_len
                times = t0 + np.arange(cfg.samples) * cfg.interval_s
                prefix = f"{cfg.machine},server.exe,worker,W{w + 1},{tid}"
                lines = [f"{tm:.0f},{prefix},{r[0]:.2f},{r[1]:.0f},{r[2]:.0f},{r[3]:.0f},{r[4]:.0f}"
                         for tm, r in zip(times.tolist(), x.tolist())]
                f.write("\n".join(lines) + "\n")
                if info:
                    truth["deviating"].append({"wave": f"W{w + 1}", "thread": str(tid), **info,
                                               "start_time": float(times[info["start"]])})
        (tmp / "ground_truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        return truth
