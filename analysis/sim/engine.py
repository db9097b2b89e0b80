"""A discrete-event simulation of a Linux host's scheduler, interrupts and system calls that
records the LTTng events such a host would emit.

Threads run programs (generators yielding actions); CPUs have run queues; the 250 Hz tick
preempts a thread whose CFS slice is used up when others wait; wake-ups come from the thread
that releases a resource (process context) or from the interrupt that completes I/O (hard IRQ +
softirq), exactly the causal structure a critical-path analysis must recover.

Actions a program yields:

- ``("cpu", ns)``: run for ``ns`` (user or kernel code; preemptible, interruptible);
- ``("emit", class, s0, ...)``: record a kernel event now in this thread's context (costs ~0.2 µs);
- ``("ust", class, s3, ...)``: record a user-space event (context vpid/vtid/procname added);
- ``("block", state, arm)``: switch out with ``prev_state`` (1 interruptible, 2 uninterruptible);
  ``arm(sim, thread, t)`` registers whatever will wake it; the program resumes with the value
  passed to :meth:`Sim.wake`;
- ``("wake", thread, value)``: wake another thread from this thread's context.

Events are appended to one flat ``array('q')`` of records ``(ts, cpu, class, s0..s6)``; per-CPU
timestamps are kept strictly increasing so that every stream is in order.
"""

from __future__ import annotations

import heapq
from array import array
from collections import deque

import numpy as np

from .catalog import CODE, NSLOTS, NET_RX, BLOCK, RCU, TIMER_SOFTIRQ

REC = 3 + NSLOTS  # slots per record
TICK_NS = 4_000_000  # 250 Hz
SCHED_LATENCY_NS = 6_000_000
MIN_GRANULARITY_NS = 750_000
EMIT_COST = 180  # ns of CPU per traced event in a thread
SWITCH_COST = 1_500

RUNNING, RUNNABLE, BLOCKED, DEAD = range(4)

_SW = CODE["sched_switch"]
_WAKING = CODE["sched_waking"]
_WAKEUP = CODE["sched_wakeup"]
_WAKEUP_NEW = CODE["sched_wakeup_new"]
_IRQ_IN = CODE["irq_handler_entry"]
_IRQ_OUT = CODE["irq_handler_exit"]
_SOFT_RAISE = CODE["irq_softirq_raise"]
_SOFT_IN = CODE["irq_softirq_entry"]
_SOFT_OUT = CODE["irq_softirq_exit"]
_HRT_IN = CODE["timer_hrtimer_expire_entry"]
_HRT_OUT = CODE["timer_hrtimer_expire_exit"]
_BLK_DONE = CODE["block_rq_complete"]
_NET_RX_SKB = CODE["net_if_receive_skb"]



def s64(x: int) -> int:
    """A kernel address (u64) as the int64 a record slot holds (same bits)."""
    return x - (1 << 64) if x >= (1 << 63) else x


TICK_FN = s64(0xFFFFFFFF8A1B2C40)  # tick_sched_timer
WAKEUP_FN = s64(0xFFFFFFFF8A1B3F10)  # hrtimer_wakeup


class Thread:
    __slots__ = (
        "tid", "pid", "comm", "prio", "prog", "cpu", "state", "remaining", "seg_start", "version",
        "wake_value", "runnable_since", "switched_in", "req", "hog", "name", "allowed",
    )

    def __init__(self, tid, pid, comm_code, name, prog=None, prio=120, hog=False):
        self.tid = tid
        self.pid = pid
        self.comm = comm_code
        self.name = name
        self.prio = prio
        self.prog = prog
        self.cpu = 0
        self.state = BLOCKED
        self.remaining = 0
        self.seg_start = 0
        self.version = 0
        self.wake_value = None
        self.runnable_since = 0
        self.switched_in = 0
        self.req = None  # the request this thread works for now (ground-truth bookkeeping)
        self.hog = hog
        self.allowed: tuple | None = None  # CPUs it may run on (None: any); hosts sharing one Sim


class Cpu:
    __slots__ = ("idx", "current", "rq", "cursor", "busy_until", "swapper", "pending_dispatch")

    def __init__(self, idx, swapper_code):
        self.idx = idx
        self.current: Thread | None = None
        self.rq: deque[Thread] = deque()
        self.cursor = -1
        self.busy_until = 0
        self.swapper = swapper_code
        self.pending_dispatch = False


class Sim:
    def __init__(self, ncpus: int, rng: np.random.Generator, strings: list[str] | None = None):
        self.rng = rng
        self.now = 0
        self._q: list = []
        self._seq = 0
        self.rec = array("q")
        self.strings: list[str] = strings if strings is not None else []
        self._codes: dict[str, int] = {s: i for i, s in enumerate(self.strings)}
        self.cpus = [Cpu(i, self.s(f"swapper/{i}")) for i in range(ncpus)]
        self.threads: dict[int, Thread] = {}
        self.on_dispatch = None  # callback(thread, waited_ns, t) for ground-truth accounting
        self._jit = iter(())

    # -- strings, time, queue ---------------------------------------------------------------

    def s(self, text: str) -> int:
        c = self._codes.get(text)
        if c is None:
            c = self._codes[text] = len(self.strings)
            self.strings.append(text)
        return c

    def at(self, t: int, fn, *args) -> None:
        self._seq += 1
        heapq.heappush(self._q, (t, self._seq, fn, args))

    def next_time(self) -> int:
        return self._q[0][0] if self._q else 1 << 62

    def run(self, until: int | None = None) -> None:
        q = self._q
        while q:
            t, _, fn, args = heapq.heappop(q)
            if until is not None and t > until:
                heapq.heappush(q, (t, 0, fn, args))
                break
            self.now = t
            fn(t, *args)

    def jitter(self, lo: int, hi: int) -> int:
        """A small random duration in [lo, hi) ns (drawn in blocks for speed)."""
        try:
            u = next(self._jit)
        except StopIteration:
            self._jit = iter(self.rng.random(4096).tolist())
            u = next(self._jit)
        return lo + int(u * (hi - lo))

    # -- recording --------------------------------------------------------------------------

    def emit(self, cpu: Cpu, t: int, code: int, *slots) -> int:
        """Record an event on ``cpu`` at ``t`` (moved just past the CPU's last event if needed)."""
        if t <= cpu.cursor:
            t = cpu.cursor + 1
        cpu.cursor = t
        n = len(slots)
        self.rec.extend((t, cpu.idx, code) + slots + (0,) * (NSLOTS - n))
        return t

    # -- threads ----------------------------------------------------------------------------

    def add_thread(self, th: Thread, cpu: int = 0) -> Thread:
        self.threads[th.tid] = th
        th.cpu = cpu
        return th

    def start(self, th: Thread, t: int) -> None:
        """Make a new thread runnable at t (no wake-up events: it exists from trace start)."""
        th.state = RUNNABLE
        th.runnable_since = t
        cpu = self._pick_cpu(th)
        cpu.rq.append(th)
        self._kick(cpu, t)

    def _pick_cpu(self, th: Thread) -> Cpu:
        prev = self.cpus[th.cpu]
        if prev.current is None and not prev.rq:
            return prev
        cpus = self.cpus if th.allowed is None else [self.cpus[i] for i in th.allowed]
        for c in cpus:
            if c.current is None and not c.rq:
                return c
        return min(cpus, key=lambda c: (len(c.rq) + (c.current is not None), c.idx != th.cpu, c.idx))

    def _kick(self, cpu: Cpu, t: int) -> None:
        """An idle CPU with work: dispatch soon (after any interrupt it is handling)."""
        if cpu.current is None and cpu.rq and not cpu.pending_dispatch:
            cpu.pending_dispatch = True
            self.at(max(t, cpu.busy_until) + self.jitter(800, 4_000), self._dispatch, cpu)

    def _dispatch(self, t: int, cpu: Cpu) -> None:
        cpu.pending_dispatch = False
        if t < cpu.busy_until:
            cpu.pending_dispatch = True
            self.at(cpu.busy_until, self._dispatch, cpu)
            return
        if cpu.current is not None or not cpu.rq:
            return
        nxt = cpu.rq.popleft()
        t = self.emit(cpu, t, _SW, cpu.swapper, 0, 120, 0, nxt.comm, nxt.tid, nxt.prio)
        self._switch_in(cpu, nxt, t)

    def _switch_in(self, cpu: Cpu, th: Thread, t: int) -> None:
        cpu.current = th
        th.cpu = cpu.idx
        th.state = RUNNING
        th.switched_in = t
        if self.on_dispatch is not None:
            self.on_dispatch(th, t - th.runnable_since, t)
        self._continue(th, t + SWITCH_COST)

    def _switch_out(self, cpu: Cpu, th: Thread, t: int, state: int, arm=None) -> None:
        """th leaves the CPU (blocked: state 1/2; preempted: 0; dead: 64); the next runnable
        comes in. ``arm(t)`` registers what will wake th, before the next thread runs."""
        nxt = cpu.rq.popleft() if cpu.rq else None
        if nxt is None:
            t = self.emit(cpu, t, _SW, th.comm, th.tid, th.prio, state, cpu.swapper, 0, 120)
            cpu.current = None
        else:
            t = self.emit(cpu, t, _SW, th.comm, th.tid, th.prio, state, nxt.comm, nxt.tid, nxt.prio)
            cpu.current = None
        if arm is not None:
            arm(t)
        if nxt is not None:
            self._switch_in(cpu, nxt, t)

    # -- running a thread -------------------------------------------------------------------

    def _continue(self, th: Thread, t: int) -> None:
        """Run ``th`` from t: finish its current segment, then step its program, inline as long
        as nothing else is due earlier."""
        cpu = self.cpus[th.cpu]
        while True:
            if th.remaining > 0:
                end = t + th.remaining
                if end >= self.next_time():
                    th.seg_start = t
                    th.version += 1
                    self.at(end, self._segment_done, th, th.version)
                    return
                t = end
                th.remaining = 0
            self.now = t
            try:
                action = th.prog.send(th.wake_value)
            except StopIteration:
                self._exit(th, t)
                return
            th.wake_value = None
            kind = action[0]
            if kind == "cpu":
                th.remaining = max(1, int(action[1]))
            elif kind == "emit":
                t = self.emit(cpu, t, action[1], *action[2:])
                th.remaining = EMIT_COST
            elif kind == "ust":
                t = self.emit(cpu, t, action[1], th.pid, th.tid, th.comm, *action[2:])
                th.remaining = EMIT_COST * 3
            elif kind == "wake":
                t = self.wake(action[1], cpu, t, action[2] if len(action) > 2 else None)
                th.remaining = EMIT_COST
            elif kind == "wake_new":
                t = self.wake(action[1], cpu, t, None, new=True)
                th.remaining = EMIT_COST
            elif kind == "block":
                th.state = BLOCKED
                arm = action[2]
                self._switch_out(cpu, th, t, action[1], lambda t_sw: arm(self, th, t_sw))
                return
            else:  # pragma: no cover - programming error
                raise ValueError(f"unknown action {action!r}")

    def _segment_done(self, t: int, th: Thread, version: int) -> None:
        if th.version != version or th.state != RUNNING:
            return
        th.remaining = 0
        self._continue(th, t)

    def _pause(self, th: Thread, t: int) -> None:
        """Stop the clock of th's current segment (preemption or interrupt)."""
        if th.remaining > 0:
            th.remaining = max(1, th.remaining - max(0, t - th.seg_start))
        th.version += 1

    def _resume(self, th: Thread, t: int) -> None:
        th.seg_start = t
        th.version += 1
        if th.remaining > 0:
            self.at(t + th.remaining, self._segment_done, th, th.version)
        else:
            self.at(t, self._segment_done, th, th.version)

    def _exit(self, th: Thread, t: int) -> None:
        cpu = self.cpus[th.cpu]
        t = self.emit(cpu, t, CODE["sched_process_exit"], th.comm, th.tid, th.prio)
        th.state = DEAD
        self._switch_out(cpu, th, t + 2_000, 64)  # TASK_DEAD
        del self.threads[th.tid]

    # -- wake-ups ---------------------------------------------------------------------------

    def wake(self, th: Thread, waker_cpu: Cpu, t: int, value=None, new: bool = False) -> int:
        """Wake ``th`` from whatever runs on ``waker_cpu`` at t; returns the time after the events."""
        if th.state != BLOCKED:
            return t
        target = self._pick_cpu(th)
        if new:
            t = self.emit(waker_cpu, t, _WAKEUP_NEW, th.comm, th.tid, th.prio, target.idx)
        else:
            t = self.emit(waker_cpu, t, _WAKING, th.comm, th.tid, th.prio, target.idx)
            t = self.emit(waker_cpu, t + self.jitter(200, 900), _WAKEUP, th.comm, th.tid, th.prio, target.idx)
        th.state = RUNNABLE
        th.wake_value = value
        th.runnable_since = t
        target.rq.append(th)
        if target.current is None:
            self._kick(target, t)
        return t

    # -- interrupts -------------------------------------------------------------------------

    def interrupt(self, t: int, cpu: Cpu, body) -> None:
        """Run ``body(sim, cpu, t) -> end time`` as interrupt context on ``cpu`` at t: the running
        thread is paused for its duration."""
        if t <= cpu.busy_until or t <= cpu.cursor:
            t = max(cpu.busy_until, cpu.cursor) + 1
        th = cpu.current
        if th is not None:
            self._pause(th, t)
        end = body(self, cpu, t)
        cpu.busy_until = end
        if th is not None and cpu.current is th:
            self._resume(th, end)
        elif cpu.current is None and cpu.rq:
            self._kick(cpu, end)

    def irq_at(self, t: int, cpu: Cpu, body) -> None:
        self.at(t, self._irq_event, cpu, body)

    def _irq_event(self, t: int, cpu: Cpu, body) -> None:
        self.interrupt(t, cpu, body)

    # -- interrupt bodies -------------------------------------------------------------------

    def hard_then_soft(self, cpu: Cpu, t: int, irq: int, irq_name: int, vec: int, soft_body) -> int:
        """irq_handler_entry, softirq raise, exit, then the softirq running ``soft_body``."""
        t = self.emit(cpu, t, _IRQ_IN, irq, irq_name)
        t = self.emit(cpu, t + self.jitter(300, 1_200), _SOFT_RAISE, vec)
        t = self.emit(cpu, t + self.jitter(200, 800), _IRQ_OUT, irq, 1)
        t = self.emit(cpu, t + self.jitter(200, 700), _SOFT_IN, vec)
        t = soft_body(cpu, t + self.jitter(300, 1_500))
        return self.emit(cpu, t + self.jitter(300, 1_000), _SOFT_OUT, vec) + 200

    def tick_body(self, tick_addr: int, raise_softirqs: bool):
        def body(sim: "Sim", cpu: Cpu, t: int) -> int:
            t = sim.emit(cpu, t, _HRT_IN, tick_addr, t, TICK_FN)
            if raise_softirqs:
                t = sim.emit(cpu, t + sim.jitter(400, 1_500), _SOFT_RAISE, TIMER_SOFTIRQ)
                t = sim.emit(cpu, t + sim.jitter(100, 400), _SOFT_RAISE, RCU)
            t = sim.emit(cpu, t + sim.jitter(500, 2_500), _HRT_OUT, tick_addr)
            if raise_softirqs:
                for vec in (TIMER_SOFTIRQ, RCU):
                    t = sim.emit(cpu, t + sim.jitter(200, 600), _SOFT_IN, vec)
                    t = sim.emit(cpu, t + sim.jitter(500, 3_000), _SOFT_OUT, vec)
            sim._tick_preempt(cpu, t)
            return t + 300

        return body

    def _tick_preempt(self, cpu: Cpu, t: int) -> None:
        th = cpu.current
        if th is None or not cpu.rq:
            return
        nr = len(cpu.rq) + 1
        slice_ns = max(MIN_GRANULARITY_NS, SCHED_LATENCY_NS // nr)
        if t - th.switched_in < slice_ns:
            return
        # preempt at the end of this interrupt
        self.at(t + 400, self._preempt, cpu, th)

    def _preempt(self, t: int, cpu: Cpu, th: Thread) -> None:
        if cpu.current is not th or not cpu.rq or t < cpu.busy_until:
            return
        self._pause(th, t)
        th.state = RUNNABLE
        th.runnable_since = t
        cpu.rq.append(th)
        self._switch_out(cpu, th, t, 0)

    def start_ticks(self, t0: int, until: int) -> None:
        for cpu in self.cpus:
            addr = s64(0xFFFF8D0F7FC1B8E0 + cpu.idx * 0x40000)
            phase = self.jitter(0, TICK_NS)
            self.at(t0 + phase, self._tick, cpu, addr, until, 0)

    def _tick(self, t: int, cpu: Cpu, addr: int, until: int, n: int) -> None:
        if t > until:
            return
        if cpu.current is not None:  # NO_HZ: an idle CPU takes no tick
            self.interrupt(t, cpu, self.tick_body(addr, n % 4 == 0))
        self.at(t + TICK_NS, self._tick, cpu, addr, until, n + 1)

    # -- I/O completions (arm functions for "block") ------------------------------------------

    def timer_wakeup(self, th: Thread, t: int, delay: int, hrtimer: int, value=None) -> None:
        cpu = self.cpus[th.cpu]

        def body(sim: "Sim", c: Cpu, t: int) -> int:
            t = sim.emit(c, t, _HRT_IN, hrtimer, t, WAKEUP_FN)
            t = sim.wake(th, c, t + sim.jitter(300, 1_000), value)
            return sim.emit(c, t + sim.jitter(300, 900), _HRT_OUT, hrtimer) + 200

        self.irq_at(t + delay, cpu, body)

    def disk_completion(self, th: Thread, t: int, latency: int, cpu_idx: int, irq: int, irq_name: int,
                        rq_fields: tuple, value=None) -> None:
        dev, sector, nr_sector, rwbs = rq_fields

        def soft(c: Cpu, t: int) -> int:
            t = self.emit(c, t, _BLK_DONE, dev, sector, nr_sector, 0, rwbs)
            return self.wake(th, c, t + self.jitter(500, 2_000), value)

        def body(sim: "Sim", c: Cpu, t: int) -> int:
            return sim.hard_then_soft(c, t, irq, irq_name, BLOCK, soft)

        self.irq_at(t + latency, self.cpus[cpu_idx], body)

    def packet_arrival(self, t: int, cpu_idx: int, irq: int, irq_name: int, dev_name: int, skbaddr: int,
                       length: int, on_receive, header: tuple = ()) -> None:
        """A packet reaches the NIC at t; ``on_receive(cpu, t) -> t`` runs in NET_RX softirq (it
        typically wakes the thread waiting for that data). ``header``: catalog.tcp_header_slots."""

        def soft(c: Cpu, t: int) -> int:
            t = self.emit(c, t, _NET_RX_SKB, skbaddr, length, dev_name, *header)
            return on_receive(c, t + self.jitter(400, 2_000))

        def body(sim: "Sim", c: Cpu, t: int) -> int:
            return sim.hard_then_soft(c, t, irq, irq_name, NET_RX, soft)

        self.irq_at(t, self.cpus[cpu_idx], body)

    # -- output -----------------------------------------------------------------------------

    def records(self) -> np.ndarray:
        """All records as an (n, 10) int64 array, in emission order."""
        return np.frombuffer(self.rec, dtype=np.int64).reshape(-1, REC)
