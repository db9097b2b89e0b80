"""Kernel traces recorded by perf (``perf record -e sched:...``, ``perf data convert --to-ctf``) in
the names and fields of LTTng's, so that every analysis reads them as it reads an LTTng kernel trace.

What differs, and what the reader does with it:

- **Event names** carry their tracepoint's group (``sched:sched_switch``): the group goes, and is
  put in front where LTTng puts it (``irq:softirq_entry`` -> ``irq_softirq_entry``,
  ``kmem:kmalloc`` -> ``kmem_kmalloc``, ``irq_vectors:X`` -> ``x86_irq_vectors_X``);
  ``syscalls:sys_enter_read`` -> ``syscall_entry_read``. User-space probes (``perf probe -x``:
  ``probe_<binary>:<function>``, ``sdt_<provider>:<name>``) keep their whole name, as a user-space
  tracepoint does.
- **System calls by number** (``raw_syscalls:sys_enter``/``sys_exit``, one event class for all):
  named per event from its ``id`` with the table of the trace's machine (syscall_numbers.py); their
  arguments are an unnamed array and are not decoded.
- **Fields**: the kernel's tracepoints say ``pid`` for a thread (LTTng: ``tid``) and give no
  process of a forked thread (LTTng's ``parent_pid``/``child_pid``); perf adds each event's thread
  and process (``perf_tid``, ``perf_pid``), which the reader takes as the event's thread and process.
- **Host**: the environment's ``host`` (LTTng: ``hostname``).
- **Clock**: perf's own clock counts from the host's boot unless the recording used ``-k mono`` and
  the conversion ``--tod`` (then the metadata's clock offset is the wall time). Read with other
  traces (an LTTng user-space trace of the same run: the requests' markers), such a trace is merged
  with them by time (:func:`joined_clock`): its clock said to count from the epoch, as babeltrace2
  takes LTTng's, and where both count CLOCK_MONOTONIC on one host, with LTTng's offset (perf and
  LTTng each measure the wall time's offset once; theirs differed by 1.4 us here, which put a
  request's first system call before its start marker).
- **perf.data itself** (:func:`convert_perf_data`): converted by this host's perf into a temporary
  folder; what perf converts of a damaged one before it stops is partial data.
"""

from __future__ import annotations

import atexit
import fnmatch
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .metadata import clock_origin_ns
from .names import SYSCALL_ENTRY, SYSCALL_EXIT, canonical_event_name
from .syscall_numbers import BY_MACHINE, X86_64

TRACER = "perf"
BOOT_CLOCK = ("perf's clock without the wall time: the times shown count from the host's boot (record with "
              "-k mono and convert with --tod for wall-clock times)")
NOT_JOINED = ("recorded on perf's own clock, which counts from the host's boot: it cannot be merged by time with "
              "the other traces (record with -k mono and convert with --tod), read it alone")
RAW_ENTRY = "raw_syscalls:sys_enter"  # the name their rows keep until each is named from its number
RAW_EXIT = "raw_syscalls:sys_exit"
RAW = {RAW_ENTRY: SYSCALL_ENTRY, RAW_EXIT: SYSCALL_EXIT}
TID_FIELD, PID_FIELD, SYSCALL_ID_FIELD = "perf_tid", "perf_pid", "id"

_USER_GROUPS = ("probe", "sdt_", "uprobes")
# in every event perf writes: not decoded for a "*" of fields (the payload a user's probe gives)
BOOKKEEPING = frozenset({"perf_ip", "perf_tid", "perf_pid", "perf_id", "perf_period", "perf_cpu", "perf_time",
                         "perf_addr", "perf_callchain", "common_type", "common_flags", "common_preempt_count",
                         "common_pid", "probe_ip", "__probe_ip"})

# LTTng field -> the perf tracepoint's (None: perf has no such field)
_THREAD_IS_PID = {"tid": "pid"}
FIELDS = {
    "sched_switch": {"prev_tid": "prev_pid", "next_tid": "next_pid"},
    "sched_waking": _THREAD_IS_PID,
    "sched_wakeup": _THREAD_IS_PID,
    "sched_wakeup_new": _THREAD_IS_PID,
    "sched_process_exit": _THREAD_IS_PID,
    "sched_process_free": _THREAD_IS_PID,
    "sched_process_exec": _THREAD_IS_PID,
    "sched_migrate_task": _THREAD_IS_PID,
    "sched_stat_runtime": _THREAD_IS_PID,
    "sched_stat_sleep": _THREAD_IS_PID,
    "sched_stat_wait": _THREAD_IS_PID,
    "sched_stat_iowait": _THREAD_IS_PID,
    "sched_stat_blocked": _THREAD_IS_PID,
    "sched_process_fork": {"parent_tid": "parent_pid", "child_tid": "child_pid", "parent_pid": None, "child_pid": None},
}


def is_perf(tracer: str | None) -> bool:
    """A trace whose environment names perf as its tracer (TraceMeta.tracer: "perf", "perf 6.1")."""
    return bool(tracer) and str(tracer).split(" ", 1)[0] == TRACER


def event_name(raw: str) -> str:
    """The name analyses use for a perf event name (see the module docstring); system calls by
    number keep their raw name (RAW_ENTRY, RAW_EXIT) until named per event."""
    if raw in RAW:
        return raw
    group, sep, name = raw.partition(":")
    if not sep or group.startswith(_USER_GROUPS):
        return raw
    if group == "syscalls":
        if name.startswith("sys_enter_"):
            return SYSCALL_ENTRY + name[len("sys_enter_"):]
        if name.startswith("sys_exit_"):
            return SYSCALL_EXIT + name[len("sys_exit_"):]
    if group == "irq_vectors":
        return "x86_irq_vectors_" + name
    if not name.startswith(group):
        name = f"{group}_{name}"
    return canonical_event_name(name)


def field_name(event: str, field: str) -> str | None:
    """The perf field that holds LTTng's ``field`` of ``event`` (None: perf records none)."""
    return FIELDS.get(event, {}).get(field, field)


def raw_keeps(spec, raw: str) -> bool:
    """Whether a spec keeps any system call: the raw class is read when it does, and each row
    kept or not once named."""
    prefix = RAW[raw]
    if spec.events is None:
        return True
    return any(p.startswith(prefix) or fnmatch.fnmatchcase(prefix + "x", p) for p in spec.events)


def raw_fields(spec, raw: str) -> list[str]:
    """The fields any system call is asked for (a raw exit has ``ret``; its entry's arguments are
    an unnamed array, never decoded)."""
    prefix = RAW[raw]
    out: list[str] = []
    for pat, names in spec.fields.items():
        if pat.startswith(prefix) or fnmatch.fnmatchcase(prefix + "x", pat):
            out.extend(n for n in names if n not in out)
    return out


def syscall_table(machine: str | None) -> tuple[str, ...]:
    """Number -> name for a machine (the environment's ``machine``); x86_64's when not known."""
    return BY_MACHINE.get(str(machine or "x86_64"), X86_64)


def syscall_names(prefix: str, ids, table) -> list[str]:
    """Event names of system call numbers: ``syscall_entry_read``; a number the table does not
    know is ``syscall_entry_unknown_<number>``."""
    out = []
    for i in ids:
        name = table[i] if 0 <= i < len(table) else ""
        out.append(prefix + (name or f"unknown_{i}"))
    return out


_CLOCK = re.compile(r"(\bclock\s*\{)(.*?)(\}\s*;)", re.S)


def _clock_value(body: str, key: str) -> str | None:
    m = re.search(rf"\b{key}\s*=\s*(\"[^\"]*\"|[^;]+?)\s*;", body)
    return None if m is None else m.group(1).strip().strip('"')


def joined_clock(perf_text: str, others: list[str]) -> str | None:
    """perf's metadata on the clock of ``others`` (the metadata of the traces read with it, on its
    host), to be merged with them by time; None when its clock counts from boot (no wall time:
    nothing to merge it by). The clock counts from the epoch (babeltrace2 merges only clocks alike);
    its offset is the LTTng trace's where both count CLOCK_MONOTONIC."""
    origin = clock_origin_ns(perf_text)
    blocks = list(_CLOCK.finditer(perf_text))
    if not origin or len(blocks) != 1:  # none, or 0: perf's own clock, from boot
        return None
    body = blocks[0].group(2)
    if (_clock_value(body, "description") or "").lower() == "monotonic":
        for text in others:
            theirs = list(_CLOCK.finditer(text))
            if len(theirs) == 1 and (_clock_value(theirs[0].group(2), "name") or "") == "monotonic":
                if (lttng := clock_origin_ns(text)) is not None:
                    origin = lttng
                    break
    kept = [ln for ln in body.splitlines() if not re.match(r"\s*(offset_s|offset|absolute)\s*=", ln)]
    new_body = "\n".join(kept).rstrip() + f"\n\toffset_s = 0;\n\toffset = {origin};\n\tabsolute = TRUE;\n"
    a, b = blocks[0].span(2)
    return perf_text[:a] + new_body + perf_text[b:]


PERF_DATA_MAGIC = b"PERFILE2"


def is_perf_data(head: bytes) -> bool:
    """A perf recording (perf.data) by its first bytes."""
    return head.startswith(PERF_DATA_MAGIC)


def convert_perf_data(path: Path) -> tuple[Path, str | None]:
    """A perf recording converted to CTF (``perf data convert --tod --to-ctf``) by this host's perf,
    in a temporary folder removed when the process ends, and what was lost when perf stopped
    part-way through a damaged recording (None when it converted it all); InputError (one line)
    when nothing could be converted."""
    from perftriage.analysis.errors import InputError  # noqa: PLC0415

    how = "perf data convert --tod --to-ctf DIR -i FILE on the recording host, then open DIR"
    if shutil.which("perf") is None:
        raise InputError(path, f"a perf recording: perftriage reads it converted to CTF, and perf is not installed "
                               f"here ({how})")
    tmp = Path(tempfile.mkdtemp(prefix="perftriage-perf-"))
    atexit.register(shutil.rmtree, tmp, True)
    out = tmp / (path.name + ".ctf")
    timeout = 60 + path.stat().st_size / 1e6  # perf converts about 14 MB/s here: a damaged file may loop
    for tod in (True, False):  # wall-clock times need the recording's clock data (-k mono): else boot's
        shutil.rmtree(out, ignore_errors=True)
        try:
            done = subprocess.run(convert_argv(path, out, tod), capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(path, f"a perf recording perf could not convert to CTF: {exc}") from None
        if not (out / "metadata").exists():
            continue
        if done.returncode == 0:
            return out, None
        if any(f.stat().st_size for f in out.glob("perf_stream_*")):  # perf stopped part-way: what it wrote
            return out, (f"perf stopped converting it part-way (exit {done.returncode}: "
                         f"{_why(done.stderr + done.stdout)}): what it converted is read")
    raise InputError(path, f"a perf recording perf could not convert to CTF: {_why(done.stderr + done.stdout)} ({how})")


def convert_argv(data: Path, out: Path, tod: bool = True) -> list[str]:
    """perf's command that converts ``data`` (perf.data) to a CTF trace in ``out``, with wall-clock
    times where ``tod``."""
    return ["perf", "data", "convert", *(["--tod"] if tod else []), "--to-ctf", str(out), "-i", str(data)]


def _why(text: str) -> str:
    """perf's words for a failure: its last line that is not its progress summary."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    said = [ln for ln in lines if not ln.startswith("[ perf data convert:")]
    return (said or lines or ["it failed"])[-1]
