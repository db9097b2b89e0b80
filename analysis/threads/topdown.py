"""The paper's top-down walk (003, Fig. 4): rank the abstractions of the top level, then the
abstractions inside each ranked one, down to threads; and the findings of the walk."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perftriage.analysis.findings import Finding, Table

from .deviation import LevelResult, ThreadParams, analyse_level, could_rank
from .series import ThreadSeries, plural


@dataclass
class TopDown:
    series: ThreadSeries
    levels: list[str]
    results: list[LevelResult] = field(default_factory=list)  # top level first, then drill-downs


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
    shows each level as it comes; a long walk is browsable long before it ends)."""
    params = params or ThreadParams()
    levels = ts.levels()
    td = TopDown(ts, levels)
    queue = [(levels[0], {})]
    done = 0
    while queue:
        level, within = queue.pop(0)
        what = plural(level) + (" in " + ", ".join(within.values()) if within else "")
        total = done + 1 + len(queue)  # the analyses known so far (more may come from this one)

        def on_level(text: str, frac: float, what=what, done=done, total=total) -> None:
            if progress:
                progress(f"analysis {done + 1} of {total}{'+' if done == 0 else ''}: {what} · {text}",
                         frac)  # this analysis's own progress: the text says which of how many

        on_level("distances", 0.0)
        res = analyse_level(ts, level, within, params, progress=on_level)
        td.results.append(res)
        done += 1
        if on_analysed is not None:
            on_analysed(TopDown(ts, levels, list(td.results)))
        lower = next_level(ts, level)
        if lower is None:
            continue
        # an abstraction of fewer than three threads holds nothing to compare at any level below
        # (a process of one thread: a pool of one, a thread alone): not drilled into, so that the
        # drills go where something can be ranked (the webserver sample's ranked apache2
        # processes, one thread each, took six of the eight drills: twelve analyses of one)
        roomy = [len(m) >= 3 for m in res.members]
        items = [i for r in res.ranking for i in r.items if roomy[i]]
        if done == 1:
            # beyond the paper: the groups that do not deviate as a whole are looked into when
            # something inside them could be ranked (a cheap screen: no bootstrap), or always
            # with drill_all; a single deviating thread rarely moves its wave
            ranked = {i for r in res.ranking for i in r.items}
            rest = [i for i in range(res.k) if i not in ranked and roomy[i]]
            items += [i for i in rest if drill_all or could_rank(ts, lower, {**within, level: res.names[i]}, params)]
        for i in items:
            if done + len(queue) < max_drill + 1:
                queue.append((lower, {**within, level: res.names[i]}))
        # the paper drills into deviating abstractions; with none at the top, look inside the
        # largest group anyway only when the top level has a single abstraction
        if res.k == 1 and roomy[0]:
            queue.append((lower, {**within, level: res.names[0]}))
    return td


def _where(res: LevelResult) -> str:
    return " in " + ", ".join(f"{k} {v}" for k, v in res.within.items()) if res.within else ""


def level_findings(res: LevelResult, ts: ThreadSeries) -> list[Finding]:
    out = []
    params = res.parameters()
    for rank, r in enumerate(res.ranking):
        names = [res.names[i] for i in r.items]
        what = res.level if len(names) == 1 else plural(res.level)
        # what deviates, in the metrics' own units, first; how it was found last, as details
        ev = [f"{metric}: {text}" for metric, text in r.metrics]
        if r.how == "dendrogram":
            if np.isfinite(r.separation):
                ev.append(f"its metrics move together unlike the other {plural(res.level)}' ({r.separation:.1f}x "
                          "as far from them as they are from each other)")
            ev.append(f"details: ranked {rank + 1} of {len(res.ranking)} by the recursive descent of the Ward "
                      f"dendrogram of {res.k} {plural(res.level)} (Förstner–Moonen distances of covariance matrices)")
        elif r.how == "window":
            ev.append(f"details: a short deviation found by the moving-window check, after the "
                      f"{sum(1 for x in res.ranking if x.how == 'dendrogram')} ranked by the dendrogram")
        else:
            ev.append(f"details: a long departure from the other {plural(res.level)} (a leak late in the run "
                      f"hardly moves a covariance), after the {sum(1 for x in res.ranking if x.how != 'departure')} "
                      "ranked by the dendrogram and the window check")
        if res.boot is not None:
            ev.append(f"details: AU p-values from {res.boot.replicates:,} bootstrap replicates per scale, "
                      f"{len(res.boot.scales)} scales, {res.boot.blocks} time blocks")
        rows = [[m, t] for m, t in r.metrics]
        out.append(Finding(
            analysis="threads",
            title=(f"{what.capitalize()} {', '.join(names[:4])}{'…' if len(names) > 4 else ''}{_where(res)}: "
                   f"{r.headline}" if r.headline else
                   f"{what.capitalize()} {', '.join(names[:4])}{'…' if len(names) > 4 else ''} "
                   f"{'deviates' if len(names) == 1 else 'deviate'}" + (f" ({r.metrics[0][0]})" if r.metrics else "")
                   + _where(res)),
            subject=f"{what} {', '.join(names)}{_where(res)}",
            target={"kind": "threads", "level": res.level, "names": list(names)},
            score=float(100 - rank + (r.separation if np.isfinite(r.separation) else r.score)),
            severity="warning",
            evidence=ev,
            tables=[Table(["metric", "against the majority"], rows)] if rows else [],
            parameters=params,
        ))
    return out


def topdown_findings(td: TopDown) -> list[Finding]:
    out = []
    for res in td.results:
        out.extend(level_findings(res, td.series))
    top = td.results[0] if td.results else None
    if top is not None:
        rows = []
        for res in td.results:
            ranked = ", ".join("+".join(res.names[i] for i in r.items) + (f" ({r.how})" if r.how != "dendrogram" else "")
                               for r in res.ranking) or "-"
            rows.append([res.level + _where(res), res.k, ranked])
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
