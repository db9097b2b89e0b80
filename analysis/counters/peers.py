"""Which servers are peers, that is, can be compared with one another (paper 004 compares a
server with the fleet, and takes the fleet to be alike: the same software under a share of the
same load).

Two tests, in order:

- **by name**: a server's role is its name without what numbers it among its kind (``web-01``,
  ``omi-12``, ``machine-1-3``: web, omi, machine), its domain and port, and a Kubernetes pod's
  generated suffixes (``cartservice-579f59597d-wc2lz``: cartservice); a name that is only an
  address, a number or a generated id (a hash, a UUID) says no kind. When names have that
  structure (some role holds two servers or more), each role is a group: ten web servers and
  three databases are two fleets, not one with three odd servers. Names that all differ say
  nothing: one group.
- **by level**: within a group, on each counter, how far the servers' medians lie from one
  another (their median absolute deviation) against how much a server's own samples vary over
  time (the median of the servers' MADs). Servers of one kind sit near one another's level: the
  ratio is well under 1 on most counters (a simulated fleet 0.03, the ASD production fleet 0.16,
  measured); the pods of ten different services differ more between them than they move (3.0).
  Over 1 on most counters: not peers, and no server of the group is compared with the others.

A group needs three servers to say which one deviates (with two, either could be the odd one).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.units import count_of

from .stats import THREADS, counters_per_block, each_block, nanmedian

MIN_PEERS = 3
NO_ROLE = "named by address"  # the kind of servers whose names are only an address or a number
MAX_RATIO = 1.0  # the servers' levels may differ by up to this many times their own variation

# Kubernetes' generated names (the alphabet of its SafeEncodeString: no vowels, no 0, 1, 3):
# Deployment pods <name>-<replica set hash>-<5>, DaemonSet and Job pods <name>-<5>
_K8S = "[bcdfghjklmnpqrstvwxz2456789]"
_POD = re.compile(rf"(.+?)-{_K8S}{{6,10}}-{_K8S}{{5}}")
_POD_SHORT = re.compile(rf"(.+?)-{_K8S}{{5}}")
_NUMBER = re.compile(r"[-_]?\d+$")
_LETTER = re.compile(r"[-_][a-z]$")  # db-a, db-b
_ID = re.compile(r"[0-9a-f]{12,}|[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}")  # a hash or a UUID: no kind
_ADDRESS = re.compile(r"(\d{1,3}(\.\d{1,3}){3}|\[?[0-9a-f]*:[0-9a-f:]*\]?|\d+)(:\d+)?")


def role(name: str) -> str:
    """What kind of server a name says it is ('' when the name is only an address, a number or a
    generated id: a hash, a UUID)."""
    n = name.strip().lower()
    if _ADDRESS.fullmatch(n) or _ID.fullmatch(n):
        return ""
    n = re.sub(r":\d+$", "", n).split(".")[0]
    m = _POD.fullmatch(n) or _POD_SHORT.fullmatch(n)
    if m:
        n = m.group(1)
    while True:
        m = _NUMBER.search(n) or _LETTER.search(n)
        if m is None or m.start() == 0:
            return n
        n = n[:m.start()]


@dataclass
class Peers:
    """The peer groups of a fleet."""

    group: np.ndarray  # (S,) int: each server's group
    roles: list[str]  # each group's role ('' for the whole fleet when names say nothing)
    compared: np.ndarray  # (G,) bool: the group's servers are compared with one another
    notes: list[str] = field(default_factory=list)
    column: str = ""  # the input's column that named the kinds ('': the names did)

    @property
    def whole_fleet(self) -> bool:
        """One group, all compared: the paper's case."""
        return len(self.roles) == 1 and bool(self.compared[0])

    def members(self, g: int) -> np.ndarray:
        return np.flatnonzero(self.group == g)

    def kind_of(self, s: int) -> np.ndarray | None:
        """The servers of server ``s``'s kind when names or a column make kinds and its kind holds
        MIN_PEERS or more (what it is compared with over time); None: the fleet."""
        if len(self.roles) < 2:
            return None
        m = self.members(int(self.group[s]))
        return m if len(m) >= MIN_PEERS else None

    def of(self, s: int, others: bool = False) -> str:
        """What server ``s`` is compared with: 'the fleet' ('the other servers'), or 'the web
        servers' ('the other web servers') where names make kinds."""
        if len(self.roles) > 1:  # one kind among others; a kind without a name: the servers named by address
            r = self.roles[self.group[s]]
            kind = f"{r} servers" if r else f"servers {self.no_kind}"
            return f"the other {kind}" if others else f"the {kind}"
        return "the other servers" if others else "the fleet"

    @property
    def no_kind(self) -> str:
        return _no_kind(self.column)


def level_ratio(v: np.ndarray) -> tuple[float, int, int, int]:
    """For servers' samples ``v`` (S, C, T): the median over counters of the spread of the
    servers' medians against a server's own spread, the counters where it is over MAX_RATIO, the
    counters weighed, and the counter that differs most (-1: none). Counters seen on fewer than
    three servers are not weighed, nor those that sit still on most servers (a setting, a count
    of failures that stays 0): with no variation to measure levels against, they cannot tell."""
    v = v[:, :, ::-(-v.shape[2] // 500)]  # levels and spreads need no more than 500 points a series
    S, C, T = v.shape
    med, own = np.empty((S, C)), np.empty((S, C))

    def work(lo, hi):  # a few counters at a time: no copy of the cube
        vb = v[:, lo:hi, :]
        med[:, lo:hi] = nanmedian(vb, axis=2)
        own[:, lo:hi] = nanmedian(np.abs(vb - med[:, lo:hi, None]), axis=2)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        each_block(work, C, counters_per_block(S, T, THREADS))
        between = nanmedian(np.abs(med - nanmedian(med, axis=0)), axis=0)
        within = nanmedian(own, axis=0)
    seen = (np.isfinite(med).sum(axis=0) >= MIN_PEERS) & (within > 0)
    r = between[seen] / within[seen]
    if not len(r):
        return 0.0, 0, 0, -1
    worst = int(np.flatnonzero(seen)[int(np.argmax(r))])
    return float(np.median(r)), int((r > MAX_RATIO).sum()), len(r), worst


def find_peers(servers: list[str], values: np.ndarray, counters: list[str] | None = None,
               kinds: list[str] | None = None, column: str = "") -> Peers:
    """Peer groups of the servers (``values``: (S, C, T)), with notes that say what was not
    compared and why. ``kinds``: each server's kind as a column of the input (``column``) names
    it ("": not named); when it names two kinds or more, they make the groups, not the names."""
    S = len(servers)
    named = kinds is not None and len({k for k in kinds if k}) >= 2
    roles = list(kinds) if named else [role(s) for s in servers]
    column = column if named else ""
    names = sorted(set(roles), key=lambda k: (not k, k)) if named else list(dict.fromkeys(roles))
    if not named and (len(names) == S or len(names) == 1):  # names say nothing (all differ) or one kind: one group
        group, names = np.zeros(S, int), [names[0] if len(names) == 1 else ""]
    else:
        group = np.array([names.index(r) for r in roles])
    no_kind = _no_kind(column)
    G = len(names)
    compared, notes = np.zeros(G, bool), []
    alone = []
    for g in range(G):
        idx = np.flatnonzero(group == g)
        if len(idx) < MIN_PEERS:
            alone += [servers[i] for i in idx]
            continue
        ratio, over, n, worst = level_ratio(values if len(idx) == S else values[idx])
        compared[g] = ratio <= MAX_RATIO
        if not compared[g]:
            kind = f"the {len(idx)} {names[g]} servers" if names[g] else \
                f"the {len(idx)} servers" + (f" {no_kind}" if G > 1 else "")
            eg = ""
            if counters is not None and worst >= 0:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    m = nanmedian(values[idx, worst], axis=1)
                m = m[np.isfinite(m)]
                eg = f"; {counters[worst]}: medians {_num(m.min())} .. {_num(m.max())}"
            notes.append(f"{kind} are not peers: their usual levels differ more from one another than each one's "
                         f"varies over time (on {over} of {n} counters{eg}), so none is compared with the others' "
                         "median (PAD's server view; --all-peers compares them); each series is still judged over time")
    if G > 1:
        shown = ", ".join(f"{names[g] or no_kind}: {int((group == g).sum())}" for g in range(min(G, 12)))
        notes.insert(0, f"servers grouped {f'by their {column} column' if column else 'by name'} into {G} kinds ("
                     + shown + (", ..." if G > 12 else "")
                     + "): each compared with its own kind only (--all-peers: all with all)")
    if alone and S >= MIN_PEERS:
        notes.append(f"{count_of(len(alone), 'servers')} with fewer than {MIN_PEERS - 1} others of their kind: not "
                     "compared with others ("
                     + ", ".join(alone[:6]) + ("..." if len(alone) > 6 else "") + ")")
    return Peers(group, names, compared, notes, column)


def _no_kind(column: str) -> str:
    """What the servers without a kind are: named by address, or without a value in the column."""
    return f"without a {column}" if column else NO_ROLE


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"
