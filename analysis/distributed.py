"""Kernel traces of many hosts read on a Dask cluster (``--scheduler tcp://HOST:8786``).

For a fleet recorded with LTTng's relay daemon (one folder per host) whose traces outgrow one
machine: reading is most of the time and of the memory of a local run, and it splits by host.

- The client (this process) groups the trace folders by host from their metadata alone
  (hosts.host_groups: the names a local read gives them).
- Each host's traces are read on a worker with the consumers of a local read: events counted,
  the execution graph gathered (execgraph.builder.Gathered), request markers paired.
- The workers send back only what is small (the summary, the requests, the packets with
  headers) and keep what they gathered. The client matches packets across hosts and fits the
  clocks (builder.match_parts); each worker then finishes its hosts' graphs with what the
  matching told it (builder.finish_part).
- The critical paths are walked on the workers in batches of requests, with the graphs they
  need (a path crosses hosts through packets), and merged (features.merge_batches).
- The client runs the rest (outliers, clusters, thread metrics, findings) as a local run does:
  the findings are the same. The graphs stay on the workers (:class:`ClusterGraphs`: the client
  has each one's first event and clock fits, for their order and the network notes) until
  something on the client reads one: units other than request markers, the thread series, the
  app's paths. Then all come to the client, which must hold them (about 25 bytes per event).

Every worker must see the trace folders under the paths the client gives (a shared or
replicated file system) and have the same perftriage installed (``pip install
perftriage[dask]``). Worth it when the hosts' traces together take longer to read than the
cluster's set-up (seconds); ``perftriage report`` on request markers never brings the graphs
to the client, anything else needs them to fit in its memory. For one host's trace, a local run
with ``--jobs`` is as fast.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Callable, Iterator

import numpy as np

from perftriage.analysis.ctf.hosts import host_groups
from perftriage.analysis.ctf.pipeline import PassResult, read_once
from perftriage.analysis.ctf.summary import EventCounter, TraceSummary, merge_summaries
from perftriage.analysis.errors import MissingDependency, PerftriageError, TraceReadError
from perftriage.analysis.execgraph.builder import (Gathered, GraphBuilder, Matched, PacketPart, finish_part,
                                                   in_time_order, match_parts)
from perftriage.analysis.execgraph.graph import ClockFit, ExecGraph
from perftriage.analysis.requests.features import FeatureBatch, FeatureTable, extract_batch, merge_batches
from perftriage.analysis.requests.markers import MarkerRequests
from perftriage.analysis.requests.table import RequestTable

INSTALL = "pip install 'perftriage[dask]'"
BATCH_REQUESTS = 20_000  # requests per critical-path task at most


class _Gathering(GraphBuilder):
    """A graph builder that stops before the end: the packets are matched with other hosts'."""

    def finish(self) -> Gathered:
        return self.gathered()


@dataclass
class HostRead:
    """One host's read on a worker. ``gathered`` stays there (see ``_small``)."""

    host: str
    summary: TraceSummary
    requests: RequestTable | None
    packets: PacketPart | None
    error: TraceReadError | None
    gathered: Gathered | None = None


@dataclass
class GraphFacts:
    """What the client knows of a graph left on its worker: when its host's events begin (the
    graphs' order) and what the network notes say (clock fits, waits followed across hosts)."""

    host: str
    begin: int
    clocks: dict[str, ClockFit]
    n_remote_links: int
    switches: dict[int, tuple[int, int]]  # the lost-switch notes' counts (ExecGraph.switches)


class ClusterGraphs(Mapping):
    """The graphs of a read on the cluster, by host in time order. Their names, their number and
    their ``facts`` are here; the first item read brings all of them from the workers (once)."""

    def __init__(self, facts: dict[str, GraphFacts], fetch: Callable[[], dict[str, ExecGraph]]):
        self.facts = facts
        self._fetch = fetch
        self._graphs: dict[str, ExecGraph] | None = None
        self._lock = threading.Lock()  # one fetch, whichever thread (the app's path server, say) asks first

    @property
    def fetched(self) -> bool:
        return self._graphs is not None

    def graphs(self) -> dict[str, ExecGraph]:
        with self._lock:
            if self._graphs is None:
                got = self._fetch()
                self._graphs = {n: got[n] for n in self.facts}
                self._fetch = None
            return self._graphs

    def __getitem__(self, host: str) -> ExecGraph:
        return self.graphs()[host]

    def __contains__(self, host) -> bool:
        return host in self.facts

    def __iter__(self) -> Iterator[str]:
        return iter(self.facts)

    def __len__(self) -> int:
        return len(self.facts)


# -- tasks run on the workers ----------------------------------------------------------------------


def read_host(host: str, paths: list[str], names: dict[str, str], markers) -> HostRead:
    consumers = [EventCounter(), _Gathering()]
    if markers is not None:
        consumers.append(MarkerRequests(markers))
    passed = read_once(paths, consumers, host_names=names)
    summary, gathered = passed.results[0], passed.results[1]
    requests = passed.results[2] if markers is not None else None
    return HostRead(host, summary, requests, gathered.packet_part(), passed.error, gathered)


def _small(read: HostRead) -> HostRead:
    """What goes back to the client: all but the gathered graph."""
    return replace(read, gathered=None)


def _finish(read: HostRead, matched: Matched) -> dict[str, ExecGraph]:
    return finish_part(read.gathered, matched)


def _facts(part: dict[str, ExecGraph]) -> dict[str, GraphFacts]:
    return {n: GraphFacts(n, g.begin, g.clocks, g.n_remote_links, g.switches) for n, g in part.items()}


def _features(graph_items: list, requests: RequestTable) -> FeatureBatch:
    graphs = {}
    for part in graph_items:  # in the client's order: the system-call vocabulary follows it
        graphs.update(part)
    return extract_batch(graphs, requests)


# -- the client ---------------------------------------------------------------------------------------


class Cluster:
    """A connection to a Dask scheduler, for one analysis (use as a context manager)."""

    def __init__(self, address: str, timeout_s: float = 10.0):
        try:
            from distributed import Client  # noqa: PLC0415
        except ImportError as exc:
            raise MissingDependency(f"--scheduler needs Dask distributed ({exc}): {INSTALL}") from None
        self.address = address
        try:
            self.client = Client(address, timeout=f"{timeout_s}s", set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise PerftriageError(f"cannot reach the Dask scheduler at {address}: {_one_line(exc)}") from None
        self._graph_futures: list = []  # the graphs of the last read, on the workers, in the client's order
        try:
            self._check_workers()
        except BaseException:
            self.client.close()
            raise

    def _check_workers(self) -> None:
        """Every worker runs the perftriage this process runs (the tasks are its functions)."""
        from perftriage import __version__  # noqa: PLC0415

        try:
            versions = self.client.run(_version)
        except ModuleNotFoundError as exc:
            raise PerftriageError(f"a Dask worker at {self.address} cannot import {exc.name}: install perftriage "
                                  f"on every worker ({INSTALL})") from None
        if not versions:
            raise PerftriageError(f"the Dask scheduler at {self.address} has no workers")
        other = sorted({v for v in versions.values() if v != __version__})
        if other:
            raise PerftriageError(f"Dask workers at {self.address} run perftriage {', '.join(other)}, this is "
                                  f"{__version__}: install the same version on every worker")

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._graph_futures = []
        self.client.close()

    def workers(self) -> int:
        return max(1, len(self.client.scheduler_info(n_workers=-1).get("workers", {})))

    def read(self, paths, markers=None, progress: Callable[[int, int, int], None] | None = None) -> PassResult:
        """Read ``paths`` host by host on the workers: a PassResult like read_once's with the
        results [summary, graphs] (+ requests when ``markers`` is given) and the first error of
        a read that stopped part-way. ``progress(hosts done, hosts, events read)``."""
        from distributed import as_completed  # noqa: PLC0415

        groups = host_groups(paths)
        names = {p: h for h, ps in groups.items() for p in ps}
        order = [p for ps in groups.values() for p in ps]
        futures = [self.client.submit(read_host, h, ps, names, None if markers is None else tuple(markers),
                                      pure=False, key=f"perftriage-read-{i}-{h}")
                   for i, (h, ps) in enumerate(groups.items())]
        small = [self.client.submit(_small, f, pure=False) for f in futures]
        reads: dict[int, HostRead] = {}
        events = 0
        index = {f.key: i for i, f in enumerate(small)}
        for f in as_completed(small, loop=self.client.loop):
            r = self._result(f)
            reads[index[f.key]] = r
            events += r.summary.events
            if progress is not None:
                progress(len(reads), len(small), events)
        done = [reads[i] for i in range(len(small))]
        parts = [r.packets for r in done]
        _, matched = match_parts(parts)
        graph_futures = [self.client.submit(_finish, f, m, pure=False) for f, m in zip(futures, matched)]
        del futures
        fact_parts = [self._result(self.client.submit(_facts, g, pure=False)) for g in graph_futures]
        facts = in_time_order({n: fa for part in fact_parts for n, fa in part.items()})  # facts have a begin too
        holder = {n: f for part, f in zip(fact_parts, graph_futures) for n in part}
        self._graph_futures = list({id(holder[n]): holder[n] for n in facts}.values())  # in the graphs' order

        def fetch() -> dict[str, ExecGraph]:
            return {n: g for part in (self._result(f) for f in graph_futures) for n, g in part.items()}

        summary = merge_summaries([r.summary for r in done], order)
        results: list = [summary, ClusterGraphs(facts, fetch)]
        if markers is not None:
            results.append(MarkerRequests(markers).merge([r.requests for r in done]))
        error = next((r.error for r in done if r.error is not None), None)
        return PassResult(None, results, error)

    def features(self, requests: RequestTable, progress: Callable[[int, int], None] | None = None) -> FeatureTable:
        """The critical-path features of ``requests`` over the graphs of the last ``read``,
        walked on the workers in batches."""
        from distributed import as_completed  # noqa: PLC0415

        n = len(requests)
        batches = max(1, min(math.ceil(n / 1000), max(2 * self.workers(), math.ceil(n / BATCH_REQUESTS))))
        # graphs in the order of the client's dict, each task given all of them: a path may cross hosts
        futures = self._graph_futures
        tasks = [self.client.submit(_features, futures, requests.take(idx), pure=False)
                 for idx in np.array_split(np.arange(n), batches)]
        index = {f.key: i for i, f in enumerate(tasks)}
        out: dict[int, FeatureBatch] = {}
        done_rows = 0
        for f in as_completed(tasks, loop=self.client.loop):
            out[index[f.key]] = b = self._result(f)
            done_rows += len(b.table)
            if progress is not None:
                progress(done_rows, n)
        return merge_batches([out[i] for i in range(len(tasks))])

    def _result(self, future):
        try:
            return future.result()
        except PerftriageError:
            raise
        except ModuleNotFoundError as exc:
            raise PerftriageError(f"a Dask worker at {self.address} cannot import {exc.name}: install perftriage "
                                  f"on every worker ({INSTALL})") from None
        except (OSError, TimeoutError) as exc:
            raise PerftriageError(f"the Dask cluster at {self.address} failed: {_one_line(exc)}") from None


def _version() -> str:
    from perftriage import __version__  # noqa: PLC0415

    return __version__


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
