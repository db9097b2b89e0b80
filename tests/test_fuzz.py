"""The fuzz suite (issue 18): hypothesis draws damaged inputs of every class perftriage reads and
each is run as a real command line in a forked child (fuzzing/harness.py); none may crash, hang,
take more than 2 GiB, print more than one line for an error, write beside its input or touch
``-o`` after an error. PERFTRIAGE_FUZZ_EXAMPLES sets the inputs per class (``make fuzz``: 1000)."""

from __future__ import annotations

import os

import pytest

from conftest import ROOT, needs_bt2, real_trace

from fuzzing.campaign import CLASS_NAMES, run_class
from fuzzing.harness import SENTINEL, Case, run_case
from fuzzing.strategies import REPORT, counters_rows, csv_bytes

EXAMPLES = int(os.environ.get("PERFTRIAGE_FUZZ_EXAMPLES", "60"))


#: the slowest class (a trace read per input) drawn in halves, which make test runs side by side
SHARDS = {"ctf": 2}


@pytest.mark.parametrize("name,shard", [
    pytest.param(n, k, marks=[needs_bt2] if n == "ctf" else [], id=n if SHARDS.get(n, 1) == 1 else f"{n}-{k + 1}")
    for n in CLASS_NAMES for k in range(SHARDS.get(n, 1))])
def test_no_damaged_input_ends_badly(name, shard, tmp_path, monkeypatch):
    examples = -(-EXAMPLES // SHARDS.get(name, 1))  # independent random draws: the halves add up
    if name == "ctf" and shard == 1:  # the second half decoded by three processes, the stream files shared out
        monkeypatch.setenv("PERFTRIAGE_DECODERS", "3")
    res = run_class(name, examples, tmp_path)
    assert res.tried >= min(examples, 10)
    detail = "\n".join(f"{p}: {d} | {' '.join(a)} | {e.strip()[-400:]}" for p, (d, a, e) in res.examples.items())
    assert res.failed == 0, f"{res.failed} of {res.tried} failed:\n{detail}"
    assert len(res.exits) >= 2 or name == "bytes"  # the inputs reach past the first check, some are read


@pytest.mark.parametrize("name", ["span_csv", "thread_csv", "counters"])
def test_no_damaged_csv_ends_badly_through_the_large_files_columnar_readers(name, tmp_path, monkeypatch):
    """The same damaged CSVs read by the paths of files from 8 MiB on (polars, a few rows at a time),
    as if they were that large (fuzzing/server.py, FUZZ_COLUMNAR): a row without its server made
    the counters' path fail inside the report, a stray carriage return the spans'."""
    monkeypatch.setenv("FUZZ_COLUMNAR", "1")
    res = run_class(name, EXAMPLES, tmp_path)
    detail = "\n".join(f"{p}: {d} | {' '.join(a)} | {e.strip()[-400:]}" for p, (d, a, e) in res.examples.items())
    assert res.tried >= min(EXAMPLES, 10) and res.failed == 0, f"{res.failed} of {res.tried} failed:\n{detail}"


# -- the harness sees what it is there to see -------------------------------------------------

def test_the_harness_sees_a_write_beside_the_input(tmp_path):
    out = run_case(Case("t", {}, ["sample", "--system", "fleet", "--servers", "3", "--points", "30",
                                  "--out", "{in}/s"]), tmp_path)
    assert out.exit == 0 and "the input folder changed" in out.problems


def test_the_harness_sees_a_hang_and_an_export_changed_by_a_failed_run(tmp_path):
    big = csv_bytes(counters_rows(servers=40, samples=2000))  # about 1 s of work
    case = Case("t", {"c.csv": big}, [*REPORT, "{in}/c.csv"], timeout_s=0.01)
    out = run_case(case, tmp_path)
    assert out.timed_out and out.problems[0].startswith("hang")
    good = run_case(Case("t", {"c.csv": csv_bytes(counters_rows())}, [*REPORT, "{in}/c.csv"]), tmp_path)
    assert good.exit == 0 and good.ok
    assert (tmp_path / "work" / "findings.md").read_bytes() != SENTINEL  # written, atomically
    bad = run_case(Case("t", {"c.csv": b"time,server\n"}, [*REPORT, "{in}/c.csv"]), tmp_path)
    assert bad.exit == 3 and bad.ok and (tmp_path / "work" / "findings.md").read_bytes() == SENTINEL


@needs_bt2
def test_the_harness_runs_real_traces_and_counts_partial_reads(tmp_path):
    src = real_trace("tracevizlab-php-ust")
    case = Case("t", {"trace/u_0": (src / "u_0").read_bytes()[:5000]}, [*REPORT, "{in}/trace"],
                copy_from={"trace": src}, remove=["trace/index"])
    out = run_case(case, tmp_path)
    assert out.exit == 4 and out.ok, out
    assert "u_0: cut short" in out.stderr and str(ROOT) not in out.stderr
