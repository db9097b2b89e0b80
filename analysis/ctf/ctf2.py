"""CTF 2 metadata, as the CTF 1.8 TSDL text babeltrace2 2.0 reads.

LTTng 2.15 records CTF 2 by default (``lttng create --trace-format=ctf-1.8`` keeps the old
format); babeltrace2 reads CTF 2 from version 2.1, this machine's (Debian's) is 2.0. CTF 2
changed the metadata, not the data streams: the metadata is a JSON text sequence (RFC 7464: each
fragment after an ASCII RS) describing the same field classes (fixed-length integers with a byte
order and an alignment, null-terminated strings, arrays, structures, variants) that TSDL
describes, so the stream files decode unchanged under an equivalent TSDL text. That text is what
:func:`tsdl_from_ctf2` writes; the reader puts it in a temporary view of the trace folder (the
stream files linked, the trace folder never written to).

What TSDL cannot say is refused with a line naming it (variable-length integers, optional
fields, strings in UTF-16 or UTF-32: none of which LTTng writes). TSDL names a variant's options
after the labels of an enumeration, its selector; a CTF 2 selector is any integer and the options
carry ranges, so the selector is written as an enumeration whose labels are the options' names.
Member names are written with a leading underscore in the event scopes, as LTTng's own TSDL
does: babeltrace2 takes one leading underscore away, so the names it shows are the CTF 2 names.
"""

from __future__ import annotations

import json
import re

RS = "\x1e"

_SIGNED = {"fixed-length-signed-integer", "fixed-length-signed-enumeration"}
_INTEGERS = {"fixed-length-unsigned-integer", "fixed-length-signed-integer", "fixed-length-unsigned-enumeration",
             "fixed-length-signed-enumeration", "fixed-length-bit-array", "fixed-length-bit-map",
             "fixed-length-boolean"}
_CLOCK_ROLES = {"default-clock-timestamp", "packet-end-default-clock-timestamp"}
# CTF 2 says what a header field is by its role, TSDL by its name: the names babeltrace2 2.0 and
# packet_layout() look for, by scope and role (LTTng writes these names already)
_ROLE_NAMES = {
    "packet-header": {"packet-magic-number": "magic", "metadata-stream-uuid": "uuid", "data-stream-class-id": "stream_id",
                      "data-stream-id": "stream_instance_id"},
    "packet-context": {"packet-total-length": "packet_size", "packet-content-length": "content_size",
                       "default-clock-timestamp": "timestamp_begin",
                       "packet-end-default-clock-timestamp": "timestamp_end",
                       "discarded-event-record-counter-snapshot": "events_discarded",
                       "packet-sequence-number": "packet_seq_num"},
    "event-record-header": {"event-record-class-id": "id", "default-clock-timestamp": "timestamp"},
}

# where a field location's origin is, as a TSDL absolute path
_SCOPE_PATH = {
    "packet-header": "trace.packet.header",
    "packet-context": "stream.packet.context",
    "event-record-header": "stream.event.header",
    "event-record-common-context": "stream.event.context",
    "event-record-specific-context": "event.context",
    "event-record-payload": "event.fields",
}
# scopes whose member names babeltrace2 shows without one leading underscore, LTTng's TSDL
# writing them with one; the packet header and context and the event header keep their names
# (magic, packet_size, timestamp...: what babeltrace2 and perftriage look for)
_UNDERSCORED = {"event-record-common-context", "event-record-specific-context", "event-record-payload"}

_TSDL_KEYWORDS = {"align", "callsite", "const", "char", "clock", "double", "enum", "env", "event", "floating_point",
                  "float", "integer", "int", "long", "short", "signed", "stream", "string", "struct", "trace",
                  "typealias", "typedef", "unsigned", "variant", "void", "_Bool", "_Complex", "_Imaginary"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")


class Ctf2Error(ValueError):
    """What in a CTF 2 metadata stream cannot be read or said in TSDL (one line)."""


def is_ctf2_text(text: str) -> bool:
    return text.lstrip(" \t\r\n").startswith(RS)


def _fragments(text: str) -> list[dict]:
    out = []
    for i, piece in enumerate(text.split(RS)[1:], 1):
        piece = piece.strip()
        if not piece:
            continue
        try:
            frag = json.loads(piece)
        except ValueError as exc:
            raise Ctf2Error(f"CTF 2 metadata: fragment {i} is not JSON ({exc})") from None
        if not isinstance(frag, dict) or not isinstance(frag.get("type"), str):
            raise Ctf2Error(f"CTF 2 metadata: fragment {i} is not an object with a type")
        out.append(frag)
    if not out or out[0]["type"] != "preamble":
        raise Ctf2Error("CTF 2 metadata: does not begin with a preamble fragment")
    if out[0].get("version") != 2:
        raise Ctf2Error(f"CTF 2 metadata: preamble says version {out[0].get('version')!r}, not 2")
    return out


def _quote(s) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _uuid_text(value) -> str | None:
    if isinstance(value, list) and len(value) == 16 and all(isinstance(b, int) and 0 <= b < 256 for b in value):
        h = bytes(value).hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    if isinstance(value, str) and _UUID.match(value):
        return value.lower()
    return None


def _alignment(fc: dict, key: str) -> int:
    """An alignment in bits: a power of two (1 where the field class names none)."""
    value = fc.get(key, 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value & (value - 1):
        raise Ctf2Error(f"CTF 2 metadata: a {fc['type']} with {key} {value!r} (a power of two, in bits)")
    return value


def _count(fc: dict, key: str = "length") -> int:
    value = fc.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 32:
        raise Ctf2Error(f"CTF 2 metadata: a {fc['type']} of {key} {value!r}")
    return value


def _ranges(value, what: str) -> list[tuple[int, int]]:
    if not isinstance(value, list) or not value:
        raise Ctf2Error(f"CTF 2 metadata: {what} {value!r} is not a list of integer ranges")
    out = []
    for r in value:
        if not (isinstance(r, list) and len(r) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                            and -(1 << 63) <= v < 1 << 64 for v in r) and r[0] <= r[1]):
            raise Ctf2Error(f"CTF 2 metadata: {what} has the range {r!r} (two integers, the first not above the second)")
        out.append((r[0], r[1]))
    return out


def _byte_order(fc: dict) -> str:
    """A fixed-length field class's byte order in TSDL's words (little-endian where it names none)."""
    return "be" if str(fc.get("byte-order", "little-endian")).startswith("b") else "le"


def _disjoint(labels: dict) -> None:
    """A variant's options select values apart (babeltrace2 2.0 aborts on overlapping ones)."""
    spans = sorted(r for ranges in labels.values() for r in ranges)
    for (_, hi), (lo, _) in zip(spans, spans[1:]):
        if lo <= hi:
            raise Ctf2Error(f"CTF 2 metadata: a variant's options select overlapping values (up to {hi} and from {lo})")


def _id(frag: dict, key: str) -> int:
    value = frag.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 63:
        raise Ctf2Error(f"CTF 2 metadata: a {frag['type']} fragment with {key} {value!r} (a whole number)")
    return value


def _ident(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", str(name)) or "_"
    return "_" + s if s[0].isdigit() else s


class _Translator:
    def __init__(self, fragments: list[dict]):
        self.aliases: dict[str, object] = {}
        self.trace: dict = {}
        self.clocks: dict[str, dict] = {}
        self.streams: list[dict] = []
        self.events: list[dict] = []
        self.preamble = fragments[0]
        for frag in fragments[1:]:
            kind = frag["type"]
            if kind == "field-class-alias":
                self.aliases[str(frag.get("name"))] = frag.get("field-class")
            elif kind == "trace-class":
                self.trace = frag
            elif kind == "clock-class":
                key = frag.get("id", frag.get("name"))
                self.clocks[str(key)] = frag
            elif kind == "data-stream-class":
                self.streams.append(frag)
            elif kind == "event-record-class":
                self.events.append(frag)
            # other fragment types (extensions of a namespace) say nothing TSDL needs
        self.clock_names = {key: _ident(c.get("name") or key) for key, c in self.clocks.items()}
        self.renamed: dict[tuple[str, str], str] = {}  # (scope, CTF 2 name) -> TSDL name, by role

    # -- field classes -----------------------------------------------------------------------

    def fc(self, value) -> dict:
        """A field class with its aliases resolved (a string names a field-class-alias fragment)."""
        for _ in range(64):
            if isinstance(value, dict):
                if not isinstance(value.get("type"), str):
                    raise Ctf2Error("CTF 2 metadata: a field class without a type")
                return value
            if isinstance(value, str) and value in self.aliases:
                value = self.aliases[value]
                continue
            raise Ctf2Error(f"CTF 2 metadata: field class {value!r} is neither an object nor a known alias")
        raise Ctf2Error("CTF 2 metadata: field class aliases refer to each other without end")

    def name(self, name, scope: str) -> str:
        if (scope, name) in self.renamed:
            return self.renamed[(scope, name)]
        ident = _ident(name)
        if scope in _UNDERSCORED:
            return "_" + ident
        return "_" + ident if ident in _TSDL_KEYWORDS or ident.startswith("_") else ident

    def location(self, loc, scope: str) -> tuple[str, str | None]:
        """(TSDL path, sibling name or None): a field location as TSDL refers to it. A location
        of one name relative to the structure (LTTng's), or at the root of this scope, is the
        sibling of that name."""
        if isinstance(loc, list):  # lttng-tools' first form: [origin, name...]
            origin, path = (loc[0], loc[1:]) if loc and loc[0] in _SCOPE_PATH else (None, loc)
        elif isinstance(loc, dict):
            origin, path = loc.get("origin"), loc.get("path")
        else:
            raise Ctf2Error(f"CTF 2 metadata: field location {loc!r} is not a location")
        if not isinstance(path, list) or not path or not all(isinstance(p, str) for p in path):
            raise Ctf2Error(f"CTF 2 metadata: field location {loc!r} is not a path of member names "
                            "(a path up to a parent structure is not supported)")
        if origin is None or (origin == scope and len(path) == 1):
            if len(path) != 1:
                raise Ctf2Error(f"CTF 2 metadata: relative field location {path} of more than one name is not "
                                "supported")
            return self.name(path[0], scope), path[0]
        if origin not in _SCOPE_PATH:
            raise Ctf2Error(f"CTF 2 metadata: field location origin {origin!r} is unknown")
        return ".".join([_SCOPE_PATH[origin]] + [self.name(p, origin) for p in path]), None

    def integer(self, fc: dict, clock: str | None, labels: dict | None = None) -> str:
        length = fc.get("length")
        if not isinstance(length, int) or not 1 <= length <= 64:
            raise Ctf2Error(f"CTF 2 metadata: a {fc['type']} of {length!r} bits (1 to 64 are read)")
        align = _alignment(fc, "alignment")
        order = _byte_order(fc)
        base = fc.get("preferred-display-base", 10)
        base = base if base in (2, 8, 10, 16) else 10
        signed = "true" if fc["type"] in _SIGNED else "false"
        roles = set(fc.get("roles") or ())
        mapped = f" map = clock.{clock}.value;" if clock and roles & _CLOCK_ROLES else ""
        text = (f"integer {{ size = {length}; align = {align}; signed = {signed}; byte_order = {order}; "
                f"base = {base};{mapped} }}")
        mappings = labels if labels is not None else fc.get("mappings")
        if mappings is not None and not isinstance(mappings, dict):
            raise Ctf2Error(f"CTF 2 metadata: a {fc['type']}'s mappings {mappings!r} are not an object")
        if mappings:
            lowest, highest = (-(1 << (length - 1)), (1 << (length - 1)) - 1) if signed == "true" else (0, (1 << length) - 1)
            entries = []
            for label, ranges in mappings.items():
                for lo, hi in _ranges(ranges, f"mapping {label!r}"):
                    if lo < lowest or hi > highest:
                        raise Ctf2Error(f"CTF 2 metadata: mapping {label!r} has the range [{lo}, {hi}], beyond a "
                                        f"{length}-bit {fc['type']}")
                    entries.append(f"{_quote(label)} = {lo}" + (f" ... {hi}" if hi != lo else ""))
            text = f"enum : {text} {{ {', '.join(entries)} }}"
        return text

    def type_of(self, fc: dict, scope: str, clock: str | None, labels: dict | None = None) -> tuple[str, str]:
        """(type text, array suffix) of a field class: ``name`` goes between them."""
        kind = fc["type"]
        if kind in _INTEGERS:
            return self.integer(fc, clock, labels), ""
        if labels is not None:
            raise Ctf2Error(f"CTF 2 metadata: a variant's selector is a {kind}, not an integer")
        if kind == "fixed-length-floating-point-number":
            length = fc.get("length")
            digits = {16: (5, 11), 32: (8, 24), 64: (11, 53)}.get(length)
            if digits is None:
                raise Ctf2Error(f"CTF 2 metadata: a floating point number of {length!r} bits")
            order = _byte_order(fc)
            return (f"floating_point {{ exp_dig = {digits[0]}; mant_dig = {digits[1]}; byte_order = {order}; "
                    f"align = {_alignment(fc, 'alignment')}; }}"), ""
        if kind in ("null-terminated-string", "static-length-string", "dynamic-length-string"):
            if str(fc.get("encoding", "utf-8")).lower() != "utf-8":
                raise Ctf2Error(f"CTF 2 metadata: strings encoded in {fc.get('encoding')} (only UTF-8 is read)")
            if kind == "null-terminated-string":
                return "string", ""
            char = "integer { size = 8; align = 8; signed = false; encoding = UTF8; }"
            if kind == "static-length-string":
                return char, f"[{_count(fc)}]"
            return char, f"[{self.location(fc.get('length-field-location'), scope)[0]}]"
        if kind in ("static-length-blob", "dynamic-length-blob"):
            byte = "integer { size = 8; align = 8; signed = false; base = 16; }"
            if kind == "static-length-blob":
                return byte, f"[{_count(fc)}]"
            return byte, f"[{self.location(fc.get('length-field-location'), scope)[0]}]"
        if kind in ("static-length-array", "dynamic-length-array"):
            element, inner = self.type_of(self.fc(fc.get("element-field-class")), scope, clock)
            if kind == "static-length-array":
                return element, f"[{_count(fc)}]" + inner
            return element, f"[{self.location(fc.get('length-field-location'), scope)[0]}]" + inner
        if kind == "structure":
            members = fc.get("member-classes", [])
            if not isinstance(members, list):
                raise Ctf2Error(f"CTF 2 metadata: a structure's member classes {members!r} are not a list")
            body = self.members(members, scope, clock)
            align = _alignment(fc, "minimum-alignment")
            inner = "".join(f" {m};" for m in body)
            return "struct {" + inner + " }" + (f" align({align})" if align > 1 else ""), ""
        if kind == "variant":
            ref, _ = self.location(fc.get("selector-field-location"), scope)
            options = []
            for label, opt in self.variant_options(fc):
                t, suffix = self.type_of(self.fc(opt.get("field-class")), scope, clock)
                options.append(f" {t} {label}{suffix};")
            return f"variant <{ref}> {{" + "".join(options) + " }", ""
        if kind in ("variable-length-unsigned-integer", "variable-length-signed-integer", "optional"):
            raise Ctf2Error(f"CTF 2 metadata: {kind} fields cannot be read by babeltrace2 2.0 "
                            "(LTTng does not write them)")
        raise Ctf2Error(f"CTF 2 metadata: unknown field class type {kind!r}")

    def variant_options(self, fc: dict) -> list[tuple[str, dict]]:
        options = fc.get("options")
        if not isinstance(options, list) or not options:
            raise Ctf2Error("CTF 2 metadata: a variant without options")
        out, seen = [], set()
        for i, opt in enumerate(options):
            if not isinstance(opt, dict):
                raise Ctf2Error("CTF 2 metadata: a variant option is not an object")
            label = _ident(str(opt.get("name") or f"option{i}")).lstrip("_") or f"option{i}"
            if label in _TSDL_KEYWORDS or label in seen:
                label = f"{label}{i}"
            seen.add(label)
            out.append((label, opt))
        return out

    def members(self, members: list, scope: str, clock: str | None) -> list[str]:
        # a variant's selector in this structure is written as an enumeration of its options
        selectors: dict[str, dict] = {}
        for m in members:
            fc = self.fc(m.get("field-class")) if isinstance(m, dict) else None
            if fc is not None and fc["type"] == "variant":
                _, sibling = self.location(fc.get("selector-field-location"), scope)
                labels = {label: _ranges(opt.get("selector-field-ranges"), f"variant option {label!r}'s selector range")
                          for label, opt in self.variant_options(fc)}
                _disjoint(labels)
                labels = {label: [list(r) for r in ranges] for label, ranges in labels.items()}
                if sibling is None:
                    raise Ctf2Error("CTF 2 metadata: a variant whose selector is outside its structure is not "
                                    "supported")
                if sibling in selectors and selectors[sibling] != labels:
                    raise Ctf2Error(f"CTF 2 metadata: {sibling!r} selects two variants with other options")
                selectors[sibling] = labels
        for m in members:
            if not isinstance(m, dict) or not isinstance(m.get("name"), str):
                raise Ctf2Error(f"CTF 2 metadata: a structure member without a name ({str(m)[:60]})")
            roles = self.fc(m.get("field-class")).get("roles")
            for role in roles if isinstance(roles, list) else ():
                canonical = _ROLE_NAMES.get(scope, {}).get(role)
                if canonical and canonical != m["name"]:
                    self.renamed[(scope, m["name"])] = canonical
        out, names = [], set()
        for m in members:
            fc = self.fc(m.get("field-class"))
            if fc["type"] == "variant":
                sibling = self.location(fc.get("selector-field-location"), scope)[1]
                if self.name(sibling, scope) not in names:
                    raise Ctf2Error(f"CTF 2 metadata: variant selector {sibling!r} is not a member before it")
            name = self.name(m["name"], scope)
            if name in names:
                raise Ctf2Error(f"CTF 2 metadata: two members named {m['name']!r} in one structure")
            names.add(name)
            labels = selectors.pop(m["name"], None)
            if fc["type"] in ("static-length-array", "dynamic-length-array") and _alignment(fc, "minimum-alignment") > 8:
                out.append(f"struct {{ }} align({fc['minimum-alignment']}) {name}_padding")  # as LTTng's TSDL
            t, suffix = self.type_of(fc, scope, clock, labels)
            out.append(f"{t} {name}{suffix}")
        if selectors:
            raise Ctf2Error(f"CTF 2 metadata: variant selector {next(iter(selectors))!r} is not a member before it")
        return out

    def scope(self, value, scope: str, clock: str | None) -> str:
        fc = self.fc(value)
        if fc["type"] != "structure":
            raise Ctf2Error(f"CTF 2 metadata: the {scope} field class is a {fc['type']}, not a structure")
        return self.type_of(fc, scope, clock)[0]

    # -- the document ------------------------------------------------------------------------

    def byte_order(self) -> str:
        header = self.trace.get("packet-header-field-class")
        if header is not None:
            for m in self.fc(header).get("member-classes") or []:
                fc = self.fc(m.get("field-class")) if isinstance(m, dict) else {}
                if "byte-order" in fc:
                    return _byte_order(fc)
        return "le"

    def text(self) -> str:
        lines = ["/* CTF 1.8 */", "/* translated by perftriage from CTF 2 metadata */", "", "trace {",
                 "\tmajor = 1;", "\tminor = 8;"]
        uuid = _uuid_text(self.preamble.get("uuid")) or _uuid_text(self.trace.get("uid"))
        if uuid:
            lines.append(f"\tuuid = {_quote(uuid)};")
        lines.append(f"\tbyte_order = {self.byte_order()};")
        if self.trace.get("packet-header-field-class") is not None:
            lines.append(f"\tpacket.header := {self.scope(self.trace['packet-header-field-class'], 'packet-header', None)};")
        lines += ["};", ""]
        env = self.trace.get("environment") or {}
        if isinstance(env, dict) and env:
            lines.append("env {")
            for key, value in env.items():
                if not _IDENT.match(str(key)) or str(key) in _TSDL_KEYWORDS:
                    continue
                if isinstance(value, bool):
                    continue
                if isinstance(value, int):
                    lines.append(f"\t{key} = {value};")
                elif isinstance(value, str):
                    lines.append(f"\t{key} = {_quote(value)};")
            lines += ["};", ""]
        for key, clock in self.clocks.items():
            lines += ["clock {", f"\tname = {self.clock_names[key]};"]
            uuid = _uuid_text(clock.get("uid")) or _uuid_text(clock.get("uuid"))
            if uuid:
                lines.append(f"\tuuid = {_quote(uuid)};")
            if isinstance(clock.get("description"), str):
                lines.append(f"\tdescription = {_quote(clock['description'])};")
            freq = clock.get("frequency")
            if not isinstance(freq, int) or freq <= 0:
                raise Ctf2Error(f"CTF 2 metadata: clock {key!r} has no frequency")
            lines.append(f"\tfreq = {freq};")
            if isinstance(clock.get("precision"), int):
                lines.append(f"\tprecision = {clock['precision']};")
            offset = clock.get("offset-from-origin", clock.get("offset")) or {}
            seconds, cycles = offset.get("seconds", 0), offset.get("cycles", 0)
            if not isinstance(seconds, int) or not isinstance(cycles, int):
                raise Ctf2Error(f"CTF 2 metadata: clock {key!r} has an offset that is not whole seconds and cycles")
            lines += [f"\toffset_s = {seconds};", f"\toffset = {cycles};", "};", ""]
        if not self.streams and self.events:
            self.streams.append({"type": "data-stream-class", "id": 0})
        for stream in self.streams:
            key = stream.get("default-clock-class-id", stream.get("default-clock-class-name"))
            if key is None and len(self.clocks) == 1:
                key = next(iter(self.clocks))
            if key is not None and str(key) not in self.clocks:
                raise Ctf2Error(f"CTF 2 metadata: data stream class {stream.get('id', 0)} names clock {key!r}, "
                                "which no clock-class fragment defines")
            clock = self.clock_names.get(str(key)) if key is not None else None
            lines += ["stream {", f"\tid = {_id(stream, 'id')};"]
            for prop, tsdl, scope in (("event-record-header-field-class", "event.header", "event-record-header"),
                                      ("packet-context-field-class", "packet.context", "packet-context"),
                                      ("event-record-common-context-field-class", "event.context",
                                       "event-record-common-context")):
                if stream.get(prop) is not None:
                    lines.append(f"\t{tsdl} := {self.scope(stream[prop], scope, clock)};")
            lines += ["};", ""]
        stream_clocks = {_id(s, "id"): self.clock_names.get(str(s.get("default-clock-class-id",
                         s.get("default-clock-class-name", next(iter(self.clocks), None))))) for s in self.streams}
        ids = set()
        for event in self.events:
            if not isinstance(event.get("name"), str):
                raise Ctf2Error(f"CTF 2 metadata: event record class {event.get('id')!r} has no name")
            sid = _id(event, "data-stream-class-id")
            if (sid, _id(event, "id")) in ids:
                raise Ctf2Error(f"CTF 2 metadata: two event record classes of data stream class {sid} have the id "
                                f"{event['id']} ({event['name']!r} the second)")
            ids.add((sid, _id(event, "id")))
            clock = stream_clocks.get(sid)
            lines += ["event {", f"\tname = {_quote(event['name'])};", f"\tid = {_id(event, 'id')};",
                      f"\tstream_id = {sid};"]
            level = ((event.get("attributes") or {}).get("lttng.org,2009") or {}).get("log-level")
            if isinstance(level, int):
                lines.append(f"\tloglevel = {level};")
            if event.get("specific-context-field-class") is not None:
                lines.append(f"\tcontext := {self.scope(event['specific-context-field-class'], 'event-record-specific-context', clock)};")
            payload = event.get("payload-field-class")
            body = self.scope(payload, "event-record-payload", clock) if payload is not None else "struct { }"
            lines += [f"\tfields := {body};", "};", ""]
        return "\n".join(lines)


def tsdl_from_ctf2(text: str) -> str:
    """The TSDL text of a CTF 2 metadata stream (its JSON fragments); Ctf2Error says what cannot
    be read."""
    try:
        return _Translator(_fragments(text)).text()
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        if isinstance(exc, Ctf2Error):
            raise
        raise Ctf2Error(f"CTF 2 metadata: a fragment lacks or mistypes a property ({type(exc).__name__}: {exc})") from None
