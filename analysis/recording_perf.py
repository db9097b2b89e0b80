"""The kernel part of ``perftriage record trace`` by perf, where LTTng cannot trace the kernel (no
lttng-modules for the running kernel: most production hosts) and perf can (root, tracefs).

perf records the tracepoints behind the events the execution graph reads (recording.py's
``kernel_tracepoints``, named as the kernel names them: ``sched:sched_switch``,
``irq:softirq_entry``...; those this kernel lacks are left out), every system call by number
(``raw_syscalls``, perf's own left out: its writes would trace themselves), on CLOCK_MONOTONIC;
when recording ends its ``perf.data`` becomes a CTF trace with wall-clock times (``perf data
convert --tod --to-ctf``) in ``kernel/`` of the recording, beside LTTng's ``ust/``: the reader
merges the two by time (ctf/perf.py). There is no statedump: a thread that was there before
the recording is known from its first event on.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .ctf.perf import convert_argv
from .recording import kernel_tracepoints

TRACEFS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
#: LTTng's name -> the kernel's tracepoint, where perf's name is not the group and the LTTng name
#: (ctf/perf.py reads them back)
TRACEPOINTS = {
    "irq_softirq_entry": "irq:softirq_entry",
    "irq_softirq_exit": "irq:softirq_exit",
    "irq_softirq_raise": "irq:softirq_raise",
    "timer_hrtimer_expire_entry": "timer:hrtimer_expire_entry",
    "timer_hrtimer_expire_exit": "timer:hrtimer_expire_exit",
    "net_if_receive_skb": "net:netif_receive_skb",
}
GROUPS = ("sched", "irq", "timer", "net", "block")
SYSCALLS = ("raw_syscalls:sys_enter", "raw_syscalls:sys_exit")
DATA = ".perftriage-perf.data"  # perf's own file, in the recording until converted


def tracefs() -> Path | None:
    return next((p for p in TRACEFS if (p / "events").is_dir()), None)


def perf_problem() -> str | None:
    """Why perf cannot record the kernel here (None when it can)."""
    if shutil.which("perf") is None:
        return "perf is not installed (Debian: sudo apt-get install linux-perf)"
    if os.geteuid() != 0:
        try:
            paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
        except (OSError, ValueError):
            paranoid = 2
        if paranoid > -1:
            return "perf needs root to record the kernel's tracepoints (or kernel.perf_event_paranoid = -1)"
    fs = tracefs()
    if fs is None or not os.access(fs / "events", os.R_OK):
        return "the kernel's tracepoints are not readable (tracefs not mounted at /sys/kernel/tracing)"
    return None


def perf_tracepoints(fs: Path | None = None) -> list[str]:
    """The kernel's names of the tracepoints the graph reads that this kernel has."""
    fs = fs or tracefs()
    names, _wildcards, _syscalls = kernel_tracepoints()
    out = []
    for name in names:
        tp = TRACEPOINTS.get(name) or next((f"{g}:{name}" for g in GROUPS if name.startswith(g)), None)
        if tp is None:
            continue  # lttng_statedump_*: LTTng's own
        group, event = tp.split(":")
        if fs is not None and (fs / "events" / group / event).is_dir() and tp not in out:
            out.append(tp)
    return out


@dataclass
class PerfKernel:
    """perf recording the kernel into ``output``/kernel (CTF) for the time of a recording."""

    output: Path
    tracepoints: list[str]

    @property
    def data(self) -> Path:
        return self.output / DATA

    @property
    def trace(self) -> Path:
        return self.output / "kernel"

    def record_command(self) -> list[str]:
        cmd = ["perf", "record", "-q", "-a", "-k", "mono", "-o", str(self.data)]
        for tp in self.tracepoints:
            cmd += ["-e", tp]
        for tp in SYSCALLS:  # perf's own system calls left out: its writes would trace themselves
            cmd += ["-e", tp, "--exclude-perf"]
        return cmd

    def convert_command(self) -> list[str]:
        return convert_argv(self.data, self.trace)

    def shell(self) -> str:
        return "\n".join([shlex.join(self.record_command()) + " &", "# ... until the recording stops: kill -INT %1",
                          shlex.join(self.convert_command()), shlex.join(["rm", str(self.data)])])

    def start(self, timeout: float = 10.0) -> subprocess.Popen:
        """perf recording, once its events are on (its data file begun), or PerfError."""
        self.output.mkdir(parents=True, exist_ok=True)
        try:
            proc = subprocess.Popen(self.record_command(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    start_new_session=True)  # Ctrl-C is ours to pass on, when we stop it
        except OSError as exc:
            raise PerfError(f"perf record: {exc.strerror or exc}") from None
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if proc.poll() is not None:
                raise PerfError(f"perf record: {_last_line(proc.stderr.read()) or f'exit {proc.returncode}'}")
            if self.data.exists() and self.data.stat().st_size > 0:
                time.sleep(0.2)  # its events are enabled once the header is written
                return proc
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        raise PerfError("perf record did not start within 10 s")

    def stop(self, proc: subprocess.Popen) -> int:
        """perf stopped (it writes out its buffers), its data converted to CTF and removed; the
        trace's bytes. PerfError when the conversion fails (perf.data is then kept)."""
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if not self.data.exists():
            raise PerfError(f"perf record wrote nothing: {_last_line(proc.stderr.read()) or 'no reason given'}")
        done = subprocess.run(self.convert_command(), capture_output=True, text=True)
        if done.returncode != 0 or not (self.trace / "metadata").exists():
            raise PerfError(f"perf data convert --to-ctf: {_last_line(done.stderr + done.stdout) or 'failed'} "
                            f"(the recording is kept in {self.data})")
        self.data.unlink()
        return sum(p.stat().st_size for p in self.trace.iterdir() if p.is_file())


class PerfError(Exception):
    """perf could not record or convert: its words, one line."""


def _last_line(text: str | bytes) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""
