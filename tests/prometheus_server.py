"""A real Prometheus server for tests: Debian's ``prometheus``, on a free loopback port, its TSDB
backfilled with ``promtool tsdb create-blocks-from openmetrics`` from counter CSVs (the
samples'), one job per dataset."""

from __future__ import annotations

import csv
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def prometheus_name(counter: str) -> str:
    """A counter's name as a Prometheus metric name (``Runtime.CPU.Percent`` ->
    ``Runtime_CPU_Percent``)."""
    return re.sub(r"[^A-Za-z0-9_:]", "_", counter)


def renamed_csv(src: Path, dst: Path, shift_s: float = 0.0) -> Path:
    """The wide counter CSV ``src`` with Prometheus names in its header (and its times moved by
    ``shift_s``): the file the Prometheus data is compared with."""
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    rows[0] = rows[0][:2] + [prometheus_name(c) for c in rows[0][2:]]
    for r in rows[1:]:
        r[0] = f"{float(r[0]) + shift_s:.0f}"
    with open(dst, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    return dst


def renamed_rules(src: Path, dst: Path) -> Path:
    text = Path(src).read_text()
    dst.write_text(re.sub(r'^(counter\s*=\s*")([^"]*)"', lambda m: m.group(1) + prometheus_name(m.group(2)) + '"',
                          text, flags=re.M))
    return dst


def openmetrics(csv_path: Path, job: str, shift_s: float = 0.0) -> str:
    """The samples of a wide counter CSV (time, server, COUNTER...) as OpenMetrics text: one gauge
    family per counter, series ``{instance=SERVER, job=JOB}``, empty cells left out."""
    with open(csv_path, newline="") as f:
        rows = list(csv.reader(f))
    header, rows = rows[0], rows[1:]
    rows.sort(key=lambda r: (r[1], float(r[0])))
    out = []
    for j in range(2, len(header)):
        name = prometheus_name(header[j])
        out.append(f"# TYPE {name} gauge")
        out += [f'{name}{{instance="{r[1]}",job="{job}"}} {r[j]} {float(r[0]) + shift_s:.0f}' for r in rows if r[j]]
    return "\n".join(out) + "\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """``prometheus`` serving the backfilled blocks of ``datasets`` ({job: (csv, shift_s)})."""

    def __init__(self, workdir: Path, datasets: dict):
        self.workdir = Path(workdir)
        self.data = self.workdir / "tsdb"
        self.data.mkdir(parents=True)
        for job, (path, shift) in datasets.items():
            om = self.workdir / f"{job}.om"
            om.write_text(openmetrics(path, job, shift) + "# EOF\n")
            subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(om), str(self.data)],
                           check=True, capture_output=True, timeout=300)
        (self.workdir / "prometheus.yml").write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(self.workdir / "prometheus.log", "w")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={self.workdir / 'prometheus.yml'}", f"--storage.tsdb.path={self.data}",
             "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"prometheus did not start: {(self.workdir / 'prometheus.log').read_text()[-2000:]}")
            time.sleep(0.1)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def have_prometheus() -> bool:
    return bool(shutil.which("prometheus") and shutil.which("promtool"))
