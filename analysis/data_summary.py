"""What a data file holds, as ``perftriage info`` says it: its kind and form, how much of what, over
which times, and the readers' notes, read the way the analyses read it (so a file that would be
misread, or refused, shows it here first). Spans, counters and thread metrics; CTF traces are
summarised by ctf/summary.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .units import DATED_FROM, count_of, first_of, fmt_timestamp, fmt_when


@dataclass
class FileSummary:
    path: str
    kind: str  # spans, counters, threads
    form: str  # how it was read: 'pidstat report', 'OTLP JSON file', 'sadf -d export'...
    holds: str  # what, how much: '9 threads x 16 metrics, 540 samples'
    begin_s: float | None = None  # seconds since the epoch (None: no clock time)
    end_s: float | None = None
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"file    {self.path}", f"  {self.kind}: {self.form}", f"  {self.holds}"]
        if self.begin_s is not None and self.end_s is not None and self.begin_s >= DATED_FROM:
            out.append(f"  time  {fmt_timestamp(int(self.begin_s * 1e9))[:19]} .. "
                       f"{fmt_timestamp(int(self.end_s * 1e9))[:19]} UTC")
        elif self.begin_s is not None and self.end_s is not None:  # no date: times since the start
            out.append(f"  time  {fmt_when(int(self.begin_s * 1e9), digits=0)} .. "
                       f"{fmt_when(int(self.end_s * 1e9), digits=0)} (no date: the time since the start)")
        out += [f"  note  {n}" for n in self.notes]
        return out


def summarize_file(kind: str, path: Path) -> FileSummary:
    """Read ``path`` as a file of ``kind`` (the sniffers' word for it) and say what it holds; a
    reader's InputError goes up (one line naming the file)."""
    if kind == "threads":
        return _threads(path)
    if kind == "counters":
        return _counters(path)
    if kind == "spans":
        return _spans(path)
    return FileSummary(str(path), kind, kind, "read by perftriage report")


def _threads(path: Path) -> FileSummary:
    from .inputs import read_head  # noqa: PLC0415
    from .threads import perfmon, pidstat, top  # noqa: PLC0415
    from .threads.series import read_thread_metrics  # noqa: PLC0415

    head = read_head(path)
    form = "pidstat report" if pidstat.sniff(path, head) else "top batch output" if top.sniff(path, head) else \
        "Windows performance counter log (PDH-CSV)" if perfmon.sniff(path, head) else "thread metrics CSV"
    ts = read_thread_metrics(path)
    levels = " -> ".join(ts.levels())
    holds = (f"{count_of(ts.n_threads, 'threads')} x {count_of(len(ts.metrics), 'metrics')} "
             f"({first_of(ts.metrics, 8)}), {len(ts.time):,} samples; "
             f"levels {levels}")
    t = ts.time[np.isfinite(ts.time)]
    return FileSummary(str(path), "threads", form, holds, float(t.min()) if len(t) else None,
                       float(t.max()) if len(t) else None, list(ts.notes))


def _counters(path: Path, files: list[Path] | None = None) -> FileSummary:
    """A counter file, or the ``files`` of a folder read whole by its tree (collectd's DataDir)."""
    from .counters import iostat, sadf, sar_text  # noqa: PLC0415
    from .counters.readers import counter_form, is_series_export, load_counters  # noqa: PLC0415
    from .inputs import read_head  # noqa: PLC0415

    first = files[0] if files else path
    head = read_head(first)
    form = "sysstat archive" if sadf.is_archive(head) else "sar text report" if sar_text.sniff(head) else \
        "iostat report" if iostat.sniff(head) else \
        "VictoriaMetrics export (JSON lines)" if is_series_export(head) else counter_form(first, head)[0]
    if files:
        form = f"a folder of {count_of(len(files), 'files')}, each a {form}"
    cs = load_counters(files or [path])
    holds = (f"{count_of(len(cs.servers), 'servers')} ({first_of(cs.servers, 6)})"
             f" x {count_of(len(cs.counters), 'counters')} x {cs.n_points:,} points every {cs.interval:g} s")
    begin = float(cs.start) if cs.dated else None
    end = float(cs.seconds(cs.n_points - 1)) if cs.dated else None
    return FileSummary(str(path), "counters", form, holds, begin, end, list(cs.notes))


def summarize_tree(kind: str, folder: Path, files: list[Path]) -> FileSummary:
    """A folder whose files make one input by their place in it (collectd's DataDir), said as one."""
    if kind == "counters":
        return _counters(folder, files)
    return FileSummary(str(folder), kind, f"a folder of {count_of(len(files), 'files')}", "read by perftriage report")


def _spans(path: Path) -> FileSummary:
    from . import spans  # noqa: PLC0415
    from .inputs import read_head  # noqa: PLC0415

    form = spans.FORMAT_NAMES.get(spans.sniff_format(path, read_head(path)) or "", "spans")
    sp = spans.read_spans([path])
    status = "no status" if sp.error is None else f"{int(sp.error.sum()):,} failed"
    holds = (f"{len(sp):,} spans of {count_of(len(sp.traces), 'requests')}, "
             f"{count_of(len(sp.services), 'services')} ({first_of(sp.services, 6)}), "
             f"{count_of(len(sp.methods), 'methods')}; {status}")
    begin = float(sp.start.min()) / 1e9 if len(sp) else None
    end = float(sp.end.max()) / 1e9 if len(sp) else None
    return FileSummary(str(path), "spans", form, holds, begin, end, list(sp.notes) + sp.problems.lines())
