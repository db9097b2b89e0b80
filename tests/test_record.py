"""``perftriage record trace``: every event an analysis reads is recorded; user space recorded for
real with lttng-ust (a small traced server built here), the kernel part through --dry-run; stops on
--duration, on the command's exit and on SIGHUP keep what was recorded."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, needs_bt2

from perftriage.analysis import recording
from perftriage.analysis.execgraph.events import GRAPH_EVENTS
from perftriage.analysis.requests.markers import BUILTIN_MARKERS
from perftriage.cli.main import main

APP_SRC = ROOT / "tests" / "data" / "ust_app"
has_lttng = shutil.which("lttng") is not None and shutil.which("lttng-sessiond") is not None
has_ust_dev = any(Path("/usr/include").glob("*/lttng/tracepoint.h")) or Path("/usr/include/lttng/tracepoint.h").is_file()
has_ust_dev = has_ust_dev and shutil.which("gcc") is not None
needs_lttng = pytest.mark.skipif(not (has_lttng and has_ust_dev),
                                 reason="lttng-tools / liblttng-ust-dev / gcc not installed (make test installs them)")


@pytest.fixture(autouse=True)
def one_recording_at_a_time():
    """LTTng's sessions are the machine's: two tests recording at once (pytest's workers) each
    caught the other's traced app (the report of 200 requests sent said another number) and saw
    its session (2 of 6 runs of this file on two workers failed). One at a time, by a lock across
    the workers."""
    import fcntl  # noqa: PLC0415

    with open(Path(os.environ.get("TMPDIR", "/tmp")) / "perftriage-tests-lttng.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def test_every_event_an_analysis_reads_is_recorded():
    plan = recording.make_plan("/tmp/never", "s")
    for ev in GRAPH_EVENTS:
        if "*" in ev and not ev.startswith("syscall_"):
            assert ev in plan.kernel_wildcards
            continue
        probe = ev.replace("*", "read")  # syscall_entry_* -> syscall_entry_read
        assert recording.recorded(plan, probe), ev
    for m in BUILTIN_MARKERS:
        assert recording.recorded(plan, m.start) and recording.recorded(plan, m.end)
    # what replaces an older recipe's event is itself read by the graph
    for old, new in recording.READ_FROM_OLDER_RECORDINGS.items():
        assert old in GRAPH_EVENTS and new in GRAPH_EVENTS and new in plan.kernel_events
    # and nothing the graph does not read: each kernel tracepoint recorded is one of its events
    assert set(plan.kernel_events) <= set(GRAPH_EVENTS)
    user_only = recording.make_plan("/tmp/never", "s", kernel=False)
    assert not recording.recorded(user_only, "sched_switch") and recording.recorded(user_only, "ust_php:request_entry")


def test_buffers_grow_with_the_event_rate_per_cpu():
    small = recording.subbuf_size(10_000, 8)
    big = recording.subbuf_size(5_000_000, 8)
    assert small == recording.MIN_SUBBUF and big > small and big & (big - 1) == 0
    assert recording.subbuf_size(5_000_000, 2) >= recording.subbuf_size(5_000_000, 16)
    assert recording.subbuf_size(1e12, 1) == recording.MAX_SUBBUF


def test_dry_run_prints_the_lttng_commands_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "t"
    assert main(["record", "trace", "--kernel-with", "lttng", "--dry-run", "-o", str(out), "--request-start",
                 "myapp:begin", "--request-end", "myapp:end", "--event-rate", "2000000"]) == 0
    text = capsys.readouterr().out
    lines = [shlex.split(ln) for ln in text.strip().splitlines()]
    assert all(ln[0] == "lttng" for ln in lines) and not out.exists()
    verbs = [ln[1] for ln in lines]
    assert verbs[0] == "create" and verbs[-3:] == ["start", "stop", "destroy"]
    kernel = next(ln for ln in lines if ln[1] == "enable-event" and "-k" in ln and "--syscall" not in ln
                  and "*" not in ln[-1])
    assert set(kernel[-1].split(",")) == set(recording.make_plan(out, "s").kernel_events)
    assert any("--syscall" in ln and "--all" in ln for ln in lines)
    user = next(ln for ln in lines if ln[1] == "enable-event" and "-u" in ln)
    assert user[-1] == "myapp:begin,myapp:end"
    ctx = next(ln for ln in lines if ln[1] == "add-context" and "-u" in ln)
    assert "vtid" in ctx and "vpid" in ctx
    assert f"--output={out.absolute()}" in lines[0]


def test_refuses_to_record_into_existing_data(tmp_path, capsys):
    (tmp_path / "old.txt").write_text("keep me")
    assert main(["record", "trace", "--user-only", "--duration", "1", "-o", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "not an empty folder" in err and err.count("\n") == 1
    assert [p.name for p in tmp_path.iterdir()] == ["old.txt"]


@needs_lttng
@pytest.mark.skipif(has_lttng and recording.kernel_tracing_problem() is None, reason="the kernel can be traced here")
def test_without_kernel_tracing_it_says_why_in_one_line(tmp_path, capsys):
    assert main(["record", "trace", "--kernel-with", "lttng", "--duration", "1", "-o", str(tmp_path / "t")]) == 5
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "cannot trace the kernel here" in err and "--user-only" in err
    assert "--kernel-with perf" in err
    assert not (tmp_path / "t").exists()


@needs_lttng
@pytest.mark.skipif(has_lttng and recording.kernel_tracing_problem() is None, reason="the kernel can be traced here")
def test_neither_lttng_nor_perf_says_both_in_one_line(tmp_path, capsys, monkeypatch):
    from perftriage.analysis import recording_perf

    monkeypatch.setattr(recording_perf, "perf_problem", lambda: "perf is not installed (Debian: ...)")
    assert main(["record", "trace", "--duration", "1", "-o", str(tmp_path / "t")]) == 5
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "cannot trace the kernel here" in err and ", and perf is not installed" in err
    assert not (tmp_path / "t").exists()


@pytest.mark.skipif(recording.kernel_tracing_problem() is None, reason="LTTng traces the kernel here")
def test_a_dry_run_shows_the_kernel_by_perf_where_a_run_would_take_it(tmp_path, capsys):
    from perftriage.analysis import recording_perf

    if recording_perf.perf_problem() is not None:
        pytest.skip("perf cannot record here either")
    assert main(["record", "trace", "--dry-run", "-o", str(tmp_path / "t")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("# the kernel by perf: ") and recording.kernel_tracing_problem() in lines[0]
    assert lines[1].startswith("perf record ") and "enable-channel -k" not in "\n".join(lines)
    assert any("enable-channel -u" in ln for ln in lines)  # user space by LTTng, as a run would
    assert not (tmp_path / "t").exists()


def test_user_only_records_no_kernel_whatever_its_tracer(tmp_path, capsys):
    assert main(["record", "trace", "--user-only", "--kernel-with", "perf", "--dry-run", "-o", str(tmp_path / "t")]) == 0
    out = capsys.readouterr().out
    assert "perf record" not in out and "enable-channel -u" in out and "enable-channel -k" not in out


def test_perf_records_the_tracepoints_this_kernel_has(tmp_path):
    from perftriage.analysis import recording_perf

    fs = tmp_path / "tracing"
    for tp in ("sched/sched_switch", "sched/sched_waking", "irq/softirq_entry", "timer/hrtimer_expire_entry"):
        (fs / "events" / tp).mkdir(parents=True)
    assert recording_perf.perf_tracepoints(fs) == ["sched:sched_switch", "sched:sched_waking", "irq:softirq_entry",
                                                   "timer:hrtimer_expire_entry"]
    cmd = recording_perf.PerfKernel(tmp_path / "out", ["sched:sched_switch"]).record_command()
    assert cmd[:6] == ["perf", "record", "-q", "-a", "-k", "mono"]  # on CLOCK_MONOTONIC, as LTTng's
    # perf's own system calls left out, its scheduling not (the wake-ups interrupts make while it runs)
    assert cmd[cmd.index("sched:sched_switch") + 1] == "-e"
    assert cmd[cmd.index("raw_syscalls:sys_enter") + 1] == "--exclude-perf"


@pytest.fixture(scope="module")
def ust_app(tmp_path_factory):
    if not (has_lttng and has_ust_dev):
        pytest.skip("lttng-tools / liblttng-ust-dev / gcc not installed")
    out = tmp_path_factory.mktemp("ust") / "ust_app"
    subprocess.run(["gcc", "-O1", f"-I{APP_SRC}", str(APP_SRC / "ust_app.c"), "-o", str(out), "-llttng-ust",
                    "-ldl", "-lpthread"], check=True, capture_output=True)
    return out


def _sessions() -> str:
    return subprocess.run(["lttng", "list"], capture_output=True, text=True).stdout


@needs_bt2
@needs_lttng
def test_user_space_recorded_for_real_while_a_command_runs(ust_app, tmp_path, capsys):
    from perftriage.analysis.triage import run_triage

    out = tmp_path / "trace"
    assert main(["record", "trace", "--user-only", "--report", "-o", str(out), "--", str(ust_app), "200", "4"]) == 0
    cap = capsys.readouterr()
    assert "the command exited (status 0)" in cap.err and "user space" in cap.err
    assert "200 requests; median" in cap.out  # --report: the report of what was just recorded
    r = run_triage([str(out)])
    req = r.requests
    assert req is not None and len(req) == 200
    uri = req.fields["uri"]
    slow = uri == "/slow"
    assert slow.sum() == 20
    dur = req.end - req.start
    assert dur[slow].min() >= 20e6 and dur[~slow].max() < 20e6
    assert len(set(req.tid.tolist())) == 4
    # the session was destroyed, the trace kept (this process's: another test may record beside it)
    assert f"perftriage-{os.getpid()}-" not in _sessions()


@needs_bt2
@needs_lttng
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_recording_and_keeps_it(ust_app, tmp_path, sig):
    from perftriage.analysis.triage import run_triage

    out = tmp_path / "trace"
    proc = subprocess.Popen([sys.executable, "-m", "perftriage", "record", "trace", "--user-only", "-o", str(out),
                             "--", str(ust_app), "100000", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 30
    while not any((out / "ust").rglob("*_0")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    t0 = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert time.monotonic() - t0 < 15
    assert f"stopped: {sig.name}" in err.decode()
    r = run_triage([str(out)])
    assert r.requests is not None and 10 < len(r.requests) < 100000
    assert f"perftriage-{proc.pid}-" not in _sessions()  # its session (the tests beside it record too)


@needs_lttng
def test_duration_ends_the_recording(ust_app, tmp_path, capsys):
    out = tmp_path / "trace"
    t0 = time.monotonic()
    rc = main(["record", "trace", "--user-only", "--duration", "1.5", "-o", str(out), "--", str(ust_app), "100000",
               "2"])
    assert rc == 0 and 1.4 < time.monotonic() - t0 < 20
    assert "1.5 s elapsed (--duration)" in capsys.readouterr().err



@needs_bt2
@needs_lttng
@pytest.mark.skipif(recording.kernel_tracing_problem() is None, reason="LTTng traces the kernel here")
def test_where_lttng_cannot_trace_the_kernel_perf_does(ust_app, tmp_path, capsys):
    from perftriage.analysis import recording_perf
    from perftriage.analysis.triage import run_triage

    if recording_perf.perf_problem() is not None:
        pytest.skip(f"perf cannot record here: {recording_perf.perf_problem()}")
    out = tmp_path / "trace"
    assert main(["record", "trace", "-o", str(out), "--", str(ust_app), "200", "4"]) == 0
    err = capsys.readouterr().err
    assert "(the kernel by perf: " in err and "kernel " in err and "(perf), user space" in err
    assert sorted(p.name for p in out.iterdir()) == ["kernel", "ust"]  # perf's own data converted and gone
    res = run_triage([str(out)])
    assert sorted(t.tracer.split()[0] for t in res.summary.traces) == ["lttng-ust", "perf"]
    ft = res.features
    slow = ft.fields["uri"] == "/slow"
    assert len(ft) == 200 and slow.sum() == 20
    # the kernel's view of the user-space requests: the slow ones sleep their 20 ms
    asleep = ft.durations[slow, ft.states.index("BS")] / ft.total[slow]
    assert (asleep > 0.9).sum() >= 15, asleep
