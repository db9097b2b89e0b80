"""Counters from a running Prometheus server, through its HTTP API (``/api/v1``).

The user names the server (``prometheus+http://HOST:9090`` among the paths, or ``--prometheus
URL``), the series (``--match SELECTOR``, repeatable) and the window (``--since 6h``,
``--until``). For each selector:

1. ``/api/v1/series`` finds the series it matches in the window (an error names a selector that
   matches none, or so many that the fleet would not fit);
2. the raw samples of the window's last 15 minutes tell how often the series are sampled,
   hence how many samples the window holds;
3. the samples are fetched page by page (each page under ``MAX_PAGE_POINTS`` samples and the
   server's 11,000 points per series): by default the **raw samples**, as ``SELECTOR[PAGE]``
   evaluated at each page's end (what an export to a file would hold: the same alignment and
   findings as that file); with ``--step`` (or when raw samples would be too many, or for an
   expression that is not a plain selector) ``/api/v1/query_range`` every STEP, Prometheus's own
   resampling (each point the latest sample of the 5 minutes before it).

The pages are parsed like a saved query result (:func:`readers.matrix_pieces`): the server is
the ``--server-label`` label, cumulative counters become rates per second. Every failure is one
line naming the server: unreachable, a timeout, Prometheus's own error text for a 4xx/5xx.
"""

from __future__ import annotations

import json
import math
import re
import socket
import time as _time
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from perftriage.analysis.errors import InputError, PerftriageError
from perftriage.analysis.inputs import SCHEME
from perftriage.analysis.timeparse import user_time_ns
from perftriage.analysis.units import count_of

from .readers import RawCounters, _Names, matrix_pieces

#: samples (over all series) one page may hold: ~100 MB of JSON at most
MAX_PAGE_POINTS = 2_000_000
#: points of one series per query_range page (Prometheus refuses more than 11,000)
MAX_STEPS = 10_000
#: raw samples per series from which the window is read resampled (query_range) instead
MAX_RAW_PER_SERIES = 50_000
#: series one selector may match
MAX_SERIES = 20_000

_PLAIN_SELECTOR = re.compile(r"\s*([A-Za-z_:][\w:]*)?\s*(\{.*\})?\s*", re.S)


def server_url(text: str) -> str:
    """The http(s) address of ``prometheus+http://HOST:PORT[/PREFIX]`` (or of a plain URL)."""
    url = text[len(SCHEME):] if text.startswith(SCHEME) else text
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(text, "not a Prometheus address (prometheus+http://HOST:PORT)")
    return url.rstrip("/")


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_duration(text: str) -> float | None:
    """Seconds of a Prometheus-style duration (``30s``, ``5m``, ``1h30m``, ``2d``; a bare
    number is seconds), None when ``text`` is not one."""
    t = text.strip()
    try:
        v = float(t)
        return v if math.isfinite(v) and v < 1e9 else None  # a bare number this large is a time, not a duration
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _DURATION.finditer(t):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNIT_S[m.group(2)]
        pos = m.end()
    return total if pos == len(t) and pos else None


def parse_moment(text: str, now: float, what: str) -> float:
    """A time a user gives: a duration back from now (``6h``) or a time (epoch, ISO 8601)."""
    d = parse_duration(text)
    if d is not None:
        return now - d
    try:
        return user_time_ns(text) / 1e9
    except ValueError:
        raise PerftriageError(f"{what}: {text!r} is neither a duration (6h, 30m, 2d) nor a time "
                              "(epoch seconds or ISO 8601)") from None


@dataclass(frozen=True)
class PromRange:
    """What to fetch: selectors, window (user's words), resolution."""

    matches: tuple[str, ...]
    since: str = "6h"  # a duration back from ``until`` or a time
    until: str | None = None  # a time (or a duration back from now); None: now
    step: str | None = None  # None: the raw samples
    timeout: float = 60.0  # seconds, per HTTP request
    reference_since: str | None = None  # the baseline's window, from the same server
    reference_until: str | None = None

    def window(self, now: float | None = None, reference: bool = False) -> tuple[float, float]:
        now = _time.time() if now is None else now
        since, until = (self.reference_since, self.reference_until) if reference else (self.since, self.until)
        names = ("--reference-since", "--reference-until") if reference else ("--since", "--until")
        end = parse_moment(until, now, names[1]) if until else now
        d = parse_duration(since) if since else None
        start = end - d if d is not None else parse_moment(since, now, names[0])
        if not end > start:
            raise PerftriageError(f"{names[0]} must come before {names[1]} (the window is empty)")
        return start, end

    def step_seconds(self) -> float | None:
        if self.step is None:
            return None
        d = parse_duration(self.step)
        if d is None or not d > 0:
            raise PerftriageError(f"--step: {self.step!r} is not a positive duration (30s, 5m)")
        return d


class Client:
    """A Prometheus server's ``/api/v1``; each answer's ``data``, each failure one InputError."""

    def __init__(self, url: str, timeout: float = 60.0, source: str | None = None):
        self.url = server_url(url)
        self.source = source or url
        self.timeout = timeout
        self.requests = 0

    def call(self, endpoint: str, params: list[tuple[str, str]]):
        import urllib.error  # noqa: PLC0415 (http.client, email, ssl: only when a server is asked)
        import urllib.request  # noqa: PLC0415

        body = urlencode(params + [("timeout", _duration_text(self.timeout))]
                                      if endpoint in ("query", "query_range") else params).encode()
        req = urllib.request.Request(f"{self.url}/api/v1/{endpoint}", data=body, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded",
                                              "Accept": "application/json", "User-Agent": "perftriage"})
        self.requests += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 (the user's server)
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            err = InputError(self.source, f"Prometheus answered {exc.code} {exc.reason} to {endpoint}"
                                          f"{_error_text(exc)}")
            err.http_status = exc.code
            raise err from None
        except (TimeoutError, socket.timeout):
            raise self._timed_out(endpoint) from None
        except urllib.error.URLError as exc:
            why = exc.reason
            if isinstance(why, (TimeoutError, socket.timeout)):
                raise self._timed_out(endpoint) from None
            why = getattr(why, "strerror", None) or str(why)
            raise InputError(self.source, f"cannot reach Prometheus at {self.url} ({why})") from None
        except OSError as exc:
            raise InputError(self.source, f"cannot reach Prometheus at {self.url} ({exc.strerror or exc})") from None
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            head = raw[:60].decode("utf-8", "replace").split("\n")[0]
            raise InputError(self.source, f"{self.url} answered {endpoint} with something that is not JSON "
                                          f"({head!r}): is it a Prometheus server?") from None
        if not isinstance(doc, dict) or doc.get("status") != "success":
            err = doc.get("error") if isinstance(doc, dict) else None
            raise InputError(self.source, f"Prometheus refused {endpoint}: {err or 'no success status'}")
        return doc.get("data")

    def _timed_out(self, endpoint: str) -> InputError:
        return InputError(self.source, f"Prometheus did not answer {endpoint} within {self.timeout:g} s "
                                       "(--timeout; a narrower --match or window asks less of it)")


def _error_text(exc) -> str:
    """Prometheus's own error text of an HTTP error answer (``{"status": "error", "errorType":
    ..., "error": ...}``), else the body's first line."""
    try:
        body = exc.read()[:4096]
    except OSError:
        return ""
    try:
        doc = json.loads(body)
        if isinstance(doc, dict) and doc.get("error"):
            kind = doc.get("errorType")
            return f": {doc['error']}" + (f" ({kind})" if kind else "")
    except ValueError:
        pass
    line = body.decode("utf-8", "replace").strip().split("\n")[0][:200]
    return f": {line}" if line else ""


def _duration_text(seconds: float, up: bool = False) -> str:
    """A duration in Prometheus's words, to the millisecond (``up``: never shorter)."""
    ms = max(1, int(math.ceil(seconds * 1000 - 1e-6) if up else round(seconds * 1000)))
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def is_plain_selector(match: str) -> bool:
    m = _PLAIN_SELECTOR.fullmatch(match)
    return bool(m and (m.group(1) or m.group(2)))


@dataclass
class Fetched:
    raw: RawCounters
    series: int
    requests: int
    mode: str  # "raw samples" or "every STEP s (query_range)"


def fetch_counters(url: str, rng: PromRange, server_label: str = "instance", reference: bool = False,
                   now: float | None = None, progress=None) -> Fetched:
    """The series ``rng`` selects, from the server at ``url``, over its window (or the reference
    window), as a reader's :class:`RawCounters`."""
    client = Client(url, rng.timeout)
    start, end = rng.window(now, reference)
    step = rng.step_seconds()
    names_ = _Names()
    types = _metadata(client)
    pieces, notes, n_series, modes = [], [], 0, set()
    seen: set = set()
    for i, match in enumerate(rng.matches):
        if progress is not None:
            progress(f"selector {i + 1} of {len(rng.matches)}: {match}")
        found = client.call("series", [("match[]", match), ("start", f"{start:.3f}"), ("end", f"{end:.3f}")])
        if not found:
            raise InputError(url, f"--match {match}: no series between {_when(start)} and {_when(end)}")
        if len(found) > MAX_SERIES:
            raise InputError(url, f"--match {match}: {len(found):,} series; at most {MAX_SERIES:,} are analysed "
                                  "at once (a narrower selector, e.g. with a job or a metric name)")
        fresh_keys = {_key(s) for s in found} - seen
        seen |= fresh_keys
        if not fresh_keys:
            notes.append(f"--match {match}: its series were all matched by an earlier selector")
            continue
        n_series += len(fresh_keys)
        mode_step, per_series = step, 0.0
        if mode_step is None and not is_plain_selector(match):
            mode_step = max(1.0, math.ceil((end - start) / 1000))
        if mode_step is None:
            per_series, interval = _sampling(client, match, start, end)
            if per_series > MAX_RAW_PER_SERIES:
                mode_step = float(math.ceil((end - start) / MAX_STEPS))
                notes.append(f"--match {match}: {per_series:,.0f} samples per series (one every {interval:g} s) "
                             f"are too many: read every {mode_step:g} s through query_range (--step to choose)")
        results = _pages(client, match, start, end, mode_step, len(fresh_keys), per_series)
        results = [r for r in results if _key(r.get("metric") or {}) in fresh_keys]
        p, n = matrix_pieces(results, url, server_label, names_, types)
        pieces += p
        notes += n
        modes.add("raw samples" if mode_step is None else f"every {mode_step:g} s (query_range)")
    if not pieces:
        labels = sorted({k for s in seen for k, _ in s} - {"__name__"})
        raise InputError(url, f"no series with samples and a {server_label!r} label between {_when(start)} and "
                              f"{_when(end)}" + (f" (their labels: {', '.join(labels[:8])}; --server-label names "
                                                  "the one naming the server)" if labels else ""))
    window = "reference " if reference else ""
    notes.insert(0, f"Prometheus {client.url}: {n_series:,} series of "
                    f"{count_of(len(names_.counter_list), 'counters')} on "
                    f"{count_of(len(names_.server_list), 'servers')}, {window}window {_when(start)} to {_when(end)}, "
                    f"{' and '.join(sorted(modes))}, {client.requests} requests")
    kinds = names_.kinds()[0] if names_.kind_rows else None
    raw = RawCounters(names_.server_list, names_.counter_list, pieces, url, notes, kinds=kinds,
                      kind_column=names_.kind_column)
    return Fetched(raw, n_series, client.requests, " and ".join(sorted(modes)))


def _key(labels: dict) -> tuple:
    return tuple(sorted(labels.items()))


def _when(t: float) -> str:
    return _time.strftime("%Y-%m-%d %H:%M:%S UTC", _time.gmtime(t))


def _metadata(client: Client) -> dict:
    """Metric types the server knows from its scrapes (none for backfilled data)."""
    try:
        data = client.call("metadata", [])
    except InputError as exc:
        if getattr(exc, "http_status", None) is None:
            raise  # unreachable, a timeout: the same for every other request
        return {}  # a server without the endpoint
    out = {}
    for name, entries in (data or {}).items() if isinstance(data, dict) else ():
        if entries and isinstance(entries, list) and isinstance(entries[0], dict):
            out[name] = entries[0].get("type")
    return out


def _sampling(client: Client, match: str, start: float, end: float) -> tuple[float, float]:
    """(samples per series over the window, seconds between samples): the median gap between
    the raw samples of the window's last 15 minutes (or 2 hours, or all of it, when that holds
    fewer than two samples of a series)."""
    span = end - start
    for w in sorted({min(900.0, span), min(7200.0, span), span}):
        data = client.call("query", [("query", f"{match}[{_duration_text(w)}]"), ("time", f"{end:.3f}")])
        gaps = []
        for r in (data or {}).get("result") or []:
            t = [float(v[0]) for v in r.get("values") or []]
            gaps += [b - a for a, b in zip(t, t[1:]) if b > a]
        if gaps:
            interval = float(sorted(gaps)[len(gaps) // 2])
            return span / interval + 1, interval
    return 1.0, span


def _pages(client: Client, match: str, start: float, end: float, step: float | None, n_series: int,
           per_series: float) -> list:
    """Every page's series, the samples of one series over pages joined (``per_series``: raw
    samples per series over the window, when ``step`` is None)."""
    span = end - start
    if step is None:
        points = max(per_series, 1.0) * n_series
        pages = max(1, math.ceil(points / MAX_PAGE_POINTS))
    else:
        steps = span / step + 1
        pages = max(1, math.ceil(steps / MAX_STEPS), math.ceil(steps * n_series / MAX_PAGE_POINTS))
    by_series: dict[tuple, dict] = {}
    length = span / pages
    for k in range(pages):
        a = start + k * length
        b = end if k == pages - 1 else start + (k + 1) * length
        if step is None:
            # SELECTOR[W] at b holds the samples of [b - W, b]: the first page from the window's
            # start, the others after the previous page's end
            # (from the time as sent, to the millisecond, and rounded up: a range cut short by
            # rounding would miss a sample just after a)
            at = f"{b:.3f}"
            data = client.call("query", [("query", f"{match}[{_duration_text(float(at) - a, up=True)}]"),
                                         ("time", at)])
        else:
            first = start + math.ceil(round((a - start) / step, 9)) * step
            data = client.call("query_range", [("query", match), ("start", f"{first:.3f}"),
                                               ("end", f"{b:.3f}"), ("step", f"{step:g}")])
        if not isinstance(data, dict) or data.get("resultType") != "matrix":
            raise InputError(client.source, f"--match {match}: Prometheus answered with a "
                                            f"{(data or {}).get('resultType')!r}, not a matrix of samples")
        for r in data.get("result") or []:
            key = _key(r.get("metric") or {})
            # a page holds (a, b]; the first [start, b] (a time at the seconds' float precision:
            # a + 1e-9 would be a)
            vals = [v for v in r.get("values") or [] if (a < float(v[0]) or k == 0) and float(v[0]) <= b]
            if key in by_series:
                by_series[key]["values"] += vals
            else:
                by_series[key] = {"metric": r.get("metric") or {}, "values": vals}
    return list(by_series.values())
