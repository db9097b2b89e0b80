"""Execution graphs moved to memory-mapped files (execgraph/on_disk.py): the same paths and
findings from the mapped tables, nothing left on disk, nothing moved onto a file system in
memory, and the app's analysing child keeps its graphs that way."""

from __future__ import annotations

import os

import numpy as np
import pytest

from perftriage.analysis.execgraph.on_disk import ARRAYS, filesystem_of, move_to_disk
from perftriage.analysis.findings import render
from perftriage.analysis.requests.path_view import PathSource
from perftriage.analysis.triage import Options, run_triage

from conftest import needs_bt2

SAMPLE = "sample_traces/webserver"


def test_the_file_system_of_a_path_is_that_of_the_longest_mount_point_above_it(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("/dev/vda / ext4 rw 0 0\ntmpfs /tmp tmpfs rw 0 0\n/dev/vdb /tmp/data xfs rw 0 0\n"
                      "tmpfs /tmpx tmpfs rw 0 0\n")
    assert filesystem_of("/tmp/a/b", mounts) == "tmpfs"
    assert filesystem_of("/tmp/data/x", mounts) == "xfs"
    assert filesystem_of("/tmpy", mounts) == "ext4"  # /tmpx is no parent of /tmpy
    assert filesystem_of("/tmp", mounts) == "tmpfs"
    assert filesystem_of("/x", tmp_path / "no-such-file") is None


@needs_bt2
def test_graphs_moved_to_disk_give_the_same_paths_and_leave_no_file(tmp_path):
    res = run_triage([SAMPLE], Options(findings=False))
    graphs = res.graphs
    g = next(iter(graphs.values()))
    before = {name: np.array(getattr(g, name)) for name in ARRAYS}
    source = PathSource(graphs)
    reqs = res.requests
    picks = np.linspace(0, len(reqs) - 1, 25).astype(int)
    paths = [source.path(str(reqs.host[i]), int(reqs.tid[i]), int(reqs.start[i]), int(reqs.end[i])) for i in picks]
    if filesystem_of(tmp_path) in ("tmpfs", "ramfs"):
        pytest.skip("pytest's temporary folder is in memory here")

    moved = move_to_disk(graphs, str(tmp_path))
    assert moved == sum(a.nbytes for a in before.values()) > 1 << 20
    for name in ARRAYS:
        assert isinstance(getattr(g, name), np.memmap)
        assert np.array_equal(getattr(g, name), before[name])
    assert os.listdir(tmp_path) == []  # the files are unlinked once mapped
    # the source made before the move lets go of the heap tables when told (the child does after
    # each part it publishes), then walks the mapped tables, to the same paths
    source.let_go_if_moved()
    assert source._finders is None
    again = [source.path(str(reqs.host[i]), int(reqs.tid[i]), int(reqs.start[i]), int(reqs.end[i])) for i in picks]
    walked = source._finders[g.host]._graph(g.host)
    assert np.shares_memory(np.asarray(walked.start), g.iv_start)  # not the heap copy, which is let go
    assert [repr(p) for p in again] == [repr(p) for p in paths]
    source.let_go_if_moved()  # nothing moved since: the lookups stay
    assert source._finders is not None


@needs_bt2
def test_nothing_moves_onto_a_file_system_in_memory():
    if filesystem_of("/dev/shm") != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm here")
    graphs = run_triage([SAMPLE], Options(findings=False)).graphs
    assert move_to_disk(graphs, "/dev/shm") == 0
    assert not any(isinstance(getattr(g, name), np.memmap) for g in graphs.values() for name in ARRAYS)


@needs_bt2
def test_a_run_keeping_its_graphs_on_disk_finds_what_a_run_keeping_them_in_memory_finds():
    heap = run_triage([SAMPLE], Options())
    disk = run_triage([SAMPLE], Options(graphs_on_disk=True))
    assert all(isinstance(g.iv_start, np.memmap) for g in disk.graphs.values())
    assert not any(isinstance(g.iv_start, np.memmap) for g in heap.graphs.values())
    def text(res):  # the report without the line saying when it was made
        return [line for line in render(res.report, "md").splitlines() if "+00:00 by" not in line]

    assert text(disk) == text(heap)
