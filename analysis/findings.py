"""Findings: what every analysis produces, and their Markdown / JSON renderings.

A finding names *what* misbehaves (its subject), *how much* (score, severity), *why* (evidence
lines and tables) and *with which parameters* it was found, so that a reader of an incident
ticket can judge and reproduce it.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any


SEVERITIES = ("info", "warning", "critical")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""


@dataclass
class Finding:
    analysis: str  # "requests", "clusters", "calltrees", "threads", "counters", "trace"
    title: str
    subject: str
    score: float = 0.0  # ranks findings of a report, higher first
    severity: str = "info"
    evidence: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)
    # what the finding is about, for a viewer to open: {"kind": "cluster", "cluster": 3} (0-based),
    # "request" (id, host), "pair" (method, replica; no replica: every replica), "threads" (level,
    # names), "server" (server, counter; from_s, to_s: an interval), "clusters" (the outlier
    # summary), "pod" (pod, service: what changed around a pod), "rule" (counter, rule: its
    # violations), "pane" (pane, part: a summary of a pane's whole list), "method" (method: its
    # call trees), "failing" (method: a request where an error started in it); {} when nothing to open
    target: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")


@dataclass
class Report:
    """A set of findings about some inputs, with what was read and what went wrong."""

    inputs: list[str]
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # read problems, partial data, skipped inputs
    created: str = ""
    tool: str = "perftriage"

    def ranked(self) -> list[Finding]:
        order = {s: i for i, s in enumerate(SEVERITIES)}
        return sorted(self.findings, key=lambda f: (-order[f.severity], -f.score))


def clean_text(value: Any) -> str:
    """Text safe for a ticket: no terminal escape sequences, no control characters."""
    s = "" if value is None else str(value)
    s = _ANSI.sub("", s)
    return _CONTROL.sub(" ", s)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        value = f"{value:.4g}"
    s = clean_text(value).replace("\n", " ").replace("|", "\\|")
    return s if s.strip() else " "


def markdown_table(table: Table) -> str:
    lines = []
    if table.caption:
        lines += [f"*{clean_text(table.caption)}*", ""]
    lines.append("| " + " | ".join(_cell(c) for c in table.columns) + " |")
    lines.append("|" + "|".join("---" for _ in table.columns) + "|")
    for row in table.rows:
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines)


def _md_escape_inline(s: str) -> str:
    return clean_text(s).replace("\n", " ")


def notes_markdown(notes: list[str]) -> list[str]:
    """The run's notes on its inputs as a Markdown list."""
    return [f"- {_md_escape_inline(n)}" for n in notes]


def finding_markdown(f: Finding, number: int | None = None) -> str:
    head = f"{number}. " if number is not None else ""
    out = [f"### {head}{_md_escape_inline(f.title)}", ""]
    out.append(
        f"**Subject:** {_md_escape_inline(f.subject)} · **Severity:** {f.severity} · "
        f"**Analysis:** {f.analysis}"
    )
    out.append("")
    for line in f.evidence:
        out.append(f"- {_md_escape_inline(line)}")
    if f.evidence:
        out.append("")
    for t in f.tables:
        out.append(markdown_table(t))
        out.append("")
    if f.parameters:
        params = ", ".join(f"`{k}={_md_escape_inline(_param(v))}`" for k, v in f.parameters.items())
        out.append(f"Parameters: {params}")
        out.append("")
    return "\n".join(out)


def _param(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def report_markdown(report: Report) -> str:
    out = ["# perftriage findings", ""]
    if report.created:
        out.append(f"Generated {report.created} by {report.tool}.")
        out.append("")
    out.append("Inputs: " + ", ".join(f"`{_md_escape_inline(p)}`" for p in report.inputs))
    out.append("")
    if report.notes:
        out.append("**Notes:**")
        out.append("")
        out += notes_markdown(report.notes)
        out.append("")
    ranked = report.ranked()
    if not ranked:
        out += ["No findings.", ""]
    else:
        out += ["## Summary", ""]
        summary = Table(
            ["#", "severity", "analysis", "finding", "subject"],
            [[i + 1, f.severity, f.analysis, f.title, f.subject] for i, f in enumerate(ranked)],
        )
        out += [markdown_table(summary), "", "## Findings", ""]
        for i, f in enumerate(ranked):
            out.append(finding_markdown(f, i + 1))
    return "\n".join(out).rstrip() + "\n"


def report_json(report: Report) -> str:
    data = asdict(report)
    data["findings"] = [asdict(f) for f in report.ranked()]
    return json.dumps(data, indent=2, default=_json_default, ensure_ascii=False) + "\n"


def _json_default(o):
    try:
        import numpy as np  # noqa: PLC0415

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(o)


def render(report: Report, fmt: str) -> str:
    """The report as Markdown or JSON text that UTF-8 can always encode: names taken from the
    inputs (a request URI a client sent, a span name) may hold lone surrogates, which are
    written as their escape (``\\ud800``) instead of failing the write."""
    if fmt == "md":
        text = report_markdown(report)
    elif fmt == "json":
        text = report_json(report)
    else:
        raise ValueError(f"unknown format {fmt!r} (md or json)")
    return encodable(text)


def encodable(text: str) -> str:
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
