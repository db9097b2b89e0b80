"""Decoding shared out among processes by stream file (analysis/ctf/split.py): the same events,
columns and trace facts as one decoding process, in time order, on every shared real trace and
CTF sample; a damaged trace stops where it stops with one decoder; nothing is left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from perftriage.analysis.columns import EventChunk
from perftriage.analysis.ctf import native
from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.spec import ReadSpec
from perftriage.analysis.ctf import split
from perftriage.analysis.ctf.split import MIN_BYTES_PER_DECODER, decoders_for, stream_files, stream_groups
from perftriage.analysis.ctf.summary import summarize
from perftriage.analysis.errors import TraceReadError

from conftest import REAL_TRACE_EVENTS, ROOT, needs_bt2, real_trace
from test_bad_traces import _time_goes_backwards, tree_digest
from test_ctf_decoders import EVERYTHING

pytestmark = [needs_bt2, pytest.mark.skipif(native._module()[0] is None, reason="the C decoder is not built here")]


def read(paths, decoders: int, monkeypatch, spec=EVERYTHING):
    monkeypatch.setenv("PERFTRIAGE_DECODERS", str(decoders))
    reader = CtfReader(paths, spec)
    chunks, error = [], None
    try:
        chunks.extend(reader.chunks())
    except TraceReadError as exc:
        error = str(exc)
    return reader, EventChunk.concat(chunks) if chunks else None, error


def _in_order(reader, chunk):
    """The rows in an order that does not depend on the order of rows of equal time (which
    babeltrace2's muxer and the merge may put differently), and each row's values as names."""
    names = np.array(reader.event_names)[chunk.event]
    order = np.lexsort((chunk.tid, chunk.cpu, names, chunk.ts))
    cols = {}
    for k, v in chunk.fields.items():
        if v.dtype == np.int32:  # a string column: codes -> the strings (each reader has its own codes)
            cols[k] = np.array([reader.strings.strings[c] if c >= 0 else None for c in v[order]], dtype=object)
        else:
            cols[k] = v[order].view(np.int64) if v.dtype == np.float64 else v[order]  # NaN bits too
    return {"ts": chunk.ts[order], "cpu": chunk.cpu[order], "tid": chunk.tid[order], "pid": chunk.pid[order],
            "event": names[order], "host": np.array(reader.hosts)[chunk.host[order]]}, cols


def assert_same_events(one, split, strings_may_differ: int = 0):
    (r1, c1, e1), (r2, c2, e2) = one, split
    assert "processes" in r2.decoder_name and "processes" not in r1.decoder_name
    assert np.array_equal(c1.ts, c2.ts)  # the same times, in time order
    rows1, cols1 = _in_order(r1, c1)
    rows2, cols2 = _in_order(r2, c2)
    for k in rows1:
        assert np.array_equal(rows1[k], rows2[k]), k
    assert cols1.keys() == cols2.keys()
    differ = 0
    for k, x in cols1.items():
        if x.dtype == object:
            differ += int((x != cols2[k]).sum())
        else:
            assert x.dtype == cols2[k].dtype and np.array_equal(x, cols2[k]), k
    assert differ <= strings_may_differ
    assert {k: sorted(v) for k, v in r1.event_fields.items()} == {k: sorted(v) for k, v in r2.event_fields.items()}
    assert r1.traces == r2.traces  # CPUs, discarded events, problems, host, domain, tracer
    assert e1 == e2


@pytest.mark.parametrize("name", sorted(REAL_TRACE_EVENTS))
def test_three_decoders_read_what_one_reads_from_every_real_trace(name, monkeypatch):
    paths = [real_trace(name)]
    one, split = read(paths, 1, monkeypatch), read(paths, 3, monkeypatch)
    assert len(split[1]) == REAL_TRACE_EVENTS[name]
    # tracevizlab-apt: babeltrace2 2.0.4 itself decodes 8 of the 96,212 string fields of k_0 with
    # another event's string when k_0 is read alone, and other ones when read with k_1 (e.g. the
    # syscall_entry_access at 22:09:07.514181135: "/etc/ld.so.nohwcap" alone, "/etc/ld.so.preload"
    # with k_1; `babeltrace2` on a folder holding k_0 alone shows it)
    assert_same_events(one, split, strings_may_differ=16 if name == "tracevizlab-apt" else 0)


@pytest.mark.parametrize("sample", ["webserver", "two-hosts"])
def test_split_reads_of_the_samples_in_small_chunks(sample, monkeypatch):
    """Chunks of 5,000 events: the merge cuts the children's chunks at every watermark."""
    paths = [ROOT / "sample_traces" / sample]
    spec = ReadSpec(fields=EVERYTHING.fields, chunk_events=5_000)
    assert_same_events(read(paths, 1, monkeypatch, spec), read(paths, 2, monkeypatch, spec))


def test_streams_are_shared_out_by_size_and_the_trace_folder_is_never_written(monkeypatch, tmp_path):
    t = real_trace("tc-many-threads")
    before = tree_digest(t)
    temporary = tmp_path / "tmp"  # this test's own: other tests make views beside it
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    monkeypatch.setenv("PERFTRIAGE_DECODERS", "2")
    reader = CtfReader([t], ReadSpec())
    files = stream_files(reader)
    groups = stream_groups(files, 2)
    sizes = [sum(f.stat().st_size for fs in g.values() for f in fs) for g in groups]
    assert sorted(f for g in groups for fs in g.values() for f in fs) == sorted(f for fs in files for f in fs)
    assert len(groups) == 2 and max(sizes) - min(sizes) <= max(f.stat().st_size for fs in files for f in fs)
    assert len(list(reader.chunks())) > 0
    assert tree_digest(t) == before
    assert "processes" in reader.decoder_name and os.listdir(temporary) == []  # the views were there, and went


def test_how_many_decoders(monkeypatch):
    monkeypatch.delenv("PERFTRIAGE_DECODERS", raising=False)
    small = CtfReader([ROOT / "sample_traces" / "webserver"], ReadSpec())
    assert small.bytes_total < MIN_BYTES_PER_DECODER and decoders_for(small, 8) == 1  # not worth a second process
    monkeypatch.setattr(split, "MIN_BYTES_PER_DECODER", 1)
    files = sum(len(f) for f in stream_files(small))
    monkeypatch.setattr(split, "MAX_DECODERS", 5)
    assert files == 8 and decoders_for(small, 3) == 3 and decoders_for(small, 64) == 5
    monkeypatch.setenv("PERFTRIAGE_DECODERS", "64")
    assert decoders_for(small, 1) == files  # one per stream file at most


def _children() -> set[int]:
    """This process's child processes (zombies included: a child not reaped is still listed)."""
    out = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                out.update(int(p) for p in f.read().split())
        except FileNotFoundError:
            pass  # a thread that ended meanwhile
    return out


def test_a_dropped_split_read_stops_and_reaps_its_children(monkeypatch):
    monkeypatch.setenv("PERFTRIAGE_DECODERS", "3")
    before = _children()
    reader = CtfReader([ROOT / "sample_traces" / "webserver"], ReadSpec(chunk_events=2_000))
    chunks = reader.chunks()
    next(chunks)
    assert len(_children() - before) == 3  # the decoding children, running
    chunks.close()
    assert _children() == before


def test_a_read_stopped_by_damage_stops_at_the_same_event_with_the_same_words(copy_trace, monkeypatch):
    t = copy_trace("tracevizlab-apt")
    _time_goes_backwards(t)
    errors = []
    for k in (1, 2):
        monkeypatch.setenv("PERFTRIAGE_DECODERS", str(k))
        s = summarize([t])
        assert 0 < s.events < REAL_TRACE_EVENTS["tracevizlab-apt"]
        errors.append((s.events, s.error.split(": muxer-msg-iter-addr")[0]))
    assert errors[0] == errors[1] and "reading stopped at 2018-10-17 " in errors[0][1]


def test_a_decoder_killed_by_a_corrupted_byte_ends_in_one_line(copy_trace):
    """Byte 648 of tracevizlab-cat-kern-ust's k_7 set to 16: babeltrace2 aborts in the child
    that decodes k_7; the read ends in one line naming the traces of that child, exit 4."""
    t = copy_trace("tracevizlab-cat-kern-ust")
    f = t / "cat-kernel" / "k_7"
    with open(f, "r+b") as out:
        out.seek(648)
        out.write(bytes([16]))
    r = subprocess.run([sys.executable, "-m", "perftriage", "info", "--json", str(t)], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PERFTRIAGE_DECODERS": "3"})
    assert r.returncode == 4, r.stderr[-300:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "babeltrace2 stopped decoding" in lines[0] and str(t / "cat-kernel") in lines[0]
    assert "in 3 processes" in json.loads(r.stdout)["decoder"]


def test_the_report_is_the_same_with_three_decoders():
    def report(k):
        r = subprocess.run([sys.executable, "-m", "perftriage", "report", "-q", "--format", "json",
                            str(ROOT / "sample_traces" / "webserver")], capture_output=True, text=True, timeout=300,
                           cwd=ROOT, env={**os.environ, "PERFTRIAGE_DECODERS": str(k)})
        assert r.returncode == 0, r.stderr[-500:]
        out = json.loads(r.stdout)
        out.pop("created")
        return out

    one, three = report(1), report(3)
    assert one["findings"] and one == three


def test_without_a_writable_temporary_folder_one_process_decodes(monkeypatch, tmp_path):
    monkeypatch.setenv("PERFTRIAGE_DECODERS", "3")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))  # where the views would be made
    reader = CtfReader([ROOT / "sample_traces" / "two-hosts"], ReadSpec())
    assert sum(len(c) for c in reader.chunks()) == 112_716
    assert "processes" not in reader.decoder_name
