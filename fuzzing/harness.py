"""Running one ``perftriage`` command line on one generated input, in a forked child, and
judging how it ended.

The child is forked from a process that has already imported perftriage (a run costs what the
command costs, not the imports); it runs ``perftriage.cli.main`` with its output in files, its
address space capped, in a fresh working folder. The parent kills it after a time limit and
reads its peak memory from ``wait4``. A verdict names what went wrong, if anything: a crash (a
signal, a traceback, an exit code outside the documented set), a hang, too much memory, an
error that is not one line, a file written beside the input, a partial or clobbered ``-o``.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import resource
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

#: exit codes perftriage documents (``perftriage --help``), 1 (internal error) excluded
ALLOWED_EXITS = {0, 2, 3, 4, 5}
#: what ``-o`` holds before each run: it must hold it still after any run that wrote nothing
SENTINEL = b"perftriage fuzz: an earlier export that a failed run must leave alone\n"


@dataclass
class Case:
    """One generated input: files to write under the input folder, and the command line (paths
    in ``argv`` written ``{in}`` and ``{out}`` are replaced by the real folders)."""

    cls: str
    files: dict[str, bytes]  # relative path -> content (a path ending in / is a folder)
    argv: list[str]
    describe: str = ""
    copy_from: dict[str, Path] = field(default_factory=dict)  # relative path -> folder to copy first
    timeout_s: float = 60.0
    remove: list[str] = field(default_factory=list)  # relative paths to delete after copying
    may_write: list[str] = field(default_factory=list)  # what the command may create in its working folder


@dataclass
class Outcome:
    exit: int | None  # None when killed by a signal
    signal: str | None
    stderr: str
    elapsed_s: float
    peak_mib: float
    timed_out: bool
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def _tree(path: Path) -> dict[str, str]:
    """Every file under a folder with a digest of its content (links by their target)."""
    out = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            p = Path(root) / name
            rel = str(p.relative_to(path))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha1(p.read_bytes()).hexdigest()
            elif p.is_dir():
                out[rel] = "dir"
    return out


def _statm() -> tuple[int, float]:
    """This process's virtual size (bytes) and resident size (MiB)."""
    with open("/proc/self/statm") as f:
        vm, rss = (int(x) * os.sysconf("SC_PAGE_SIZE") for x in f.read().split()[:2])
    return vm, rss / 2**20


def warm() -> None:
    """Import what the commands import, once, in the server the children are forked from: a run
    then costs what the command costs (0.05 s for a refused file, not 0.5 s of imports)."""
    import importlib

    for name in ("perftriage.cli", "perftriage.analysis.triage", "perftriage.analysis.calltrees.clouddiag",
                 "perftriage.analysis.counters.comparative", "perftriage.analysis.threads.topdown",
                 "perftriage.analysis.requests.outliers", "sklearn.cluster", "sklearn.ensemble", "scipy.stats"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def write_input(case: Case, inp: Path) -> None:
    """The case's input files under ``inp`` (copies of real traces first, then the changes)."""
    import shutil

    for rel, src in case.copy_from.items():
        shutil.copytree(src, inp / rel, symlinks=True)
    for rel in case.remove:
        p = inp / rel
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()
    for rel, data in case.files.items():
        p = inp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith("/"):
            p.mkdir(exist_ok=True)
        else:
            p.write_bytes(data)


def run_case(case: Case, base: Path, memory_mib: int = 2048) -> Outcome:
    """Write the case's input under ``base``, run it in a forked child, judge it."""
    import shutil

    inp, work = base / "in", base / "work"
    for d in (inp, work):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
    write_input(case, inp)
    out = work / "findings.md"
    argv = [a.replace("{in}", str(inp)).replace("{out}", str(out)).replace("{work}", str(work)) for a in case.argv]
    if "-o" in argv:
        out = Path(argv[argv.index("-o") + 1])
        if out.parent == work:
            out.write_bytes(SENTINEL)
    before_in = _tree(inp)
    before_work = _tree(work)
    err_path = base / "stderr"
    err_path.write_bytes(b"")  # a child killed before it opened its stderr (a hang at once) wrote nothing
    r = _server().run(argv, work, base, case.timeout_s, memory_mib)
    code, sig, timed_out = r["exit"], r["signal"], r["timed_out"]
    elapsed, peak, rss_at_fork = r["elapsed_s"], r["peak_mib"], r["rss_at_fork_mib"]
    err = err_path.read_text("utf-8", "replace")
    problems = []
    if sig is not None and not timed_out:
        problems.append(f"killed by {sig}")
    if timed_out:
        problems.append(f"hang: still running after {case.timeout_s:.0f} s")
    if code is not None and code not in ALLOWED_EXITS:
        problems.append(f"exit {code}" + (" (internal error)" if code == 1 else ""))
    if "Traceback (most recent call last)" in err:
        problems.append("traceback on stderr")
    if re.search(r"^\S+:\d+: \w*Warning: ", err, re.M):
        problems.append("a Python warning on stderr (a value computed from bad input, unseen)")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if code == 3 and len(lines) != 1:
        problems.append(f"exit 3 with {len(lines)} lines on stderr (one expected)")
    if code in (3, 5) and lines and not lines[0].startswith("perftriage: "):
        problems.append("an error that does not start with 'perftriage: '")
    if code == 4 and not any(ln.startswith("perftriage: partial data") for ln in lines):
        problems.append("exit 4 without saying what was only partly read")
    if code == 2 and (not lines or "error:" not in lines[-1]):
        problems.append("usage error without an 'error:' line")
    if peak - rss_at_fork > memory_mib:  # the forked child's peak counts the parent's resident pages
        problems.append(f"peak memory {peak - rss_at_fork:,.0f} MiB above the parent's")
    if _tree(inp) != before_in:
        problems.append("the input folder changed")
    after_work = _tree(work)
    extra = {p for p in set(after_work) - set(before_work) if p.split("/")[0] not in case.may_write}
    if extra:
        problems.append("files left in the working folder: " + ", ".join(sorted(extra)[:3]))
    if out.parent == work and out.exists():
        data = out.read_bytes()
        if code not in (0, 4) and data != SENTINEL:
            problems.append(f"-o {out.name} changed by a run that ended with {code or sig}")
        if code in (0, 4) and data == SENTINEL and "-o" in argv and "report" in argv:
            problems.append("-o not written by a run that succeeded")
    elif out.parent == work and "-o" in argv:
        problems.append("-o removed")
    return Outcome(code, sig, err, elapsed, peak, timed_out, problems)


def execute(argv: list[str], work: Path, base: Path, timeout_s: float, memory_mib: int) -> dict:
    """Run ``perftriage argv`` in a child forked from this process (which must hold no other
    thread: see :class:`_Server`), in ``work``, its output in ``base``/stdout and stderr; how it
    ended."""
    err_path = base / "stderr"
    # the child's address space: what this process maps already, plus the budget
    vm, rss_at_fork = _statm()
    cap = vm + memory_mib * 2**20 * 2
    sys.stdout.flush()
    sys.stderr.flush()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 99
        try:
            os.setsid()
            # the bootstrap's worker processes would outlive a child that ends with os._exit:
            # threads do the same work here (and the process group is killed after each run)
            os.environ["PERFTRIAGE_NO_PROCESSES"] = "1"
            os.chdir(work)
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(os.open(base / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
            os.dup2(os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
            # the Python streams on those descriptors (pytest's capture replaced them in this process)
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                          errors="backslashreplace", line_buffering=True)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            for s in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
                signal.signal(s, signal.SIG_DFL)
            from perftriage.cli import main

            try:
                code = main(argv)
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # noqa: BLE001 - a traceback escaping main is a finding
            import traceback

            traceback.print_exc()
            code = 98
        finally:
            try:
                import atexit

                atexit._run_exitfuncs()  # the finalizers os._exit skips: temporary folders (CTF salvage views) removed
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code if isinstance(code, int) else 97)
    timed_out = False
    deadline = t0 + timeout_s
    while True:
        wpid, status, usage = os.wait4(pid, os.WNOHANG)
        if wpid:
            break
        if time.monotonic() > deadline:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:  # killed before its setsid(): no group yet
                os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.005)
    elapsed = time.monotonic() - t0
    try:  # whatever the child started and left behind (its session's process group)
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    peak = usage.ru_maxrss / 1024
    sig = signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else None
    return {"exit": None if sig else os.WEXITSTATUS(status), "signal": sig, "timed_out": timed_out,
            "elapsed_s": elapsed, "peak_mib": peak, "rss_at_fork_mib": rss_at_fork}


class _Server:
    """A clean process that forks the children: forking pytest itself (threads of a process
    pool, of Textual, of anything an earlier test left running) deadlocked children on locks
    held by threads that do not exist in the child. This one holds no thread but the main one."""

    def __init__(self):
        import subprocess

        root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen([sys.executable, "-m", "fuzzing.server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd=root, env=env, text=True)

    def run(self, argv, work, base, timeout_s, memory_mib) -> dict:
        import json

        self.proc.stdin.write(json.dumps({"argv": argv, "work": str(work), "base": str(base),
                                          "timeout_s": timeout_s, "memory_mib": memory_mib}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the fuzzing server ended")
        return json.loads(line)


_SERVERS: dict[str, _Server] = {}  # by FUZZ_COLUMNAR, which a server reads when it starts


def _server() -> _Server:
    key = os.environ.get("FUZZ_COLUMNAR", "")
    server = _SERVERS.get(key)
    if server is None or server.proc.poll() is not None:
        server = _SERVERS[key] = _Server()
    return server
