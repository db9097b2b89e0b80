"""A large OTLP file read by two processes (analysis/spans/halves.py) gives the table one process
gives: the same rows, codes, names and problems (their examples perhaps in another order); a
child that dies or fails is handled."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

from perftriage.analysis.errors import InputError
from perftriage.analysis.sim.microservices import MicroConfig, write_microservice_sample
from perftriage.analysis.spans import halves, read_spans

COLUMNS = ("trace", "span", "parent", "method", "service", "replica", "start", "end")
POOLS = ("traces", "methods", "services", "replicas")


def assert_same(a, b):
    for k in COLUMNS:
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    for k in POOLS:
        assert getattr(a, k) == getattr(b, k), k
    # the same problems; their examples may come in another order (a span without ids is
    # counted when its batch goes to the table, the second half's batches after the first's)
    pa, pb = vars(a.problems).copy(), vars(b.problems).copy()
    assert sorted(pa.pop("details")) == sorted(pb.pop("details")) and pa == pb


@pytest.fixture
def spans_file(tmp_path):
    write_microservice_sample(tmp_path / "ms", MicroConfig(requests=400, seed=3))
    path = tmp_path / "ms" / "spans.otlp.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    # damage in both halves: a line that is not JSON, one that is not a request object, a span
    # without ids, a blank line; and a request whose spans repeat ones of the other half
    n = len(lines)
    lines.insert(n // 4, b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}\n')
    lines.insert(n // 3, b"not json at all\n")
    lines.insert(3 * n // 4, b"[1, 2, 3]\n")
    lines.insert(4 * n // 5, b"\n")
    lines.append(lines[5])
    path.write_bytes(b"".join(lines))
    return path


def test_two_processes_read_the_table_one_process_reads(spans_file, monkeypatch):
    monkeypatch.setattr(halves, "SPLIT_MIN", 1)
    calls = []
    real = halves.read_in_halves
    monkeypatch.setattr("perftriage.analysis.spans.otlp.read_in_halves",
                        lambda *a: calls.append(a[3]) or real(*a))
    one = read_spans([spans_file], jobs=1)
    assert not calls
    two = read_spans([spans_file], jobs=2)
    assert len(calls) == 1 and 0 < calls[0] < spans_file.stat().st_size
    assert len(one) > 2000 and one.problems.unparsable == 3 and one.problems.repeated > 0
    assert_same(one, two)


def test_a_child_that_dies_leaves_its_half_to_this_process(spans_file, monkeypatch):
    monkeypatch.setattr(halves, "SPLIT_MIN", 1)
    one = read_spans([spans_file], jobs=1)
    monkeypatch.setattr(halves, "send", lambda fd, obj: os._exit(9))  # the child ends before its spans came back
    assert_same(one, read_spans([spans_file], jobs=2))


def test_a_failure_in_the_second_half_is_the_same_one_line_error(spans_file, monkeypatch):
    monkeypatch.setattr(halves, "SPLIT_MIN", 1)
    with open(spans_file, "ab") as f:
        f.write(b'{"resourceSpans": 5}\n')  # the wrong shape: the per-span path raises
    with pytest.raises(InputError) as one:
        read_spans([spans_file], jobs=1)
    with pytest.raises(InputError) as two:
        read_spans([spans_file], jobs=2)
    assert str(two.value) == str(one.value) and str(spans_file) in str(two.value)


def test_small_compressed_or_single_core_files_are_read_by_one_process(spans_file, monkeypatch, tmp_path):
    with open(spans_file, "rb") as f:
        f.readline()
        assert halves.split_at(spans_file, f, f.tell(), 2) is None  # under SPLIT_MIN
        monkeypatch.setattr(halves, "SPLIT_MIN", 1)
        assert halves.split_at(spans_file, f, f.tell(), 1) is None  # --jobs 1
        mid = halves.split_at(spans_file, f, f.tell(), 2)
    data = spans_file.read_bytes()
    assert mid and data[mid - 1:mid] == b"\n" and abs(mid - len(data) // 2) < 10_000  # a line start near the middle
    gz = tmp_path / "spans.otlp.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    monkeypatch.setattr("perftriage.analysis.spans.otlp.read_in_halves",
                        lambda *a: pytest.fail("a decompressed file cannot be cut by position"))
    assert_same(read_spans([gz], jobs=1), read_spans([gz], jobs=2))
