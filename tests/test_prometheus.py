"""Counters from a running Prometheus: a real server (Debian's prometheus) on a loopback port,
its TSDB backfilled by promtool from the fleet sample; the findings equal those of the same data
read from a file, page by page or not; every failure is one line."""

from __future__ import annotations

import json
import socket
import threading
import time

import numpy as np
import pytest
from conftest import ROOT
from prometheus_server import PrometheusServer, free_port, have_prometheus, renamed_csv, renamed_rules

from perftriage.analysis.counters import prometheus_api
from perftriage.analysis.counters.prometheus_api import PromRange, fetch_counters, parse_duration
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.cli.main import main

pytestmark = pytest.mark.skipif(not have_prometheus(), reason="prometheus/promtool not installed "
                                                              "(apt-get install prometheus; make test does)")

FLEET = ROOT / "sample_traces" / "fleet"
BASELINE = ROOT / "sample_traces" / "fleet-baseline"
DAY = 86400
# the fleet sample: 2026-01-01, every 5 minutes; its baseline is put on the day before
WINDOW = ["--since", "2026-01-01T00:00:00Z", "--until", "2026-01-02T00:00:00Z"]
REF_WINDOW = ["--reference-since", "2025-12-31T00:00:00Z", "--reference-until", "2025-12-31T23:59:59Z"]


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    work = tmp_path_factory.mktemp("prometheus")
    server = PrometheusServer(work, {"fleet": (FLEET / "counters.csv", 0), "baseline": (BASELINE / "counters.csv", -DAY)})
    server.csv = renamed_csv(FLEET / "counters.csv", work / "fleet.csv")
    (work / "baseline").mkdir()
    server.baseline_csv = renamed_csv(BASELINE / "counters.csv", work / "baseline" / "counters.csv", -DAY)
    server.rules = renamed_rules(FLEET / "rules.toml", work / "rules.toml")
    yield server
    server.close()


def report(tmp_path, name, *args) -> dict:
    out = tmp_path / f"{name}.json"
    assert main(["report", *map(str, args), "-q", "-o", str(out)]) == 0
    return json.loads(out.read_text())


def test_findings_from_prometheus_equal_those_of_the_same_data_in_a_file(prom, tmp_path):
    live = report(tmp_path, "live", f"prometheus+{prom.url}", "--match", '{job="fleet"}', *WINDOW,
                  "--rules", prom.rules)
    file = report(tmp_path, "file", prom.csv, "--rules", prom.rules)
    assert len(file["findings"]) >= 10
    assert live["findings"] == file["findings"]
    # the planted incidents are among them (the sample's ground truth)
    truth = json.loads((FLEET / "ground_truth.json").read_text())
    named = " ".join(f["title"] for f in live["findings"])
    for inc in truth["incidents"]:
        assert any(s in named for s in inc["servers"])
    assert any(n.startswith(f"Prometheus {prom.url}: 1,250 series of 50 counters on 25 servers")
               and "raw samples" in n for n in live["notes"])


def _samples_in_csv(prefix: str) -> int:
    """Non-empty cells of the fleet CSV's counters whose names start with ``prefix``."""
    import csv

    with open(FLEET / "counters.csv", newline="") as f:
        rows = list(csv.reader(f))
    cols = [j for j, c in enumerate(rows[0]) if c.startswith(prefix)]
    return sum(1 for r in rows[1:] for j in cols if r[j])


def test_pages_join_into_the_same_counters(prom, monkeypatch):
    # the Runtime_* counters: 10 of them on 25 servers, 288 samples each
    rng = PromRange(matches=('{job="fleet",__name__=~"Runtime_.*"}',), since="2026-01-01T00:00:00Z",
                    until="2026-01-02T00:00:00Z")
    whole = fetch_counters(prom.url, rng)
    monkeypatch.setattr(prometheus_api, "MAX_PAGE_POINTS", 4_000)  # 250 series x 289: 19 pages
    paged = fetch_counters(prom.url, rng)
    assert paged.requests >= whole.requests + 15
    # none lost or read twice at the pages' edges
    assert paged.raw.n_samples == whole.raw.n_samples == _samples_in_csv("Runtime.")
    a, b = load_counters([], servers=[whole.raw]), load_counters([], servers=[paged.raw])
    assert a.servers == b.servers and a.counters == b.counters and len(a.counters) == 10
    np.testing.assert_array_equal(a.values, b.values)
    # query_range: at most MAX_STEPS points of a series per request
    monkeypatch.undo()
    step = PromRange(matches=rng.matches, since=rng.since, until=rng.until, step="5m")
    one = fetch_counters(prom.url, step)
    monkeypatch.setattr(prometheus_api, "MAX_STEPS", 40)
    many = fetch_counters(prom.url, step)
    assert many.requests >= one.requests + 6 and "query_range" in many.mode
    assert many.raw.n_samples == one.raw.n_samples
    c, d = load_counters([], servers=[one.raw]), load_counters([], servers=[many.raw])
    np.testing.assert_array_equal(c.values, d.values)
    # every 5 min from 00:05 to 24:00 (at 00:00 the servers sampling late have no sample yet)
    assert c.interval == 300 and c.n_points == 288 and c.start == 1767225600 + 300


def test_a_reference_window_on_the_same_server_equals_a_reference_file(prom, tmp_path):
    live = report(tmp_path, "live", "--prometheus", prom.url, "--match", '{job=~"fleet|baseline"}', *WINDOW,
                  *REF_WINDOW, "--rules", prom.rules)
    file = report(tmp_path, "file", prom.csv, "--reference", prom.baseline_csv.parent, "--rules", prom.rules)
    assert any("differ from the reference" in f["title"] for f in file["findings"])
    # the same findings; the evidence names where the reference came from
    text = json.dumps(live["findings"]).replace(f"prometheus+{prom.url}", str(prom.baseline_csv))
    assert json.loads(text) == file["findings"]
    assert any(n.startswith("reference: Prometheus") for n in live["notes"])


def test_the_app_opens_the_counters_of_a_prometheus_server(prom):
    import asyncio

    from perftriage.cli.options import prometheus_range
    from perftriage.tui.app import PerftriageApp
    from perftriage.tui.panes.counters import CountersPane

    class Args:
        prometheus, match, since, until, step = [prom.url], ['{job="fleet"}'], WINDOW[1], WINDOW[3], None
        reference_since = reference_until = None
        timeout = 30.0
        paths: list = []

    args = Args()
    rng = prometheus_range(args)
    from perftriage.analysis.triage import Options

    app = PerftriageApp(args.paths, Options(prometheus=rng))

    async def drive():
        async with app.run_test(size=(80, 24)) as pilot:
            t0 = time.monotonic()
            while app.running or app.result is None:
                assert time.monotonic() - t0 < 120
                await pilot.pause(0.05)
            pane = app.query_one(CountersPane)
            assert pane.ca is not None and len(pane.ca.cs.servers) == 25 and len(pane.ca.cs.counters) == 50

    asyncio.run(drive())


def _silent_server():
    """A port that accepts connections and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s


def _bad_gateway_server():
    """An HTTP server answering every request 502 with an HTML body (a proxy in front of a dead
    Prometheus)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)

    def serve():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            c.recv(65536)
            body = b"<html><body>502 Bad Gateway</body></html>"
            c.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: "
                      + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    return s


def test_each_failure_is_one_line_naming_the_server(prom, capsys):
    def fails(*args) -> str:
        assert main(["report", *args, "-q"]) == 3
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "Traceback" not in err
        return err

    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there once the probe socket closed
    assert "cannot reach Prometheus" in fails("--prometheus", closed, "--match", "up")
    err = fails("--prometheus", prom.url, "--match", '{job="fleet"', *WINDOW)
    assert "400" in err and "parse error" in err  # Prometheus's own words
    err = fails("--prometheus", prom.url, "--match", '{job="nope"}', *WINDOW)
    assert 'no series between 2026-01-01 00:00:00 UTC and 2026-01-02 00:00:00 UTC' in err
    err = fails("--prometheus", prom.url, "--match", '{job="fleet"}', *WINDOW, "--server-label", "host")
    assert "'host' label" in err and "instance" in err
    silent = _silent_server()
    try:
        t0 = time.monotonic()
        err = fails("--prometheus", f"http://127.0.0.1:{silent.getsockname()[1]}", "--match", "up", "--timeout", "1")
        assert "did not answer" in err and "1 s" in err and time.monotonic() - t0 < 4
    finally:
        silent.close()
    gateway = _bad_gateway_server()
    try:
        err = fails("--prometheus", f"http://127.0.0.1:{gateway.getsockname()[1]}", "--match", "up")
        assert "502 Bad Gateway" in err
    finally:
        gateway.close()


@pytest.mark.parametrize("args, words", [
    (["--match", "up"], "name one"),
    (["--prometheus", "http://h:9090"], "--match SELECTOR"),
    (["--prometheus", "http://h:9090", "--match", "up", "--since", "yesterday"], "neither a duration"),
    (["--prometheus", "http://h:9090", "--match", "up", "--step", "-5s"], "--step"),
    (["--prometheus", "http://h:9090", "--match", "up", "--since", "2026-01-02", "--until", "2026-01-01"], "before"),
    (["http://h:9090", "--match", "up"], "prometheus+http://h:9090"),
])
def test_usage_errors_say_what_to_give(args, words, capsys):
    with pytest.raises(SystemExit) as e:
        main(["report", *args])
    assert e.value.code == 2 and words in capsys.readouterr().err


def test_durations():
    assert parse_duration("6h") == 21600 and parse_duration("1h30m") == 5400 and parse_duration("90") == 90
    assert parse_duration("500ms") == 0.5 and parse_duration("2d") == 172800
    assert parse_duration("6 hours") is None and parse_duration("") is None and parse_duration("h") is None
    with pytest.raises(InputError):
        prometheus_api.server_url("ftp://h:9090")


def test_info_names_a_server_for_what_it_is(capsys):
    assert main(["info", "prometheus+http://h:9090"]) == 3
    err = capsys.readouterr().err
    assert "prometheus+http://h:9090: a server, not a CTF trace folder" in err and err.count("\n") == 1
