"""The paper's top-down walk (003, Fig. 4): rank the abstractions of the top level, then the
abstractions inside each ranked one, down to threads; and the findings of the walk."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.findings import Finding, Table
from perftriage.analysis.units import count_of, fmt_duration

from .deviation import LevelResult, Ranked, ThreadParams, abstractions, analyse_level, could_rank
from .series import ThreadSeries, plural


@dataclass
class TopDown:
    series: ThreadSeries
    levels: list[str]
    results: list[LevelResult] = field(default_factory=list)  # top level first, then drill-downs
    notes: list[str] = field(default_factory=list)  # why nothing was analysed, where nothing was

    def analysed(self, level: str, within: dict) -> LevelResult | None:
        """The walk's analysis of ``level`` in ``within``, if it made one."""
        return next((r for r in self.results if r.level == level and r.within == within), None)

    def comparing(self, thread: int) -> list[LevelResult]:
        """The walk's analyses that compared ``thread`` (its index in the series), alone or in its
        abstraction."""
        return [r for r in self.results if any(thread in m for m in r.members)]


def next_level(ts: ThreadSeries, level: str) -> str | None:
    levels = ts.levels()
    i = levels.index(level) if level in levels else -1
    return levels[i + 1] if 0 <= i < len(levels) - 1 else None


def top_down(ts: ThreadSeries, params: ThreadParams | None = None, max_drill: int = 8, progress=None,
             drill_all: bool = False, on_analysed=None) -> TopDown:
    """The paper's walk: down into the ranked abstractions of each level (at most ``max_drill``
    analyses below the top), and, beyond the paper, into the top level's other abstractions
    where something could be ranked (a single deviating thread among forty rarely moves its
    wave): :func:`could_rank` screens them without a bootstrap, with the conditions every ranked
    abstraction meets, so the walk finds what drilling into all of them finds. ``drill_all``:
    into all of them regardless (same findings, slower: for checking). ``on_analysed(td)``: told
    after each analysis of the walk, the top level first, with what is analysed so far (the app
    shows each level as it comes; a long walk is browsable long before it ends). Where the series
    has kinds (``ThreadSeries.kinds``: a kernel trace's processes by program, its pools), a level
    of mixed kinds is not analysed as one: each kind of three or more is, in its place in the
    walk, and the others are looked inside (:func:`_alike`); when nothing alike was found,
    ``td.notes`` says why."""
    params = params or ThreadParams()
    levels = ts.levels()
    td = TopDown(ts, levels)
    # (level, within, screened: analysed only where could_rank finds something to rank there)
    queue: list[tuple[str, dict, bool]] = [(levels[0], {}, False)]
    done = 0
    while queue and done < max_drill + 1:
        level, within, screened = queue.pop(0)
        lower = next_level(ts, level)
        kind = _split_by(ts, level, within)
        if kind is not None:  # abstractions of different kinds here: each kind compared on its own, in its place
            queue[:0] = _alike(ts, level, within, kind, lower, screened)
            continue
        if screened and done > 0 and not drill_all and not could_rank(ts, level, within, params):
            continue
        what = plural(level) + where_text(within, ts.kinds)
        sure = sum(1 for e in queue if not e[2])
        total = done + 1 + sure  # the analyses known so far (more may come from this one, or be screened in)
        more = "+" if done == 0 or sure < len(queue) else ""

        def on_level(text: str, frac: float, what=what, done=done, total=total, more=more) -> None:
            if progress:
                progress(f"analysis {done + 1} of {total}{more}: {what} · {text}",
                         frac)  # this analysis's own progress: the text says which of how many

        on_level("distances", 0.0)
        res = analyse_level(ts, level, within, params, progress=on_level)
        td.results.append(res)
        done += 1
        if on_analysed is not None:
            on_analysed(TopDown(ts, levels, list(td.results)))
        if lower is None:
            continue
        # an abstraction of fewer than three threads holds nothing to compare at any level below
        # (a process of one thread: a pool of one, a thread alone): not drilled into, so that the
        # drills go where something can be ranked (the webserver sample's ranked apache2
        # processes, one thread each, took six of the eight drills: twelve analyses of one)
        roomy = [len(m) >= 3 for m in res.members]
        ranked = res.ranked_items()
        queue += [(lower, {**within, level: res.names[i]}, False) for i in ranked if roomy[i]]
        if done == 1:
            # beyond the paper: the groups that do not deviate as a whole are looked into when
            # something inside them could be ranked (a cheap screen: no bootstrap), or always
            # with drill_all; a single deviating thread rarely moves its wave
            for i in range(res.k):
                if i in ranked or not roomy[i]:
                    continue
                w = {**within, level: res.names[i]}
                if _split_by(ts, lower, w) is not None:
                    queue.append((lower, w, True))  # screened once split into its kinds
                elif drill_all or could_rank(ts, lower, w, params):  # screened now: the count is known
                    queue.append((lower, w, False))
        # the paper drills into deviating abstractions; with none at the top, look inside the
        # largest group anyway only when the top level has a single abstraction
        if res.k == 1 and roomy[0]:
            queue.append((lower, {**within, level: res.names[0]}, False))
    if not td.results:
        td.notes.append(_nothing_alike(ts))
    return td


def _nothing_alike(ts: ThreadSeries) -> str:
    """Why a walk analysed nothing: which kinds have too few abstractions to compare."""
    levels = ts.levels()
    parts = []
    for n, lv in enumerate(levels[:-1]):
        kind = ts.kinds.get(lv)
        if kind is None or kind not in ts.groups:
            continue
        if kind != lv:
            per: dict[str, set] = {}
            for a, b in zip(ts.groups[kind], ts.groups[lv]):
                per.setdefault(a, set()).add(b)
            most = max((len(v) for v in per.values()), default=0)
            parts.append(f"no {kind} with 3 {plural(lv)} or more (the most: {most})")
        else:
            sizes: dict[tuple, int] = {}
            for key in zip(*(ts.groups[g] for g in levels[:n + 1])):  # a pool within its process
                sizes[key] = sizes.get(key, 0) + 1
            parts.append(f"no {lv} of 3 threads or more (the largest: {max(sizes.values(), default=0)})")
    if not parts:
        return f"nothing to compare among {count_of(ts.n_threads, 'threads')}"
    return (f"nothing alike to compare among {count_of(ts.n_threads, 'threads')}: {', '.join(parts)}; abstractions "
            "of different kinds (processes of different programs, a process's pools) do different work and are "
            "not ranked against one another")


def _split_by(ts: ThreadSeries, level: str, within: dict) -> str | None:
    """The group column that tells the kinds of ``level``'s abstractions in ``within`` apart,
    where they are of different kinds; None where they are alike."""
    kind = ts.kinds.get(level)
    return kind if kind is not None and kind in ts.groups and kind not in within else None


def _alike(ts: ThreadSeries, level: str, within: dict, kind: str, lower: str | None,
           screened: bool) -> list[tuple[str, dict, bool]]:
    """What replaces the analysis of ``level`` in ``within`` where its abstractions are of
    different kinds (``ts.kinds``): the abstractions of each kind that has three or more compared
    among themselves, the others' insides looked into (those of three threads or more); where each
    abstraction is a kind of its own (a process's pools), the inside of each. The largest first;
    screened (:func:`could_rank`) where there is more than one."""
    names, members = abstractions(ts, level, within)
    sets: list[tuple[int, str, dict]] = []  # (threads, level, within)
    if kind == level:
        sets = [(len(m), lower, {**within, level: n}) for n, m in zip(names, members) if lower and len(m) >= 3]
    else:
        by: dict[str, list] = {}
        for n, m in zip(names, members):
            by.setdefault(ts.groups[kind][m[0]], []).append((n, m))
        for k, nm in by.items():
            if len(nm) >= 3:
                sets.append((sum(len(m) for _, m in nm), level, {**within, kind: k}))
            else:
                sets += [(len(m), lower, {**within, level: n}) for n, m in nm if lower and len(m) >= 3]
    sets.sort(key=lambda s: -s[0])
    return [(lv, w, screened if len(sets) == 1 else True) for _, lv, w in sets]


def comparisons(ts: ThreadSeries, level: str, within: dict) -> list[tuple[str, dict]]:
    """The analyses that look at ``level`` in ``within``: that level itself where its abstractions
    are alike, else those of each kind, or below, as the walk takes them (:func:`_alike`); the
    Threads pane asks this when the user goes into an abstraction."""
    out, todo = [], [(level, within)]
    while todo:
        lv, w = todo.pop(0)
        kind = _split_by(ts, lv, w)
        if kind is not None:
            todo[:0] = [(a, b) for a, b, _ in _alike(ts, lv, w, kind, next_level(ts, lv), False)]
        else:
            out.append((lv, w))
    return out


def where_text(within: dict, kinds: dict | None = None) -> str:
    """' in process mysqld[1400], pool mysqld': the groups an analysis is within, a kind left out
    where the abstraction it is the kind of is named (the program where the process is)."""
    hidden = {k for lv, k in (kinds or {}).items() if k != lv and lv in within}
    shown = [f"{k} {v}" for k, v in within.items() if k not in hidden]
    return " in " + ", ".join(shown) if shown else ""


def _where(res: LevelResult, kinds: dict | None = None) -> str:
    return where_text(res.within, kinds)


def shown_name(res: LevelResult, ts: ThreadSeries, i: int) -> str:
    """Abstraction ``i`` as a finding says it: a thread by its id, and its own name where that
    says more than its pool's ('11171 (worker-5)' in pool worker; a kernel trace's mysqld thread
    in pool mysqld stays '1407')."""
    name = res.names[i]
    names = ts.groups.get("name")
    if res.level != "thread" or names is None or not res.members[i]:
        return name
    j = res.members[i][0]
    own = names[j]
    pool = ts.groups.get("pool", [""] * ts.n_threads)[j]
    return f"{name} ({own})" if own and own not in (name, pool) else name


def _waits_span(res: LevelResult, ts: ThreadSeries, r: Ranked) -> list[tuple[int, float, float, str]]:
    """(thread, from, to in the thread's time, how to name it) where a ranking led by its waits
    for a CPU was found: the short excursion's window, else the whole run of each of its threads
    (two at most)."""
    out = []
    stretch = res.excursions if r.how == "window" else res.departures if r.how == "departure" else None
    for item in r.items[:2]:
        members = res.members[item]
        found = stretch[item] if stretch is not None else None
        if found is not None and found.member >= 0:
            members = [members[found.member]]
        for t in members[:2]:
            times = ts.times(t)
            if not len(times):
                continue
            step = float(np.median(np.diff(times))) if len(times) > 1 else 0.0  # samples are window middles
            if r.how == "window" and found is not None:
                w = found.window or res.params.window
                a = min(max(found.sample - w // 2, 0), len(times) - 1)
                b = min(a + w - 1, len(times) - 1)
                lo, hi = float(times[a]) - step / 2, float(times[b]) + step / 2
                out.append((t, lo, hi, f"in those {fmt_duration((hi - lo) * 1e9)}" if 0 < hi - lo < 1e9 else "there"))
            else:
                out.append((t, float(times[0]) - step / 2, float(times[-1]) + step / 2, "over the trace"))
    return out


def level_findings(res: LevelResult, ts: ThreadSeries, takers=None) -> list[Finding]:
    """``takers(thread, from, to, where)``: a line saying what ran while the thread waited for a
    CPU then (a kernel trace's, threads/contention.py), for rankings led by those waits; None:
    none."""
    out = []
    params = res.parameters()
    for rank, r in enumerate(res.ranking):
        names = [shown_name(res, ts, i) for i in r.items]
        what = res.level if len(names) == 1 else plural(res.level)
        # what deviates, in the metrics' own units, first; how it was found last, as details
        ev = [f"{metric}: {text}" for metric, text in r.metrics]
        if takers is not None and r.metrics and r.metrics[0][0] == "Preempted":
            several = len(r.items) > 1 or len(res.members[r.items[0]]) > 1
            for t, a, b, where in _waits_span(res, ts, r):
                line = takers(t, a, b, where)
                if line:
                    ev.append(f"in its thread {ts.ids[t]}: {line}" if several else line)
        if r.how == "dendrogram":
            if np.isfinite(r.separation):
                ev.append(f"its metrics move together unlike the other {plural(res.level)}' ({r.separation:.1f}x "
                          "as far from them as they are from each other)")
            ev.append(f"details: ranked {rank + 1} of {len(res.ranking)} by the recursive descent of the Ward "
                      f"dendrogram of {res.k} {plural(res.level)} (Förstner–Moonen distances of covariance matrices)")
        elif r.how == "window":
            before = sum(1 for x in res.ranking if x.how == "dendrogram")
            ev.append("details: a short deviation found by the moving-window check"
                      + (f", after the {before} ranked by the dendrogram" if before else
                         " (the dendrogram ranked none)"))
        else:
            whole = res.departures is not None and res.departures[r.items[0]].whole
            ev.append(f"details: a long departure from the other {plural(res.level)}, found by comparing "
                      + ("their means over the whole run" if whole else "their levels window by window")
                      + " (a level held apart, or a leak late in the run, hardly moves a covariance)"
                      + (f", after the {rank} ranked before it by the dendrogram and the window check"
                         if rank else "; the dendrogram and the window check ranked none"))
        if res.boot is not None:
            ev.append(f"details: AU p-values from {res.boot.replicates:,} bootstrap replicates per scale, "
                      f"{len(res.boot.scales)} scales, {res.boot.blocks} time blocks")
        rows = [[m, t] for m, t in r.metrics]
        out.append(Finding(
            analysis="threads",
            title=(f"{what.capitalize()} {', '.join(names[:4])}{'…' if len(names) > 4 else ''}{_where(res, ts.kinds)}: "
                   f"{r.headline}" if r.headline else
                   f"{what.capitalize()} {', '.join(names[:4])}{'…' if len(names) > 4 else ''} "
                   f"{'deviates' if len(names) == 1 else 'deviate'}" + (f" ({r.metrics[0][0]})" if r.metrics else "")
                   + _where(res, ts.kinds)),
            subject=f"{what} {', '.join(names)}{_where(res, ts.kinds)}",
            target={"kind": "threads", "level": res.level, "names": [res.names[i] for i in r.items],
                    "within": dict(res.within)},
            score=float(100 - rank + (r.separation if np.isfinite(r.separation) else r.score)),
            severity="warning",
            evidence=ev,
            tables=[Table(["metric", "against the majority"], rows)] if rows else [],
            parameters=params,
        ))
    return out


def topdown_findings(td: TopDown, takers=None) -> list[Finding]:
    """The walk's findings; ``takers``: see :func:`level_findings`."""
    out = []
    for res in td.results:
        out.extend(level_findings(res, td.series, takers))
    top = td.results[0] if td.results else None
    if top is not None:
        rows = []
        for res in td.results:
            ranked = ", ".join("+".join(res.names[i] for i in r.items) + (f" ({r.how})" if r.how != "dendrogram" else "")
                               for r in res.ranking) or "-"
            rows.append([res.level + _where(res, td.series.kinds), res.k, ranked])
        ev = [f"{td.series.n_threads:,} threads, metrics {', '.join(td.series.metrics)}; levels "
              f"{' -> '.join(td.levels)}"]
        seen: dict[str, int] = {}
        for res in td.results:
            for n in res.notes:
                seen[n] = seen.get(n, 0) + 1
        ev.extend(n if c == 1 else f"{n} (x{c})" for n, c in seen.items())
        out.append(Finding(analysis="threads", title="Thread pools, top down",
                           subject=td.series.source or "thread time series", score=0.0,
                           severity="warning" if any(r.ranking for r in td.results) else "info", evidence=ev,
                           tables=[Table(["level", "abstractions", "ranked"], rows)],
                           parameters=top.parameters(), target={"kind": "pane", "pane": "threads"}))
    return out
