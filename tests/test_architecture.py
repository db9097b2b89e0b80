"""The layout the README describes, kept by tests: one namespace (perftriage), an engine that never
imports the UI, and method packages that never import each other."""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

import perftriage.analysis

# the repository's folders and the packages they install as
FOLDERS = {"analysis": "perftriage.analysis", "tui": "perftriage.tui", "perftriage": "perftriage"}
# one package per method of the four papers: they meet only in triage.py and in the findings model
METHODS = ("requests", "calltrees", "threads", "counters")
READERS = ("ctf", "spans")
CORE = ("atomic", "columnar_csv", "columns", "cores", "errors", "findings", "frames", "inputs", "labelsets", "perfmon", "stats", "timeparse", "units", "values")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    parts[0] = FOLDERS[parts[0]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py") if "__pycache__" not in p.parts)


def imports_of(path: Path, name: str | None = None) -> set[str]:
    """Absolute names of the modules ``path`` (module ``name``) imports (relative imports
    resolved; for ``from X import a``, both X and X.a, since a may be a module)."""
    name = name or _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def _part_of(module: str) -> str | None:
    """The part of the engine a module belongs to: a method, a reader, the execution graph, the
    core, triage, the simulators (None outside perftriage.analysis)."""
    prefix = "perftriage.analysis."
    if not module.startswith(prefix):
        return "engine" if module == "perftriage.analysis" else None
    return module[len(prefix):].split(".")[0]


def test_the_layout_is_the_one_the_readme_describes():
    packages = {p.parent.name for p in (ROOT / "analysis").glob("*/__init__.py")}
    assert packages == {*METHODS, *READERS, "execgraph", "sim"}
    flat = {p.stem for p in (ROOT / "analysis").glob("*.py")} - {"__init__"}
    assert flat == {*CORE, "triage", "options", "distributed", "triage_process", "recording", "recording_perf",
                    "data_summary"}
    readme = (ROOT / "README.md").read_text()
    for name in [*METHODS, *READERS, "execgraph", "sim"]:
        assert re.search(rf"^\s+{name}/", readme, re.M), f"README's architecture section does not describe {name}/"


def test_no_method_package_imports_another():
    offenders = []
    for path in _sources("analysis"):
        mine = _part_of(_module_name(path))
        for mod in imports_of(path):
            theirs = _part_of(mod)
            if theirs is None or theirs == mine:
                continue
            if mine in METHODS and theirs in METHODS:
                offenders.append(f"{path.relative_to(ROOT)} imports {mod}: a method package imports another")
            if mine not in ("triage", "triage_process", "sim") and theirs in ("triage", "sim"):
                offenders.append(f"{path.relative_to(ROOT)} imports {mod}: only the CLI and the app run triage "
                                 "(the app through triage_process)")
            if mine in (*READERS, "execgraph", *CORE) and theirs in METHODS:
                offenders.append(f"{path.relative_to(ROOT)} imports {mod}: readers, the graph and the core "
                                 "know no method")
            if mine in CORE and theirs == "execgraph":
                offenders.append(f"{path.relative_to(ROOT)} imports {mod}: the core knows no execution graph")
    assert offenders == []


def test_the_import_checker_sees_a_method_importing_another(tmp_path):
    # the test above parses real files; this proves it catches a violation, relative or absolute
    bad = tmp_path / "probe.py"
    bad.write_text("from ..requests.features import FeatureTable\nfrom perftriage.analysis.counters import table\n"
                   "from .series import ThreadSeries\n")
    seen = imports_of(bad, "perftriage.analysis.threads.probe")
    others = {m for m in seen if _part_of(m) in METHODS and _part_of(m) != "threads"}
    assert others == {"perftriage.analysis.requests.features", "perftriage.analysis.requests.features.FeatureTable",
                      "perftriage.analysis.counters", "perftriage.analysis.counters.table"}
    assert "perftriage.analysis.threads.series" in seen


def test_every_import_says_perftriage():
    """No import of the old top-level names: the wheel installs only perftriage."""
    offenders = []
    for path in _sources("analysis", "tui", "perftriage", "tests", "benchmarks", "evaluations", "tools"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for n in names:
                if n.split(".")[0] in ("analysis", "tui"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {n}")
        # code run in child processes (benchmarks, tests) is written in strings
        for m in re.finditer(r"^\s*(from|import)\s+(analysis|tui)\b.*$", path.read_text(), re.M):
            offenders.append(f"{path.relative_to(ROOT)}: {m.group(0).strip()}")
    assert offenders == []


def test_analysis_never_imports_textual_or_tui():
    # import every module of the engine in a fresh interpreter, then look at what got loaded
    mods = [m.name for m in pkgutil.walk_packages(perftriage.analysis.__path__, "perftriage.analysis.")]
    assert len(mods) > 40
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'textual' or m.startswith('perftriage.tui'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "", f"analysis pulled in: {out.stdout.strip()}"


def test_no_import_statement_of_textual_or_tui_in_analysis():
    offenders = []
    for path in _sources("analysis"):
        for mod in imports_of(path):
            if mod.split(".")[0] == "textual" or mod.startswith("perftriage.tui"):
                offenders.append(f"{path.relative_to(ROOT)}: {mod}")
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


def test_the_app_draws_its_first_screen_without_the_heavy_modules():
    # what the app's process imports before its first screen: its command line checked, the app
    # and its panes composed. The analyses (in the analysing child) and their libraries, numpy
    # among them (0.25 s together), and what only a chart or a finding's text needs come later
    code = (
        "import asyncio, sys\n"
        "from perftriage.cli.options import triage_options\n"
        "from perftriage.cli.main import build_parser\n"
        "opts = triage_options(build_parser().parse_args(['open', 'sample_traces/webserver']))\n"
        "from perftriage.tui.app import PerftriageApp\n"
        "import perftriage.tui.app as app_module\n"
        "app_module._warm_up = lambda: None  # what comes after the first screen, left out here\n"
        "async def first_screen():\n"
        "    app = PerftriageApp(['sample_traces/webserver'], opts, analyse=lambda *a, **k: None)\n"
        "    app._start_analysis = lambda: None\n"
        "    async with app.run_test(size=(80, 24)):\n"
        "        return set(sys.modules)\n"
        "mods = asyncio.run(first_screen())\n"
        "heavy = ('sklearn', 'scipy', 'plotext', 'markdown_it', 'bt2', 'numpy')\n"
        "print(','.join(sorted({m.split('.')[0] for m in mods if m.split('.')[0] in heavy}\n"
        "                      | {m for m in mods if m.startswith('perftriage.analysis.triage')}\n"
        "                      - {'perftriage.analysis.triage_process'})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "", f"imported before the first screen: {out.stdout.strip()}"
