"""What the paths the user gives hold: CTF traces, data files. Decided by content, not by name."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import stat
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from perftriage.analysis.ctf import perf
from perftriage.analysis.ctf.discover import is_ctf_metadata, looks_like_ctf
from perftriage.analysis.units import count_of

from .errors import InputError


@dataclass
class Inputs:
    paths: list[str]
    ctf: list[Path] = field(default_factory=list)  # trace folders (or session folders holding traces)
    files: dict[str, list[Path]] = field(default_factory=dict)  # kind -> data files
    servers: list[str] = field(default_factory=list)  # running servers to query (prometheus+http://HOST:PORT)
    notes: list[str] = field(default_factory=list)  # files of a folder left out that a user would miss (empty ones)
    origins: dict[str, str] = field(default_factory=dict)  # a trace converted into a temporary folder -> its file
    trees: dict[str, list[Path]] = field(default_factory=dict)  # a folder read whole by its tree (collectd's) -> its files

    def origin(self, trace: str) -> str | None:
        """The file a trace folder was converted from (a perf.data), if it was: None else."""
        for folder, source in self.origins.items():
            if trace == folder or trace.startswith(folder.rstrip("/") + "/"):
                return source
        return None

    @property
    def all_paths(self) -> list[str]:
        return list(self.paths)

    def add_file(self, kind: str, path: Path) -> None:
        self.files.setdefault(kind, []).append(path)


# Each data-file kind registers a sniffer: (path, first bytes) -> bool. Later analyses add theirs.
_SNIFFERS: list[tuple[str, callable]] = []
#: the order the kinds' sniffers are asked in, the most particular first: a span CSV has columns a
#: counter CSV's sniffer would take for counters (an AIOps export's duration, status_code), a
#: thread metrics CSV is asked after the counters' sniffer (which leaves thread columns alone).
#: Not the order the modules happen to be imported in: a file was read as another kind when a
#: caller imported the counter readers first.
KIND_ORDER = ("spans", "counters", "threads", "features")


#: folders whose files make one input by their place in the tree (collectd's DataDir/HOST/PLUGIN/
#: files): (kind, finder(folder) -> its files, or None when it is no such tree)
_FOLDER_FINDERS: list[tuple[str, callable]] = []


def register_folder_kind(kind: str, finder) -> None:
    if all(f is not finder for _, f in _FOLDER_FINDERS):
        _FOLDER_FINDERS.append((kind, finder))


#: files of one kind that hold another too (a Windows counter log of a process's threads and of
#: its machine's other objects): (kind, sniffer(path, head) -> whether the file holds it too)
_ALSO: list[tuple[str, callable]] = []


def register_also_kind(kind: str, sniffer) -> None:
    """A file another kind's sniffer took may hold ``kind`` too, where ``sniffer`` says so: it is
    then read by both (its reader of ``kind`` leaves out what the other reads)."""
    if all(f is not sniffer for _, f in _ALSO):
        _ALSO.append((kind, sniffer))


def register_file_kind(kind: str, sniffer) -> None:
    if all(k != kind for k, _ in _SNIFFERS):
        _SNIFFERS.append((kind, sniffer))
        _SNIFFERS.sort(key=lambda ks: KIND_ORDER.index(ks[0]) if ks[0] in KIND_ORDER else len(KIND_ORDER))


GZIP_MAGIC = b"\x1f\x8b"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # little and big endian
#: inputs that are running servers, not files: Prometheus's HTTP API
SCHEME = "prometheus+"
SERVER_SCHEMES = (SCHEME + "http://", SCHEME + "https://")


def is_prometheus_url(text) -> bool:
    return isinstance(text, str) and text.startswith(SERVER_SCHEMES)


def _gunzip(path, raw: bytes, limit: int | None = None) -> bytes:
    try:
        if limit is None:
            return gzip.decompress(raw)
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, limit)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(path, f"a gzip file that cannot be decompressed ({exc})") from None


def _regular(path) -> None:
    """Refuse what is not a regular file (a named pipe, a socket, a device): reading one waits
    forever or never ends."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    if not stat.S_ISREG(mode):
        raise InputError(path, "not a regular file (a pipe, socket or device): perftriage reads files")


def _utf8(raw: bytes) -> bytes:
    """UTF-16 text (by its byte order mark: Windows tools, PowerShell's Out-File, Excel's Unicode
    text) as UTF-8, what every reader takes; other bytes as they are. A cut or damaged code unit
    becomes U+FFFD."""
    if raw[:2] not in UTF16_BOMS:
        return raw
    return raw[: len(raw) // 2 * 2].decode("utf-16", errors="replace").encode("utf-8")


def read_head(path, n: int = 65536) -> bytes:
    """The first ``n`` bytes of a data file, decompressed when it is gzip (by its magic bytes),
    as UTF-8 when it is UTF-16 text."""
    _regular(path)
    try:
        with open(path, "rb") as f:
            head = f.read(n)
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    if head[:2] == GZIP_MAGIC:
        head = _gunzip(path, head, n)
    return _utf8(head)[:n]


def _first_bytes(path, n: int = 2) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None


def is_gzip(path) -> bool:
    """Whether a file's content is gzip (by its magic bytes, whatever its name)."""
    return _first_bytes(path) == GZIP_MAGIC


def is_utf16(path) -> bool:
    """Whether a file is UTF-16 text (by its byte order mark)."""
    return _first_bytes(path) in UTF16_BOMS


def is_encoded(path) -> bool:
    """Whether a file must be decoded before a reader sees its text (gzip, UTF-16): read it by
    :func:`open_data`, not by its path."""
    return _first_bytes(path) in (GZIP_MAGIC, *UTF16_BOMS)


@contextmanager
def csv_rows(path, encoding: str = "utf-8"):
    """A data file's rows as csv reads them, the file opened as ``open_data`` opens it; an error
    opening it is one line naming the file."""
    try:
        f = open_data(path, newline="", encoding=encoding)
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    with f:
        yield csv.reader(f)


def open_data(path, newline: str | None = None, encoding: str = "utf-8", binary: bool = False):
    """A data file opened for reading as text (or bytes), gzip content decompressed: users keep
    exports compressed (``spans.csv.gz``); UTF-16 text as UTF-8. A damaged gzip file is one clear
    error, before any line is read."""
    _regular(path)
    first = _first_bytes(path)
    gz = first == GZIP_MAGIC
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    if gz or first in UTF16_BOMS:
        with f:
            raw = f.read()
        f = io.BytesIO(_utf8(_gunzip(path, raw) if gz else raw))
    if binary:
        return f
    return io.TextIOWrapper(f, encoding=encoding, errors="replace", newline=newline)


def sniff_file(path: Path) -> str | None:
    """The kind of data a file holds (the first its sniffers find), or None."""
    kinds = sniff_kinds(path)
    return kinds[0] if kinds else None


def sniff_kinds(path: Path) -> list[str]:
    """The kinds of data a file holds: the first its sniffers find, then those it holds too
    (``register_also_kind``); none when no sniffer knows it."""
    head = read_head(path)
    if not head.strip():
        raise InputError(path, "file is empty")

    def says(sniffer) -> bool:
        try:
            return bool(sniffer(path, head))
        except Exception:  # noqa: BLE001 (a sniffer that cannot make sense of the bytes says no: a bare CR,
            return False  # binary data; the reader of the kind that says yes gives the one-line errors)

    first = next((kind for kind, sniffer in _SNIFFERS if says(sniffer)), None)
    if first is None:
        return []
    return [first] + [kind for kind, sniffer in _ALSO if kind != first and says(sniffer)]


def read_text(path: Path) -> str:
    """A data file's whole text (undecodable bytes replaced); one clear error when it cannot be
    read or holds nothing."""
    with open_data(path) as f:
        text = f.read()
    if not text.strip():
        raise InputError(path, "file is empty")
    return text


def classify(paths) -> Inputs:
    """Sort the user's paths into CTF traces and data files; one clear error for anything else."""
    inputs = Inputs(paths=[os.fspath(p) for p in paths])
    if not paths:
        raise InputError(None, "no input given: name a trace folder or a data file")
    for raw in paths:
        if isinstance(raw, str) and raw.startswith(SERVER_SCHEMES):
            inputs.servers.append(raw)
            continue
        if isinstance(raw, str) and "://" in raw:
            raise InputError(raw, "not an input perftriage reads: a server is given as prometheus+http://HOST:PORT")
        p = Path(raw)
        if not p.exists():
            raise InputError(p, "no such file or folder")
        if p.is_dir():
            if looks_like_ctf(p):
                inputs.ctf.append(p)
                continue
            tree = next(((kind, files) for kind, finder in _FOLDER_FINDERS for files in [finder(p)] if files), None)
            if tree is not None:
                kind, files = tree
                for f in files:
                    inputs.add_file(kind, f)
                inputs.trees[str(p)] = files
                continue
            if not _add_folder(inputs, p):
                # a dataset's folder (metric/, trace/, ...): its subfolders, one level down
                subs = [c for c in sorted(p.iterdir()) if c.is_dir() and not c.name.startswith(".")]
                found, where, unread = 0, {}, []  # kind -> the subfolders holding it; those holding none
                for sub in subs:
                    if looks_like_ctf(sub):
                        inputs.ctf.append(sub)
                        found += 1
                        continue
                    below = Inputs(paths=[])
                    if _add_folder(below, sub):
                        inputs.notes.extend(below.notes)
                        for kind, files in below.files.items():
                            where.setdefault(kind, []).append(sub.name)
                            for f in files:
                                inputs.add_file(kind, f)
                        found += 1
                    else:
                        unread.append(sub)
                # a subfolder of files none of which is read (a dataset's logs, its lists of ids): said
                for sub in unread if found else []:
                    files = [c.name for c in sorted(sub.iterdir()) if c.is_file() and not c.name.startswith(".")]
                    if files:
                        inputs.notes.append(f"{sub}: {count_of(len(files), 'files')} of no kind perftriage reads "
                                            f"(e.g. {files[0]}): left out")
                # data of one kind in several subfolders (train/ and test/, this week's and last
                # week's) are not one dataset: which to read is the user's to say
                for kind, names in where.items():
                    if len(names) > 1:
                        raise InputError(p, f"holds no data file of its own, and its subfolders {', '.join(names)} "
                                            f"each hold {kind} files: name the folder to read (--reference for a "
                                            "second one to compare with)")
                if not found:
                    deeper = _deeper_data(subs)
                    raise InputError(p, "holds neither a CTF trace (no 'metadata' file) nor a data file perftriage "
                                        "reads" + (", nor do its subfolders" if subs else "")
                                     + (f"; data files lie deeper, in {deeper}: name that folder" if deeper else ""))
            continue
        if p.name == "metadata" and is_ctf_metadata(p):
            inputs.ctf.append(p.parent)
            continue
        if p.is_file() and perf.is_perf_data(read_head(p, 8)):
            converted, lost = perf.convert_perf_data(p)
            inputs.ctf.append(converted)
            inputs.origins[str(converted)] = str(p)
            inputs.notes.append(f"{p}: a perf recording, read converted to CTF by this host's perf (perf data "
                                "convert --tod --to-ctf)")
            if lost:
                inputs.notes.append(f"partial data: {p}: {lost}")
            continue
        kinds = sniff_kinds(p)
        if not kinds:
            if _header_only(p):
                raise InputError(p, "no data rows under the header")
            raise InputError(p, "unrecognised input: not a CTF trace folder nor a data file perftriage reads")
        for kind in kinds:
            inputs.add_file(kind, p)
    return inputs


def _deeper_data(subs: list[Path], depth: int = 4, most: int = 200) -> Path | None:
    """The first folder below ``subs`` (two to ``depth`` levels below the folder the user named,
    breadth first, at most ``most`` folders looked into, links to folders not followed) that holds
    a CTF trace or data files: what to name when the named folder and its subfolders hold none."""
    level, seen = subs, 0
    for _ in range(depth - 1):
        below = []
        for d in level:
            try:
                below += [c for c in sorted(d.iterdir()) if c.is_dir() and not c.is_symlink()
                          and not c.name.startswith(".")]
            except OSError:
                continue
        for d in below:
            seen += 1
            if seen > most:
                return None
            try:
                if looks_like_ctf(d) or _add_folder(Inputs(paths=[]), d):
                    return d
            except OSError:
                continue
        level = below
    return None


def _add_folder(inputs: Inputs, folder: Path) -> int:
    """The data files directly in ``folder`` into ``inputs``; how many. An empty file beside data
    files is said in a note (a collector that died, a disk that filled): files of other kinds
    (READMEs, notes) are left out without a word."""
    kinds, empty = 0, []
    for child in sorted(folder.iterdir()):
        if child.is_file() and not child.name.startswith("."):
            try:
                found = sniff_kinds(child)
            except InputError as exc:
                found = []
                if exc.problem == "file is empty":
                    empty.append(child.name)
            for kind in found:
                inputs.add_file(kind, child)
            kinds += bool(found)
    if kinds and empty:
        inputs.notes.append(f"{folder}: {', '.join(empty[:5])}{' ...' if len(empty) > 5 else ''} "
                            f"{'is' if len(empty) == 1 else 'are'} empty: left out")
    return kinds


def _header_only(path: Path) -> bool:
    """Whether a file no reader took is one line of column names (a delimited line), nothing after."""
    head = read_head(path)
    if len(head) >= 65536:
        return False
    lines = [ln for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()]
    return len(lines) == 1 and any(sep in lines[0] for sep in ",;\t")


def load_bytes(path: Path) -> bytes:
    """The file's bytes (decompressed), for a decoder of its own; an error reading it is one line."""
    try:
        with open_data(path, binary=True) as f:
            return f.read()
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None


def json_or_lines(path: Path) -> tuple[list, bool]:
    """A file that is one JSON document, or one a line (NDJSON: a search's dump, an exporter's
    file): its documents, each line that is no JSON (cut, damaged) a None in its place; and
    whether it was one document. No document at all is one line naming the file."""
    text = load_bytes(path).decode("utf-8-sig", "replace")
    try:
        return [json.loads(text)], True
    except json.JSONDecodeError:
        pass
    docs = []
    for ln in text.splitlines():
        if ln.strip():
            try:
                docs.append(json.loads(ln))
            except json.JSONDecodeError:
                docs.append(None)
    if not any(d is not None for d in docs):
        raise InputError(path, "not valid JSON, nor a JSON document a line")
    return docs, False


def json_records(path: Path, key: str | None = None) -> list:
    """The records of a JSON file of one document or one a line (json_or_lines): an array's items,
    a document's ``key`` array's items (a page of an API's answer), else the document itself; a
    damaged line a None in its place."""
    docs, _ = json_or_lines(path)
    out = []
    for d in docs:
        if key is not None and isinstance(d, dict) and isinstance(d.get(key), list):
            out.extend(d[key])
        elif isinstance(d, list):
            out.extend(d)
        else:
            out.append(d)
    return out
