"""``perftriage sample``: simulated data with its ground truth (web server traces, microservice spans,
a thread pool's load test, a fleet's counters)."""

from __future__ import annotations

from .numbers import finite_rate, host_name, number

import re
import sys

from .common import EXIT_CODES_HELP, EXIT_OK, Formatter, Usage


def add_parser(sub) -> None:
    p_sample = sub.add_parser(
        "sample",
        help="write simulated data with its ground truth (traced web server, or microservice spans)",
        formatter_class=Formatter,
        description=(
            "--system webserver (default): simulate a PHP web server on an N-CPU host and write what\n"
            "LTTng would have recorded (kernel + user-space CTF traces) plus ground_truth.json: every\n"
            "request's injected cause. Causes: lock_contention, connect_retry, write_heavy, slow_disk,\n"
            "cpu_contention, slow_db (the database reads from a slow disk; on by default with --db-host).\n"
            "--db-host NAME: the database on a second traced host (a folder per host, TCP packets with\n"
            "their headers between them, the database host's clock off by --db-clock-offset-ms and\n"
            "drifting by --db-clock-drift-ppm): critical paths follow the queries across.\n"
            "--system microservices: 6 replicated services, 5 request types with their call trees, slow\n"
            "methods injected (--scenario replica | method | replica+noise | none), or a method whose calls\n"
            "start failing (--scenario errors: 30% of them from a time on, their errors propagated to the\n"
            "request's root, 0.05% of every call failing all along), or a method that from a time on\n"
            "returns before its own calls (--scenario return) or throws there, its callers giving up on\n"
            "the calls they had left (--scenario exception; both without a span status, as Nezha's spans),\n"
            "written as OTLP JSON (with the span status) and as the CloudDiag log format (clouddiag-log/),\n"
            "with ground_truth.json: the slow (method, replica) pairs, or the failing method."
        ),
        epilog=EXIT_CODES_HELP,
    )
    p_sample.add_argument("--out", default="perftriage-sample", metavar="DIR",
                          help="new folder to create (default ./perftriage-sample); never overwritten")
    p_sample.add_argument("--requests", type=number(1, 10_000_000, integer=True), default=2000, metavar="N")
    p_sample.add_argument("--cpus", type=number(1, 1024, integer=True), default=4, metavar="N")
    p_sample.add_argument("--workers", type=number(1, 100_000, integer=True), default=32, metavar="N", help="Apache workers (default 32)")
    p_sample.add_argument("--rate", type=number(0, 1e6, lo_open=True), default=60.0, metavar="R", help="requests per second (default 60)")
    p_sample.add_argument("--seed", type=number(0, 2**32 - 1, integer=True), default=1, metavar="S")
    p_sample.add_argument("--causes", metavar="SPEC", default=None,
                          help="comma-separated cause[=rate] (e.g. slow_disk=0.05,write_heavy); "
                               "'none' for a normal population only; default: all five at their default rates")
    p_sample.add_argument("--db-host", type=host_name, metavar="NAME", default=None,
                          help="webserver: run the database on a second traced host named NAME")
    p_sample.add_argument("--db-clock-offset-ms", type=number(-1e9, 1e9), default=3.2, metavar="MS",
                          help="with --db-host: the database host's clock minus the web host's (default 3.2)")
    p_sample.add_argument("--db-clock-drift-ppm", type=number(-1e5, 1e5), default=12.0, metavar="PPM",
                          help="with --db-host: its clock's drift (default 12)")
    p_sample.add_argument("--incidents", metavar="KIND[@SERVER][:START],...", default=None,
                          help="fleet: stuck_rng, buffer_leak, hot_partition; SERVER 0-based, START a fraction "
                               "of the run (e.g. stuck_rng@4:0.3,buffer_leak:0.4; default: stuck_rng and "
                               "hot_partition on random servers; 'none' for a healthy fleet)")
    p_sample.add_argument("--servers", type=number(1, 100_000, integer=True), default=25, metavar="N", help="fleet: servers (default 25)")
    p_sample.add_argument("--points", type=number(2, 10_000_000, integer=True), default=288, metavar="N",
                          help="fleet: samples per counter, every 5 min (default 288: a day)")
    p_sample.add_argument("--system", choices=("webserver", "microservices", "threads", "fleet"), default="webserver",
                          help="threads: a load test's thread pool (8 waves x 10 threads, 5 metrics) with the "
                               "paper 003 deviations (--deviations)")
    p_sample.add_argument("--deviations", metavar="W:T=KIND,...", default=None,
                          help="threads: e.g. 2:3=memory_leak,5:0=cpu_spike (wave:thread, 0-based; kinds "
                               "cpu_spike, memory_leak, io_leak); default: the paper's random thread-level mix")
    p_sample.add_argument("--scenario",
                          choices=("replica", "method", "replica+noise", "none", "errors", "return", "exception"),
                          default="replica", help="microservices: what is slow, or fails (default replica)")
    p_sample.add_argument("--slowdown", type=number(0, 1e4, lo_open=True), default=4.0, metavar="X",
                          help="microservices: factor on the slow methods' own time (default 4)")
    p_sample.add_argument("--drift-ms", type=number(0, 1e9), default=5.0, metavar="MS",
                          help="microservices: clock offsets between hosts, up to this (default 5 ms)")


def run(args) -> int:
    if args.system == "microservices":
        return _sample_microservices(args)
    if args.system == "threads":
        return _sample_threads(args)
    if args.system == "fleet":
        return _sample_fleet(args)
    from perftriage.analysis.sim.sample import write_webserver_sample  # noqa: PLC0415
    from perftriage.analysis.sim.webserver import WebServerConfig  # noqa: PLC0415

    mix = parse_causes(args.causes)
    if args.db_host and args.causes is None:
        mix["slow_db"] = SLOW_DB_RATE
    two = {"db_host": args.db_host, "db_clock_offset_ms": args.db_clock_offset_ms,
           "db_clock_drift_ppm": args.db_clock_drift_ppm} if args.db_host else {}
    cfg = WebServerConfig(requests=args.requests, cpus=args.cpus, workers=args.workers, rate=args.rate,
                          seed=args.seed, mix=mix, **two)
    try:
        cfg.validate()
    except ValueError as exc:
        raise Usage(str(exc)) from None
    progress = None
    if sys.stderr.isatty():
        def progress(done, total, events):
            sys.stderr.write(f"\r{done:,}/{total:,} requests, {events:,} events".ljust(60))
            sys.stderr.flush()
    st = write_webserver_sample(args.out, cfg, progress=progress)
    if progress is not None:
        sys.stderr.write("\r" + " " * 60 + "\r")
    causes = ", ".join(f"{k} {v}" for k, v in st.causes.items())
    print(f"wrote {st.out}: {st.requests:,} requests ({causes}), {st.events:,} events "
          f"({st.kernel_events:,} kernel, {st.ust_events:,} ust), {st.bytes / 1e6:.1f} MB")
    print(f"simulated in {st.simulate_s:.1f} s, written in {st.write_s:.1f} s "
          f"({st.events / max(st.write_s, 1e-9):,.0f} events/s written)")
    return EXIT_OK


SLOW_DB_RATE = 0.02  # slow_db's rate when asked without one, and by default with --db-host


def parse_causes(spec: str | None) -> dict:
    from perftriage.analysis.sim.webserver import CAUSES, DEFAULT_MIX  # noqa: PLC0415

    if spec is None:
        return dict(DEFAULT_MIX)
    if spec.strip() == "none":
        return {}
    mix = {}
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, rate = part.partition("=")
        if name not in CAUSES:
            raise Usage(f"unknown cause {name!r}; known: {', '.join(CAUSES)}")
        try:
            mix[name] = finite_rate(rate, name) if rate else DEFAULT_MIX.get(name, SLOW_DB_RATE)
        except ValueError:
            raise Usage(f"bad rate {rate!r} for {name}: a number between 0 and 1") from None
    return mix


def parse_incidents(spec: str | None, servers: int, seed: int) -> dict:
    import numpy as np  # noqa: PLC0415

    from perftriage.analysis.sim.fleet import INCIDENTS, random_incidents  # noqa: PLC0415

    if spec is None:
        return random_incidents(np.random.default_rng(seed), servers, ("stuck_rng", "hot_partition"))
    if spec.strip() == "none":
        return {}
    out = {}
    for part in spec.split(","):
        m = re.fullmatch(r"\s*([a-z_]+)(?:@(\d+))?(?::([0-9.]+))?\s*", part)
        if not m or m.group(1) not in INCIDENTS:
            raise Usage(f"--incidents: {part!r} is not KIND[@SERVER][:START] ({', '.join(INCIDENTS)})")
        out[m.group(1)] = {"server": int(m.group(2) or 0), "start": float(m.group(3) or 0.3)}
    return out


def _sample_fleet(args) -> int:
    from perftriage.analysis.sim.fleet import COUNTERS, FleetConfig, write_fleet_sample  # noqa: PLC0415

    cfg = FleetConfig(servers=args.servers, points=args.points, seed=args.seed,
                      incidents=parse_incidents(args.incidents, args.servers, args.seed))
    try:
        cfg.validate()
    except ValueError as exc:
        raise Usage(str(exc)) from None
    truth = write_fleet_sample(args.out, cfg)
    inc = "; ".join(f"{i['kind']} on {i['servers'][0] if len(i['servers']) == 1 else 'every server'} from "
                    f"point {i['start_index']}" for i in truth["incidents"]) or "none"
    print(f"wrote {args.out}: {cfg.servers} servers x {len(COUNTERS)} counters x {cfg.points} points "
          f"(counters.csv, rules.toml); incidents: {inc}")
    return EXIT_OK


def _sample_threads(args) -> int:
    import numpy as np  # noqa: PLC0415

    from perftriage.analysis.sim.threadpool import DEVIATIONS, PoolConfig, random_deviations, write_threadpool_sample

    if args.deviations:
        devs = {}
        for part in args.deviations.split(","):
            key, eq, kind = part.strip().partition("=")
            w, colon, t = key.partition(":")
            if not (eq and colon and w.isdigit() and t.isdigit()) or kind not in DEVIATIONS:
                raise Usage(f"--deviations: {part!r} is not WAVE:THREAD=KIND ({', '.join(DEVIATIONS)})")
            devs[f"{int(w)}:{int(t)}"] = kind
    else:
        devs = random_deviations(np.random.default_rng(args.seed), 8, 10, "threads")
    cfg = PoolConfig(seed=args.seed, deviations=devs)
    try:
        cfg.validate()
    except ValueError as exc:
        raise Usage(str(exc)) from None
    truth = write_threadpool_sample(args.out, cfg)
    print(f"wrote {args.out}: {cfg.waves} waves x {cfg.threads_per_wave} threads x {cfg.samples} samples "
          f"(threads.csv); deviating: " + (", ".join(f"{d['wave']}/{d['thread']} {d['kind']}"
                                                    for d in truth["deviating"]) or "none"))
    return EXIT_OK


def _sample_microservices(args) -> int:
    from perftriage.analysis.sim.microservices import MicroConfig, write_microservice_sample  # noqa: PLC0415

    rate = args.rate if args.rate != 60.0 else 200.0
    cfg = MicroConfig(requests=args.requests, seed=args.seed, scenario=args.scenario, slowdown=args.slowdown,
                      drift_ms=args.drift_ms, rate=rate)
    try:
        cfg.validate()
    except ValueError as exc:
        raise Usage(str(exc)) from None
    truth = write_microservice_sample(args.out, cfg)
    pairs = ", ".join(f"{m} on {r}" for m, r in truth["slow_pairs"][:6]) or "nothing"
    what = f"failing: {truth['failing_method']}" if truth.get("failing_method") else f"slow: {pairs}"
    print(f"wrote {args.out}: {truth['requests']:,} requests, {truth['spans']:,} spans "
          f"(spans.otlp.jsonl, clouddiag-log/calls.log); {what}")
    return EXIT_OK
