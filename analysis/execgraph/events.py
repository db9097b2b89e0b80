"""The kernel events the execution graph reads, their fields, and the row category of each."""

from __future__ import annotations

from .netmatch import PACKET_FIELDS

# row categories
(C_IGNORE, C_SWITCH, C_WAKING, C_WAKEUP, C_WAKEUP_NEW, C_TTWU, C_FORK, C_EXIT, C_STATEDUMP,
 C_SC_ENTRY, C_SC_EXIT, C_IRQ_IN, C_IRQ_OUT, C_SOFT_IN, C_SOFT_OUT, C_HRT_IN, C_HRT_OUT, C_IPI_IN,
 C_IPI_OUT, C_EXEC, C_PKT_IN, C_PKT_OUT, C_NET_SEND, C_NET_RECV) = range(24)

EVENT_CATEGORY = {
    "sched_switch": C_SWITCH,
    "sched_waking": C_WAKING,
    "sched_wakeup": C_WAKEUP,
    "sched_wakeup_new": C_WAKEUP_NEW,
    "sched_ttwu": C_TTWU,
    "sched_process_fork": C_FORK,
    "sched_process_exit": C_EXIT,
    "sched_process_exec": C_EXEC,
    "lttng_statedump_process_state": C_STATEDUMP,
    "irq_handler_entry": C_IRQ_IN,
    "irq_handler_exit": C_IRQ_OUT,
    "irq_softirq_entry": C_SOFT_IN,
    "irq_softirq_exit": C_SOFT_OUT,
    "timer_hrtimer_expire_entry": C_HRT_IN,
    "timer_hrtimer_expire_exit": C_HRT_OUT,
    "do_IRQ_entry": C_IRQ_IN,
    "do_IRQ_return": C_IRQ_OUT,
    "netif_receive_skb_internal_entry": C_PKT_IN,
    "netif_receive_skb_internal_return": C_PKT_OUT,
    "net_dev_queue": C_NET_SEND,
    "net_if_receive_skb": C_NET_RECV,
    "netif_receive_skb": C_NET_RECV,
}


def categorize(name: str) -> int:
    c = EVENT_CATEGORY.get(name)
    if c is not None:
        return c
    if name.startswith("syscall_entry_"):
        return C_SC_ENTRY
    if name.startswith("syscall_exit_"):
        return C_SC_EXIT
    if name.startswith("x86_irq_vectors_"):
        return C_IPI_IN if name.endswith("_entry") else C_IPI_OUT if name.endswith("_exit") else C_IGNORE
    return C_IGNORE


GRAPH_EVENTS = [*EVENT_CATEGORY, "syscall_entry_*", "syscall_exit_*", "x86_irq_vectors_*"]
GRAPH_FIELDS = {
    "sched_switch": ("prev_tid", "prev_state", "next_tid", "prev_comm", "next_comm"),
    "sched_waking": ("tid",),
    "sched_wakeup": ("tid",),
    "sched_wakeup_new": ("tid",),
    "sched_ttwu": ("tid",),
    "sched_process_fork": ("parent_tid", "parent_pid", "child_tid", "child_pid", "child_comm"),
    "sched_process_exit": ("tid",),
    "sched_process_exec": ("tid", "filename"),
    "lttng_statedump_process_state": ("tid", "pid", "status", "name", "type", "ppid"),
    "irq_handler_entry": ("irq",),
    "irq_handler_exit": ("irq",),
    "do_IRQ_entry": ("irq",),
    "irq_softirq_entry": ("vec",),
    "irq_softirq_exit": ("vec",),
    "net_dev_queue": ("skbaddr", *PACKET_FIELDS),
    "net_if_receive_skb": ("skbaddr", *PACKET_FIELDS),
    "netif_receive_skb": ("skbaddr", *PACKET_FIELDS),
}

# system calls that say what a blocked thread waits for, whoever wakes it (a wake-up the trace
# lost with an idle CPU's events, a kworker): a sleep until its timer fires, a sync until the disk
# has written (the path's BS and BD where no wake-up says; the thread metrics' Disk wait)
SLEEP_CALLS = frozenset({"nanosleep", "clock_nanosleep", "clock_nanosleep_time64"})
SYNC_CALLS = frozenset({"fsync", "fdatasync", "sync_file_range", "sync_file_range2", "msync", "syncfs", "sync"})
