"""The perftriage command, run as users run it."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest
from conftest import REAL_TRACE_EVENTS, ROOT, SHARED, needs_bt2, real_trace

from perftriage.cli import COMMANDS, main


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "perftriage", *map(str, args)], capture_output=True, text=True,
                          cwd=kw.pop("cwd", ROOT), **kw)


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_on_every_command_lists_exit_codes(command, capsys):
    with pytest.raises(SystemExit) as e:
        main(([command] if command else []) + ["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "exit codes" in out and "partial input" in out


def test_no_arguments_prints_usage_and_exit_2(capsys):
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err


def test_usage_errors_exit_2():
    r = cli("report", "x", "--request-start", "a:b")
    assert r.returncode == 2 and "go together" in r.stderr
    r = cli("report", "x", "--format", "pdf")
    assert r.returncode == 2
    r = cli("report", "sample_traces/fleet", "--interval", "soon")
    assert r.returncode == 2 and "--interval: 'soon' is not a positive duration" in r.stderr


def test_missing_input_exit_3_one_line():
    r = cli("report", "/no/such/trace")
    assert r.returncode == 3
    assert r.stderr.strip() == "perftriage: /no/such/trace: no such file or folder"
    assert r.stdout == ""


@needs_bt2
def test_report_on_the_real_php_trace_lists_its_request_with_uri():
    r = cli("report", real_trace("tracevizlab-php-ust"))
    assert r.returncode == 0, r.stderr
    assert "| id | kind | host | pid/tid | start (UTC) | duration | method | uri | path | querystring |" in r.stdout
    assert "script.php" in r.stdout and "arnaud-desktop" in r.stdout and "1.34 ms" in r.stdout


@needs_bt2
def test_report_to_file_md_and_json(tmp_path):
    out = tmp_path / "f.json"
    r = cli("report", real_trace("tracevizlab-php-ust"), "-o", out)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["findings"][0]["analysis"] == "requests"
    assert data["inputs"] == [str(real_trace("tracevizlab-php-ust"))]
    md = tmp_path / "f.md"
    r = cli("report", real_trace("tracevizlab-php-ust"), "-o", md, "--format", "md")
    assert md.read_text().startswith("# perftriage findings")


@needs_bt2
def test_report_with_custom_markers():
    r = cli("report", real_trace("tracevizlab-php-ust"), "--request-start", "lttng_ust_statedump:start",
            "--request-end", "lttng_ust_statedump:end")
    assert r.returncode == 0
    assert "**Subject:** lttng_ust_statedump #0 ·" in r.stdout  # named by the markers' provider, not 'custom'


@needs_bt2
def test_info_text_and_json():
    path = real_trace("tracevizlab-apt")
    r = cli("info", path)
    assert r.returncode == 0
    assert "host basement-htpc  domain kernel  tracer lttng-modules 2.10.5  CPUs 2 (0-1)" in r.stdout
    assert f"events  {REAL_TRACE_EVENTS['tracevizlab-apt']:,}" in r.stdout
    r = cli("info", "--json", path)
    data = json.loads(r.stdout)
    assert data["events"] == REAL_TRACE_EVENTS["tracevizlab-apt"]
    assert sum(data["event_counts"].values()) == data["events"]
    assert data["traces"][0]["discarded_events"] == 0


def test_info_says_what_data_files_hold(tmp_path):
    """Data files read as the analyses read them: their form, how much of what, their times, the
    readers' notes; beside a trace; a damaged one is one line naming it."""
    pid = ROOT / "tests" / "data" / "pidstat" / "pidstat-h.txt.gz"
    spans = ROOT / "sample_traces" / "microservices" / "spans.otlp.jsonl"
    fleet = sorted((ROOT / "tests" / "data" / "sadf").glob("web-0*.csv.gz"))
    r = cli("info", pid, spans, fleet[0])
    assert r.returncode == 0, r.stderr
    assert "  threads: pidstat report\n  9 threads x 16 metrics" in r.stdout
    assert "time  2026-11-27 15:16:27 .. 2026-11-27 15:17:26 UTC" in r.stdout
    assert "spans: OTLP JSON file" in r.stdout and "8,115 spans of 1,500 requests, 6 services" in r.stdout
    assert "counters: sadf -d export" in r.stdout and "1 server (web-01) x" in r.stdout
    data = json.loads(cli("info", "--json", pid).stdout)
    assert [(f["kind"], f["form"]) for f in data["files"]] == [("threads", "pidstat report")]
    assert data["files"][0]["begin_s"] == 1795792587.0
    both = cli("info", "--json", real_trace("tracevizlab-apt"), pid)
    assert both.returncode == 0 and json.loads(both.stdout)["files"][0]["form"] == "pidstat report"
    bad = tmp_path / "pidstat.txt"
    bad.write_text(gzip.decompress(pid.read_bytes()).decode().split("\n# Time")[0] + "\n# Time UID TGID TID %usr Command\n")
    r = cli("info", bad)
    assert r.returncode == 3 and "pidstat.txt" in r.stderr and "holds no task rows" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@needs_bt2
def test_info_reads_kernel_and_ust_folders_together():
    r = cli("info", real_trace("tracevizlab-cat-kern-ust") / "cat-kernel", real_trace("tracevizlab-cat-kern-ust") / "cat-ust")
    assert r.returncode == 0
    assert f"events  {REAL_TRACE_EVENTS['tracevizlab-cat-kern-ust']:,}" in r.stdout
    assert "domain kernel" in r.stdout and "domain ust" in r.stdout


def test_console_script_is_installed():
    exe = ROOT / ".venv" / "bin" / "perftriage"
    if not exe.exists():
        pytest.skip("not installed in .venv")
    r = subprocess.run([str(exe), "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("perftriage ")


def test_report_on_spans_names_the_slow_replica_and_compares(tmp_path):
    folder = ROOT / "sample_traces" / "microservices"
    truth = json.loads((folder / "ground_truth.json").read_text())
    m, r = truth["slow_pairs"][0]
    out = tmp_path / "r.json"
    res = cli("report", folder, "--reference", ROOT / "sample_traces" / "microservices-baseline", "-o", out)
    assert res.returncode == 0, res.stderr
    data = json.loads(out.read_text())
    first = data["findings"][0]
    # what changed against the reference leads, naming the slow replica; CloudDiag's finding follows
    assert first["analysis"] == "calltrees" and first["title"].startswith(f"{truth['slow_service']} changed most "
                                                                          f"(pod {r})")
    assert any(f["title"].endswith(f"is slow on {r}") for f in data["findings"][1:3])
    assert any("got slower than in the reference" in f["title"] for f in data["findings"])
    clouddiag = next(f for f in data["findings"] if f["title"].endswith(f"is slow on {r}"))
    assert clouddiag["parameters"]["alpha"] == 0.0 and clouddiag["parameters"]["times"] == "self"
    # the paper's log format of the same calls (replicas are hosts there)
    res = cli("report", folder / "clouddiag-log" / "calls.log", "--alpha", "0.05", "--beta", "0.85")
    host = truth["replica_hosts"][r]
    assert res.returncode == 0 and f"is slow on {host}" in res.stdout and "`alpha=0.05`" in res.stdout


def test_span_options_are_checked():
    res = cli("report", ROOT / "sample_traces" / "microservices", "--beta", "1.5")
    assert res.returncode == 2 and "beta" in res.stderr
    res = cli("report", ROOT / "sample_traces" / "microservices", "--columns", "nonsense")
    assert res.returncode == 2 and "KEY=COLUMN" in res.stderr
    res = cli("report", ROOT / "sample_traces" / "microservices", "--reference", "/nope")
    assert res.returncode != 0 and "/nope" in res.stderr


def test_sample_microservices_writes_ground_truth(tmp_path):
    out = tmp_path / "ms"
    res = cli("sample", "--system", "microservices", "--out", out, "--requests", "200", "--scenario", "method")
    assert res.returncode == 0, res.stderr
    truth = json.loads((out / "ground_truth.json").read_text())
    assert truth["scenario"] == "method" and truth["slow_method"] and truth["requests"] == 200
    assert (out / "spans.otlp.jsonl").stat().st_size > 0 and (out / "clouddiag-log" / "calls.log").exists()
    res = cli("sample", "--system", "microservices", "--out", out)
    assert res.returncode != 0 and "not empty" in res.stderr


def test_counter_options_are_checked():
    fleet = ROOT / "sample_traces" / "fleet"
    res = cli("report", fleet, "--rules", "/no/rules.toml")
    assert res.returncode == 3 and "/no/rules.toml" in res.stderr
    res = cli("report", fleet, "--min-correlation", "1.5")
    assert res.returncode == 2 and "min-correlation" in res.stderr
    res = cli("report", fleet, "--server-x", "0")
    assert res.returncode == 2 and "--server-x" in res.stderr and "must be above 0" in res.stderr


def test_pods_of_different_services_are_compared_only_when_asked():
    """The real pod metrics: no server compared by level by default (ten different services),
    every one with all the others with --all-peers, as PAD does."""
    pods = SHARED / "real_data" / "onlineboutique-2022-08-22" / "metric"
    if not pods.is_dir():
        pytest.fail(f"{pods} is missing: the tests expect ../shared/real_data beside the clone")
    default, pad = cli("report", pods, "-q"), cli("report", pods, "--all-peers", "-q")
    assert default.returncode == pad.returncode == 0, default.stderr + pad.stderr
    assert "deviates from" not in default.stdout and "are not peers" in default.stdout
    assert "adservice-5f6585d649-fnmft deviates from the fleet: MemoryUsage(Mi)" in pad.stdout
    assert "are not peers" not in pad.stdout


def test_report_with_rules_in_the_papers_xml(tmp_path):
    rules = tmp_path / "rules.xml"
    rules.write_text('<ThresholdConfig><PerformanceCounter Name="Runtime.CPU.Percent"><Rule AppliesTo="ServerView">'
                     '<Statistic>Median</Statistic><ExpectedValue>60</ExpectedValue>'
                     '<ComparisonOperator>GreaterThan</ComparisonOperator></Rule></PerformanceCounter>'
                     '</ThresholdConfig>')
    res = cli("report", ROOT / "sample_traces" / "fleet", "--rules", rules, "-q")
    assert res.returncode == 0, res.stderr
    assert "threshold: 1 violation of Runtime.CPU.Percent: median in the server view > 60" in res.stdout
    assert "| silo-07 | all times |" in res.stdout  # the stuck server, and only it
    assert "rules.toml" not in res.stdout  # the rules given replace the ones beside the counters


def test_sample_fleet_incidents_and_bad_specs(tmp_path):
    out = tmp_path / "f"
    res = cli("sample", "--system", "fleet", "--out", out, "--servers", "6", "--points", "60",
              "--incidents", "stuck_rng@2:0.4,buffer_leak:0.5")
    assert res.returncode == 0, res.stderr
    truth = json.loads((out / "ground_truth.json").read_text())
    kinds = {i["kind"]: i for i in truth["incidents"]}
    assert kinds["stuck_rng"]["servers"] == ["silo-03"] and kinds["stuck_rng"]["start_index"] == 24
    assert len(kinds["buffer_leak"]["servers"]) == 6
    header = (out / "counters.csv").read_text().splitlines()[0]
    assert header.startswith("time,server,") and len(header.split(",")) == 52
    for bad in ("stuck_rng@99", "meteor", "stuck_rng:2"):
        res = cli("sample", "--system", "fleet", "--out", tmp_path / bad.replace(":", "_"), "--incidents", bad)
        assert res.returncode == 2, (bad, res.stderr)


def test_report_correlates_the_counters_asked_for():
    res = cli("report", ROOT / "sample_traces" / "fleet", "-q", "--format", "json",
              "--correlate", "Actors.Count@silo-07", "--correlate", "Timers.Active", "--correlate", "nosuch")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    titles = [f["title"] for f in rep["findings"]]
    assert any(t.endswith("move with Actors.Count on silo-07") for t in titles)
    assert any(t.endswith("move with Timers.Active over the fleet") for t in titles)
    assert any("--correlate nosuch: no counter" in n for n in rep["notes"])
    on_server = next(f for f in rep["findings"] if f["title"].endswith("Actors.Count on silo-07"))
    first = on_server["tables"][0]["rows"][0]
    assert abs(float(first[1])) >= 0.9 or abs(float(first[2])) >= 0.9


@needs_bt2
def test_report_on_the_two_host_sample_follows_the_database_host():
    res = cli("report", "sample_traces/two-hosts", "-q")
    assert res.returncode == 0, res.stderr
    assert "hosts web-01 and db-01:" in res.stdout and "waits followed across the two hosts" in res.stdout
    # the slow_db requests wait on the database host's disk: BD, their time there in the table
    header = next(line for line in res.stdout.splitlines() if "| on another host |" in line)
    col = [c.strip() for c in header.split("|")].index("on another host")
    away = [line.split("|")[col].strip() for line in res.stdout.splitlines()
            if line.startswith("| ") and " BD " in line and "db-01" in line]
    assert any(a.startswith("db-01 ") and a.endswith(" ms") and float(a.split()[1]) >= 40 for a in away), away
    # without the database host's trace, the same waits stay on the network
    res = cli("report", "sample_traces/two-hosts/web-01", "-q")
    assert res.returncode == 0 and "hosts web-01 and db-01" not in res.stdout and "on another host" not in res.stdout


@needs_bt2
def test_jobs_one_and_two_give_the_same_report():
    """--jobs 1 reads in the calling thread and bootstraps in one process; --jobs 2 decodes in a
    thread beside the analysis: the findings do not depend on it."""
    reports = []
    for jobs in (1, 2):
        r = cli("report", "--jobs", jobs, "-q", ROOT / "sample_traces" / "webserver")
        assert r.returncode == 0, r.stderr
        reports.append([line for line in r.stdout.splitlines() if not line.startswith("Generated")])
    assert reports[0] == reports[1] and len(reports[0]) > 50
    r = cli("report", "--jobs", 0, ROOT / "sample_traces" / "webserver")
    assert r.returncode == 2 and "--jobs" in r.stderr


def test_report_writes_to_a_text_stream_with_no_bytes_under_it():
    # main() called from Python with stdout redirected to a StringIO (a notebook, a benchmark):
    # the report is written there in full, not lost to "object has no attribute 'buffer'"
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(["report", "-q", str(ROOT / "sample_traces" / "microservices")])
    assert code == 0
    assert out.getvalue().startswith("# perftriage findings") and "## Findings" in out.getvalue()


@needs_bt2
@pytest.mark.parametrize("thread_metrics", [None, True])
def test_the_report_lets_the_graphs_go_and_finds_the_same(thread_metrics):
    # perftriage report drops the execution graphs once the last analysis that reads them is
    # done (the outliers' peak then holds them no more): the same report as keeping them, the
    # thread walk over the graphs included
    import re

    from perftriage.analysis.findings import render
    from perftriage.analysis.threads.deviation import ThreadParams
    from perftriage.analysis.triage import Options, run_triage

    texts = []
    for keep in (True, False):
        r = run_triage([ROOT / "sample_traces" / "webserver"], Options(keep_graphs=keep, thread_metrics=thread_metrics,
                                                                        threads=ThreadParams(replicates=50)))
        assert bool(r.graphs) == keep
        texts.append(re.sub(r"Generated \S+", "", render(r.report, "md")))
    assert texts[0] == texts[1]
    assert ("Thread pools" in texts[0]) == bool(thread_metrics)


def test_thread_metrics_before_a_path_takes_no_window_from_it():
    # '--thread-metrics PATH' read the path as the window ("is not a number", exit 2): it is the
    # option without a window, then the path; a number there is still the window
    from perftriage.cli.main import _normalise_argv

    assert _normalise_argv(["report", "--thread-metrics", "trace/"]) == ["report", "--thread-metrics-auto", "trace/"]
    assert _normalise_argv(["report", "--thread-metrics", "0.5", "trace/"]) == ["report", "--thread-metrics", "0.5",
                                                                               "trace/"]
    assert _normalise_argv(["report", "--thread-metrics", "-q", "t/"]) == ["report", "--thread-metrics", "-q", "t/"]
    r = cli("report", "--format", "json", "--thread-metrics", ROOT / "sample_traces" / "webserver")
    assert r.returncode == 0, r.stderr
    notes = json.loads(r.stdout)["notes"]
    assert any("per-thread metrics from the kernel trace" in n and "in windows of 312.747 ms" in n for n in notes), notes
