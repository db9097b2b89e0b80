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
    seen: dict[str, dict[str, set]] = {}
    for name, labels in parsed:
        for k, v in labels.items():
            if k != key:
                seen.setdefault(name, {}).setdefault(k, set()).add(v)
    counters = []
    for name, labels in parsed:
        apart = sorted(k for k in labels if k != key and len(seen[name][k]) > 1)
        inner = ",".join(f'{k}="{labels[k]}"' for k in apart)
        counters.append((name or "value") + ("{" + inner + "}" if inner else ""))
    return servers, counters, key
