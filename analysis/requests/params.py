"""What a user chooses for the requests of a kernel trace: the markers that cut them out, the unit
a request is, the outlier detection and the clustering. No numpy here: the app's process checks
its command line with these before its first screen, the analyses run elsewhere."""

from __future__ import annotations

from dataclasses import dataclass

from perftriage.analysis.errors import PerftriageError

THREAD_KEYS = ("vtid", "tid")


@dataclass(frozen=True)
class MarkerSpec:
    start: str
    end: str
    key: str = "vtid"  # "vtid"/"tid" = the thread; else a payload field present in both events
    start_fields: tuple[str, ...] = ("*",)  # "*" = every payload field of the start event
    end_fields: tuple[str, ...] = ("*",)
    kind: str = ""

    @property
    def keyed_by_thread(self) -> bool:
        return self.key in THREAD_KEYS


def marker_kind(start: str) -> str:
    """What a user's own markers' requests are called (``kind``): the start event's provider,
    'probe_srv' for ``probe_srv:request_begin``, so that request 370 reads 'probe_srv #370', not
    'custom #370' (the whole name where it has no provider)."""
    provider, sep, _ = start.partition(":")
    return provider if sep and provider else start


PHP = MarkerSpec(
    "ust_php:request_entry",
    "ust_php:request_exit",
    key="vtid",
    start_fields=("path", "uri", "method", "querystring"),
    end_fields=(),
    kind="php",
)
APACHE = MarkerSpec(
    "ust_apache:request_entry",
    "ust_apache:request_exit",
    key="id",
    start_fields=("*",),
    end_fields=("status",),
    kind="apache",
)
BUILTIN_MARKERS = (PHP, APACHE)


REPRESENTATIONS = {
    "durations": "state durations in ms, unscaled",
    "counts": "state segment counts, unscaled",
    "bow": "system call counts (bag of words), unscaled",
    "tfidf": "system call TF-IDF: tf x log(|D| / df)",
}
DETECTORS = ("dbscan", "iforest")
DEFAULT_THRESHOLDS_MS = (200.0, 250.0, 300.0)


@dataclass
class OutlierParams:
    representation: str = "durations"
    detector: str = "dbscan"
    eps: float | None = None
    min_samples: int | None = None
    eps_floor_fraction: float = 0.5  # eps >= this x median request duration (durations only)
    minor_fraction: float = 0.10  # dense groups of at most this share of requests (not the largest) are outliers
    random_state: int = 0
    thresholds_ms: tuple = DEFAULT_THRESHOLDS_MS

    def validate(self) -> None:
        if self.representation not in REPRESENTATIONS:
            raise ValueError(f"representation must be one of {', '.join(REPRESENTATIONS)}")
        if self.detector not in DETECTORS:
            raise ValueError(f"detector must be one of {', '.join(DETECTORS)}")
        if self.eps is not None and self.eps <= 0:
            raise ValueError("eps must be positive")
        if self.min_samples is not None and self.min_samples < 2:
            raise ValueError("min_samples must be at least 2")


CLUSTER_FEATURES = ("counts+durations", "counts", "durations")


@dataclass
class ClusterParams:
    features: str = "counts+durations"
    k: int | None = None
    k_min: int = 2
    k_max: int = 10
    n_init: int = 20
    random_state: int = 42
    #: k-means threads (the BLAS's, through threadpoolctl); None: the BLAS's default, every core.
    #: One by default: a BLAS's threads spin when the host is busy, as a host under triage is.
    #: ``make bench`` (request_outliers, 3,501 outliers of 50,000 requests, k = 2..10, 2 cores),
    #: with scikit-learn's KMeans (OpenMP) before kmeans.py: idle 0.42 s with one thread, 0.40 s
    #: with both; with the other core busy 0.42 s against 2.21 s.
    threads: int | None = 1

    def validate(self) -> None:
        if self.features not in CLUSTER_FEATURES:
            raise ValueError(f"cluster features must be one of {', '.join(CLUSTER_FEATURES)}")
        if self.k is not None and self.k < 1:
            raise ValueError("k must be at least 1")


def parse_unit(spec: str) -> tuple[str, str | None]:
    if spec in ("auto", "markers", "processes", "threads"):
        return spec, None
    if spec.startswith("syscall:") and len(spec) > 8:
        return "syscall", spec[8:]
    raise PerftriageError(f"unknown request unit {spec!r}: use auto, markers, processes, threads or syscall:NAME "
                          "(e.g. syscall:read)")


def unit_noun(what: str) -> str:
    """The plural noun for the units: requests, processes, threads, read calls."""
    if what in ("markers", "requests", "auto", ""):
        return "requests"
    if what.startswith("syscall:"):
        return what.split(":", 1)[1] + " calls"
    return what
