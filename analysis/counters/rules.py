"""Threshold rules (PAD's threshold analysis, paper 004, section IV step 3): in a TOML file, or in
the paper's XML format read as is.

TOML::

    [[rule]]
    counter = "Runtime.GC.PercentOfTimeInGC"   # exact name, or a glob: "GC.*"
    view = "detail"          # detail | server | time
    statistic = "any"        # any | mean | median | std | min | max | quantile
    quantile = 0.95          # with statistic = "quantile"
    op = ">"                 # > >= < <= == != (or GreaterThan, LessThanOrEqual, ...)
    value = 15               # compare with this value, or:
    # percent_from_median = 50   the statistic deviates more than 50% from the median of the view
    # zscore = 3                 |statistic - mean| / std of the view above 3 (op ignored)

The XML of the paper's Listing 1 (``<ThresholdConfig><PerformanceCounter Name=...><Rule
AppliesTo="DetailView|ServerView|TimeView"><Statistic>Any|Average|Median|...</Statistic>
<ExpectedValue>15</ExpectedValue><ComparisonOperator>GreaterThan</ComparisonOperator>``); our
extensions there: ``<Quantile>``, ``<PercentFromMedian>``, ``<ZScore>``.

Semantics: the *detail* view compares every (server, time) value; *server*: the statistic over
time of each server; *time*: the statistic over servers at each time point. ``any`` compares
every value of the view (for the server view: every value of each server, reported per server).
"""

from __future__ import annotations

import fnmatch
import operator
import tomllib
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perftriage.analysis.errors import InputError, reading
from perftriage.analysis.inputs import read_text
from perftriage.analysis.units import count_of

from .table import CounterSet

OPS = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
}
OP_WORDS = {
    "greaterthan": ">", "greaterthanorequal": ">=", "greaterorequal": ">=", "lessthan": "<", "lessthanorequal": "<=",
    "lessorequal": "<=", "equal": "==", "equals": "==", "notequal": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<=",
    "eq": "==", "ne": "!=",
}
VIEWS = ("detail", "server", "time")
STATISTICS = ("any", "mean", "median", "std", "min", "max", "quantile")
STAT_WORDS = {"average": "mean", "avg": "mean", "mean": "mean", "median": "median", "any": "any", "all": "any",
              "std": "std", "stddev": "std", "standarddeviation": "std", "min": "min", "minimum": "min", "max": "max",
              "maximum": "max", "quantile": "quantile", "percentile": "quantile"}


@dataclass
class Rule:
    counter: str
    view: str = "detail"
    statistic: str = "any"
    op: str = ">"
    value: float | None = None
    quantile: float = 0.95
    percent_from_median: float | None = None
    zscore: float | None = None
    source: str = ""  # file and rule number, for messages

    def describe(self) -> str:
        stat = f"q{self.quantile:g}" if self.statistic == "quantile" else self.statistic
        if self.zscore is not None:
            test = f"|z| > {self.zscore:g}"
        elif self.percent_from_median is not None:
            test = f"{self.op} {self.percent_from_median:g}% from the median"
        else:
            test = f"{self.op} {self.value:g}"
        return f"{self.counter}: {stat} in the {self.view} view {test}"


@dataclass
class Violation:
    rule: Rule
    counter: int
    items: list[tuple[int, int, float]]  # (server or -1, time point or -1, value), worst first
    n: int  # violations (items may be cut)
    checked: int  # values compared
    notes: list[str] = field(default_factory=list)


def _op(word: str, where: str) -> str:
    w = str(word).strip()
    if w in OPS:
        return w
    k = w.lower().replace(" ", "").replace("_", "")
    if k in OP_WORDS:
        return OP_WORDS[k]
    raise ValueError(f"{where}: unknown comparison {word!r} (use one of {', '.join(OPS)})")


def _validate(r: Rule, where: str) -> Rule:
    if r.view not in VIEWS:
        raise ValueError(f"{where}: view must be one of {', '.join(VIEWS)}, not {r.view!r}")
    if r.statistic not in STATISTICS:
        raise ValueError(f"{where}: statistic must be one of {', '.join(STATISTICS)}, not {r.statistic!r}")
    if r.value is None and r.percent_from_median is None and r.zscore is None:
        raise ValueError(f"{where}: give value, percent_from_median or zscore")
    if not 0 <= r.quantile <= 1:
        raise ValueError(f"{where}: quantile must be within 0..1")
    if not r.counter:
        raise ValueError(f"{where}: no counter named")
    return r


def read_rules(path) -> list[Rule]:
    path = Path(path)
    text = read_text(path)  # UTF-8 (UTF-16 and gzip decoded); one line where it is missing or empty
    try:
        with reading(path, "rules file"):
            rules = _from_xml(text, path) if text.lstrip().startswith("<") else _from_toml(text, path)
    except ValueError as exc:
        raise InputError(path, str(exc)) from None
    if not rules:
        raise InputError(path, "no rule found")
    return rules


def _from_toml(text: str, path: Path) -> list[Rule]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML: {exc}") from None
    raw = doc.get("rule", doc.get("rules", []))
    if isinstance(raw, dict):
        raw = [raw]
    out = []
    known = {"counter", "view", "statistic", "op", "operator", "value", "quantile", "percent_from_median", "zscore"}
    for i, d in enumerate(raw, 1):
        where = f"rule {i}"
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected a table")
        extra = set(d) - known
        if extra:
            raise ValueError(f"{where}: unknown key{'' if len(extra) == 1 else 's'} {', '.join(sorted(extra))}")
        stat = STAT_WORDS.get(str(d.get("statistic", "any")).lower(), str(d.get("statistic")))
        r = Rule(counter=str(d.get("counter", "")), view=str(d.get("view", "detail")).lower(), statistic=stat,
                 op=_op(d.get("op", d.get("operator", ">")), where),
                 value=None if d.get("value") is None else float(d["value"]), quantile=float(d.get("quantile", 0.95)),
                 percent_from_median=None if d.get("percent_from_median") is None else float(d["percent_from_median"]),
                 zscore=None if d.get("zscore") is None else float(d["zscore"]), source=f"{path.name} {where}")
        out.append(_validate(r, where))
    return out


def _from_xml(text: str, path: Path) -> list[Rule]:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"not valid XML: {exc}") from None
    out = []
    views = {"detailview": "detail", "detail": "detail", "serverview": "server", "server": "server",
             "timeview": "time", "time": "time"}
    for pc in root.iter("PerformanceCounter"):
        name = pc.get("Name", "")
        for j, rule in enumerate(pc.iter("Rule"), 1):
            where = f"counter {name!r} rule {j}"

            def child(tag, rule=rule):
                e = rule.find(tag)
                return e.text.strip() if e is not None and e.text else None

            applies = str(rule.get("AppliesTo", "DetailView")).strip().lower()
            if applies not in views:
                raise ValueError(f"{where}: AppliesTo must be DetailView, ServerView or TimeView")
            stat_w = (child("Statistic") or "Any").lower()
            if stat_w not in STAT_WORDS:
                raise ValueError(f"{where}: unknown Statistic {child('Statistic')!r}")
            try:
                value = child("ExpectedValue")
                r = Rule(counter=name, view=views[applies], statistic=STAT_WORDS[stat_w],
                         op=_op(child("ComparisonOperator") or "GreaterThan", where),
                         value=float(value) if value is not None else None,
                         quantile=float(child("Quantile") or 0.95),
                         percent_from_median=float(child("PercentFromMedian")) if child("PercentFromMedian") else None,
                         zscore=float(child("ZScore")) if child("ZScore") else None, source=f"{path.name} {where}")
            except ValueError as exc:
                if "could not convert" in str(exc):
                    raise ValueError(f"{where}: a number is expected ({exc})") from None
                raise
            out.append(_validate(r, where))
    return out


def _stat(x: np.ndarray, stat: str, q: float, axis: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if stat == "mean":
            return np.nanmean(x, axis=axis)
        if stat == "median":
            return np.nanmedian(x, axis=axis)
        if stat == "std":
            return np.nanstd(x, axis=axis)
        if stat == "min":
            return np.nanmin(x, axis=axis)
        if stat == "max":
            return np.nanmax(x, axis=axis)
        return np.nanquantile(x, q, axis=axis)


def evaluate(cs: CounterSet, rules: list[Rule], keep: int = 20) -> tuple[list[Violation], list[str]]:
    """Violations of every rule (one per rule and matching counter that is violated) and notes
    (rules that match no counter)."""
    out, notes = [], []
    for r in rules:
        matched = [i for i, c in enumerate(cs.counters) if c == r.counter or fnmatch.fnmatchcase(c, r.counter)]
        if not matched:
            notes.append(f"{r.source}: no counter matches {r.counter!r}")
            continue
        for c in matched:
            v = _check(cs, r, c, keep)
            if v is not None:
                out.append(v)
    return out, notes


def _check(cs: CounterSet, r: Rule, c: int, keep: int) -> Violation | None:
    x = cs.values[:, c, :]  # (S, T)
    S, T = x.shape
    # the values the rule compares, with their (server, time) coordinates
    if r.statistic == "any":  # every value of the view; reported per server / time point below
        vals = x.ravel()
        srv = np.repeat(np.arange(S), T)
        tim = np.tile(np.arange(T), S)
    elif r.view == "detail":
        vals = np.array([_stat(x.ravel(), r.statistic, r.quantile, 0)])
        srv = tim = np.array([-1])
    elif r.view == "server":
        vals = _stat(x, r.statistic, r.quantile, 1)
        srv, tim = np.arange(S), np.full(S, -1)
    else:
        vals = _stat(x, r.statistic, r.quantile, 0)
        srv, tim = np.full(T, -1), np.arange(T)
    ok = np.isfinite(vals)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if r.zscore is not None:
            mu, sd = np.nanmean(vals), np.nanstd(vals)
            dev = np.abs(vals - mu) / sd if sd > 0 else np.zeros_like(vals)
            bad = ok & (dev > r.zscore)
            severity = dev
        elif r.percent_from_median is not None:
            med = np.nanmedian(vals)
            pct = np.abs(vals - med) / abs(med) * 100 if med != 0 else np.where(vals != 0, np.inf, 0.0)
            bad = ok & OPS[r.op](pct, r.percent_from_median)
            severity = pct
        else:
            bad = ok & OPS[r.op](vals, r.value)
            severity = np.abs(vals - r.value)
    n = int(bad.sum())
    if n == 0:
        return None
    idx = np.flatnonzero(bad)
    idx = idx[np.argsort(-np.nan_to_num(severity[idx], posinf=1e308), kind="stable")]
    if r.statistic == "any" and r.view in ("server", "time"):
        # one item per server (time point): its worst value
        key, what = (srv, "in {}") if r.view == "server" else (tim, "at {}")
        first = np.unique(key[idx], return_index=True)[1]  # idx is worst first: the first of each
        worst = idx[np.sort(first)]
        items = [(int(srv[i]), int(tim[i]), float(vals[i])) for i in worst[:keep].tolist()]
        where = count_of(len(worst), "servers" if r.view == "server" else "time points")
        return Violation(r, c, items, len(worst), int(ok.sum()), [f"{count_of(n, 'values')} " + what.format(where)])
    items = [(int(srv[i]), int(tim[i]), float(vals[i])) for i in idx[:keep].tolist()]
    return Violation(r, c, items, n, int(ok.sum()))
