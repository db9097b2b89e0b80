"""Real microservice faults (OnlineBoutique, ../shared/real_data): is the injected pod's service named first?

For every fault of the development data's fault list with spans: the trace files of the fault's
minutes, with the latest available minutes before it (never within 4 minutes of the previous
fault), given to ``perftriage`` as a user would, with the incident time (the fault's
``inject_timestamp``: a user knows when the alert fired, at most); what changed is read from
``TriageResult.change`` (services ranked by what changed around each pod). Top-1 and top-3 of the
injected pod's service, per fault type, beside the generator's evaluation (calltree_diagnosis).
Faults without spans here (their files were too large for the stored copy) are listed, not scored.
Then the trace folder whole, as a user who has the day's spans would give it, compared at each
fault's time: what --incident-time does on a long recording (the minutes around the time). Then
every two consecutive minutes given without a time (a user who has only the incident's own
minutes): is the report's first finding about the service of a fault that hits them, another
service, or nothing?
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from perftriage.analysis.spans.k8s import service_of_pod
from perftriage.analysis.triage import Options, run_triage

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("PERFTRIAGE_SHARED", ROOT.parent / "shared")) / "real_data" / "onlineboutique-2022-08-22"
TARGET_TOP1, TARGET_TOP3 = 0.60, 0.80


def faults():
    doc = json.loads((DATA / "2022-08-22-fault_list.json").read_text())
    out = [f for hour in sorted(doc) for f in doc[hour]]
    return sorted(out, key=lambda f: int(f["inject_timestamp"]))


def minute_files():
    """(minute of the day, path): file HH_MM holds the requests of about HH:MM-1:19 to HH:MM:19."""
    out = []
    for p in sorted((DATA / "trace").glob("*_trace.csv.gz")):
        hh, mm = p.name.split("_")[:2]
        out.append((int(hh) * 60 + int(mm), p))
    return out


def files_for(t: int, prev: int | None, files) -> tuple[list[Path], list[Path]]:
    """The fault's files (its minute and the two after) and the baseline's (up to two available
    minutes before, after the previous fault's first 4 minutes)."""
    day0 = t - t % 86400
    m = (t - day0 + 41) // 60  # the file whose window holds t (windows end ~19 s past the minute)
    fault = [p for mm, p in files if m <= mm <= m + 2]
    lo = (prev - day0) // 60 + 5 if prev is not None else 0
    base = [p for mm, p in files if lo <= mm < m][-2:]
    near = False
    if not base and (m not in {mm for mm, _ in files} or (t - day0 + 41) % 60 < 20):
        # no clean minute before and (almost) nothing before the fault in its own files: the
        # latest minute before it, though it follows the previous fault closely
        base = [p for mm, p in files if mm < m][-1:]
        near = bool(base)
    return fault, base, near


def whole(fl, scored) -> None:
    """The trace folder read once, whole (four hours, 24 faults), and compared at each scored
    fault's injection time as --incident-time does (the minutes around it: triage's window)."""
    from perftriage.analysis.calltrees.what_changed import diagnose_change, split_spans  # noqa: PLC0415
    from perftriage.analysis.spans import read_spans  # noqa: PLC0415
    from perftriage.analysis.triage import CHANGE_WINDOW_NS  # noqa: PLC0415

    t0 = time.perf_counter()
    spans = read_spans(sorted((DATA / "trace").glob("*_trace.csv.gz")))
    top1 = top3 = 0
    for f in scored:
        t = int(f["inject_timestamp"]) * 10**9
        before, after = split_spans(spans, t, CHANGE_WINDOW_NS)
        ch = diagnose_change(spans, spans, ref_rows=before, cur_rows=after, split_ns=t)
        names = [x.service for x in ch.suspects]
        culprit = service_of_pod(f["inject_pod"]) or f["inject_pod"]
        top1 += names[:1] == [culprit]
        top3 += culprit in names[:3]
    print(f"  the trace folder whole ({len(spans):,} spans, {len(list((DATA / 'trace').iterdir()))} files), each "
          f"fault's time as --incident-time: top-1 {top1}/{len(scored)}, top-3 {top3}/{len(scored)} "
          f"({time.perf_counter() - t0:.0f} s)")


def _named(title: str, subject: str, services: set[str]) -> str | None:
    """The service a finding is about: the first of ``services`` its subject, else its title, names."""
    for text in (subject, title):
        for s in sorted(services, key=len, reverse=True):
            if s in text:
                return s
    return None


def without_a_time(fl, files) -> None:
    """Each pair of consecutive minute files given as they are, no time: the first critical or
    warning finding's service against the faults active in those minutes."""
    day0 = int(fl[0]["inject_timestamp"]) // 86400 * 86400
    services = {service_of_pod(f["inject_pod"]) or f["inject_pod"] for f in fl} | {"frontend"}

    def active(m: int) -> set:  # the file of minute m holds about m-1:19 to m:19; a fault lasts ~5 minutes
        return {service_of_pod(f["inject_pod"]) for f in fl
                if (int(f["inject_timestamp"]) - day0) / 60 - 1 < m + 0.33 < (int(f["inject_timestamp"]) - day0) / 60 + 6}

    right = wrong = none = 0
    t0 = time.perf_counter()
    for (m1, p1), (m2, p2) in zip(files, files[1:]):
        if m2 - m1 != 1:
            continue
        res = run_triage([str(p1), str(p2)], Options())
        first = next((f for f in res.findings if f.severity in ("critical", "warning")), None)
        named = _named(first.title, first.subject, services) if first is not None else None
        faulty = active(m1) | active(m2)
        right += named is not None and named in faulty
        wrong += named is not None and named not in faulty
        none += named is None
    print(f"  two consecutive minutes without a time ({right + wrong + none} pairs, {time.perf_counter() - t0:.0f} s): "
          f"the first finding names a faulty service in {right}, another service in {wrong}, none in {none}")


def run(quick: bool = False) -> bool:
    if not DATA.is_dir():
        print(f"  {DATA} missing: not evaluated")
        return False
    files = minute_files()
    fl = faults()
    rows, skipped = [], []
    t0 = time.perf_counter()
    prev = None
    for f in fl:
        t = int(f["inject_timestamp"])
        culprit = service_of_pod(f["inject_pod"]) or f["inject_pod"]
        fault, base, near = files_for(t, prev, files)
        prev = t
        if not fault:
            skipped.append((f, "no trace file for its minutes"))
            continue
        if quick and len(rows) >= 6:
            break
        res = run_triage([str(p) for p in base + fault], Options(incident_time=str(t)))
        ch = res.change
        names = [s.service for s in ch.suspects] if ch is not None else []
        rank = names.index(culprit) + 1 if culprit in names else None
        rows.append((f, culprit, rank, names[:3], ch.ref_requests if ch else 0, ch.requests if ch else 0,
                     f"+{len(base)}{'*' if near else ''}" if base else ""))
    dt = time.perf_counter() - t0
    print(f"{len(rows)} faults with spans, {len(skipped)} without; {dt:.1f} s")
    print(f"  {'time (UTC)':<9} {'type':<15} {'culprit':<22} {'rank':>4}  {'ref/cur requests':>17}  named first three")
    for f, culprit, rank, top3, nr, nc, nb in rows:
        print(f"  {f['inject_time'][11:]:<9} {f['inject_type']:<15} {culprit:<22} {rank or '-':>4}  "
              f"{nr:>7}/{nc:<6}{nb:>3}  {', '.join(top3) or '-'}")
    for f, why in skipped:
        print(f"  {f['inject_time'][11:]:<9} {f['inject_type']:<15} {service_of_pod(f['inject_pod'])}: {why}")
    types = sorted({f["inject_type"] for f, *_ in rows})
    print("  +N: N minutes before the fault's own files in the baseline; *: the only minute before it, within "
          "4 minutes of the previous fault")
    print(f"  {'type':<15} {'faults':>6} {'top-1':>7} {'top-3':>7}")
    for ty in types + ["all"]:
        sel = [r for r in rows if ty == "all" or r[0]["inject_type"] == ty]
        t1 = sum(1 for r in sel if r[2] == 1) / len(sel)
        t3 = sum(1 for r in sel if r[2] is not None and r[2] <= 3) / len(sel)
        print(f"  {ty:<15} {len(sel):>6} {t1 * 100:>6.0f}% {t3 * 100:>6.0f}%")
    sel = rows
    top1 = sum(1 for r in sel if r[2] == 1) / max(1, len(sel))
    top3 = sum(1 for r in sel if r[2] is not None and r[2] <= 3) / max(1, len(sel))
    met = top1 >= TARGET_TOP1 and top3 >= TARGET_TOP3
    if not quick:
        whole(fl, [r[0] for r in rows])
        without_a_time(fl, files)
    print("  generator (calltree_diagnosis): rank 1 100% and top 3 100% for slowdowns >= 2x (see above)")
    print(f"  target top-1 >= {TARGET_TOP1:.0%}, top-3 >= {TARGET_TOP3:.0%} over all faults with spans: "
          f"{'met' if met else 'NOT MET'} (top-1 {top1:.0%}, top-3 {top3:.0%})")
    return met

