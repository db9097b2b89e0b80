"""The request table: one row per request, columns as numpy arrays (ids, host, thread, start,
end, the marker fields), however the requests were cut (markers, thread lifetimes, system calls)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

BASE_COLUMNS = ("id", "kind", "host", "pid", "tid", "start", "end", "duration")


@dataclass
class RequestTable:
    """One row per request. Times in ns since the Unix epoch (the trace clock's origin)."""

    id: np.ndarray
    kind: np.ndarray  # object: "php", "apache", ...
    host: np.ndarray  # object: hostname
    pid: np.ndarray
    tid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    fields: dict[str, np.ndarray] = field(default_factory=dict)  # object arrays of marker fields
    unmatched_starts: int = 0
    unmatched_ends: int = 0

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start

    def __len__(self) -> int:
        return len(self.id)

    def take(self, index) -> "RequestTable":
        return RequestTable(
            id=self.id[index],
            kind=self.kind[index],
            host=self.host[index],
            pid=self.pid[index],
            tid=self.tid[index],
            start=self.start[index],
            end=self.end[index],
            fields={k: v[index] for k, v in self.fields.items()},
            unmatched_starts=self.unmatched_starts,
            unmatched_ends=self.unmatched_ends,
        )

    def by_duration(self) -> "RequestTable":
        """Slowest first (ties by start time)."""
        return self.take(np.lexsort((self.start, -self.duration)))

    @property
    def field_names(self) -> list[str]:
        return list(self.fields)

    def label(self, i: int) -> str:
        """A short human name for row i: the uri/path when there is one."""
        for name in ("uri", "path", "url", "name", "comm"):
            col = self.fields.get(name)
            if col is not None and col[i] not in ("", None, "-"):
                return str(col[i])
        return f"{self.kind[i]} #{self.id[i]}"

    @staticmethod
    def empty() -> "RequestTable":
        e = np.empty(0, np.int64)
        o = np.empty(0, object)
        return RequestTable(e, o, o, e, e, e, e)

    @staticmethod
    def concat(tables: list["RequestTable"]) -> "RequestTable":
        tables = [t for t in tables if t is not None]
        if not tables:
            return RequestTable.empty()
        names: list[str] = []
        for t in tables:
            names.extend(n for n in t.fields if n not in names)
        return RequestTable(
            id=np.concatenate([t.id for t in tables]),
            kind=np.concatenate([t.kind for t in tables]),
            host=np.concatenate([t.host for t in tables]),
            pid=np.concatenate([t.pid for t in tables]),
            tid=np.concatenate([t.tid for t in tables]),
            start=np.concatenate([t.start for t in tables]),
            end=np.concatenate([t.end for t in tables]),
            fields={
                n: np.concatenate([t.fields.get(n, np.full(len(t), "", object)) for t in tables]) for n in names
            },
            unmatched_starts=sum(t.unmatched_starts for t in tables),
            unmatched_ends=sum(t.unmatched_ends for t in tables),
        )


def notable_mask(table: RequestTable, outliers: np.ndarray | None = None, quantile: float = 95.0) -> np.ndarray:
    """Requests worth jumping to: the outliers when an outlier analysis ran, else those slower
    than the given percentile of all durations (none when there are fewer than 20 requests)."""
    if outliers is not None and len(outliers) == len(table):
        return np.asarray(outliers, bool)
    if len(table) < 20:
        return np.zeros(len(table), bool)
    d = table.duration
    return d > np.percentile(d, quantile)
