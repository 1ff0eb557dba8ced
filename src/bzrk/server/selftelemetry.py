"""bzrk's own traces and logs, exported over OTLP into its own ``default`` table (opt-in).

Berserk's services export their telemetry with ``service.namespace=berserk`` and can ship it
into Berserk itself; with ``self_telemetry`` on, bzrk does the same through its OTLP/HTTP
receiver (or ``self_telemetry_endpoint``) with an ingest token (``self_telemetry_token``; in
``bzrk dev`` the bootstrap ingest token, which writes to ``default``):

* a span per query run (``bzrk.query``: surface, status, error code, rows and bytes scanned,
  snapshots) and per gateway request (``HTTP <method> <route>``: route, status);
* the ``bzrk.*`` loggers' records at ``info`` and above — except the ingest path's, whose
  export would feed itself.

Then ``default | where resource["service.namespace"] == "berserk"`` shows what bzrk did. The
OpenTelemetry SDK batches in its own threads; shutdown flushes what is left (bounded).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from typing import Any

from bzrk import __version__
from bzrk.engine.runlog import RunSummary
from bzrk.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

NAMESPACE = "berserk"
SERVICE_NAME = "bzrk"
# Loggers whose records are not exported: the ingest path (its own export would feed it) and
# this module (an export failure must not log itself into the export).
_QUIET = ("bzrk.ingest", "bzrk.server.selftelemetry")
FLUSH_TIMEOUT_MS = 3000


class _Exporting:
    """The live providers, once :func:`enable` ran."""

    tracer: Any = None
    providers: tuple[Any, ...] = ()
    handler: logging.Handler | None = None


_state = _Exporting()


class _NotQuiet(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith(_QUIET)


def enable(endpoint: str, token: str, *, cluster: str | None = None) -> None:
    """Start exporting to ``endpoint`` (an OTLP/HTTP base URL) with the ingest ``token``."""
    if _state.tracer is not None:
        return
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    base = endpoint.rstrip("/")
    headers = {"authorization": f"Bearer {token}"}
    resource = Resource.create(
        {
            "service.name": SERVICE_NAME,
            "service.namespace": NAMESPACE,
            "service.version": __version__,
            "service.instance.id": f"{socket.gethostname()}:{os.getpid()}",
            "bzrk.cluster.name": cluster or socket.gethostname(),
        }
    )
    traces = TracerProvider(resource=resource)
    traces.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers=headers))
    )
    logs = LoggerProvider(resource=resource)
    logs.add_log_record_processor(
        BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{base}/v1/logs", headers=headers))
    )
    handler = LoggingHandler(level=logging.INFO, logger_provider=logs)
    handler.addFilter(_NotQuiet())
    logging.getLogger("bzrk").addHandler(handler)
    _state.tracer = traces.get_tracer("bzrk")
    _state.providers = (traces, logs)
    _state.handler = handler
    log.info("exporting bzrk's own traces and logs to %s", base)


def shutdown() -> None:
    """Flush and stop (bounded by :data:`FLUSH_TIMEOUT_MS` per provider)."""
    if _state.handler is not None:
        logging.getLogger("bzrk").removeHandler(_state.handler)
    for provider in _state.providers:
        try:
            provider.force_flush(FLUSH_TIMEOUT_MS)
            provider.shutdown()
        except Exception:  # the process is stopping; telemetry must not block that
            log.debug("self-telemetry shutdown failed", exc_info=True)
    _state.tracer, _state.providers, _state.handler = None, (), None


def _span(name: str, start_ns: int, end_ns: int, attributes: dict[str, Any], failed: bool) -> None:
    from opentelemetry.trace import SpanKind, Status, StatusCode

    span = _state.tracer.start_span(
        name, kind=SpanKind.SERVER, start_time=start_ns, attributes=attributes
    )
    if failed:
        span.set_status(Status(StatusCode.ERROR))
    span.end(end_time=end_ns)


class RunSpans:
    """A run observer (``engine/runlog.py``): one span per finished query run."""

    def run_finished(self, summary: RunSummary) -> None:
        if _state.tracer is None:
            return
        end = time.time_ns()
        attributes: dict[str, Any] = {
            "bzrk.surface": summary.surface or "internal",
            "bzrk.status": summary.status,
            "bzrk.rows_scanned": summary.rows_scanned,
            "bzrk.bytes_scanned": summary.bytes_scanned,
            "bzrk.snapshots": summary.snapshots,
            "bzrk.result_rows": summary.result_rows,
            "bzrk.short_circuit": summary.short_circuit,
        }
        if summary.error_code:
            attributes["bzrk.error_code"] = summary.error_code
        if summary.queue_wait_s is not None:
            attributes["bzrk.queue_wait_ms"] = round(summary.queue_wait_s * 1000, 3)
        _span(
            "bzrk.query",
            end - int(summary.duration_s * 1e9),
            end,
            attributes,
            summary.status == "error",
        )


class RequestSpans:
    """ASGI middleware: a span per gateway request while exporting (nothing otherwise)."""

    def __init__(self, app: ASGIApp, route_of: Any) -> None:
        self.app = app
        self.route_of = route_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _state.tracer is None:
            await self.app(scope, receive, send)
            return
        start = time.time_ns()
        status = 0

        async def watching(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watching)
        finally:
            route = self.route_of(scope.get("path", ""))
            method = scope.get("method", "GET")
            _span(
                f"HTTP {method} {route}",
                start,
                time.time_ns(),
                {
                    "http.request.method": method,
                    "http.route": route,
                    "http.response.status_code": status,
                },
                status >= 500,
            )
