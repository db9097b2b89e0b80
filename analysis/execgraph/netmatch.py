"""Packets between traced hosts: who sent the packet that woke a thread on another host, and
how the hosts' clocks relate.

LTTng's ``net_dev_queue`` (a packet queued for sending) and ``net_if_receive_skb`` (a packet
received) carry the packet's IP header and, for TCP, its TCP header. A packet is known by those
headers: addresses, ports, sequence and acknowledgement numbers, flags and length for TCP;
addresses, IP id, total length and protocol otherwise (e.g. UDP). Trace Compass matches TCP
packets by sequence, acknowledgement and flags; we add the addresses and ports (two connections
whose numbers coincide) and the length (a pure ACK and the data segment after it share their
numbers). Where offloads split a send (TSO) or merge receives (GRO), no header is equal on both
sides: a wake-up is then matched to the send of the same connection and acknowledgement whose
data covers the received sequence number.

Clocks: each host's trace has its own clock; NTP keeps them close but a packet's flight on a
LAN (tens of microseconds) is shorter than NTP's error. Every matched packet bounds the offset:
it cannot arrive before it was sent. With packets both ways the bounds close from both sides;
the fit is the line t_B = t_A + offset + drift * (t_A - t_ref) that leaves the largest margin
to every bound (a linear programme: the convex-hull method of Duda et al. and Trace Compass,
solved as the maximal-margin line). With packets one way only, the line hugs the bounds from
one side (as if the fastest packets took no time) and the fit says so.

Memory: every packet with a header is kept as a few integers until the end of the trace
(~40 bytes per packet), so that sends and receives can be matched whatever the clock offsets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perftriage.analysis.columns import MISSING

NH = "network_header."
TH = NH + "transport_header."
PACKET_FIELDS = (NH + "saddr", NH + "daddr", NH + "protocol", NH + "id", NH + "tot_len", NH + "ihl",
                 TH + "source_port", TH + "dest_port", TH + "seq", TH + "ack_seq", TH + "flags", TH + "data_offset")
MAX_FLIGHT_NS = 1_000_000_000  # a receive more than this after a send of the same key: another packet
NO_KEY = 0


def _hash(*cols) -> np.ndarray:
    """A 64-bit hash of equal-length integer columns, row by row (splitmix-style steps,
    vectorised, wrapping); never NO_KEY."""
    h = np.zeros(len(cols[0]), np.uint64)
    with np.errstate(over="ignore"):
        for v in cols:
            h = (h ^ np.asarray(v).astype(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
            h ^= h >> np.uint64(29)
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(32)
    key = h.view(np.int64)
    return np.where(key == NO_KEY, 1, key)


def _columns(fields: dict, rows: np.ndarray):
    """col(name): the header field ``name`` at ``rows`` (MISSING where absent)."""
    n = len(rows)

    def col(name):
        c = fields.get(name)
        return c[rows] if c is not None else np.full(n, MISSING, np.int64)

    return col


def packet_keys(fields: dict, rows: np.ndarray) -> np.ndarray:
    """The identity of each packet at ``rows`` of a chunk (int64; NO_KEY where the event has
    no IP header). Equal for the send on one host and the receive on another."""
    if fields.get(PACKET_FIELDS[0]) is None or len(rows) == 0:
        return np.full(len(rows), NO_KEY, np.int64)
    col = _columns(fields, rows)
    sa = col(NH + "saddr")
    tcp = col(TH + "source_port") != MISSING
    key = _hash(sa, col(NH + "daddr"),
                np.where(tcp, col(TH + "source_port"), col(NH + "id")),
                np.where(tcp, col(TH + "dest_port"), col(NH + "tot_len")),
                np.where(tcp, col(TH + "seq"), col(NH + "protocol")),
                np.where(tcp, col(TH + "ack_seq"), 0),
                np.where(tcp, col(TH + "flags"), 1),
                np.where(tcp, col(NH + "tot_len"), 2))  # a pure ACK and the data after it share seq and ack
    return np.where(sa != MISSING, key, NO_KEY)


def tcp_segments(fields: dict, rows: np.ndarray) -> dict:
    """For TCP packets at ``rows``: the connection and direction (``flow``, NO_KEY for other
    packets), ``seq``, ``ack`` and the payload length ``plen`` (-1 unknown: a segmentation
    offload's super-packet may say 0). A send the NIC splits (TSO) or a receive the kernel
    merges (GRO) keeps its connection and acknowledgement; its data is a range of sequence
    numbers: what :func:`match` falls back to when no header is equal on both sides."""
    col = _columns(fields, rows)
    sport = col(TH + "source_port")
    tcp = (sport != MISSING) & (col(NH + "saddr") != MISSING)
    flow = _hash(col(NH + "saddr"), col(NH + "daddr"), sport, col(TH + "dest_port"))
    tot, ihl, doff = col(NH + "tot_len"), col(NH + "ihl"), col(TH + "data_offset")
    plen = np.where((tot > 0) & (ihl != MISSING) & (doff != MISSING), tot - 4 * ihl - 4 * doff, -1)
    return {"flow": np.where(tcp, flow, NO_KEY), "seq": col(TH + "seq"), "ack": col(TH + "ack_seq"), "plen": plen}


class PacketLog:
    """Packets with a header, gathered chunk by chunk: sends (key, time, host, sender tid) and
    receives (key, time, host); ``wakes`` maps a wake-up number to the receive that caused it."""

    def __init__(self):
        self._send = {k: [] for k in ("key", "ts", "host", "tid", "flow", "seq", "ack", "plen")}
        self._recv = {k: [] for k in ("key", "ts", "host", "flow", "seq", "ack")}
        self.n_recv = 0
        self._wakes: list = []  # (wake-up numbers, receive numbers) per chunk
        self._arrivals: list = []  # (arrival numbers, receive numbers): packets received while running

    def add_wakes(self, wake_ids, recv_idx) -> None:
        """Wake-ups that delivered a logged receive (not matched on their own host)."""
        if len(wake_ids):
            self._wakes.append((np.asarray(wake_ids, np.int64), np.asarray(recv_idx, np.int64)))

    def add_arrivals(self, arrival_ids, recv_idx) -> None:
        """Packets received by a running task (not matched on their own host)."""
        if len(arrival_ids):
            self._arrivals.append((np.asarray(arrival_ids, np.int64), np.asarray(recv_idx, np.int64)))

    @staticmethod
    def _pairs(parts) -> tuple[np.ndarray, np.ndarray]:
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate([w for w, _ in parts]), np.concatenate([r for _, r in parts])

    def wakes(self) -> tuple[np.ndarray, np.ndarray]:
        return self._pairs(self._wakes)

    def arrivals(self) -> tuple[np.ndarray, np.ndarray]:
        return self._pairs(self._arrivals)

    def add_sends(self, key, ts, host: int, tid, seg: dict | None = None) -> None:
        m = key != NO_KEY
        k = int(m.sum())
        if k:
            seg = seg or {}
            for name, v in (("key", key[m]), ("ts", ts[m]), ("host", np.full(k, host, np.int16)),
                            ("tid", tid[m].astype(np.int32))):
                self._send[name].append(v)
            for name in ("flow", "seq", "ack", "plen"):
                self._send[name].append(seg[name][m] if name in seg else np.full(k, NO_KEY if name == "flow" else -1))

    def add_receives(self, key, ts, host: int, seg: dict | None = None) -> np.ndarray:
        """Stores the keyed receives; returns each row's receive number (-1: no key)."""
        m = key != NO_KEY
        idx = np.full(len(key), -1, np.int64)
        k = int(m.sum())
        if k:
            idx[m] = self.n_recv + np.arange(k)
            self.n_recv += k
            seg = seg or {}
            for name, v in (("key", key[m]), ("ts", ts[m]), ("host", np.full(k, host, np.int16))):
                self._recv[name].append(v)
            for name in ("flow", "seq", "ack"):
                self._recv[name].append(seg[name][m] if name in seg else np.full(k, NO_KEY if name == "flow" else -1))
        return idx

    @staticmethod
    def _cat(parts: dict, dtypes: dict) -> dict:
        return {k: np.concatenate(v) if v else np.zeros(0, dtypes[k]) for k, v in parts.items()}

    def sends(self) -> dict:
        return self._cat(self._send, dict(key=np.int64, ts=np.int64, host=np.int16, tid=np.int32, flow=np.int64,
                                          seq=np.int64, ack=np.int64, plen=np.int64))

    def receives(self) -> dict:
        return self._cat(self._recv, dict(key=np.int64, ts=np.int64, host=np.int16, flow=np.int64, seq=np.int64,
                                          ack=np.int64))


@dataclass(frozen=True)
class ClockFit:
    """Time on host ``b`` from time on host ``a``: t_b = t_a + offset + drift * (t_a - t_ref)."""

    a: int
    b: int
    offset_ns: float
    drift: float  # dimensionless (1e-6 = 1 ppm)
    t_ref: int
    pairs_ab: int  # matched packets a -> b
    pairs_ba: int
    margin_ns: float  # smallest slack to any packet's bound (negative: no line satisfies them all)
    one_way: bool  # packets one way only: the offset assumes the fastest packet took no time

    def shift(self, t_a: int) -> int:
        """Nanoseconds to add to a time of host a to get the same instant on host b."""
        return int(self.shifts(np.array([t_a], np.int64))[0])

    def shifts(self, t_a: np.ndarray) -> np.ndarray:
        """:meth:`shift` of many times at once."""
        return np.round(self.offset_ns + self.drift * (t_a - self.t_ref)).astype(np.int64)

    def inverse(self) -> "ClockFit":
        # t_a = t_b - offset - drift (t_a - t_ref), to first order in drift
        return ClockFit(self.b, self.a, -self.offset_ns, -self.drift, self.t_ref + int(self.offset_ns),
                        self.pairs_ba, self.pairs_ab, self.margin_ns, self.one_way)


def _hull(x: np.ndarray, y: np.ndarray, lower: bool) -> np.ndarray:
    """Indices of the lower (or upper) convex hull of the points (x, y), by the monotone chain:
    the only bounds a line below (above) every point can touch. One pass, O(n log n)."""
    if len(x) <= 2:
        return np.arange(len(x))
    sign = 1.0 if lower else -1.0
    order = np.lexsort((sign * y, x))
    out: list[int] = []
    xs, ys = x.tolist(), (sign * y).tolist()
    for i in order.tolist():
        while len(out) >= 2:
            o, a_ = out[-2], out[-1]
            # keep a_ only if o -> a_ -> i turns left (counter-clockwise)
            if (xs[a_] - xs[o]) * (ys[i] - ys[o]) - (ys[a_] - ys[o]) * (xs[i] - xs[o]) > 0:
                break
            out.pop()
        out.append(i)
    return np.array(out, np.int64)


def fit_clock(a: int, b: int, send_a, recv_b, send_b, recv_a) -> ClockFit | None:
    """The line mapping host a's clock to host b's from packets a -> b (sent at ``send_a``,
    received at ``recv_b``) and b -> a; None without any packet."""
    send_a, recv_b = np.asarray(send_a, np.int64), np.asarray(recv_b, np.int64)
    send_b, recv_a = np.asarray(send_b, np.int64), np.asarray(recv_a, np.int64)
    if len(send_a) + len(send_b) == 0:
        return None
    t_ref = int(np.median(np.concatenate([send_a, recv_a])))
    from scipy.optimize import linprog  # noqa: PLC0415 (only when two hosts exchanged packets)

    # variables: offset (us), drift (us per s), margin (us); times as seconds from t_ref
    xa = (send_a - t_ref) / 1e9
    xb = (recv_a - t_ref) / 1e9
    drift_bounds = (-500, 500)  # ppm: NTP-disciplined or free-running quartz stays well inside
    xs = np.concatenate([xa, xb])
    if xs.max() - xs.min() < 1.0:  # packets over less than a second cannot tell a drift: none
        drift_bounds = (0, 0)
    # only the hulls can bind a line: a -> b bounds from above (lower hull), b -> a from below
    # (upper hull); the linear programme then has tens of rows, not one per packet
    y_ab, y_ba = (recv_b - send_a) / 1e3, (send_b - recv_a) / 1e3
    x_mean = float((xa if len(send_a) else xb).mean())  # where a one-way fit hugs its bounds
    ha, hb = _hull(xa, y_ab, True), _hull(xb, y_ba, False)
    xa, y_ab, xb, y_ba = xa[ha], y_ab[ha], xb[hb], y_ba[hb]
    if len(send_a) == 0 or len(send_b) == 0:
        # one way: the line as close as it can be to the packets' bounds, all on one side of it
        # (as if the fastest packets took no time): a -> b: offset + drift x <= recv_b - send_a
        x = xa if len(send_a) else xb
        bound = y_ab if len(send_a) else y_ba
        sign = 1.0 if len(send_a) else -1.0
        res = linprog(c=[-sign, -sign * x_mean, 0],
                      A_ub=sign * np.column_stack([np.ones_like(x), x, np.zeros_like(x)]), b_ub=sign * bound,
                      bounds=[(None, None), drift_bounds, (0, 0)], method="highs")
        off_us, drift_ppm = (res.x[0], res.x[1]) if res.status == 0 else (float(bound.min() if sign > 0 else bound.max()), 0.0)
        return ClockFit(a, b, off_us * 1e3, drift_ppm * 1e-6, t_ref, len(send_a), len(send_b), 0.0, True)
    # both ways: the line with the largest margin to every bound
    # a -> b: recv_b - send_a - offset - drift * xa >= margin
    # b -> a: recv_a + offset + drift * xb - send_b >= margin
    A = np.concatenate([np.column_stack([np.ones_like(xa), xa, np.ones_like(xa)]),
                        np.column_stack([-np.ones_like(xb), -xb, np.ones_like(xb)])])
    rhs = np.concatenate([y_ab, -y_ba])
    res = linprog(c=[0, 0, -1], A_ub=A, b_ub=rhs, bounds=[(None, None), drift_bounds, (None, None)],
                  method="highs")
    if res.status != 0:  # a degenerate geometry: fall back to the middle of the offset bounds
        lo, hi = float(y_ba.max()) * 1e3, float(y_ab.min()) * 1e3
        return ClockFit(a, b, (lo + hi) / 2, 0.0, t_ref, len(send_a), len(send_b), (hi - lo) / 2, False)
    off_us, drift_us_per_s, margin_us = res.x
    return ClockFit(a, b, off_us * 1e3, drift_us_per_s * 1e-6, t_ref, len(send_a), len(send_b),
                    margin_us * 1e3, False)


@dataclass
class RemoteWakes:
    """Wake-ups caused by a packet a task of another traced host sent, sorted by wake-up
    number: the sender's host (code), tid and send time on its own clock. Arrays, not one
    Python object per wake-up: a busy pair of hosts has one per request and round trip."""

    wake: np.ndarray
    host: np.ndarray
    tid: np.ndarray
    t: np.ndarray

    def __len__(self) -> int:
        return len(self.wake)

    @classmethod
    def none(cls) -> "RemoteWakes":
        e = np.zeros(0, np.int64)
        return cls(e, e.astype(np.int16), e.astype(np.int32), e)

    def as_dict(self) -> dict:
        return {int(w): (int(h), int(d), int(t)) for w, h, d, t in zip(self.wake, self.host, self.tid, self.t)}


@dataclass
class Matches:
    """What the packets tell: per host pair, the clock fit; per wake-up caused by a packet from
    another host, (sender's host, sender's tid, send time on the sender's clock)."""

    fits: dict  # (host a, host b) -> ClockFit, both orders
    remote: RemoteWakes
    matched: int  # packets matched between hosts
    unmatched_wakes: int  # wake-ups by a packet with a header that no traced host sent
    by_range: int = 0  # wake-ups matched by TCP sequence range (offloads split or merged the packet)
    arrivals: RemoteWakes | None = None  # the same for packets received by a running task (by arrival number)


def match(log: PacketLog) -> Matches:
    """Pair sends and receives of one packet on two different hosts, fit the clocks, and
    resolve every packet wake-up to its sender."""
    s, r = log.sends(), log.receives()
    wake_ids, wake_recv = log.wakes()
    arr_ids, arr_recv = log.arrivals()
    n_wakes = len(wake_ids)
    # arrivals are matched like wake-ups, under negative numbers, and told apart at the end
    wake_ids = np.concatenate([wake_ids, -1 - arr_ids])
    wake_recv = np.concatenate([wake_recv, arr_recv])
    none = RemoteWakes.none()
    if len(s["key"]) == 0 or len(r["key"]) == 0:
        return Matches({}, none, 0, n_wakes, arrivals=none)
    # unambiguous pairs first (a key sent once and received once, on different hosts): the clocks
    sk, sc = np.unique(s["key"], return_counts=True)
    rk, rc = np.unique(r["key"], return_counts=True)
    once = np.intersect1d(sk[sc == 1], rk[rc == 1], assume_unique=True)
    si = np.flatnonzero(np.isin(s["key"], once))
    ri = np.flatnonzero(np.isin(r["key"], once))
    si = si[np.argsort(s["key"][si], kind="stable")]
    ri = ri[np.argsort(r["key"][ri], kind="stable")]
    cross = s["host"][si] != r["host"][ri]
    si, ri = si[cross], ri[cross]
    hosts = sorted(set(s["host"][si].tolist()) | set(r["host"][ri].tolist()))
    fits: dict = {}
    for i, a in enumerate(hosts):
        for b in hosts[i + 1:]:
            ab = (s["host"][si] == a) & (r["host"][ri] == b)
            ba = (s["host"][si] == b) & (r["host"][ri] == a)
            fit = fit_clock(a, b, s["ts"][si[ab]], r["ts"][ri[ab]], s["ts"][si[ba]], r["ts"][ri[ba]])
            if fit is not None:
                fits[(a, b)] = fit
                fits[(b, a)] = fit.inverse()
    if not fits:
        return Matches({}, none, 0, n_wakes, arrivals=none)
    # every wake-up by a packet: the send of its key on another host nearest before the receive
    # (on the receiver's clock), within MAX_FLIGHT_NS; failing that, for TCP, the send of the
    # same connection and acknowledgement whose data covers the received sequence number (the
    # NIC split it, or the receiver merged several)
    order = np.lexsort((s["ts"], s["key"]))
    skeys = s["key"][order]
    fa = _hash(s["flow"], s["ack"])  # connection + acknowledgement: the sequence-range fallback
    fa_order = np.argsort(fa, kind="stable")
    fa_sorted = fa[fa_order]
    r_fa = _hash(r["flow"], r["ack"])
    found: list = []  # (wake, host, tid, send time)
    unmatched = 0
    by_range = 0
    # the common case at once: the key sent exactly once, on another host, within the flight
    # bounds; the rest (retransmissions, offloads, no match) one by one below
    key_r, t_r_all, h_r_all = r["key"][wake_recv], r["ts"][wake_recv], r["host"][wake_recv]
    lo = np.searchsorted(skeys, key_r, "left")
    one = np.searchsorted(skeys, key_r, "right") - lo == 1
    j = order[np.minimum(lo, max(len(order) - 1, 0))]
    h_s = s["host"][j]
    flight = np.full(len(wake_ids), np.iinfo(np.int64).max)
    for (ha, hb), fit in fits.items():
        m = one & (h_s == ha) & (h_r_all == hb)
        if m.any():
            t_s = s["ts"][j[m]]
            flight[m] = t_r_all[m] - (t_s + fit.shifts(t_s))
    quick = one & (flight >= -MAX_FLIGHT_NS // 1000) & (flight <= MAX_FLIGHT_NS)
    ok = quick & (s["tid"][j] > 0)
    unmatched += int((quick & ~ok & (wake_ids >= 0)).sum())
    if ok.any():
        found.extend(zip(wake_ids[ok].tolist(), h_s[ok].tolist(), s["tid"][j[ok]].tolist(), s["ts"][j[ok]].tolist()))
    for wake, ridx in zip(wake_ids[~quick].tolist(), wake_recv[~quick].tolist()):
        key, t_r, h_r = int(r["key"][ridx]), int(r["ts"][ridx]), int(r["host"][ridx])
        lo, hi = np.searchsorted(skeys, key, "left"), np.searchsorted(skeys, key, "right")
        best = _nearest_send(s, fits, order[lo:hi], h_r, t_r)
        if best is None and r["flow"][ridx] != NO_KEY:
            lo, hi = np.searchsorted(fa_sorted, r_fa[ridx], "left"), np.searchsorted(fa_sorted, r_fa[ridx], "right")
            cand = fa_order[lo:hi]
            seq_r = int(r["seq"][ridx])
            if len(cand):
                seq, plen = s["seq"][cand], s["plen"][cand]
                off = (seq_r - seq) % (1 << 32)  # sequence numbers wrap
                cover = (off < np.where(plen > 0, plen, 1 << 16)) & (s["flow"][cand] == r["flow"][ridx])
                best = _nearest_send(s, fits, cand[cover], h_r, t_r)
                by_range += best is not None
        if best is None or best[2] <= 0:  # not sent by a known task (e.g. from an interrupt on idle)
            unmatched += wake >= 0
        else:
            found.append((wake, *best[1:]))
    found.sort()
    a = np.array(found, np.int64).reshape(-1, 4)
    w, arr = a[a[:, 0] >= 0], a[a[:, 0] < 0]
    remote = RemoteWakes(w[:, 0], w[:, 1].astype(np.int16), w[:, 2].astype(np.int32), w[:, 3])
    arr = arr[np.argsort(-1 - arr[:, 0], kind="stable")]
    arrivals = RemoteWakes(-1 - arr[:, 0], arr[:, 1].astype(np.int16), arr[:, 2].astype(np.int32), arr[:, 3])
    return Matches(fits, remote, len(si), unmatched, by_range, arrivals)


def _nearest_send(s: dict, fits: dict, cand, h_r: int, t_r: int):
    """Of the sends ``cand``, the one on another host whose time (on the receiver's clock) is
    nearest the receive, within the flight bounds: (|flight|, host, tid, send time) or None."""
    best = None
    for j in np.asarray(cand).tolist():
        h_s = int(s["host"][j])
        fit = fits.get((h_s, h_r))
        if h_s == h_r or fit is None:
            continue
        t_s = int(s["ts"][j])
        flight = t_r - (t_s + fit.shift(t_s))
        # a little negative: within the fit's error; the nearest send is the packet
        if -MAX_FLIGHT_NS // 1000 <= flight <= MAX_FLIGHT_NS and (best is None or abs(flight) < best[0]):
            best = (abs(flight), h_s, int(s["tid"][j]), t_s)
    return best


def network_notes(graphs: dict) -> list[str]:
    """One line per pair of traced hosts that exchanged packets: the clock fit and how many
    waits the critical paths can follow across (for the report's notes). Of each graph only
    ``clocks`` and ``n_remote_links`` are read (a graph left on a Dask worker has its facts)."""
    out = []
    seen = set()
    for host, g in graphs.items():
        for other, fit in g.clocks.items():
            if (other, host) in seen:
                continue
            seen.add((host, other))
            waits = g.n_remote_links + (graphs[other].n_remote_links if other in graphs else 0)
            how = ("packets one way only: offset as if the fastest took no time" if fit.one_way else
                   f"consistent within {fit.margin_ns / 1e3:.1f} us" if fit.margin_ns >= 0 else
                   f"inconsistent by {-fit.margin_ns / 1e3:.1f} us (packets contradict any line)")
            out.append(f"hosts {host} and {other}: {fit.pairs_ab + fit.pairs_ba:,} packets matched "
                       f"({fit.pairs_ab:,} {host} -> {other}, {fit.pairs_ba:,} back); {other}'s clock is "
                       f"{fit.offset_ns / 1e6:+.3f} ms from {host}'s, drift {fit.drift * 1e6:+.1f} ppm ({how}); "
                       f"{waits:,} waits followed across the two hosts")
    return out
