"""Where the graph's rows wait while the trace streams: per-chunk pieces concatenated once, and
rows laid out by thread without a global sort (spilled to an anonymous temporary file)."""

from __future__ import annotations

import tempfile

import numpy as np


class Parts:
    """Lists of numpy arrays gathered chunk by chunk, concatenated once."""

    def __init__(self, *names):
        self.names = names
        self.parts = {n: [] for n in names}

    def add(self, **cols):
        for n in self.names:
            self.parts[n].append(cols[n])

    def get(self) -> dict[str, np.ndarray]:
        """The concatenated columns; the per-chunk pieces are released."""
        out = {}
        for n in self.names:
            v = self.parts[n]
            out[n] = np.concatenate(v) if v else np.empty(0, np.int64)
            self.parts[n] = []
        return out


# columns of the stored intervals and system calls


IV_DTYPES = dict(tid=np.int32, start=np.int64, end=np.int64, state=np.int8, wake=np.int32, sc=np.int16)
SC_DTYPES = dict(tid=np.int64, entry=np.int64, exit=np.int64, id=np.int32)


class ThreadOrderedStore:
    """Rows added chunk by chunk, each chunk sorted by (thread, time), laid out at the end sorted
    by (thread, time) without a global sort: chunks come in time order, so a row's place is its
    thread's offset plus the rows of that thread in earlier chunks plus its rank in the chunk.

    The chunks' rows wait in an anonymous temporary file (deleted when closed, never beside the
    trace), so that while reading, memory holds one chunk, and at the end the final columns plus
    one chunk read back: the build never holds the graph twice. Without a writable temporary
    folder they wait in memory."""

    def __init__(self, key: str, dtypes: dict[str, type]):
        self.key = key
        self.dtypes = dtypes
        self.names = tuple(dtypes)
        self.chunks: list = []  # per chunk: (thread ids, their row counts, where the rows are)
        self.nrows = 0
        self._file = None
        self._spill = True

    def add(self, cols: dict[str, np.ndarray]) -> None:
        k = cols[self.key]
        n = len(k)
        if n == 0:
            return
        heads = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        u, cnt = k[heads].astype(np.int64), np.diff(np.r_[heads, n])
        arrays = [np.ascontiguousarray(cols[name], self.dtypes[name]) for name in self.names]
        where = arrays
        if self._spill:
            try:
                if self._file is None:
                    self._file = tempfile.TemporaryFile(prefix="perftriage-graph-")
                pos = self._file.tell()
                for arr in arrays:
                    arr.tofile(self._file)
                where = pos
            except OSError:  # no room or no temporary folder: keep the rows in memory
                self._spill = False
        self.chunks.append((u, cnt, n, where))
        self.nrows += n

    def _load(self, n: int, where) -> list[np.ndarray]:
        if not isinstance(where, int):
            return where
        self._file.seek(where)
        return [np.fromfile(self._file, self.dtypes[name], n) for name in self.names]

    def finish(self):
        """(columns, thread ids, lo, hi): thread ``i`` owns rows ``lo[i]:hi[i]``."""
        if self._file is not None:
            self._file.flush()
        tids = (np.unique(np.concatenate([c[0] for c in self.chunks])) if self.chunks
                else np.zeros(0, np.int64))
        counts = np.zeros(len(tids), np.int64)
        for u, cnt, _, _ in self.chunks:
            counts[np.searchsorted(tids, u)] += cnt  # a thread appears once per chunk
        lo = np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64) if len(tids) else np.zeros(0, np.int64)
        hi = lo + counts
        out = {name: np.empty(self.nrows, self.dtypes[name]) for name in self.names}
        written = np.zeros(len(tids), np.int64)
        chunks, self.chunks = self.chunks, []
        for i, (u, cnt, n, where) in enumerate(chunks):
            chunks[i] = None
            arrays = self._load(n, where)
            idx = np.searchsorted(tids, u)
            heads = np.r_[0, np.cumsum(cnt)[:-1]]
            dest = np.repeat(lo[idx] + written[idx] - heads, cnt) + np.arange(n)
            written[idx] += cnt
            for name, arr in zip(self.names, arrays):
                out[name][dest] = arr
            del arrays, dest
        if self._file is not None:
            self._file.close()
            self._file = None
        return out, tids, lo, hi


def release_freed_memory() -> None:
    """Give the heap pages freed by the build back to the system (glibc keeps them otherwise)."""
    try:
        import ctypes  # noqa: PLC0415

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass
