"""The execution graph of kernel traces (Trace Compass's OS execution graph, in arrays): per-thread
state intervals, wake-ups and their contexts, system calls, packets followed within and between
hosts. The request analysis (critical paths) and the thread metrics of a trace both read it.

graph.py (the model), builder.py (built while the trace streams), events.py (what it reads),
intervals.py (the per-thread state machine), contexts.py (interrupt contexts of wake-ups),
store.py (rows laid out by thread), netmatch.py (packets matched between hosts, clock fits).
"""
