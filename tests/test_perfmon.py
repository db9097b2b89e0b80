"""Windows performance counter logs (PDH-CSV, as typeperf, relog and Performance Monitor write
them): a fleet's counters across servers, a process's threads."""

from __future__ import annotations

import csv
import datetime as dt
import subprocess
import sys

import numpy as np
import pytest

from perftriage.analysis.counters.findings import analyse_counters, counter_findings
from perftriage.analysis.counters.readers import load_counters
from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify
from perftriage.analysis.perfmon import parse_path

from conftest import ROOT

T0 = dt.datetime(2026, 11, 27, 8, 0, 0)  # local time, Pacific (bias 480 minutes): 16:00 UTC


def _log(path, header0, columns, rows):
    with path.open("w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        w.writerow([header0, *columns])
        w.writerows(rows)
    return path


def _fleet(path, n=240, seed=5):
    """Six servers' CPU, free memory and w3wp's handles every 15 s (the milliseconds of the times
    drifting, a blank cell here and there); WEB04's CPU 50 points higher from sample 180."""
    rng = np.random.default_rng(seed)
    machines = [f"WEB{i:02d}" for i in range(1, 7)]
    counters = ["Processor(_Total)\\% Processor Time", "Memory\\Available MBytes", "Process(w3wp)\\Handle Count"]
    rows = []
    for k in range(n):
        row = [(T0 + dt.timedelta(seconds=15 * k, milliseconds=int(rng.integers(0, 999)))).strftime(
            "%m/%d/%Y %H:%M:%S.%f")[:-3]]
        for m in machines:
            cpu = rng.normal(30, 3) + (50 if m == "WEB04" and k >= 180 else 0)
            row += [f"{cpu:.6f}", f"{rng.normal(4000, 50):.0f}", " " if k == 5 else f"{rng.normal(1500, 20):.0f}"]
        rows.append(row)
    return _log(path, "(PDH-CSV 4.0) (Pacific Standard Time)(480)",
                [f"\\\\{m}\\{c}" for m in machines for c in counters], rows)


def test_a_fleets_counter_log_reads_each_machine_as_a_server(tmp_path):
    p = _fleet(tmp_path / "fleet.csv")
    assert classify([str(p)]).files["counters"] == [p]
    cs = load_counters([p])
    assert cs.servers == [f"WEB{i:02d}" for i in range(1, 7)] and cs.interval == 15
    assert cs.counters == ["Processor(_Total)\\% Processor Time", "Memory\\Available MBytes",
                           "Process(w3wp)\\Handle Count"]
    assert cs.start == pytest.approx(dt.datetime(2026, 11, 27, 16, tzinfo=dt.timezone.utc).timestamp(), abs=2)
    assert np.isnan(cs.values[:, 2, 5]).all() and not np.isnan(cs.values[:, 0, 5]).any()  # the blanks: missing
    assert any("a Windows performance counter log (PDH-CSV) of 6 machines; its times written on 'Pacific Standard "
               "Time' read as UTC" in n for n in cs.notes), cs.notes
    first = counter_findings(analyse_counters(cs))[0]
    assert first.title.startswith("WEB04: Processor(_Total)\\% Processor Time at another level since "
                                  "2026-11-27 16:45"), first.title


def _threads(path, n=300, renumbered=True):
    """w3wp's 8 threads every 5 s (their ids, process id and state beside their CPU and context
    switches); thread 4020 busy 60 points more for 50 samples; from sample 200 the thread at
    instance w3wp/7 is another (4028 ended, 4100 took its number), as Windows renumbers."""
    rng = np.random.default_rng(8)
    cs = ["% Processor Time", "Context Switches/sec", "ID Thread", "ID Process", "Thread State"]
    rows = []
    for k in range(n):
        row = [(T0 + dt.timedelta(seconds=5 * k)).strftime("%m/%d/%Y %H:%M:%S.000")]
        for i in range(8):
            tid = 4100 if renumbered and i == 7 and k >= 200 else 4000 + 4 * i
            cpu = abs(rng.normal(10, 2)) + (60 if tid == 4020 and 150 <= k < 200 else 0)
            row += [f"{cpu:.4f}", f"{rng.normal(200, 20):.1f}", str(tid), "4242", "5"]
        rows.append(row)
    return _log(path, "(PDH-CSV 4.0) (Coordinated Universal Time)(0)",
                [f"\\\\WEB01\\Thread(w3wp/{i})\\{c}" for i in range(8) for c in cs], rows)


def test_thread_logs_read_as_threads_told_by_their_ids(tmp_path):
    from perftriage.analysis.threads.deviation import analyse_level
    from perftriage.analysis.threads.params import ThreadParams
    from perftriage.analysis.threads.series import read_thread_metrics

    p = _threads(tmp_path / "threads.csv")
    assert classify([str(p)]).files["threads"] == [p]
    ts = read_thread_metrics(p)
    assert ts.metrics == ["% Processor Time", "Context Switches/sec"]  # ids and states are no measures
    assert ts.units == {"% Processor Time": "%", "Context Switches/sec": "/s"}
    ids = sorted(ts.ids)
    assert ids == [str(4000 + 4 * i) for i in range(8)] + ["4100"]
    assert len(ts.samples(ts.ids.index("4100"))) == 100
    res = analyse_level(ts, "thread", params=ThreadParams(replicates=50))
    first = res.ranking[0]
    assert [res.names[i] for i in first.items] == ["4020"], [(r.items, r.headline) for r in res.ranking]
    assert first.headline.startswith("% Processor Time")


def test_damaged_counter_logs_are_read_as_far_as_they_go_or_named_in_one_line(tmp_path):
    p = _fleet(tmp_path / "cut.csv", n=60)
    lines = p.read_text().splitlines()
    lines[10] = lines[10].replace("11/27/2026", "27.11.2026")  # a time in another form
    lines[20] = lines[20].replace("11/27/2026", "27/11/2026")  # a day for a month
    p.write_text("\n".join(lines)[:-40])  # the last row cut
    cs = load_counters([p])
    assert any("1 row of another width, 2 rows whose time is no MM/DD/YYYY HH:MM:SS skipped" in n for n in cs.notes)
    empty = _log(tmp_path / "empty.csv", "(PDH-CSV 4.0) (Coordinated Universal Time)(0)", ["\\\\A\\Memory\\Pages/sec"],
                 [])
    with pytest.raises(InputError) as err:
        load_counters([empty])
    assert str(err.value).startswith(str(empty)) and "no sample rows" in str(err.value)


def test_a_log_written_with_decimal_commas_reads_its_numbers(tmp_path):
    """A German or French Windows writes 12,5 in its logs' quoted cells: read as 12.5, a damaged
    cell as missing."""
    from perftriage.analysis.perfmon import read_log

    p = _log(tmp_path / "de.csv", "(PDH-CSV 4.0) (W. Europe Standard Time)(-60)",
             ["\\\\WEB01\\Memory\\Pages/sec", "\\\\WEB01\\Memory\\Available MBytes"],
             [["11/27/2026 08:00:00.000", "12,5", "4000"], ["11/27/2026 08:00:15.000", "x", "4001"]])
    log = read_log(p)
    assert [(c.machine, c.name) for c in log.paths] == [("WEB01", "Memory\\Pages/sec"),
                                                         ("WEB01", "Memory\\Available MBytes")]
    assert np.allclose(log.values, [[12.5, 4000], [np.nan, 4001]], equal_nan=True)
    assert log.time[0] == dt.datetime(2026, 11, 27, 7, tzinfo=dt.timezone.utc).timestamp()  # bias -60: UTC 07:00


def test_counter_paths_are_parsed_as_windows_writes_them():
    p = parse_path("\\\\WEB01\\Network Interface(Intel[R] 82574L (Copper))\\Bytes Total/sec")
    assert (p.machine, p.object, p.instance, p.counter) == ("WEB01", "Network Interface", "Intel[R] 82574L (Copper)",
                                                            "Bytes Total/sec")
    assert parse_path("\\Memory\\Available MBytes").name == "Memory\\Available MBytes"
    assert parse_path("\\\\H\\Thread(w3wp/12)\\ID Thread").instance == "w3wp/12"
    assert parse_path("(PDH-CSV 4.0)") is None and parse_path("cpu") is None


def _threads_and_machine(path, n=360):
    """w3wp's threads (as _threads) and, beside them, the machine's CPU, free memory and w3wp's
    private bytes, every 5 s: those bytes 400 MB higher from sample 300 on (a leak's step)."""
    threads = list(csv.reader(_threads(path, n=n).read_text().splitlines()))
    rng = np.random.default_rng(3)
    extra = ["\\\\WEB01\\Processor(_Total)\\% Processor Time", "\\\\WEB01\\Memory\\Available MBytes",
             "\\\\WEB01\\Process(w3wp)\\Private Bytes"]
    rows = [r + [f"{rng.normal(30, 2):.4f}", f"{rng.normal(4000, 30):.0f}",
                 f"{rng.normal(9e8, 5e6) + (4e8 if k >= 300 else 0):.0f}"] for k, r in enumerate(threads[1:])]
    return _log(path, threads[0][0], threads[0][1:] + extra, rows)


def test_a_thread_log_with_its_machines_counters_is_read_by_both_analyses(tmp_path):
    """A log of w3wp's threads that holds the machine's other counters too (Performance Monitor's
    usual set) goes to the thread analysis for its threads and to the counters for the rest."""
    from perftriage.analysis.threads.series import read_thread_metrics

    p = _threads_and_machine(tmp_path / "w3wp.csv")
    files = classify([str(p)]).files
    assert files["threads"] == [p] and files["counters"] == [p]
    ts = read_thread_metrics(p)
    assert ts.metrics == ["% Processor Time", "Context Switches/sec"] and len(ts.ids) == 9
    assert "its 3 counters of other objects than threads are read as its machine's counters" in ts.notes, ts.notes
    cs = load_counters([p])
    assert cs.servers == ["WEB01"] and cs.counters == ["Processor(_Total)\\% Processor Time",
                                                       "Memory\\Available MBytes", "Process(w3wp)\\Private Bytes"]
    assert "w3wp.csv: its threads' counters (Thread(process/N)) are read by the thread analysis, the others as " \
        "counters" in cs.notes, cs.notes
    # a log of threads alone is the thread analysis's only
    alone = _threads(tmp_path / "alone.csv")
    assert "counters" not in classify([str(alone)]).files
    # the report: the leak's step among the counters, the busy thread among the threads
    out = subprocess.run([sys.executable, "-m", "perftriage", "report", str(p)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    summary = out.stdout.split("## Summary", 1)[1].split("## Findings", 1)[0]
    assert "| counters | WEB01: Process(w3wp)\\Private Bytes at another level since 2026-11-27 08:25:00" in summary
    assert "| threads | Thread 4020: % Processor Time" in summary, summary
