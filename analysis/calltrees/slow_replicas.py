"""Replicas slower than their peers at the same methods, by their calls' own time: for when
CloudDiag's Robust PCA flags nothing (a replica 1.5x slower whose methods are a small part of
their categories' requests: its columns stay near the low-rank part). A method's calls on one
replica against its calls on the service's other replicas (three or more), one-sided
Mann-Whitney with every (method, replica) tested counted, a median ratio of ``min_ratio`` or
more, and adding ``min_added`` or more to the time of the requests that call it there
(added_time.py). A method slow on every replica is no replica's (what_changed.method_split says it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from perftriage.analysis.spans.table import SpanTable
from perftriage.analysis.stats import mann_whitney_p

from .added_time import MIN_ADDED, added_share, request_latency
from .clouddiag import span_self_time
from .compare import grouped


@dataclass
class SlowReplica:
    replica: str
    service: str
    methods: list[tuple[str, float, float, float, int, int, float]]  # (method, ratio, median ms, peers' median ms,
    # calls, peers' calls, what it adds to its requests there: a fraction of their median latency), the strongest first
    p: float  # the smallest, times the number of (method, replica) tested
    peers: int  # the service's other replicas
    tested: int
    params: dict = field(default_factory=dict)

    def headline(self) -> str:
        m, ratio = self.methods[0][0], self.methods[0][1]
        more = f" and {len(self.methods) - 1} more of its methods" if len(self.methods) > 1 else ""
        return (f"{self.replica} is slower than its {self.peers} peers: {m} took {ratio:.2f}x as long there{more}")


def slow_replicas(sp: SpanTable, min_calls: int = 50, min_ratio: float = 1.2, alpha: float = 1e-6,
                  min_added: float = MIN_ADDED) -> list[SlowReplica]:
    """The replicas whose own time at some methods is above their peers', most certain first."""
    own = span_self_time(sp).astype(np.float64)
    latency = request_latency(sp)
    d = np.log(np.maximum(own, 1.0))
    found = []  # (p, ratio, method, replica, mine, others)
    tested = 0
    for m, rows in grouped(sp.method, np.arange(len(sp.method))).items():
        reps = sp.replica[rows]
        names = np.unique(reps)
        if len(names) < 3:  # a replica against one other says nothing of which is the odd one
            continue
        for r in names.tolist():
            mine, others = rows[reps == r], rows[reps != r]
            if len(mine) < min_calls or len(others) < min_calls:
                continue
            tested += 1
            found.append((mann_whitney_p(d[mine], d[others], "greater"),
                          float(np.median(own[mine])) / max(float(np.median(own[others])), 1e-9),
                          m, r, mine, others))
    params = {"replica_min_calls": min_calls, "replica_min_ratio": min_ratio, "replica_alpha": alpha,
              "replica_min_added": min_added}
    slow: dict[int, SlowReplica] = {}
    for p, ratio, m, r, mine, others in sorted(found, key=lambda f: (f[0], -f[1])):
        if p * tested >= alpha or ratio < min_ratio:
            continue
        added = added_share(sp, latency, own, others, mine)[0]
        if added < min_added:  # (NaN, requests without a root: not judged)
            continue
        name = sp.replicas[r]
        rec = slow.get(r)
        if rec is None:
            service = sp.services[int(sp.service[mine[0]])]
            peers = len(np.unique(sp.replica[(sp.service == sp.service[mine[0]])])) - 1
            rec = slow[r] = SlowReplica(name, service, [], min(p * tested, 1.0), peers, tested, params)
        rec.methods.append((sp.methods[m], ratio, float(np.median(own[mine])) / 1e6,
                            float(np.median(own[others])) / 1e6, len(mine), len(others), added))
    return list(slow.values())
