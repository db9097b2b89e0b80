"""Critical paths of hand-written traces, each with its expected path written out by hand.

Every case is a list of kernel events written as real CTF, read back through the reader and the
graph builder: the whole chain the CLI uses. Times are ns after the trace epoch.
"""

from __future__ import annotations

import pytest

from perftriage.analysis.ctf.pipeline import read_once
from perftriage.analysis.execgraph.builder import GraphBuilder
from perftriage.analysis.requests.critical_path import STATES, PathFinder
from perftriage.analysis.requests.features import extract_features
from perftriage.analysis.requests.markers import MarkerRequests
from perftriage.analysis.sim.handmade import EPOCH, write_trace

from conftest import needs_bt2

pytestmark = needs_bt2

NAMES = {0: "swapper", 100: "t1", 200: "t2", 300: "t3", 500: "web", 601: "db"}


def sw(ts, cpu, prev, nxt, state=1):
    return (ts, cpu, "sched_switch", dict(prev_comm=NAMES.get(prev, "x"), prev_tid=prev, prev_prio=120,
                                           prev_state=state, next_comm=NAMES.get(nxt, "x"), next_tid=nxt,
                                           next_prio=120))


def waking(ts, cpu, tid, name="sched_waking"):
    return (ts, cpu, name, dict(comm=NAMES.get(tid, "x"), tid=tid, prio=120, target_cpu=0))


def ev(ts, cpu, event, **fields):
    return (ts, cpu, event, fields)


def graph_of(tmp_path, events):
    write_trace(tmp_path / "t", events)
    res = read_once([tmp_path / "t"], [GraphBuilder()])
    return res.results[0]["testhost"]


def path(tmp_path, events, tid, t0, t1):
    g = graph_of(tmp_path, events)
    pf = PathFinder(g)
    s = pf.path(tid, EPOCH + t0, EPOCH + t1).segments(g)
    got = [(int(t), int(a - EPOCH), int(b - EPOCH), STATES[st]) for t, a, b, st in
           zip(s.tid, s.start, s.end, s.state)]
    # coverage: the segments tile [t0, t1] exactly
    assert got[0][1] == t0 and got[-1][2] == t1
    assert all(x[2] == y[1] for x, y in zip(got, got[1:]))
    assert sum(pf.durations(pf.path(tid, EPOCH + t0, EPOCH + t1))) == t1 - t0
    return got


def test_thread_woken_by_another_thread(tmp_path):
    events = [
        sw(1000, 0, 0, 100, 0), sw(1500, 1, 0, 200, 0),
        ev(2000, 0, "syscall_entry_read", fd=3), sw(3000, 0, 100, 0),
        waking(4000, 1, 100), waking(4100, 1, 100, "sched_wakeup"),
        sw(5000, 0, 0, 100, 0), ev(6000, 0, "syscall_exit_read", ret=10),
        sw(8000, 0, 100, 0), sw(9000, 1, 200, 0),
    ]
    assert path(tmp_path, events, 100, 1000, 8000) == [
        (100, 1000, 2000, "RU"), (100, 2000, 3000, "RS"), (200, 3000, 4000, "RU"),
        (100, 4000, 5000, "BP"), (100, 5000, 6000, "RS"), (100, 6000, 8000, "RU"),
    ]


def test_chain_of_three_threads(tmp_path):
    events = [
        sw(0, 0, 0, 100, 0), sw(1, 1, 0, 200, 0), sw(2, 2, 0, 300, 0),
        sw(10, 0, 100, 0),  # t1 blocks
        sw(20, 1, 200, 0),  # t2 blocks
        waking(40, 2, 200),  # t3 wakes t2
        sw(45, 1, 0, 200, 0),
        waking(60, 1, 100),  # t2 wakes t1
        sw(70, 0, 0, 100, 0),
        sw(90, 0, 100, 0), sw(95, 1, 200, 0), sw(99, 2, 300, 0),
    ]
    assert path(tmp_path, events, 100, 0, 90) == [
        (100, 0, 10, "RU"), (200, 10, 20, "RU"), (300, 20, 40, "RU"), (200, 40, 45, "BP"),
        (200, 45, 60, "RU"), (100, 60, 70, "BP"), (100, 70, 90, "RU"),
    ]


def _interrupt_wake(vec, tid=100, legacy=False):
    soft = "softirq" if legacy else "irq_softirq"
    return [
        ev(50, 1, "irq_handler_entry", irq=40, name="dev"), ev(51, 1, f"{soft}_raise", vec=vec),
        ev(52, 1, "irq_handler_exit", irq=40, ret=1), ev(55, 1, f"{soft}_entry", vec=vec),
        waking(57, 1, tid), ev(60, 1, f"{soft}_exit", vec=vec),
    ]


@pytest.mark.parametrize("vec,state", [(4, "BD"), (3, "BN"), (2, "BN"), (1, "BS"), (9, "BI"), (7, "BI")])
def test_wake_up_from_softirq(tmp_path, vec, state):
    events = [sw(0, 0, 0, 100, 0), sw(10, 0, 100, 0, 2), *_interrupt_wake(vec), sw(65, 0, 0, 100, 0),
              sw(80, 0, 100, 0)]
    assert path(tmp_path, events, 100, 0, 80) == [
        (100, 0, 10, "RU"), (100, 10, 57, state), (100, 57, 65, "BP"), (100, 65, 80, "RU"),
    ]


def test_legacy_event_names_network_client(tmp_path):
    # Trace Compass's simple_network_client case, with the pre-2.7 names (softirq_*) and
    # sched_wakeup only: the client blocks at 15 and a NET_RX softirq wakes it at 70
    events = [
        sw(10, 0, 201, 200, 0), sw(15, 0, 200, 201, 1),
        ev(50, 0, "irq_handler_entry", irq=5, name="mywifi"), ev(52, 0, "softirq_raise", vec=3),
        ev(53, 0, "irq_handler_exit", irq=5, ret=2), ev(60, 0, "softirq_entry", vec=3),
        waking(70, 0, 200, "sched_wakeup"), ev(72, 0, "softirq_exit", vec=3),
        sw(75, 0, 201, 200, 0), ev(80, 0, "sys_read", fd=10, count=30),
    ]
    assert path(tmp_path, events, 200, 10, 80) == [
        (200, 10, 15, "RU"), (200, 15, 70, "BN"), (200, 70, 75, "BP"), (200, 75, 80, "RU"),
    ]


def test_wake_up_from_hrtimer_is_a_timer_wait(tmp_path):
    events = [
        sw(0, 0, 0, 100, 0), ev(5, 0, "syscall_entry_nanosleep", rqtp=1), sw(10, 0, 100, 0),
        ev(50, 0, "timer_hrtimer_expire_entry", hrtimer=1, now=50, function=2), waking(51, 0, 100),
        ev(53, 0, "timer_hrtimer_expire_exit", hrtimer=1), sw(56, 0, 0, 100, 0),
        ev(57, 0, "syscall_exit_nanosleep", ret=0), sw(70, 0, 100, 0),
    ]
    assert path(tmp_path, events, 100, 0, 70) == [
        (100, 0, 5, "RU"), (100, 5, 10, "RS"), (100, 10, 51, "BS"), (100, 51, 56, "BP"), (100, 56, 57, "RS"),
        (100, 57, 70, "RU"),
    ]


def test_preemption(tmp_path):
    # sched_only (Trace Compass): 1 and 2 share CPU 0; 2 blocks at 20 and is switched back in
    # at 30 without a wake-up: its waker is unknown (BT)
    events = [sw(10, 0, 1, 2, 0), sw(20, 0, 2, 1, 3), sw(30, 0, 1, 2, 0), sw(40, 0, 2, 1, 0), sw(50, 0, 1, 0, 1)]
    assert path(tmp_path, events, 1, 10, 50) == [(1, 10, 20, "BP"), (1, 20, 30, "RU"), (1, 30, 40, "BP"),
                                                 (1, 40, 50, "RU")]
    assert path(tmp_path, events, 2, 10, 40) == [(2, 10, 20, "RU"), (2, 20, 30, "BT"), (2, 30, 40, "RU")]


def test_unknown_waker_in_futex_is_bf(tmp_path):
    events = [sw(0, 0, 0, 100, 0), ev(5, 0, "syscall_entry_futex", uaddr=1, op=0), sw(10, 0, 100, 0),
              sw(30, 0, 0, 100, 0), ev(31, 0, "syscall_exit_futex", ret=0), sw(40, 0, 100, 0)]
    assert path(tmp_path, events, 100, 0, 40) == [
        (100, 0, 5, "RU"), (100, 5, 10, "RS"), (100, 10, 30, "BF"), (100, 30, 31, "RS"), (100, 31, 40, "RU"),
    ]


def test_nested_interrupts_give_the_innermost_context(tmp_path):
    # a timer interrupt nests inside a NET_RX softirq: a wake-up inside it is a timer wait, one
    # after it returns (still in the softirq) a network wait
    events = [
        sw(0, 0, 0, 100, 0), sw(1, 2, 0, 200, 0), sw(10, 0, 100, 0), sw(11, 2, 200, 0),
        ev(50, 1, "irq_softirq_entry", vec=3), ev(52, 1, "timer_hrtimer_expire_entry", hrtimer=1, now=52, function=2),
        waking(53, 1, 100), ev(54, 1, "timer_hrtimer_expire_exit", hrtimer=1), waking(55, 1, 200),
        ev(60, 1, "irq_softirq_exit", vec=3),
        sw(61, 0, 0, 100, 0), sw(62, 2, 0, 200, 0), sw(70, 0, 100, 0), sw(71, 2, 200, 0),
    ]
    assert path(tmp_path, events, 100, 0, 70)[1] == (100, 10, 53, "BS")
    assert path(tmp_path, events, 200, 1, 71)[1] == (200, 11, 55, "BN")


def test_request_spanning_a_web_worker_and_a_database_thread(tmp_path):
    # the worker (pid 500) sends a query to the database (pid 600, thread 601), blocks in
    # recvfrom; the database thread computes and wakes it: the path runs through the database
    events = [
        sw(0, 0, 0, 500, 0), sw(1, 1, 0, 601, 0), sw(2, 1, 601, 0, 1),
        ev(10, 0, "ust_php:request_entry", vpid=500, vtid=500, procname="web", uri="/q"),
        ev(20, 0, "syscall_entry_sendto", fd=9), waking(22, 0, 601), ev(25, 0, "syscall_exit_sendto", ret=10),
        ev(30, 0, "syscall_entry_recvfrom", fd=9), sw(32, 0, 500, 0),
        sw(40, 1, 0, 601, 0), ev(41, 1, "syscall_exit_recvfrom", ret=10), ev(90, 1, "syscall_entry_sendto", fd=30),
        waking(95, 1, 500), sw(99, 1, 601, 0),
        sw(100, 0, 0, 500, 0), ev(105, 0, "syscall_exit_recvfrom", ret=100),
        ev(120, 0, "ust_php:request_exit", vpid=500, vtid=500, procname="web", uri="/q"),
        sw(130, 0, 500, 0),
    ]
    write_trace(tmp_path / "t", events)
    res = read_once([tmp_path / "t"], [GraphBuilder(), MarkerRequests()])
    graphs, req = res.results
    assert len(req) == 1
    ft = extract_features(graphs, req)
    g = graphs["testhost"]
    s = PathFinder(g).path(500, int(req.start[0]), int(req.end[0])).segments(g)
    got = [(int(t), int(a - EPOCH), int(b - EPOCH), STATES[st]) for t, a, b, st in zip(s.tid, s.start, s.end, s.state)]
    assert got == [
        (500, 10, 20, "RU"), (500, 20, 25, "RS"), (500, 25, 30, "RU"), (500, 30, 32, "RS"),
        (601, 32, 40, "BP"), (601, 40, 41, "RS"), (601, 41, 90, "RU"), (601, 90, 95, "RS"),
        (500, 95, 100, "BP"), (500, 100, 105, "RS"), (500, 105, 120, "RU"),
    ]
    d = dict(zip(ft.states, ft.durations[0].tolist()))
    assert d["RU"] == 10 + 5 + 49 + 15 and d["BP"] == 8 + 5 and sum(d.values()) == 110
    assert ft.syscalls.names(0) == ["sendto", "recvfrom"]
    assert ft.state_seq.names(0) == ["RU", "RS", "RU", "RS", "BP", "RS", "RU", "RS", "BP", "RS", "RU"]


def test_a_waker_born_inside_the_window_leads_to_its_parent(tmp_path):
    # t1 waits; t2 is forked by t3 at 30 and wakes t1 at 50: before 30 the path is t3's work
    events = [
        sw(0, 0, 0, 100, 0), sw(1, 1, 0, 300, 0), sw(10, 0, 100, 0),
        ev(30, 1, "sched_process_fork", parent_comm="t3", parent_tid=300, parent_pid=300, child_comm="t2",
           child_tid=200, child_pid=200),
        ev(31, 1, "sched_wakeup_new", comm="t2", tid=200, prio=120, target_cpu=2),
        sw(35, 2, 0, 200, 0), waking(50, 2, 100), sw(55, 0, 0, 100, 0), sw(60, 0, 100, 0),
    ]
    got = path(tmp_path, events, 100, 0, 60)
    assert got == [(100, 0, 10, "RU"), (300, 10, 30, "RU"), (200, 30, 35, "BP"), (200, 35, 50, "RU"),
                   (100, 50, 55, "BP"), (100, 55, 60, "RU")]


def test_spurious_second_wake_up_does_not_steal_the_wait(tmp_path):
    # t2 wakes t1 at 40, t3 wakes it again at 45 while it is already runnable: the wait belongs
    # to t2 (the reference's known quirk would give it to t3)
    events = [sw(0, 0, 0, 100, 0), sw(1, 1, 0, 200, 0), sw(2, 2, 0, 300, 0), sw(10, 0, 100, 0),
              waking(40, 1, 100), waking(45, 2, 100), sw(50, 0, 0, 100, 0), sw(60, 0, 100, 0)]
    assert path(tmp_path, events, 100, 0, 60) == [(100, 0, 10, "RU"), (200, 10, 40, "RU"), (100, 40, 50, "BP"),
                                                  (100, 50, 60, "RU")]


def _loopback(skb_sent, skb_received, late=0):
    """t1 (100) blocks reading a socket at 10; t2 (200), running on CPU 1, sends a packet on the
    loopback device at 30; a NET_RX softirq on CPU 1 receives a packet at 52 (+ ``late``) and
    wakes t1 at 57 (+ ``late``; loopback delivery runs on the sender's CPU)."""
    return [
        sw(0, 0, 0, 100, 0), sw(5, 1, 0, 200, 0),
        ev(8, 0, "syscall_entry_recvfrom", fd=3), sw(10, 0, 100, 0, 1),
        ev(30, 1, "net_dev_queue", skbaddr=skb_sent, len=60, name="lo"),
        ev(50 + late, 1, "irq_softirq_entry", vec=3),
        ev(52 + late, 1, "net_if_receive_skb", skbaddr=skb_received, len=60, name="lo"),
        waking(57 + late, 1, 100), ev(60 + late, 1, "irq_softirq_exit", vec=3),
        sw(65 + late, 0, 0, 100, 0), ev(70 + late, 0, "syscall_exit_recvfrom", ret=60), sw(80 + late, 0, 100, 0),
        sw(90 + late, 1, 200, 0),
    ]


def test_network_wait_on_a_packet_another_local_task_sent_follows_the_sender(tmp_path):
    # the reader's wait is the sender's work up to the send, then the packet's flight
    events = _loopback(0x8CB588BA6300, 0x8CB588BA6300)
    assert path(tmp_path, events, 100, 0, 80) == [
        (100, 0, 8, "RU"), (100, 8, 10, "RS"), (200, 10, 30, "RU"), (100, 30, 57, "BN"), (100, 57, 65, "BP"),
        (100, 65, 70, "RS"), (100, 70, 80, "RU"),
    ]


@pytest.mark.parametrize("sent,received,late", [(0xAB00, 0xCD00, 0), (0xAB00, 0xAB00, 20_000_000)])
def test_network_wait_stays_bn_when_the_packet_is_not_matched(tmp_path, sent, received, late):
    # another skb address (a packet from another host), or a send of that address long before
    # (addresses are reused: that was another packet): nothing to follow
    got = path(tmp_path, _loopback(sent, received, late), 100, 0, 80 + late)
    assert got[2] == (100, 10, 57 + late, "BN") and all(t == 100 for t, *_ in got)


def test_a_child_on_its_exit_path_is_running_when_it_wakes_its_parent(tmp_path):
    # the parent (100) waits in wait4 from 10; the child (200) calls exit_group at 40, the kernel
    # emits sched_process_exit at 45 and runs the exit path (closing files, waking the parent at
    # 60) until its last switch-out at 65, prev_state dead: the parent's wait is the child's work
    events = [
        sw(0, 0, 0, 100, 0), sw(1, 1, 0, 200, 0),
        ev(5, 0, "syscall_entry_wait4", upid=200), sw(10, 0, 100, 0, 1),
        ev(40, 1, "syscall_entry_exit_group", error_code=0),
        ev(45, 1, "sched_process_exit", comm="t2", tid=200, prio=120),
        waking(60, 1, 100), sw(65, 1, 200, 0, 64),
        sw(70, 0, 0, 100, 0), ev(72, 0, "syscall_exit_wait4", ret=200), sw(80, 0, 100, 0),
    ]
    assert path(tmp_path, events, 100, 0, 80) == [
        (100, 0, 5, "RU"), (100, 5, 10, "RS"), (200, 10, 40, "RU"), (200, 40, 60, "RS"), (100, 60, 70, "BP"),
        (100, 70, 72, "RS"), (100, 72, 80, "RU"),
    ]
    g = graph_of(tmp_path / "again", events)
    sl = g.intervals_of(200)
    after = [(int(a - EPOCH), int(b - EPOCH), int(st)) for a, b, st in
             zip(g.iv_start[sl], g.iv_end[sl], g.iv_state[sl]) if b - EPOCH > 40]
    from perftriage.analysis.execgraph.graph import EXITED, RS

    assert after[0] == (40, 65, RS) and after[-1][2] == EXITED  # gone at its last switch-out


def _message_chain(a_seen_early=False):
    """t1 (100) waits for a reply from 10. x (400), running since 1, sends m1 at 20; a (200) is
    running when m1 arrives at 22 (received in its own context: no wake-up) and sends m2 at 30;
    b (300), running too, receives m2 at 33 and sends m3 at 40, which a NET_RX softirq delivers
    to t1 at 47. Nothing of a and b is seen before their receives (their first scheduler event
    comes later), unless ``a_seen_early``: a enters a system call at 5."""
    lo = dict(len=60, name="lo")
    return [
        sw(0, 0, 0, 100, 0), ev(8, 0, "syscall_entry_recvfrom", fd=3), sw(10, 0, 100, 0, 1),
        sw(1, 3, 0, 400, 0), ev(20, 3, "net_dev_queue", skbaddr=0xA1, **lo),
        *([ev(5, 2, "syscall_entry_read", fd=4), ev(6, 2, "syscall_exit_read", ret=1)] if a_seen_early else []),
        ev(22, 2, "net_if_receive_skb", skbaddr=0xA1, **lo), ev(30, 2, "net_dev_queue", skbaddr=0xA2, **lo),
        ev(33, 1, "net_if_receive_skb", skbaddr=0xA2, **lo), ev(40, 1, "net_dev_queue", skbaddr=0xA3, **lo),
        ev(44, 1, "irq_softirq_entry", vec=3), ev(45, 1, "net_if_receive_skb", skbaddr=0xA3, **lo),
        waking(47, 1, 100), ev(48, 1, "irq_softirq_exit", vec=3),
        sw(50, 0, 0, 100, 0), ev(52, 0, "syscall_exit_recvfrom", ret=60), sw(60, 0, 100, 0, 1),
        sw(70, 2, 200, 0, 1), sw(72, 1, 300, 0, 1), sw(75, 3, 400, 0, 1),
    ]


def test_a_chain_of_messages_through_running_receivers_leads_back_to_the_first_sender(tmp_path):
    # t1's waker b has no history before 33 but the message it received there: the wait is a's
    # work before it sent m2, and before that x's, which sent m1 (the reference's network edges)
    assert path(tmp_path, _message_chain(), 100, 0, 60) == [
        (100, 0, 8, "RU"), (100, 8, 10, "RS"), (400, 10, 20, "RU"), (200, 20, 22, "BN"), (200, 22, 30, "RU"),
        (300, 30, 33, "BN"), (300, 33, 40, "RU"), (100, 40, 47, "BN"), (100, 47, 50, "BP"), (100, 50, 52, "RS"),
        (100, 52, 60, "RU"),
    ]


def test_a_receiver_seen_before_the_wait_keeps_its_own_history(tmp_path):
    # a was seen at 5, before t1's wait began: its own (running) history covers the window
    got = path(tmp_path, _message_chain(a_seen_early=True), 100, 0, 60)
    assert got[2:5] == [(200, 10, 30, "RU"), (300, 30, 33, "BN"), (300, 33, 40, "RU")]


def test_a_trace_with_no_thread_of_its_own_makes_an_empty_graph(tmp_path):
    # every event the idle task's (tid 0) or a tid a damaged trace lost: no interval, no crash
    # (the fuzzing's CTF 2 metadata flip on the perf recording: an IndexError, exit 1)
    g = graph_of(tmp_path, [sw(1000, 0, 0, 0, 0), waking(1200, 0, 0), sw(1500, 1, 0, 0, 0)])
    assert len(g.tids) == 0 or all(int(g.thread_hi[i]) == int(g.thread_lo[i]) for i in range(len(g.tids)))
