"""A CTF 1.8 trace's TSDL metadata written as CTF 2 metadata, the way LTTng 2.15
writes it (lttng-modules' form: field-class aliases for the headers, integers with mappings for
enumerations, relative field locations, named variant options; or lttng-tools' first form:
enumeration field classes, locations as [origin, name]). The stream files do not change between
the two formats, so a real trace read through its CTF 2 metadata must give the same events as
through its TSDL: that is what the CTF 2 tests check, on real traces (tests/test_ctf2.py), and
what the fuzzing campaign damages (the ``ctf`` class's CTF 2 cases).

A parser for the TSDL LTTng writes (typealiases, named structures, enumerations, variants,
arrays and sequences), not for every TSDL."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

_TOKEN = re.compile(r'\s*(?:(/\*.*?\*/)|(//[^\n]*)|("(?:\\.|[^"\\])*")|(:=|\.\.\.|[{}\[\]<>();:=,.])|'
                    r'(-?0[xX][0-9a-fA-F]+|-?\d+)|([A-Za-z_][A-Za-z0-9_]*))', re.S)


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"TSDL: cannot read at {text[pos:pos + 40]!r}")
        pos = m.end()
        if m.group(1) or m.group(2):
            continue
        out.append(m.group(m.lastindex))
    return out


class _Parser:
    def __init__(self, text: str):
        self.t = _tokens(text)
        self.i = 0
        self.aliases: dict[str, dict] = {}
        self.structs: dict[str, dict] = {}
        self.trace: dict = {}
        self.env: dict = {}
        self.clocks: list[dict] = []
        self.streams: list[dict] = []
        self.events: list[dict] = []

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else None

    def take(self, expect=None):
        tok = self.t[self.i]
        if expect is not None and tok != expect:
            raise ValueError(f"TSDL: expected {expect!r}, found {tok!r} at token {self.i}")
        self.i += 1
        return tok

    def value(self):
        tok = self.take()
        if tok.startswith('"'):
            return json.loads(tok)
        if re.fullmatch(r"-?0[xX][0-9a-fA-F]+|-?\d+", tok):
            return int(tok, 0)
        parts = [tok]
        while self.peek() == ".":
            self.take(".")
            parts.append(self.take())
        return ".".join(parts)

    def attrs(self) -> dict:
        self.take("{")
        out = {}
        while self.peek() != "}":
            key = self.take()
            while self.peek() == ".":
                self.take(".")
                key += "." + self.take()
            if self.peek() == ":=":
                self.take(":=")
                out[key] = self.type_()
            else:
                self.take("=")
                out[key] = self.value()
            self.take(";")
        self.take("}")
        return out

    def type_(self) -> dict:
        tok = self.peek()
        if tok == "integer":
            self.take()
            a = self.attrs()
            return {"kind": "int", "size": a["size"], "align": a.get("align", 8 if a["size"] % 8 == 0 else 1),
                    "signed": a.get("signed") in (1, "true", "TRUE"), "byte_order": a.get("byte_order"),
                    "base": a.get("base", 10), "map": a.get("map"), "encoding": a.get("encoding")}
        if tok == "floating_point":
            self.take()
            a = self.attrs()
            return {"kind": "float", "length": a["exp_dig"] + a["mant_dig"], "align": a.get("align", 8),
                    "byte_order": a.get("byte_order")}
        if tok == "string":
            self.take()
            if self.peek() == "{":
                self.attrs()
            return {"kind": "string"}
        if tok == "enum":
            self.take()
            self.take(":")
            base = self.type_()
            self.take("{")
            mappings, nxt = {}, 0
            while self.peek() != "}":
                label = self.value()
                lo = hi = nxt
                if self.peek() == "=":
                    self.take("=")
                    lo = hi = self.value()
                    if self.peek() == "...":
                        self.take("...")
                        hi = self.value()
                mappings.setdefault(str(label), []).append([lo, hi])
                nxt = hi + 1
                if self.peek() == ",":
                    self.take(",")
            self.take("}")
            return dict(base, mappings=mappings)
        if tok == "struct":
            self.take()
            name = None
            if self.peek() not in ("{",) and re.fullmatch(r"[A-Za-z_]\w*", self.peek() or ""):
                name = self.take()
            if self.peek() == "{":
                members = self.members()
                st = {"kind": "struct", "members": members, "align": 1}
                if self.peek() == "align":
                    self.take()
                    self.take("(")
                    st["align"] = self.value()
                    self.take(")")
                if name:
                    self.structs[name] = st
                return st
            st = self.structs[name]
            return st
        if tok == "variant":
            self.take()
            if self.peek() != "<":
                self.take()  # a name
            self.take("<")
            tag = self.value()
            self.take(">")
            return {"kind": "variant", "tag": tag, "members": self.members()}
        words = []
        while self.peek() not in (None, ";", "{") and " ".join(words + [self.peek()]) in self._alias_prefixes():
            words.append(self.take())
        key = " ".join(words)
        if key not in self.aliases:
            raise ValueError(f"TSDL: unknown type {tok!r}")
        return self.aliases[key]

    def _alias_prefixes(self):
        out = set()
        for k in self.aliases:
            parts = k.split()
            for n in range(1, len(parts) + 1):
                out.add(" ".join(parts[:n]))
        return out

    def members(self) -> list[tuple[str, dict]]:
        self.take("{")
        out = []
        while self.peek() != "}":
            t = self.type_()
            name = self.take()
            dims = []
            while self.peek() == "[":
                self.take("[")
                dims.append(self.value())
                self.take("]")
            for d in reversed(dims):
                t = {"kind": "array", "length": d, "element": t}
            out.append((name, t))
            self.take(";")
        self.take("}")
        return out

    def parse(self):
        while self.peek() is not None:
            tok = self.peek()
            if tok == "typealias":
                self.take()
                t = self.type_()
                self.take(":=")
                words = []
                while self.peek() != ";":
                    words.append(self.take())
                self.aliases[" ".join(words)] = t
                self.take(";")
            elif tok == "struct":
                self.type_()
                self.take(";")
            elif tok in ("trace", "env", "clock", "stream", "event", "callsite"):
                self.take()
                a = self.attrs()
                self.take(";")
                {"trace": lambda: self.trace.update(a), "env": lambda: self.env.update(a),
                 "clock": lambda: self.clocks.append(a), "stream": lambda: self.streams.append(a),
                 "event": lambda: self.events.append(a), "callsite": lambda: None}[tok]()
            else:
                raise ValueError(f"TSDL: unexpected {tok!r}")
        return self


_ROLES = {
    "packet-header": {"magic": "packet-magic-number", "stream_id": "data-stream-class-id",
                      "stream_instance_id": "data-stream-id"},
    "packet-context": {"timestamp_begin": "default-clock-timestamp", "timestamp_end": "packet-end-default-clock-timestamp",
                       "content_size": "packet-content-length", "packet_size": "packet-total-length",
                       "packet_seq_num": "packet-sequence-number", "events_discarded": "discarded-event-record-counter-snapshot"},
    "event-record-header": {"id": "event-record-class-id", "timestamp": "default-clock-timestamp"},
}


def _strip(name: str) -> str:
    return name[1:] if name.startswith("_") else name  # what babeltrace2 shows of a TSDL name


class _Writer:
    def __init__(self, p: _Parser, form: str):
        self.p = p
        self.form = form  # "modules" (lttng-modules 2.15) or "tools" (lttng-tools' first form)
        self.native = p.trace.get("byte_order", "le")  # an integer's byte order when it names none

    def order(self, t: dict) -> str:
        bo = t.get("byte_order") or self.native
        return "big-endian" if bo in ("be", "network") else "little-endian"

    def location(self, name: str, scope: str):
        if self.form == "tools":
            return [scope, _strip(name)]
        return {"path": [_strip(name)]}

    def fc(self, t: dict, scope: str, name: str = "", siblings=()) -> dict:
        kind = t["kind"]
        if kind == "int":
            bo = self.order(t)
            if t.get("mappings") and self.form == "tools":
                out = {"type": "fixed-length-signed-enumeration" if t["signed"] else "fixed-length-unsigned-enumeration"}
            else:
                out = {"type": "fixed-length-signed-integer" if t["signed"] else "fixed-length-unsigned-integer"}
            out.update({"length": t["size"], "byte-order": bo})
            if t["align"] > 1 or self.form == "tools":
                out["alignment"] = t["align"]
            if t["base"] != 10:
                out["preferred-display-base"] = t["base"]
            if t.get("mappings"):
                out["mappings"] = t["mappings"]
            role = _ROLES.get(scope, {}).get(name)
            if role:
                out["roles"] = [role]
            return out
        if kind == "float":
            bo = self.order(t)
            return {"type": "fixed-length-floating-point-number", "length": t["length"], "byte-order": bo,
                    "alignment": t["align"]}
        if kind == "string":
            return {"type": "null-terminated-string"}
        if kind == "array":
            el = t["element"]
            dynamic = isinstance(t["length"], str)
            if el["kind"] == "int" and el["size"] == 8 and str(el.get("encoding") or "").upper() in ("UTF8", "ASCII"):
                if dynamic:
                    return {"type": "dynamic-length-string", "length-field-location": self.location(t["length"], scope)}
                return {"type": "static-length-string", "length": t["length"]}
            if scope == "packet-header" and name == "uuid":
                return {"type": "static-length-blob", "length": t["length"], "roles": ["metadata-stream-uuid"]}
            out = {"type": "dynamic-length-array" if dynamic else "static-length-array",
                   "element-field-class": self.fc(el, scope)}
            if dynamic:
                out["length-field-location"] = self.location(t["length"], scope)
            else:
                out["length"] = t["length"]
            return out
        if kind == "struct":
            out = {"type": "structure", "member-classes": self.members(t["members"], scope)}
            if t["align"] > 1:
                out["minimum-alignment"] = t["align"]
            return out
        if kind == "variant":
            tag = dict(siblings)[t["tag"]]
            options = []
            for opt_name, opt in t["members"]:
                ranges = tag["mappings"].get(opt_name) or tag["mappings"].get(_strip(opt_name))
                options.append({"name": _strip(opt_name), "selector-field-ranges": ranges,
                                "field-class": self.fc(opt, scope)})
            return {"type": "variant", "selector-field-location": self.location(t["tag"], scope), "options": options}
        raise ValueError(kind)

    def members(self, members, scope: str) -> list[dict]:
        return [{"name": _strip(n), "field-class": self.fc(t, scope, n, members)} for n, t in members]

    def fragments(self) -> list[dict]:
        p = self.p
        uuid = p.trace.get("uuid", "00000000-0000-0000-0000-000000000000").replace("-", "")
        frags = [{"type": "preamble", "version": 2, "uuid": list(bytes.fromhex(uuid))}]
        trace = {"type": "trace-class", "environment": p.env}
        if "packet.header" in p.trace:
            header = self.fc(p.trace["packet.header"], "packet-header")
            if self.form == "modules":
                frags.append({"type": "field-class-alias", "name": "pkt-header", "field-class": header})
                header = "pkt-header"
            trace["packet-header-field-class"] = header
        frags.append(trace)
        for c in p.clocks:
            freq = c.get("freq", 1_000_000_000)
            total = c.get("offset_s", 0) * freq + c.get("offset", 0)
            clock = {"type": "clock-class", "frequency": freq, "description": c.get("description", ""),
                     "offset-from-origin" if self.form == "modules" else "offset":
                         {"seconds": total // freq, "cycles": total % freq}}
            if self.form == "modules":
                clock.update({"id": c["name"], "name": c["name"], "origin": "unix-epoch"})
                if "uuid" in c:
                    clock["uid"] = c["uuid"]
            else:
                clock["name"] = c["name"]
                if "uuid" in c:
                    clock["uuid"] = list(bytes.fromhex(c["uuid"].replace("-", "")))
            frags.append(clock)
        clock_name = p.clocks[0]["name"] if p.clocks else None
        for s in p.streams:
            ds = {"type": "data-stream-class", "id": s.get("id", 0)}
            if clock_name:
                ds["default-clock-class-id" if self.form == "modules" else "default-clock-class-name"] = clock_name
            for key, prop, scope in (("packet.context", "packet-context-field-class", "packet-context"),
                                     ("event.header", "event-record-header-field-class", "event-record-header"),
                                     ("event.context", "event-record-common-context-field-class",
                                      "event-record-common-context")):
                if key in s:
                    ds[prop] = self.fc(s[key], scope)
            frags.append(ds)
        for e in p.events:
            er = {"type": "event-record-class", "id": e.get("id", 0), "data-stream-class-id": e.get("stream_id", 0),
                  "name": e["name"]}
            if "fields" in e:
                er["payload-field-class"] = self.fc(e["fields"], "event-record-payload")
            if "context" in e:
                er["specific-context-field-class"] = self.fc(e["context"], "event-record-specific-context")
            frags.append(er)
        return frags


def ctf2_metadata(tsdl: str, form: str = "modules") -> str:
    """The CTF 2 metadata text (JSON fragments after RS) equivalent to a TSDL text."""
    frags = _Writer(_Parser(tsdl).parse(), form).fragments()
    return "".join("\x1e" + json.dumps(f, indent=1) + "\n" for f in frags)


def packetized(text: str, uuid: bytes = bytes(16), packet_bytes: int = 4096) -> bytes:
    """Metadata text in packets, as LTTng writes its metadata file (CTF2-PMETA: major 2)."""
    data = text.encode()
    out = bytearray()
    room = packet_bytes - 37
    for off in range(0, len(data), room):
        chunk = data[off: off + room]
        head = struct.pack("<I16sIIIBBBBB", 0x75D11D57, uuid, 0, (37 + len(chunk)) * 8, packet_bytes * 8,
                           0, 0, 0, 2, 0)
        out += head + chunk + bytes(packet_bytes - 37 - len(chunk))
    return bytes(out)


def ctf2_view(trace: Path, dest: Path, form: str = "modules", packets: bool = False) -> Path:
    """A copy of the trace folder at ``dest`` whose metadata is CTF 2 (stream files linked)."""
    from perftriage.analysis.ctf.metadata import read_metadata_text

    dest.mkdir(parents=True)
    text = ctf2_metadata(read_metadata_text(trace / "metadata"), form)
    if packets:
        (dest / "metadata").write_bytes(packetized(text))
    else:
        (dest / "metadata").write_text(text)
    for f in sorted(trace.iterdir()):
        if f.is_file() and f.name != "metadata":
            (dest / f.name).symlink_to(f.resolve())
    return dest
