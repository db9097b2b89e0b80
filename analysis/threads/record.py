"""Live sampling of a process's threads from /proc, into the long CSV form perftriage reads.

Every ``interval`` seconds, for each thread in /proc/PID/task/: CPU (percent of one core over
the interval, from utime + stime in /proc/PID/task/TID/stat), voluntary and involuntary context
switches, minor and major page faults (per interval), read and write bytes (per interval, from
/proc/PID/task/TID/io when readable); and for the process: virtual and resident memory
(/proc/PID/statm) and open file descriptors (/proc/PID/fd). Threads are grouped by their name
without its number (``worker-12`` -> pool ``worker``, as ``series.pool_name``). One row per thread and sample,
written as it is taken (to a temporary file beside the output, renamed into place when sampling
stops: at the end of ``duration``, when the process exits, or on Ctrl-C; what was sampled is
kept). Cost: one pass over a few small /proc files per thread per interval.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

from perftriage.analysis.ctf.discover import is_ctf_metadata
from perftriage.analysis.errors import InputError

from .series import pool_name

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
METRICS = ("CPU", "VoluntarySwitches", "InvoluntarySwitches", "MinorFaults", "MajorFaults", "ReadBytes",
           "WriteBytes", "VirtualBytes", "ResidentBytes", "Handles")
# written in the header as NAME(UNIT): read back, the findings say them ('CPU rose to 59.5%')
UNITS = {"CPU": "%", "VoluntarySwitches": "switches", "InvoluntarySwitches": "switches", "MinorFaults": "faults",
         "MajorFaults": "faults", "ReadBytes": "bytes", "WriteBytes": "bytes", "VirtualBytes": "bytes",
         "ResidentBytes": "bytes", "Handles": "open files"}


def _stat(path: str):
    """(name, utime + stime ticks, minflt, majflt) from a /proc stat file."""
    with open(path, "rb") as f:
        data = f.read().decode("utf-8", "replace")
    lp, rp = data.index("("), data.rindex(")")
    name = data[lp + 1:rp]
    rest = data[rp + 2:].split()
    # fields after the name: state(3) ... minflt(10) cminflt majflt(12) cmajflt utime(14) stime(15)
    return name, int(rest[11]) + int(rest[12]), int(rest[7]), int(rest[9])


def _status_switches(path: str) -> tuple[int, int]:
    vol = inv = 0
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b"voluntary_ctxt_switches"):
                vol = int(line.split()[1])
            elif line.startswith(b"nonvoluntary_ctxt_switches"):
                inv = int(line.split()[1])
    return vol, inv


def _io(path: str) -> tuple[int, int] | None:
    try:
        with open(path, "rb") as f:
            d = dict(line.split(b":") for line in f.read().splitlines() if b":" in line)
        return int(d[b"read_bytes"]), int(d[b"write_bytes"])
    except (OSError, KeyError, ValueError):
        return None


def sample_once(pid: int) -> tuple[dict, tuple[int, int, int]]:
    """Raw counters of every thread {tid: (name, ticks, minflt, majflt, vol, invol, io)} and the
    process's (virtual bytes, resident bytes, fds)."""
    base = f"/proc/{pid}"
    threads = {}
    for tid in os.listdir(f"{base}/task"):
        t = f"{base}/task/{tid}"
        try:
            name, ticks, minflt, majflt = _stat(f"{t}/stat")
            vol, inv = _status_switches(f"{t}/status")
        except (OSError, ValueError, IndexError):
            continue  # the thread ended between listdir and read
        threads[int(tid)] = (name, ticks, minflt, majflt, vol, inv, _io(f"{t}/io"))
    with open(f"{base}/statm") as f:
        size, resident = (int(x) for x in f.read().split()[:2])
    try:
        fds = len(os.listdir(f"{base}/fd"))
    except OSError:
        fds = -1
    return threads, (size * PAGE, resident * PAGE, fds)


def _state(pid: int) -> str | None:
    """The process's state letter (R, S, D, Z...), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


class _Stop(Exception):
    """SIGTERM or SIGHUP (the SSH session closing): stop sampling and keep what was sampled."""

    def __init__(self, name: str):
        super().__init__(name)
        self.saved: dict = {}

    @classmethod
    def install(cls) -> "_Stop":
        me = cls("nothing")
        if threading.current_thread() is not threading.main_thread():
            return me

        def handler(signum, frame):
            raise cls(signal.Signals(signum).name)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            me.saved[sig] = signal.signal(sig, handler)
        return me

    def restore(self) -> None:
        for sig, old in self.saved.items():
            signal.signal(sig, old)


def record_threads(pid: int, out: str | os.PathLike, interval: float = 1.0, duration: float | None = None,
                   on_sample=None) -> dict:
    """Sample until ``duration`` passes, the process exits or KeyboardInterrupt; returns a summary."""
    out = Path(out)
    if not Path(f"/proc/{pid}").is_dir():
        raise InputError(f"/proc/{pid}", "no such process")
    try:
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
    except OSError as exc:
        raise InputError(f"/proc/{pid}", exc.strerror or str(exc)) from None
    if out.exists() and out.is_dir():
        raise InputError(out, "is a folder: give a file name for the CSV")
    for folder in [out.resolve().parent, *out.resolve().parent.parents][:4]:
        if is_ctf_metadata(folder / "metadata"):
            raise InputError(out, f"would be written into the trace folder {folder}: trace folders are never written to")
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"
    host = socket.gethostname()
    process = f"{pid}:{comm}"
    samples = rows = 0
    stopped = "duration"
    t_start = time.monotonic()
    prev, prev_t = None, None
    stop = _Stop.install()
    try:
        with open(tmp, "w") as f:
            f.write("time,machine,process,pool,thread," + ",".join(f"{m}({UNITS[m]})" for m in METRICS) + "\n")
            try:
                while True:
                    now = time.monotonic()
                    if _state(pid) in ("Z", "X", None):
                        stopped = "process exited"
                        break
                    try:
                        cur, proc = sample_once(pid)
                    except (FileNotFoundError, ProcessLookupError):
                        stopped = "process exited"
                        break
                    wall = time.time()
                    if prev is not None:
                        dt = max(now - prev_t, 1e-6)
                        for tid, (name, ticks, minflt, majflt, vol, inv, io) in cur.items():
                            p = prev.get(tid)
                            if p is None:
                                continue
                            cpu = 100.0 * (ticks - p[1]) / CLK_TCK / dt
                            rd = wr = ""
                            if io is not None and p[6] is not None:
                                rd, wr = io[0] - p[6][0], io[1] - p[6][1]
                            pool = pool_name(name)
                            f.write(f"{wall:.3f},{host},{process},{pool},{tid},{cpu:.2f},{vol - p[4]},{inv - p[5]},"
                                    f"{minflt - p[2]},{majflt - p[3]},{rd},{wr},{proc[0]},{proc[1]},{proc[2]}\n")
                            rows += 1
                        samples += 1
                        f.flush()
                        if on_sample:
                            on_sample(samples, len(cur))
                    prev, prev_t = cur, now
                    if duration is not None and now - t_start >= duration:
                        break
                    wait = interval - (time.monotonic() - now)
                    if duration is not None:  # the last sample at the end of --duration, however long the interval
                        wait = min(wait, t_start + duration - time.monotonic())
                    time.sleep(max(0.0, wait))
            except KeyboardInterrupt:
                stopped = "interrupted"
            except _Stop as exc:
                stopped = f"stopped by {exc.args[0]}"
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)  # never a hidden partial file left behind
        raise
    finally:
        stop.restore()
    return {"out": str(out), "samples": samples, "rows": rows, "stopped": stopped, "process": process}
