"""CTF 2 traces (LTTng 2.15's default format): read through their metadata's TSDL translation
(analysis/ctf/ctf2.py) with babeltrace2 2.0, the same events as the CTF 1.8 trace they were
written from. The CTF 2 metadata of the real traces is written by fuzzing/ctf2_writer.py in
lttng-modules 2.15's form and in lttng-tools' first form; the stream files are the real ones."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import REAL_TRACE_EVENTS, needs_bt2, real_trace
from fuzzing.ctf2_writer import ctf2_metadata, ctf2_view
from perftriage.analysis.ctf.ctf2 import Ctf2Error, tsdl_from_ctf2
from perftriage.analysis.ctf.metadata import read_metadata_text
from perftriage.analysis.ctf.reader import CtfReader
from perftriage.analysis.ctf.spec import ReadSpec
from perftriage.analysis.errors import InputError

pytestmark = needs_bt2

TRACES = {name: name for name in REAL_TRACE_EVENTS}
TRACES["tracevizlab-cat-kern-ust"] = "tracevizlab-cat-kern-ust/cat-kernel"
TRACES["tracevizlab-wget-k-20180802-115043"] = "tracevizlab-wget-k-20180802-115043/kernel"
TRACES["tracevizlab-wget-k-20180802-115406"] = "tracevizlab-wget-k-20180802-115406/kernel"


def _field_names(tsdl: str) -> list[str]:
    names = sorted({n.lstrip("_") for n in re.findall(r"\}\s*(_\w+)\s*(?:\[[^\]]*\])?\s*;", tsdl)})
    return names + ["network_header.transport_header.seq", "network_header.saddr"]


def _table(path, names) -> dict[str, list]:
    reader = CtfReader([path], spec=ReadSpec(fields={"*": names}))
    cols: dict[str, list] = {}
    rows = 0
    for ch in reader.chunks():
        part = {"ts": ch.ts.tolist(), "cpu": ch.cpu.tolist(), "tid": ch.tid.tolist(), "pid": ch.pid.tolist(),
                "event": [reader.event_names[c] for c in ch.event]}
        for k, v in ch.fields.items():
            part["f:" + k] = [reader.strings[c] if c >= 0 else None for c in v] if v.dtype == np.int32 else v.tolist()
        for k in set(cols) | set(part):
            cols.setdefault(k, [None] * rows).extend(part.get(k, [None] * len(ch)))
        rows += len(ch)
    return cols


# every real trace, each in one of the two forms (text or packetized metadata)
CASES = [(name, "modules" if i % 2 == 0 else "tools", i % 2 == 1) for i, name in enumerate(sorted(TRACES))]


@pytest.mark.parametrize("name,form,packets", CASES)
def test_a_real_trace_under_ctf2_metadata_reads_the_same_events(name, form, packets, tmp_path):
    src = real_trace(TRACES[name])
    names = _field_names(read_metadata_text(src / "metadata"))
    view = ctf2_view(src, tmp_path / "ctf2", form, packets)
    assert (view / "metadata").read_bytes().lstrip()[:1] in (b"\x1e", b"\x57")  # JSON fragments, or packets of them
    before = _table(src, names)
    after = _table(view, names)
    assert len(before["ts"]) > 1000
    assert sorted(after) == sorted(before)
    for k in before:
        assert after[k] == before[k], k
    assert sorted(p.name for p in view.iterdir()) == sorted(p.name for p in src.iterdir() if p.is_file())  # untouched


def test_a_ctf2_session_gets_the_same_report_as_its_ctf18_original(tmp_path):
    src = real_trace("tracevizlab-cat-kern-ust")
    ctf2_view(src / "cat-kernel", tmp_path / "session" / "cat-kernel", "modules")
    ctf2_view(src / "cat-ust", tmp_path / "session" / "cat-ust", "tools", packets=True)

    def report(path):
        r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(path), "--format", "json", "-q"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout.replace(str(path), "TRACE"))
        doc.pop("created", None)
        return doc

    original, translated = report(src), report(tmp_path / "session")
    assert translated == original
    assert translated["findings"]


def test_lttng_modules_kernel_metadata_translates_to_tsdl_babeltrace2_and_perftriage_read():
    tsdl = read_metadata_text(real_trace("tracevizlab-apt") / "metadata")
    text = tsdl_from_ctf2(ctf2_metadata(tsdl, "modules"))
    # the compact header's selector is an enumeration of the variant's options, its timestamp on the clock
    assert re.search(r'enum : integer \{ size = 5; align = 1;[^}]*\} \{ "compact" = 0 \.\.\. 30, "extended" = 31 \} id; '
                     r'variant <id> \{ struct \{ integer \{ size = 27; align = 1;[^}]*map = clock\.monotonic\.value; \}',
                     text)
    assert "offset_s = 1539813935;" in text and "offset = 728856522;" in text
    from perftriage.analysis.ctf.metadata import clock_origin_ns, env_value, event_names, packet_layout

    assert clock_origin_ns(text) == clock_origin_ns(tsdl)
    assert env_value(text, "hostname") == "basement-htpc" and env_value(text, "tracer_major") == "2"
    assert sorted(event_names(text)) == sorted(event_names(tsdl))
    assert packet_layout(text) == packet_layout(tsdl)


def _bad(text: str, tmp_path):
    folder = tmp_path / "trace"
    folder.mkdir(parents=True)
    (folder / "metadata").write_text(text)
    (folder / "channel0_0").write_bytes(bytes(64))
    with pytest.raises(InputError) as err:
        CtfReader([folder])
    msg = str(err.value)
    assert "\n" not in msg and str(folder / "metadata") in msg
    return msg


def _kernel_fragments() -> list[dict]:
    text = ctf2_metadata(read_metadata_text(real_trace("tracevizlab-wget-k-20180802-115043") / "kernel" / "metadata"))
    return [json.loads(p) for p in text.split("\x1e")[1:]]


def _text(fragments) -> str:
    return "".join("\x1e" + json.dumps(f) + "\n" for f in fragments)


def _first(frags, kind, **match) -> dict:
    return next(f for f in frags if f["type"] == kind and all(f.get(k) == v for k, v in match.items()))


def _payload_member(frags, event, member) -> dict:
    ev = _first(frags, "event-record-class", name=event)
    return next(m for m in ev["payload-field-class"]["member-classes"] if m["name"] == member)


def test_damaged_or_unreadable_ctf2_metadata_is_one_line_naming_the_file(tmp_path):
    good = _text(_kernel_fragments())
    assert "fragment" in _bad(good[: len(good) // 2], tmp_path / "cut") and "not JSON" in _bad(good[:100], tmp_path / "c2")
    frags = _kernel_fragments()
    frags[0]["version"] = 3
    assert "version 3" in _bad(_text(frags), tmp_path / "v3")
    frags = _kernel_fragments()
    _payload_member(frags, "sched_switch", "prev_tid")["field-class"]["type"] = "variable-length-signed-integer"
    assert "variable-length-signed-integer fields cannot be read" in _bad(_text(frags), tmp_path / "varint")
    frags = _kernel_fragments()
    _first(frags, "trace-class")["packet-header-field-class"] = "nope"
    assert "'nope' is neither an object nor a known alias" in _bad(_text(frags), tmp_path / "alias")
    frags = _kernel_fragments()
    _first(frags, "data-stream-class")["default-clock-class-id"] = "boot"
    assert "names clock 'boot'" in _bad(_text(frags), tmp_path / "clock")
    frags = _kernel_fragments()
    _payload_member(frags, "sched_switch", "prev_comm")["field-class"]["encoding"] = "utf-16le"
    assert "utf-16le" in _bad(_text(frags), tmp_path / "utf16")
    frags = _kernel_fragments()
    del _first(frags, "clock-class")["frequency"]
    assert "has no frequency" in _bad(_text(frags), tmp_path / "freq")


def test_the_cli_says_what_in_ctf2_metadata_it_cannot_read(tmp_path):
    src = real_trace("tracevizlab-wget-k-20180802-115043") / "kernel"
    view = ctf2_view(src, tmp_path / "t")
    frags = _kernel_fragments()
    _payload_member(frags, "sched_switch", "prev_tid")["field-class"]["type"] = "variable-length-unsigned-integer"
    (view / "metadata").write_text(_text(frags))
    r = subprocess.run([sys.executable, "-m", "perftriage", "report", str(view)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and str(view / "metadata") in lines[0] and "variable-length-unsigned-integer" in lines[0]


def _net_variant(frags) -> tuple[list, dict]:
    members = _first(frags, "event-record-class", name="net_dev_queue")["payload-field-class"]["member-classes"]
    return members, next(m for m in members if m["name"] == "network_header")


def test_a_variant_selector_that_is_not_a_member_before_it_is_refused():
    frags = _kernel_fragments()
    _, variant = _net_variant(frags)
    variant["field-class"]["selector-field-location"] = {"path": ["nowhere"]}
    with pytest.raises(Ctf2Error, match="'nowhere' is not a member before it"):
        tsdl_from_ctf2(_text(frags))
    frags = _kernel_fragments()
    members, variant = _net_variant(frags)
    members.remove(variant)
    members.insert(0, variant)  # before its selector
    with pytest.raises(Ctf2Error, match="'network_header_type' is not a member before it"):
        tsdl_from_ctf2(_text(frags))


def test_a_variant_selected_by_a_plain_integer_gets_its_options_as_labels():
    frags = _kernel_fragments()
    members, variant = _net_variant(frags)
    selector = next(m for m in members if m["name"] == "network_header_type")
    del selector["field-class"]["mappings"]  # CTF 2 allows any integer as a selector
    text = tsdl_from_ctf2(_text(frags))
    assert re.search(r'enum : integer \{[^}]*\} \{ "unknown" = 0, "ipv4" = 1, "ipv6" = 2 \} _network_header_type;', text)


def test_a_ctf2_trace_with_a_cut_stream_file_is_read_to_its_last_whole_packet(tmp_path):
    src = real_trace("tracevizlab-wget-k-20180802-115043") / "kernel"
    view = ctf2_view(src, tmp_path / "t", "modules")
    biggest = max((p for p in view.iterdir() if p.name != "metadata"), key=lambda p: p.stat().st_size)
    data = biggest.read_bytes()
    biggest.unlink()
    biggest.write_bytes(data[: len(data) - 1000])  # the last packet cut short
    names = _field_names(read_metadata_text(src / "metadata"))
    whole, cut = _table(src, names), _table(view, names)
    assert 0 < len(cut["ts"]) < len(whole["ts"])
    reader = CtfReader([view])
    assert reader.traces[0].ctf_version == "2"
    assert any("cut" in p or "truncated" in p or "unreadable" in p for p in reader.traces[0].problems)
    before = sorted(p.name for p in view.iterdir())
    list(reader.chunks())
    assert sorted(p.name for p in view.iterdir()) == before  # the trace folder is not written to


def test_info_says_a_trace_is_ctf2(tmp_path):
    view = ctf2_view(real_trace("tracevizlab-php-ust"), tmp_path / "php")
    r = subprocess.run([sys.executable, "-m", "perftriage", "info", str(view)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "tracer lttng-ust 2.10 (CTF 2)" in r.stdout and "events  1,871" in r.stdout


def test_header_fields_are_known_by_their_roles_not_their_names(tmp_path):
    """CTF 2 says what a header field is by its role; a producer naming them otherwise than LTTng
    is read the same (the TSDL translation names them as babeltrace2 2.0 expects)."""
    src = real_trace("tracevizlab-wget-k-20180802-115043") / "kernel"
    frags = _kernel_fragments()
    renamed = 0

    def rename(node):
        nonlocal renamed
        if isinstance(node, dict):
            if isinstance(node.get("field-class"), dict) and node["field-class"].get("roles") and "name" in node:
                node["name"] = "the-" + node["name"].replace("_", "-")
                renamed += 1
            for v in node.values():
                rename(v)
        elif isinstance(node, list):
            for v in node:
                rename(v)

    headers = [f for f in frags if f["type"] in ("field-class-alias", "data-stream-class")]
    for f in headers:
        rename({k: v for k, v in f.items() if k != "event-record-common-context-field-class"})
    header = _first(frags, "data-stream-class")["event-record-header-field-class"]
    header["member-classes"][1]["field-class"]["selector-field-location"] = {"path": ["the-id"]}
    assert renamed >= 12  # magic, uuid, stream_id..., packet_size..., both ids and timestamps of the header
    view = ctf2_view(src, tmp_path / "t")
    (view / "metadata").write_text(_text(frags))
    text = tsdl_from_ctf2((view / "metadata").read_text())
    assert " packet_size;" in text and " timestamp_begin;" in text and "variant <id>" in text and "the_" not in text
    names = _field_names(read_metadata_text(src / "metadata"))
    assert _table(view, names) == _table(src, names)
    frags[-1]["id"] = frags[-2]["id"]
    with pytest.raises(Ctf2Error, match="two event record classes of data stream class 0 have the id"):
        tsdl_from_ctf2(_text(frags))


def test_variant_options_without_names_read_the_same(tmp_path):
    """lttng-tools' first CTF 2 writer gives a variant's options ranges and no names: the
    translation names them itself (the header's compact and extended, the network headers)."""
    src = real_trace("tracevizlab-wget-k-20180802-115043") / "kernel"
    text = ctf2_metadata(read_metadata_text(src / "metadata"), "tools")
    frags = [json.loads(p) for p in text.split("\x1e")[1:]]
    dropped = 0

    def drop(node):
        nonlocal dropped
        if isinstance(node, dict):
            if node.get("type") == "variant":
                for opt in node["options"]:
                    dropped += opt.pop("name", None) is not None
            for v in node.values():
                drop(v)
        elif isinstance(node, list):
            for v in node:
                drop(v)

    drop(frags)
    assert dropped > 10  # the header's two, and the network headers' of several events
    view = ctf2_view(src, tmp_path / "t", "tools")
    (view / "metadata").write_text(_text(frags))
    assert "variant <id> { struct {" in tsdl_from_ctf2(_text(frags)) and " option0;" in tsdl_from_ctf2(_text(frags))
    names = _field_names(read_metadata_text(src / "metadata"))
    assert _table(view, names) == _table(src, names)


def _overlapping_network_header(frags) -> None:
    ev = _first(frags, "event-record-class", name="net_dev_queue")
    variant = next(m for m in ev["payload-field-class"]["member-classes"] if m["name"] == "network_header")
    variant["field-class"]["options"][1]["selector-field-ranges"] = [[0, 1]]  # ipv4's values take unknown's 0


def test_variant_options_that_select_the_same_values_are_one_line_not_an_abort(tmp_path, monkeypatch):
    """babeltrace2 2.0 aborts the process on a variant whose options' values overlap (a
    precondition of its library, in a payload variant): the translation refuses them, and where
    something it lets through makes babeltrace2 abort all the same, the trace is tried in a child
    first and the abort is one line naming the metadata."""
    import perftriage.analysis.ctf.ctf2 as ctf2

    frags = _kernel_fragments()
    _overlapping_network_header(frags)
    with pytest.raises(Ctf2Error, match="options select overlapping values"):
        tsdl_from_ctf2(_text(frags))
    view = ctf2_view(real_trace("tracevizlab-wget-k-20180802-115043") / "kernel", tmp_path / "t")
    (view / "metadata").write_text(_text(frags))
    monkeypatch.setattr(ctf2, "_disjoint", lambda labels: None)  # as if the translation let it through
    with pytest.raises(InputError) as err:
        CtfReader([view])
    msg = str(err.value)
    assert "babeltrace2 2.0 aborts on this CTF 2 metadata's translation" in msg and "SIGABRT" in msg
    assert str(view / "metadata") in msg and "\n" not in msg
