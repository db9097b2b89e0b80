"""Hand-written event lists become real CTF that babeltrace2 and our reader read back."""

from __future__ import annotations

import subprocess


from perftriage.analysis.ctf.names import canonical_event_name
from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.spec import ReadSpec
from perftriage.analysis.sim.handmade import EPOCH, write_trace

from conftest import needs_babeltrace2, needs_bt2

EVENTS = [
    (1_000, 0, "sched_switch", dict(prev_comm="swapper/0", prev_tid=0, prev_state=0, next_comm="web", next_tid=42, next_prio=120)),
    (2_000, 0, "syscall_entry_read", dict(fd=3, count=4096)),
    (2_500, 0, "ust_php:request_entry", dict(vpid=42, vtid=42, procname="web", uri="/a", path="/x/a.php")),
    (3_000, 1, "irq_handler_entry", dict(irq=30, name="eth0")),
    (3_500, 1, "irq_handler_exit", dict(irq=30, ret=1)),
    (4_000, 0, "syscall_exit_read", dict(ret=4096)),
    (4_500, 0, "ust_php:request_exit", dict(vpid=42, vtid=42, procname="web", uri="/a", path="/x/a.php")),
]


@needs_babeltrace2
def test_babeltrace2_reads_the_hand_written_trace(tmp_path):
    write_trace(tmp_path / "t", EVENTS)
    out = subprocess.run(["babeltrace2", str(tmp_path / "t")], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert len(lines) == len(EVENTS)
    assert "next_tid = 42" in lines[0] and 'name = "eth0"' in out and 'uri = "/a"' in out


@needs_bt2
def test_reader_sees_times_cpus_and_threads(tmp_path):
    write_trace(tmp_path / "t", EVENTS)
    r = CtfReader([tmp_path / "t"], ReadSpec(fields={"syscall_exit_read": ["ret"]}))
    c = r.read_all()
    assert (c.ts - EPOCH).tolist() == [e[0] for e in EVENTS]
    assert c.cpu.tolist() == [e[1] for e in EVENTS]
    assert [r.event_names[e] for e in c.event] == [e[2] for e in EVENTS]
    # events on cpu 0 after the switch run in thread 42; the UST ones carry vtid 42
    assert c.tid.tolist() == [0, 42, 42, -1, -1, 42, 42]
    assert c.fields["ret"][5] == 4096


def test_canonical_names_of_old_lttng_versions():
    assert canonical_event_name("sys_read") == "syscall_entry_read"
    assert canonical_event_name("exit_syscall") == "syscall_exit_unknown"
    assert canonical_event_name("compat_syscall_entry_openat") == "syscall_entry_openat"
    assert canonical_event_name("softirq_entry") == "irq_softirq_entry"
    assert canonical_event_name("hrtimer_expire_entry") == "timer_hrtimer_expire_entry"
    assert canonical_event_name("sched_switch") == "sched_switch"
    assert canonical_event_name("ust_php:request_entry") == "ust_php:request_entry"
