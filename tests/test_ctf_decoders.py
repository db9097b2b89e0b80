"""The C decoder (analysis/ctf/_decode.c) and the Python decoder (sink.py) read the same columns,
bit for bit, from every shared real trace and CTF sample, and fail the same way on a cut trace."""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from perftriage.analysis.ctf import native
from perftriage.analysis.ctf.native import reader_choice
from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.spec import ReadSpec
from perftriage.analysis.errors import TraceReadError
from perftriage.analysis.execgraph.builder import GRAPH_FIELDS

from conftest import REAL_TRACE_EVENTS, ROOT, needs_bt2, real_trace

pytestmark = needs_bt2

# every payload member of every event, the graph's nested network header fields (variants,
# arrays folded into integers) and the context fields
EVERYTHING = ReadSpec(fields={"*": ["*", "vtid", "vpid", "procname", "ip"], **dict(GRAPH_FIELDS)})


def _can_build() -> bool:
    include = sysconfig.get_paths()["include"]
    return (shutil.which("gcc") is not None and Path(include, "Python.h").is_file()
            and Path("/usr/include/babeltrace2/babeltrace.h").is_file())


def read(paths, decoder: str, spec=EVERYTHING, monkeypatch=None):
    monkeypatch.setenv("PERFTRIAGE_READER", decoder)
    reader = CtfReader(paths, spec)
    chunks, error = [], None
    try:
        for c in reader.chunks():
            chunks.append(c)
    except TraceReadError as exc:
        error = str(exc)
    from perftriage.analysis.columns import EventChunk

    return reader, EventChunk.concat(chunks) if chunks else None, error


def assert_same(a, b):
    (ra, ca, ea), (rb, cb, eb) = a, b
    assert rb.native and not ra.native
    assert ea == eb
    for k in ("ts", "cpu", "host", "event", "tid", "pid"):
        x, y = getattr(ca, k), getattr(cb, k)
        assert x.dtype == y.dtype and np.array_equal(x, y), k
    assert ca.fields.keys() == cb.fields.keys()
    for k, x in ca.fields.items():
        y = cb.fields[k]
        assert x.dtype == y.dtype, k
        assert np.array_equal(x.view(np.int64) if x.dtype == np.float64 else x,
                              y.view(np.int64) if y.dtype == np.float64 else y), k  # NaN bits too
    assert ra.event_names == rb.event_names
    assert ra.event_fields == rb.event_fields
    assert ra.strings.strings == rb.strings.strings
    assert ra.hosts == rb.hosts
    assert ra.traces == rb.traces


def test_the_c_decoder_is_built_where_it_can_be():
    if not _can_build():
        pytest.skip("no gcc, Python.h or libbabeltrace2-dev here: the Python decoder reads (make setup says so)")
    native, why = reader_choice()
    assert native, why


needs_c = pytest.mark.skipif(native._module()[0] is None, reason="the C decoder is not built here")


@needs_c
@pytest.mark.parametrize("name", sorted(REAL_TRACE_EVENTS))
def test_same_columns_from_every_real_trace(name, monkeypatch):
    paths = [real_trace(name)]
    a = read(paths, "python", monkeypatch=monkeypatch)
    b = read(paths, "c", monkeypatch=monkeypatch)
    assert_same(a, b)
    assert len(b[1]) == REAL_TRACE_EVENTS[name]
    assert sum(len(v) for v in b[0].event_fields.values()) > 10  # payloads were decoded, not skipped


@needs_c
@pytest.mark.parametrize("sample", ["webserver", "two-hosts"])
def test_same_columns_from_the_samples_in_small_chunks(sample, monkeypatch):
    paths = [ROOT / "sample_traces" / sample]
    spec = ReadSpec(fields=EVERYTHING.fields, chunk_events=5_000)  # chunk ends inside the message batches
    a = read(paths, "python", spec, monkeypatch)
    b = read(paths, "c", spec, monkeypatch)
    assert_same(a, b)
    if sample == "two-hosts":  # its hosts talk over TCP: nested header fields through variants and arrays
        nested = [k for k in b[1].fields if k.startswith("network_header.")]
        assert len(nested) > 5 and all((b[1].fields[k] != np.iinfo(np.int64).min).any() for k in nested)


@needs_c
def test_same_rows_and_error_from_a_cut_trace(tmp_path, monkeypatch):
    src = real_trace("tracevizlab-wget-k-20180802-115406")
    dst = tmp_path / "cut"
    shutil.copytree(src, dst)
    streams = sorted(p for p in dst.rglob("*") if p.is_file() and p.name != "metadata" and "index" not in p.parts)
    big = max(streams, key=lambda p: p.stat().st_size)
    data = big.read_bytes()
    big.write_bytes(data[: len(data) // 2 + 1234])  # cut inside a packet
    a = read([dst], "python", monkeypatch=monkeypatch)
    b = read([dst], "c", monkeypatch=monkeypatch)
    assert_same(a, b)
    assert a[0].traces[0].problems  # the damage is said, by both


@needs_c
def test_the_reading_thread_gives_the_same_chunks_and_stops_when_dropped(monkeypatch):
    import threading

    paths = [ROOT / "sample_traces" / "two-hosts"]
    spec = ReadSpec(fields=EVERYTHING.fields, chunk_events=3_000)
    got = {}
    for threaded in ("0", "1"):
        monkeypatch.setenv("PERFTRIAGE_READ_THREAD", threaded)
        r = CtfReader(paths, spec)
        assert r.threaded == (threaded == "1")
        got[threaded] = list(r.chunks())
    a, b = got["0"], got["1"]
    assert [len(c) for c in a] == [len(c) for c in b] and len(a) > 3
    for x, y in zip(a, b):
        assert np.array_equal(x.ts, y.ts) and np.array_equal(x.tid, y.tid) and x.fields.keys() == y.fields.keys()
    # a consumer that stops after one chunk: the thread ends with the generator
    it = CtfReader(paths, spec).chunks()
    next(it)
    assert any(t.name == "perftriage-ctf-read" for t in threading.enumerate())
    it.close()
    assert not any(t.name == "perftriage-ctf-read" for t in threading.enumerate())


def test_without_the_c_decoder_the_python_one_reads_and_info_says_so(monkeypatch, capsys):
    from perftriage.cli import main

    monkeypatch.setattr(native, "_module", lambda: (None, "No module named '_decode'"))
    native_, why = reader_choice()
    assert not native_ and "not built" in why and "libbabeltrace2-dev" in why
    assert main(["info", str(real_trace("tracevizlab-php-ust"))]) == 0
    out = capsys.readouterr().out
    assert "read by Python decoder (bt2): the C decoder is not built" in out
    assert "ust_php:request_entry" in out  # and it read the trace


@needs_c
def test_a_fork_while_the_reading_thread_decodes_never_hangs_the_child():
    """The range query forks a child of this process; the C decoder runs in another thread,
    without the GIL, inside libbabeltrace2 and glib. A child forked meanwhile must not inherit
    one of their locks held (one hung in g_slice_alloc): forks wait for the decoding loop."""
    import signal
    import threading
    import time

    import bt2

    done = threading.Event()

    def read_forever():
        while not done.is_set():
            for _ in CtfReader([ROOT / "sample_traces" / "webserver"], ReadSpec(fields=EVERYTHING.fields)).chunks():
                if done.is_set():
                    break

    t = threading.Thread(target=read_forever, daemon=True)
    t.start()
    hung = 0
    try:
        time.sleep(0.3)
        for _ in range(40):
            pid = os.fork()
            if pid == 0:  # the child uses babeltrace2 and glib as the range query does
                try:
                    bt2.find_plugin("ctf")
                finally:
                    os._exit(0)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
                time.sleep(0.005)
            else:
                hung += 1
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            time.sleep(0.01)
    finally:
        done.set()
        t.join()
    assert hung == 0


@needs_c
def test_a_fork_waits_for_the_decoding_loops():
    """The mechanism behind the test above, deterministic: while a decoding loop holds its lock
    (here for 0.4 s), os.fork() waits for it."""
    import threading
    import time

    mod = native._module()[0]
    t = threading.Thread(target=mod.hold_fork_lock, args=(0.4,))
    t.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    waited = time.monotonic() - t0
    os.waitpid(pid, 0)
    t.join()
    assert waited > 0.2


@pytest.mark.parametrize("decoder", ["c", "python"])
@pytest.mark.parametrize("threaded", ["0", "1"])
def test_ctrl_c_inside_the_decoder_interrupts_the_read(decoder, threaded, monkeypatch):
    """A KeyboardInterrupt raised inside babeltrace2's callback into our sink (Ctrl-C arrives
    while the decoder interns a string) ends the read as an interruption: it was taken for a
    damaged trace (partial data, exit 4, the report went on)."""
    if decoder == "c" and native._module()[0] is None:
        pytest.skip("the C decoder is not built here")
    monkeypatch.setenv("PERFTRIAGE_READER", "" if decoder == "c" else "python")
    monkeypatch.setenv("PERFTRIAGE_READ_THREAD", threaded)
    r = CtfReader([real_trace("tracevizlab-wget-k-20180802-115406")], ReadSpec(fields={"sched_switch": ["prev_comm"]}))
    calls = []

    def interrupted(s):
        calls.append(s)
        raise KeyboardInterrupt

    from perftriage.analysis.columns import StringPool

    monkeypatch.setattr(StringPool, "code", lambda self, s: interrupted(s))
    if decoder == "c":
        r._prepared[0].decoder.__init__(interrupted)  # the C decoder holds the intern function
    with pytest.raises(KeyboardInterrupt):
        for _ in r.chunks():
            pass
    assert calls or (decoder == "c" and r.isolated)  # the C decoder interned in its child process
