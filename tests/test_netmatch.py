"""Packets between traced hosts: matching by headers, clock fits, critical paths across hosts.

The two-host case is written by hand as two real CTF traces (a web host and a database host
whose clock runs 7 ms ahead), read back through the reader and the graph builder, with its
expected critical path written out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from perftriage.analysis.ctf.pipeline import read_once
from perftriage.analysis.execgraph.builder import GraphBuilder
from perftriage.analysis.execgraph.graph import FOLLOW_REMOTE
from perftriage.analysis.execgraph.netmatch import PacketLog, fit_clock, match
from perftriage.analysis.requests.critical_path import STATES, finders
from perftriage.analysis.sim.handmade import EPOCH, write_trace

from conftest import needs_bt2

SKEW = 7_000_000  # the database host's clock is 7 ms ahead of the web host's
WEB, DB = 0x0A000001, 0x0A000002
NAMES = {0: "swapper", 500: "php-fpm", 601: "mysqld"}


def sw(ts, cpu, prev, nxt, state=1):
    return (ts, cpu, "sched_switch", dict(prev_comm=NAMES.get(prev, "x"), prev_tid=prev, prev_prio=120,
                                           prev_state=state, next_comm=NAMES.get(nxt, "x"), next_tid=nxt,
                                           next_prio=120))


def ev(ts, cpu, event, **fields):
    return (ts, cpu, event, fields)


def waking(ts, cpu, tid):
    return (ts, cpu, "sched_waking", dict(comm=NAMES.get(tid, "x"), tid=tid, prio=120, target_cpu=cpu))


QUERY = dict(saddr=WEB, daddr=DB, sport=41000, dport=3306, seq=1000, ack=1, flags=0x18, tot_len=240)
REPLY = dict(saddr=DB, daddr=WEB, sport=3306, dport=41000, seq=1, ack=1200, flags=0x18, tot_len=1440)


def web_events(reply=REPLY):
    """php-fpm sends a query at 20, blocks in recvfrom at 40; the reply arrives at 580 and wakes
    it at 585; it runs until 700."""
    return [
        sw(0, 0, 0, 500, 0),
        ev(10, 0, "syscall_entry_sendto", fd=9), ev(20, 0, "net_dev_queue", skbaddr=0xA100, len=254, name="eth0",
                                                    network_header=QUERY),
        ev(25, 0, "syscall_exit_sendto", ret=200), ev(30, 0, "syscall_entry_recvfrom", fd=9), sw(40, 0, 500, 0, 1),
        ev(578, 0, "irq_softirq_entry", vec=3),
        ev(580, 0, "net_if_receive_skb", skbaddr=0xB200, len=1440, name="eth0", network_header=reply),
        waking(585, 0, 500), ev(590, 0, "irq_softirq_exit", vec=3),
        sw(595, 0, 0, 500, 0), ev(600, 0, "syscall_exit_recvfrom", ret=1400), sw(700, 0, 500, 0, 1),
    ]


def db_events():
    """mysqld (clock + SKEW) waits in recvfrom; the query arrives at 60 (web time) and wakes it
    at 62; it reads from disk (90 .. 505), sends the reply at 540, waits again at 560."""
    return [(ts + SKEW, cpu, name, f) for ts, cpu, name, f in [
        sw(0, 0, 0, 601, 0), ev(5, 0, "syscall_entry_recvfrom", fd=30), sw(8, 0, 601, 0, 1),
        ev(58, 0, "irq_softirq_entry", vec=3),
        ev(60, 0, "net_if_receive_skb", skbaddr=0xC300, len=240, name="eth0", network_header=QUERY),
        waking(62, 0, 601), ev(64, 0, "irq_softirq_exit", vec=3),
        sw(70, 0, 0, 601, 0), ev(72, 0, "syscall_exit_recvfrom", ret=200),
        ev(80, 0, "syscall_entry_read", fd=11), ev(85, 0, "block_rq_issue", dev=1, sector=8, nr_sector=8, bytes=4096),
        sw(90, 0, 601, 0, 2),
        ev(500, 0, "irq_softirq_entry", vec=4), ev(502, 0, "block_rq_complete", dev=1, sector=8, nr_sector=8),
        waking(505, 0, 601), ev(507, 0, "irq_softirq_exit", vec=4),
        sw(510, 0, 0, 601, 0), ev(520, 0, "syscall_exit_read", ret=4096),
        ev(530, 0, "syscall_entry_sendto", fd=30),
        ev(540, 0, "net_dev_queue", skbaddr=0xD400, len=1454, name="eth0", network_header=REPLY),
        ev(545, 0, "syscall_exit_sendto", ret=1400), ev(550, 0, "syscall_entry_recvfrom", fd=30),
        sw(560, 0, 601, 0, 1),
    ]]


def graphs_of(tmp_path, hosts):
    paths = []
    for name, events in hosts.items():
        write_trace(tmp_path / name, events, hostname=name)
        paths.append(tmp_path / name)
    builder = GraphBuilder()
    res = read_once(paths, [builder])
    return res.results[0], builder


def web_path(graphs, t0=0, t1=700):
    pf = finders(graphs)["web"]
    g = graphs["web"]
    s = pf.path(500, EPOCH + t0, EPOCH + t1).segments(g)
    got = [(s.hosts[h], int(t), int(a - EPOCH), int(b - EPOCH), STATES[st])
           for h, t, a, b, st in zip(s.hosts_of(), s.tid, s.start, s.end, s.state)]
    assert got[0][2] == t0 and got[-1][3] == t1
    assert all(x[3] == y[2] for x, y in zip(got, got[1:]))  # the segments tile the window
    assert sum(pf.durations(pf.path(500, EPOCH + t0, EPOCH + t1))) == t1 - t0
    return got


@needs_bt2
def test_a_wait_on_a_reply_from_another_traced_host_follows_the_database_thread(tmp_path):
    graphs, builder = graphs_of(tmp_path, {"web": web_events(), "db": db_events()})
    fit = graphs["web"].clocks["db"]
    assert fit.offset_ns == pytest.approx(SKEW, abs=1) and not fit.one_way  # symmetric flights: exact
    assert fit.pairs_ab == fit.pairs_ba == 1 and fit.margin_ns == pytest.approx(40, abs=1)
    assert graphs["db"].clocks["web"].shift(EPOCH + SKEW + 100) == pytest.approx(-SKEW, abs=1)
    assert builder.matches.matched == 2 and builder.matches.unmatched_wakes == 0
    assert FOLLOW_REMOTE in graphs["web"].iv_block and FOLLOW_REMOTE in graphs["db"].iv_block
    assert web_path(graphs) == [
        ("web", 500, 0, 10, "RU"), ("web", 500, 10, 25, "RS"), ("web", 500, 25, 30, "RU"), ("web", 500, 30, 40, "RS"),
        # the query's flight and mysqld's wake-up (mysqld was waiting for it: nothing to follow back)
        ("db", 601, 40, 62, "BN"), ("db", 601, 62, 70, "BP"), ("db", 601, 70, 72, "RS"), ("db", 601, 72, 80, "RU"),
        ("db", 601, 80, 90, "RS"), ("db", 601, 90, 505, "BD"), ("db", 601, 505, 510, "BP"),
        ("db", 601, 510, 520, "RS"), ("db", 601, 520, 530, "RU"), ("db", 601, 530, 540, "RS"),
        # the reply's flight, then php-fpm again
        ("web", 500, 540, 585, "BN"), ("web", 500, 585, 595, "BP"), ("web", 500, 595, 600, "RS"),
        ("web", 500, 600, 700, "RU"),
    ]


@needs_bt2
def test_without_the_other_hosts_trace_or_a_matching_packet_the_wait_stays_bn(tmp_path):
    graphs, _ = graphs_of(tmp_path / "a", {"web": web_events()})
    got = web_path(graphs)
    assert ("web", 500, 40, 585, "BN") in got and {h for h, *_ in got} == {"web"}
    # a reply whose sequence number nobody sent (not even within a sent segment): not this
    # database's packet
    graphs, builder = graphs_of(tmp_path / "b", {"web": web_events({**REPLY, "seq": 5_000_000}), "db": db_events()})
    got = web_path(graphs)
    assert ("web", 500, 40, 585, "BN") in got and {h for h, *_ in got} == {"web"}
    assert builder.matches.unmatched_wakes == 1


@needs_bt2
def test_a_packet_sent_from_an_interrupt_is_not_the_interrupted_tasks_work(tmp_path):
    # the reply leaves db-01 from a NET_TX softirq that interrupted mysqld: the kernel sent it,
    # not mysqld; the web worker's wait is not followed into mysqld's history
    db = []
    for ts, cpu, name, f in db_events():
        if name == "net_dev_queue":
            db += [(ts - 1, cpu, "irq_softirq_entry", {"vec": 2}), (ts, cpu, name, f), (ts + 1, cpu, "irq_softirq_exit", {"vec": 2})]
        else:
            db.append((ts, cpu, name, f))
    graphs, builder = graphs_of(tmp_path, {"web": web_events(), "db": db})
    got = web_path(graphs)
    assert ("web", 500, 40, 585, "BN") in got and {h for h, *_ in got} == {"web"}
    assert builder.matches.unmatched_wakes == 1 and graphs["web"].clocks["db"].pairs_ba == 1


@needs_bt2
def test_a_reply_the_nic_split_is_matched_by_its_sequence_range(tmp_path):
    # mysqld queues a 4,096-byte reply as one TSO super-packet; web-01 receives three segments
    # (seq 1, 1449, 2897) and the last one wakes php-fpm: no header is equal on both sides, the
    # connection, the acknowledgement and the sequence range are (a pure ACK back, sent from a
    # softirq, gives the clock fit its second direction)
    big = {**REPLY, "tot_len": 4136}
    ack = dict(saddr=DB, daddr=WEB, sport=3306, dport=41000, seq=1, ack=1200, flags=0x10, tot_len=40)
    db = []
    for ts, cpu, name, f in db_events():
        if name == "net_dev_queue":
            f = {**f, "network_header": big}
        db.append((ts, cpu, name, f))
    db += [(SKEW + 99, 0, "irq_softirq_entry", {"vec": 3}),
           (SKEW + 100, 0, "net_dev_queue", dict(skbaddr=0xE500, len=54, name="eth0", network_header=ack)),
           (SKEW + 101, 0, "irq_softirq_exit", {"vec": 3})]
    web = [e for e in web_events() if e[2] != "net_if_receive_skb"]
    web += [(140, 1, "net_if_receive_skb", dict(skbaddr=0xF600, len=40, name="eth0", network_header=ack))]
    for k, t in enumerate((576, 578, 580)):
        seg = {**REPLY, "seq": 1 + 1448 * k, "tot_len": 1488 if k < 2 else 1240, "flags": 0x10 if k < 2 else 0x18}
        web.append((t, 0, "net_if_receive_skb", dict(skbaddr=0xB200 + k, len=seg["tot_len"], name="eth0",
                                                     network_header=seg)))
    graphs, builder = graphs_of(tmp_path, {"web": web, "db": db})
    assert builder.matches.by_range == 1 and builder.matches.unmatched_wakes == 0
    assert graphs["web"].clocks["db"].offset_ns == pytest.approx(SKEW, abs=1)
    got = web_path(graphs)
    assert ("db", 601, 90, 505, "BD") in got and ("web", 500, 540, 585, "BN") in got


def test_clock_fit_recovers_offset_and_drift_from_packets_both_ways():
    rng = np.random.default_rng(4)
    off, drift = 3_250_000.0, 40e-6  # 3.25 ms, 40 ppm
    t_a = np.sort(rng.uniform(0, 20e9, 400)).astype(np.int64) + EPOCH
    to_b = lambda t: t + off + drift * (t - EPOCH)  # noqa: E731
    flight = rng.exponential(30_000, 400).astype(np.int64) + 20_000  # >= 20 us
    ab = rng.random(400) < 0.5
    send_a, recv_b = t_a[ab], (to_b(t_a[ab]) + flight[ab]).astype(np.int64)
    send_b = to_b(t_a[~ab]).astype(np.int64)
    recv_a = t_a[~ab] + flight[~ab]
    fit = fit_clock(0, 1, send_a, recv_b, send_b, recv_a)
    t = EPOCH + 10_000_000_000
    assert abs(fit.shift(t) - (to_b(t) - t)) < 20_000  # within the smallest flight
    assert fit.drift == pytest.approx(drift, abs=5e-6)
    assert fit.margin_ns > 0 and not fit.one_way
    inv = fit.inverse()
    assert abs(inv.shift(t + fit.shift(t)) + fit.shift(t)) < 5  # back and forth
    one = fit_clock(0, 1, send_a, recv_b, [], [])
    # one way: as if the fastest packets took no time: late by about the shortest flights
    assert one.one_way and 0 <= one.shift(t) - (to_b(t) - t) < 40_000
    other = fit_clock(0, 1, [], [], send_b, recv_a)
    assert other.one_way and 0 <= (to_b(t) - t) - other.shift(t) < 40_000


def test_match_pairs_a_wake_with_the_latest_send_of_its_key_on_another_host():
    log = PacketLog()
    key = np.array([11, 12, 11], np.int64)
    # host 0 sends key 11 twice (a retransmission 300 ms later) and key 12; host 1 receives
    log.add_sends(key, np.array([1_000, 2_000, 300_001_000], np.int64), 0, np.array([5, 5, 6]))
    log.add_sends(np.array([13], np.int64), np.array([2_500], np.int64), 1, np.array([9]))
    r = log.add_receives(np.array([12, 11], np.int64), np.array([2_040, 300_001_050], np.int64), 1)
    log.add_receives(np.array([13], np.int64), np.array([2_560], np.int64), 0)
    log.add_wakes([7], [int(r[1])])
    m = match(log)
    assert m.remote.as_dict() == {7: (0, 6, 300_001_000)}  # the retransmission, by tid 6, not the first send
    assert m.fits[(0, 1)].pairs_ab == 1 and m.fits[(0, 1)].pairs_ba == 1


@needs_bt2
def test_simulated_database_host_slow_disk_shows_as_bd_only_when_its_trace_is_read(tmp_path):
    from perftriage.analysis.requests.features import extract_features
    from perftriage.analysis.requests.markers import MarkerRequests
    from perftriage.analysis.sim.sample import write_webserver_sample
    from perftriage.analysis.sim.webserver import WebServerConfig

    cfg = WebServerConfig(requests=150, db_host="db-01", db_clock_offset_ms=-3.5, db_clock_drift_ppm=30,
                          mix={"slow_db": 0.1, "slow_disk": 0.03}, seed=11)
    st = write_webserver_sample(tmp_path / "s", cfg)
    cause = {r["rid"]: r["cause"] for r in __import__("json").loads((st.out / "ground_truth.json").read_text())["requests"]}
    shares = {}
    for name, paths in (("both", [st.out]), ("web only", [st.out / "web-01"])):
        builder = GraphBuilder()
        graphs, req = read_once(paths, [builder, MarkerRequests()]).results
        ft = extract_features(graphs, req)
        assert (ft.durations.sum(axis=1) == ft.total).all()  # every path covers its request
        c = np.array([cause[int(q.rsplit("rid=", 1)[1])] for q in req.fields["querystring"]])
        dom = np.array(STATES)[np.argmax(ft.durations, axis=1)]
        shares[name] = {k: float(np.mean(dom[c == k] == "BD")) for k in ("slow_db", "slow_disk")}
        shares[name]["slow_db BN"] = float(np.mean(dom[c == "slow_db"] == "BN"))
        if name == "both":
            fit = graphs["web-01"].clocks["db-01"]
            t = int(np.median(req.start))
            truth = -3.5e6 + 30e-6 * (t - cfg.epoch_ns)  # the configured clock at time t
            assert abs(fit.shift(t) - truth) < 2 * cfg.net_latency_us * 1e3
            assert builder.matches.unmatched_wakes == 0 and builder.matches.matched > 100
    assert (c == "slow_db").sum() >= 8
    # the database's disk is on the web requests' critical path only through the packets
    assert shares["both"]["slow_db"] == 1.0 and shares["web only"]["slow_db"] == 0.0
    assert shares["web only"]["slow_db BN"] == 1.0
    assert shares["both"]["slow_disk"] == shares["web only"]["slow_disk"] == 1.0  # local disk: the same


@needs_bt2
def test_features_csv_keeps_the_time_on_the_other_host_and_reads_it_back(tmp_path):
    from perftriage.analysis.requests.features import extract_features, read_features, to_csv
    from perftriage.analysis.requests.markers import MarkerRequests
    from perftriage.analysis.sim.sample import write_webserver_sample
    from perftriage.analysis.sim.webserver import WebServerConfig

    st = write_webserver_sample(tmp_path / "s", WebServerConfig(requests=60, db_host="db-01", seed=2,
                                                                 mix={"slow_db": 0.1}))
    graphs, req = read_once([st.out], [GraphBuilder(), MarkerRequests()]).results
    ft = extract_features(graphs, req)
    assert set(ft.fields["elsewhere_host"]) == {"db-01"} and (ft.fields["elsewhere_ns"] > 0).all()
    (tmp_path / "f.csv").write_text(to_csv(ft))
    back = read_features(tmp_path / "f.csv")
    assert back.states == list(STATES)  # elsewhere_ns is not a state
    assert np.array_equal(back.fields["elsewhere_ns"], ft.fields["elsewhere_ns"])
    assert np.array_equal(back.durations, ft.durations)


@needs_bt2
def test_two_machines_with_one_hostname_stay_two_hosts(tmp_path):
    # machines installed from one image often share a hostname: their kernel traces are still
    # two machines (named after their folders), not one graph with mixed-up threads
    write_trace(tmp_path / "web", web_events(), hostname="ubuntu")
    write_trace(tmp_path / "db", db_events(), hostname="ubuntu")
    graphs = read_once([tmp_path / "web", tmp_path / "db"], [GraphBuilder()]).results[0]
    assert sorted(graphs) == ["ubuntu (db)", "ubuntu (web)"]
    pf = finders(graphs)["ubuntu (web)"]
    s = pf.path(500, EPOCH, EPOCH + 700).segments(graphs["ubuntu (web)"])
    assert ("ubuntu (db)", "BD") in {(s.hosts[h], STATES[st]) for h, st in zip(s.hosts_of(), s.state)}


def test_hull_keeps_every_point_on_one_side_of_it():
    from perftriage.analysis.execgraph.netmatch import _hull

    rng = np.random.default_rng(9)
    x, y = rng.uniform(0, 10, 3000), rng.exponential(1.0, 3000)
    for lower, sign in ((True, 1), (False, -1)):
        h = _hull(x, y, lower)
        hx, hy = x[h], y[h]
        assert np.all(np.diff(hx) > 0) and len(h) < 60
        # the piecewise-linear hull lies below (above) every point between its ends
        assert np.all(sign * (y - np.interp(x, hx, hy)) >= -1e-12)
        # and it is convex (concave)
        slopes = np.diff(hy) / np.diff(hx)
        assert np.all(sign * np.diff(slopes) > 0)


@needs_bt2
def test_a_message_from_another_host_received_by_a_running_thread_is_followed_back(tmp_path):
    # php-fpm (500) waits from 10; another web thread (510) sends a query at 20; on the database
    # host a thread (602) that is running receives it at 60 (in its own context: no wake-up),
    # computes, and sends the reply at 540 that wakes php-fpm. Nothing of 602 is seen before the
    # receive: php-fpm's wait is 510's work up to the send, the query's flight, then 602's work
    web = [
        sw(0, 0, 0, 500, 0), ev(5, 0, "syscall_entry_recvfrom", fd=9), sw(10, 0, 500, 0, 1),
        sw(1, 1, 0, 510, 0),
        ev(20, 1, "net_dev_queue", skbaddr=0xA100, len=254, name="eth0", network_header=QUERY),
        ev(578, 0, "irq_softirq_entry", vec=3),
        ev(580, 0, "net_if_receive_skb", skbaddr=0xB200, len=1440, name="eth0", network_header=REPLY),
        waking(585, 0, 500), ev(590, 0, "irq_softirq_exit", vec=3),
        sw(595, 0, 0, 500, 0), ev(600, 0, "syscall_exit_recvfrom", ret=1400), sw(700, 0, 500, 0, 1),
        sw(650, 1, 510, 0, 1),
    ]
    db = [(ts + SKEW, cpu, name, f) for ts, cpu, name, f in [
        ev(60, 0, "net_if_receive_skb", skbaddr=0xC300, len=240, name="eth0", network_header=QUERY),
        ev(540, 0, "net_dev_queue", skbaddr=0xD400, len=1454, name="eth0", network_header=REPLY),
        sw(600, 0, 602, 0, 1),
    ]]
    graphs, builder = graphs_of(tmp_path, {"web": web, "db": db})
    assert graphs["web"].clocks["db"].offset_ns == pytest.approx(SKEW, abs=1)
    arr = graphs["db"].arrivals
    assert arr.tid.tolist() == [602] and arr.sender.tolist() == [510] and arr.hosts[int(arr.host[0])] == "web"
    assert web_path(graphs) == [
        ("web", 500, 0, 5, "RU"), ("web", 500, 5, 10, "RS"), ("web", 510, 10, 20, "RU"), ("db", 602, 20, 60, "BN"),
        ("db", 602, 60, 540, "RU"), ("web", 500, 540, 585, "BN"), ("web", 500, 585, 595, "BP"),
        ("web", 500, 595, 600, "RS"), ("web", 500, 600, 700, "RU"),
    ]


def test_a_packet_a_thread_sent_itself_does_not_make_it_its_own_waker():
    # loopback links on one host: a wait ended by a packet of another thread follows that thread
    # (FOLLOW_NET); a wait ended by the thread's own packet stays a network wait. The owner of
    # each interval comes from the thread row bounds (thread i owns rows hi[i-1]:hi[i])
    from perftriage.analysis.execgraph.builder import _network_links
    from perftriage.analysis.execgraph.graph import BLOCKED, FOLLOW_NET, RU, ST_BN

    tids, hi = np.array([100, 200, 300]), np.array([2, 4, 5])
    state = np.array([RU, BLOCKED, RU, BLOCKED, BLOCKED], np.int8)
    iv_block = np.full(5, ST_BN, np.int8)
    iv_waker = np.full(5, -1, np.int32)
    wake = np.array([-1, 7, -1, 8, 9], np.int32)
    links = {7: (100, 5), 8: (100, 9), 9: (200, 11)}  # wake-up -> (sending thread, time sent)
    out = _network_links(tids, hi, state, iv_block, iv_waker, wake, links)
    assert out == {3: 9, 4: 11}
    assert iv_block.tolist()[1] == ST_BN and iv_waker[1] == -1  # its own packet
    assert iv_block[3] == FOLLOW_NET and iv_waker[3] == 100 and iv_block[4] == FOLLOW_NET and iv_waker[4] == 200
