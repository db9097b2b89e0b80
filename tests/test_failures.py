"""Calls that fail: the span readers read each span's status (OTLP's, Jaeger's and Zipkin's error
tags, a span CSV's status column) and the call-tree analysis says which method's calls fail and
where the requests' errors start (calltrees/failures.py), on generated systems where a method
starts failing (perftriage sample --scenario errors) and on systems that only fail now and then."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from fuzzing.strategies import jaeger_doc, otlp_doc, zipkin_doc
from perftriage.analysis.calltrees.failures import find_failures
from perftriage.analysis.sim.microservices import MicroConfig, write_microservice_sample
from perftriage.analysis.spans import read_spans
from perftriage.analysis.spans.status import StatusScheme
from perftriage.analysis.triage import Options, change_at, run_triage
from span_rows import SpanRows


def _spans_of(doc, tmp_path, name):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return read_spans([p])


def test_otlp_status_error_by_code_or_name(tmp_path):
    doc = otlp_doc()
    spans = [rs["scopeSpans"][0]["spans"][0] for rs in doc["resourceSpans"]]
    spans[0]["status"] = {"code": 2, "message": "boom"}
    spans[1]["status"] = {"code": "STATUS_CODE_ERROR"}
    spans[2]["status"] = {"code": 1}  # OK
    sp = _spans_of(doc, tmp_path, "t.otlp.json")
    assert sp.error is not None and int(sp.error.sum()) == 2
    assert sorted(sp.span[sp.error].tolist()) == sorted(int(s["spanId"][-16:], 16) for s in spans[:2])
    plain = _spans_of(otlp_doc(), tmp_path, "plain.otlp.json")
    assert plain.error is not None and not plain.error.any()  # OTLP says it: none failed


def test_jaeger_and_zipkin_error_tags(tmp_path):
    doc = jaeger_doc()
    first = doc["data"][0]["spans"]
    first[0]["tags"] = [{"key": "error", "type": "bool", "value": True}]
    first[1]["tags"] = [{"key": "otel.status_code", "type": "string", "value": "ERROR"}]
    first[2]["tags"] = [{"key": "error", "type": "bool", "value": False}, {"key": "http.method", "value": "GET"}]
    sp = _spans_of(doc, tmp_path, "jaeger.json")
    assert int(sp.error.sum()) == 2
    zdoc = zipkin_doc()
    zdoc[0]["tags"]["error"] = "timeout"
    zdoc[3]["tags"]["otel.status_code"] = "ERROR"
    zp = _spans_of(zdoc, tmp_path, "zipkin.json")
    assert int(zp.error.sum()) == 2


@pytest.mark.parametrize("name,values,failed", [
    ("status_code", ["STATUS_CODE_ERROR", "STATUS_CODE_OK", "STATUS_CODE_UNSET", ""], [1, 0, 0, 0]),
    ("otel.status_code", ["2", "1", "0"], [1, 0, 0]),
    ("http.status_code", ["200", "404", "500", "503"], [0, 0, 1, 1]),
    ("rpc.grpc.status_code", ["0", "5", "14"], [0, 1, 1]),
    ("error", ["true", "false", "1", "0", "", "connection refused"], [1, 0, 1, 0, 0, 1]),
    ("status", ["OK", "Error", "failed"], [0, 1, 1]),
    ("success", ["True", "False", "true", "0", "1"], [0, 1, 0, 1, 0]),  # the AIOps challenges' column
])
def test_status_columns_are_read_by_their_scheme(name, values, failed):
    assert StatusScheme(name).failed(values).astype(int).tolist() == failed


def _sample(tmp_path, **kw):
    cfg = MicroConfig(requests=kw.pop("requests", 2500), write_log=False, **kw)
    truth = write_microservice_sample(tmp_path / "s", cfg)
    return truth, read_spans([tmp_path / "s" / "spans.otlp.jsonl"])


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_method_that_starts_failing_is_named_with_when(seed, tmp_path):
    truth, spans = _sample(tmp_path, scenario="errors", seed=seed)
    fl = find_failures(spans)
    assert fl.known and fl.methods
    top = fl.methods[0]
    service, op = truth["failing_method"].split(".", 1)
    assert top.step and top.method == f"{service}:{op}"
    assert abs(top.since_ns - truth["incident_start_ns"]) < 2 * 10**9  # within two seconds of the onset
    assert 0.2 < top.rate < 0.4 and top.rate_before < 0.01  # 30% from the onset, background before
    # the methods whose spans fail only because a call of theirs did are not named
    assert all(m.method == top.method or not m.step for m in fl.methods)


def test_failures_now_and_then_are_no_onset(tmp_path):
    """0.05% of every call failing all along: nothing starts failing, nothing fails 1% of its calls."""
    _, spans = _sample(tmp_path, scenario="errors", error_rate=0.0, seed=5, requests=4000)
    assert spans.error.any()
    fl = find_failures(spans)
    assert fl.known and not fl.methods and fl.why


def test_the_report_leads_with_the_failing_method_and_w_compares_at_a_time(tmp_path):
    truth, _ = _sample(tmp_path, scenario="errors", seed=7)
    path = tmp_path / "s" / "spans.otlp.jsonl"
    res = run_triage([path], Options())
    service, op = truth["failing_method"].split(".", 1)
    first = res.report.ranked()[0]
    assert first.title.startswith(f"{service} fails from ") and f"calls to {op}" in first.title
    assert first.severity == "critical" and first.target == {"kind": "failing", "method": f"{service}:{op}"}
    # at a time given (the app's w, as --incident-time): compared there, said once
    at = truth["incident_start_ns"]
    moved = change_at(res, str(at / 1e9))
    titles = [f.title for f in moved.report.findings if "fails" in f.title]
    assert len(titles) == 1 and titles[0].startswith(f"{service} fails from ")
    assert moved.failures.how and moved.failures.methods[0].since_ns == moved.change.split_ns
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(path), "--format", "json", "-q"],
                       capture_output=True, text=True, timeout=300)
    doc = json.loads(r.stdout)
    assert doc["findings"][0]["title"] == first.title


def test_spans_without_status_say_nothing_of_errors(tmp_path):
    p = tmp_path / "spans.csv"
    p.write_text("trace_id,span_id,parent_span_id,service,operation,start_ns,end_ns\n"
                 + "".join(f"t{i},{i + 1:016x},,svc,op,{10**18 + i * 10**6},{10**18 + i * 10**6 + 5000}\n"
                           for i in range(50)))
    spans = read_spans([p])
    assert spans.error is None
    fl = find_failures(spans)
    assert not fl.known and "no status" in fl.why
    res = run_triage([p], Options())
    assert not any("failed calls" in n for n in res.report.notes)
    assert not any("fails" in f.title for f in res.report.findings)
    assert np.all(spans.duration == 5000)


def test_an_aiops_export_says_which_calls_failed_by_its_success_column(tmp_path):
    """The AIOps 2020 challenge's trace CSVs (callType, startTime, elapsedTime, success, traceId,
    id, pid, cmdb_id, serviceName): a call whose success is False failed."""
    p = tmp_path / "trace_csf.csv"
    rows = ["callType,startTime,elapsedTime,success,traceId,id,pid,cmdb_id,serviceName"]
    t0 = 1586534400000
    for i in range(400):
        failing = i >= 200 and i % 3 == 0  # the second half: a third of os_021's calls fail
        rows.append(f"CSF,{t0 + i * 1000},{12 + i % 5},True,tr{i},r{i},None,docker_001,csf_001")
        rows.append(f"CSF,{t0 + i * 1000 + 2},{5 + i % 3},{not failing},tr{i},c{i},r{i},os_021,csf_002")
    p.write_text("\n".join(rows) + "\n")
    spans = read_spans([p])
    assert spans.error is not None and int(spans.error.sum()) == sum(1 for i in range(200, 400) if i % 3 == 0)
    fl = find_failures(spans)
    assert fl.methods and fl.methods[0].service == "csf_002" and fl.methods[0].step


def test_against_reference_spans_a_method_failing_more_than_there_is_named(tmp_path):
    ref_truth = write_microservice_sample(tmp_path / "ref", MicroConfig(requests=2000, scenario="errors", error_rate=0.0,
                                                                        seed=11, write_log=False))
    truth = write_microservice_sample(tmp_path / "cur", MicroConfig(requests=2000, scenario="errors", seed=12,
                                                                    write_log=False))
    assert ref_truth["failing_method"]  # chosen, but failing at 0%: the background failures alone
    service, op = truth["failing_method"].split(".", 1)
    res = run_triage([tmp_path / "cur" / "spans.otlp.jsonl"],
                     Options(reference=(str(tmp_path / "ref" / "spans.otlp.jsonl"),)))
    top = res.failures.methods[0]
    assert top.reference and top.method == f"{service}:{op}" and top.calls_before > 1000
    first = res.report.ranked()[0]
    assert first.title.startswith(f"{service} fails: ") and "in the reference" in first.title
    assert "against the reference spans" in " ".join(first.evidence)
    # the reference against itself: nothing fails more
    same = run_triage([tmp_path / "ref" / "spans.otlp.jsonl"],
                      Options(reference=(str(tmp_path / "ref" / "spans.otlp.jsonl"),)))
    assert not same.failures.methods


def _timeouts(slow_callee: bool):
    """Requests: frontend -> checkout (server) -> its client call to payment -> payment's server
    span. From request 300 on, one in three: payment takes 5 s (``slow_callee``) and checkout's
    client call gives up (it fails, payment's span does not), or checkout's own call fails at once
    while payment answers as usual."""
    from perftriage.analysis.spans.table import SpanBuilder

    b = SpanBuilder()
    b.status_known = True
    sid = 0
    for r in range(600):
        t = 10**18 + r * 50_000_000
        bad = r >= 300 and r % 3 == 0
        pay = 5_000_000_000 if bad and slow_callee else 10_000_000 + (r % 7) * 100_000
        ids = [sid + 1, sid + 2, sid + 3, sid + 4]
        sid += 4
        tr = f"t{r}"
        b.add(tr, ids[0], None, "frontend", "Recv", "fe-1", t, t + pay + 4_000_000, bad)
        b.add(tr, ids[1], ids[0], "checkout", "PlaceOrder", "co-1", t + 1_000_000, t + pay + 3_000_000, bad)
        b.add(tr, ids[2], ids[1], "checkout", "payment/Charge", "co-1", t + 1_500_000, t + pay + 2_000_000, bad)
        b.add(tr, ids[3], ids[2], "payment", "Charge", "pay-1", t + 1_600_000, t + pay + 1_900_000, False)
    return b.finish()


@pytest.mark.parametrize("slow_callee", [True, False])
def test_a_call_that_gave_up_waiting_blames_its_callee(slow_callee):
    """A failed client call whose callee (which did not fail) took its whole time, 5 s against
    its usual 10 ms, timed out: the error starts at the callee. A client call that fails while its
    callee answered as usual is where its error started."""
    fl = find_failures(_timeouts(slow_callee))
    top = fl.methods[0]
    assert top.step and top.method == ("payment:Charge" if slow_callee else "checkout:payment/Charge")
    assert top.failed == 100 and top.failed_before == 0
    assert top.timeouts == (100 if slow_callee else 0)
    assert top.headline().startswith("payment times out from " if slow_callee else "checkout fails from ")


def _children(spans, rows):
    """Per row: the set of its children's method names."""
    kids = {int(r): set() for r in rows}
    for c in np.flatnonzero(spans.parent >= 0).tolist():
        p = int(spans.parent[c])
        if p in kids:
            kids[p].add(spans.methods[spans.method[c]])
    return kids


@pytest.mark.parametrize("scenario", ["return", "exception"])
def test_a_method_that_stops_before_its_calls(tmp_path, scenario):
    """--scenario return / exception (seed 703: payment's charge): from the incident on, charge
    makes none of its calls; when it throws, checkout gives up on clearing the cart too; no span
    says it failed (as Nezha's)."""
    truth, spans = _sample(tmp_path, scenario=scenario, seed=703)
    assert truth["failing_method"] == "payment.charge" and not spans.error.any()
    at = truth["incident_start_ns"]
    charge = np.flatnonzero(spans.method == spans.methods.index("payment:charge"))
    late = charge[spans.start[charge] > at + 10**8]
    early = charge[spans.start[charge] < at]
    assert len(late) > 20 and len(early) > 20
    kids = _children(spans, charge)
    assert all(kids[r] == set() for r in late.tolist())
    assert all(kids[r] == {"db:write", "payment:refund_check"} for r in early.tolist())
    checkouts = _children(spans, spans.parent[late])
    cleared = sum("cart:clear" in k for k in checkouts.values())
    assert cleared == (len(late) if scenario == "return" else 0)


def test_the_deeper_of_the_calls_lost_together_is_named_first(tmp_path):
    """payment's charge throws and checkout gives up on clearing the cart: both lose calls, as
    often, in the same requests. payment's are deeper (checkout's lost spans hold them): payment
    is named first, checkout's lost call says it follows from them."""
    from perftriage.analysis.calltrees.lost_calls import lost_calls

    _, spans = _sample(tmp_path, scenario="exception", seed=703)
    lc = lost_calls(spans)
    assert [c.caller for c in lc.calls[:2]] == ["payment:charge", "payment:charge"]
    checkout = next(c for c in lc.calls if c.caller == "frontend:checkout")
    assert checkout.callee == "cart:clear" and checkout.follows == "payment:charge" and checkout.p == lc.calls[0].p
    assert lc.calls[0].follows == ""
    first = run_triage([tmp_path / "s" / "spans.otlp.jsonl"]).report.ranked()[0]
    assert first.title.startswith("payment stops calling "), first.title
    assert any(e.startswith("frontend:checkout -> cart:clear") and "as payment:charge's, deeper" in e
               for e in first.evidence)


def test_an_edge_is_compared_per_calling_method(tmp_path):
    """auth's verify throws (seed 701): home and product requests end there, so after the
    incident catalog serves only searches (6 ms of its own, two queries) where before it served
    mostly lists and items (1.5-3 ms, one query). Its spans call db directly (no client span):
    the edge's time is their own time, and compared over all of catalog's methods at once it
    looked 5 ms slower on every db pod. Per calling method nothing slowed."""
    from perftriage.analysis.calltrees.what_changed import diagnose_change, split_spans

    truth, spans = _sample(tmp_path, scenario="exception", seed=701, requests=3000)
    assert truth["failing_method"] == "auth.verify"
    before, after = split_spans(spans, truth["incident_start_ns"])
    ch = diagnose_change(spans, spans, ref_rows=before, cur_rows=after)
    assert not [e for e in ch.evidence if e.kind in ("into", "out of")], [e.sentence() for e in ch.evidence]
    assert ch.suspects[0].service == "auth" and "stopped making calls" in ch.suspects[0].headline()


def test_a_chain_of_lost_calls_is_named_from_its_deepest(tmp_path):
    """a's A calls b's B (which calls c's C, which calls d's D, then e's E) and then f's F. From
    request 200 on C throws: C no longer calls D, B gives up on E, A on F. Three callers lose
    calls in the same requests: c first (where the requests stopped), then b, then a, each
    following the one just below it."""
    from perftriage.analysis.calltrees.lost_calls import lost_calls

    out = SpanRows(suffix="-5f6585d649-fnmft")
    span = out.span
    ms = 1_000_000
    for i in range(400):
        t, trace, thrown = 1_661_140_000 * 10**9 + i * 100 * ms, f"{i + 1:032x}", i >= 200
        a = span(trace, "root", "svca", "A", t, 20 * ms)
        b = span(trace, a, "svcb", "B", t + ms, 10 * ms)
        c = span(trace, b, "svcc", "C", t + 2 * ms, 4 * ms)
        if not thrown:
            span(trace, c, "svcd", "D", t + 3 * ms, ms)
            span(trace, b, "svce", "E", t + 7 * ms, ms)
            span(trace, a, "svcf", "F", t + 12 * ms, ms)
    lc = lost_calls(read_spans([out.write(tmp_path / "chain.csv")]))
    assert [(c.caller, c.callee, c.follows) for c in lc.calls] == [
        ("svcc:C", "svcd:D", ""), ("svcb:B", "svce:E", "svcc:C"), ("svca:A", "svcf:F", "svcb:B")]
    assert all(c.with_after == 0 and c.rate_before == 1.0 for c in lc.calls)


def test_a_lost_client_call_says_whom_it_called(tmp_path):
    """TrainTicket's spans (Nezha's export): a service's calls out are client spans named 'HTTP
    GET' whatever they call. ts-basic-service returning early from request 150 on stops calling
    them: the headline says whom those calls went to."""
    from perftriage.analysis.calltrees.lost_calls import lost_calls

    out = SpanRows()
    span = out.span
    ms = 1_000_000
    basic, station, train = ("ts-basic-service-5dc8d4f9fd-46997", "ts-station-service-7f5b6c9d8-k2x4q",
                             "ts-train-service-68d9b5f7c4-p9z2w")
    for i in range(300):
        t, trace = 1_674_954_000 * 10**9 + i * 100 * ms, f"{i + 1:032x}"
        srv = span(trace, "root", basic, "/api/v1/basicservice/basic/travel", t, 20 * ms)
        ctl = span(trace, srv, basic, "BasicController.queryForTravel", t + ms, 18 * ms)
        if i < 150:
            for k, (pod, path) in enumerate(((station, "/api/v1/stationservice/stations/id"),
                                             (train, "/api/v1/trainservice/trains/byName"))):
                c = span(trace, ctl, basic, "HTTP GET", t + (2 + 6 * k) * ms, 5 * ms)
                span(trace, c, pod, path, t + (3 + 6 * k) * ms, 3 * ms)
    top = lost_calls(read_spans([out.write(tmp_path / "09_04_trace.csv")])).calls[0]
    assert top.service == "ts-basic-service" and top.callee == "ts-basic-service:HTTP GET"
    assert top.headline().startswith("ts-basic-service stops calling HTTP GET (to ts-station-service, "
                                     "ts-train-service) from "), top.headline()


@pytest.mark.parametrize("client_spans", [True, False])
def test_a_lost_call_says_what_was_called_last_where_the_callers_clock_tells(tmp_path, client_spans):
    """The frontend's requests call the cart, then the currency service, then place the order;
    from request 200 on they stop after the currency call (the currency service failing and the
    frontend giving up, or the frontend returning early: without a status the same). With client
    spans (the frontend's own, by its clock) the finding says the call it stopped after; where
    the frontend's spans call the others' directly (their hosts' clocks, offset) it does not."""
    from perftriage.analysis.calltrees.lost_calls import lost_calls

    out = SpanRows(suffix="-5f6585d649-fnmft")
    span = out.span
    ms = 1_000_000
    calls = [("cartservice", "hipstershop.CartService/GetCart"), ("currencyservice", "hipstershop.CurrencyService/Convert"),
             ("checkoutservice", "hipstershop.CheckoutService/PlaceOrder")]
    for i in range(400):
        t, trace = 1_661_140_000 * 10**9 + i * 100 * ms, f"{i + 1:032x}"
        root = span(trace, "root", "frontend", "hipstershop.Frontend/Recv.", t, 30 * ms)
        for k, (pod, name) in enumerate(calls[:2] if i >= 200 else calls):
            at = t + (1 + 8 * k) * ms
            if client_spans:
                c = span(trace, root, "frontend", name, at, 6 * ms)
                span(trace, c, pod, name, at + ms, 4 * ms)
            else:  # the callees' spans, the currency service's calling on (an order is not its clock's)
                srv = span(trace, root, pod, name, at, 6 * ms)
                if pod == "currencyservice":
                    span(trace, srv, "ratesservice", "GetRates", at + ms, 2 * ms)
    path = out.write(tmp_path / "s.csv")
    from perftriage.analysis.calltrees.findings import lost_call_findings

    lc = lost_calls(read_spans([path]))
    top = lc.calls[0]
    assert top.service == "frontend" and top.callee.endswith("PlaceOrder") and top.with_after == 0
    first = lost_call_findings(lc)[0]
    if client_spans:
        assert top.after == "hipstershop.CurrencyService/Convert"
        assert first.title.endswith("right after calling hipstershop.CurrencyService/Convert (which, failing, "
                                    "would look the same)"), first.title
    else:
        assert top.after == "" and first.title.endswith("it returns early or fails before them"), first.title
        assert "PlaceOrder (in checkoutservice)" not in first.title  # the service is in the method's name


def _spring_chain(tmp_path, requests: int = 400, fault_from: int | None = 200, seed: int = 4,
                  slow_from: int | None = None, returns_from: int | None = None):
    """TrainTicket's shape (Spring services, Nezha's export: no status column): the gateway calls
    food-service, whose controller calls travel-service. From request ``fault_from`` on,
    travel-service throws in half its requests: Spring runs BasicErrorController.error under its
    server span, and food-service, given the 500, throws too (its own error handler). Throughout,
    travel2-service's handler runs in a fifth of its requests (a failure of its own, every minute).
    ``slow_from``: from that request on, travel-service's controller takes five times as long.
    ``returns_from``: from that request on, in 90% of its requests travel-service's controller
    returns at once, without reading its trip (a wrong value, Nezha's "return" fault), and
    food-service throws on what it got (its error handler; travel-service runs none)."""
    rng = np.random.default_rng(seed)
    r = SpanRows(suffix="-5f6585d649-fnmft")
    t0 = 1_674_986_400 * 10**9
    for k in range(requests):
        tr, t = f"{k + 1:032x}", t0 + k * 150_000_000
        root = r.span(tr, "root", "ts-gateway-service", "/*", t, 40_000_000)
        if k % 2:
            srv = r.span(tr, r.span(tr, root, "ts-gateway-service", "HTTP POST", t + 10**6, 30_000_000),
                         "ts-travel2-service", "/api/v1/travel2service/trips/left", t + 2 * 10**6, 20_000_000)
            r.span(tr, srv, "ts-travel2-service", "Travel2Controller.queryInfo", t + 3 * 10**6, 10_000_000)
            if rng.random() < 0.2:
                r.span(tr, srv, "ts-travel2-service", "BasicErrorController.error", t + 15 * 10**6, 400_000)
            continue
        food = r.span(tr, r.span(tr, root, "ts-gateway-service", "HTTP GET", t + 10**6, 35_000_000),
                      "ts-food-service", "/api/v1/foodservice/foods", t + 2 * 10**6, 30_000_000)
        ctl = r.span(tr, food, "ts-food-service", "FoodController.getAllFood", t + 3 * 10**6, 25_000_000)
        travel = r.span(tr, r.span(tr, ctl, "ts-food-service", "HTTP GET", t + 4 * 10**6, 15_000_000),
                        "ts-travel-service", "/api/v1/travelservice/routes/{tripId}", t + 5 * 10**6, 12_000_000)
        slow = slow_from is not None and k >= slow_from
        ctl2 = r.span(tr, travel, "ts-travel-service", "TravelController.getRouteByTripId", t + 6 * 10**6,
                      int(rng.uniform(7, 9) * 10**6) * (5 if slow else 1))
        if returns_from is not None and k >= returns_from and rng.random() < 0.9:
            r.span(tr, food, "ts-food-service", "BasicErrorController.error", t + 28 * 10**6, 500_000)
        else:
            r.span(tr, ctl2, "ts-travel-service", "TripRepository.findByTripId", t + 7 * 10**6, 1_000_000)
        if fault_from is not None and k >= fault_from and rng.random() < 0.5:
            r.span(tr, travel, "ts-travel-service", "BasicErrorController.error", t + 15 * 10**6, 500_000)
            r.span(tr, food, "ts-food-service", "BasicErrorController.error", t + 28 * 10**6, 500_000)
    return r.write(tmp_path / "10_04_trace.csv")


def test_spans_without_status_fail_where_they_ran_an_error_handler_the_deepest_first(tmp_path):
    p = _spring_chain(tmp_path)
    spans = read_spans([p])
    assert spans.error_inferred and spans.error is not None
    handler = np.array(["BasicErrorController" in spans.methods[m] for m in spans.method])
    assert np.array_equal(np.flatnonzero(spans.error), np.unique(spans.parent[handler]))
    thrown = int(np.sum([spans.methods[m] == "ts-travel-service:BasicErrorController.error" for m in spans.method]))
    assert thrown > 50 and any(n.startswith("the spans carry no status: a call that ran an error handler is taken "
                                            "as failed") and f"ts-travel-service:BasicErrorController.error: {thrown}"
                               in n for n in spans.notes)
    fl = find_failures(spans)
    # travel-service's throws start the errors; food-service failed because of them; travel2's fail throughout
    assert fl.methods[0].service == "ts-travel-service" and fl.methods[0].step
    assert "ts-food-service" not in {f.service for f in fl.methods}
    res = run_triage([p], Options())
    first = res.report.ranked()[0]
    assert first.title.startswith("ts-travel-service fails from ") and "the requests' errors start there" in first.title
    assert any("the spans carry no status: a span that ran an error handler failed" in e for e in first.evidence)
    assert any("ran an error handler" in e for e in first.evidence)


@pytest.mark.parametrize("method,handler", [
    ("ts-food-service:BasicErrorController.error", True), ("web:GET /error", True), ("api:handle_exception", True),
    ("api:GlobalExceptionHandler.handleException", True), ("shop:ErrorHandlerMiddleware", True),
    ("web:POST /api/errors", False), ("stats:getErrorCount", False), ("mirror:ErrorReportingService/Report", False),
    ("checkout:PlaceOrder", False)])
def test_error_handlers_are_told_by_their_names(method, handler):
    from perftriage.analysis.spans.status import is_error_handler

    assert is_error_handler(method) is handler


def test_a_method_failing_throughout_comes_after_what_changed_at_the_incident(tmp_path):
    """travel2's error handler runs in a fifth of its calls all along (its usual failures), while
    travel-service's controller slows down five times from a time on: the slowdown leads the
    report, the failures throughout come after it (they tied with what changed most before)."""
    res = run_triage([_spring_chain(tmp_path, 800, fault_from=None, slow_from=400)], Options())
    ranked = res.report.ranked()
    assert "ts-travel-service" in ranked[0].title and "fails" not in ranked[0].title, ranked[0].title
    fails = [f for f in ranked if f.title.startswith("ts-travel2-service fails: ")]
    changed = [f for f in ranked if "ts-travel-service" in f.title]
    # ranked below, not tied with what changed most and left to the order the findings were made in
    assert fails and len(changed) >= 2 and min(f.score for f in changed) > fails[0].score


def test_errors_over_an_early_return_below_them_name_the_early_return_first(tmp_path):
    """travel-service returns a wrong value early (no trip read) and food-service throws on it:
    the deepest error handler is food-service's, but below it, in the same requests, travel's
    controller stopped calling. The early return leads the report; food's failure says it
    follows from it."""
    res = run_triage([_spring_chain(tmp_path, 600, fault_from=None, returns_from=300)], Options())
    fl = res.failures
    assert fl.methods[0].service == "ts-food-service" and fl.after is not None
    assert fl.after.caller == "ts-travel-service:TravelController.getRouteByTripId" and fl.after_share > 0.9
    ranked = res.report.ranked()
    assert ranked[0].title.startswith("ts-travel-service stops calling TripRepository.findByTripId from ")
    assert "errors from then on start over its calls that stopped calling" in ranked[0].evidence[1]
    second = next(f for f in ranked if f.title.startswith("ts-food-service fails from "))
    assert second.title.endswith("; after ts-travel-service's early returns below it")
