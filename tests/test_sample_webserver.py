"""The simulated web server written as CTF: read back by babeltrace2 and by our reader, event by
event, against the simulator's own record."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess

import numpy as np
import pytest

from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.spec import ReadSpec
from perftriage.analysis.errors import InputError
from perftriage.analysis.sim.catalog import ALL_CLASSES, UST_CONTEXT_SLOTS
from perftriage.analysis.sim.sample import write_webserver_sample
from perftriage.analysis.sim.webserver import CAUSES, WebServerConfig

from conftest import needs_babeltrace2, needs_bt2

SMALL = dict(requests=160, seed=7, mix={"lock_contention": 0.05, "connect_retry": 0.03, "write_heavy": 0.05,
                                        "slow_disk": 0.05, "cpu_contention": 0.02})


@pytest.fixture(scope="module")
def small_sample(tmp_path_factory):
    out = tmp_path_factory.mktemp("s") / "web"
    stats = write_webserver_sample(out, WebServerConfig(**SMALL), keep_records=True)
    return out, stats


def digest(folder) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def test_same_seed_same_bytes(tmp_path, small_sample):
    out, _ = small_sample
    again = tmp_path / "again"
    write_webserver_sample(again, WebServerConfig(**SMALL))
    assert digest(again) == digest(out)
    other = tmp_path / "other"
    write_webserver_sample(other, WebServerConfig(**{**SMALL, "seed": 8}))
    assert digest(other) != digest(out)


def test_layout_and_ground_truth(small_sample):
    out, stats = small_sample
    assert (out / "kernel" / "metadata").is_file()
    assert sorted(p.name for p in (out / "kernel").glob("channel0_*")) == [f"channel0_{i}" for i in range(4)]
    assert (out / "ust" / "uid" / "1000" / "64-bit" / "metadata").is_file()
    truth = json.loads((out / "ground_truth.json").read_text())
    assert truth["seed"] == 7 and truth["config"]["requests"] == 160
    reqs = truth["requests"]
    assert len(reqs) == 160 and [r["rid"] for r in reqs] == list(range(160))
    assert {r["cause"] for r in reqs} <= {"normal", *CAUSES}
    assert all(r["end_ns"] > r["start_ns"] > truth["time_origin_ns"] for r in reqs)
    # injected causes carry their parameters
    for r in reqs:
        if r["cause"] == "connect_retry":
            assert r["params"]["attempts"] >= 3
        if r["cause"] == "lock_contention":
            assert r["params"]["lock_pairs"] >= 120


@needs_babeltrace2
def test_babeltrace2_reads_every_event_in_order(small_sample):
    out, stats = small_sample
    r = subprocess.run(["babeltrace2", "--clock-seconds", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == stats.events == len(stats.records)
    parsed = [re.match(r"\[(\d+)\.(\d{9})\] \([^)]*\) web-01 (\S+): \{ cpu_id = (\d+) \}", line) for line in lines]
    assert all(parsed)
    got = sorted((int(m[1]) * 10**9 + int(m[2]), int(m[4]), m[3]) for m in parsed)
    rec = stats.records
    want = sorted(zip(rec[:, 0].tolist(), rec[:, 1].tolist(), [ALL_CLASSES[c].name for c in rec[:, 2]]))
    assert got == want


@needs_bt2
def test_our_reader_gets_every_field_of_every_event_back(small_sample):
    out, stats = small_sample
    reader = CtfReader([out], ReadSpec(fields={"*": ["*"], "ust_php:*": ["procname"]}))
    c = reader.read_all()
    rec = stats.records
    assert len(c) == len(rec)
    # same multiset of (ts, cpu, name): order within equal timestamps may differ between streams
    names = np.array(reader.event_names, dtype=object)[c.event]
    got_key = np.lexsort((c.cpu, c.ts))
    want_key = np.lexsort((rec[:, 1], rec[:, 0]))
    assert np.array_equal(c.ts[got_key], rec[want_key, 0])
    assert np.array_equal(c.cpu[got_key], rec[want_key, 1])
    want_names = np.array([ALL_CLASSES[k].name for k in rec[want_key, 2]], dtype=object)
    assert (names[got_key] == want_names).all()
    # every field, event by event
    strings = stats.strings
    checked = 0
    for code, sc in enumerate(ALL_CLASSES):
        rows_want = want_key[rec[want_key, 2] == code]
        rows_got = got_key[(names[got_key] == sc.name)]
        assert len(rows_want) == len(rows_got), sc.name
        if not len(rows_want):
            continue
        for fname, kind, src in sc.fields:
            if kind in ("seq8", "seq16empty", "vtids", "netheader"):
                continue  # arrays and variants: not decoded into columns
            if isinstance(src, int):
                want = rec[rows_want, 3 + src]
            elif src[0] == "const":
                want = np.full(len(rows_want), src[1])
            else:
                other = next(s for n, _, s in sc.fields if n == src[1])
                want = rec[rows_want, 3 + other]
            col = c.fields[fname if fname in c.fields else f"{fname}:int"]
            got = col[rows_got]
            if kind in ("string",) or kind.startswith("chars:"):
                width = int(kind[6:]) - 1 if kind.startswith("chars:") else None
                exp = [strings[k][:width] if width else strings[k] for k in want]
                assert [reader.strings[int(k)] for k in got] == exp, f"{sc.name}.{fname}"
            else:
                assert np.array_equal(got, want), f"{sc.name}.{fname}"
            checked += len(rows_want)
        if sc.domain == "ust":
            assert np.array_equal(c.pid[rows_got], rec[rows_want, 3 + UST_CONTEXT_SLOTS["vpid"]])
            assert np.array_equal(c.tid[rows_got], rec[rows_want, 3 + UST_CONTEXT_SLOTS["vtid"]])
    assert checked > len(rec)  # most events have several fields


@needs_bt2
def test_kernel_tid_tracking_agrees_with_the_simulated_threads(small_sample):
    # the thread the reader attributes each syscall to (from sched_switch) must be the thread
    # the simulator ran; a UST event's vtid must equal the kernel's current task on its CPU
    out, stats = small_sample
    reader = CtfReader([out], ReadSpec(fields={"syscall_entry_*": ["fd"]}))
    c = reader.read_all()
    names = np.array(reader.event_names, dtype=object)[c.event]
    ust = np.char.startswith(names.astype(str), "ust_php:")
    assert ust.sum() == 320
    for cpu in range(4):
        on = np.flatnonzero(c.cpu == cpu)
        k_rows = on[~ust[on]]
        u_rows = on[ust[on]]
        prev = k_rows[np.searchsorted(k_rows, u_rows) - 1]
        is_switch = names[prev] == "sched_switch"
        assert np.array_equal(c.tid[u_rows][~is_switch], c.tid[prev][~is_switch])
    assert (c.tid[~ust] >= 0).all()


def test_refuses_to_overwrite(tmp_path):
    out = tmp_path / "x"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty"):
        write_webserver_sample(out, WebServerConfig(requests=5))
    assert (out / "keep.txt").read_text() == "mine"
    assert [p.name for p in tmp_path.iterdir()] == ["x"]  # no partial folder left behind


def test_config_validation():
    with pytest.raises(ValueError, match="unknown causes"):
        WebServerConfig(mix={"aliens": 0.1}).validate()
    with pytest.raises(ValueError):
        WebServerConfig(requests=0).validate()


def test_causes_show_their_signature_in_the_simulated_events(small_sample):
    out, stats = small_sample
    truth = json.loads((out / "ground_truth.json").read_text())["requests"]
    rec = stats.records
    by_cause = {}
    for r in truth:
        by_cause.setdefault(r["cause"], []).append(r)
    normal_ms = np.median([(r["end_ns"] - r["start_ns"]) / 1e6 for r in by_cause["normal"]])
    for cause in ("connect_retry", "write_heavy", "slow_disk"):
        assert cause in by_cause
        ms = np.median([(r["end_ns"] - r["start_ns"]) / 1e6 for r in by_cause[cause]])
        assert ms > 10 * normal_ms, cause
    # a connect-retry request issues one connect per attempt on its thread
    r = by_cause["connect_retry"][0]
    code = [i for i, c in enumerate(ALL_CLASSES) if c.name == "syscall_entry_connect"][0]
    inside = (rec[:, 0] >= r["start_ns"]) & (rec[:, 0] <= r["end_ns"]) & (rec[:, 2] == code)
    assert inside.sum() >= r["params"]["attempts"]
