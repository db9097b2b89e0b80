"""What the paths the user gives hold: a dataset's folder is searched one level down."""

from __future__ import annotations

import pytest

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import classify

from conftest import ROOT
from test_real_spans import write_spans


def _counters(folder, servers=("web-01", "web-02", "web-03")):
    folder.mkdir()
    for s in servers:
        rows = ["time,cpu,latency_ms"] + [f"{1_700_000_000 + 60 * k},{20 + k % 3},{5 + k % 2}" for k in range(30)]
        (folder / f"{s}.csv").write_text("\n".join(rows) + "\n")


def test_a_datasets_folder_is_read_through_its_subfolders(tmp_path):
    """A dataset as published: metric/ (one CSV per pod), trace/ (span files), a README and a
    fault list at the top, which are no data. Given the top folder, both are found."""
    _counters(tmp_path / "metric")
    (tmp_path / "trace").mkdir()
    write_spans(tmp_path / "trace" / "03_53_trace.csv", n=50)
    (tmp_path / "README.md").write_text("# a dataset\n")
    (tmp_path / "faults.json").write_text('{"03": []}\n')
    (tmp_path / ".cache").mkdir()
    inputs = classify([str(tmp_path)])
    assert {k: sorted(p.name for p in v) for k, v in inputs.files.items()} == {
        "counters": ["web-01.csv", "web-02.csv", "web-03.csv"], "spans": ["03_53_trace.csv"]}
    assert inputs.ctf == []


def test_a_trace_in_a_subfolder_is_found(tmp_path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "webserver").symlink_to(ROOT / "sample_traces" / "webserver")
    (tmp_path / "notes.txt").write_text("recorded on the staging host\n")
    found = classify([str(tmp_path / "traces")]).ctf
    assert [p.name for p in found] == ["traces"]  # a folder holding a trace below, linked or not
    from perftriage.analysis.ctf.discover import find_traces

    assert {t.path.relative_to(tmp_path / "traces").parts[0] for t in find_traces(found)} == {"webserver"}


def test_a_folder_whose_files_are_data_is_not_searched_below(tmp_path):
    _counters(tmp_path / "top")
    _counters(tmp_path / "top" / "older", servers=("web-09",))
    inputs = classify([str(tmp_path / "top")])
    assert sorted(p.name for p in inputs.files["counters"]) == ["web-01.csv", "web-02.csv", "web-03.csv"]


def test_a_folder_without_data_says_so_in_one_line(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.md").write_text("nothing to analyse\n")
    with pytest.raises(InputError) as err:
        classify([str(tmp_path)])
    assert str(err.value) == (f"{tmp_path}: holds neither a CTF trace (no 'metadata' file) nor a data file "
                              "perftriage reads, nor do its subfolders")
    with pytest.raises(InputError) as err:
        classify([str(tmp_path / "docs")])
    assert str(err.value).endswith("nor a data file perftriage reads")


def test_one_kind_in_several_subfolders_is_for_the_user_to_choose(tmp_path):
    """train/ and test/ of a labelled dataset both hold counters: not one fleet (their rows are
    numbered from 0 each), so perftriage asks which, in one line, rather than mixing them."""
    _counters(tmp_path / "train")
    _counters(tmp_path / "test")
    with pytest.raises(InputError) as err:
        classify([str(tmp_path)])
    assert str(err.value) == (f"{tmp_path}: holds no data file of its own, and its subfolders test, train each hold "
                              "counters files: name the folder to read (--reference for a second one to compare "
                              "with)")


def test_an_empty_file_beside_data_files_is_said_not_silently_dropped(tmp_path):
    """destination_50.csv beside the pods' files, empty (the collector died): left out with a
    note; a README beside them is left out without one."""
    _counters(tmp_path / "metric")
    (tmp_path / "metric" / "destination_50.csv").write_text("")
    (tmp_path / "metric" / "README.md").write_text("pod metrics\n")
    inputs = classify([str(tmp_path / "metric")])
    assert len(inputs.files["counters"]) == 3
    assert inputs.notes == [f"{tmp_path / 'metric'}: destination_50.csv is empty: left out"]
    from perftriage.analysis.triage import run_triage  # noqa: PLC0415

    assert inputs.notes[0] in run_triage([str(tmp_path / "metric")]).report.notes


def spans_and_counters(folder) -> None:
    """Healthy spans (300 s of requests from T0, no time to cut them at) in trace/, beside three
    pods' counters (every 10 s over 7 hours) in metric/, payment's CPU and memory up for 50 s from
    T0 + 150 s (03:49:10 UTC)."""
    (folder / "trace").mkdir()
    write_spans(folder / "trace" / "spans.csv", n=3000)
    _pod_counters(folder / "metric")


def _pod_counters(folder) -> None:
    """spans_and_counters' metric/: three pods every 10 s over 7 hours, payment's spike."""
    import numpy as np  # noqa: PLC0415

    from test_real_spans import T0  # noqa: PLC0415

    folder.mkdir()
    t0 = T0 // 10**9 - 6 * 3600
    rng = np.random.default_rng(2)
    for i, pod in enumerate(["cart-5b7d9c6f4-m8n2p", "payment-9c6d7f5b8-t4v6x", "email-7f5c9d8b4-q2w4z"]):
        rows = ["timestamp,cpu,mem"]
        for k in range(7 * 360):
            t = t0 + 10 * k
            spike = 40.0 if i == 1 and T0 // 10**9 + 150 <= t < T0 // 10**9 + 200 else 0.0
            rows.append(f"{t},{20 + rng.normal(0, 1) + spike:.2f},{50 + rng.normal(0, 1) + spike:.2f}")
        (folder / f"{pod}.csv").write_text("\n".join(rows) + "\n")


def test_spans_without_a_change_get_the_counters_times_to_compare_at(tmp_path):
    """Healthy spans beside pod counters with one unusual interval in the spans' minutes: the
    report says when, to give as --incident-time."""
    from perftriage.analysis.triage import run_triage  # noqa: PLC0415

    spans_and_counters(tmp_path)
    notes = run_triage([str(tmp_path)]).report.notes
    hint = [n for n in notes if n.startswith("what changed: the counters' strongest unusual intervals")]
    assert len(hint) == 1 and "start at 03:49:10 UTC (payment-9c6d7f5b8-t4v6x):" in hint[0], notes  # T0 + 150 s


def test_a_time_to_compare_at_on_another_day_than_the_spans_first_gives_its_date(tmp_path):
    """--incident-time reads HH:MM on the spans' first day: a time on a later day is given with
    its date, in a form --incident-time takes back."""
    from perftriage.analysis.timeparse import user_time_ns  # noqa: PLC0415
    from perftriage.analysis.triage import run_triage  # noqa: PLC0415
    from test_real_spans import T0, SpanRows  # noqa: PLC0415

    spans_and_counters(tmp_path)
    early = SpanRows()  # a few requests 20 hours before, on the day before
    for k in range(20):
        early.span(f"e{k:031x}", "root", "frontend", "hipstershop.Frontend/Recv.", T0 - 72_000 * 10**9 + k * 10**9,
                   5_000_000)
    early.write(tmp_path / "trace" / "early.csv")
    res = run_triage([str(tmp_path)])
    assert int(res.spans.start.min()) < T0 - 10 * 3600 * 10**9  # the spans do start the day before
    hint = [n for n in res.report.notes if n.startswith("what changed: the counters' strongest")]
    assert hint and "start at 2022-08-22T03:49:10 UTC (payment-9c6d7f5b8-t4v6x)" in hint[0], res.report.notes
    # --incident-time takes it back: the interval's start
    assert user_time_ns("2022-08-22T03:49:10", int(res.spans.start.min())) == (T0 // 10**9 + 150) * 10**9


def test_data_further_down_than_one_level_is_named_in_the_error(tmp_path):
    # a copied dataset two folders down (and a link back up, which is not followed)
    (tmp_path / "copy" / "2022").mkdir(parents=True)
    _counters(tmp_path / "copy" / "2022" / "metric")
    (tmp_path / "copy" / "loop").symlink_to(tmp_path)
    with pytest.raises(InputError) as err:
        classify([str(tmp_path)])
    assert str(err.value).endswith(f"nor do its subfolders; data files lie deeper, in "
                                   f"{tmp_path / 'copy' / '2022' / 'metric'}: name that folder")
    assert sorted(p.name for p in classify([str(err.value).split("in ")[-1].split(":")[0]]).files["counters"]) == \
        ["web-01.csv", "web-02.csv", "web-03.csv"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
@pytest.mark.parametrize("sample", ["fleet/counters.csv", "microservices/spans.otlp.jsonl"])
def test_utf16_text_reads_as_its_utf8_original(tmp_path, sample, encoding):
    """What Windows tools write (PowerShell's Out-File, Excel's Unicode text): UTF-16 with a byte
    order mark. It was read as garbage ('the time column holds neither numbers nor ISO 8601
    times'); now as the same text in UTF-8, gzip'd or not."""
    import gzip

    from perftriage.analysis.triage import Options, run_triage

    src = ROOT / "sample_traces" / sample
    text = src.read_text(encoding="utf-8")
    wide = tmp_path / src.name
    wide.write_bytes(text.encode("utf-16") if encoding == "utf-16" else b"\xfe\xff" + text.encode("utf-16-be"))
    packed = tmp_path / (src.name + ".gz")
    packed.write_bytes(gzip.compress(wide.read_bytes()))
    titles = [[f.title for f in run_triage([p], Options()).report.ranked()[:3]] for p in (src, wide, packed)]
    assert titles[0] and titles[1] == titles[0] and titles[2] == titles[0]


LOG_CSV = ("Timestamp,TimeUnixNano,Node,PodName,Container,TraceID,SpanID,Log\n" + "".join(
    f'2023-01-29T10:03:{i:02d}.9Z,{1674986580 + i}900000000,33.33.33.{80 + i % 3},ts-pay-7fc6f5476f-cr76x,server,'
    f'{i:032x},{i:016x},"{{""log"":""{i} INFO c.t.c.PaymentController#34 [pay]""}}"\n' for i in range(40)))


def test_a_log_of_a_dataset_is_no_counters_and_its_folder_is_said_left_out(tmp_path):
    """Nezha's log CSVs (time, its unix nanoseconds, node, pod, trace and span ids, the message)
    were read as counters, TimeUnixNano a counter of each node's ('No findings', or 'no series has
    two samples'). A log is no counter file: named alone, one line; beside spans in a dataset's
    folder, its subfolder is said left out. A time column named with its unit is no counter either."""
    from perftriage.analysis.counters.readers import load_counters

    day = tmp_path / "2023-01-29"
    (day / "log").mkdir(parents=True)
    (day / "log" / "10_04_log.csv").write_text(LOG_CSV)
    with pytest.raises(InputError, match="10_04_log.csv: unrecognised input"):
        classify([day / "log" / "10_04_log.csv"])
    (day / "trace").mkdir()
    write_spans(day / "trace" / "10_04_trace.csv")
    inputs = classify([day])
    assert list(inputs.files) == ["spans"]
    assert any(n.endswith("log: 1 file of no kind perftriage reads (e.g. 10_04_log.csv): left out") for n in inputs.notes)
    counters = tmp_path / "m.csv"
    counters.write_text("Timestamp,TimeUnixNano,Node,cpu\n" + "".join(
        f"{1674986580 + 60 * i},{1674986580 + 60 * i}000000000,n{k},{0.1 * k}\n" for i in range(5) for k in range(3)))
    assert load_counters([counters]).counters == ["cpu"]


@pytest.mark.parametrize("first", ["perftriage.analysis.counters.readers", "perftriage.analysis.threads.series",
                                   "perftriage.analysis.spans"])
def test_a_files_kind_does_not_depend_on_which_reader_was_imported_first(tmp_path, first):
    """An AIOps span export (duration, status_code: columns a counter CSV could have) is spans,
    a counter CSV counters, whichever analysis a caller imported first; the counters' sniffer
    had been asked first when its module was, and took the spans for counters."""
    import subprocess
    import sys

    from test_spans import _aiops_csv

    spans = _aiops_csv(tmp_path / "trace_jaeger-span.csv")
    counters = tmp_path / "fleet.csv"
    counters.write_text("time,server,cpu\n" + "".join(f"{t},s{k},{t % 7 + k}\n" for t in range(20) for k in range(3)))
    code = (f"import {first}\nimport perftriage.analysis.triage\nfrom perftriage.analysis.inputs import sniff_file\n"
            f"from pathlib import Path\nprint(sniff_file(Path({str(spans)!r})), sniff_file(Path({str(counters)!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.split() == ["spans", "counters"], out.stdout + out.stderr
