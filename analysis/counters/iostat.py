"""iostat's report (``iostat -x -t 5 > web-01.txt``; sysstat): one host's CPU and disks, read as
sadf -d's export is (sadf.py), its counters named as sar's and sadf's (``%iowait``,
``%util[sda]``, ``r_await[nvme0n1]``).

The report opens with sysstat's first line (``Linux 6.1.0-13-amd64 (web-01)  11/28/2026 ...``: the
host), then a report per interval: its time (with ``-t``: ``11/28/2026 10:00:01 AM``, ``11/28/26
10:00:01``, or ISO ``2026-11-28T10:00:01+0000`` with S_TIME_FORMAT=ISO), ``avg-cpu:`` and its
columns, a line of numbers, then ``Device`` and its columns, a line per device. The first report
holds averages since the host's boot: it is left out. Without ``-t`` the reports carry no time:
they are numbered, ``--interval`` apart (asked for in one line when missing). Local times (no
offset) are read as UTC, said.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path

from perftriage.analysis.errors import InputError
from perftriage.analysis.inputs import open_data
from perftriage.analysis.units import count_of

from .sar_text import _BANNER, _NUMBER, _day

#: a report's time line: a day and a time of day (AM/PM or not), or ISO with an offset
_WHEN = re.compile(r"(?P<day>\d[\d./-]+\d)[ T](?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)(?:\s*(?P<half>[AaPp][Mm]))?"
                   r"(?P<offset>[+-]\d\d:?\d\d|Z)?$")


def sniff(head: bytes) -> bool:
    """sysstat's first line, then iostat's ``avg-cpu:`` or ``Device`` header."""
    lines = head.decode("utf-8", "replace").lstrip("\ufeff \r\n").split("\n")
    return bool(_BANNER.match(lines[0].strip())) and any(
        ln.startswith("avg-cpu:") or ln.split()[:1] in (["Device"], ["Device:"]) for ln in lines[1:40] if ln.strip())


def _when(match: re.Match) -> tuple[_dt.datetime, bool]:
    """A report's time line as a datetime in UTC, and whether it was a local time."""
    (y, mo, d), _ = _day(match["day"])
    h = int(match["h"])
    if match["half"]:
        h = h % 12 + (12 if match["half"].upper() == "PM" else 0)
    t = _dt.datetime(y, mo, d, h, int(match["m"]), int(match["s"]))
    off = match["offset"]
    if not off:
        return t, True
    if off != "Z":
        sign = 1 if off[0] == "+" else -1
        digits = off[1:].replace(":", "")
        t -= sign * _dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return t, False


def as_sadf(path: Path, row_interval: float | None = None) -> tuple[str, list[str], bool]:
    """The report as sadf -d's lines (times in UTC where it gave an offset), notes, and whether
    its reports are numbered, not timed (without -t: ``row_interval`` apart, --interval)."""
    out: list[str] = []
    host, stamp, reports, local, odd = "", "", 0, False, 0
    timed, first_header = False, ""  # a time line seen; the header a report opens with (untimed)
    section: list[str] | None = None  # the columns of the lines that follow: avg-cpu's, or Device's
    keyed = False
    current = ""  # the sadf header of the lines written last
    with open_data(path) as f:
        for line in f:
            words = line.split()
            if not words:
                if keyed:
                    section = None  # a device list ends at a blank line
                continue
            banner = _BANNER.match(line.strip())
            if banner:
                host = banner["host"].strip()
                continue
            when = _WHEN.match(line.strip())
            if when:
                try:
                    t, was_local = _when(when)
                except ValueError:
                    raise InputError(path, f"a report's time {line.strip()!r} is no time") from None
                local |= was_local
                stamp, reports, section, timed = t.strftime("%Y-%m-%d %H:%M:%S"), reports + 1, None, True
                continue
            if words[0] in ("avg-cpu:", "Device", "Device:"):
                section, keyed = words[1:], words[0] != "avg-cpu:"
                first_header = first_header or words[0]
                if not timed and words[0] == first_header:  # without -t: a report opens with its first header
                    if not row_interval:
                        raise InputError(path, "iostat's report without times (iostat -t prints them): give the "
                                               "delay it was run with, e.g. --interval 5")
                    reports += 1
                    stamp = (_dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=round((reports - 1) * row_interval))
                             ).strftime("%Y-%m-%d %H:%M:%S")
                continue
            if section is None:
                odd += 1
                continue
            values = words[1:] if keyed else words
            if len(values) != len(section) or any(_NUMBER.fullmatch(v) is None for v in values):
                odd += 1
                continue
            if reports < 2:
                continue  # the first report: averages since the host's boot
            head = "# hostname;interval;timestamp;" + ";".join((["DEV"] if keyed else []) + section)
            if head != current:
                out.append(head)
                current = head
            out.append(";".join([host, "0", stamp + " UTC", *([words[0]] if keyed else []),
                                 *(v.replace(",", ".") for v in values)]))
            if not keyed:
                section = None  # avg-cpu has one line of numbers
    if reports == 0:
        raise InputError(path, "no iostat report (avg-cpu: or Device and their columns)")
    if not any(not ln.startswith("#") for ln in out):
        raise InputError(path, f"no report after iostat's first (averages since boot): {count_of(reports, 'reports')}")
    notes = [f"{path.name}: iostat's report; its first report (averages since the host's boot) left out"]
    if local and timed:
        notes.append(f"{path.name}: iostat's times (the host's local ones) read as UTC")
    if odd:
        notes.append(f"{path.name}: {count_of(odd, 'lines')} out of place or of another number of columns skipped")
    return "\n".join(out) + "\n", notes, not timed
