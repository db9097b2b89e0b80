"""Requests from start/end markers."""

from __future__ import annotations

import numpy as np

from perftriage.analysis.columns import MISSING, EventChunk, StringPool
from perftriage.analysis.ctf.pipeline import read_once
from perftriage.analysis.requests.markers import APACHE, PHP, MarkerRequests, MarkerSpec

from conftest import needs_bt2, real_trace


class FakeReader:
    """The parts of CtfReader that the request consumer uses."""

    def __init__(self):
        self.event_names = []
        self.hosts = ["web1", "web2"]
        self.strings = StringPool()
        self.event_fields = {}

    def event_code(self, name):
        if name not in self.event_names:
            self.event_names.append(name)
        return self.event_names.index(name)


def chunk(rows, reader, fields=()):
    """rows: (ts, event name, host, tid, {field: value})"""
    n = len(rows)
    cols = {f: np.full(n, -1 if f in ("uri",) else MISSING, np.int32 if f == "uri" else np.int64) for f in fields}
    for i, (_, name, _, _, vals) in enumerate(rows):
        for k, v in vals.items():
            cols[k][i] = reader.strings.code(v) if k == "uri" else v
            reader.event_fields.setdefault(name, [])
            if k not in reader.event_fields[name]:
                reader.event_fields[name].append(k)
    return EventChunk(
        ts=np.array([r[0] for r in rows], np.int64),
        cpu=np.zeros(n, np.int32),
        host=np.array([r[2] for r in rows], np.int16),
        event=np.array([reader.event_code(r[1]) for r in rows], np.int32),
        tid=np.array([r[3] for r in rows], np.int32),
        pid=np.array([r[3] for r in rows], np.int32),
        fields=cols,
    )


def run(markers, chunks, reader):
    c = MarkerRequests(markers)
    c.bind(reader)
    for ch in chunks:
        c.consume(ch)
    return c.finish()


def test_php_requests_pair_per_thread_across_chunks_and_hosts():
    r = FakeReader()
    s, e = PHP.start, PHP.end
    a = chunk([(10, s, 0, 7, {"uri": "/a"}), (11, s, 0, 8, {"uri": "/b"}), (12, s, 1, 7, {"uri": "/c"})], r, ["uri"])
    b = chunk([(20, e, 0, 8, {}), (25, e, 1, 7, {}), (30, e, 0, 7, {}), (31, e, 0, 9, {})], r, ["uri"])
    t = run([PHP], [a, b], r)
    got = sorted(zip(t.host, t.tid.tolist(), t.start.tolist(), t.end.tolist(), t.fields["uri"]))
    assert got == [("web1", 7, 10, 30, "/a"), ("web1", 8, 11, 20, "/b"), ("web2", 7, 12, 25, "/c")]
    assert t.unmatched_ends == 1 and t.unmatched_starts == 0
    assert t.id.tolist() == [0, 1, 2]  # numbered in start order
    assert t.by_duration().duration.tolist() == [20, 13, 9]


def test_unfinished_request_and_nested_start_are_counted_not_guessed():
    r = FakeReader()
    s, e = PHP.start, PHP.end
    t = run([PHP], [chunk([(1, s, 0, 5, {}), (2, s, 0, 5, {}), (3, e, 0, 5, {}), (9, s, 0, 6, {})], r)], r)
    assert len(t) == 1 and t.start.tolist() == [2] and t.end.tolist() == [3]
    assert t.unmatched_starts == 2


def test_apache_requests_pair_by_id_even_across_threads():
    r = FakeReader()
    s, e = APACHE.start, APACHE.end
    t = run([APACHE], [chunk([(1, s, 0, 5, {"id": 100}), (2, s, 0, 5, {"id": 101}), (4, e, 0, 6, {"id": 100}),
                              (7, e, 0, 5, {"id": 101})], r, ["id"])], r)
    assert sorted(zip(t.id.tolist(), t.start.tolist(), t.end.tolist())) == [(100, 1, 4), (101, 2, 7)]


def test_custom_markers():
    r = FakeReader()
    spec = MarkerSpec("app:begin", "app:end", key="vtid", kind="custom")
    t = run([spec], [chunk([(5, "app:begin", 0, 1, {}), (50, "app:end", 0, 1, {})], r)], r)
    assert len(t) == 1 and t.duration.tolist() == [45] and t.kind.tolist() == ["custom"]


@needs_bt2
def test_real_php_trace_has_its_one_request_with_uri_and_path():
    res = read_once([real_trace("tracevizlab-php-ust")], [MarkerRequests()])
    t = res.results[0]
    assert len(t) == 1
    assert t.fields["path"][0].endswith("tracevizlab/labs/03-tracing-php-userspace/script.php")
    assert t.fields["uri"][0] == "-" and t.fields["method"][0] == "-"
    assert t.duration[0] == 1534187150158557714 - 1534187150157218983
    assert t.pid[0] == t.tid[0] == 29077


@needs_bt2
def test_custom_markers_on_a_real_ust_trace():
    # lttng_ust_statedump:start/end bracket the statedump of one thread in the php trace
    spec = MarkerSpec("lttng_ust_statedump:start", "lttng_ust_statedump:end", kind="statedump")
    res = read_once([real_trace("tracevizlab-php-ust")], [MarkerRequests([spec])])
    t = res.results[0]
    assert len(t) >= 1 and (t.duration > 0).all()


def test_a_users_markers_are_named_by_their_provider():
    from perftriage.analysis.requests.params import marker_kind

    assert marker_kind("probe_srv:request_begin") == "probe_srv"
    assert marker_kind("myapp:req_start") == "myapp"
    assert marker_kind("request_begin") == "request_begin"  # no provider: the whole name
