"""Deviating threads in thread pools (paper 003): one level of the top-down analysis.

At a level (machines, processes, pools, waves or threads, optionally within one group of the
level above), every *abstraction* pools the samples of its threads; its covariance matrix over
time is compared with every other's by the Förstner–Moonen distance; Ward clustering builds the
dendrogram (SciPy's ``ward`` on the distances, i.e. R's ward.D2; pvclust's "ward" is ward.D);
multiscale bootstrap gives each merge its AU p-value; the paper's recursive descent (section
IV.F) ranks the deviating clusters, with the paper's suggested tie-breaker for clusters ranked
at the same node (the distance of their mean metrics to the rest's).

Beyond the paper, short-lived deviations (a CPU spike of a few minutes hardly changes a
covariance over hours: the paper finds none): every abstraction's covariance in a moving window
is compared with the others' in the same window; an abstraction whose mean distance to the
others is extreme in some window (robust z over the abstractions of that window above
``window_z``) is added to the ranking after the paper's, ordered by that z.

Also beyond the paper, long departures (a leak that starts late in the run changes a pooled
covariance little: one leaking thread among ten, or the last fifth of a thread's samples): an
abstraction whose window means stay far from the other abstractions' median at the same time,
for at least ``sustain`` of the run, by more than ``departure`` times how much abstractions
typically differ, and by ``habit`` times the departure the median abstraction holds (where each
departs now and then, departing is no deviation), is added after the windows' (see
:func:`departure_scores`).
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from functools import partial

import numpy as np

from perftriage.analysis.stats import median_above
from perftriage.analysis.units import count_of, fmt_clock, fmt_duration, fmt_ratio, fmt_when

from .covariance import Covariances, covariances, fm_matrix, resolution_floor, resolution_step, scale_of
from .params import ThreadParams
from .pvclust import SCALES, BootstrapResult, block_moments, multiscale_bootstrap
from .series import GROUPS, ThreadSeries, plural


@dataclass
class Ranked:
    items: list[int]  # abstraction indices of the ranked cluster
    how: str  # "dendrogram" or "window"
    score: float  # tie-breaker / window z
    metrics: list[tuple[str, str]] = field(default_factory=list)  # (metric, what deviates)
    window_time: float | None = None  # when the short deviation peaked / the long departure was largest (sample index)
    separation: float = float("nan")  # median distance to the others / the typical one (lowest member)
    headline: str = ""  # the deviation in a few plain words, for a title


@dataclass
class LevelResult:
    level: str
    within: dict  # group filters applied (e.g. {"wave": "W3"})
    names: list[str]  # abstraction names
    members: list[list[int]]  # thread indices of each abstraction
    distances: np.ndarray  # (k, k) Förstner–Moonen
    Z: np.ndarray | None  # linkage matrix (k-1, 4)
    boot: BootstrapResult | None
    ranking: list[Ranked]
    params: ThreadParams
    notes: list[str] = field(default_factory=list)
    window_z: np.ndarray | None = None  # (k,) largest short excursion, robust z
    excursions: list | None = None  # per abstraction: its largest short excursion
    departures: list | None = None  # per abstraction: its largest sustained departure
    metrics: list[str] = field(default_factory=list)  # the metrics compared (constant ones left out)
    timings: dict = field(default_factory=dict)  # seconds per stage
    means: np.ndarray | None = None  # (k, p) mean of each metric
    stds: np.ndarray | None = None

    @property
    def k(self) -> int:
        return len(self.names)

    def ranked_items(self) -> list[int]:
        out = []
        for r in self.ranking:
            out.extend(r.items)
        return out

    def parameters(self) -> dict:
        d = asdict(self.params)
        d["level"] = self.level
        d.update({f"within_{k}": v for k, v in self.within.items()})
        d["distance"] = "Förstner-Moonen on covariance matrices"
        d["linkage"] = "Ward (SciPy, ward.D2)"
        return d


#: a thread found by a stretch of one metric (window, departure) also said to hold another metric
#: apart all along from this many spreads of the others' means (2, the dendrogram's, would say
#: one metric in twenty of a pool by chance)
LEVEL_APART = 4.0


def abstractions(ts: ThreadSeries, level: str, within: dict | None = None) -> tuple[list[str], list[list[int]]]:
    within = within or {}
    keep = [i for i in range(ts.n_threads) if all(ts.groups.get(g, [""] * ts.n_threads)[i] == v
                                                   for g, v in within.items())]
    if level == "thread":
        return [ts.ids[i] for i in keep], [[i] for i in keep]
    if level not in ts.groups:
        raise ValueError(f"no {level!r} column in {ts.source or 'the data'}")
    names: dict[str, list[int]] = {}
    for i in keep:
        names.setdefault(ts.groups[level][i], []).append(i)
    order = sorted(names, key=_natural)
    return order, [names[n] for n in order]


def _natural(s: str):
    import re  # noqa: PLC0415

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def could_rank(ts: ThreadSeries, level: str, within: dict | None = None, params: ThreadParams | None = None) -> bool:
    """Whether :func:`analyse_level` could rank anything here, without its bootstrap: a ranked
    abstraction must sit apart (separation guard) or show a short excursion (window check), and
    both are cheap. The walk screens with this the groups it would otherwise not look into."""
    params = params or ThreadParams()
    li = _level_inputs(ts, level, *abstractions(ts, level, dict(within or {})))
    if li.groups is None or len(li.names) < 3:
        return False
    groups = li.groups
    D = fm_matrix(li.covariances(params.ridge)[0].cov)
    if np.nanmax(separation(D)) >= params.separation:
        return True
    if params.windows:
        step, shares, rises, apart = _floors(ts, li, params)
        exc = by_member(window_scores, groups, params, rises)
        if any(e is not None and e.z > params.window_z for e in exc):
            return True
        ratio, _ = held_departures(by_member(partial(departure_scores, floor=apart), groups, params, step), params)
        return bool((ratio > 1).any())
    return False


def _floors(ts: ThreadSeries, li: "_LevelInputs", params: ThreadParams):
    """What a stretch of a level's metrics must move to count, for the screen and the analysis
    alike: a count's step (open files, mappings) over all the level's samples; which metrics are
    shares of the thread's time (%); the least move of a short rise (the step, and for a share
    ``window_share`` points: a worker preempted 3 ms in 54 ms, 0.1% -> 5.8%, by the host's kernel
    threads is no excursion, however still the others are); the least departure (a share held
    apart by under ``run_share`` points is none: a healthy pool's worker preempted 0.76% of its
    time against 0.35%, the others lying that close together)."""
    step = resolution_step(li.pooled, quantum=True)
    shares = [ts.units.get(m) == "%" for m in li.metrics]
    return (step, shares, np.where(shares, np.maximum(step, params.window_share), step),
            np.where(shares, params.run_share, 0.0))


@dataclass
class _LevelInputs:
    names: list[str]
    members: list[list[int]]
    groups: list[list[np.ndarray]] | None  # per abstraction, its members' samples of the varying metrics
    pooled: list[np.ndarray] | None
    scale: np.ndarray | None
    metrics: list[str]  # the varying metrics
    notes: list[str]
    dist: np.ndarray | None = None  # the columns of those the covariances are of (not the sums of others)

    def for_distance(self) -> tuple[list[np.ndarray], np.ndarray]:
        """The pooled samples and scale of the columns the distances are computed on."""
        return [x[:, self.dist] for x in self.pooled], self.scale[self.dist]

    def covariances(self, ridge: float) -> tuple[Covariances, np.ndarray]:
        """The covariances the distances are computed on, with the resolution floor they hold."""
        pooled, scale = self.for_distance()
        floor = resolution_floor(pooled, scale)
        return covariances(pooled, scale, ridge, floor), floor


def sums_of_others(values: np.ndarray, among: np.ndarray, tol: float = 1e-4) -> np.ndarray:
    """Metrics that are a linear combination of the metrics before them (pidstat's %CPU, the
    sum of %usr, %system and %guest; a total beside its parts): True where one is, among the
    ``among`` columns, its variance explained but for ``tol`` of it. Such a metric adds a
    direction whose variance is that of its parts' rounding, zero for a thread whose part never
    moved: the distance would weigh a part twice, once without bounds."""
    out = np.zeros(values.shape[1], bool)
    if len(values) > 100_000:  # an exact sum holds in every sample: evenly spaced ones tell it
        values = values[np.linspace(0, len(values) - 1, 100_000).astype(np.int64)]
    rows = values[~np.isnan(values[:, among]).any(axis=1)][:, among] if len(values) else values[:, among]
    if len(rows) < 3:
        return out
    z = (rows - rows.mean(axis=0)) / np.where(rows.std(axis=0) > 0, rows.std(axis=0), 1.0)
    kept: list[int] = []
    for c in range(z.shape[1]):
        if kept:
            coef, *_ = np.linalg.lstsq(z[:, kept], z[:, c], rcond=None)
            if np.var(z[:, c] - z[:, kept] @ coef) < tol * max(np.var(z[:, c]), 1e-300):
                out[np.flatnonzero(among)[c]] = True
                continue
        kept.append(c)
    return out


def _level_inputs(ts: ThreadSeries, level: str, names, members) -> _LevelInputs:
    """The samples a level is compared on: metrics that never change among these threads carry
    no information (and make every covariance matrix singular) and abstractions with fewer than
    10 samples cannot be compared; both are left out, and said. ``groups`` is None when no
    metric varies."""
    notes = []
    rows = np.concatenate([np.arange(ts.lo[i], ts.hi[i]) for m in members for i in m]) if members else np.zeros(0, int)
    sub = ts.values[rows] if len(rows) else ts.values[:0]
    with warnings.catch_warnings():  # a metric no thread here reported: all NaN, not varying
        warnings.simplefilter("ignore", RuntimeWarning)
        varying = np.nanmax(sub, axis=0) > np.nanmin(sub, axis=0) if len(sub) else np.zeros(len(ts.metrics), bool)
    metric_names = [m for m, v in zip(ts.metrics, varying) if v]
    if not varying.all():
        notes.append("constant metrics left out: " + ", ".join(m for m, v in zip(ts.metrics, varying) if not v))
    if not varying.any():
        return _LevelInputs(names, members, None, None, None, metric_names, notes + ["no metric varies: nothing to compare"])
    summed = sums_of_others(sub, varying)
    if summed.any():
        notes.append("metrics the others add up to, left out of the distances only: "
                     + ", ".join(m for m, v in zip(ts.metrics, summed) if v))
    cols = np.flatnonzero(varying)
    by_level = np.array([m in ts.level_only for m in ts.metrics], bool)
    dist = np.flatnonzero(~(summed | by_level)[cols])
    if not len(dist):
        dist = np.flatnonzero(~summed[cols])
    groups = [[ts.samples(i)[:, cols] for i in m] for m in members]
    short = [names[a] for a, g in enumerate(groups) if sum(len(x) for x in g) < 10]
    if short:
        what = level if len(short) == 1 else plural(level)
        notes.append(f"{len(short)} {what} with fewer than 10 samples left out: " + ", ".join(short[:8]))
        keep = [a for a, g in enumerate(groups) if sum(len(x) for x in g) >= 10]
        names, members, groups = [names[a] for a in keep], [members[a] for a in keep], [groups[a] for a in keep]
    pooled = [np.vstack(g) if g else np.zeros((0, len(cols))) for g in groups]
    return _LevelInputs(names, members, groups, pooled, scale_of(sub[:, cols]), metric_names, notes, dist)


def analyse_level(ts: ThreadSeries, level: str, within: dict | None = None, params: ThreadParams | None = None,
                  progress=None) -> LevelResult:
    import time  # noqa: PLC0415

    t0 = time.perf_counter()
    params = params or ThreadParams()
    params.validate()
    within = dict(within or {})
    li = _level_inputs(ts, level, *abstractions(ts, level, within))
    names, members, notes, metric_names = li.names, li.members, li.notes, li.metrics
    k = len(names)
    if li.groups is None:
        return LevelResult(level, within, names, members, np.zeros((k, k)), None, None, [], params, notes)
    groups, pooled, scale = li.groups, li.pooled, li.scale
    cov, floor = li.covariances(params.ridge)
    if cov.regularised:
        notes.append(f"{len(cov.regularised)} of {k} covariance matrices were singular (a metric constant or "
                     f"proportional to another) and regularised with a ridge of {params.ridge:g} x their mean "
                     "variance: " + ", ".join(names[i] for i in cov.regularised[:8]))
    with warnings.catch_warnings():  # a metric a thread never reported: NaN, said as such where shown
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.array([np.nanmean(x, axis=0) for x in pooled]) if k else np.zeros((0, len(metric_names)))
        stds = np.array([np.nanstd(x, axis=0) for x in pooled]) if k else np.zeros((0, len(metric_names)))
    res = LevelResult(level, within, names, members, np.zeros((k, k)), None, None, [], params, notes,
                      means=means, stds=stds, metrics=metric_names)
    if k < 3:
        res.notes.append(f"{k} {level if k == 1 else plural(level)}: at least 3 are needed to cluster")
        return res
    t1 = time.perf_counter()
    D = fm_matrix(cov.cov)
    res.distances = D
    t2 = time.perf_counter()
    iu = np.triu_indices(k, 1)
    from scipy.cluster.hierarchy import linkage  # noqa: PLC0415 (0.3 s to import: only when clustering)

    Z = linkage(D[iu], method="ward")
    res.Z = Z
    t3 = time.perf_counter()
    if progress:
        progress(f"bootstrap of {k} {plural(level)}: {len(SCALES)} scales x {params.replicates:,} replicates", 0.0)

    def on_scale(done: int, total: int, workers: int) -> None:
        if progress:
            progress(f"bootstrap of {k} {plural(level)}: scale {done} of {total} done "
                     f"({workers} process{'es' if workers != 1 else ''}, {params.replicates:,} replicates each)",
                     0.9 * done / total)

    eps = (np.einsum("kii->k", cov.cov) / cov.cov.shape[1] * params.ridge * 10)[:, None] + floor  # (k, p)
    moments = block_moments([[x[:, li.dist] for x in g] for g in groups], scale[li.dist],
                            min(params.blocks, max(4, min(len(x) for x in pooled) // 2)))
    res.boot = multiscale_bootstrap(Z, moments, eps, params.replicates, SCALES, params.seed, workers=params.workers,
                                    progress=on_scale)
    t4 = time.perf_counter()
    if progress:
        progress(f"ranking the {k} {plural(level)}", 0.9)
    ranking = rank_dendrogram(Z, res.boot.au * 100, params.au * 100, _tie_scores(means, scale))
    # beyond the paper: the descent always splits the root, so on a healthy pool it still ranks
    # something; keep a ranked cluster only when it sits well apart from the rest
    kept, dropped = [], []
    apart = separation(D)
    for items, score in ranking:
        # members of a ranked cluster are kept one by one (a deviating thread can pull a
        # neighbour or two into its cluster), the furthest apart first (the descent orders
        # clusters, not their members)
        good = sorted((i for i in items if apart[i] >= params.separation), key=lambda i: -apart[i])
        dropped += [([i], score, float(apart[i])) for i in items if i not in good]
        if good:
            kept.append((good, score, float(np.min(apart[good]))))
    res.ranking = [Ranked(items, "dendrogram", score, separation=sep) for items, score, sep in kept]
    if dropped:
        one = len(dropped) == 1
        res.notes.append(f"{count_of(len(dropped), 'clusters')} the paper's descent reached {'was' if one else 'were'} "
                         f"not ranked: {'its' if one else 'their'} distance to the others is under "
                         f"{params.separation:g}x the typical one ("
                         + ", ".join(f"{'+'.join(names[i] for i in it)} {sp:.1f}x" for it, _, sp in dropped[:5]) + ")")
    # a count's step (open files, mappings), of all the level's samples: the checks and the words
    step, shares, rises, apart = _floors(ts, li, params)
    if params.windows:
        exc = by_member(window_scores, groups, params, rises)
        res.excursions = exc
        wz = np.array([e.z if e else 0.0 for e in exc])
        res.window_z = wz
        ranked = set(res.ranked_items())
        extra = [i for i in np.argsort(-wz) if wz[i] > params.window_z and i not in ranked]
        dep = by_member(partial(departure_scores, floor=apart), groups, params, step)
        ratio, dz = held_departures(dep, params, shares)
        res.departures = dep
        # one past both bars goes by the one it passes further (a worker syncing a file per
        # request, found by a 107 ms rise of its preemptions at 1.4x the window's bar, holds its
        # disk wait at 1.8x the departure's), at the window's place in the ranking
        res.ranking += [Ranked([int(i)], "departure", float(dz[i]), window_time=dep[i].sample)
                        if ratio[i] > 1 and ratio[i] > wz[i] / params.window_z
                        else Ranked([int(i)], "window", float(wz[i]), window_time=exc[i].sample) for i in extra]
        ranked = set(res.ranked_items())
        extra = [i for i in np.argsort(-ratio) if ratio[i] > 1 and i not in ranked]
        res.ranking += [Ranked([int(i)], "departure", float(dz[i]), window_time=dep[i].sample) for i in extra]
    t5 = time.perf_counter()
    res.timings = {"covariances": t1 - t0, "distances": t2 - t1, "clustering": t3 - t2, "bootstrap": t4 - t3,
                   "ranking": t5 - t4}
    majority = [i for i in range(k) if i not in set(res.ranked_items())]
    step_std = np.sqrt(resolution_floor(pooled, scale).max(axis=0)) * scale if k else None
    words = {"window": _excursion_words, "departure": _departure_words}
    immaterial = []
    for r in res.ranking:
        if r.how in ("window", "departure"):
            i = r.items[0]
            r.headline, line = words[r.how](ts, res, i)
            r.metrics = [line]
            # the other stretch too where it passes its bar, on another metric
            other = "departure" if r.how == "window" else "window"
            if (ratio[i] > 1 if other == "departure" else wz[i] > params.window_z):
                more = words[other](ts, res, i)[1]
                if more[0] != line[0]:
                    r.metrics.append(more)
        else:
            why = explain(r.items, majority, means, stds, metric_names, ts.units, step_std=step_std, step=step,
                          floor=params.run_share)
            r.metrics = [(m, "; ".join(parts)) for m, parts in why]
            if why:
                r.headline = f"{why[0][0]} {why[0][1][0]}"
                if not _material(r.items, majority, means, stds, [metric_names.index(m) for m, _ in why], shares,
                                 params.run_share):
                    immaterial.append(r)
        if r.how in ("window", "departure"):
            # found by a stretch of one metric; a level it holds well apart over the whole time is
            # said too (a worker spinning 4x as long per request, found by a rise of its
            # preemptions: CPU mean 12.3% against 3.76%, +21.9 sd), not how much more it varies
            # (the stretch itself does)
            said = {m for m, _ in r.metrics}
            for m, parts in explain(r.items, majority, means, stds, metric_names, ts.units, min_z=LEVEL_APART,
                                    step_std=step_std, step=step, floor=params.run_share):
                level = [p for p in parts if p.startswith("mean ")]
                j = metric_names.index(m)  # a share of time within a point of the others' is no level apart
                if m not in said and level and _material(r.items, majority, means, stds, [j], shares, params.run_share):
                    r.metrics.append((m, level[0]))
    if immaterial:
        # the descent ranks clusters by how their metrics move together; one whose only words are
        # shares of time apart by under a point (a healthy pool's worker whose preemptions vary
        # more: std 0.435% against 0.176%) is no deviation a user could act on
        res.ranking = [r for r in res.ranking if r not in immaterial]
        res.notes.append(f"{count_of(len(immaterial), 'clusters')} the paper's descent ranked "
                         + ("was" if len(immaterial) == 1 else "were") + " left out: what sets "
                         + ("it" if len(immaterial) == 1 else "each") + f" apart moves under {params.run_share:g} "
                         "point of the thread's time (" + "; ".join(
                             f"{'+'.join(names[i] for i in r.items)}: {r.headline}" for r in immaterial[:3]) + ")")
    return res


def _excursion_words(ts: ThreadSeries, res: LevelResult, item: int) -> tuple[str, tuple[str, str]]:
    """The headline and the (metric, line) of an abstraction's largest short excursion."""
    e = res.excursions[item]
    level, who = _who(ts, res, item, e.member)
    m = res.metrics[e.metric]
    u = ts.unit(m)
    way = "rose" if e.level >= e.baseline else "fell"
    w = e.window or res.params.window  # the half window finds a spike that fills half the window
    length = _length(ts, res, item, e.member, w)
    return (f"{m} {way} to {_num(e.level)}{u} from {_num(e.baseline)}{u} for {length or f'{w} samples'}",
            (m, f"{who}{way} to {_num(e.level)}{u} from its running level of {_num(e.baseline)}{u} "
                f"for {_span(ts, res, item, e.member, w)}{_at(ts, res, item, e.member, e.sample)}; "
                f"{e.z:.1f}x the usual size of such a move among the {plural(level)}"))


def _departure_words(ts: ThreadSeries, res: LevelResult, item: int) -> tuple[str, tuple[str, str]]:
    """The headline and the (metric, line) of an abstraction's largest sustained departure."""
    d = res.departures[item]
    level, who = _who(ts, res, item, d.member)
    m = res.metrics[d.metric]
    u = ts.unit(m)
    if d.whole:
        return (f"{m} at {_num(d.level)}{u} over the run against {_num(d.others)}{u} for the others",
                (m, f"{who}{_num(d.level)}{u} over the whole run (its windows' mean) while the other "
                    f"{plural(level)} were at {_num(d.others)}{u} (median)"
                    + (f", apart in all {d.windows} windows" if d.windows == d.of else
                       f", apart in {d.windows} of {d.of} windows" if d.windows else "")
                    + f"; {d.z:.1f}x how far the {plural(level)}' run means lie apart"))
    return (f"{m} held at {_num(d.level)}{u} against {_num(d.others)}{u} for the others",
            (m, f"{who}held at {_num(d.level)}{u} while the other {plural(level)} were at "
                f"{_num(d.others)}{u} (median), "
                + ("throughout: in all " if d.windows == d.of else "over ")
                + f"{d.windows}" + (f" of {d.of}" if d.of and d.windows < d.of else "")
                + f" windows of {_span(ts, res, item, d.member, res.params.window)}, furthest"
                f"{_at(ts, res, item, d.member, d.sample)}; {d.z:.1f}x how much the "
                f"{plural(level)} usually differ"))


def _thread_times(ts: ThreadSeries, res: LevelResult, item: int, member: int) -> np.ndarray:
    return ts.times(res.members[item][max(member, 0)])


def _length(ts: ThreadSeries, res: LevelResult, item: int, member: int, samples: int) -> str | None:
    """'211 ms': how long ``samples`` samples of the thread last, or None with fewer than two."""
    t = _thread_times(ts, res, item, member)
    with np.errstate(all="ignore"):  # a damaged file's times may be inf, or so far apart they overflow
        d = np.diff(t[np.isfinite(t)])
    d = d[np.isfinite(d)]
    if not len(d):
        return None
    step = float(np.median(d)) * samples * 1e9
    return fmt_duration(step) if abs(step) < 1e18 else None


def _span(ts: ThreadSeries, res: LevelResult, item: int, member: int, samples: int) -> str:
    """'10 samples (211 ms)': a window's length, in time where the samples are regular."""
    length = _length(ts, res, item, member, samples)
    return f"{samples} samples ({length})" if length else f"{samples} samples"


def _at(ts: ThreadSeries, res: LevelResult, item: int, member: int, sample: int) -> str:
    """' around 22:09:07.512 UTC' (sample index -> the thread's time)."""
    t = _thread_times(ts, res, item, member)
    if not len(t):
        return f" around sample {sample}"
    x = float(t[min(max(sample, 0), len(t) - 1)])
    if 1e8 < x < 2.5e11:  # epoch seconds (before the year 9999)
        return f" around {fmt_clock(int(x * 1e9))[:12]} UTC"
    if 0 <= x <= 1e8:  # seconds since a start (a perf trace on its boot clock, a CSV's own count)
        return f" around {fmt_when(int(x * 1e9))}"
    return f" around t = {x:.6g} s"


def _who(ts: ThreadSeries, res: LevelResult, item: int, member: int) -> tuple[str, str]:
    """(the level the evidence was measured among, a prefix naming the thread it was found in)."""
    if member < 0:
        return res.level, ""
    return "thread", f"in its thread {ts.ids[res.members[item][member]]}: "


def rank_dendrogram(Z: np.ndarray, au_pct: np.ndarray, au_threshold: float, tie_score: np.ndarray):
    """The paper's recursive ranking (section IV.F). Returns [(leaf indices, tie score)]."""
    k = len(Z) + 1
    height = np.r_[np.zeros(k), Z[:, 2]]
    size = np.r_[np.ones(k), Z[:, 3]]
    left = {k + i: int(a) for i, a in enumerate(Z[:, 0])}
    right = {k + i: int(b) for i, b in enumerate(Z[:, 1])}
    maxh = float(Z[:, 2].max()) if len(Z) else 0.0
    ranking: list[tuple[list[int], float]] = []

    def leaves(c: int) -> list[int]:
        if c < k:
            return [c]
        return leaves(left[c]) + leaves(right[c])

    def score(c: int) -> float:
        return float(np.mean(tie_score[leaves(c)]))

    # "limit the number of deviating clusters (with more than one member) to approximately 25%
    # of the dendrogram clusters": the dendrogram has 2k - 1 clusters (k leaves, k - 1 merges)
    n_clusters = 2 * k - 1

    def ranks_directly(c: int) -> bool:
        return size[c] == 1 or size[c] < (n_clusters / 4 - len(ranking))

    def rank(c: int) -> None:
        if ranks_directly(c):
            ranking.append((leaves(c), score(c)))
            return
        s, l = left[c], right[c]
        if size[s] > size[l]:
            s, l = l, s
        p = au_pct[c - k]
        hs, hl, hc = height[s], height[l], height[c]
        if ((hl - hs >= hc / 4 and hl - hs >= maxh / 10) or hc > maxh / 3
                or (p < au_threshold and (hs > maxh / 4 or hl > maxh / 4))):
            # the tie-breaker: two clusters ranked at once go by the distance of their means
            if ranks_directly(s) and size[l] == size[s] and score(l) > score(s):
                s, l = l, s
            rank(s)
            rank(l)

    rank(2 * k - 2)
    return ranking


def separation(D: np.ndarray) -> np.ndarray:
    """How far each abstraction sits from the others: its median Förstner–Moonen distance to
    them, over the median of that same figure across all abstractions (robust while the
    deviating ones are a minority, which the method assumes anyway)."""
    k = len(D)
    if k < 3:
        return np.full(k, np.inf)
    md = np.array([np.median(np.delete(D[i], i)) for i in range(k)])
    typical = np.median(md)
    return md / typical if typical > 0 else np.full(k, np.inf)


def _tie_scores(means: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Distance of each abstraction's mean metrics to the mean of all others (scaled units)."""
    z = means / scale
    k = len(z)
    tot = np.nansum(z, axis=0)
    rest = (tot[None, :] - z) / max(1, k - 1)
    return np.sqrt(np.nansum((z - rest) ** 2, axis=1))


@dataclass
class Excursion:
    z: float  # the largest short excursion, in units of the population's 99th percentile
    metric: int
    sample: int  # middle of the window, in samples from the abstraction's first
    level: float  # the window's mean there
    baseline: float  # the running median it departed from
    member: int = -1  # found in this member thread of the abstraction (-1: in the abstraction's mean)
    window: int = 0  # samples in the window that found it (``params.window`` or half of it; 0: not told)


def mean_series(g: list[np.ndarray]) -> np.ndarray:
    """An abstraction's samples as one series: its threads' mean at each sample index (threads
    of one group run side by side), over the shortest thread's length."""
    if len(g) == 1:
        return g[0]
    n = min(len(x) for x in g)
    return np.nanmean(np.stack([y[:n] for y in g]), axis=0)


def by_member(score_fn, groups: list[list[np.ndarray]], params: ThreadParams, resolution: np.ndarray) -> list:
    """``score_fn`` on the abstractions (their threads averaged) and, where abstractions pool
    several threads, on every thread against all threads of the level: an abstraction scores
    the larger of its own score and its most deviating thread's (tagged with ``member``). A
    short spike or a leak in one thread of ten is diluted ten times in the abstraction's mean,
    not among the level's threads. ``resolution``: the counts' steps over all the level's samples
    (:func:`resolution_step`), the same for both, computed once by the caller."""
    own = score_fn(groups, params, resolution)
    if all(len(g) <= 1 for g in groups):
        return own
    flat = [[x] for g in groups for x in g]
    owner = [a for a, g in enumerate(groups) for _ in g]
    within = [m for g in groups for m in range(len(g))]
    for f, sc in enumerate(score_fn(flat, params, resolution)):
        a = owner[f]
        if sc is not None and (own[a] is None or sc.z > own[a].z):
            sc.member = within[f]
            own[a] = sc
    return own


def window_scores(groups: list[list[np.ndarray]], params: ThreadParams,
                  resolution: np.ndarray | None = None) -> list[Excursion | None]:
    """The largest short excursion of every abstraction over two window lengths, ``window`` and
    half of it (a 1-minute CPU spike fills half a 10-sample window: its mean then rises half as
    much as the spike); each length is scaled on its own (see :func:`_window_scores`)."""
    # a count's move by one step of its resolution is no excursion (an apache2 worker's open
    # files 'rose to 2 from 1 for 3.13 s'): the step of the samples of all threads
    if resolution is None:
        resolution = resolution_step([x for g in groups for x in g], quantum=True)
    best = _window_scores(groups, params.window, resolution)
    half = max(3, params.window // 2)
    if half < params.window:
        for i, e in enumerate(_window_scores(groups, half, resolution)):
            if e is not None and (best[i] is None or e.z > best[i].z):
                best[i] = e
    return best


def median5(a, b, c, d, e):
    """Element-wise median of five arrays by a comparison network (no sort): the smallest and
    the largest of the first four are never the median of five; the median is that of the
    other two and the fifth."""
    lo1, hi1 = np.fmin(a, b), np.fmax(a, b)
    lo2, hi2 = np.fmin(c, d), np.fmax(c, d)
    x, y = np.fmax(lo1, lo2), np.fmin(hi1, hi2)
    return np.fmax(np.fmin(x, y), np.fmin(np.fmax(x, y), e))


def _window_scores(groups: list[list[np.ndarray]], window: int, resolution=None) -> list[Excursion | None]:
    """Short deviations (beyond the paper): for every abstraction and metric, the mean over
    moving windows (``params.window`` samples, half-overlapping); an excursion is how far a
    window's mean rises above (or falls below) the medians of *both* the 5 windows before and
    the 5 after it: a spike does, a step (a window between two levels), a slow trend or a leak
    does not. Excursions are scaled per metric by the 99th percentile of all windows' excursions
    of all abstractions: what the population does now and then (an allocator arena growing and
    shrinking back) sets the scale, a spike of one thread does not move it. An abstraction's
    score is its largest scaled excursion."""
    w = window
    step = max(1, w // 2)
    k = len(groups)
    resid_all, per = [], []
    for g in groups:
        x = mean_series(g)
        n = len(x)
        if n < 3 * w:
            per.append(None)
            continue
        starts = np.arange(0, n - w + 1, step)
        cs = np.vstack([np.zeros((1, x.shape[1])), np.nancumsum(x, axis=0)])
        means = (cs[starts + w] - cs[starts]) / w  # (windows, p)
        h = 5
        pad = np.pad(means, ((h + 1, h + 1), (0, 0)), mode="edge")
        nm = len(means)
        # the medians of the 5 windows before and the 5 after each window
        left = median5(*(pad[d:d + nm] for d in range(h)))
        right = median5(*(pad[h + 2 + d:h + 2 + d + nm] for d in range(h)))
        # an excursion rises above (or falls below) the level on *both* sides: a step (a window
        # between two levels) is not one
        hi_, lo_ = np.maximum(left, right), np.minimum(left, right)
        r = np.where(means > hi_, means - hi_, np.where(means < lo_, means - lo_, 0.0))
        resid_all.append(r)
        per.append((starts, means, np.where(means > hi_, hi_, lo_), r))
    if not resid_all:
        return [None] * k
    # the unit of each metric: how much the abstractions differ from one another at the same
    # time (robust spread across them of the window means, median over windows). Threads whose
    # memory levels wander apart by tens of MB make a 10 MB bump ordinary; threads that all run
    # at 30-40 % CPU make a spike to 100 % extraordinary.
    valid = [i for i, item in enumerate(per) if item is not None]
    n_w = min(len(per[i][1]) for i in valid) if valid else 0
    if len(valid) >= 3 and n_w:
        stack = np.stack([per[i][1][:n_w] for i in valid])  # (abstractions, windows, p)
        cs = 1.4826 * np.median(np.abs(stack - np.median(stack, axis=0)), axis=0)  # (windows, p)
        unit = np.median(cs, axis=0)
    else:
        unit = np.zeros(len(groups[0][0][0]) if groups else 0)
    allr = np.abs(np.vstack(resid_all))
    floor = np.nanquantile(allr, 0.99, axis=0)  # never finer than what the population does now and then
    # where nearly every window sits exactly on its level (open files, mappings: counts that
    # change now and then), the 99th percentile is 0: then the usual size of a move sets the
    # unit, and never less than 1% of the metric's range over all windows
    typical = median_above(allr, 0.0, axis=0)
    all_means = np.vstack([per[i][1] for i in valid]) if valid else np.zeros((1, allr.shape[1]))
    span = np.nanmax(all_means, axis=0) - np.nanmin(all_means, axis=0)
    unit = np.maximum.reduce([unit, floor, typical, 0.01 * np.nan_to_num(span), np.full_like(unit, 1e-9)])
    out = []
    for i in range(k):
        if per[i] is None:
            out.append(None)
            continue
        starts, means, med, r = per[i]
        z = np.abs(r) / unit
        if resolution is not None:
            z = np.where(np.abs(r) <= resolution * (1 + 1e-9), 0.0, z)
        wi, j = np.unravel_index(int(np.argmax(z)), z.shape)
        out.append(Excursion(float(z[wi, j]), int(j), int(starts[wi] + w // 2), float(means[wi, j]),
                             float(med[wi, j]), window=w))
    return out


def _most_moved(d: Departure, bar: float, shares: list[bool] | None) -> None:
    """A run's departure told by the share of time (%) that moved most, where its metric is one
    and another past ``bar`` moved twice as many points (see :func:`held_departures`)."""
    if d.each is None or not shares or not shares[d.metric]:
        return
    zs, level, others, windows = d.each
    moved = np.abs(level - others)
    past = [j for j in range(len(zs)) if shares[j] and zs[j] > bar and moved[j] >= 2 * moved[d.metric]]
    if past:
        j = max(past, key=lambda j: moved[j])
        d.metric, d.z, d.level, d.others, d.windows = j, float(zs[j]), float(level[j]), float(others[j]), int(windows[j])


def departure_bar(dz: np.ndarray, params: ThreadParams) -> float:
    """The departure an abstraction must hold to be ranked for it (``dz``: every abstraction's):
    ``params.departure`` units, and ``params.habit`` times the median abstraction's, since a
    departure stands out from the others' too (on the webserver sample's 32 apache2 workers the
    median one held 8 units, each serving a request in turn, and 19 were beyond 6 at 1.2-1.5x
    that; a leak in the generator's pools holds 12x the median of its wave)."""
    return max(params.departure, params.habit * float(np.median(dz)))


@dataclass
class Departure:
    z: float  # the departure held over the sustain share of windows, in units of the usual spread
    metric: int
    sample: int  # middle of the window where the departure is largest
    level: float  # the abstraction's window mean there
    others: float  # the other abstractions' median there
    windows: int  # windows the departure is held over (beyond params.departure when it scores so)
    member: int = -1  # found in this member thread of the abstraction (-1: in the abstraction's mean)
    of: int = 0  # windows in all
    run: "Departure | None" = None  # the run's mean apart from the others' (``whole``: this is one)
    whole: bool = False  # the whole run's mean against the others' run means, not a window's
    each: tuple | None = None  # a run's: (z, level, others, windows apart) of every metric


def departure_scores(groups: list[list[np.ndarray]], params: ThreadParams,
                     resolution: np.ndarray | None = None, floor: np.ndarray | None = None) -> list[Departure | None]:
    """See _departure_scores; a metric no abstraction reported in a window is NaN there, not told
    (numpy's warnings about empty means would reach the user's terminal)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return _departure_scores(groups, params, resolution, floor)


def _departure_scores(groups: list[list[np.ndarray]], params: ThreadParams,
                      resolution: np.ndarray | None = None, floor: np.ndarray | None = None) -> list[Departure | None]:
    """Long departures (beyond the paper): the mean of every abstraction (its threads averaged
    sample by sample) over consecutive windows of ``params.window`` samples, against the median
    of all abstractions in the same window, in units of how much abstractions usually differ
    (the robust spread across them, median over windows: threads that always differ a little,
    in speed or memory layout, set it). The score of a metric is the departure an abstraction
    holds in at least ``sustain`` of the windows (the so-many-th largest): a leak ramping to the
    end of the run holds one, a short spike or a step of noise does not. An abstraction's score
    is that of its most departing metric. ``floor`` (p,): a departure by less than it, in the
    metric's own units, is none (a share of a thread's time apart by under a point)."""
    k = len(groups)
    xs = [mean_series(g) for g in groups]
    n = min((len(x) for x in xs), default=0)
    w = params.window
    nw = n // w
    if k < 3 or nw < 10:
        return [None] * k
    X = np.stack([x[:nw * w] for x in xs]).reshape(k, nw, w, -1)
    M = np.nanmean(X, axis=2)  # (k, windows, p)
    med = np.nanmedian(M, axis=0)
    spread = 1.4826 * np.nanmedian(np.abs(M - med), axis=0)  # (windows, p)
    unit = np.nanmedian(spread, axis=0)
    # metrics most abstractions share exactly (counts that rarely differ): never finer than the
    # usual size of a difference where there is one, and 1% of the metric's range
    typical = median_above(np.abs(M - med).reshape(-1, M.shape[-1]), 0.0, axis=0)
    span = np.nan_to_num(np.nanmax(M, axis=(0, 1)) - np.nanmin(M, axis=(0, 1)))
    unit = np.maximum.reduce([unit, typical, 0.01 * span, np.full_like(unit, 1e-9)])
    dep = np.abs(M - med) / unit
    if floor is not None:
        dep = np.where(np.abs(M - med) < floor, 0.0, dep)
    held = max(2, int(round(params.sustain * nw)))
    srt = np.sort(np.nan_to_num(dep, nan=0.0), axis=1)[:, -held, :]  # (k, p): held over >= `held` windows
    # the whole run's level: each abstraction's mean over its windows against the others' run
    # means, in units of how far run means lie apart (never under 2% of the level: threads that
    # serve one queue end a run within a percent or two of one another, a worker that syncs a
    # file or makes ten times the system calls per request is tens of units away), nor under a
    # count's step (a thread whose net mappings read -1 from one munmap before the first window
    # all run, against 0, is not apart)
    R = np.nanmean(M, axis=1)  # (k, p)
    medR = np.nanmedian(R, axis=0)
    step = resolution if resolution is not None else resolution_step([x for g in groups for x in g], quantum=True)
    unitR = np.maximum.reduce([1.4826 * np.nanmedian(np.abs(R - medR), axis=0), 0.02 * np.abs(medR),
                               0.01 * span, step, np.full_like(medR, 1e-9)])
    zR = np.nan_to_num(np.abs(R - medR) / unitR)
    if floor is not None:
        zR = np.where(np.abs(R - medR) < floor, 0.0, zR)
    out = []
    for i in range(k):
        j = int(np.argmax(srt[i]))
        wi = int(np.nanargmax(np.where(np.isnan(dep[i, :, j]), -1, dep[i, :, j])))
        # how long: the windows beyond the ranking's bar (an offset held from the first sample to
        # the last is held in all of them, not in the `held` its score needs)
        d = Departure(float(srt[i, j]), j, wi * w + w // 2, float(M[i, wi, j]), float(med[wi, j]),
                      int((dep[i, :, j] >= min(srt[i, j], params.departure)).sum()), of=nw)
        j = int(np.argmax(zR[i]))
        d.run = Departure(float(zR[i, j]), j, nw * w // 2, float(R[i, j]), float(medR[j]),
                          int((dep[i, :, j] >= params.departure).sum()), of=nw, whole=True,
                          each=(zR[i], R[i], medR, (dep[i] >= params.departure).sum(axis=0)))
        out.append(d)
    return out


def held_departures(dep: list[Departure | None], params: ThreadParams,
                    shares: list[bool] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each abstraction's departure against its bar (over 1: ranked) and its score, from the two
    ways a departure is held: over ``sustain`` of the windows (a leak late in the run), or by the
    whole run's mean (a level held apart throughout: on a 2 s perf recording of 19 windows of 10
    ms, under one request per worker each, the worker syncing a file per request holds its disk
    wait at 1.5-3.2% in every window against 0-0.5%, and the one sleeping 2 ms more per request
    its sleep at 16.9% against 3.87% over the run; window by window the other workers' bursts of
    waits for a CPU hold as much over the two windows the first way needs, and the habit bar of
    the median worker hid them). Each against its own bar (:func:`departure_bar`); where the
    second passes further, it replaces the first in ``dep`` (its words say 'over the run').
    ``shares``: which metrics are shares of the thread's time (%): of those past the bar, a run's
    is told by the one that moved most, at least twice the points of the furthest in units (the
    worker sleeping 2 ms more per request: its sleep 13 points up at 6.6 units, before its disk
    wait 0.24 points up at 23 units, which its sleeping moved too)."""
    ways = [dep, [d.run if d is not None else None for d in dep]]
    z = np.array([[x.z if x is not None else 0.0 for x in way] for way in ways])  # (2, k)
    if not z.shape[1]:
        return z[0], z[0]
    bars = [departure_bar(z[w], params) for w in range(len(ways))]
    ratio = np.stack([z[w] / bars[w] for w in range(len(ways))])
    best = np.argmax(ratio, axis=0)
    for i, d in enumerate(dep):
        if d is not None and best[i] and ways[best[i]][i] is not None:
            ways[best[i]][i].member = d.member
            dep[i] = ways[best[i]][i]
            _most_moved(dep[i], bars[best[i]], shares)
    cols = np.arange(z.shape[1])
    return ratio[best, cols], z[best, cols]


def explain(items: list[int], majority: list[int], means, stds, metrics, units: dict | None = None,
            min_z: float = 2.0, step_std=None, step=None, floor: float = 0.0):
    """Which metrics set the ranked abstractions apart from the majority: the difference of
    their mean, in units of the spread of the majority's means (or of its own std when the
    majority agrees; said from ``min_z`` units), and the ratio of standard deviations, where
    either is more than a metric's resolution makes (``step_std``: the std of one step in the
    samples; a count that moved once in 200 windows is not 'varying'), and a level more than one
    step of it apart (``step``: a count's step; a thread whose net mappings read -1 from one
    munmap before the first window, against 0, is not apart). (metric, [what sets it apart, the
    strongest first]) per metric."""
    if not majority:
        majority = [i for i in range(len(means)) if i not in items]
    if not majority:
        return []
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # a metric never reported: NaN, not told
        warnings.simplefilter("ignore", RuntimeWarning)
        m_mean = np.nanmean(means[majority], axis=0)
        m_std = np.nanmean(stds[majority], axis=0)
        between = np.nanstd(means[majority], axis=0)
        span = np.nan_to_num(np.nanmax(means, axis=0) - np.nanmin(means, axis=0))
        unit = np.maximum.reduce([between, 0.25 * m_std, 0.01 * span, np.full_like(between, 1e-9)])
        mine_mean = np.nanmean(means[items], axis=0)
        mine_std = np.nanmean(stds[items], axis=0)
        zmean = (mine_mean - m_mean) / unit
        if step is not None:
            zmean = np.where(np.abs(mine_mean - m_mean) <= np.asarray(step) * (1 + 1e-9), 0.0, zmean)
        ratio = mine_std / np.maximum(m_std, 1e-12)
        if step_std is not None:
            ratio = np.where(np.maximum(mine_std, m_std) <= 3 * np.asarray(step_std), 1.0, ratio)
        # how far apart against its own and the others' variation: a level held (a spinning thread's
        # CPU, 59.5% against 1%) beats a few bursts over a zero baseline (its minor faults, 0.3
        # against 0), which the first key cannot tell apart: the others hardly differ on either,
        # both sit at the floor's 100 units
        held = np.nan_to_num(np.abs(mine_mean - m_mean) / np.maximum.reduce([mine_std, m_std, np.full_like(unit, 1e-12)]))
    out = []
    key = np.nan_to_num(np.maximum(np.abs(zmean), np.abs(np.log(np.maximum(ratio, 1e-12))) * 3))
    order = np.lexsort((-held, -np.minimum(key, 50.0)))  # beyond 50 units all are far: then the one held
    if floor > 0 and units:
        # a share of the thread's time whose mean and std lie within ``floor`` points of the others'
        # is said after those that moved more (a sleeping worker's disk wait, 0.63% against 0.02% at
        # +9 sd, led its words before its sleep, 17% against 3%)
        shares = [units.get(m) == "%" for m in metrics]
        tiny = {j for j in range(len(metrics)) if not _material(items, majority, means, stds, [j], shares, floor)}
        order = np.array([j for j in order if j not in tiny] + [j for j in order if j in tiny], np.int64)
    # shares of the thread's time are said by how much of its time moved: a thread napping 20% of
    # its time against 3.6% (+5.2 sd) is more about its sleeps than its waits for a CPU at 0.77%
    # against 0.19% (+6.4 sd); among the three said, such a level apart goes before another that
    # moved under half as many points (a spinning thread's CPU, +8.7 points at +23 sd, stays
    # before its Blocked, -8.8 points at -18 sd: one is the other's complement), other metrics
    # (other units) keep their places
    order = list(order[:3])
    if units:
        share = [j for j in order if units.get(metrics[j]) == "%" and abs(zmean[j]) >= min_z]
        if len(share) > 1:
            moved = {j: abs(float(np.nan_to_num(mine_mean[j] - m_mean[j]))) for j in share}
            by_time: list[int] = []
            for j in share:  # in the order of their sd; one goes before those it moved twice as far as
                at = len(by_time)
                while at > 0 and moved[j] >= 2 * moved[by_time[at - 1]]:
                    at -= 1
                by_time.insert(at, j)
            spots = iter(by_time)
            order = [next(spots) if j in moved else j for j in order]
    for j in order:
        parts = []
        u = units.get(metrics[j], "") if units else ""
        u = u if u in ("", "%") else " " + u
        if abs(zmean[j]) >= min_z:
            real = max(between[j], 0.25 * m_std[j]) >= unit[j]  # a spread, not the floor
            parts.append(f"mean {_num(mine_mean[j])}{u} against {_num(m_mean[j])}{u} for the others "
                         + (f"({zmean[j]:+.1f} sd)" if real else "(who hardly differ from one another)"))
        if (ratio[j] >= 1.5 or ratio[j] <= 1 / 1.5) and m_std[j] >= 0.01 * max(span[j], 1e-9):
            if ratio[j] >= 1:
                parts.append(f"varies more: std {_num(mine_std[j])}{u} against {_num(m_std[j])}{u} for the others "
                             f"({fmt_ratio(ratio[j])})")
            elif mine_std[j] > 0:
                parts.append(f"steadier: std {_num(mine_std[j])}{u} against {_num(m_std[j])}{u} for the others "
                             f"({fmt_ratio(1 / ratio[j])} less)")
            else:
                parts.append(f"constant, where the others vary (std {_num(m_std[j])}{u})")
        elif ratio[j] >= 1.5 and mine_std[j] > 0:
            parts.append(f"varies (std {_num(mine_std[j])}{u}) where the others hardly vary")
        if parts:
            out.append((metrics[j], parts))
    return out


def _material(items: list[int], majority: list[int], means: np.ndarray, stds: np.ndarray, named: list[int],
              shares: list[bool], floor: float) -> bool:
    """Whether what sets ``items`` apart (the ``named`` metrics) moves enough: a metric that is no
    share of the thread's time, or a share whose mean or std differs from the majority's by
    ``floor`` points or more."""
    if not majority:
        return True
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        dmean = np.abs(np.nanmean(means[items], axis=0) - np.nanmean(means[majority], axis=0))
        dstd = np.abs(np.nanmean(stds[items], axis=0) - np.nanmean(stds[majority], axis=0))
    return any(not shares[j] or not (np.nan_to_num(dmean[j]) < floor and np.nan_to_num(dstd[j]) < floor)
               for j in named)


def _num(v: float) -> str:
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.2f}G"
    if a >= 1e6:
        return f"{v / 1e6:.1f}M"
    if a >= 1e4:
        return f"{v / 1e3:.1f}k"
    if a >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


__all__ = ["ThreadParams", "LevelResult", "Ranked", "analyse_level", "rank_dendrogram", "abstractions", "GROUPS"]
