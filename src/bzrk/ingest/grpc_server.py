"""OTLP/gRPC receiver: LogsService, TraceService and MetricsService ``Export`` on one grpc.aio server.

The methods are registered as generic handlers that receive raw bytes, so a request that does
not decode (truncated, bad UTF-8) is answered ``INVALID_ARGUMENT`` with the decoder's reason
rather than grpc's generic deserialization failure. Each call takes the ingest token from the
``authorization`` metadata, maps the request and answers after the durable write; partial
success goes in the response, failures become the gRPC status of :mod:`bzrk.ingest.errors`
(with ``retry-after`` trailing metadata where the client should retry).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

from bzrk.ingest import metrics
from bzrk.ingest.errors import BadRequest, IngestError
from bzrk.ingest.http import PROTOBUF, SIGNALS, Signal, decode_and_map, success_response
from bzrk.ingest.pipeline import IngestPipeline

SERVICES = {
    "logs": "opentelemetry.proto.collector.logs.v1.LogsService",
    "traces": "opentelemetry.proto.collector.trace.v1.TraceService",
    "metrics": "opentelemetry.proto.collector.metrics.v1.MetricsService",
}


def _export_handler(
    pipeline: IngestPipeline, signal: Signal
) -> Callable[[bytes, grpc.aio.ServicerContext], Awaitable[Any]]:
    async def export(raw: bytes, context: grpc.aio.ServicerContext) -> Any:
        metadata = {key.lower(): value for key, value in (context.invocation_metadata() or ())}
        try:
            token = await pipeline.tokens.resolve(metadata.get("authorization"))
            async with pipeline.admission.admit(len(raw) * 2) as hold:
                mapped = await pipeline.decode(decode_and_map, signal, raw, PROTOBUF)
                outcome = await pipeline.write(token, mapped, signal.name, hold)
        except IngestError as exc:
            if isinstance(exc, BadRequest):
                metrics.INVALID_REQUESTS.labels(signal.name).inc()
            if exc.retry_after_s:
                context.set_trailing_metadata(_retry_metadata(exc))
            await context.abort(exc.grpc_code, exc.message)
        return success_response(signal, outcome)

    return export


def _retry_metadata(exc: IngestError) -> tuple[tuple[str, str | bytes], ...]:
    """Where to retry, as OTLP exporters read it: a ``google.rpc.RetryInfo`` status detail."""
    retry = error_details_pb2.RetryInfo()
    retry.retry_delay.seconds = exc.retry_after_s or 1
    status = status_pb2.Status(code=exc.grpc_code.value[0], message=exc.message)
    status.details.add().Pack(retry)
    return (
        ("grpc-status-details-bin", status.SerializeToString()),
        ("retry-after", str(exc.retry_after_s)),
    )


def create_server(pipeline: IngestPipeline) -> grpc.aio.Server:
    """The server with the three services registered; the caller binds and starts it."""
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", pipeline.max_body_bytes),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ]
    )
    handlers = []
    for name, service in SERVICES.items():
        signal = SIGNALS[name]
        method = grpc.unary_unary_rpc_method_handler(
            _export_handler(pipeline, signal),
            request_deserializer=None,  # raw bytes: decoding errors are ours to report
            response_serializer=lambda message: message.SerializeToString(),
        )
        handlers.append(grpc.method_handlers_generic_handler(service, {"Export": method}))
    server.add_generic_rpc_handlers(tuple(handlers))
    return server
