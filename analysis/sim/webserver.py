"""A traced PHP web server with injected root causes: the request pipeline's ground truth.

The host: N CPUs; Apache prefork workers (one thread per process) accepting connections and
running PHP; a MySQL-like database process with one thread per worker connection (requests
and replies over a local socket); NIC and NVMe interrupts with their softirqs; the 250 Hz tick;
a backup job that forks CPU-bound children now and then.

A normal request: accept4, read the HTTP request, ``ust_php:request_entry``, PHP start-up,
OPcache lock/unlock pairs (fcntl), stats and opens of included files (newfstat, openat, read,
close; rarely a page-cache miss), an anonymous mmap, 1-5 database round trips (sendto +
recvfrom, the database thread woken by the worker and waking it back), rendering, response
writes (net_dev_queue), ``ust_php:request_exit``, the access-log write, close.

Injected causes (per request; rates are parameters):

- ``lock_contention``: an OPcache restart episode; every request starting during it recompiles
  its scripts under the shared-cache lock, hundreds of fcntl lock/unlock pairs holding it for
  0.15-0.6 ms each, and they serialise (the blocked ones are woken by the releasing holder);
- ``connect_retry``: blocking connects to an unavailable backend, refused after seconds, retried
  after a sleep;
- ``write_heavy``: a large response written in hundreds of writes, blocking on a full socket
  buffer until the client's ACKs arrive;
- ``slow_disk``: reads that miss the page cache on a slow device (long block-request completion);
- ``slow_db``: a query whose rows are not in the database's buffer pool: the database thread
  reads them from a slow disk (off by default; on with ``db_host``);
- ``cpu_contention``: a burst of CPU-bound backup children (four per CPU) preempts everything.
  The label goes to every request that ran at least half of its time inside a burst window
  (while at least as many children as CPUs are alive): the request's threads and those it waits
  for then get a fraction of a CPU, whoever started the burst.
"""

from __future__ import annotations

import datetime as _dt
import math
import uuid as _uuid
from dataclasses import asdict, dataclass, field

import numpy as np

from .catalog import CODE, NSLOTS, tcp_header_slots
from .engine import BLOCKED, WAKEUP_FN, Sim, Thread, s64

CAUSES = ("lock_contention", "connect_retry", "write_heavy", "slow_disk", "cpu_contention", "slow_db")
DEFAULT_MIX = {
    "lock_contention": 0.015,
    "connect_retry": 0.01,
    "write_heavy": 0.02,
    "slow_disk": 0.015,
    "cpu_contention": 0.01,
}

MS = 1_000_000
US = 1_000
S = 1_000_000_000

F_SETLK, F_SETLKW = 6, 7
ECONNREFUSED = 111
AF_INET, SOCK_STREAM = 2, 1

PAGES = [
    ("/index.php", "GET", 0.30),
    ("/product.php", "GET", 0.25),
    ("/search.php", "GET", 0.15),
    ("/cart.php", "POST", 0.12),
    ("/checkout.php", "POST", 0.08),
    ("/export.php", "GET", 0.05),
    ("/api/orders.php", "GET", 0.05),
]


@dataclass
class WebServerConfig:
    requests: int = 2000
    cpus: int = 4
    workers: int = 32
    rate: float = 60.0  # requests per second, Poisson arrivals
    seed: int = 1
    mix: dict = field(default_factory=lambda: dict(DEFAULT_MIX))
    start_time: str = "2026-03-02T14:00:00+00:00"
    hostname: str = "web-01"
    db_host: str = ""  # a second traced host for the database ("": the database runs on this host)
    db_cpus: int = 2
    db_clock_offset_ms: float = 0.0  # the database host's clock minus the web host's
    db_clock_drift_ppm: float = 0.0
    net_latency_us: float = 60.0  # median one-way latency between the two hosts
    subnet: int = 10  # the two hosts' addresses: 10.0.SUBNET.21 (web) and .31 (database); pairs of hosts
    # traced together (a fleet) need their own

    def validate(self) -> None:
        if self.requests < 1:
            raise ValueError("requests must be at least 1")
        if not 1 <= self.cpus <= 256:
            raise ValueError("cpus must be in 1..256")
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        if self.rate <= 0:
            raise ValueError("rate must be positive")
        unknown = set(self.mix) - set(CAUSES)
        if unknown:
            raise ValueError(f"unknown causes {sorted(unknown)}; known: {', '.join(CAUSES)}")
        if sum(self.mix.values()) >= 0.5 or any(v < 0 for v in self.mix.values()):
            raise ValueError("cause rates must be >= 0 and sum to less than 0.5")
        if self.db_host and (self.db_host == self.hostname or not 1 <= self.db_cpus <= 64):
            raise ValueError("the database host needs its own name and 1..64 CPUs")
        if self.db_host and not 5 <= self.net_latency_us <= 100_000:
            raise ValueError("net latency must be in 5 us .. 100 ms")
        if not 0 <= self.subnet <= 255:
            raise ValueError("subnet must be in 0..255")

    @property
    def epoch_ns(self) -> int:
        d = _dt.datetime.fromisoformat(self.start_time)
        if d.tzinfo is None:
            d = d.replace(tzinfo=_dt.timezone.utc)
        return int(d.timestamp()) * S


@dataclass
class Request:
    rid: int
    arrival: int
    page: str
    method: str
    querystring: str
    cause: str
    params: dict = field(default_factory=dict)
    tid: int = -1
    pid: int = -1
    start: int = -1
    end: int = -1
    runnable_wait: int = 0
    burst_wait: int = 0  # runnable-wait time while a backup burst was running
    lock_wait: int = 0  # time blocked waiting for the OPcache lock
    collateral: bool = False


class _Lock:
    """The OPcache shared-memory lock (fcntl F_SETLKW / F_SETLK unlock), FIFO hand-off."""

    def __init__(self):
        self.holder: Thread | None = None
        self.waiters: list[Thread] = []


class _DbLink:
    """A worker's persistent database connection: one query / one reply at a time."""

    def __init__(self, db_thread: Thread, index: int = 0):
        self.db = db_thread
        self.index = index
        self.query_cost: int | None = None
        self.slow: dict | None = None  # slow_db: the query's rows must be read from disk
        self.reply = False
        self.worker_waiting: Thread | None = None
        self.db_waiting = False
        # TCP between two hosts: the worker's and the database's next sequence numbers
        self.seq_w = 1_000_000 + 7919 * index
        self.seq_d = 500_000_000 + 104_729 * index

    def header(self, to_db: bool, nbytes: int, web_ip: int, db_ip: int) -> tuple:
        """The TCP/IP header of the next query (to_db) or reply, as record slots."""
        port = 40000 + self.index
        if to_db:
            h = tcp_header_slots(web_ip, db_ip, port, 3306, self.seq_w, self.seq_d, 0x18, nbytes + 40)
            self.seq_w = (self.seq_w + nbytes) & 0xFFFFFFFF
        else:
            h = tcp_header_slots(db_ip, web_ip, 3306, port, self.seq_d, self.seq_w, 0x18, nbytes + 40)
            self.seq_d = (self.seq_d + nbytes) & 0xFFFFFFFF
        return h


class WebServerSim:
    def __init__(self, cfg: WebServerConfig):
        cfg.validate()
        self.cfg = cfg
        self.rng = np.random.default_rng(cfg.seed)
        n_db = cfg.db_cpus if cfg.db_host else 0
        self.sim = Sim(cfg.cpus + n_db, self.rng)
        self.base = cfg.epoch_ns  # simulation time 0 on the trace clock
        s = self.sim.s
        self.eth0 = s("eth0")
        self.nic_irq_names = [s(f"eth0-TxRx-{i}") for i in range(cfg.cpus)]
        self.nvme_irq_names = [s(f"nvme0q{i + 1}") for i in range(cfg.cpus)]
        # a database host: its CPUs follow the web host's, numbered from 0 on its own trace
        self.web_cpus = tuple(range(cfg.cpus))
        self.db_cpu_ids = tuple(range(cfg.cpus, cfg.cpus + n_db)) or self.web_cpus
        self.nic_irq_names += [s(f"eth0-TxRx-{i}") for i in range(n_db)]
        self.nvme_irq_names += [s(f"nvme0q{i + 1}") for i in range(n_db)]
        self.web_ip, self.db_ip = 0x0A000015 | cfg.subnet << 8, 0x0A00001F | cfg.subnet << 8  # 10.0.10.21, 10.0.10.31
        self._skb_db = s64(0xFFFF9A2B40000000)  # the database host's send buffers
        self._skb_rx = s64(0xFFFF9A2B70000000)  # receive buffers of packets between the hosts
        self.requests: list[Request] = []
        self.backlog: list[Request] = []
        self.idle_workers: list[Thread] = []
        self.lock = _Lock()
        self.done = 0
        self.bursts: list[list[int]] = []  # [start, end] of backup bursts: first child runs .. last exits
        self._burst_active = 0
        self._next_tid = 5000
        self._skb = s64(0xFFFF8D0F6A000000)
        self.sim.on_dispatch = self._on_dispatch

    # -- set-up -----------------------------------------------------------------------------

    def _tid(self) -> int:
        self._next_tid += 1
        return self._next_tid

    def build(self) -> None:
        cfg, sim = self.cfg, self.sim
        s = sim.s
        rng = self.rng
        self.requests = self._plan_requests()
        # database: one thread per worker connection
        db_pid = 1400
        self.db_threads = []
        self.links = []
        for i in range(cfg.workers):
            tid = db_pid if i == 0 else db_pid + 1 + i
            th = Thread(tid, db_pid, s("mysqld"), "mysqld", prio=120)
            link = _DbLink(th, i)
            th.prog = self._db_program(th, link)
            if cfg.db_host:
                th.allowed = self.db_cpu_ids
                sim.add_thread(th, cpu=self.db_cpu_ids[i % len(self.db_cpu_ids)])
            else:
                sim.add_thread(th, cpu=i % cfg.cpus)
            self.db_threads.append(th)
            self.links.append(link)
        # apache prefork workers
        self.workers = []
        for i in range(cfg.workers):
            tid = 2100 + i
            th = Thread(tid, tid, s("apache2"), "apache2")
            th.prog = self._worker_program(th, self.links[i])
            th.allowed = self.web_cpus if cfg.db_host else None
            sim.add_thread(th, cpu=i % cfg.cpus)
            self.workers.append(th)
        # the backup job's parent
        self.backup = Thread(1900, 1900, s("backup.sh"), "backup.sh")
        self.backup.prog = self._backup_program(self.backup)
        self.backup.allowed = self.web_cpus if cfg.db_host else None
        sim.add_thread(self.backup, cpu=cfg.cpus - 1)
        self._statedump(0)
        t = 200 * US
        for th in self.db_threads + self.workers + [self.backup]:
            sim.start(th, t)
            t += int(rng.integers(20, 80)) * US
        last_arrival = self.requests[-1].arrival
        for req in self.requests:
            sim.at(req.arrival, self._arrive, req)
        self._end_guard = last_arrival + 120 * S
        sim.start_ticks(0, self._end_guard)

    def _statedump(self, t: int) -> None:
        """Each traced host's statedump, on its first CPU, of the threads that live there."""
        sim = self.sim
        hosts = [(self.web_cpus, set(self.web_cpus))]
        if self.cfg.db_host:
            hosts.append((self.db_cpu_ids, set(self.db_cpu_ids)))
        for cpus, ids in hosts:
            first = sim.cpus[cpus[0]]
            tt = sim.emit(first, t + 1000, CODE["lttng_statedump_start"])
            entries = [(0, 0, 0, sim.s("swapper/0"), 6, 0)]
            for th in list(sim.threads.values()):
                if len(hosts) > 1 and th.cpu not in ids:
                    continue
                ppid = 1 if th.pid == th.tid else th.pid
                # 5 = WAIT (sleeping); the CPU as the host numbers it
                entries.append((th.tid, th.pid, ppid, th.comm, 5, th.cpu - cpus[0]))
            for e in entries:
                tt = sim.emit(first, tt + 700, CODE["lttng_statedump_process_state"], *e)
            sim.emit(first, tt + 900, CODE["lttng_statedump_end"])

    def _plan_requests(self) -> list[Request]:
        cfg, rng = self.cfg, self.rng
        n = cfg.requests
        gaps = rng.exponential(S / cfg.rate, n)
        arrivals = (5 * MS + np.cumsum(gaps)).astype(np.int64)
        pages = rng.choice(len(PAGES), n, p=np.array([p[2] for p in PAGES]) / sum(p[2] for p in PAGES))
        u = rng.random(n)
        causes = np.full(n, "normal", dtype=object)
        # per-request causes (not lock contention / cpu contention: those come in episodes)
        edges = 0.0
        for cause in ("connect_retry", "write_heavy", "slow_disk", "slow_db"):
            rate = cfg.mix.get(cause, 0.0)
            causes[(u >= edges) & (u < edges + rate)] = cause
            edges += rate
        # OPcache restart episodes: each labels the requests that start during it
        lock_rate = cfg.mix.get("lock_contention", 0.0)
        if lock_rate > 0:
            mean_window = 0.14 * S
            per_episode = max(1.0, cfg.rate * mean_window / S)
            p_start = lock_rate / per_episode
            i = 0
            while i < n:
                if causes[i] == "normal" and rng.random() < p_start:
                    window = int(rng.uniform(0.08, 0.20) * S)
                    j = i
                    while j < n and arrivals[j] < arrivals[i] + window:
                        if causes[j] == "normal":
                            causes[j] = "lock_contention"
                        j += 1
                    i = j
                else:
                    i += 1
        # backup bursts (the label is given later, by measured effect)
        cpu_rate = cfg.mix.get("cpu_contention", 0.0)
        self._burst_at: set[int] = set()
        if cpu_rate > 0:
            per_burst = max(1.0, cfg.rate * 0.45)  # requests running mostly inside a burst, roughly
            p_burst = cpu_rate / per_burst
            for i in np.flatnonzero(rng.random(n) < p_burst):
                self._burst_at.add(int(i))
        reqs = []
        for i in range(n):
            page, method, _ = PAGES[pages[i]]
            cause = str(causes[i])
            if cause == "write_heavy":
                page, method = "/export.php", "GET"
            elif cause == "connect_retry":
                page, method = "/checkout.php", "POST"
            qs = f"id={int(rng.integers(1, 50000))}&rid={i}"
            reqs.append(Request(i, int(arrivals[i]), page, method, qs, cause, self._params(cause)))
        return reqs

    def _params(self, cause: str) -> dict:
        rng = self.rng
        if cause == "lock_contention":
            return {"lock_pairs": int(rng.integers(120, 420)), "hold_us": round(float(rng.uniform(150, 600)), 1)}
        if cause == "connect_retry":
            return {"attempts": int(rng.integers(3, 7)), "refused_after_ms": int(rng.integers(2200, 4200)),
                    "backoff_ms": int(rng.integers(100, 400))}
        if cause == "write_heavy":
            return {"writes": int(rng.integers(120, 360)), "chunk_kb": int(rng.choice([16, 32, 64])),
                    "ack_wait_ms": round(float(rng.uniform(4, 14)), 2)}
        if cause == "slow_disk":
            return {"reads": int(rng.integers(2, 6)), "latency_ms": int(rng.integers(90, 420))}
        if cause == "slow_db":
            return {"reads": int(rng.integers(2, 5)), "latency_ms": int(rng.integers(40, 160))}
        return {}

    # -- arrivals, accounting ---------------------------------------------------------------

    def _arrive(self, t: int, req: Request) -> None:
        sim = self.sim
        nic = req.rid % self.cfg.cpus
        self._skb += 0x1100
        if req.rid in self._burst_at:
            sim.at(t, self._burst, req.rid)

        def on_receive(cpu, t):
            if self.idle_workers:
                w = self.idle_workers.pop(0)
                return sim.wake(w, cpu, t, req)
            self.backlog.append(req)
            return t

        sim.packet_arrival(t, nic, 30 + nic, self.nic_irq_names[nic], self.eth0, self._skb, 74 + 420, on_receive)

    def _on_dispatch(self, th: Thread, waited: int, t: int) -> None:
        req = th.req
        if req is not None and waited > 0:
            req.runnable_wait += waited
            if self._burst_active:
                req.burst_wait += waited

    # -- programs ---------------------------------------------------------------------------

    def _syscall(self, name: str, entry: tuple, ret: int, ret_slots: tuple = (), kernel_ns: int | None = None):
        """entry event, kernel time, exit event (no blocking)."""
        sim = self.sim
        yield ("emit", CODE["syscall_entry_" + name], *entry)
        yield ("cpu", kernel_ns if kernel_ns is not None else sim.jitter(1_500, 6_000))
        yield ("emit", CODE["syscall_exit_" + name], ret, *ret_slots)

    def _compute(self, ns: float):
        yield ("cpu", max(1_000, int(ns)))

    def _worker_program(self, th: Thread, link: _DbLink):
        sim = self.sim
        s = sim.s
        client_fd, listen_fd, log_fd, lock_fd, db_fd = 10, 4, 7, 8, 9
        while True:
            yield ("emit", CODE["syscall_entry_accept4"], listen_fd, 0x7FFC2A10, 16, 0x80800)
            if self.backlog:
                req = self.backlog.pop(0)
                yield ("cpu", sim.jitter(3_000, 8_000))
            else:
                self.idle_workers.append(th)
                req = yield ("block", 1, _arm_nothing)
                yield ("cpu", sim.jitter(2_000, 5_000))
            yield ("emit", CODE["syscall_exit_accept4"], client_fd, 16, AF_INET, 40000 + req.rid % 20000,
                   s("\x0a\x00\x07\x15"))
            yield from self._syscall("read", (client_fd, 8192), 420 + len(req.page), (0x55D0C8A3E000,))
            th.req = req
            req.tid, req.pid = th.tid, th.pid
            path = s("/var/www/html" + req.page)
            uri, method, qs = s(req.page), s(req.method), s(req.querystring)
            yield ("ust", CODE["ust_php:request_entry"], path, uri, method, qs)
            req.start = sim.now
            yield from self._request_body(th, req, link, client_fd, lock_fd, db_fd)
            yield ("ust", CODE["ust_php:request_exit"], path, uri, method, qs)
            req.end = sim.now  # refined from the recorded events by the sample writer
            th.req = None
            yield from self._syscall("write", (log_fd, 0x55D0C8A40000, 180), 180)
            yield from self._syscall("close", (client_fd,), 0)
            self.done += 1
            if self.done == len(self.requests):
                self._finish()

    def _finish(self) -> None:
        # stop the clock soon after the last request: ticks end, threads stay blocked
        self._end_guard = self.sim.now + 20 * MS
        self.sim.at(self._end_guard, lambda t: None)

    def _request_body(self, th, req: Request, link: _DbLink, client_fd, lock_fd, db_fd):
        sim, rng = self.sim, self.rng
        s = sim.s
        cause = req.cause
        p = req.params
        yield from self._compute(rng.lognormal(math.log(350 * US), 0.4))
        # OPcache: every request takes and drops its reader lock (a byte range of its own that
        # never conflicts); during a restart, requests that recompile their scripts take the
        # shared write lock around each one, and serialise on it
        for _ in range(int(rng.integers(2, 7))):
            yield from self._lock_pair(th, lock_fd, 4 * US, self.reader_lock())
        if cause == "lock_contention":
            for _ in range(p["lock_pairs"]):
                yield from self._lock_pair(th, lock_fd, p["hold_us"] * US, self.lock)
                yield ("cpu", sim.jitter(10_000, 40_000))
        # included files
        for _ in range(int(rng.integers(3, 9))):
            yield from self._syscall("newfstat", (3 + int(rng.integers(0, 5)),), 0, (0x7FFC2A10C0,))
            yield ("cpu", sim.jitter(20_000, 120_000))
        yield from self._syscall("mmap", (0, 2 << 20, 3, 0x22, -1, 0), 0x7F3A1C000000)
        for _ in range(int(rng.integers(0, 3))):
            yield from self._read_file(th, s("/var/www/html/templates/page.tpl"),
                                       miss_latency=int(rng.uniform(0.3, 3) * MS) if rng.random() < 0.05 else 0)
        if cause == "slow_disk":
            for k in range(p["reads"]):
                lat = int(p["latency_ms"] * MS * rng.uniform(0.8, 1.2))
                yield from self._read_file(th, s(f"/var/www/html/media/catalog_{req.rid}_{k}.dat"), miss_latency=lat)
        if cause == "connect_retry":
            for _ in range(p["attempts"]):
                yield from self._connect_refused(th, int(p["refused_after_ms"] * MS * rng.uniform(0.85, 1.15)))
                yield from self._nanosleep(th, int(p["backoff_ms"] * MS))
        # database round trips (slow_db: the first query's rows come from a slow disk)
        for k in range(int(rng.integers(1, 6))):
            yield from self._db_query(th, link, db_fd, int(rng.lognormal(math.log(600 * US), 0.7)),
                                      p if cause == "slow_db" and k == 0 else None)
            yield ("cpu", sim.jitter(30_000, 150_000))
        yield from self._compute(rng.lognormal(math.log(3 * MS), 0.5))
        # the response
        if cause == "write_heavy":
            chunk = p["chunk_kb"] * 1024
            for k in range(p["writes"]):
                yield from self._write_socket(client_fd, chunk)
                yield ("cpu", sim.jitter(30_000, 120_000))
                if k % 4 == 3:
                    yield from self._wait_acks(th, int(p["ack_wait_ms"] * MS * rng.uniform(0.6, 1.4)))
        else:
            for _ in range(int(rng.integers(1, 4))):
                yield from self._write_socket(client_fd, int(rng.integers(2_000, 30_000)))

    @staticmethod
    def reader_lock() -> "_Lock":
        return _Lock()

    def _lock_pair(self, th, lock_fd, hold_ns, lock: "_Lock"):
        sim = self.sim
        yield ("emit", CODE["syscall_entry_fcntl"], lock_fd, F_SETLKW, 0x7FFC2A10D0)
        yield ("cpu", sim.jitter(800, 2_000))
        if lock.holder is None:
            lock.holder = th
        else:
            lock.waiters.append(th)
            t0 = sim.now
            yield ("block", 1, _arm_nothing)  # the releasing holder hands the lock over and wakes us
            if th.req is not None:
                th.req.lock_wait += sim.now - t0
        yield ("emit", CODE["syscall_exit_fcntl"], 0, 0x7FFC2A10D0)
        yield ("cpu", max(1_000, int(hold_ns * (0.5 + sim.jitter(0, 1000) / 1000))))
        yield ("emit", CODE["syscall_entry_fcntl"], lock_fd, F_SETLK, 0x7FFC2A10D0)
        yield ("cpu", sim.jitter(800, 2_000))
        if lock.waiters:
            nxt = lock.waiters.pop(0)
            lock.holder = nxt
            yield ("wake", nxt, None)
        else:
            lock.holder = None
        yield ("emit", CODE["syscall_exit_fcntl"], 0, 0x7FFC2A10D0)

    def _read_file(self, th, path_code, miss_latency: int):
        sim = self.sim
        yield from self._syscall("openat", (-100, path_code, 0, 0), 11)
        yield ("emit", CODE["syscall_entry_read"], 11, 65536)
        yield ("cpu", sim.jitter(2_000, 6_000))
        if miss_latency:
            sector = int(self.rng.integers(1 << 20, 1 << 30))
            yield ("emit", CODE["block_rq_issue"], 0x10300000, sector, 128, 65536, th.tid, 1, th.comm)
            yield ("cpu", sim.jitter(3_000, 9_000))
            cpu_idx = th.cpu
            rq = (0x10300000, sector, 128, 1)
            irq = 40 + cpu_idx - (self.cfg.cpus if cpu_idx >= self.cfg.cpus else 0)

            def arm(sim_, th_, t):
                sim_.disk_completion(th_, t, miss_latency, cpu_idx, irq, self.nvme_irq_names[cpu_idx], rq)

            yield ("block", 2, arm)
            yield ("cpu", sim.jitter(3_000, 10_000))
        yield ("emit", CODE["syscall_exit_read"], 65536, 0x7F3A1C100000)
        yield from self._syscall("close", (11,), 0)

    def _write_socket(self, fd, nbytes):
        sim = self.sim
        yield ("emit", CODE["syscall_entry_write"], fd, 0x55D0C8A50000, nbytes)
        yield ("cpu", 2_000 + nbytes // 4)
        self._skb += 0x900
        yield ("emit", CODE["net_dev_queue"], self._skb, min(nbytes, 65226), self.eth0)
        yield ("cpu", sim.jitter(1_000, 3_000))
        yield ("emit", CODE["syscall_exit_write"], nbytes)

    def _wait_acks(self, th, wait_ns):
        """The socket send buffer is full: sleep in the kernel until the client's ACKs arrive."""
        sim = self.sim
        yield ("emit", CODE["syscall_entry_write"], 10, 0x55D0C8A50000, 65536)
        nic = th.tid % self.cfg.cpus

        def arm(sim_, th_, t):
            self._skb += 0x700

            def on_receive(cpu, t):
                return sim_.wake(th_, cpu, t, None)

            sim_.packet_arrival(t + wait_ns, nic, 30 + nic, self.nic_irq_names[nic], self.eth0, self._skb, 66, on_receive)

        yield ("block", 1, arm)
        yield ("cpu", sim.jitter(3_000, 8_000))
        self._skb += 0x900
        yield ("emit", CODE["net_dev_queue"], self._skb, 65226, self.eth0)
        yield ("emit", CODE["syscall_exit_write"], 65536)

    def _connect_refused(self, th, after_ns):
        sim = self.sim
        s = sim.s
        yield from self._syscall("socket", (AF_INET, SOCK_STREAM, 0), 12)
        yield ("emit", CODE["syscall_entry_connect"], 12, 0x7FFC2A10E0, 16, AF_INET, 8443, s("\x0a\x00\x00\x32"))
        yield ("cpu", sim.jitter(5_000, 12_000))
        self._skb += 0x900
        yield ("emit", CODE["net_dev_queue"], self._skb, 74, self.eth0)
        nic = th.tid % self.cfg.cpus

        def arm(sim_, th_, t):
            self._skb += 0x700

            def on_receive(cpu, t):
                return sim_.wake(th_, cpu, t, None)

            sim_.packet_arrival(t + after_ns, nic, 30 + nic, self.nic_irq_names[nic], self.eth0, self._skb, 54, on_receive)

        yield ("block", 1, arm)
        yield ("cpu", sim.jitter(2_000, 5_000))
        yield ("emit", CODE["syscall_exit_connect"], -ECONNREFUSED)
        yield from self._syscall("close", (12,), 0)

    def _nanosleep(self, th, ns):
        sim = self.sim
        yield ("emit", CODE["syscall_entry_nanosleep"], 0x7FFC2A10F0)
        yield ("cpu", sim.jitter(1_000, 3_000))
        hrtimer = s64(0xFFFFA8C2C1E3BE68 + th.tid * 0x100)
        yield ("emit", CODE["timer_hrtimer_start"], hrtimer, WAKEUP_FN, 0)

        def arm(sim_, th_, t):
            sim_.timer_wakeup(th_, t, ns, hrtimer)

        yield ("block", 1, arm)
        yield ("cpu", sim.jitter(1_000, 3_000))
        yield ("emit", CODE["syscall_exit_nanosleep"], 0, 0)

    def _db_query(self, th, link: _DbLink, db_fd, cost, slow=None):
        sim = self.sim
        yield ("emit", CODE["syscall_entry_sendto"], db_fd, 0x55D0C8A60000, 180, 0x40)
        yield ("cpu", sim.jitter(3_000, 8_000))
        link.reply = False
        if self.cfg.db_host:  # a packet to the database host; it wakes the database thread there
            hdr = link.header(True, 200, self.web_ip, self.db_ip)
            self._skb += 0x900
            yield ("emit", CODE["net_dev_queue"], self._skb, 254, self.eth0, *hdr)

            def on_receive(cpu, t):
                link.query_cost, link.slow = cost, slow
                if link.db_waiting:
                    link.db_waiting = False
                    return sim.wake(link.db, cpu, t)
                return t

            self._send(self.db_cpu_ids[link.index % len(self.db_cpu_ids)], 240, hdr, on_receive)
        else:
            link.query_cost, link.slow = cost, slow
            if link.db_waiting:
                link.db_waiting = False
                yield ("wake", link.db, None)
        yield ("emit", CODE["syscall_exit_sendto"], 180)
        yield ("emit", CODE["syscall_entry_recvfrom"], db_fd, 16384, 0)
        yield ("cpu", sim.jitter(1_500, 4_000))
        if not link.reply:
            link.worker_waiting = th
            yield ("block", 1, _arm_nothing)
            yield ("cpu", sim.jitter(1_500, 4_000))
        link.reply = False
        yield ("emit", CODE["syscall_exit_recvfrom"], 1400, 0x55D0C8A70000)

    def _db_program(self, th: Thread, link: _DbLink):
        sim, rng = self.sim, self.rng
        db_fd = 30
        while True:
            yield ("emit", CODE["syscall_entry_recvfrom"], db_fd, 16384, 0)
            yield ("cpu", sim.jitter(1_500, 4_000))
            if link.query_cost is None:
                link.db_waiting = True
                yield ("block", 1, _arm_nothing)
                yield ("cpu", sim.jitter(1_500, 4_000))
            cost, slow = link.query_cost, link.slow
            link.query_cost = link.slow = None
            yield ("emit", CODE["syscall_exit_recvfrom"], 180, 0x55D0C8B10000)
            yield ("cpu", cost)
            if slow is not None:  # slow_db: the rows are read from a slow disk
                for _ in range(slow["reads"]):
                    yield from self._read_file(th, sim.s("/var/lib/mysql/shop/orders.ibd"),
                                               miss_latency=int(slow["latency_ms"] * MS * rng.uniform(0.8, 1.2)))
            elif rng.random() < 0.03:  # a page that is not in the buffer pool
                yield from self._read_file(th, sim.s("/var/lib/mysql/shop/orders.ibd"),
                                           miss_latency=int(rng.uniform(0.2, 2.5) * MS))
            yield ("emit", CODE["syscall_entry_sendto"], db_fd, 0x55D0C8B20000, 1400, 0x40)
            yield ("cpu", sim.jitter(3_000, 8_000))
            if self.cfg.db_host:  # the reply crosses the LAN; it wakes the worker on the web host
                hdr = link.header(False, 1400, self.web_ip, self.db_ip)
                self._skb_db += 0x900
                yield ("emit", CODE["net_dev_queue"], self._skb_db, 1454, self.eth0, *hdr)

                def on_receive(cpu, t):
                    link.reply = True
                    w = link.worker_waiting
                    if w is not None and w.state == BLOCKED:
                        link.worker_waiting = None
                        return sim.wake(w, cpu, t)
                    return t

                self._send(link.index % self.cfg.cpus, 1440, hdr, on_receive)
            else:
                link.reply = True
                w = link.worker_waiting
                if w is not None and w.state == BLOCKED:
                    link.worker_waiting = None
                    yield ("wake", w, None)
            yield ("emit", CODE["syscall_exit_sendto"], 1400)

    def _send(self, nic_cpu: int, length: int, hdr: tuple, on_receive) -> None:
        """A packet between the two hosts: it reaches the other host's NIC (on ``nic_cpu``) after
        the LAN's latency and is received in that CPU's NET_RX softirq."""
        sim = self.sim
        # the LAN's latency, plus 8 ns per byte on the wire (1 Gb/s): replies take longer than
        # queries, so the two directions are not symmetric (as clock fits meet in practice)
        lat = int(self.cfg.net_latency_us * US * min(4.0, max(0.4, self.rng.lognormal(0.0, 0.25)))) + 8 * length
        local = nic_cpu - (self.cfg.cpus if nic_cpu >= self.cfg.cpus else 0)
        self._skb_rx += 0x700
        sim.packet_arrival(sim.now + 2_000 + lat, nic_cpu, 30 + local, self.nic_irq_names[nic_cpu], self.eth0,
                           self._skb_rx, length, on_receive, hdr)

    def _backup_program(self, th: Thread):
        """Sleeps; on a burst, forks CPU-bound children (gzip) that run then exit."""
        sim, rng = self.sim, self.rng
        s = sim.s
        while True:
            n_children, work = yield ("block", 1, _arm_nothing)
            for _ in range(n_children):
                child_tid = self._tid()
                yield ("emit", CODE["syscall_entry_clone"], 0x1200011, 0, 0, 0x7F0B1E4F8A10)
                yield ("cpu", sim.jitter(20_000, 60_000))
                child = Thread(child_tid, child_tid, s("gzip"), "gzip", hog=True)
                child.allowed = th.allowed
                child.prog = self._hog_program(child, int(work * rng.uniform(0.7, 1.3)))
                sim.add_thread(child, cpu=th.cpu)
                yield ("emit", CODE["sched_process_fork"], th.comm, th.tid, th.pid, child.comm, child_tid, child_tid)
                yield ("cpu", sim.jitter(5_000, 15_000))
                yield ("wake_new", child)
                yield ("emit", CODE["syscall_exit_clone"], child_tid)

    def _hog_program(self, th: Thread, work_ns: int):
        # a burst window: while at least as many CPU-bound children are alive as there are CPUs
        self._burst_active += 1
        if self._burst_active == self.cfg.cpus:
            self.bursts.append([self.sim.now, self.sim.now])
        done = 0
        while done < work_ns:
            step = min(work_ns - done, 2 * MS)
            yield ("cpu", step)
            done += step
        if self._burst_active == self.cfg.cpus:
            self.bursts[-1][1] = self.sim.now
        self._burst_active -= 1

    def _burst(self, t: int, rid: int) -> None:
        n = 4 * self.cfg.cpus
        work = int(self.rng.uniform(0.08, 0.16) * S)
        b = self.backup
        if b.state == BLOCKED:
            self._timer_wake(b, t, (n, work))

    def _timer_wake(self, th: Thread, t: int, value) -> None:
        """The backup job's cron timer fires on its CPU and wakes it."""
        sim = self.sim
        cpu = sim.cpus[th.cpu]
        hrtimer = s64(0xFFFFA8C2C1E3BE68 + th.tid * 0x100)

        def body(sim_, c, t):
            t = sim_.emit(c, t, CODE["timer_hrtimer_expire_entry"], hrtimer, t, WAKEUP_FN)
            t = sim_.wake(th, c, t + sim_.jitter(300, 1_000), value)
            return sim_.emit(c, t + sim_.jitter(300, 900), CODE["timer_hrtimer_expire_exit"], hrtimer) + 200

        sim.interrupt(t, cpu, body)

    # -- running ----------------------------------------------------------------------------

    def run(self, flush=None, flush_events: int = 2_000_000) -> None:
        """Simulate until every request is done. ``flush(records)`` is called whenever more than
        ``flush_events`` events are buffered (and at the end), so memory stays bounded."""
        self.build()
        sim = self.sim
        while self.done < len(self.requests):
            if not sim._q:
                raise RuntimeError("simulation stalled before every request finished")
            sim.run(until=sim.next_time() + 50 * MS)
            if flush is not None and len(sim.rec) >= flush_events * 10:
                self._flush(flush)
        sim.run(until=self._end_guard)
        if flush is not None:
            self._flush(flush)
        self._label_lock_victims()
        self._label_cpu_contention()

    def _label_lock_victims(self) -> None:
        """Requests outside an episode that waited long for the lock held by recompiling requests
        suffered the same contention: labelled so, marked collateral."""
        for req in self.requests:
            dur = req.end - req.start
            if req.cause == "normal" and dur > 0 and req.lock_wait >= max(2 * MS, 0.5 * dur):
                req.cause = "lock_contention"
                req.collateral = True
                req.params = {"waited_for_lock_ms": round(req.lock_wait / MS, 3)}

    def _flush(self, flush) -> None:
        recs = self.sim.records()
        self._note_request_times(recs)
        flush(recs)
        self.sim.rec = type(self.sim.rec)("q")

    def _note_request_times(self, recs: np.ndarray) -> None:
        """Request start/end = the timestamps of their ust_php markers (rid from the querystring)."""
        for code, attr in ((CODE["ust_php:request_entry"], "start"), (CODE["ust_php:request_exit"], "end")):
            rows = recs[recs[:, 2] == code]
            for ts, qs in zip(rows[:, 0].tolist(), rows[:, 3 + 6].tolist()):
                rid = int(self.sim.strings[qs].rsplit("rid=", 1)[1])
                setattr(self.requests[rid], attr, ts)

    def _label_cpu_contention(self) -> None:
        """Requests that ran mostly inside a burst (more CPU-bound children than CPUs, all
        runnable): every thread they wait for competes with them for the CPUs."""
        if not self.bursts:
            return
        starts = np.array([b[0] for b in self.bursts])
        ends = np.array([b[1] for b in self.bursts])
        for req in self.requests:
            overlap = np.clip(np.minimum(ends, req.end) - np.maximum(starts, req.start), 0, None).sum()
            dur = req.end - req.start
            if dur > 0 and overlap >= 0.5 * dur:
                req.params = {**req.params, "inside_burst_ms": round(overlap / MS, 3),
                              "preempted_own_thread_ms": round(req.burst_wait / MS, 3)}
                if req.cause == "normal":
                    req.cause = "cpu_contention"

    # -- output -----------------------------------------------------------------------------

    def ground_truth(self) -> dict:
        cfg = self.cfg
        base = self.base
        return {
            "generator": "perftriage sample (simulated PHP web server)",
            "seed": cfg.seed,
            "config": asdict(cfg),
            "time_origin_ns": base,
            "bursts": [{"start_ns": base + a, "end_ns": base + b} for a, b in self.bursts],
            "requests": [
                {
                    "rid": r.rid,
                    "cause": r.cause,
                    "params": r.params,
                    "tid": r.tid,
                    "pid": r.pid,
                    "start_ns": base + r.start,
                    "end_ns": base + r.end,
                    "uri": r.page,
                    "method": r.method,
                    "querystring": r.querystring,
                    "runnable_wait_ms": round(r.runnable_wait / MS, 3),
                    "collateral": r.collateral,
                }
                for r in self.requests
            ],
        }

    def trace_uuids(self) -> tuple[str, str, str]:
        """(clock uuid, kernel trace uuid, ust trace uuid), derived from the seed (same seed, same bytes)."""
        r = np.random.default_rng([self.cfg.seed, 0xC7F])
        return tuple(str(_uuid.UUID(bytes=r.bytes(16), version=4)) for _ in range(3))


def _arm_nothing(sim, th, t):
    """A block woken by another thread (which knows about th through the model's own state)."""


__all__ = ["WebServerConfig", "WebServerSim", "CAUSES", "DEFAULT_MIX", "NSLOTS"]
