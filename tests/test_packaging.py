"""What a user's environment gets: one top-level import package, perftriage, with the repository's
analysis/ and tui/ inside it, from a built wheel (not only from the editable install)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

FOLDERS = {"perftriage": "perftriage", "analysis": "perftriage.analysis", "tui": "perftriage.tui"}


def _source_files() -> set[str]:
    """Every .py file of the three folders, as the path it must have in the wheel."""
    out = set()
    for folder, package in FOLDERS.items():
        for p in (ROOT / folder).rglob("*.py"):
            if "__pycache__" in p.parts:
                continue
            rel = p.relative_to(ROOT / folder)
            out.add("/".join([*package.split("."), *rel.parts]))
    return out


def test_pyproject_lists_every_package_of_the_folders():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert cfg["package-dir"] == {"perftriage": "perftriage", "perftriage.analysis": "analysis",
                                  "perftriage.tui": "tui"}
    found = set()
    for folder, package in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *rel.parts]))
    assert set(cfg["packages"]) == found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the sources (the build writes build/ and egg-info beside them)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for folder in FOLDERS:
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(src)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    wheels = list((tmp / "dist").glob("perftriage-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


def test_the_wheel_holds_one_top_level_package_with_every_source_file(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"perftriage"}
    assert {n for n in names if n.endswith(".py")} == _source_files()


def test_an_installed_wheel_runs_as_perftriage_only(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, timeout=300)
    # the dependencies (numpy, textual...) come from this environment, but not its perftriage
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    work = tmp_path / "elsewhere"
    work.mkdir()

    def run(*args):
        return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=work, env=env, timeout=300)

    r = run(venv / "bin" / "perftriage", "--help")
    assert r.returncode == 0 and "perftriage report PATH" in r.stdout, r.stderr
    for name in ("analysis", "tui"):
        r = run(py, "-c", f"import {name}")
        assert r.returncode != 0 and f"No module named '{name}'" in r.stderr
    r = run(py, "-c", "import perftriage.analysis.triage, perftriage.tui.app, perftriage.cli as c; "
                      "print(perftriage.analysis.triage.__file__); print(perftriage.tui.app.__file__)")
    assert r.returncode == 0, r.stderr
    assert all(line.startswith(str(site)) for line in r.stdout.split()), r.stdout
    # the whole engine from the wheel, end to end
    r = run(venv / "bin" / "perftriage", "report", ROOT / "sample_traces" / "fleet", "-q", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert '"analysis": "counters"' in r.stdout
