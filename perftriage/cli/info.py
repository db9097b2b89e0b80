"""``perftriage info PATH...``: what CTF traces hold (hosts, domains, CPUs, time span, events, losses),
and what data files hold (spans, counters, thread metrics: their form, how much, over which times)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .common import EXIT_CODES_HELP, EXIT_OK, EXIT_PARTIAL, Formatter
from .numbers import number


def add_parser(sub) -> None:
    p_info = sub.add_parser(
        "info",
        help="summarise CTF traces (hosts, domains, CPUs, time span, events per name, losses) and data files",
        formatter_class=Formatter,
        description="Summarise CTF traces (several folders of one host are read together) and data files (spans, "
                    "counters, thread metrics: the form they were read in, how much of what, their times, the readers' "
                    "notes).",
        epilog=EXIT_CODES_HELP,
    )
    p_info.add_argument("paths", nargs="+", metavar="PATH")
    p_info.add_argument("--json", action="store_true", help="print JSON instead of text")
    p_info.add_argument("--jobs", type=number(1, 1024, integer=True), metavar="N",
                        help="decoding processes (default: the cores this process may run on; one per 32 MiB of "
                             "trace and 8 at most, the stream files shared out among them)")


def run(args) -> int:
    from dataclasses import asdict  # noqa: PLC0415

    from perftriage.analysis.data_summary import summarize_file, summarize_tree  # noqa: PLC0415
    from perftriage.analysis.errors import reading  # noqa: PLC0415
    from perftriage.analysis import spans  # noqa: F401, PLC0415 (the readers register their kinds of file)
    from perftriage.analysis.counters import readers  # noqa: F401, PLC0415
    from perftriage.analysis.inputs import classify  # noqa: PLC0415
    from perftriage.analysis.threads import series  # noqa: F401, PLC0415

    from perftriage.analysis.errors import InputError  # noqa: PLC0415

    servers = [p for p in args.paths if isinstance(p, str) and "://" in p]
    if servers:
        raise InputError(servers[0], "a server, not a CTF trace folder (a Prometheus server's counters are read by "
                                     "perftriage report or open)")
    inputs = classify(args.paths)
    files = []
    in_trees = {str(f) for tree in inputs.trees.values() for f in tree}
    for kind, paths in inputs.files.items():
        for p in paths:
            if str(p) in in_trees:
                continue
            with reading(p, f"{kind} file"):
                files.append(summarize_file(kind, p))
        for folder, tree in inputs.trees.items():
            if tree and tree[0] in paths:
                with reading(folder, f"folder of {kind} files"):
                    files.append(summarize_tree(kind, Path(folder), tree))
    if not inputs.ctf:
        if args.json:
            print(json.dumps({"files": [asdict(f) for f in files]}, indent=2))
        else:
            print("\n".join(line for f in files for line in f.lines()))
        return EXIT_OK
    code = _traces(args, [str(p) for p in inputs.ctf], files, inputs.notes, inputs.origin)
    return code


def _traces(args, paths: list[str], files, notes=(), origin=lambda trace: None) -> int:
    from dataclasses import asdict  # noqa: PLC0415

    from perftriage.analysis.cores import available_cores  # noqa: PLC0415
    from perftriage.analysis.ctf.summary import summarize  # noqa: PLC0415
    from perftriage.analysis.units import count_of, fmt_duration, fmt_when  # noqa: PLC0415

    s = summarize(paths, decoders=args.jobs or available_cores())
    markers, like = _markers(s.event_counts)
    if args.json:
        data = {
            "traces": [
                {
                    "path": t.path,
                    "hostname": t.hostname,
                    "domain": t.domain,
                    "tracer": t.tracer,
                    "ctf_version": t.ctf_version,
                    "cpus": sorted(t.cpus),
                    "discarded_events": t.discarded_events,
                    "discarded_events_unknown": t.discarded_events_unknown,
                    "lost_packets": t.discarded_packets,
                    "size_bytes": t.size,
                    "problems": list(t.problems),
                    "notes": list(t.notes),
                    "converted_from": origin(t.path),  # a perf.data read through a temporary folder
                }
                for t in s.traces
            ],
            "hosts": s.hosts,
            "events": s.events,
            "begin_ns": s.begin_ns,
            "end_ns": s.end_ns,
            "event_counts": s.event_counts,
            "request_markers": [{"start": a, "end": b, "starts": na, "ends": nb} for a, b, na, nb in markers],
            "marker_candidates": [{"start": a, "end": b, "starts": na, "ends": nb} for a, b, na, nb in like],
            "error": s.error,
            "decoder": s.decoder,
            "files": [asdict(f) for f in files],
            "notes": list(notes),  # how the inputs were read (a perf.data converted, what perf could not)
        }
        print(json.dumps(data, indent=2))
    else:
        out = []
        for t in s.traces:
            source = origin(t.path)
            out.append(f"trace   {t.path}" if source is None else
                       f"trace   {source} (a perf recording, read converted to CTF in a temporary folder)")
            fmt = "" if t.ctf_version == "1.8" else f" (CTF {t.ctf_version})"
            out.append(f"  host {t.hostname}  domain {t.domain}  tracer {t.tracer}{fmt}  CPUs {len(t.cpus)} "
                       f"({_ranges(sorted(t.cpus))})  {t.size / 1e6:.1f} MB")
            loss = f"  discarded events {t.discarded_events:,}  lost packets {t.discarded_packets:,}"
            if t.discarded_events_unknown:
                loss += f"  (+{t.discarded_events_unknown} discard records of unknown size)"
            out.append(loss)
            for problem in t.problems:
                out.append(f"  DAMAGED {problem}")
            for note in t.notes:
                out.append(f"  note    {note}")
        if s.begin_ns is not None:
            out.append(f"time    {fmt_when(s.begin_ns, digits=9)} .. {fmt_when(s.end_ns, digits=9)} "
                       f"({fmt_duration(s.end_ns - s.begin_ns)})")
        out.append(f"events  {s.events:,}" + (f"  ({', '.join(f'{h}: {n:,}' for h, n in s.per_host_events.items())})"
                                             if len(s.per_host_events) > 1 else ""))
        width = max((len(n) for n in s.event_counts), default=10)
        for name, n in s.event_counts.items():
            out.append(f"  {name:<{width}}  {n:>12,}")
        if markers:
            out.append("requests " + "; ".join(f"{a} / {b} ({count_of(na, 'starts')}, {count_of(nb, 'ends')})"
                                               for a, b, na, nb in markers))
        elif s.event_counts:
            out.append("requests no known markers (each process or thread is a unit)" + (
                "; events that look like a request's start and end: " + "; ".join(
                    f"--request-start {a} --request-end {b} ({count_of(na, 'starts')}, {count_of(nb, 'ends')})"
                    for a, b, na, nb in like)
                if like else ""))
        out.append(f"read by {s.decoder}")
        if s.error:
            out.append(f"error   {s.error}")
        out += [line for f in files for line in f.lines()]
        out += [f"note    {n}" for n in notes]
        print("\n".join(out))
    damaged = [p for t in s.traces for p in t.problems] + [n[len("partial data: "):] for n in notes
                                                            if n.startswith("partial data: ")]
    for problem in ([s.error] if s.error else []) + damaged:
        print(f"perftriage: partial data: {problem}", file=sys.stderr)
    return EXIT_PARTIAL if s.error or damaged else EXIT_OK


def _markers(event_counts: dict[str, int]):
    """The built-in request markers the trace holds (start, end, starts, ends), and where it holds
    none, the events that look like a request's start and end (requests/markers.py)."""
    from perftriage.analysis.requests.markers import marker_candidates  # noqa: PLC0415
    from perftriage.analysis.requests.params import BUILTIN_MARKERS  # noqa: PLC0415

    known = [(m.start, m.end, event_counts.get(m.start, 0), event_counts.get(m.end, 0)) for m in BUILTIN_MARKERS]
    known = [k for k in known if k[2] or k[3]]
    return known, ([] if known else marker_candidates(event_counts))


def _ranges(nums: list[int]) -> str:
    if not nums:
        return "-"
    parts = []
    start = prev = nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ",".join(parts)
