"""A replicated microservice system with slow methods injected on some replicas: CloudDiag's
ground truth (paper 002).

Six services with 3 to 5 replicas each; five request types, each with its own call tree (a
frontend method calling authentication, catalogue, cart, payment and database methods, some of
them more than once); every call goes to a replica chosen at random. A method's own time is
log-normal around its typical latency; a parent's duration is its own time plus its children's
(called one after the other) plus network gaps. Each host logs with its own clock offset
(``drift_ms``), as NTP leaves them.

Injected anomalies (``scenario``), each a slowdown factor on the methods' own time:

- ``replica``: one replica of one service is slow (every method of that service on it);
- ``method``: one method becomes slow on every replica from some moment on (an incident that
  starts between half-way and 80% of the run: before it the method is normal);
- ``replica+noise``: one slow replica, while every replica also has heavier latency tails and
  random short spikes;
- ``none``: nothing injected (a baseline for ``--reference``);
- ``errors``: a method's calls start failing from an incident on (a share of them, the span
  status says so), the errors propagated to the request's root;
- ``return`` and ``exception``: from an incident on, a method with calls of its own returns before
  making them (``fault_rate`` of its calls; Nezha's "return" fault), or throws there and its
  callers give up on the calls they had left to make (Nezha's "exception" fault: the error
  propagates to the root, each caller returning at once). Written without a span status, as the
  Nezha spans are: what shows is the calls no longer made.

Written as OpenTelemetry OTLP JSON (the collector's file exporter: one request per line) and as
the CloudDiag log format (``clouddiag-log/calls.log``: the same calls, in a folder of its own so
that opening the sample folder reads them once), with ``ground_truth.json``: the scenario, the slow (method, replica)
pairs, the seed and the configuration.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from perftriage.analysis.atomic import new_folder

MS = 1_000_000
US = 1_000

SERVICES = {"frontend": 3, "auth": 3, "catalog": 4, "cart": 3, "payment": 3, "db": 5}
# method -> (typical own time in ms, log-normal sigma)
METHODS = {
    "frontend.home": (2.0, 0.25), "frontend.product": (2.5, 0.25), "frontend.checkout": (3.0, 0.25),
    "frontend.search": (2.2, 0.25), "frontend.account": (1.8, 0.25),
    "auth.verify": (1.2, 0.2), "auth.session": (0.8, 0.2),
    "catalog.list": (3.0, 0.25), "catalog.get_item": (1.5, 0.25), "catalog.search": (6.0, 0.3),
    "cart.get": (1.0, 0.2), "cart.add": (1.4, 0.2), "cart.clear": (0.9, 0.2),
    "payment.charge": (8.0, 0.3), "payment.refund_check": (2.0, 0.25),
    "db.query": (2.0, 0.3), "db.write": (3.5, 0.3),
}
# request type -> call tree (method, [children...])
TREES = {
    "home": ("frontend.home", [("auth.verify", []), ("catalog.list", [("db.query", [])])]),
    "product": ("frontend.product", [("auth.verify", []), ("catalog.get_item", [("db.query", [])]),
                                     ("cart.get", [("db.query", [])])]),
    "checkout": ("frontend.checkout", [("auth.verify", [("auth.session", [])]), ("cart.get", [("db.query", [])]),
                                       ("payment.charge", [("payment.refund_check", []), ("db.write", [])]),
                                       ("cart.clear", [("db.write", [])])]),
    "search": ("frontend.search", [("catalog.search", [("db.query", []), ("db.query", [])])]),
    "account": ("frontend.account", [("auth.verify", [("auth.session", [])]), ("cart.get", [("db.query", [])])]),
}
MIX = {"home": 0.3, "product": 0.3, "checkout": 0.12, "search": 0.18, "account": 0.1}
SCENARIOS = ("replica", "method", "replica+noise", "none", "errors", "return", "exception")
EARLY = ("return", "exception")  # scenarios of a method that stops before its calls


def _called(node, out):
    out.add(node[0])
    for child in node[1]:
        _called(child, out)
    return out


CALLED = sorted(set().union(*(_called(t, set()) for t in TREES.values())))  # methods some request calls


def _callers(node, out):
    if node[1]:
        out.add(node[0])
    for child in node[1]:
        _callers(child, out)
    return out


CALLER = sorted(set().union(*(_callers(t, set()) for t in TREES.values())))  # methods that call others


@dataclass
class MicroConfig:
    requests: int = 2000
    seed: int = 1
    scenario: str = "replica"
    slowdown: float = 4.0  # factor on the own time of the slow methods
    drift_ms: float = 5.0  # per-host clock offsets up to this much
    start_time_ns: int = 1_767_225_600 * 1_000_000_000  # 2026-01-01T00:00:00Z
    rate: float = 200.0  # requests per second
    write_log: bool = True
    write_otlp: bool = True
    otlp_batch: int = 1  # requests per line of the OTLP file (a collector's batch processor groups many)
    error_rate: float = 0.3  # "errors": the share of the failing method's calls that fail from the incident on
    background_errors: float = 0.0005  # "errors": any call fails this often, all along
    fault_rate: float = 1.0  # "return", "exception": the share of the faulty method's calls that stop early

    def validate(self) -> None:
        if self.requests < 1:
            raise ValueError("requests must be at least 1")
        if self.otlp_batch < 1:
            raise ValueError("otlp_batch must be at least 1")
        if self.scenario not in SCENARIOS:
            raise ValueError(f"scenario must be one of {', '.join(SCENARIOS)}")
        if not 0 <= self.fault_rate <= 1:
            raise ValueError("fault_rate must be between 0 and 1")
        if self.slowdown <= 1 and self.scenario in ("replica", "method", "replica+noise"):
            raise ValueError("slowdown must be above 1")


@dataclass
class MicroTruth:
    scenario: str
    slow_pairs: list = field(default_factory=list)  # [(method, replica)]
    slow_service: str | None = None
    slow_replica: str | None = None
    slow_method: str | None = None
    failing_method: str | None = None  # "errors", "return", "exception": the method whose calls start failing
    incident_start_ns: int | None = None


def replicas_of(service: str) -> list[str]:
    return [f"{service}-{i + 1}" for i in range(SERVICES[service])]


def _hosts() -> dict[str, str]:
    """replica -> host: replicas of different services share a few nodes."""
    out = {}
    k = 0
    for svc, n in SERVICES.items():
        for i in range(n):
            out[f"{svc}-{i + 1}"] = f"node-{k % 8 + 1}"
            k += 1
    return out


class MicroSim:
    def __init__(self, cfg: MicroConfig):
        cfg.validate()
        self.cfg = cfg
        self.rng = np.random.default_rng(cfg.seed)
        self.hosts = _hosts()
        self.drift = {h: int(self.rng.uniform(-cfg.drift_ms, cfg.drift_ms) * MS) for h in sorted(set(self.hosts.values()))}
        self.truth = self._inject()
        self._next_id = 1

    def _inject(self) -> MicroTruth:
        rng, cfg = self.rng, self.cfg
        t = MicroTruth(cfg.scenario)
        if cfg.scenario in ("replica", "replica+noise"):
            svc = str(rng.choice([s for s in SERVICES if s != "frontend"]))
            rep = str(rng.choice(replicas_of(svc)))
            t.slow_service, t.slow_replica = svc, rep
            t.slow_pairs = [(m, rep) for m in CALLED if m.startswith(svc + ".")]
        elif cfg.scenario == "method":
            m = str(rng.choice([m for m in CALLED if not m.startswith("frontend.")]))
            t.slow_method = m
            t.slow_pairs = [(m, r) for r in replicas_of(m.split(".")[0])]
        elif cfg.scenario == "errors":
            t.failing_method = str(rng.choice([m for m in CALLED if not m.startswith("frontend.")]))
        elif cfg.scenario in EARLY:  # a method that has calls to make
            t.failing_method = str(rng.choice([m for m in CALLER if not m.startswith("frontend.")]))
        return t

    def _own_time(self, method: str, replica: str) -> int:
        mu, sigma = METHODS[method]
        noise = self.cfg.scenario == "replica+noise"
        if noise:
            sigma = sigma * 1.6
        v = self.rng.lognormal(np.log(mu), sigma)
        if (method, replica) in self._slow and self._now >= self._slow_from:
            v *= self.cfg.slowdown
        if noise and self.rng.random() < 0.01:
            v *= self.rng.uniform(2, 5)  # a short random spike on any replica
        return int(v * MS)

    def run(self):
        """Yields (request id, [span dicts]) in arrival order."""
        cfg, rng = self.cfg, self.rng
        self._slow = set(self.truth.slow_pairs)
        kinds = list(MIX)
        probs = np.array([MIX[k] for k in kinds])
        types = rng.choice(len(kinds), cfg.requests, p=probs / probs.sum())
        arrivals = cfg.start_time_ns + np.cumsum(rng.exponential(1e9 / cfg.rate, cfg.requests)).astype(np.int64)
        self._slow_from = 0
        if cfg.scenario in ("method", "errors", *EARLY):
            self._slow_from = int(arrivals[int(cfg.requests * rng.uniform(0.5, 0.8))])
            self.truth.incident_start_ns = self._slow_from
        for r in range(cfg.requests):
            self._now = int(arrivals[r])
            rid = f"{(cfg.seed & 0xFFFF):04x}{r:012x}{rng.integers(1 << 62):016x}"
            spans: list[dict] = []
            self._call(TREES[kinds[types[r]]], int(arrivals[r]), None, rid, spans)
            yield rid, kinds[types[r]], spans

    def _call(self, node, start: int, parent: int | None, rid: str, spans: list) -> int:
        method, children = node
        service = method.split(".")[0]
        replica = str(self.rng.choice(replicas_of(service)))
        sid = self._next_id
        self._next_id += 1
        t = start + self._own_time(method, replica) // 2
        thrown = False  # "exception": this call threw, or a call it made did (its caller gives up)
        if self.cfg.scenario in EARLY and method == self.truth.failing_method and self._now >= self._slow_from:
            if self.rng.random() < self.cfg.fault_rate:
                children, thrown = [], self.cfg.scenario == "exception"
        for child in children:
            t += int(self.rng.uniform(50, 200) * US)
            t = self._call(child, t, sid, rid, spans)
            if self.cfg.scenario == "exception" and spans[-1]["thrown"]:
                thrown = True  # the calls it had left are not made
                break
        end = t + self._own_time(method, replica) // 2 + int(self.rng.uniform(20, 80) * US)
        failed = False
        if self.cfg.scenario == "errors":  # (other scenarios draw no more numbers: their samples stay the same)
            draw = self.rng.random()
            failing = method == self.truth.failing_method and self._now >= self._slow_from
            # an error where it starts, or from a child: it propagates up to the request's root
            failed = (draw < self.cfg.error_rate if failing else draw < self.cfg.background_errors) or any(
                s["failed"] for s in spans if s["parent"] == sid)
        spans.append({"span": sid, "parent": parent, "method": method, "service": service, "replica": replica,
                      "host": self.hosts[replica], "start": start, "end": end, "failed": failed, "thrown": thrown})
        return end + int(self.rng.uniform(50, 200) * US)


def write_microservice_sample(out: str | os.PathLike, cfg: MicroConfig) -> dict:
    out = Path(out)
    with new_folder(out) as tmp:
        sim = MicroSim(cfg)
        n_spans = 0
        otlp = open(tmp / "spans.otlp.jsonl", "w") if cfg.write_otlp else None
        if cfg.write_log:  # in its own folder: the same calls as the OTLP file, not to be read with it
            (tmp / "clouddiag-log").mkdir()
        log = open(tmp / "clouddiag-log" / "calls.log", "w") if cfg.write_log else None
        if log:
            log.write("host,timestamp,request_id,mid,caller_mid,method,flag\n")
        batch: list[tuple[str, dict]] = []  # the spans of the requests of one line
        in_batch = 0
        for rid, _kind, spans in sim.run():
            n_spans += len(spans)
            if otlp:
                batch.extend((rid, s) for s in spans)
                in_batch += 1
                if in_batch == cfg.otlp_batch:
                    otlp.write(json.dumps(_otlp_request(batch, sim.drift), separators=(",", ":")) + "\n")
                    batch, in_batch = [], 0
            if log:
                for s in sorted(spans, key=lambda s: s["start"]):
                    d = sim.drift[s["host"]]
                    mid = s["span"] if s["parent"] is not None else rid
                    caller = "" if s["parent"] is None else (s["parent"] if s["parent"] != spans[-1]["span"] else rid)
                    log.write(f"{s['host']},{s['start'] + d},{rid},{mid},{caller},{s['method']},invoke\n")
                    log.write(f"{s['host']},{s['end'] + d},{rid},{mid},{caller},{s['method']},return\n")
        if otlp and batch:
            otlp.write(json.dumps(_otlp_request(batch, sim.drift), separators=(",", ":")) + "\n")
        for f in (otlp, log):
            if f:
                f.close()
        truth = {
            "generator": "perftriage sample microservices",
            "config": asdict(cfg),
            "scenario": sim.truth.scenario,
            "slow_pairs": [list(p) for p in sim.truth.slow_pairs],
            "slow_service": sim.truth.slow_service,
            "slow_replica": sim.truth.slow_replica,
            "slow_method": sim.truth.slow_method,
            "failing_method": sim.truth.failing_method,
            "incident_start_ns": sim.truth.incident_start_ns,
            "clock_offsets_ns": sim.drift,
            "replica_hosts": sim.hosts,  # the CloudDiag log names hosts: its replicas are these
            "requests": cfg.requests,
            "spans": n_spans,
        }
        (tmp / "ground_truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        return truth


def _otlp_request(spans: list[tuple[str, dict]], drift: dict) -> dict:
    """One ExportTraceServiceRequest of (request id, span) pairs, spans grouped by resource."""
    by_res: dict[tuple, list] = {}
    for rid, s in spans:
        by_res.setdefault((s["service"], s["replica"], s["host"]), []).append((rid, s))
    resource_spans = []
    for (service, replica, host), group in by_res.items():
        d = drift[host]
        resource_spans.append({
            "resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": service}},
                {"key": "service.instance.id", "value": {"stringValue": replica}},
                {"key": "host.name", "value": {"stringValue": host}},
            ]},
            "scopeSpans": [{"scope": {"name": "perftriage-sim"}, "spans": [{
                "traceId": rid,
                "spanId": f"{s['span']:016x}",
                "parentSpanId": f"{s['parent']:016x}" if s["parent"] is not None else "",
                "name": s["method"].split(".", 1)[1],
                "kind": 2,
                "startTimeUnixNano": str(s["start"] + d),
                "endTimeUnixNano": str(s["end"] + d),
                **({"status": {"code": 2, "message": "failed"}} if s["failed"] else {}),
            } for rid, s in group]}],
        })
    return {"resourceSpans": resource_spans}
