"""Synthetic results for driving the app without a trace."""

from __future__ import annotations

import pickle
import threading

import numpy as np

from perftriage.analysis.findings import Report
from perftriage.analysis.inputs import Inputs
from perftriage.analysis.requests.findings import request_findings
from perftriage.analysis.requests.table import RequestTable
from perftriage.analysis.triage import Options, Progress, TriageResult


def synthetic_requests(n: int, seed: int = 1) -> RequestTable:
    rng = np.random.default_rng(seed)
    start = 1_700_000_000_000_000_000 + np.sort(rng.integers(0, 60_000_000_000, n))
    dur = (rng.lognormal(np.log(20e6), 0.4, n)).astype(np.int64)
    slow = rng.choice(n, max(1, n // 100), replace=False)
    dur[slow] *= 15
    uris = np.array([f"/shop/item/{i % 997}?q={i}" for i in range(n)], dtype=object)
    uris[slow] = np.array([f"/checkout/{i}" for i in range(len(slow))], dtype=object)
    return RequestTable(
        id=np.arange(n, dtype=np.int64),
        kind=np.full(n, "php", object),
        host=np.full(n, "web1", object),
        pid=np.full(n, 4242, np.int64),
        tid=(4242 + np.arange(n) % 16).astype(np.int64),
        start=start,
        end=start + dur,
        fields={"method": np.full(n, "GET", object), "uri": uris},
    )


def fake_analyse(n: int):
    def analyse(paths, options=None, progress=None):
        if progress:
            progress(Progress("reading trace", 0.5, "half way"))
        t = synthetic_requests(n)
        report = Report(inputs=list(paths), findings=request_findings(t, top=5), created="2026-01-01T00:00:00+00:00")
        return TriageResult(inputs=Inputs(paths=list(paths)), options=options or Options(), requests=t, report=report)

    return analyse


def held_analysis(n: int, first: Progress | None = None):
    """A stand-in analysis of ``n`` requests that reports ``first`` (if any), then waits until the
    returned event is set (10 s at most): (analyse, release)."""
    release = threading.Event()
    fake = fake_analyse(n)

    def analyse(paths, options=None, progress=None):
        if first is not None and progress:
            progress(first)
        release.wait(10)
        return fake(paths, options)

    return analyse, release


_ANALYSED: dict[tuple, bytes] = {}


def analysed_once(paths, options: Options | None = None):
    """A stand-in analysis that gives the real analysis of ``paths`` (run_triage, what the app's
    worker process runs), made once per test process and handed out as the worker hands it over,
    pickled (each app gets its own copy). For tests of what the app shows and where its keys and
    links go; how the app runs an analysis (parts as they come, progress, quit, cancel, re-run)
    is tested on the real worker process (test_app_process.py, the palette's re-run)."""
    from perftriage.analysis.triage import run_triage

    options = options or Options()
    key = (tuple(str(p) for p in paths), repr(options))
    if key not in _ANALYSED:
        _ANALYSED[key] = pickle.dumps(run_triage([str(p) for p in paths], options))
    data = _ANALYSED[key]

    def analyse(paths, options=None, progress=None):
        return pickle.loads(data)

    return analyse


def app_on(paths, options: Options | None = None):
    """The app on ``paths``, its analysis made once per test process (analysed_once)."""
    from perftriage.tui.app import PerftriageApp

    paths = [str(p) for p in paths]
    return PerftriageApp(paths, options, analyse=analysed_once(paths, options))
