"""Which host each trace folder belongs to."""

from __future__ import annotations

import os
from pathlib import Path

from .discover import find_traces
from .metadata import env_hostname, env_value, read_metadata_text


def distinct_hosts(paths: list, env: list) -> list[str | None]:
    """The host name of each trace: its metadata's hostname, except where several kernel traces
    name the same host (machines installed from one image, containers...): they are different
    machines, named ``hostname (folder)`` after the first folder where their paths part, and a
    user-space trace of that hostname goes with the kernel trace whose path shares the most
    with its own, beyond where theirs part (a session's ``ust/`` beside its ``kernel/``); one
    that shares no more with any of them is a recording of its own, named after its own folder
    there. None where the metadata has no hostname (the stream's environment says)."""
    out = [h for h, _ in env]
    by_name: dict[str, list[int]] = {}
    for i, (h, dom) in enumerate(env):
        if h is not None and dom == "kernel":
            by_name.setdefault(h, []).append(i)
    for h, kern in by_name.items():
        if len(kern) < 2:
            continue
        parts = [Path(os.path.abspath(paths[i])).parts for i in kern]
        common = 0
        while all(len(p) > common + 1 for p in parts) and len({p[common] for p in parts}) == 1:
            common += 1
        names = {i: f"{h} ({p[common]})" for i, p in zip(kern, parts)}
        for i, name in names.items():
            out[i] = name
        for i, (h2, dom) in enumerate(env):
            if h2 == h and dom != "kernel":
                mine = Path(os.path.abspath(paths[i])).parts
                shared = [(len(os.path.commonprefix([mine, Path(os.path.abspath(paths[k])).parts])), k) for k in kern]
                best = max(n for n, _ in shared)
                closest = [k for n, k in shared if n == best]
                if best > common and len(closest) == 1:
                    out[i] = names[closest[0]]  # recorded beside that kernel trace
                else:  # beside none of them more than the others: a recording of its own
                    out[i] = f"{h} ({mine[common] if len(mine) > common else mine[-1]})"
    return out


def host_groups(paths) -> dict[str, list[str]]:
    """The trace folders under ``paths``, grouped by host and named as a reader of all of them
    names the hosts (distinct_hosts; "?" for traces without a hostname), in the order found.
    Reads only the metadata: a damaged one raises the InputError the reader would."""
    tds = find_traces(paths)
    env = []
    for td in tds:
        text = read_metadata_text(td.path / "metadata")
        env.append((env_hostname(text), env_value(text, "domain")))
    groups: dict[str, list[str]] = {}
    for td, name in zip(tds, distinct_hosts([td.path for td in tds], env)):
        groups.setdefault(name or "?", []).append(str(td.path))
    return groups
