"""What ``perftriage record trace`` asks LTTng for, taken from what the analyses read.

The kernel events are those of the execution graph (``execgraph.events.GRAPH_EVENTS``: the
critical path, the network matching and the per-thread metrics all read the graph): scheduling
and wake-ups, fork/exec/exit, hard and soft interrupts and hrtimers, the network queue and
receive events (with their packet headers), every system call, and the statedump of the
processes alive when the session starts. A few names the graph also understands come from older
recording recipes (kretprobes on ``do_IRQ``, ``netif_receive_skb_internal``) or other kernels
(``sched_ttwu``); the tracepoint that replaces each is in :data:`READ_FROM_OLDER_RECORDINGS`.
The user-space events are the request markers the reader knows (PHP, Apache) or the user's own
(``--request-start/--request-end``), with the contexts the reader pairs them by (vpid, vtid).

Buffers are per CPU for the kernel, sized from the expected event rate (``--event-rate``): each
CPU's ring holds about a second of its share of events, so a burst does not lose events while
the consumer daemon writes them out.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from perftriage.analysis.execgraph.events import GRAPH_EVENTS
from perftriage.analysis.requests.markers import BUILTIN_MARKERS, MarkerSpec
from perftriage.analysis.requests.params import marker_kind

#: events the graph understands that a recording gets from another tracepoint (older recipes,
#: other kernels): reader's name -> the tracepoint recorded instead
READ_FROM_OLDER_RECORDINGS = {
    "sched_ttwu": "sched_waking",
    "do_IRQ_entry": "irq_handler_entry",
    "do_IRQ_return": "irq_handler_exit",
    "netif_receive_skb_internal_entry": "irq_softirq_entry",  # the NET_RX softirq
    "netif_receive_skb_internal_return": "irq_softirq_exit",
    "netif_receive_skb": "net_if_receive_skb",  # lttng-modules names the kernel's tracepoint so
}
#: kernel contexts: the running thread of each event before the first sched_switch of its CPU
KERNEL_CONTEXTS = ("tid", "pid", "procname")
#: user-space contexts: markers are paired by thread (vtid) within a process (vpid)
USER_CONTEXTS = ("vpid", "vtid", "procname")
#: the graph's system-call events, recorded with ``--syscall --all``
SYSCALL_PREFIXES = ("syscall_entry_", "syscall_exit_")
BYTES_PER_EVENT = 48  # a kernel event with its header and the contexts above, on average
MIN_SUBBUF, MAX_SUBBUF = 256 * 1024, 64 * 1024 * 1024
SUBBUFS = 8


def kernel_tracepoints() -> tuple[list[str], list[str], bool]:
    """(tracepoints by name, wildcards, all system calls) the graph needs recorded."""
    names, wildcards, syscalls = [], [], False
    for ev in GRAPH_EVENTS:
        if ev.startswith(SYSCALL_PREFIXES):
            syscalls = True
            continue
        ev = READ_FROM_OLDER_RECORDINGS.get(ev, ev)
        if "*" in ev:
            if ev.startswith("x86_") and platform.machine() not in ("x86_64", "i686", "i386"):
                continue
            wildcards.append(ev)
        elif ev not in names:
            names.append(ev)
    return names, wildcards, syscalls


def user_events(markers=BUILTIN_MARKERS) -> list[str]:
    out = []
    for m in markers:
        for ev in (m.start, m.end):
            if ev not in out:
                out.append(ev)
    return out


def recorded(plan: "Plan", event: str) -> bool:
    """Whether ``plan`` records ``event`` (as the reader names it)."""
    if event.startswith(SYSCALL_PREFIXES):
        return plan.kernel and plan.syscalls
    if ":" in event:
        return plan.user and any(_matches(p, event) for p in plan.user_events)
    event = READ_FROM_OLDER_RECORDINGS.get(event, event)
    return plan.kernel and (event in plan.kernel_events or any(_matches(p, event) for p in plan.kernel_wildcards))


def _matches(pattern: str, name: str) -> bool:
    return re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), name) is not None


def subbuf_size(event_rate: float, cpus: int) -> int:
    """Sub-buffer bytes such that one CPU's ring (SUBBUFS of them) holds about a second of its
    share of ``event_rate`` (twice the even share: load is seldom even), a power of two."""
    per_cpu = 2.0 * event_rate / max(1, cpus) * BYTES_PER_EVENT
    want = max(MIN_SUBBUF, min(MAX_SUBBUF, per_cpu / SUBBUFS))
    return 1 << int(want - 1).bit_length()


@dataclass
class Plan:
    session: str
    output: Path
    kernel: bool = True
    user: bool = True
    kernel_events: list[str] = field(default_factory=list)
    kernel_wildcards: list[str] = field(default_factory=list)
    syscalls: bool = True
    user_events: list[str] = field(default_factory=list)
    kernel_subbuf: int = MIN_SUBBUF
    user_subbuf: int = 1024 * 1024

    def setup_commands(self) -> list[list[str]]:
        """The lttng commands that make the session, before ``lttng start``."""
        s = ["-s", self.session]
        cmds = [["lttng", "create", self.session, f"--output={self.output}"]]
        if self.kernel:
            cmds.append(["lttng", "enable-channel", "-k", *s, "perftriage_k", f"--subbuf-size={self.kernel_subbuf}",
                         f"--num-subbuf={SUBBUFS}"])
            cmds.append(["lttng", "enable-event", "-k", *s, "-c", "perftriage_k", ",".join(self.kernel_events)])
            cmds += [["lttng", "enable-event", "-k", *s, "-c", "perftriage_k", w] for w in self.kernel_wildcards]
            if self.syscalls:
                cmds.append(["lttng", "enable-event", "-k", *s, "-c", "perftriage_k", "--syscall", "--all"])
            cmds.append(["lttng", "add-context", "-k", *s, "-c", "perftriage_k",
                         *[a for c in KERNEL_CONTEXTS for a in ("-t", c)]])
        if self.user:
            cmds.append(["lttng", "enable-channel", "-u", *s, "perftriage_u", f"--subbuf-size={self.user_subbuf}",
                         "--num-subbuf=4"])
            cmds.append(["lttng", "enable-event", "-u", *s, "-c", "perftriage_u", ",".join(self.user_events)])
            cmds.append(["lttng", "add-context", "-u", *s, "-c", "perftriage_u",
                         *[a for c in USER_CONTEXTS for a in ("-t", c)]])
        return cmds

    def start_command(self) -> list[str]:
        return ["lttng", "start", self.session]

    def stop_commands(self) -> list[list[str]]:
        # stop waits for the buffers to be written out; destroy ends the session, the trace stays
        return [["lttng", "stop", self.session], ["lttng", "destroy", self.session]]

    def shell(self) -> str:
        return "\n".join(shlex.join(c) for c in [*self.setup_commands(), self.start_command(), *self.stop_commands()])


def make_plan(output, session: str, markers=BUILTIN_MARKERS, kernel: bool = True, user: bool = True,
              event_rate: float = 500_000, cpus: int | None = None) -> Plan:
    names, wildcards, syscalls = kernel_tracepoints()
    cpus = cpus or os.cpu_count() or 1
    return Plan(session=session, output=Path(output), kernel=kernel, user=user, kernel_events=names,
                kernel_wildcards=wildcards, syscalls=syscalls, user_events=user_events(markers),
                kernel_subbuf=subbuf_size(event_rate, cpus))


def custom_markers(start: str | None, end: str | None, key: str = "vtid") -> tuple[MarkerSpec, ...]:
    if start and end:
        return (MarkerSpec(start, end, key=key, kind=marker_kind(start)),)
    return BUILTIN_MARKERS


def lttng_missing() -> str | None:
    """What to install when lttng-tools is not there."""
    if shutil.which("lttng") is None or shutil.which("lttng-sessiond") is None:
        return "lttng-tools is not installed (Debian/Ubuntu: sudo apt-get install lttng-tools)"
    return None


def kernel_tracing_problem() -> str | None:
    """Why the kernel cannot be traced here (None when it can): not root, a container, no LTTng
    kernel modules for this kernel."""
    release = platform.release()
    if os.geteuid() != 0 and "tracing" not in _groups():
        return "kernel tracing needs root (or membership of the tracing group)"
    try:
        modules = Path("/proc/modules").read_text()
    except OSError:
        modules = ""
    if "lttng_tracer" in modules:
        return None
    if _in_container():
        return "this is a container: its kernel is the host's, where lttng-modules must be loaded (trace on the host)"
    probe = subprocess.run(["modprobe", "-n", "lttng-tracer"], capture_output=True, text=True) \
        if shutil.which("modprobe") else None
    if probe is not None and probe.returncode == 0:
        return None  # the session daemon loads them
    return (f"no LTTng kernel modules for kernel {release} (sudo apt-get install lttng-modules-dkms "
            f"linux-headers-{release})")


def _groups() -> set[str]:
    import grp  # noqa: PLC0415

    out = set()
    for g in os.getgroups():
        try:
            out.add(grp.getgrgid(g).gr_name)
        except KeyError:
            pass
    return out


def _in_container() -> bool:
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists():
        return True
    try:
        return any(w in Path("/proc/1/cgroup").read_text() for w in ("docker", "kubepods", "containerd", "lxc"))
    except OSError:
        return False


class LttngError(Exception):
    """An lttng command failed: its words, one line."""


def run_lttng(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LttngError(f"{shlex.join(cmd[:2])}: {exc}") from None
    if p.returncode != 0:
        lines = [ln.strip() for ln in (p.stderr + p.stdout).splitlines() if ln.strip()]
        why = next((ln for ln in lines if ln.startswith("Error:")), lines[-1] if lines else f"exit {p.returncode}")
        raise LttngError(f"{shlex.join(cmd[:2])}: {why.removeprefix('Error:').strip()}")
    return p.stdout


@dataclass
class Recorded:
    output: Path
    seconds: float
    stopped: str  # why: "--duration", "the command exited (status N)", "SIGINT"...
    kernel_bytes: int
    user_bytes: int


def record(plan: Plan, duration: float | None = None, command: list[str] | None = None, on_tick=None,
           stop_signals=None, kernel_perf=None) -> Recorded:
    """Record ``plan``'s session until ``duration`` ends, ``command`` (started once tracing
    runs) exits, or a signal in ``stop_signals`` (Ctrl-C, SIGTERM, SIGHUP: an SSH session
    closing) arrives; the session is stopped and destroyed in every case, the trace kept.
    ``kernel_perf`` (recording_perf.PerfKernel): the kernel by perf, started before the session and
    stopped and converted after it. ``on_tick(seconds)`` is told twice a second."""
    import signal  # noqa: PLC0415
    import time  # noqa: PLC0415

    stop_signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) if stop_signals is None else stop_signals
    got: list[int] = []
    old = {s: signal.signal(s, lambda n, f: got.append(n)) for s in stop_signals}
    created = False
    proc = perf = None
    kernel_bytes = 0
    lttng = plan.kernel or plan.user
    try:
        if kernel_perf is not None:
            perf = kernel_perf.start()
        for cmd in plan.setup_commands() if lttng else []:
            run_lttng(cmd)
            created = True
        if lttng:
            run_lttng(plan.start_command())
        t0 = time.monotonic()
        if command:
            try:
                proc = subprocess.Popen(command)
            except OSError as exc:
                raise LttngError(f"{command[0]}: cannot run it ({exc.strerror or exc})") from None
        stopped = ""
        next_tick = 0.0
        while not stopped:
            time.sleep(0.05 if not got else 0)
            elapsed = time.monotonic() - t0
            if got:
                stopped = signal.Signals(got[0]).name
            elif proc is not None and proc.poll() is not None:
                stopped = f"the command exited (status {proc.returncode})"
            elif duration is not None and elapsed >= duration:
                stopped = f"{duration:g} s elapsed (--duration)"
            elif on_tick is not None and elapsed >= next_tick:
                on_tick(elapsed)
                next_tick = elapsed + 0.5
        seconds = time.monotonic() - t0
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        errors = []
        if created:
            for cmd in plan.stop_commands():
                try:
                    run_lttng(cmd)
                except LttngError as exc:
                    errors.append(str(exc))
        if perf is not None:
            from .recording_perf import PerfError  # noqa: PLC0415 (it builds on this module)

            try:
                kernel_bytes = kernel_perf.stop(perf)
            except PerfError as exc:
                errors.append(str(exc))
        for s, h in old.items():
            signal.signal(s, h)
    if errors:
        raise LttngError("; ".join(errors))
    return Recorded(plan.output, seconds, stopped, kernel_bytes or _bytes(plan.output / "kernel"),
                    _bytes(plan.output / "ust"))


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0
