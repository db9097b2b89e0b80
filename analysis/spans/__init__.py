"""Request tracing spans: readers for OTLP JSON, Jaeger JSON (the UI's export, or the span
documents its storage holds), Zipkin v2 JSON, AWS X-Ray traces, Elastic APM documents, SkyWalking traces, span CSV, call-graph tables of rpcids (Alibaba's)
and the CloudDiag log format, into one columnar :class:`SpanTable`."""

from __future__ import annotations

from pathlib import Path

from perftriage.analysis.inputs import read_head, register_file_kind

from . import clouddiag_log, elastic_apm, jaeger, jaeger_docs, otlp, rpc_ids, skywalking, span_csv, xray, zipkin
from .table import SpanBuilder, SpanTable

FORMATS = {
    "skywalking": skywalking,  # first: its spans have a traceId, as Zipkin's do
    "otlp": otlp,
    "jaeger": jaeger,
    "jaeger-docs": jaeger_docs,
    "zipkin": zipkin,
    "xray": xray,
    "elastic-apm": elastic_apm,
    "clouddiag-log": clouddiag_log,
    "rpc-ids": rpc_ids,  # before span-csv: its header is a CSV's, without span ids
    "span-csv": span_csv,
}


FORMAT_NAMES = {"otlp": "OTLP JSON file", "jaeger": "Jaeger JSON file",
                "jaeger-docs": "Jaeger span documents (Elasticsearch / OpenSearch)", "zipkin": "Zipkin JSON file",
                "xray": "AWS X-Ray traces", "elastic-apm": "Elastic APM documents (Elasticsearch)",
                "skywalking": "SkyWalking traces (query API)",
                "clouddiag-log": "CloudDiag log", "rpc-ids": "call-graph table of rpcids",
                "span-csv": "span CSV"}


def sniff_format(path: Path, head: bytes) -> str | None:
    for name, mod in FORMATS.items():
        if mod.sniff(path, head):
            return name
    return None


def _sniff_spans(path: Path, head: bytes) -> bool:
    return sniff_format(path, head) is not None


register_file_kind("spans", _sniff_spans)


def read_spans(paths, columns: dict[str, str] | None = None, jobs: int | None = None) -> SpanTable:
    """All spans of the given files in one table (formats detected per file). ``jobs``: cores
    that may be used (None: those this process may run on; a large OTLP file is read by two
    processes when two may be)."""
    from perftriage.analysis.errors import InputError, reading  # noqa: PLC0415

    b = SpanBuilder()
    for p in paths:
        p = Path(p)
        head = read_head(p)
        fmt = sniff_format(p, head)
        if fmt is None:
            raise InputError(p, "not a span file perftriage reads (OTLP/Jaeger/Zipkin/X-Ray/Elastic APM/SkyWalking JSON, span CSV, "
                                "call-graph table of rpcids, CloudDiag log)")
        with reading(p, FORMAT_NAMES[fmt]):
            if fmt == "span-csv":
                span_csv.read(p, b, columns)
            elif fmt == "otlp":
                otlp.read(p, b, jobs)
            else:
                FORMATS[fmt].read(p, b)
        b.sources.append(f"{p} ({fmt})")
    table = b.finish()
    if table.error is None:
        _errors_from_handlers(table)
    return table


def _errors_from_handlers(table: SpanTable) -> None:
    """Spans without a status: a span that ran an error handler is taken as failed (a note says so)."""
    from .status import from_error_handlers  # noqa: PLC0415

    got = from_error_handlers(table)
    if got is None:
        return
    table.error, handlers = got
    table.error_inferred = True
    top = sorted(handlers.items(), key=lambda x: (-x[1], x[0]))
    named = ", ".join(f"{m}: {n:,}" for m, n in top[:3]) + (f", and {len(top) - 3} more" if len(top) > 3 else "")
    table.notes.append(f"the spans carry no status: a call that ran an error handler is taken as failed, the deepest "
                       f"such call of a request as where its error started (handlers run: {named})")
