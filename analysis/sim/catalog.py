"""The event classes the simulator emits, with LTTng 2.10+ names and payload layouts.

Each class lists its payload fields (:class:`FieldDef`, as lttng-modules / lttng-ust declare
them) and how each is filled from a simulated event record: the record is ``(ts, cpu, class,
s0..s6)``; a field takes a slot (``0``..``6``), a constant (``("const", v)``) or another field's
value (``("same", name)``). String-valued slots hold codes into the simulation's string pool.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perftriage.analysis.ctf.writer import EventClassDef, FieldDef

NSLOTS = 7


@dataclass(frozen=True)
class SimClass:
    name: str
    fields: tuple  # ((name, kind, source), ...); source: slot int, ("const", v) or ("same", field)
    domain: str = "kernel"
    loglevel: int | None = None

    @property
    def defn(self) -> EventClassDef:
        return EventClassDef(self.name, tuple(FieldDef(n, k) for n, k, _ in self.fields), self.loglevel)

    def slot_of(self, field: str) -> int:
        for n, _, src in self.fields:
            if n == field and isinstance(src, int):
                return src
        raise KeyError(f"{self.name}.{field} is not filled from a slot")


def tcp_header_slots(saddr: int, daddr: int, sport: int, dport: int, seq: int, ack: int, flags: int,
                     tot_len: int, ip_id: int = 0) -> tuple[int, int, int, int]:
    """An IPv4 + TCP header packed into the four record slots of a net event (addresses as
    32-bit integers, 10.0.0.1 = 0x0A000001)."""
    def s64(x):
        return x - (1 << 64) if x >= (1 << 63) else x

    return (s64((saddr & 0xFFFFFFFF) << 32 | (daddr & 0xFFFFFFFF)),
            (1 << 48) | (flags & 0x1FF) << 32 | (sport & 0xFFFF) << 16 | (dport & 0xFFFF),
            s64((seq & 0xFFFFFFFF) << 32 | (ack & 0xFFFFFFFF)),
            (tot_len & 0xFFFF) | (ip_id & 0xFFFF) << 16)


def unpack_tcp_header(s3, s4, s5, s6) -> dict:
    """The writer's ``nh_*`` columns from slots packed by :func:`tcp_header_slots`."""
    u3, u5 = np.asarray(s3).astype(np.int64).view(np.uint64), np.asarray(s5).astype(np.int64).view(np.uint64)
    s4, s6 = np.asarray(s4, np.int64), np.asarray(s6, np.int64)
    has = (s4 >> 48) & 1
    return {"nh_type": has, "nh_protocol": has * 6, "nh_saddr": (u3 >> 32).astype(np.int64),
            "nh_daddr": (u3 & 0xFFFFFFFF).astype(np.int64), "nh_flags": (s4 >> 32) & 0x1FF,
            "nh_sport": (s4 >> 16) & 0xFFFF, "nh_dport": s4 & 0xFFFF, "nh_seq": (u5 >> 32).astype(np.int64),
            "nh_ack": (u5 & 0xFFFFFFFF).astype(np.int64), "nh_tot_len": s6 & 0xFFFF, "nh_id": (s6 >> 16) & 0xFFFF}


def _c(name, *fields, domain="kernel", loglevel=None):
    return SimClass(name, tuple(fields), domain, loglevel)


def _entry(name, *fields):
    return _c("syscall_entry_" + name, *fields)


def _exit(name, *fields):
    return _c("syscall_exit_" + name, ("ret", "i64", 0), *fields)


KERNEL_CLASSES = [
    _c("sched_switch", ("prev_comm", "chars:16", 0), ("prev_tid", "i32", 1), ("prev_prio", "i32", 2),
       ("prev_state", "i64", 3), ("next_comm", "chars:16", 4), ("next_tid", "i32", 5), ("next_prio", "i32", 6)),
    _c("sched_waking", ("comm", "chars:16", 0), ("tid", "i32", 1), ("prio", "i32", 2), ("target_cpu", "i32", 3)),
    _c("sched_wakeup", ("comm", "chars:16", 0), ("tid", "i32", 1), ("prio", "i32", 2), ("target_cpu", "i32", 3)),
    _c("sched_wakeup_new", ("comm", "chars:16", 0), ("tid", "i32", 1), ("prio", "i32", 2), ("target_cpu", "i32", 3)),
    _c("sched_process_fork", ("parent_comm", "chars:16", 0), ("parent_tid", "i32", 1), ("parent_pid", "i32", 2),
       ("parent_ns_inum", "u32", ("const", 4026531836)), ("child_comm", "chars:16", 3), ("child_tid", "i32", 4),
       ("vtids", "vtids", ("same", "child_tid")), ("child_pid", "i32", 5),
       ("child_ns_inum", "u32", ("const", 4026531836))),
    _c("sched_process_exit", ("comm", "chars:16", 0), ("tid", "i32", 1), ("prio", "i32", 2)),
    _c("lttng_statedump_start"),
    _c("lttng_statedump_process_state", ("tid", "i32", 0), ("vtid", "i32", ("same", "tid")), ("pid", "i32", 1),
       ("vpid", "i32", ("same", "pid")), ("ppid", "i32", 2), ("vppid", "i32", ("same", "ppid")),
       ("name", "chars:16", 3), ("type", "i32", ("const", 0)), ("mode", "i32", ("const", 5)),
       ("submode", "i32", ("const", 0)), ("status", "i32", 4), ("ns_level", "i32", ("const", 0)),
       ("ns_inum", "u32", ("const", 4026531836)), ("cpu", "u32", 5)),
    _c("lttng_statedump_end"),
    _c("irq_handler_entry", ("irq", "i32", 0), ("name", "string", 1)),
    _c("irq_handler_exit", ("irq", "i32", 0), ("ret", "i32", 1)),
    _c("irq_softirq_raise", ("vec", "u32", 0)),
    _c("irq_softirq_entry", ("vec", "u32", 0)),
    _c("irq_softirq_exit", ("vec", "u32", 0)),
    _c("timer_hrtimer_start", ("hrtimer", "x64", 0), ("function", "x64", 1), ("expires", "i64", 2),
       ("softexpires", "i64", ("same", "expires"))),
    _c("timer_hrtimer_cancel", ("hrtimer", "x64", 0)),
    _c("timer_hrtimer_expire_entry", ("hrtimer", "x64", 0), ("now", "i64", 1), ("function", "x64", 2)),
    _c("timer_hrtimer_expire_exit", ("hrtimer", "x64", 0)),
    _c("block_rq_issue", ("dev", "u32", 0), ("sector", "u64", 1), ("nr_sector", "u32", 2), ("bytes", "u32", 3),
       ("tid", "i32", 4), ("rwbs", "u32", 5), ("comm", "chars:16", 6)),
    _c("block_rq_complete", ("dev", "u32", 0), ("sector", "u64", 1), ("nr_sector", "u32", 2), ("error", "i32", 3),
       ("rwbs", "u32", 4)),
    _c("net_dev_queue", ("skbaddr", "x64", 0), ("len", "u32", 1), ("name", "string", 2),
       ("network_header", "netheader", ("net", 3))),
    _c("net_if_receive_skb", ("skbaddr", "x64", 0), ("len", "u32", 1), ("name", "string", 2),
       ("network_header", "netheader", ("net", 3))),
    # system calls (entry fields as lttng-modules 2.10 declares them for x86-64)
    _entry("accept4", ("fd", "i32", 0), ("upeer_sockaddr", "x64", 1), ("upeer_addrlen", "i32", 2), ("flags", "i32", 3)),
    _exit("accept4", ("upeer_addrlen", "i32", 1), ("family", "u16", 2), ("sport", "u16be", 3), ("v4addr", "seq8", 4),
          ("v6addr", "seq16empty", ("const", 0))),
    _entry("read", ("fd", "u32", 0), ("count", "u64", 1)),
    _exit("read", ("buf", "u64", 1)),
    _entry("write", ("fd", "u32", 0), ("buf", "u64", 1), ("count", "u64", 2)),
    _exit("write"),
    _entry("openat", ("dfd", "i32", 0), ("filename", "string", 1), ("flags", "i32", 2), ("mode", "u16", 3)),
    _exit("openat"),
    _entry("close", ("fd", "u32", 0)),
    _exit("close"),
    _entry("newfstat", ("fd", "u32", 0)),
    _exit("newfstat", ("statbuf", "u64", 1)),
    _entry("fcntl", ("fd", "u32", 0), ("cmd", "u32", 1), ("arg", "u64", 2)),
    _exit("fcntl", ("arg", "u64", 1)),
    _entry("futex", ("uaddr", "u64", 0), ("op", "i32", 1), ("val", "u32", 2), ("utime", "u64", 3),
           ("uaddr2", "u64", ("const", 0)), ("val3", "u32", ("const", 0))),
    _exit("futex", ("uaddr", "u64", 1), ("uaddr2", "u64", ("const", 0))),
    _entry("socket", ("family", "i32", 0), ("type", "i32", 1), ("protocol", "i32", 2)),
    _exit("socket"),
    _entry("connect", ("fd", "i32", 0), ("uservaddr", "x64", 1), ("addrlen", "i32", 2), ("family", "u16", 3),
           ("dport", "u16be", 4), ("v4addr", "seq8", 5), ("v6addr", "seq16empty", ("const", 0))),
    _exit("connect"),
    _entry("sendto", ("fd", "i32", 0), ("buff", "u64", 1), ("len", "u64", 2), ("flags", "u32", 3),
           ("addr", "u64", ("const", 0)), ("addr_len", "i32", ("const", 0))),
    _exit("sendto"),
    _entry("recvfrom", ("fd", "i32", 0), ("size", "u64", 1), ("flags", "u32", 2), ("addr_len", "u64", ("const", 0))),
    _exit("recvfrom", ("ubuf", "u64", 1), ("addr", "u64", ("const", 0)), ("addr_len", "u64", ("const", 0))),
    _entry("mmap", ("addr", "x64", 0), ("len", "u64", 1), ("prot", "i32", 2), ("flags", "i32", 3), ("fd", "i32", 4),
           ("offset", "i64", 5)),
    _c("syscall_exit_mmap", ("ret", "x64", 0)),
    _entry("munmap", ("addr", "x64", 0), ("len", "u64", 1)),
    _exit("munmap"),
    _entry("clone", ("clone_flags", "x64", 0), ("newsp", "x64", 1), ("parent_tid", "x64", 2),
           ("child_tid", "x64", 3)),
    _exit("clone"),
    _entry("nanosleep", ("rqtp", "u64", 0)),
    _exit("nanosleep", ("rmtp", "u64", 1)),
]

UST_CONTEXT = (FieldDef("vpid", "i32"), FieldDef("vtid", "i32"), FieldDef("procname", "chars:17"))
# UST records: slots 0..2 are the context (vpid, vtid, procname), the payload starts at slot 3
UST_CLASSES = [
    _c("ust_php:request_entry", ("path", "string", 3), ("uri", "string", 4), ("method", "string", 5),
       ("querystring", "string", 6), domain="ust", loglevel=13),
    _c("ust_php:request_exit", ("path", "string", 3), ("uri", "string", 4), ("method", "string", 5),
       ("querystring", "string", 6), domain="ust", loglevel=13),
]
UST_CONTEXT_SLOTS = {"vpid": 0, "vtid": 1, "procname": 2}

ALL_CLASSES = KERNEL_CLASSES + UST_CLASSES
CODE = {c.name: i for i, c in enumerate(ALL_CLASSES)}
STRING_KINDS = ("string", "chars:16", "chars:17", "seq8")

# softirq vectors (include/linux/interrupt.h)
HI, TIMER_SOFTIRQ, NET_TX, NET_RX, BLOCK, IRQ_POLL, TASKLET, SCHED, HRTIMER_SOFTIRQ, RCU = range(10)
