"""PAD's investigation as a guided path (paper 004, section IV): with no clue, start from the
comparative analysis (which server, which time, which counter deviates); from the top counter,
its correlations (what moves with it); then the threshold rules, if the user has some. Each
step becomes findings with their evidence and the parameters used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from perftriage.analysis.findings import Finding, Table
from perftriage.analysis.units import count_of

from .comparative import Between, Comparative, between, fleet_onset, server_onset, within
from .correlation import MIN_SAMPLES, Correlation, correlate
from .onset import Onset
from .over_time import OverTime, before, detect_over_time
from .params import CounterParams
from .peers import MIN_PEERS, Peers, find_peers
from .silences import Silence, find_silences
from .rules import Rule, Violation, evaluate
from .table import CounterSet
from .views import STATS, server_view


@dataclass
class ServerDeviation:
    server: int
    counters: list[tuple[int, float]]  # (counter, X), highest first
    onset: Onset | None  # when the server began to deviate (the consensus of its counters' onsets)
    onset_counter: int | None
    counter_onsets: dict[int, Onset | None] = field(default_factory=dict)  # each counter's own


@dataclass
class FleetDeviation:
    counters: list[tuple[int, float, int]]  # (counter, max X over time, points over the threshold)
    onset: Onset | None
    onset_counter: int | None

    def lasting(self, min_gain: float) -> bool:
        """A change that lasts (a step or a ramp that fits), not a swing that comes and goes
        (the busiest hour's latency): only then is it more than information."""
        return self.onset is not None and self.onset.gain >= min_gain


@dataclass
class CounterAnalysis:
    cs: CounterSet
    params: CounterParams
    comparative: Comparative
    servers: list[ServerDeviation]
    fleet: FleetDeviation | None
    correlations: list[Correlation]
    reference: CounterSet | None = None
    between: Between | None = None
    rules: list[Rule] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    asked: list[Correlation] = field(default_factory=list)  # the correlations the user asked for
    over_time: OverTime | None = None  # every series against its history and its peers, as intervals
    peers: Peers | None = None  # which servers are compared with which
    silences: list[Silence] = field(default_factory=list)  # stretches a server sent nothing, the others did


def _consensus(onsets: list[tuple[int, Onset | None]], min_gain: float):
    """The earliest change point that another well-fitted counter confirms (within 2 points): a
    divergence shows first in the counters that move with it directly (actors placed, memory
    held) and later in those that saturate or bend (queues, GC time), while one counter alone
    can be fooled by its own daily swing. No confirmation: the median of the well-fitted points;
    none fitted well: the top counter's."""
    good = sorted(((o.index, c, o) for c, o in onsets if o is not None and o.gain >= min_gain), key=lambda g: g[0])
    for k, (i, c, o) in enumerate(good):
        if any(abs(j - i) <= 2 for n, (j, _, _) in enumerate(good) if n != k):
            return o, c
    if good:
        i, c, o = good[(len(good) - 1) // 2]
        return o, c
    c, o = onsets[0] if onsets else (None, None)
    return o, c


def analyse_counters(cs: CounterSet, params: CounterParams | None = None, reference: CounterSet | None = None,
                     rules: list[Rule] | None = None, correlations: bool = True) -> CounterAnalysis:
    """The guided path: comparative analysis (and the dates of the divergences), then, unless
    ``correlations`` is off, the correlations of the top counters, then the rules."""
    p = params or CounterParams()
    p.validate()
    peers = None if p.all_peers or len(cs.servers) < MIN_PEERS else \
        find_peers(cs.servers, cs.values, cs.counters, cs.kinds, cs.kind_column)
    cp = within(cs, paper_x=p.paper_x, peers=peers)
    notes = list(peers.notes) if peers is not None else []
    # servers: the pairs over the threshold, grouped by server, in the order of their best X
    pairs = [(s, c, x) for s, c, x in cp.top_servers(max(50, p.top * 10)) if x >= p.server_x]
    by_server: dict[int, list[tuple[int, float]]] = {}
    for s, c, x in pairs:
        by_server.setdefault(s, []).append((c, x))
    servers = []
    for s, cx in by_server.items():
        cx = cx[: p.top]
        onsets = [(c, server_onset(cs, s, c)) for c, _ in cx]
        o, oc = _consensus(onsets, p.min_gain)
        servers.append(ServerDeviation(s, cx, o, oc, dict(onsets)))
    # the fleet over time: counters whose median at some time points moves far from the usual
    # (not for one or two servers: their median at a time is a server's own value, its noise
    # beyond 2.5 std at a point in a hundred; the analysis over time judges them)
    by_time = [(c, x, n) for c, x, n in cp.counters_by_time(p.time_x) if x >= p.time_x and n >= 3] \
        if len(cs.servers) >= MIN_PEERS else []
    fleet = None
    if by_time:
        top = by_time[: p.top]
        # dated by the counters that move with it too, when the fleet's median moved at least
        # half as far: a leak shows first, and linearly, in memory held; GC time and latency
        # bend up later
        near = [c for c, x, _ in cp.counters_by_time(p.time_x)[: 3 * p.top] if x >= p.time_x / 2]
        onsets = [(c, fleet_onset(cp.time_median[:, c])) for c in dict.fromkeys([c for c, _, _ in top[:5]] + near)]
        o, oc = _consensus(onsets, max(p.min_gain, 0.9))
        fleet = FleetDeviation(top, o, oc)
    # from the top counter, what moves with it
    corr = []
    if servers and correlations:
        sd = servers[0]
        corr.append(correlate(cs, sd.counters[0][0], sd.server, p.correlation))
    if fleet is not None and correlations:
        corr.append(correlate(cs, fleet.counters[0][0], None, p.correlation))
    asked = []
    for spec in p.correlate:
        name, _, server = spec.partition("@")
        try:
            c = cs.counter_index(name.strip())
            s = cs.server_index(server.strip()) if server else None
        except KeyError as exc:
            notes.append(f"--correlate {spec}: {exc.args[0]}")
            continue
        asked.append(correlate(cs, c, s, p.correlation))
    res = CounterAnalysis(cs, p, cp, servers, fleet, corr, notes=notes, asked=asked, peers=peers,
                          silences=find_silences(cs))
    if p.over_time is not None:
        res.over_time = detect_over_time(cs, p.over_time, peers)  # its notes go with its findings
    if reference is not None:
        res.reference = reference
        res.between = between(cs, reference)
        if res.between.only_here:
            notes.append(f"{count_of(len(res.between.only_here), 'counters')} absent from the reference: "
                         + ", ".join(res.between.only_here[:5]))
    if rules:
        res.rules = list(rules)
        res.violations, rn = evaluate(cs, rules)
        notes += rn
    return res


def _fleet(ca: CounterAnalysis, s: int) -> str:
    """What server ``s`` is compared with: 'the fleet', or 'the web servers' where names make kinds."""
    return ca.peers.of(s) if ca.peers is not None else "the fleet"


def _others(ca: CounterAnalysis, s: int) -> str:
    return ca.peers.of(s, others=True) if ca.peers is not None else "the other servers"


def _num(v: float) -> str:
    if not np.isfinite(v):
        return str(v)
    a = abs(v)
    return f"{v:,.0f}" if a >= 1000 else f"{v:.3g}"


def counter_findings(ca: CounterAnalysis) -> list[Finding]:
    cs, p, cp = ca.cs, ca.params, ca.comparative
    params = {k: v for k, v in asdict(p).items() if k not in ("correlation", "over_time")}
    params.update(servers=len(cs.servers), counters=len(cs.counters), points=cs.n_points, interval_s=cs.interval)
    out = _silence_findings(ca)
    corr_of = {(c.server, c.target): c for c in ca.correlations}
    for rank, sd in enumerate(ca.servers):
        s = sd.server
        c0, x0 = sd.counters[0]
        if cp.paper_x:
            how = [f"details: comparative analysis (server view, the paper's X): X = |global median - "
                   f"{cs.servers[s]}'s median| / global std"]
        else:
            how = [f"details: comparative analysis (server view): X = |{cs.servers[s]}'s median - the other servers' "
                   "median| / the other servers' std (the server is left out of the spread it is measured against; "
                   "--paper-x: the paper's global std)"]
        ev = [f"{cs.counters[c0]}: median {_num(cp.server_median[s, c0])} on {cs.servers[s]} against "
              f"{_num(cp.ref_median[s, c0])} on {_fleet(ca, s) if cp.paper_x else _others(ca, s)} (X = {x0:.1f})"]
        rows = []
        for c, x in sd.counters:
            rows.append([cs.counters[c], f"{x:.2f}", _num(cp.server_median[s, c]), _num(cp.ref_median[s, c]),
                         _num(cp.ref_std[s, c])])
        dated = sd.onset is not None and sd.onset.gain >= p.min_gain
        if sd.onset is not None:
            o = sd.onset
            fit = (f"a {o.kind} in {cs.counters[sd.onset_counter]} from {_num(o.before)} to {_num(o.after)} above the "
                   f"others' median, explaining {o.gain * 100:.0f}% of the variance")
            if dated:
                ev.append(f"diverges from the other servers from {cs.when(o.index)} on ({fit})")
            else:
                ev.append(f"no reliable date: the best fit puts a start at about {cs.when(o.index)} (weak fit: {fit}; "
                          f"a date needs {p.min_gain * 100:.0f}%)")
        ev += _moves_with(cs, corr_of.get((s, c0)), f"moves with {cs.counters[c0]} on {cs.servers[s]}")
        ev += how
        since = f" since {cs.time_label(sd.onset.index)}" if dated else ""
        out.append(Finding(
            analysis="counters", title=f"{cs.servers[s]} deviates from {_fleet(ca, s)}{since}: {cs.counters[c0]}"
                                       + (f" and {count_of(len(sd.counters) - 1, 'more counters')}"
                                          if len(sd.counters) > 1 else ""),
            subject=cs.servers[s], score=float(min(x0, 1e6)), severity="critical" if x0 >= 2 * p.server_x else "warning",
            target={"kind": "server", "server": cs.servers[s], "counter": cs.counters[c0]},
            evidence=ev, tables=[Table(["counter", "X", "server median",
                                        "global median" if cp.paper_x else "others' median",
                                        "global std" if cp.paper_x else "others' std"], rows,
                                       f"{cs.servers[s]}: counters by X"),
                                 _server_view_table(cs, s, c0)], parameters=params))
        if rank >= 9:
            break
    if ca.fleet is not None:
        fd = ca.fleet
        c0, x0, n0 = fd.counters[0]
        ev = ["comparative analysis (time view): X = |global median - median over servers at a time point| / "
              "global std"]
        if fd.onset is not None:
            ev.append(f"the fleet's {cs.counters[fd.onset_counter]} starts to move at {cs.when(fd.onset.index)} "
                      f"({fd.onset.kind}: {_num(fd.onset.before)} -> {_num(fd.onset.after)}, fit {fd.onset.gain:.2f})")
        ev += _moves_with(cs, corr_of.get((None, c0)), f"over the fleet, {cs.counters[c0]} moves with")
        rows = []
        for c, x, n in fd.counters:
            k = int(np.nanargmax(np.nan_to_num(cp.time_x[:, c], nan=-1)))
            rows.append([cs.counters[c], f"{x:.2f}", n, cs.time_label(k), _num(cp.time_median[k, c]),
                         _num(cp.global_median[c])])
        since = f" from {cs.time_label(fd.onset.index)}" if fd.lasting(p.min_gain) else ""
        what = "the whole fleet drifts" if fd.lasting(p.min_gain) else "the fleet's median swings far at times"
        if not fd.lasting(p.min_gain):
            ev.append("no lasting change fits (a step or a ramp): a swing that comes and goes, e.g. the busiest hour")
        out.append(Finding(
            analysis="counters", title=f"{what}{since}: {cs.counters[c0]} and "
                                       f"{count_of(len(fd.counters) - 1, 'more counters')}",
            subject="fleet", score=float(min(x0, 1e6)), severity="warning" if fd.lasting(p.min_gain) else "info",
            evidence=ev,
            tables=[Table(["counter", "max X", f"points with X >= {p.time_x:g}", "worst at", "median then",
                           "global median"], rows, "counters whose fleet-wide median moves")], parameters=params))
    if ca.between is not None:
        b = ca.between
        top = [(i, x) for i, x in b.top(p.top * 2) if x >= p.reference_x]
        if top:
            rows = []
            for i, x in top[: p.top * 2]:
                worst = int(np.nanargmax(np.nan_to_num(b.server_x[:, i], nan=-1)))
                rows.append([b.counters[i], f"{x:.2f}", _num(b.median[i]), _num(b.ref_median[i]), _num(b.ref_std[i]),
                             f"{b.servers[worst]} ({b.server_x[worst, i]:.2f})"])
            out.append(Finding(
                analysis="counters",
                title=f"{count_of(len(top), 'counters')} {'differs' if len(top) == 1 else 'differ'} from the reference: "
                      f"{b.counters[top[0][0]]} first (X {top[0][1]:.2f})",
                subject=b.counters[top[0][0]], score=float(min(top[0][1], 1e6)), severity="warning",
                evidence=[f"comparative analysis between datasets: X = |reference median - median| / reference std "
                          f"(reference: {ca.reference.source})"],
                tables=[Table(["counter", "X", "median", "reference median", "reference std", "most deviating server"],
                              rows)], parameters=params))
    if ca.over_time is not None:
        out.extend(over_time_findings(ca.over_time, cs))
    for cr in ca.asked:
        where = f"on {cs.servers[cr.server]}" if cr.server is not None else "over the fleet"
        strong = cr.strong()
        rows = [[cs.counters[r.counter], f"{r.pearson:+.2f}", f"{r.spearman:+.2f}",
                 f"{r.lag:+d} ({r.lag_r:+.2f})" if r.lag else ""] for r in cr.rows[:20]]
        out.append(Finding(
            analysis="counters",
            title=f"{cs.counters[cr.target]} {where}: {count_of(cr.cells, 'samples')}, too few to correlate"
            if cr.cells < MIN_SAMPLES else
            f"{count_of(len(strong), 'counters')} {'moves' if len(strong) == 1 else 'move'} with "
            f"{cs.counters[cr.target]} {where}",
            subject=cs.counters[cr.target], score=float(len(strong)), severity="info",
            evidence=[f"correlation analysis: |Pearson| or |Spearman| >= {cr.params.threshold:g} over {cr.cells:,} "
                      "samples" + (f" ({'; '.join(cr.notes)})" if cr.notes else "")],
            tables=[Table(["counter", "Pearson", "Spearman", "lag, points (r)"], rows, "strongest first")],
            parameters={"threshold": cr.params.threshold, "max_lag": cr.params.max_lag}))
    for v in ca.violations:
        rows = [[cs.servers[s] if s >= 0 else "fleet", cs.time_label(t) if t >= 0 else "all times", _num(val)]
                for s, t, val in v.items]
        out.append(Finding(
            analysis="counters", title=f"threshold: {count_of(v.n, 'violations')} of {v.rule.describe()}",
            subject=cs.counters[v.counter], score=float(v.n), severity="warning",
            evidence=[f"rule from {v.rule.source}; {v.checked:,} values compared"] + v.notes,
            tables=[Table(["server", "time", "value"], rows, "worst first")], parameters={"rule": asdict(v.rule)},
            target={"kind": "rule", "counter": cs.counters[v.counter], "rule": v.rule.describe()}))
    return out


def _silence_words(cs: CounterSet, si: Silence) -> str:
    """'sent no samples from 2026-01-01 03:00:00 UTC (+3:00:00) to the end of the data (60 points, 60 min)'."""
    dur = _span(cs, si.points)
    if si.stopped:
        return f"sent no samples from {cs.when(si.start)} to the end of the data ({dur})"
    if si.began_late:
        return f"sent no samples until {cs.when(si.end + 1)} ({dur} from the start of the data)"
    return f"sent no samples from {cs.when(si.start)} to {cs.when(si.end)} ({dur})"


def _silence_title(cs: CounterSet, name: str, si: Silence) -> str:
    dur = _span(cs, si.points).split(", ")[-1]
    if si.stopped:
        return f"{name} stopped sending samples at {cs.when(si.start)}: none in the last {dur} of the data"
    if si.began_late:
        return f"{name} began sending samples at {cs.when(si.end + 1)}, {dur} after the start of the data"
    return f"{name} sent no samples for {dur}, from {cs.when(si.start)}"


def _silence_findings(ca: CounterAnalysis) -> list[Finding]:
    """A finding per silence: a server that stopped (an incident still running at the end of the
    data, or a server taken out), one that went quiet for a while, one that began late (a server
    added: information)."""
    cs, out = ca.cs, []
    S = len(cs.servers)
    for si in ca.silences[:20]:
        name = cs.servers[si.server]
        others = round(si.others * (S - 1))
        share = "all the other servers" if others == S - 1 else f"{others} of the {S - 1} other servers"
        ev = [f"{name} {_silence_words(cs, si)}, while {share} sent theirs"]
        if not si.began_late:
            ev.append(f"its last sample before: {cs.when(si.last_before)}")
        if not si.stopped and not si.began_late:
            ev.append(f"its first sample after: {cs.when(si.first_after)}")
        ev.append(f"details: {count_of(si.points, 'grid points')} without a sample of any of its "
                  f"{count_of(len(cs.counters), 'counters')} (a silence: at least 3 points, and 3 times the server's "
                  "usual step between samples, while half the others or more sent theirs)")
        what = "stopped sending samples" if si.stopped else "began late" if si.began_late else "went silent"
        out.append(Finding(
            analysis="counters", title=_silence_title(cs, name, si),
            subject=name, score=float((100 if si.stopped else 50) + 100 * si.points / max(cs.n_points, 1)),
            severity="info" if si.began_late else "warning", evidence=ev,
            parameters={"min_points": 3, "min_others": 0.5, "servers": S, "points": cs.n_points,
                        "interval_s": cs.interval, "what": what},
            target={"kind": "server", "server": name, "counter": cs.counters[0],
                    "from_s": cs.seconds(si.start), "to_s": cs.seconds(si.end)}))
    return out


def _server_view_table(cs: CounterSet, s: int, c: int) -> Table:
    """PAD's server view of one counter: the server's statistics over time beside the same
    statistic over the other servers (their median and range)."""
    sv = server_view(cs, c)
    others = np.arange(len(cs.servers)) != s
    rows = []
    for stat in STATS:
        v = sv.get(stat)
        o = v[others]
        o = o[np.isfinite(o)]
        rows.append([stat, _num(float(v[s])), _num(float(np.median(o))) if len(o) else "-",
                     f"{_num(float(o.min()))} .. {_num(float(o.max()))}" if len(o) else "-"])
    return Table(["statistic", cs.servers[s], "other servers' median", "other servers' range"], rows,
                 f"server view of {cs.counters[c]} (over time, per server)")


def _moves_with(cs: CounterSet, cr: Correlation | None, lead: str) -> list[str]:
    """One evidence line: the counters that move with the counter of interest, strongest first."""
    strong = cr.strong()[:6] if cr is not None else []
    if not strong:
        return []
    return [f"{lead} (|r| >= {cr.params.threshold:g}): "
            + ", ".join(f"{cs.counters[r.counter]} ({_corr(r)})" for r in strong)]


def _corr(r) -> str:
    s = f"r {r.pearson:+.2f}, rho {r.spearman:+.2f}"
    if r.lag:
        s += f"; {r.lag_r:+.2f} when lagged {r.lag:+d} points"
    return s


def _span(cs: CounterSet, points: int) -> str:
    from perftriage.analysis.units import fmt_duration  # noqa: PLC0415

    sec = points * cs.interval
    length = (f"{sec / 86400:.1f} days" if sec >= 2 * 86400 else f"{sec / 3600:.1f} h" if sec >= 2 * 3600
              else fmt_duration(sec * 1e9))
    return f"{points} point{'s' if points != 1 else ''}, {length}"


def _calls_into(cs: CounterSet, edges, iv, twin: int | None) -> str:
    """The plain-words line of a view's interval: which calls, into which service, seen by whom."""
    callers = sorted({edges.ends[c][0] for c, *_ in iv.counters if c in edges.ends})
    side = {"caller": "as the callers measure them", "callee": "as the callee measures them"}.get(
        edges.sides.get(iv.server, ""), "")
    waiting = sorted(set(iv.waiting))
    return (f"calls into {iv.about} from {', '.join(callers) or 'its callers'} left their usual level "
            f"({cs.servers[iv.server]}{': ' + side if side else ''}"
            + (f"; the other side's view is {cs.servers[twin]}" if twin is not None else "") + ")"
            + (f"; the calls into {', '.join(waiting)}, which call{'s' if len(waiting) == 1 else ''} it, moved at "
               "the same time: they wait for it (a slow service slows the calls into it and the calls into its "
               "callers)" if waiting else ""))


def _other_side(cs: CounterSet, edges, iv, c: int, twin: int, level: float, usual: float) -> tuple[str, str]:
    """How the other side measured the same calls at the same point ("; destination_50: 0.003,
    usually 0.003") and, when the sides are known, what the two together say ("" if nothing)."""
    series = np.asarray(cs.values[twin, c], dtype=float)
    if not np.isfinite(series).any():
        return "", ""
    mine = np.asarray(cs.values[iv.server, c, iv.start:iv.end + 1], dtype=float)
    k = iv.start + int(np.nanargmax(np.abs(mine - usual))) if np.isfinite(mine).any() else iv.peak
    there, norm = float(series[k]), float(np.nanmedian(series))
    if not (np.isfinite(there) and np.isfinite(norm)):
        return "", ""
    text = f"; {cs.servers[twin]}: {_num(there)}, usually {_num(norm)}"
    if not (edges.sides.get(iv.server) == "caller" and edges.sides.get(twin) == "callee"
            and level > 2 * max(usual, 1e-12)):
        return text, ""
    if abs(there - norm) <= 0.5 * max(abs(norm), 1e-12):
        return text, ("the callers waited longer while the callee's own measure did not move: the time goes "
                      "between the two (network, a proxy, a queue before the callee), not in the callee's work")
    if there > 2 * max(norm, 1e-12):
        return text, "the callee measures the rise too: the time goes in the callee"
    return text, ""


def over_time_findings(ot: OverTime, cs: CounterSet) -> list[Finding]:
    """One finding per interval (the strongest first), then a table of all of them. Intervals
    that many servers share at once are said to be fleet-wide."""
    p = ot.params
    params = {**asdict(p), "seasonal": ot.seasonal, "period_points": ot.period, "interval_s": cs.interval}
    S = len(cs.servers)
    out = _change_findings(ot, cs, params)

    for rank, iv in enumerate(ot.said_intervals()[: p.max_intervals]):
        sharing = {j.server for j in ot.intervals if j.start <= iv.end and j.end >= iv.start}
        names = [cs.counters[c] for c, *_ in iv.counters]
        who = f"{count_of(len(names), 'counters')}: {', '.join(names[:4])}{'...' if len(names) > 4 else ''}"
        when = f"from {cs.when(iv.start)} to {cs.when(iv.end)} ({_span(cs, iv.points)})"
        ev = [f"{cs.servers[iv.server]}: {who} left {'its' if len(names) == 1 else 'their'} usual level {when}; "
              f"peak at {cs.when(iv.peak)}"]
        alone = ot.alone is not None and ot.alone[iv.server]
        twin = ot.edges.twin(iv.server) if iv.about and ot.edges is not None else None
        verdicts: dict[str, list[str]] = {}  # what the two sides together say -> the calls it says it of
        for c, z, how, level, usual in iv.counters:
            against = ("against the other servers' movement at the same time" if alone else
                       "against its peers at the same time") if how == "peers" else \
                f"against its level in {before(ot.recent, cs.interval)}" if ot.recent else "against its own history"
            if twin is not None and how == "peers" and c in ot.edges.ends:
                against = f"against {cs.servers[twin]} at the same time"
            other = ""
            if twin is not None and c in ot.edges.ends:
                other, verdict = _other_side(cs, ot.edges, iv, c, twin, level, usual)
                if verdict:
                    verdicts.setdefault(verdict, []).append(cs.counters[c])
            ev.append(f"{cs.counters[c]}: {_num(level)} at its furthest, usually {_num(usual)} "
                      f"({against}"
                      f"{', daily cycle taken out' if ot.seasonal and how == 'own' else ''}; robust z {z:.1f})" + other)
        if iv.waits_for:
            ev.insert(1, f"it calls {iv.waits_for}, and its calls into {iv.waits_for} slowed at the same time, as "
                         f"{iv.waits_for} itself measures them: {cs.servers[iv.server]} may be waiting for it (the "
                         f"finding on {iv.waits_for} comes first)")
        if iv.about:
            ev.insert(0, _calls_into(cs, ot.edges, iv, twin))
            ev[1:1] = [f"{', '.join(calls)}: {verdict}" for verdict, calls in verdicts.items()]
        if len(sharing) > 1:
            # "seen against its own history" only where it was: with less than three days (or a
            # server that left its peers) the counters said it against the others at the same time
            own = any(how == "own" for _, _, how, _, _ in iv.counters)
            ev.append(f"{len(sharing)} of {S} servers have an interval overlapping this one"
                      + ((": a fleet-wide event, seen against each server's own history" if own
                          else ": many servers moved at once (an event that spread, or one they share)")
                         if len(sharing) >= S / 2 else ""))
        title = (f"{iv.about}: calls into it unusual {when} ({', '.join(names[:3])}{'...' if len(names) > 3 else ''} "
                 f"in {cs.servers[iv.server]})" if iv.about else
                 f"{cs.servers[iv.server]}: {', '.join(names[:3])}{'...' if len(names) > 3 else ''} unusual {when}")
        out.append(Finding(
            analysis="counters", title=title, subject=iv.about or cs.servers[iv.server], score=iv.score,
            severity="warning", evidence=ev, parameters=params,
            target={"kind": "server", "server": cs.servers[iv.server], "counter": names[0],
                    "from_s": cs.seconds(iv.start), "to_s": cs.seconds(iv.end)}))
    shown = ot.said_intervals()
    if shown:
        rows = [[cs.servers[iv.server] + (f" (calls into {iv.about})" if iv.about else ""), cs.time_label(iv.start),
                 cs.time_label(iv.end), iv.points, cs.time_label(iv.peak), f"{iv.peak_z:.1f}",
                 ", ".join(cs.counters[c] for c, *_ in iv.counters)]
                for iv in sorted(shown, key=lambda i: (i.start, i.server))]
        servers = sorted({iv.server for iv in shown})
        out.append(Finding(
            analysis="counters", title=f"Unusual intervals over time: {len(shown)} on {len(servers)} of {S} "
                                       "servers",
            subject=", ".join(cs.servers[s] for s in servers[:6]) + ("..." if len(servers) > 6 else ""),
            score=0.0, severity="info",
            evidence=[f"each (server, counter) series against its own history (robust z"
                      f"{', daily cycle taken out' if ot.seasonal else ''}) and against the median of the other servers "
                      f"at the same time; a point counts when {ot.min_counters}+ counters are beyond z {p.z:g} or one "
                      f"beyond {p.strong:g}"
                      + (f"; a point alone (no other within {p.gap}) only when {max(ot.min_counters, 3)}+ counters are, "
                         "or one goes half as far again as that counter went anywhere else" if p.lone_point else "")
                      + (f"; {_changes_said(ot)} (a series beyond z over one long stretch) said apart, their "
                         "pieces not again here" if ot.changes else "")] + ot.notes,
            tables=[Table(["server", "from", "to", "points", "peak", "peak z", "counters"], rows, "in time order")],
            parameters=params, target={"kind": "pane", "pane": "counters", "part": "intervals"}))
    return out


def _changes_said(ot: OverTime) -> str:
    own, fleet = sum(not lc.shared for lc in ot.changes), len(ot.fleet_changes())
    return " and ".join(([count_of(own, "level changes")] if own else [])
                        + ([count_of(fleet, "level changes") + " of the fleet"] if fleet else []))


def _change_findings(ot: OverTime, cs: CounterSet, params: dict) -> list[Finding]:
    """One finding per level change (a server's counters beyond z over one long stretch: an
    incident still running at the end of the data, or a long departure), the strongest first."""
    T, out = cs.n_points, []
    fleet = {id(lc) for lc in ot.fleet_changes()}  # each said once
    for lc in ot.changes:
        if len(out) >= ot.params.max_intervals:
            break
        if lc.shared and id(lc) not in fleet:
            continue  # a server's own changes are said whatever fleet's change it shares too
        names = [cs.counters[c] for c, *_ in lc.counters]
        span = _span(cs, lc.points)
        elsewhere = lc.other_side(T)
        when = {"before": f"since {cs.when(lc.start)}, to the end of the data ({span})",
                "after": f"from the start of the data to {cs.when(lc.end)} ({span})"}.get(
            elsewhere, f"from {cs.when(lc.start)} to {cs.when(lc.end)} ({span})")
        ev = [f"{cs.servers[lc.server]}: {count_of(len(names), 'counters')} at another level {when}"]
        for c, zm, level, other, peer in lc.counters:
            ev.append(f"{cs.counters[c]}: {_num(level)} there, {_num(other)} {elsewhere}"
                      + (f"; its peers {_num(peer)} at the same time" if np.isfinite(peer) else "")
                      + f" (median robust z {zm:.1f} over the stretch)")
        ev.append(f"details: beyond z {ot.params.z:g} over one long stretch, not in bursts: a level the server moved "
                  "to, said once here (over time, the tail's scaling would show it in pieces, or not at all)")
        if lc.shared:  # the fleet's change, once, below the servers' own
            who = [cs.servers[s] for s in [lc.server] + lc.shared]
            ev[0] = (f"{len(who)} of {len(cs.servers)} servers: {', '.join(who[:8])}{'...' if len(who) > 8 else ''}: "
                     f"{names[0]} at another level {when}, the same change on each: the fleet's, not one server's")
            out.append(Finding(
                analysis="counters", title=f"{names[0]} at another level on {len(who)} of {len(cs.servers)} servers "
                                           f"{when}",
                subject=names[0], score=0.0, severity="info", evidence=ev[:2] + ev[-1:],
                parameters=params, target={"kind": "fleet", "counter": names[0], "from_s": cs.seconds(lc.start),
                                           "to_s": cs.seconds(lc.end)}))
            continue
        out.append(Finding(
            analysis="counters",
            title=f"{cs.servers[lc.server]}: {', '.join(names[:3])}{'...' if len(names) > 3 else ''} at another level "
                  f"{when}",
            subject=cs.servers[lc.server], score=lc.score, severity="warning", evidence=ev, parameters=params,
            target={"kind": "server", "server": cs.servers[lc.server], "counter": names[0],
                    "from_s": cs.seconds(lc.start), "to_s": cs.seconds(lc.end)}))
    return out
