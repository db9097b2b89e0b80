"""Units of work cut from kernel traces without markers: processes and threads, who belongs to the
system's background, and which units are whole enough to be compared."""

from __future__ import annotations

import numpy as np
import pytest

from perftriage.analysis.ctf.pipeline import read_once
from perftriage.analysis.errors import PerftriageError
from perftriage.analysis.execgraph import tasks
from perftriage.analysis.execgraph.builder import GraphBuilder
from perftriage.analysis.requests import units

from conftest import needs_bt2, real_trace

_GRAPHS = {}


def graphs(name):
    if name not in _GRAPHS:
        _GRAPHS[name] = read_once([real_trace(name)], [GraphBuilder()]).results[0]
    return _GRAPHS[name]


def test_parse_unit():
    assert units.parse_unit("auto") == ("auto", None)
    assert units.parse_unit("processes") == ("processes", None)
    assert units.parse_unit("syscall:read") == ("syscall", "read")
    for bad in ("syscall:", "process", ""):
        with pytest.raises(PerftriageError, match="auto, markers, processes, threads or syscall:NAME"):
            units.parse_unit(bad)


@needs_bt2
def test_roles_on_a_real_trace():
    g = next(iter(graphs("tracevizlab-apt").values()))
    by_name = {}
    for tid in g.threads:
        if tid > 0 and tid in g.tid_index:
            by_name.setdefault(g.comm(tid), set()).add(tasks.role(g, tid))
    assert by_name["lttng-consumerd"] == {tasks.TRACER}
    assert by_name["lttng-sessiond"] == {tasks.TRACER}
    assert by_name["ksoftirqd/0"] == {tasks.KERNEL}
    assert by_name["jbd2/sda1-8"] == {tasks.KERNEL}  # known from the statedump, not only by name
    assert by_name["apt"] == {tasks.USER} and by_name["dpkg"] == {tasks.USER}
    assert tasks.role(g, 0) == tasks.IDLE


@needs_bt2
@pytest.mark.parametrize("name,recorded", [("tracevizlab-wget-k-20180802-115043", "wget"),
                                           ("tracevizlab-cat-kern-ust", "cat"),
                                           ("tc-many-threads", "multithread")])
def test_the_recorded_process_is_the_whole_one(name, recorded):
    procs = tasks.processes(next(iter(graphs(name).values())))
    whole = [p for p in procs if p.whole and p.role == tasks.USER]
    assert [p.name for p in whole] == [recorded]
    p = whole[0]
    assert p.start < p.end and p.run_ns > 0 and p.leader == p.pid
    # what lived through the whole trace is said so, never counted whole
    assert all(p.span == "longer than the trace" for p in procs if p.started_before and p.running_after)


@needs_bt2
def test_process_units_of_apt():
    table = units.process_units(graphs("tracevizlab-apt"))
    comm, span, role = (table.fields[k] for k in ("comm", "span", "role"))
    ok = units.comparable(table)
    assert ok.sum() > 400  # hundreds of short processes (dpkg, sh, apt-check...) forked and gone
    assert not np.isin(role[ok], tasks.BACKGROUND).any() and (span[ok] == "whole").all()
    assert "lttng-consumerd" not in set(comm[ok]) and "kworker/0:1" not in set(comm[ok])
    assert (table.end > table.start).all() and np.all(np.diff(table.start) >= 0)
    apt = np.flatnonzero(comm == "apt")
    assert len(apt) >= 1 and (span[apt] == "whole").any()


@needs_bt2
def test_auto_units_fall_back_to_threads_where_processes_are_few():
    kind, table = units.auto_units(graphs("tc-many-threads"))
    assert kind == "threads" and units.comparable(table).sum() > 7000
    kind, table = units.auto_units(graphs("tracevizlab-wget-k-20180802-115043"))
    assert kind == "processes" and units.comparable(table).sum() == 1


def test_markers_and_syscalls_are_always_comparable():
    from perftriage.analysis.requests.table import RequestTable

    t = RequestTable(id=np.arange(3), kind=np.full(3, "syscall:read", object), host=np.full(3, "h", object),
                     pid=np.ones(3, np.int64), tid=np.ones(3, np.int64), start=np.arange(3), end=np.arange(3) + 1,
                     fields={})
    assert units.comparable(t).all()


def test_counts_and_ratios_read_as_words():
    from perftriage.analysis.units import count_of, fmt_ratio, singular

    assert count_of(1, "requests") == "1 request" and count_of(2, "requests") == "2 requests"
    assert count_of(1, "processes", "outlying") == "1 outlying process"
    assert count_of(1, "categories") == "1 category" and count_of(1, "read calls") == "1 read call"
    assert count_of(1_200, "requests") == "1,200 requests" and singular("series") == "series"
    assert count_of(1, "queries") == "1 query" and count_of(1, "entries") == "1 entry"
    from perftriage.analysis.units import count_that, first_of

    assert count_that(1, "lines") == "1 line that is" and count_that(3, "lines") == "3 lines that are"
    assert first_of(["a", "b", "c"], 3) == "a, b, c" and first_of(["a", "b", "c"], 2) == "a, b, ..."
    assert [fmt_ratio(x) for x in (1.44, 24.4, 2388.9)] == ["1.4x", "24x", "2,389x"]


def test_times_before_2000_are_told_as_times_since_the_start():
    # Alibaba's tables count milliseconds from 0, a CTF clock with no origin counts from boot: not 1970
    from perftriage.analysis.units import fmt_when

    at = 1_534_187_150_157_218_983  # 2018-08-13 19:05:50.157218983 UTC
    assert fmt_when(at) == "2018-08-13 19:05:50.157 UTC"
    assert fmt_when(at, date=False, digits=0) == "19:05:50 UTC"
    assert fmt_when(at, digits=9) == "2018-08-13 19:05:50.157218983 UTC"
    assert fmt_when(2_409_738_000_000) == "+0:40:09.738" and fmt_when(0, digits=0) == "+0:00:00"
    assert fmt_when(93_784_500_000_000, date=False) == "+26:03:04.500"  # a day's uptime: hours go on
    assert fmt_when(-1_500_000_000) == "-0:00:01.500"


def test_a_time_as_told_reads_back_as_a_time_to_compare_at():
    # what the report tells (an onset, a split) is what --incident-time takes back
    from perftriage.analysis.timeparse import user_time_ns
    from perftriage.analysis.units import fmt_when

    undated = 5 * 10**9  # an Alibaba table's first span, 5 s from its 0
    for at in (312_008_000_000, 93_784_500_000_000):
        assert user_time_ns(fmt_when(at), undated) == at
    assert user_time_ns("0:05:12", undated) == user_time_ns("00:05:12", undated) == 312 * 10**9
    dated = 1_661_140_150 * 10**9  # 2022-08-22 03:49:10 UTC
    assert user_time_ns("03:49:10", dated) == user_time_ns("3:49:10", dated) == dated
    assert user_time_ns("2022-08-22T03:49:10", dated) == dated == user_time_ns(fmt_when(dated, digits=0)[:19])
    assert user_time_ns("+1:00", dated) == dated + 3600 * 10**9  # after the data's start
    assert user_time_ns("+0:00:01.25", dated) == dated + 1_250_000_000
    for bad in ("24:00", "3:61", "3:49:60", "+1:2"):
        with pytest.raises(ValueError):
            user_time_ns(bad, dated)


def test_counts_said_in_the_notes_agree_with_one():
    # '1 requests: too few to find when they changed', '(1 events read)'
    from perftriage.analysis.calltrees.what_changed import local_changes
    from perftriage.analysis.spans.table import SpanBuilder

    b = SpanBuilder()
    b.add("t1", 1, None, "web", "GET /", "web-1", 0, 1000)
    sp = b.finish()
    assert local_changes(sp, 60 * 10**9) == "1 request: too few to find when they changed"


def test_one_category_one_field_one_row_are_said_in_the_singular(tmp_path):
    # the report's progress said '1 categories', a damaged span row '1 fields', a filter '1 of 1 rows'
    from perftriage.analysis.options import Options
    from perftriage.analysis.triage import run_triage
    from perftriage.tui.widgets.row_table import FilteredSource, ListSource, RowTable

    from span_rows import SpanRows

    rows = SpanRows()
    for k in range(40):  # one shape of request: one category
        root = rows.span(f"t{k}", "", "web", "GET /", 10**18 + k * 10**9, 5_000_000 + k * 1000)
        rows.span(f"t{k}", root, "db", "query", 10**18 + k * 10**9 + 1000, 2_000_000)
    for _ in range(2):  # a request of two roots: no one call tree
        rows.span("t98", "", "web", "GET /", 10**18, 1000)
    rows.lines.append("t99\n")  # a row cut after its first field
    said = []
    res = run_triage([str(rows.write(tmp_path / "spans.csv"))], Options(), progress=said.append)
    texts = [p.text for p in said]
    assert "1 category" in texts and "82 spans, 1 category" in texts, texts
    assert any("spans.csv:84: 1 field, the header has 8" in d for d in res.spans.problems.details), res.spans.problems
    notes = res.report.notes
    assert "calls between services: 1 link between services with 20 calls or more: too few to say what is usual" \
        in notes, notes
    (tmp_path / "clean.csv").write_text("".join(rows.lines[:81]))  # the 40 requests, and the first span again
    (tmp_path / "again.csv").write_text("".join(rows.lines[:2]))
    again = run_triage([str(tmp_path / "clean.csv"), str(tmp_path / "again.csv")], Options()).report.notes
    assert "1 span given twice, identical (overlapping files): counted once" in again, again
    assert any(n.startswith("1 request does not form one call tree") for n in notes), notes
    table = RowTable()
    table.base_source = ListSource([["a"]])
    table.source, table.filter_text = FilteredSource(table.base_source, "a"), "a"
    assert table.filter_note() == "/a: 1 of 1 row"
