"""The states of a request's critical path (paper 001's execution states), their names and their
letters in text timelines. No numpy here: the app draws with these before it imports any analysis."""

STATES = ("RU", "RS", "BP", "BD", "BN", "BS", "BI", "BF", "BT")
STATE_NAMES = {
    "RU": "running in user mode",
    "RS": "running in a system call",
    "BP": "preempted (runnable, waiting for a CPU)",
    "BD": "blocked on disk",
    "BN": "blocked on network",
    "BS": "blocked on a timer",
    "BI": "blocked on another interrupt",
    "BF": "blocked in futex (waker unknown)",
    "BT": "blocked on a task that could not be followed",
}
#: what a state means, in the words of a ticket
STATE_WORDS = {
    "RU": "running on a CPU",
    "RS": "running in system calls",
    "BP": "waiting for a CPU",
    "BD": "waiting for the disk",
    "BN": "waiting for the network",
    "BS": "sleeping (timers)",
    "BI": "waiting for a device interrupt",
    "BF": "waiting on a lock (futex)",
    "BT": "waiting for a task that could not be followed",
}
WAITS = ("BP", "BD", "BN", "BS", "BI", "BF", "BT")
NSTATES = len(STATES)

#: one character per state in text timelines: running in lower case, waits in upper case
STATE_CHAR = {"RU": "u", "RS": "s", "BP": "p", "BD": "D", "BN": "N", "BS": "T", "BI": "I", "BF": "F", "BT": "?"}
