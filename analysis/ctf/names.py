"""Canonical LTTng event names: one name per event, whatever the tracer version.

LTTng 2.7 renamed several kernel events. Analyses only ever see the canonical (>= 2.7) names:

===============================  ===================================
older name                       canonical name
===============================  ===================================
``sys_<name>``                   ``syscall_entry_<name>``
``exit_syscall``                 ``syscall_exit_unknown``
``compat_syscall_entry_<name>``  ``syscall_entry_<name>``
``compat_syscall_exit_<name>``   ``syscall_exit_<name>``
``softirq_{entry,exit,raise}``   ``irq_softirq_{entry,exit,raise}``
``hrtimer_<x>``                  ``timer_hrtimer_<x>``
``sched_process_fork`` etc.      unchanged
===============================  ===================================
"""

from __future__ import annotations

SYSCALL_ENTRY = "syscall_entry_"
SYSCALL_EXIT = "syscall_exit_"

_PREFIX_RENAMES = (
    ("compat_syscall_entry_", SYSCALL_ENTRY),
    ("compat_syscall_exit_", SYSCALL_EXIT),
    ("softirq_", "irq_softirq_"),
    ("hrtimer_", "timer_hrtimer_"),
)


def canonical_event_name(name: str) -> str:
    """The name analyses use for a raw event name (see the module docstring)."""
    if name.startswith("sys_"):
        return SYSCALL_ENTRY + name[4:]
    if name == "exit_syscall":
        return SYSCALL_EXIT + "unknown"
    for old, new in _PREFIX_RENAMES:
        if name.startswith(old):
            return new + name[len(old):]
    return name


def syscall_name(event_name: str) -> str | None:
    """``syscall_entry_read`` -> ``read``; None for other events."""
    if event_name.startswith(SYSCALL_ENTRY):
        return event_name[len(SYSCALL_ENTRY):]
    return None
