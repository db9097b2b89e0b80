"""Damaged input: one clear line naming the file; what can be read is read; nothing is written."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from perftriage.analysis.ctf.discover import find_traces
from perftriage.analysis.ctf.metadata import read_metadata_text
from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.summary import summarize
from perftriage.analysis.errors import InputError
from perftriage.analysis.triage import Options, run_triage

from conftest import REAL_TRACE_EVENTS, ROOT, needs_bt2, real_trace

pytestmark = needs_bt2


def tree_digest(path) -> str:
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            h.update(p.encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def test_missing_folder():
    with pytest.raises(InputError, match="no such file or folder"):
        find_traces(["/nonexistent/trace"])


def test_folder_without_metadata(copy_trace):
    t = copy_trace("tracevizlab-php-ust")
    (t / "metadata").unlink()
    with pytest.raises(InputError) as e:
        CtfReader([t])
    assert str(t) in str(e.value) and "metadata" in str(e.value)


def test_truncated_metadata_is_refused_instead_of_hanging_babeltrace2(copy_trace):
    t = copy_trace("tracevizlab-php-ust")
    meta = t / "metadata"
    meta.write_bytes(meta.read_bytes()[:3000])
    with pytest.raises(InputError) as e:
        CtfReader([t])
    assert str(meta) in str(e.value) and "truncated" in str(e.value)


def test_garbage_metadata(copy_trace):
    t = copy_trace("tracevizlab-php-ust")
    (t / "metadata").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(InputError, match="not CTF metadata"):
        CtfReader([t])


def test_text_metadata_with_bad_syntax_names_the_trace(copy_trace):
    t = copy_trace("tracevizlab-php-ust")
    text = read_metadata_text(t / "metadata")
    (t / "metadata").write_text(text.replace("event {", "event {{ oops", 1))
    with pytest.raises(InputError) as e:
        CtfReader([t])
    assert str(t) in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("old,new", [(b"align = 8", b"align = 0"), (b"size = 64", b"size = 24")])
def test_packet_fields_of_an_impossible_width_or_alignment_are_one_line(copy_trace, old, new):
    """A bit flipped in packetized metadata (fuzzing found both): the first integer type aligned
    on 0 bits divided by zero, one 24 bits wide (3 bytes) was a KeyError in the stream check;
    an internal error either way. Now those fields are not read by perftriage, and babeltrace2's
    error is the one line."""
    t = copy_trace("tracevizlab-php-ust")
    raw = (t / "metadata").read_bytes()
    assert old in raw
    (t / "metadata").write_bytes(raw.replace(old, new, 1))  # the same length: the packets stay whole
    with pytest.raises(InputError) as e:
        CtfReader([t])
    assert str(t) in str(e.value) and "\n" not in str(e.value).strip(), str(e.value)


@pytest.mark.parametrize("where", [b"request_entry", b'hostname = "'])
def test_a_name_in_the_metadata_that_is_no_utf8_is_read_replaced(copy_trace, where):
    """A byte flipped in packetized metadata made an event's name bytes that are no UTF-8: the C
    decoder's strict decoding raised UnicodeDecodeError ('internal error', found by the
    damaged_inputs evaluation). Now read with U+FFFD in its place, as the environment's strings
    (a hostname) are: the trace is read and reported (its requests cannot pair up: their start
    marker's name is damaged)."""
    t = copy_trace("tracevizlab-php-ust")
    raw = (t / "metadata").read_bytes()
    i = raw.index(where) + len(where) + (2 - len(where) if where == b"request_entry" else 1)
    (t / "metadata").write_bytes(raw[:i] + b"\xf0" + raw[i + 1:])  # the same length: the packets stay whole
    out = subprocess.run([sys.executable, "-m", "perftriage", "info", str(t)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0 and "internal error" not in out.stderr, out.stderr[-600:]
    assert "\ufffd" in out.stdout, out.stdout[-600:]
    rep = subprocess.run([sys.executable, "-m", "perftriage", "report", "-q", str(t)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert rep.returncode in (0, 4) and "## Summary" in rep.stdout, rep.stderr[-600:]


def test_a_clock_offset_with_a_damaged_leading_digit_is_one_line(copy_trace):
    """'offset = 0457...989' (a 1 flipped to 0): an octal literal in C, with 8s and 9s, none at
    all; read as Python's int(x, 0) it was an internal error. Now not a clock origin, and
    babeltrace2's error the one line."""
    from perftriage.analysis.ctf.metadata import c_integer

    assert (c_integer("0x1F"), c_integer("017"), c_integer("-12"), c_integer("0"), c_integer("0457111225177515989")) \
        == (31, 15, -12, 0, None)
    t = copy_trace("tc-many-threads")
    raw = (t / "metadata").read_bytes()
    (t / "metadata").write_bytes(raw.replace(b"offset = 1457111225177515989", b"offset = 0457111225177515989", 1))
    with pytest.raises(InputError) as e:
        CtfReader([t])
    assert str(t) in str(e.value) and "\n" not in str(e.value).strip(), str(e.value)


def test_truncated_stream_is_salvaged_and_reported(copy_trace):
    t = copy_trace("tracevizlab-wget-k-20180802-115043")
    stream = t / "kernel" / "k_3"
    size = stream.stat().st_size
    with open(stream, "r+b") as f:
        f.truncate(size - 5000)
    s = summarize([t])
    total = REAL_TRACE_EVENTS["tracevizlab-wget-k-20180802-115043"]
    assert 0 < s.events < total  # the whole packets were read, the cut one was not
    problems = [p for tr in s.traces for p in tr.problems]
    assert len(problems) == 1 and str(stream) in problems[0] and "cut short" in problems[0]


def test_cli_reports_damage_with_exit_code_4_and_never_writes_into_the_trace(copy_trace):
    t = copy_trace("tracevizlab-wget-k-20180802-115043")
    with open(t / "kernel" / "k_1", "r+b") as f:
        f.truncate(100_000)
    before = tree_digest(t)
    r = subprocess.run([sys.executable, "-m", "perftriage", "info", str(t)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 4
    assert "k_1" in r.stderr and "cut short" in r.stderr
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(t), "-o", str(t / "kernel" / "r.md")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3 and "refusing to write inside the input trace folder" in r.stderr
    assert tree_digest(t) == before


def test_empty_file_given_as_input(tmp_path):
    f = tmp_path / "empty.csv"
    f.write_text("")
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(f)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3
    assert r.stderr.strip() == f"perftriage: {f}: file is empty"


def test_without_bt2_ctf_fails_with_one_line_and_exit_5(tmp_path):
    # hide bt2 from a child interpreter
    shim = tmp_path / "nobt2"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text("import sys\nsys.modules['bt2'] = None\n")
    env = dict(os.environ, PYTHONPATH=f"{shim}{os.pathsep}{ROOT}")
    r = subprocess.run([sys.executable, "-m", "perftriage", "info", str(real_trace("tracevizlab-php-ust"))],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 5
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "python3-bt2" in lines[0]


def _time_goes_backwards(trace) -> None:
    """Make the middle packet of the stream file with the most packets begin before the packet
    ahead of it: babeltrace2's muxer stops there ("timestamp is less than ... last returned")."""
    import struct

    from perftriage.analysis.ctf.metadata import packet_layout

    lay = packet_layout(read_metadata_text(trace / "metadata"))
    o, ts_begin = lay.byte_order, lay.content_size_offset - 16  # timestamp_begin, timestamp_end, content_size
    best = None
    for f in sorted(trace.iterdir()):
        if f.name == "metadata" or not f.is_file():
            continue
        data, off, packets = bytearray(f.read_bytes()), 0, []
        while off < len(data):
            packets.append((off, struct.unpack_from(o + "Q", data, off + ts_begin)[0]))
            off += struct.unpack_from(o + "Q", data, off + lay.packet_size_offset)[0] // 8
        if best is None or len(packets) > len(best[2]):
            best = (f, data, packets)
    f, data, packets = best
    assert len(packets) >= 3
    i = len(packets) // 2
    struct.pack_into(o + "Q", data, packets[i][0] + ts_begin, packets[i - 1][1] - 1000)
    f.write_bytes(data)


def test_time_going_backwards_between_packets_is_read_up_to_there(copy_trace):
    t = copy_trace("tracevizlab-apt")
    _time_goes_backwards(t)
    s = summarize([t])
    assert 0 < s.events < REAL_TRACE_EVENTS["tracevizlab-apt"]
    assert s.error.startswith(f"{t}: reading stopped at 2018-10-17 ") and "UTC" in s.error
    assert "into the trace" in s.error and "\n" not in s.error


def test_cli_analyses_what_a_failing_read_delivered_with_exit_4(copy_trace):
    t = copy_trace("tracevizlab-apt")
    _time_goes_backwards(t)
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(t), "-q", "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 4, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"perftriage: partial data: {t}: reading stopped at ")
    import json

    notes = json.loads(r.stdout)["notes"]
    assert any(n.startswith("partial data") for n in notes)


def _offsets(text: str) -> tuple[str, dict]:
    """Byte offset and width of every plain field of LTTng's packet header and context."""
    from perftriage.analysis.ctf.metadata import packet_fields

    return packet_fields(text)


@needs_bt2
def test_a_packet_cpu_id_beyond_any_cpu_is_said_not_a_crash(copy_trace):
    import struct

    t = copy_trace("tracevizlab-wget-k-20180802-115406") / "kernel"
    order, found = _offsets(read_metadata_text(t / "metadata"))
    off, width = found["cpu_id"]
    assert width == 4
    f = t / "k_1"
    data, pos = bytearray(f.read_bytes()), 0
    psize_off, _ = found["packet_size"]
    while pos < len(data):
        struct.pack_into(order + "I", data, pos + off, 0xFFFFFFF0)
        pos += struct.unpack_from(order + "Q", data, pos + psize_off)[0] // 8
    f.write_bytes(data)
    res = run_triage([t], Options(thread_metrics=False))
    assert any("cpu_id 4294967280 (not a CPU number)" in n for n in res.report.notes)


def test_nothing_of_a_session_is_left_out_silently(copy_trace):
    t = copy_trace("tracevizlab-cat-kern-ust")
    (t / "cat-kernel" / "metadata").unlink()  # the kernel trace's metadata is missing
    os.symlink("loop_b", t / "cat-ust" / "loop_a")  # a stream name that loops
    os.symlink("loop_a", t / "cat-ust" / "loop_b")
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(t), "-q", "-o", os.devnull],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 4, r.stderr
    err = r.stderr
    assert f"{t / 'cat-kernel'}: 8 stream files" in err and "without a metadata file: not read" in err
    assert f"{t / 'cat-ust' / 'loop_a'}: not a readable regular file" in err


def _set_first_content_size(trace, stream: str, bits: int) -> None:
    import struct

    order, found = _offsets(read_metadata_text(trace / "metadata"))
    off, width = found["content_size"]
    f = trace / stream
    data = bytearray(f.read_bytes())
    struct.pack_into(order + {4: "I", 8: "Q"}[width], data, off, bits)
    f.write_bytes(data)


def test_an_abort_of_babeltrace2s_range_query_does_not_take_perftriage_down(copy_trace):
    """babeltrace2 2.0.4 aborts the process in its trace-infos query on a packet whose content is
    shorter than its header (when the trace has no index): the query runs in a child process."""
    from perftriage.analysis.ctf.bt2_support import import_bt2
    from perftriage.analysis.ctf.ranges import RangeQueryFailed, trace_ranges

    damaged = copy_trace("tracevizlab-php-ust")
    shutil.rmtree(damaged / "index", ignore_errors=True)
    _set_first_content_size(damaged, "u_0", 64)
    whole = copy_trace("tracevizlab-wget-k-20180802-115406") / "kernel"
    answers = trace_ranges(import_bt2(), [whole, damaged, whole])
    assert isinstance(answers[1], RangeQueryFailed) and "SIGABRT" in str(answers[1])
    assert answers[0] == answers[2] and answers[0][0] < answers[0][1]  # asked again after the crash


def test_a_packet_shorter_than_its_header_is_left_out_and_the_rest_read(copy_trace):
    t = copy_trace("tracevizlab-wget-k-20180802-115043")
    k = t / "kernel"
    shutil.rmtree(k / "index", ignore_errors=True)
    _set_first_content_size(k, "k_0", 8)
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(t), "-q", "-o", os.devnull],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 4, r.stderr
    assert "Traceback" not in r.stderr
    assert f"{k / 'k_0'}: packet at byte 0 declares impossible sizes" in r.stderr
    reader = CtfReader([t])
    assert len(reader.read_all().ts) > 1000  # the other CPUs' streams were read


@pytest.mark.parametrize("instance, said", [
    (0, "u_1: names the same stream (stream_id 0, instance 0) as u_0: corrupt data, not read"),
    (2**64 - 1, "u_1: stream_instance_id unset (all ones) while the other stream files number theirs"),
])
def test_a_stream_file_naming_another_files_stream_is_left_out_not_an_abort(copy_trace, instance, said):
    """babeltrace2 2.0.4 aborts the process ("Duplicate stream ID") on these, inside the read."""
    import struct

    t = copy_trace("tracevizlab-php-ust")
    order, found = _offsets(read_metadata_text(t / "metadata"))
    off, width = found["stream_instance_id"]
    f = t / "u_1"
    data = bytearray(f.read_bytes())
    struct.pack_into(order + {4: "I", 8: "Q"}[width], data, off, instance % (1 << (8 * width)))
    f.write_bytes(data)
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(t), "-q", "-o", os.devnull],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 4, r.stderr
    assert said in r.stderr and "Traceback" not in r.stderr


def test_a_packet_timestamp_of_all_ones_is_corrupt_data_not_an_abort(copy_trace):
    """babeltrace2 2.0.4 fails an assertion (abort) on a timestamp_end of all ones."""
    import struct

    t = copy_trace("tracevizlab-cat-kern-ust")
    k = t / "cat-kernel"
    order, found = _offsets(read_metadata_text(k / "metadata"))
    off, width = found["timestamp_end"]
    data = bytearray((k / "k_0").read_bytes())
    struct.pack_into(order + {4: "I", 8: "Q"}[width], data, off, (1 << (8 * width)) - 1)
    (k / "k_0").write_bytes(data)
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(t), "-q", "-o", os.devnull],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 4, r.stderr
    assert f"{k / 'k_0'}: packet at byte 0 has a timestamp of all ones (corrupt data)" in r.stderr


# runs a command and says, as its last line, the largest resident size (KiB) of the processes it
# started (the command and the processes the command waited for): not this test process's other children
_PEAK_OF = ("import resource, subprocess, sys\n"
            "code = subprocess.run(sys.argv[1:]).returncode\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.exit(code)\n")


def info_on_a_corrupted_byte(copy_trace, stream: str, offset: int, value: int, preexec_fn=None):
    """``perftriage info`` on a copy of tracevizlab-cat-kern-ust with one byte of a kernel
    stream set, read by the C decoder (skipped where it is not built); ``peak_kib``: the largest
    resident size of its processes."""
    from perftriage.analysis.ctf import native

    if native._module()[0] is None:
        pytest.skip("the C decoder (which decodes in a capped child process) is not built here")
    t = copy_trace("tracevizlab-cat-kern-ust")
    f = t / "cat-kernel" / stream
    f.chmod(0o644)
    with open(f, "r+b") as out:
        out.seek(offset)
        out.write(bytes([value]))
    r = subprocess.run([sys.executable, "-c", _PEAK_OF, sys.executable, "-m", "perftriage", "info", str(t)],
                       capture_output=True, text=True, timeout=60, preexec_fn=preexec_fn)
    r.peak_kib = int(r.stdout.strip().splitlines()[-1])
    return r


@pytest.mark.parametrize("limit", [True, False])
def test_a_corrupted_byte_in_an_event_payload_ends_in_one_line(copy_trace, limit):
    """One byte of tracevizlab-cat-kern-ust's k_7 set to 16 (found by python -m fuzzing ctf):
    libbabeltrace2 then allocates 4 GiB for a sequence and aborts, or, with no limit, keeps
    allocating (9.7 GB in 25 s). The C decoder runs in a child process whose memory is capped:
    one line, exit 4 (partial data), within seconds, under a 2 GiB limit or none."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    r = info_on_a_corrupted_byte(copy_trace, "k_7", 648, 16, preexec_fn=cap if limit else None)
    assert r.returncode == 4, r.stderr[-300:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "babeltrace2 stopped decoding" in lines[0] and "damaged" in lines[0]


def test_a_corrupted_length_the_decoder_fills_stops_at_one_gib(copy_trace):
    """Byte 72,790 of tracevizlab-cat-kern-ust's k_1 set to 127 (found by python -m fuzzing ctf):
    libbabeltrace2 allocates and fills memory until it may not, then aborts. The decoding child
    may grow 1 GiB beyond the reader (its real need is about 100 MiB): the processes peaked at
    4.2 GiB when it was 4 GiB, 1.1 GiB now; a host under triage keeps its memory. One line, exit 4."""
    r = info_on_a_corrupted_byte(copy_trace, "k_1", 72790, 127)
    assert r.returncode == 4, r.stderr[-300:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "babeltrace2 stopped decoding" in lines[0]
    assert r.peak_kib < 1536 * 1024  # the largest of perftriage info's processes
