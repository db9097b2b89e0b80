"""The CTF reader against real LTTng traces and babeltrace2 itself."""

from __future__ import annotations

import collections
import re
import subprocess

import numpy as np
import pytest

from perftriage.analysis.columns import MISSING
from perftriage.analysis.ctf.current_task import CurrentTask
from perftriage.analysis.ctf.names import canonical_event_name
from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.spec import ReadSpec
from perftriage.analysis.ctf.summary import summarize

from conftest import REAL_TRACE_EVENTS, needs_babeltrace2, needs_bt2, real_trace

pytestmark = needs_bt2

_LINE = re.compile(r"^\[[^\]]+\] \([^)]*\) \S+ (\S+): ", re.M)


def babeltrace2_counts(path) -> collections.Counter:
    out = subprocess.run(["babeltrace2", str(path)], capture_output=True, text=True, check=True).stdout
    names = [canonical_event_name(m.group(1)) for m in _LINE.finditer(out)]
    assert len(names) == out.count("\n"), "every babeltrace2 line should parse"
    return collections.Counter(names)


@pytest.mark.parametrize("name", sorted(REAL_TRACE_EVENTS))
def test_event_count_matches_provenance(name):
    s = summarize([real_trace(name)])
    assert s.error is None
    assert s.events == REAL_TRACE_EVENTS[name]


@needs_babeltrace2
@pytest.mark.parametrize("name", ["tracevizlab-wget-k-20180802-115043", "tracevizlab-cat-kern-ust", "tracevizlab-php-ust"])
def test_per_event_counts_match_babeltrace2(name):
    s = summarize([real_trace(name)])
    assert collections.Counter(s.event_counts) == babeltrace2_counts(real_trace(name))


def test_metadata_facts_of_a_kernel_and_a_ust_trace():
    s = summarize([real_trace("tracevizlab-cat-kern-ust")])
    by_domain = {t.domain: t for t in s.traces}
    assert set(by_domain) == {"kernel", "ust"}
    assert by_domain["kernel"].hostname == "wilbrod"
    assert by_domain["kernel"].tracer.startswith("lttng-modules 2.11")
    assert by_domain["kernel"].cpus == set(range(8))
    assert s.hosts == ["wilbrod"]
    assert s.begin_ns < s.end_ns


def test_chunks_are_time_ordered_and_chunking_does_not_change_the_data():
    path = real_trace("tracevizlab-wget-k-20180802-115043")
    spec = dict(fields={"sched_switch": ["prev_tid", "next_tid", "prev_comm"], "syscall_exit_*": ["ret"]})
    small = CtfReader([path], ReadSpec(**spec, chunk_events=1000))
    chunks = list(small.chunks())
    # a chunk is cut at the first message batch that reaches the limit
    assert len(chunks) >= 20 and all(len(c) < 1000 + 200 for c in chunks)
    a = type(chunks[0]).concat(chunks)
    b = CtfReader([path], ReadSpec(**spec)).read_all()
    assert len(a) == len(b) == REAL_TRACE_EVENTS["tracevizlab-wget-k-20180802-115043"]
    assert np.all(np.diff(a.ts) >= 0)
    for col in ("ts", "cpu", "event", "tid"):
        assert np.array_equal(getattr(a, col), getattr(b, col)), col
    for f in ("prev_tid", "next_tid", "prev_comm", "ret"):
        assert np.array_equal(a.fields[f], b.fields[f]), f


def test_only_asked_fields_are_decoded_and_missing_rows_are_marked():
    r = CtfReader([real_trace("tracevizlab-wget-k-20180802-115043")], ReadSpec(fields={"syscall_exit_read": ["ret"]}))
    c = r.read_all()
    assert set(c.fields) == {"ret"}  # sched_switch tids are decoded internally, not returned
    is_read_exit = c.event == r.event_code("syscall_exit_read")
    assert is_read_exit.any()
    assert np.all(c.fields["ret"][~is_read_exit] == MISSING)
    assert np.all(c.fields["ret"][is_read_exit] != MISSING)


NET_FIELDS = ["network_header.saddr", "network_header.daddr", "network_header.protocol",
              "network_header.transport_header.source_port", "network_header.transport_header.dest_port",
              "network_header.transport_header.seq", "network_header.transport_header.ack_seq",
              "network_header.transport_header.flags"]


def _babeltrace2_net_rows(path):
    """(saddr, daddr, sport, seq, flags) per net event line of babeltrace2's text output (None
    where the packet has no TCP header)."""
    out = subprocess.run(["babeltrace2", str(path)], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        if " net_dev_queue:" not in line and " net_if_receive_skb:" not in line:
            continue
        addr = re.findall(r"saddr = \[ \[0\] = (\d+), \[1\] = (\d+), \[2\] = (\d+), \[3\] = (\d+) \]", line)
        daddr = re.findall(r"daddr = \[ \[0\] = (\d+), \[1\] = (\d+), \[2\] = (\d+), \[3\] = (\d+) \]", line)
        tcp = re.search(r"source_port = (\d+), dest_port = \d+, seq = (\d+), .*flags = 0x([0-9A-F]+)", line)
        ip = lambda q: int.from_bytes(bytes(int(x) for x in q), "big")  # noqa: E731
        rows.append((ip(addr[0]) if addr else None, ip(daddr[0]) if daddr else None,
                     int(tcp.group(1)) if tcp else None, int(tcp.group(2)) if tcp else None,
                     int(tcp.group(3), 16) if tcp else None))
    return rows


@needs_babeltrace2
@pytest.mark.parametrize("name", ["tracevizlab-wget-k-20180802-115043", "tracevizlab-apt"])
def test_nested_network_header_fields_decode_like_babeltrace2(name):
    path = real_trace(name)
    r = CtfReader([path], ReadSpec(fields={"net_*": NET_FIELDS}, events=["net_*"]))
    c = r.read_all()
    want = _babeltrace2_net_rows(path)
    assert len(c) == len(want) > 0
    f = c.fields
    got = [tuple(None if v == MISSING else int(v) for v in row)
           for row in zip(f["network_header.saddr"], f["network_header.daddr"],
                          f["network_header.transport_header.source_port"],
                          f["network_header.transport_header.seq"], f["network_header.transport_header.flags"])]
    assert got == want
    assert any(row[2] is not None for row in got)  # both hold TCP packets
    assert set(f["network_header.protocol"][f["network_header.saddr"] != MISSING].tolist()) <= {6, 17, 1}


def test_our_writer_writes_tcp_headers_the_reader_decodes(tmp_path):
    from perftriage.analysis.sim.handmade import write_trace

    hdr = dict(saddr=0x0A000001, daddr=0x0A000002, sport=40000, dport=3306, seq=4_000_000_000, ack=17,
               flags=0x18, tot_len=240, ip_id=7)
    write_trace(tmp_path, [(1000, 0, "net_dev_queue", {"skbaddr": 1, "len": 254, "name": "eth0", "network_header": hdr}),
                           (2000, 0, "net_dev_queue", {"skbaddr": 2, "len": 60, "name": "eth0"})])
    c = CtfReader([tmp_path], ReadSpec(fields={"net_*": NET_FIELDS}, events=["net_*"])).read_all()
    f = c.fields
    assert f["network_header.saddr"].tolist() == [0x0A000001, MISSING]
    assert f["network_header.daddr"][0] == 0x0A000002 and f["network_header.protocol"][0] == 6
    assert f["network_header.transport_header.seq"][0] == 4_000_000_000
    assert f["network_header.transport_header.ack_seq"][0] == 17
    assert f["network_header.transport_header.flags"][0] == 0x18
    assert f["network_header.transport_header.dest_port"].tolist() == [3306, MISSING]


def test_event_filter_keeps_only_matching_events_but_still_tracks_tids():
    path = real_trace("tracevizlab-wget-k-20180802-115043")
    full = CtfReader([path]).read_all()
    r = CtfReader([path], ReadSpec(events=["syscall_entry_*"]))
    c = r.read_all()
    names = {r.event_names[e] for e in np.unique(c.event)}
    assert names and all(n.startswith("syscall_entry_") for n in names)
    want = np.isin(full.event, [i for i, n in enumerate(full_names(path)) if n.startswith("syscall_entry_")])
    assert len(c) == int(want.sum())
    assert np.array_equal(c.tid, full.tid[want])


def full_names(path):
    r = CtfReader([path])
    r.read_all()
    return r.event_names


def test_strings_are_interned_to_codes():
    r = CtfReader([real_trace("tracevizlab-php-ust")], ReadSpec(fields={"ust_php:request_entry": ["uri", "path"]}))
    c = r.read_all()
    rows = np.flatnonzero(c.event == r.event_code("ust_php:request_entry"))
    assert len(rows) == 1
    assert c.fields["path"].dtype == np.int32
    assert r.strings[int(c.fields["path"][rows[0]])].endswith("script.php")
    assert r.strings[int(c.fields["uri"][rows[0]])] == "-"


@needs_babeltrace2
def test_ust_tid_and_pid_come_from_the_vtid_vpid_context():
    path = real_trace("tracevizlab-php-ust")
    out = subprocess.run(["babeltrace2", str(path)], capture_output=True, text=True, check=True).stdout
    ctx = re.findall(r"\{ vpid = (\d+), vtid = (\d+) \}", out)
    c = CtfReader([path]).read_all()
    assert len(ctx) == len(c) == REAL_TRACE_EVENTS["tracevizlab-php-ust"]
    assert c.pid.tolist() == [int(p) for p, _ in ctx]
    assert c.tid.tolist() == [int(t) for _, t in ctx]


@pytest.mark.parametrize("first_cpu", [0, 5000])  # 16-bit sort keys, and the wide ones beyond 4,095 CPUs
def test_current_task_tracking_within_and_across_chunks(first_cpu):
    t = CurrentTask()
    # cpu 0: events before the first switch belong to the switch's prev_tid; cpu 1 interleaved
    host = np.zeros(6, np.int16)
    cpu = first_cpu + np.array([0, 1, 0, 0, 1, 0], np.int32)
    sw = np.array([False, False, True, False, True, False])
    prev = np.array([MISSING, MISSING, 10, MISSING, 20, MISSING])
    nxt = np.array([MISSING, MISSING, 11, MISSING, 21, MISSING])
    tid = np.full(6, -1, np.int32)
    t.fill(tid, np.ones(6, bool), sw, host, cpu, prev, nxt)
    assert tid.tolist() == [10, 20, 10, 11, 20, 11]
    # next chunk carries on from the state left by the first
    tid2 = np.full(3, -1, np.int32)
    t.fill(tid2, np.ones(3, bool), np.array([False, True, False]), np.zeros(3, np.int16),
           first_cpu + np.array([1, 0, 0], np.int32), np.array([MISSING, 11, MISSING]), np.array([MISSING, 12, MISSING]))
    assert tid2.tolist() == [21, 11, 12]


@pytest.mark.parametrize("seed", range(12))
def test_the_compiled_current_task_follows_the_same_rules(seed):
    """_decode.current_tasks against the vectorised rules, chunk after chunk: several hosts and
    CPUs, missing tids, rows that need no task, and (odd seeds) a chunk with CPUs beyond 4,095,
    done by the vectorised rules in between (the carried state goes to them and back)."""
    from perftriage.analysis.ctf.current_task import _compiled

    if _compiled() is None:
        pytest.skip("the C decoder is not built here")
    rng = np.random.default_rng(seed)
    c, py = CurrentTask(), CurrentTask(compiled=False)
    assert c._c is not None and py._c is None
    for chunk in range(8):
        n = int(rng.integers(0, 400))
        host = rng.integers(0, 3, n).astype(np.int16)
        cpu = rng.integers(0, 5, n).astype(np.int32)
        if chunk == 4 and seed % 2:
            cpu = np.where(rng.random(n) < 0.3, cpu + 5000, cpu).astype(np.int32)
        sw = rng.random(n) < 0.15
        prev, nxt = rng.integers(1, 60, n), rng.integers(1, 60, n)
        prev[rng.random(n) < 0.1] = MISSING
        nxt[rng.random(n) < 0.1] = MISSING
        need = rng.random(n) < 0.8
        got, want = np.full(n, -7, np.int32), np.full(n, -7, np.int32)
        c.fill(got, need, sw, host, cpu, prev, nxt)
        py.fill(want, need, sw, host, cpu, prev, nxt)
        assert got.tolist() == want.tolist(), chunk


def test_progress_reports_events_and_bytes_up_to_the_total():
    seen = []
    r = CtfReader([real_trace("tracevizlab-apt")], progress=seen.append, progress_every=0.0)
    for _ in r.chunks():
        pass
    assert len(seen) > 3
    assert [p.events for p in seen] == sorted(p.events for p in seen)
    assert seen[-1].events == REAL_TRACE_EVENTS["tracevizlab-apt"]
    assert seen[-1].bytes_done == seen[-1].bytes_total == r.bytes_total > 0
    assert any(0 < p.bytes_done < p.bytes_total for p in seen)


def test_kernel_traces_of_one_hostname_get_distinct_hosts_and_ust_follows_its_folder():
    from perftriage.analysis.ctf.hosts import distinct_hosts

    paths = ["/t/s1/kernel", "/t/s1/ust/uid/1000/64-bit", "/t/s2/kernel", "/t/s2/ust/uid/1000/64-bit", "/t/x/kernel"]
    env = [("ubuntu", "kernel"), ("ubuntu", "ust"), ("ubuntu", "kernel"), ("ubuntu", "ust"), ("db", "kernel")]
    assert distinct_hosts(paths, env) == ["ubuntu (s1)", "ubuntu (s1)", "ubuntu (s2)", "ubuntu (s2)", "db"]
    # one kernel trace per hostname: names unchanged
    assert distinct_hosts(paths[:2], env[:2]) == ["ubuntu", "ubuntu"]
    # a user-space recording beside none of the kernel traces (another day's session, as when a
    # folder of recordings is opened whole) is its own host, not the last kernel trace's
    paths2 = ["/t/wget-1/kernel", "/t/wget-2/kernel", "/t/php-ust/ust/uid/1000/64-bit"]
    env2 = [("desk", "kernel"), ("desk", "kernel"), ("desk", "ust")]
    assert distinct_hosts(paths2, env2) == ["desk (wget-1)", "desk (wget-2)", "desk (php-ust)"]


@needs_bt2
@pytest.mark.parametrize("name", sorted(REAL_TRACE_EVENTS))
def test_trace_ranges_from_the_packets_begin_where_babeltrace2_says(name):
    """The range comes from the packets' timestamps and the clock (no forked query): the begin is
    babeltrace2's; the end is the last packet's as written, never before babeltrace2's (which
    corrects some LTTng versions' last packet to its last event)."""
    import bt2

    from perftriage.analysis.ctf.ranges import trace_ranges

    r = CtfReader([real_trace(name)])
    asked = trace_ranges(bt2, r._read_paths)
    for meta, answer in zip(r.traces, asked):
        assert meta.begin_ns == answer[0]
        assert answer[1] <= meta.end_ns <= answer[1] + 1_000_000_000


@needs_bt2
def test_a_session_folder_of_linked_traces_reads_them_all_and_a_link_loop_ends(tmp_path):
    """Traces linked into a folder (where they were recorded, kept in place) are found as if copied;
    a link back up to the folder does not loop."""
    src = real_trace("tracevizlab-cat-kern-ust")
    session = tmp_path / "session"
    session.mkdir()
    (session / "kernel").symlink_to(src / "cat-kernel")
    (session / "ust").symlink_to(src / "cat-ust")
    (session / "again").symlink_to(session)  # a loop
    reader = CtfReader([session])
    assert sorted(t.path.name for t in reader.trace_dirs) == ["kernel", "ust"]
    assert sum(len(c) for c in reader.chunks()) == REAL_TRACE_EVENTS["tracevizlab-cat-kern-ust"]
