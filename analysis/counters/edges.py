"""Call edges between the servers, from counters that name both ends.

A service mesh or a monitoring stack exports per-edge figures (a call latency, a request rate)
with the caller and the callee in the name: ``frontend_checkoutservice``,
``frontend->checkoutservice``, often one file per side that measures them (the caller's view,
"source", and the callee's, "destination", as Istio's ``reporter`` label). perftriage reads such
a file as a server of its own (a *view*): its unusual intervals are then not about the file but
about a service: each callee's edges make intervals of their own (separate calls, separate
events), and a caller whose calls moved with the calls it makes into a slow callee is said to
wait for it (a slow service slows the calls into it and the calls into its callers).

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

    def by_callee(self) -> dict[str, list[int]]:
        """The edge counters by callee."""
        out: dict[str, list[int]] = {}
        for c, (_, callee) in sorted(self.ends.items()):
            out.setdefault(callee, []).append(c)
        return out

    def twin(self, view: int) -> int | None:
        """The other view of the same edges (the callee's side of the caller's), if there is one."""
        others = [v for v in self.views if v != view]
        return others[0] if len(others) == 1 else None


def attribute(intervals: list, edges: Edges) -> None:
    """Of the views' intervals (each about one callee), marks ``twin`` those another one says:

    - the same calls seen by both sides: overlapping intervals about the same callee on the two
      views are one event; the callers' side's is kept where the names tell the sides, else the
      strongest;
    - a caller waiting for its callee: where the calls into A and the calls from A into B moved at
      once, A's interval is B's (a slow service slows the calls into it and the calls into its
      callers, which wait for it): B's lists A in ``waiting``, down the chain to the last callee.
    """
    views = [iv for iv in intervals if iv.about]

    def overlap(a, b) -> bool:
        return a.start <= b.end and b.start <= a.end

    def rank(iv):
        return edges.sides.get(iv.server) == "caller", iv.score

    for iv in sorted(views, key=rank, reverse=True):
        if not iv.twin:
            for other in views:
                if other is not iv and not other.twin and other.about == iv.about and overlap(iv, other):
                    other.twin = True
    kept = [iv for iv in views if not iv.twin]
    moved = {id(iv): {edges.ends[c][0] for c, *_ in iv.counters if c in edges.ends} for iv in kept}  # its callers
    for iv in kept:  # iv about A, waiting for B: A calls B (an edge A -> B moved in B's interval)
        down = [b for b in kept if b is not iv and overlap(iv, b) and iv.about in moved[id(b)]]
        while down:
            b = down[0]
            further = [x for x in kept if x is not b and x is not iv and overlap(b, x) and b.about in moved[id(x)]
                       and not x.twin]
            if not further:
                break
            down = further
        if down and not iv.twin:
            iv.twin = True
            down[0].waiting.append(iv.about)


def wait_for_callees(intervals: list, edges: Edges, servers: list[str], values) -> list:
    """``intervals`` ranked again, a server's own interval just under the view's interval about a
    callee it waits for (its ``score`` lowered, when it was above), and ``waits_for`` set: the two
    overlap, the server's calls into the callee moved, and the callee measures the rise itself
    (its side's view: the time goes in the callee, not on the way, and not in the caller, whose
    own slowness lengthens its calls only as the caller measures them). A slow service slows its
    callers: the callee is the first to look at."""
    callee_side = [v for v in edges.views if edges.sides.get(v) == "callee"]
    if not callee_side:
        return intervals
    ends = edges.ends

    def rose(b, c: int) -> bool:  # the callee's own measure of the calls ``c`` rose over b's span
        series = np.asarray(values[callee_side[0], c], dtype=float)
        span = series[b.start:b.end + 1]
        if not np.isfinite(span).any():
            return False
        norm = np.nanmedian(series)
        return bool(np.isfinite(norm) and np.nanmax(span) > 2 * max(norm, 1e-12))

    kept = [b for b in intervals if b.about and not b.twin]
    after: dict[int, list] = {}  # a view interval's id -> the server intervals that wait for it
    for iv in intervals:
        if iv.about:
            continue
        me = {servers[iv.server], (service_of_pod(servers[iv.server]) or "").lower()}  # a replica: its workload too
        for b in kept:
            if (b.start <= iv.end and iv.start <= b.end and b.about not in me
                    and any(c in ends and ends[c][0] in me and rose(b, c) for c, *_ in b.counters)):
                iv.waits_for = b.about
                after.setdefault(id(b), []).append(iv)
                break
    if not after:
        return intervals
    by_id = {id(b): b for b in kept}
    for b, ws in after.items():  # ranked just under the interval it waits for, when it was above
        for w in ws:
            w.score = min(w.score, by_id[b].score * (1 - 1e-9))
    return sorted(intervals, key=lambda iv: -iv.score)


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
