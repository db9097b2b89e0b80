"""Span CSV rows as Nezha's export writes them (OnlineBoutique, TrainTicket), for tests that make
spans by hand."""

from __future__ import annotations

from pathlib import Path

HEADER = "TraceID,SpanID,ParentID,PodName,OperationName,StartTimeUnixNano,EndTimeUnixNano,Duration\n"


class SpanRows:
    """Rows with times in ns and durations in µs, the span ids numbered from 1. A span's pod is
    ``pods[pod]`` where given, else ``pod`` itself, with ``suffix`` after it (a pod's generated
    part: '-5f6585d649-fnmft')."""

    def __init__(self, pods: dict | None = None, suffix: str = ""):
        self.lines = [HEADER]
        self.sid = 0
        self.pods = pods or {}
        self.suffix = suffix

    def span(self, trace, parent, pod, name, start, dur) -> str:
        self.sid += 1
        s = f"{self.sid:016x}"
        self.lines.append(f"{trace},{s},{parent},{self.pods.get(pod, pod)}{self.suffix},{name},{start},{start + dur},"
                          f"{dur // 1000}\n")
        return s

    def write(self, path: Path) -> Path:
        path.write_text("".join(self.lines))
        return path
