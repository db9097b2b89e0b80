"""What to analyse and how (``Options``, from the command line or the app), how far an analysis
is (``Progress``), and the parts of a result published as they are ready (``PARTS``).

Light on purpose: no numpy, no analysis. The app's process checks its command line with these
and draws its first screen before it imports any analysis (they run in the analysing child);
``run_triage`` (triage.py) takes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from perftriage.analysis.calltrees.params import CompareParams, DiagParams
from perftriage.analysis.cores import available_cores
from perftriage.analysis.counters.params import CounterParams
from perftriage.analysis.requests.params import BUILTIN_MARKERS, ClusterParams, MarkerSpec, OutlierParams
from perftriage.analysis.threads.params import ThreadParams

if TYPE_CHECKING:  # its module reads counters (numpy): given only with --prometheus
    from perftriage.analysis.counters.prometheus_api import PromRange


@dataclass
class Options:
    markers: tuple[MarkerSpec, ...] = BUILTIN_MARKERS
    units: str = "auto"  # auto | markers | processes | threads | syscall:NAME
    top: int = 20  # rows in "slowest requests" tables
    outliers: OutlierParams = field(default_factory=OutlierParams)
    clusters: ClusterParams = field(default_factory=ClusterParams)
    min_requests_for_outliers: int = 20
    calltrees: DiagParams = field(default_factory=DiagParams)
    span_columns: dict[str, str] | None = None  # span CSV column mapping (--columns)
    reference: tuple[str, ...] = ()  # reference span files / folders (--reference)
    incident_time: str | None = None  # spans: requests from this time on against those before (--incident-time)
    compare: CompareParams = field(default_factory=CompareParams)
    threads: ThreadParams = field(default_factory=ThreadParams)
    thread_windows: float | None = None  # per-thread metrics from the kernel trace: window (s); None or 0 = auto
    thread_metrics: bool | None = None  # None: on for a kernel trace without request markers
    background: bool = False  # kernel threads, idle and the tracer's threads compared like the others
    counters: CounterParams = field(default_factory=CounterParams)
    rules: str | None = None  # threshold rules file (TOML or PAD's XML); default: rules.toml beside the counters
    server_label: str = "instance"  # Prometheus label naming the server
    counter_interval: float | None = None  # seconds between rows of counter files with numbered rows (--interval)
    local_zone: str | None = None  # the zone of counter files' local times (--timezone; None: read as UTC)
    prometheus: PromRange | None = None  # what to ask a Prometheus server among the inputs (--match, --since...)
    findings: bool = True  # False: read and extract only (the features export needs no outliers or findings)
    jobs: int | None = None  # cores to use (--jobs); None: those this process may run on
    scheduler: str | None = None  # a Dask scheduler's address: traces read and paths walked on its workers
    scheduler_timeout: float = 10.0  # seconds to try to reach it
    # the execution graphs stay in the result, for the paths the app walks later; False (the
    # report): they go once the last analysis that reads them is done (227 MiB at 50,000 requests;
    # the outlier analysis after them held them at its peak: 556 MiB, now 348 with the rest)
    keep_graphs: bool = True
    # kept graphs leave the heap for memory-mapped files where the report lets them go (the
    # app's analysing child: execgraph/on_disk.py), so that it peaks where the report peaks
    graphs_on_disk: bool = False

    def cores(self) -> int:
        return max(1, self.jobs) if self.jobs else available_cores()


@dataclass
class Progress:
    stage: str
    fraction: float | None  # None when unknown
    text: str = ""


ProgressFn = Callable[[Progress], None]

#: the parts of a result that are published as they are ready (``run_triage(publish=...)``), in
#: the order they come: the requests with their critical paths, then their outliers and
#: clusters; the thread pools; the call trees of spans; the counters
PARTS = ("requests", "clusters", "threads", "calltrees", "counters")
