"""Series named by Prometheus label sets, as Grafana writes them in the CSV of a panel
(``node_load1{instance="10.0.0.1:9100", job="node"}``, or ``{instance="...", job="..."}`` where
the legend leaves the name out): the columns (or the ``Series`` cells) of one metric over
several servers."""

from __future__ import annotations

import re

_SET = re.compile(r"\s*([A-Za-z_:][\w:.]*)?\s*\{(.*)\}\s*")
_PAIR = re.compile(r'\s*([A-Za-z_]\w*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def label_set(text: str) -> tuple[str, dict[str, str]] | None:
    """``name{k="v", ...}`` as (name, labels), name "" where there is none; None when ``text`` is
    not one."""
    m = _SET.fullmatch(text)
    if m is None:
        return None
    body, labels, at = m.group(2), {}, 0
    while at < len(body):
        p = _PAIR.match(body, at)
        if p is None or p.end() == at:
            return None
        labels[p.group(1)] = p.group(2).replace('\\"', '"').replace("\\\\", "\\")
        at = p.end()
    return (m.group(1) or "", labels) if labels else None


def servers_of_series(names: list[str], server_labels, norm) -> tuple[list[str], list[str], str] | None:
    """Where every one of ``names`` is a label set with a label naming a server (the first of its
    labels whose ``norm``-ed name is in ``server_labels``), two servers or more: each one's server,
    its counter (its name, "value" where it has none, with the other labels that tell apart the
    series of that name: a label with one value over them left off) and the label; else None."""
    parsed = [label_set(n) for n in names]
    if len(names) < 2 or any(p is None for p in parsed):
        return None
    key = next((k for k in parsed[0][1] if norm(k) in server_labels), None)
    if key is None or any(key not in labels for _, labels in parsed):
        return None
    servers = [labels[key] for _, labels in parsed]
    if len(set(servers)) < 2:
        return None
    counters = counter_names([(name or "value", {k: v for k, v in labels.items() if k != key})
                              for name, labels in parsed])
    return servers, counters, key


def counter_names(series: list[tuple[str, dict[str, str]]]) -> list[str]:
    """Each series' counter: its name with the labels that tell apart the series of that name,
    sorted, as Prometheus writes them (``node_cpu_seconds_total{cpu="0",mode="idle"}``): a label
    with one value over them all (a scrape's ``job``) is left off, one some of them lack is kept."""
    values_of: dict[str, dict[str, set]] = {}  # name -> label -> its values over the name's series
    having: dict[tuple[str, str], int] = {}  # (name, label) -> how many of the name's series have it
    counts: dict[str, int] = {}
    for name, labels in series:
        counts[name] = counts.get(name, 0) + 1
        seen = values_of.setdefault(name, {})
        for k, v in labels.items():
            seen.setdefault(k, set()).add(v)
            having[name, k] = having.get((name, k), 0) + 1
    out = []
    for name, labels in series:
        keep = {k: v for k, v in labels.items() if len(values_of[name][k]) > 1 or having[name, k] < counts[name]}
        out.append(name + ("{" + ",".join(f'{k}="{v}"' for k, v in sorted(keep.items())) + "}" if keep else ""))
    return out
