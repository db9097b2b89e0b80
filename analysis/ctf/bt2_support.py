"""Importing babeltrace2's Python bindings (``bt2``), which only Debian's python3-bt2 provides."""

from __future__ import annotations

from perftriage.analysis.errors import MissingDependency

INSTALL_HINT = (
    "reading CTF traces needs babeltrace2's Python bindings (bt2), which are not installed: "
    "run `apt-get install babeltrace2 python3-bt2` as root, then `make run` again "
    "(the venv must be made from /usr/bin/python3)"
)


def import_bt2():
    """Return the ``bt2`` module or raise MissingDependency with the one line that says what to do."""
    try:
        import bt2  # noqa: PLC0415  (optional system package)
    except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
        raise MissingDependency(INSTALL_HINT) from exc
    return bt2


def bt2_available() -> bool:
    try:
        import_bt2()
    except MissingDependency:
        return False
    return True


def error_text(err: BaseException) -> tuple[str, str | None]:
    """The most specific message of a bt2 error and the name of the component that raised it.

    bt2 errors carry a chain of causes, the root cause first; it names the real problem (e.g.
    "Failed to index CTF stream file '.../k_1'"), the later ones only how it travelled up."""
    causes = []
    try:
        causes = list(err)  # bt2._Error is a sequence of causes
    except TypeError:
        pass
    for cause in causes:
        msg = getattr(cause, "message", "")
        if msg:
            comp = getattr(cause, "component_name", None)
            return " ".join(msg.split()), comp
    return " ".join(str(err).split()) or type(err).__name__, None


def take_error(bt2, what: str) -> BaseException:
    """babeltrace2's error of this thread (set by the component that failed) as a ``bt2._Error``,
    whose causes :func:`error_text` reads; a plain exception saying ``what`` when there is none."""
    try:
        return bt2._Error(what)
    except AssertionError:  # no error was set on this thread
        return RuntimeError(what)
