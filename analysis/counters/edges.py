"""Call edges between the servers, from counters that name both ends.

A service mesh or a monitoring stack exports per-edge figures (a call latency, a request rate)
with the caller and the callee in the name: ``frontend_checkoutservice``,
``frontend->checkoutservice``, often one file per side that measures them (the caller's view,
"source", and the callee's, "destination", as Istio's ``reporter`` label). perftriage reads such
a file as a server of its own (a *view*): its unusual intervals are then not about the file but
about a service, the callee of the edges that moved. When several edges moved, the callee that
is not itself the caller of another moved edge (the most downstream): a slow service slows the
calls into it and the calls into its callers, which wait for it.

Names match a server's name or its Kubernetes workload (``checkoutservice-578fcf4766-9csqn`` is
``checkoutservice``), case aside. A callee with several servers (replicas) is named by its
workload. A view is a server whose counters with a sample are mostly edges; which side it
measures is read from its name (source / client / caller / outbound against destination /
server / callee / inbound), when it says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from perftriage.analysis.spans.k8s import service_of_pod

from .table import CounterSet

_SEP = re.compile(r"\s*(?:->|→|=>|_|:)\s*")
_CALLER = re.compile(r"(?:^|[^a-z])(?:source|src|client|caller|outbound)(?:$|[^a-z])")
_CALLEE = re.compile(r"(?:^|[^a-z])(?:destination|dest|dst|server|callee|inbound)(?:$|[^a-z])")


@dataclass
class Edges:
    ends: dict[int, tuple[str, str]]  # edge counter -> (caller, callee): a server's name or a workload's
    views: list[int]  # the servers whose counters are edges
    sides: dict[int, str]  # view -> "caller" / "callee" / "" (its name does not say)

    def about(self, counters: list[int]) -> str:
        """The service the moved ``counters`` (strongest first) of a view point at: the most
        downstream callee of the edges among them; "" when none is an edge."""
        moved = [self.ends[c] for c in counters if c in self.ends]
        callers = {a for a, _ in moved}
        downstream = [b for _, b in moved if b not in callers]
        return (downstream or [b for _, b in moved] or [""])[0]

    def twin(self, view: int) -> int | None:
        """The other view of the same edges (the callee's side of the caller's), if there is one."""
        others = [v for v in self.views if v != view]
        return others[0] if len(others) == 1 else None


def attribute(intervals: list, edges: Edges) -> None:
    """Sets ``about`` on the intervals of views (the callee of the edges that moved) and ``twin``
    on all but one of the intervals that overlap in time across the views: the same calls seen
    by both sides are one event, about the callee of the edges that moved on either side; the
    interval kept is the callers' side's where the names tell the sides, else the strongest."""
    views = sorted((iv for iv in intervals if iv.server in edges.sides), key=lambda iv: iv.start)
    groups: list[list] = []
    end = -1
    for iv in views:
        if groups and iv.start <= end:
            groups[-1].append(iv)
            end = max(end, iv.end)
        else:
            groups.append([iv])
            end = iv.end
    for group in groups:
        moved = sorted(((z, c) for iv in group for c, z, *_ in iv.counters), reverse=True)
        about = edges.about(list(dict.fromkeys(c for _, c in moved)))
        if not about:
            continue
        keep = max(group, key=lambda iv: (edges.sides.get(iv.server) == "caller", iv.peak_z * iv.points ** 0.5))
        for iv in group:
            iv.about, iv.twin = about, iv is not keep


def find_edges(cs: CounterSet) -> Edges | None:
    """The edge counters and the views among ``cs``'s servers; None when there are none."""
    if len(cs.servers) < 3 or not cs.counters:
        return None
    names: dict[str, list[str]] = {}  # a name in lower case -> the servers it names
    for name in cs.servers:
        names.setdefault(name.lower(), []).append(name)
        workload = service_of_pod(name)
        if workload and workload.lower() != name.lower():
            names.setdefault(workload.lower(), []).append(name)
    ends: dict[int, tuple[str, str]] = {}
    for c, counter in enumerate(cs.counters):
        e = _split(counter, names)
        if e is not None:
            ends[c] = e
    if not ends:
        return None
    values = np.asarray(cs.values)
    has = np.array([np.isfinite(values[s]).any(axis=1) for s in range(len(cs.servers))])  # (S, C), a server at a time
    edge = np.zeros(len(cs.counters), bool)
    edge[list(ends)] = True
    n_edge, n_all = has[:, edge].sum(axis=1), has.sum(axis=1)
    views = [int(s) for s in np.flatnonzero((n_edge > 0) & (2 * n_edge >= n_all))]
    # a view's edges name other servers: a server that is an end of its own counters is none
    views = [s for s in views if not any(cs.servers[s] in (a, b) for a, b in ends.values())]
    if not views:
        return None
    return Edges(ends, views, {s: _side(cs.servers[s]) for s in views})


def _split(counter: str, names: dict[str, list[str]]) -> tuple[str, str] | None:
    low = counter.strip().lower()
    for m in _SEP.finditer(low):
        a, b = low[:m.start()], low[m.end():]
        if a in names and b in names and a != b:
            return _one(a, names), _one(b, names)
    return None


def _one(key: str, names: dict[str, list[str]]) -> str:
    """The server a name stands for, or the workload when it has several (replicas)."""
    found = names[key]
    return found[0] if len(found) == 1 else key


def _side(view: str) -> str:
    low = view.lower()
    caller, callee = bool(_CALLER.search(low)), bool(_CALLEE.search(low))
    return "caller" if caller and not callee else "callee" if callee and not caller else ""
