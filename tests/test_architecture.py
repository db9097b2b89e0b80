"""The analysis engine must stay usable without the UI."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys

from conftest import ROOT

import analysis


def test_analysis_never_imports_textual_or_tui():
    # import every module of the engine in a fresh interpreter, then look at what got loaded
    mods = [m.name for m in pkgutil.walk_packages(analysis.__path__, "analysis.")]
    assert len(mods) > 5
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'tui'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "", f"analysis pulled in: {out.stdout.strip()}"


def test_no_import_statement_of_textual_or_tui_in_analysis():
    pattern = re.compile(r"^\s*(from|import)\s+(textual|tui)\b", re.M)
    offenders = [str(p) for p in (ROOT / "analysis").rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def test_cli_report_path_does_not_import_textual():
    code = (
        "import sys\n"
        "from perftriage import cli\n"
        "cli.build_parser()\n"
        "print(any(m.split('.')[0] == 'textual' for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"
