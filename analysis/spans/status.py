"""Which spans ended in an error, from a status column of a span CSV, or, in spans that carry no
status, from the error handlers they ran (:func:`from_error_handlers`).

Exports write a span's outcome in several ways: OpenTelemetry's status (``ERROR``, ``OK``,
``UNSET``, or its codes 2, 1, 0), a flag (``error`` = true / 1), an HTTP status (5xx fails) or
a gRPC one (any code but 0 fails), or its success (the AIOps challenges' ``success`` column:
False fails). The scheme of a numeric column is told by its values, once
for the file (:class:`StatusScheme`: the first values that tell decide it): codes within 0-2 are
OpenTelemetry's, within 0-16 gRPC's, from 100 HTTP's; a column named as a flag (error,
is_error) fails on any value but 0.
"""

from __future__ import annotations

import re

import numpy as np

FAILED_WORDS = {"error", "status_code_error", "err", "fail", "failed", "failure", "true", "yes", "t", "y", "exception",
                "internal", "unavailable", "unknown", "deadline_exceeded", "aborted"}
FINE_WORDS = {"ok", "unset", "status_code_ok", "status_code_unset", "", "false", "no", "f", "n", "none", "null",
              "success", "succeeded", "nan"}
FLAG_NAMES = {"error", "iserror", "haserror", "failed", "isfailed", "err"}
SUCCESS_NAMES = {"success", "issuccess", "succeeded", "successful"}  # the other way round: false fails
NOT_SUCCESS = {"false", "0", "no", "f", "n", "failed", "failure", "error", "fail"}


class StatusScheme:
    """Reads a status column's values as failed or not, the numeric scheme decided once."""

    def __init__(self, column_name: str):
        name = "".join(c for c in column_name.lower() if c.isalnum())
        self.flag = name in FLAG_NAMES
        self.success = name in SUCCESS_NAMES
        self.scheme: str | None = "flag" if self.flag else None  # "otel", "grpc", "http" once told

    def failed(self, values: list) -> np.ndarray:
        """For distinct values (strings), whether each says the span failed."""
        texts = [str(v).strip().lower() for v in values]
        if self.success:
            return np.array([t in NOT_SUCCESS or t.replace(".0", "") == "0" for t in texts], bool)
        numbers: dict[int, float] = {}
        for i, t in enumerate(texts):
            try:
                numbers[i] = float(t)
            except ValueError:
                pass
        finite = [x for x in numbers.values() if x == x]
        if self.scheme is None and finite:
            hi, lo = max(finite), min(finite)
            if lo >= 100:
                self.scheme = "http"
            elif hi <= 2 and lo >= 0 and (hi == 2 or len(set(finite)) > 1):
                self.scheme = "otel"
            elif hi <= 16 and lo >= 0 and hi > 2:
                self.scheme = "grpc"
        out = np.zeros(len(texts), bool)
        for i, t in enumerate(texts):
            if i in numbers:
                x = numbers[i]
                if x != x:
                    continue
                out[i] = {"http": x >= 500, "otel": x == 2, "grpc": x != 0, "flag": x != 0}.get(self.scheme, x >= 500)
            elif t.replace("status_code_", "") in FAILED_WORDS or t in FAILED_WORDS:
                out[i] = True
            elif t not in FINE_WORDS and self.flag:
                out[i] = True  # an error column holding a message: it failed
        return out


#: an operation's last word (after ``.``, ``/``, ``#``, ``:`` or a space) that names an error
#: handler, and names that hold one anywhere (Spring's BasicErrorController.error)
HANDLER_WORDS = {"error", "handleerror", "errorhandler", "handleexception", "exceptionhandler",
                 "handleuncaughtexception", "errorpage"}
HANDLER_PARTS = ("errorcontroller", "exceptionhandler", "errorhandler")


def is_error_handler(method: str) -> bool:
    """Whether a method (``service:operation``) is a framework's error handling: what a request
    runs when a call threw (Spring's ``BasicErrorController.error``, a ``GET /error`` dispatch,
    ``handleException``)."""
    op = method.split(":", 1)[-1].strip().lower()
    last = re.split(r"[./#:\s]+", op.rstrip("/ "))[-1].replace("_", "")
    return last in HANDLER_WORDS or any(x in op.replace("_", "") for x in HANDLER_PARTS)


def from_error_handlers(spans) -> tuple[np.ndarray, dict[str, int]] | None:
    """For spans that carry no status: per span, whether it ran an error handler (a child span of
    such a method), and the handlers with their calls; None where no span ran one."""
    handler = np.array([is_error_handler(m) for m in spans.methods], bool)
    if not handler.any():
        return None
    rows = np.flatnonzero(handler[spans.method])
    failed = np.zeros(len(spans), bool)
    failed[spans.parent[rows][spans.parent[rows] >= 0]] = True
    calls = np.bincount(spans.method[rows], minlength=len(spans.methods))
    return failed, {spans.methods[m]: int(calls[m]) for m in np.flatnonzero(calls)}
