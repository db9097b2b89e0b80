"""Spans as real exports give them (root markers, pods without services, gzip), and what changed
against the minutes before, per service and pod: on hand-made spans with one known change each,
and on a real fault of the OnlineBoutique development data."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perftriage.analysis.calltrees.trees import build_call_trees
from perftriage.analysis.calltrees.what_changed import diagnose_change, find_split, split_spans
from perftriage.analysis.errors import InputError
from perftriage.analysis.spans import read_spans
from perftriage.analysis.spans.k8s import service_of_pod
from perftriage.analysis.stats import binom_sf, mann_whitney_p, poisson_cdf
from perftriage.analysis.triage import Options, change_at, run_triage

from conftest import ROOT, SHARED
from span_rows import SpanRows

BOUTIQUE = SHARED / "real_data" / "onlineboutique-2022-08-22"
PODS = {"frontend": "frontend-579b9bff58-t2dbm", "cart": "cartservice-579f59597d-wc2lz",
        "currency": "currencyservice-cf787dd48-vpjrd", "ship": "shippingservice-7f9c8d6b45-x2k8q",
        "checkout": "checkoutservice-6c9d4b5d8f-hz2mn"}
T0 = 1_661_140_000_000_000_000


def write_spans(path: Path, n: int = 400, at: int | None = None, gap_ms: float = 0.0, cpu_ms: float = 0.0,
                lost: bool = False, root_marker: str = "root", seed: int = 3) -> Path:
    """Requests frontend -> cart, frontend -> currency, currency -> shipping (client span in the
    caller, server span in the callee), one every 100 ms; from request ``at`` on, one change:
    ``gap_ms`` more between client and server on every call into currency, ``cpu_ms`` more own
    time in cart, or (``lost``) currency no longer calls shipping."""
    rng = np.random.default_rng(seed)
    rows = SpanRows(PODS)
    span = rows.span

    for i in range(n):
        after = at is not None and i >= at
        t = T0 + i * 100_000_000
        trace = f"{i + 1:032x}"
        root_start = t
        cart_own = int(rng.uniform(1, 3) * 1e6 + (cpu_ms * 1e6 if after and cpu_ms else 0))
        cur_gap = int(rng.uniform(1, 4) * 1e6 + (gap_ms * 1e6 if after and gap_ms else 0))
        ship = not (after and lost)
        cur_srv = int(rng.uniform(1, 2) * 1e6) + (3_000_000 if ship else 0)
        total = 2_000_000 + cart_own + 2_000_000 + cur_gap + cur_srv + 1_000_000
        root = span(trace, root_marker, "frontend", "hipstershop.Frontend/Recv.", root_start, total)
        c1 = span(trace, root, "frontend", "hipstershop.CartService/GetCart", t + 500_000, cart_own + 2_000_000)
        span(trace, c1, "cart", "hipstershop.CartService/GetCart", t + 1_500_000, cart_own)
        t2 = t + 500_000 + cart_own + 2_000_000 + 100_000
        c2 = span(trace, root, "frontend", "hipstershop.CurrencyService/Convert", t2, cur_gap + cur_srv)
        s2 = span(trace, c2, "currency", "grpc.hipstershop.CurrencyService/Convert", t2 + cur_gap // 2, cur_srv)
        if ship:
            c3 = span(trace, s2, "currency", "hipstershop.ShippingService/GetQuote", t2 + cur_gap // 2 + 500_000,
                      2_500_000)
            span(trace, c3, "ship", "hipstershop.ShippingService/GetQuote", t2 + cur_gap // 2 + 1_000_000, 1_500_000)
    return rows.write(path)


def test_pod_names_give_their_service():
    assert service_of_pod("orders-6d4b9c7f5-x2k8q") == "orders"
    assert service_of_pod("cartservice-579f59597d-wc2lz") == "cartservice"
    assert service_of_pod("redis-cart-0") == "redis-cart"
    assert service_of_pod("fluentd-x7k2q") == "fluentd"
    # names that are not generated stay themselves (a word is never taken for a suffix)
    assert service_of_pod("checkout-service-north") is None and service_of_pod("api") is None


@pytest.mark.parametrize("marker", ["root", "null", "-1", "", "0000000000000000", "ROOT"])
def test_root_markers_make_call_trees(tmp_path, marker):
    spans = read_spans([write_spans(tmp_path / "s.csv", n=30, root_marker=marker)])
    assert spans.problems.total() == 0
    trees = build_call_trees(spans)
    assert trees.incomplete == 0 and sum(c.size for c in trees.categories) == 30
    # the operation is qualified by the pod's service: the caller's client span is not the callee's
    assert "frontend:hipstershop.CartService/GetCart" in spans.methods
    assert "cartservice:hipstershop.CartService/GetCart" in spans.methods
    assert set(spans.services) == {"frontend", "cartservice", "currencyservice", "shippingservice"}


def test_a_root_naming_a_parent_that_never_occurs_is_the_root(tmp_path):
    spans = read_spans([write_spans(tmp_path / "s.csv", n=20, root_marker="ffffffffffffffff")])
    assert spans.problems.rootless == 20 and spans.problems.orphans == 0
    assert build_call_trees(spans).incomplete == 0


def test_gzip_files_are_read_and_a_damaged_one_is_one_error(tmp_path):
    plain = write_spans(tmp_path / "s.csv", n=50)
    gz = tmp_path / "s.csv.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = read_spans([plain]), read_spans([gz])
    assert len(a) == len(b) and np.array_equal(a.start, b.start)
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(gz.read_bytes()[:200])
    with pytest.raises(InputError, match="bad.csv.gz: a gzip file that cannot be decompressed"):
        run_triage([bad])


def test_overlapping_files_are_not_a_data_problem(tmp_path):
    f = write_spans(tmp_path / "s.csv", n=30)
    g = tmp_path / "t.csv"
    g.write_text(f.read_text())
    res = run_triage([f, g], Options(incident_time=None))
    assert res.spans.problems.repeated == len(res.spans) and res.spans.problems.total() == 0
    assert not [x for x in res.findings if "data quality" in x.title]
    assert any("given twice, identical" in n for n in res.report.notes)


@pytest.mark.parametrize("change,culprit", [({"gap_ms": 300.0}, "currencyservice"),
                                            ({"cpu_ms": 40.0}, "cartservice"),
                                            ({"lost": True}, "currencyservice")])
def test_what_changed_names_the_pod(tmp_path, change, culprit):
    path = write_spans(tmp_path / "s.csv", n=400, at=250, **change)
    spans = read_spans([path])
    before, after = split_spans(spans, T0 + 250 * 100_000_000)
    ch = diagnose_change(spans, spans, ref_rows=before, cur_rows=after)
    assert ch.suspects and ch.suspects[0].service == culprit, [(s.service, s.headline()) for s in ch.suspects]
    top = ch.suspects[0]
    if "gap_ms" in change:
        # the delay is between client and server: charged to the edge into currency, not to the
        # frontend's client method and not to currency's own time
        assert {e.kind for e in top.evidence} == {"into"} and "on 1 of 1 caller" in top.headline()
        assert not any(e.kind == "own" for s in ch.suspects for e in s.evidence)
    elif "cpu_ms" in change:
        assert any(e.kind == "own" and e.other.endswith("GetCart") for e in top.evidence)
    else:
        assert [e.kind for e in top.evidence] == ["calls"] and "stopped making calls" in top.headline()


def write_orders(path: Path, frontend_stops: bool = False, checkout_stops: bool = False, n: int = 400,
                 at: int = 250) -> Path:
    """Requests of two kinds that the frontend's entry does not tell apart (one "Recv." for all,
    as OnlineBoutique's frontend): pages (the frontend calls cart, then currency) and, one in
    four, orders (the frontend calls checkout's PlaceOrder, checkout calls shipping, then the
    frontend calls cart and currency). From request ``at`` on, in orders only: the frontend makes
    no call after PlaceOrder (``frontend_stops``: an exception in the frontend), or checkout
    makes no call and the frontend stops for it (``checkout_stops``: checkout returns early)."""
    rng = np.random.default_rng(5)
    rows = SpanRows(PODS)
    span = rows.span

    for i in range(n):
        after = i >= at
        t = T0 + i * 100_000_000
        trace = f"{i + 1:032x}"
        root = span(trace, "root", "frontend", "hipstershop.Frontend/Recv.", t, 60_000_000)
        at_ = t + 1_000_000
        stop = False
        if i % 4 == 0:
            c = span(trace, root, "frontend", "hipstershop.CheckoutService/PlaceOrder", at_, 20_000_000)
            srv = span(trace, c, "checkout", "hipstershop.CheckoutService/PlaceOrder", at_ + 500_000, 19_000_000)
            if not (after and checkout_stops):
                q = span(trace, srv, "checkout", "hipstershop.ShippingService/ShipOrder", at_ + 1_000_000, 5_000_000)
                span(trace, q, "ship", "hipstershop.ShippingService/ShipOrder", at_ + 1_500_000, 4_000_000)
            at_ += 21_000_000
            stop = after and (frontend_stops or checkout_stops)
        if not stop:
            d = int(rng.uniform(2, 4) * 1e6)
            c1 = span(trace, root, "frontend", "hipstershop.CartService/GetCart", at_, d + 1_000_000)
            span(trace, c1, "cart", "hipstershop.CartService/GetCart", at_ + 500_000, d)
            at_ += d + 2_000_000
            c2 = span(trace, root, "frontend", "hipstershop.CurrencyService/Convert", at_, d + 1_000_000)
            span(trace, c2, "currency", "grpc.hipstershop.CurrencyService/Convert", at_ + 500_000, d)
    return rows.write(path)


@pytest.mark.parametrize("who", ["frontend", "checkout"])
def test_calls_lost_in_one_kind_of_request_name_the_pod_that_stopped(tmp_path, who):
    # 25 orders after the change, among 150 requests: the frontend's calls per request served
    # hardly drop (cart and currency are called on every page); per request where it placed an
    # order they drop to none. When checkout returned early (its own call lost), the frontend
    # stopped for it and is not blamed for that
    path = write_orders(tmp_path / "s.csv", frontend_stops=who == "frontend", checkout_stops=who == "checkout")
    spans = read_spans([path])
    before, after = split_spans(spans, T0 + 250 * 100_000_000)
    ch = diagnose_change(spans, spans, ref_rows=before, cur_rows=after)
    want = "frontend" if who == "frontend" else "checkoutservice"
    assert ch.suspects and ch.suspects[0].service == want, [(s.service, s.headline()) for s in ch.suspects]
    top = ch.suspects[0]
    assert "stopped making calls" in top.headline()
    if who == "frontend":
        assert {e.given for e in top.evidence} == {"frontend:hipstershop.CheckoutService/PlaceOrder"}
        assert {e.other.rsplit("/", 1)[-1] for e in top.evidence} == {"GetCart", "Convert"}
        assert "per request it served where it called `frontend:hipstershop.CheckoutService/PlaceOrder`" in \
            top.evidence[0].sentence()
        assert "that called `PlaceOrder`" in top.headline()
    else:
        assert [s.service for s in ch.suspects] == ["checkoutservice"]
    healthy = read_spans([write_orders(tmp_path / "h.csv")])
    before, after = split_spans(healthy, T0 + 250 * 100_000_000)
    assert diagnose_change(healthy, healthy, ref_rows=before, cur_rows=after).suspects == []


def test_a_pod_of_many_entries_is_counted_on_a_sample_of_them(tmp_path, monkeypatch):
    # entries x methods beyond MAX_CELLS: a sample of the entries, the same answer
    from perftriage.analysis.calltrees import what_changed

    spans = read_spans([write_orders(tmp_path / "s.csv", frontend_stops=True, n=1200, at=600)])
    before, after = split_spans(spans, T0 + 600 * 100_000_000)
    whole = diagnose_change(spans, spans, ref_rows=before, cur_rows=after)
    monkeypatch.setattr(what_changed, "MAX_CELLS", 1_000)  # the frontend: 3 methods, 333 of its 600 entries a side
    ch = diagnose_change(spans, spans, ref_rows=before, cur_rows=after)
    for d in (whole, ch):
        assert d.suspects[0].service == "frontend" and all(e.given for e in d.suspects[0].evidence)
    # the orders after the change: 150 in all, about 83 in the sample
    assert max(e.ref_n for e in whole.suspects[0].evidence) == 150
    assert 50 < max(e.ref_n for e in ch.suspects[0].evidence) < 120


def test_no_change_names_nobody(tmp_path):
    spans = read_spans([write_spans(tmp_path / "s.csv", n=400)])
    before, after = split_spans(spans, T0 + 250 * 100_000_000)
    assert diagnose_change(spans, spans, ref_rows=before, cur_rows=after).suspects == []
    assert find_split(spans)[0] is None


def test_a_small_change_over_time_is_not_called_no_change(tmp_path):
    """Requests 1.2x slower from the middle on, 2,000 of them: a change beyond doubt, too small to
    cut the requests at (1.5x): the note says how much it moved, not that nothing changed."""
    spans = read_spans([write_spans(tmp_path / "s.csv", n=2000, at=1000, gap_ms=3.0)])
    at, why = find_split(spans)
    assert at is None
    m = re.match(r"no single change over time in the requests' latency: the clearest split moves their median "
                 r"by (\d\.\d\d)x only \(1\.5x needed; p = (\S+)\)$", why)
    assert m and 1.1 < float(m[1]) < 1.5 and float(m[2]) < 1e-4, why


def test_report_leads_with_what_changed_and_lists_data_quality_last(tmp_path):
    path = write_spans(tmp_path / "s.csv", n=400, at=250, gap_ms=300.0)
    with open(path, "a") as f:  # an orphan: a data problem, never the culprit
        f.write(f"{1:032x},{999999:016x},{888888:016x},{PODS['cart']},x,{T0},{T0 + 10**9},1000000\n")
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(path), "--format", "json",
                        "--incident-time", str((T0 + 250 * 100_000_000) // 10**9)], capture_output=True, text=True,
                       cwd=ROOT, env={**os.environ, "NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    import json

    findings = json.loads(r.stdout)["findings"]
    assert findings[0]["title"].startswith("currencyservice changed most")
    assert "between client and server" in findings[0]["title"]
    assert findings[-1]["title"].startswith("Span data quality")
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(path), "--incident-time", "soon"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3 and r.stderr.count("\n") == 1 and "--incident-time 'soon'" in r.stderr


def test_without_a_time_the_split_is_where_requests_changed(tmp_path):
    path = write_spans(tmp_path / "s.csv", n=400, at=250, gap_ms=300.0)
    res = run_triage([path])
    assert res.change is not None and res.change.suspects[0].service == "currencyservice"
    # the split found lies at the change, give or take a request
    assert abs(res.change.split_ns - (T0 + 250 * 100_000_000)) <= 2 * 100_000_000


def test_stats_match_scipy():
    from scipy.stats import binom, mannwhitneyu, poisson

    rng = np.random.default_rng(2)
    x, y = np.round(rng.exponential(size=40), 1), np.round(rng.exponential(size=70) + 0.2, 1)
    for alt in ("two-sided", "less", "greater"):
        assert mann_whitney_p(x, y, alt) == pytest.approx(mannwhitneyu(x, y, alternative=alt,
                                                                       method="asymptotic").pvalue, rel=1e-9)
    assert np.allclose(binom_sf([0, 3, 11], [10, 10, 10], 0.2), binom.sf(np.array([0, 3, 11]) - 1, 10, 0.2))
    assert np.allclose(poisson_cdf([0, 4], [2.5, 7.0]), poisson.cdf([0, 4], [2.5, 7.0]))


def _boutique(*minutes):
    d = BOUTIQUE / "trace"
    if not d.is_dir():
        pytest.fail(f"{d} is missing: the tests expect ../shared/real_data beside the clone")
    return [d / f"{m}_trace.csv.gz" for m in minutes]


def test_fast_and_careful_csv_paths_read_the_same_real_file(monkeypatch):
    import perftriage.analysis.spans.span_csv as span_csv

    f = _boutique("05_27")
    fast = read_spans(f)
    monkeypatch.setattr(span_csv, "_read_fast", lambda *a: False)
    slow = read_spans(f)
    assert len(fast) == len(slow) == 21589

    def key(t):
        o = np.lexsort((t.span, t.trace))
        names = np.array(t.methods, object)[t.method][o], np.array(t.replicas, object)[t.replica][o]
        par = t.parent[o]
        return (t.span[o], t.start[o], t.end[o], np.array(t.traces, object)[t.trace][o], *names,
                np.where(par >= 0, t.span[np.maximum(par, 0)], par))

    for a, b in zip(key(fast), key(slow)):
        assert np.array_equal(a, b)
    # a large file's columnar path (polars), five batches: the fast path's table, row for row
    monkeypatch.setattr(span_csv, "POLARS_FROM_BYTES", 0)
    monkeypatch.setattr(span_csv, "POLARS_BATCH", 5000)
    monkeypatch.setattr(span_csv, "_read_fast", lambda *a: pytest.fail("the columnar path fell back"))
    columnar = read_spans(f)
    for k in ("trace", "span", "parent", "method", "service", "replica", "start", "end", "traces", "methods",
              "services", "replicas"):
        assert np.array_equal(np.asarray(getattr(columnar, k), object), np.asarray(getattr(fast, k), object)), k


def test_without_a_time_slow_links_name_the_faulty_pod_in_a_faults_own_minutes():
    """OnlineBoutique 04:28-04:29, both minutes inside the network delay injected into cartservice
    at 04:27:03 (nothing to compare over time): the report leads with the links into cartservice,
    249 ms between client and server against 5 ms on the other links; 05:43-05:44, emailservice's
    delay from 05:43:48, its link from then on. 07:53-07:54 (adservice's exceptions, no delay):
    no link named."""
    res = run_triage([str(p) for p in _boutique("04_28", "04_29")])
    assert res.change is None
    first = res.findings[0]
    assert first.title.startswith("calls into cartservice (cartservice-579f59597d-wc2lz) take ")
    assert "cartservice" in first.subject and first.severity == "critical"
    # emailservice's network delay from 05:43:48: its one link slow from then on (8 calls of 36)
    late = run_triage([str(p) for p in _boutique("05_43", "05_44")]).findings[0]
    assert late.title.startswith("calls into emailservice (emailservice-55fdc5b988-f6xth) take ")
    assert " from 05:43:5" in late.title
    calm = run_triage([str(p) for p in _boutique("07_53", "07_54")])
    assert not any("between client and server" in f.title for f in calm.findings)
    assert any(n.startswith("calls between services: no link between services much slower") for n in calm.report.notes)


def test_real_network_delay_is_charged_to_the_callee():
    # OnlineBoutique, 05:27:06 UTC: a network delay injected into currencyservice's pod
    res = run_triage([str(p) for p in _boutique("05_27", "05_28")], Options(incident_time="05:27:06"))
    first = res.change.suspects[0]
    assert first.service == "currencyservice"
    assert any(e.kind == "into" and e.added_ms > 200 for e in first.evidence)
    assert res.findings[0].title.startswith("currencyservice changed most")
    # its one caller in the singular ('1 of its 1 edges' before)
    assert "1 of its 1 edge (calls into or out of it) and 0 of its 4 own methods got slower" in res.findings[0].evidence


def test_what_changed_at_another_time_from_the_spans_read():
    """change_at (the app's w on a counters interval): the result --incident-time gives, from the
    spans already read: its change findings replace the ones compared at the time found, the
    other parts are the same objects. With --reference the spans have their baseline: it says
    so, and --incident-time given with --reference is said to be unused."""
    files = [str(p) for p in _boutique("05_27", "05_28")]
    found = run_triage(files)
    moved = change_at(found, "05:27:06")
    asked = run_triage(files, Options(incident_time="05:27:06"))
    assert moved.change.suspects[0].service == asked.change.suspects[0].service == "currencyservice"
    assert [(f.title, f.evidence) for f in moved.findings] == [(f.title, f.evidence) for f in asked.findings]
    assert sum("changed most" in f.title for f in moved.findings) == 1
    assert sorted(moved.report.notes) == sorted(asked.report.notes)
    assert moved.diagnosis is found.diagnosis and moved.spans is found.spans
    assert moved.options.incident_time == "05:27:06" and found.options.incident_time is None  # found kept whole
    assert found.findings == run_triage(files).findings
    with pytest.raises(InputError, match="not a time"):
        change_at(found, "half past five")
    ref = run_triage(files[1:], Options(reference=files[:1], incident_time="05:27:06"))
    assert any(n.startswith("--incident-time 05:27:06 not used") for n in ref.report.notes)
    with pytest.raises(InputError, match="--reference"):
        change_at(ref, "05:27:06")


def test_split_at_a_given_time_keeps_the_minutes_around_it(tmp_path):
    """--incident-time on a long recording: the requests of the five minutes each side, not every
    request before and after (another incident an hour before would be the reference); where
    fewer than min_requests are that near (span files of some minutes only), the nearest ones."""
    spans = read_spans([write_spans(tmp_path / "s.csv", n=12000)])  # one request every 100 ms, 20 minutes
    at = T0 + 600 * 10**9
    before, after = split_spans(spans, at, 300 * 10**9)
    rs = spans.start[spans.parent == -1]
    n_before = int(((rs >= at - 300 * 10**9) & (rs < at)).sum())
    assert n_before == 3000 and len(np.unique(spans.trace[before])) == 3000
    assert len(np.unique(spans.trace[after])) == 3000
    assert len(split_spans(spans, at)[0]) > len(before)  # without a window: all of them
    # a window that holds too few: the 100 nearest requests on that side
    b, a = split_spans(spans, at, 5 * 10**9)
    assert len(np.unique(spans.trace[b])) == 100 and len(np.unique(spans.trace[a])) == 100
    assert spans.start[b].max() < at <= spans.start[a].min()


def test_a_whole_day_of_spans_compared_at_a_fault_names_it():
    """The development data's trace folder whole (43 minute files, 24 faults over 4 hours) and
    --incident-time at an injection: the minutes around it are compared, not the whole day
    before and after (which named the services of other faults for 12 of the 20)."""
    folder = BOUTIQUE / "trace"
    if not folder.is_dir():
        pytest.skip("no real OnlineBoutique spans here")
    for stamp, service in (("1661146026", "currencyservice"), ("1661142963", "cartservice")):  # 05:27:06, 04:36:03
        res = run_triage([str(folder)], Options(incident_time=stamp))
        assert res.change.suspects[0].service == service, stamp


def _roots(path: Path, slow: tuple[int, int] | None = None, n: int = 24000, seed: int = 6) -> Path:
    """n requests of one span each, one every 100 ms (40 minutes), about 10 ms each; ``slow``:
    the requests from..to 3x slower (a short incident in a long recording)."""
    rng = np.random.default_rng(seed)
    rows = SpanRows(PODS)
    for i in range(n):
        dur = int(rng.lognormal(np.log(10e6), 0.2)) * (3 if slow and slow[0] <= i < slow[1] else 1)
        rows.span(f"{i + 1:032x}", "root", "frontend", "hipstershop.Frontend/Recv.", T0 + i * 100_000_000, dur)
    return rows.write(path)


def test_a_short_incident_in_a_long_recording_is_found_within_minutes(tmp_path):
    """Three minutes of 3x slower requests in forty: no split of all the requests is clear (the
    incident is 4% of them), the clearest change within five minutes each side is its start; a
    healthy recording has none."""
    from perftriage.analysis.calltrees.what_changed import local_changes

    spans = read_spans([_roots(tmp_path / "s.csv", slow=(12000, 13800))])
    assert find_split(spans)[0] is None
    [(at, what)] = local_changes(spans, 300 * 10**9, 1)
    assert what == "latency" and abs(at - (T0 + 12000 * 100_000_000)) <= 10 * 10**9  # within 10 s of 20 min
    healthy = read_spans([_roots(tmp_path / "h.csv")])
    assert local_changes(healthy, 300 * 10**9, 1) == "nor any within 5 minutes"


def test_the_whole_days_spans_without_a_time_are_compared_at_their_clearest_change():
    folder = BOUTIQUE / "trace"
    if not folder.is_dir():
        pytest.skip("no real OnlineBoutique spans here")
    res = run_triage([str(folder)])
    # 04:02:07, the frontend's early return: its requests lose half their spans
    assert res.change is not None and res.change.suspects[0].service == "frontend"
    assert "04:02:" in res.change.how and "5 minutes each side" in res.change.how
    # the other clear changes, as times to give: the frontend's CPU contention (03:53:54), the
    # network delay into currencyservice (05:27:06), recommendationservice's CPU (07:09:43)
    other = next(n for n in res.report.notes if n.startswith("what changed: the requests changed clearly"))
    times = re.findall(r"(\d\d:\d\d:\d\d) UTC", other)
    faults = [(3, 53, 54), (5, 27, 6), (7, 9, 43)]
    assert len(times) == 3 and all(0 <= (int(a[:2]) * 3600 + int(a[3:5]) * 60 + int(a[6:])) - (h * 3600 + m * 60 + s)
                                   <= 60 for a, (h, m, s) in zip(times, faults)), other


def test_without_a_time_a_service_that_stops_calling_is_named():
    """OnlineBoutique 07:53-07:54, adservice throwing from 07:53:33 (spans without a status, no
    slow link): its getAds spans called getRandomAds in 19% of requests, then never; the report
    leads with adservice, from when. Two minutes of the fault at 07:54-07:55 alike."""
    for minutes, since in ((("07_53", "07_54"), "07:53:"), (("07_54", "07_55"), "07:5")):
        res = run_triage([str(p) for p in _boutique(*minutes)])
        first = res.report.ranked()[0]
        assert first.title.startswith(f"adservice stops calling hipstershop.AdService/getRandomAds from {since}"), \
            first.title
        assert first.severity == "critical" and first.target["kind"] == "method"
        assert res.lost.calls[0].rate_after < 0.01 < 0.1 < res.lost.calls[0].rate_before


@pytest.mark.parametrize("stops", ["checkout", "nobody"])
def test_lost_calls_name_the_service_that_returns_early(tmp_path, stops):
    """Generated orders: checkout's PlaceOrder stops calling ShipOrder from request 250 on (it
    returns early): checkout named, from then; nothing stops: nothing named."""
    from perftriage.analysis.calltrees.lost_calls import lost_calls

    path = write_orders(tmp_path / "orders.csv", checkout_stops=stops == "checkout")
    lc = lost_calls(read_spans([path]))
    if stops == "nobody":
        assert not lc.calls and lc.why
        return
    top = lc.calls[0]
    assert top.service.startswith("checkout") and top.callee == f"{top.service}:hipstershop.ShippingService/ShipOrder"
    assert top.rate_before == 1.0 and top.with_after == 0
    assert abs(top.since_ns - (T0 + 252 * 100_000_000)) < 5 * 100_000_000  # the first order from request 250 on
