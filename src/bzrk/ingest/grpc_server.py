"""OTLP/gRPC receiver: LogsService, TraceService and MetricsService ``Export`` on one grpc.aio server.

Each servicer takes the ingest token from the ``authorization`` metadata, maps the request,
and answers after the durable write; partial success goes in the response, failures become
the gRPC status of :mod:`bzrk.ingest.errors` (with ``retry-after`` trailing metadata where
the client should retry).
"""

from __future__ import annotations

from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from bzrk.ingest.errors import IngestError
from bzrk.ingest.http import SIGNALS, Signal, success_response
from bzrk.ingest.pipeline import IngestPipeline


async def _export(
    pipeline: IngestPipeline, signal: Signal, request: Any, context: grpc.aio.ServicerContext
) -> Any:
    metadata = {key.lower(): value for key, value in (context.invocation_metadata() or ())}
    try:
        token = await pipeline.tokens.resolve(metadata.get("authorization"))
        async with pipeline.admission.admit(request.ByteSize() * 2):
            outcome = await pipeline.write(token, signal.mapper(request), signal.name)
    except IngestError as exc:
        if exc.retry_after_s:
            context.set_trailing_metadata((("retry-after", str(exc.retry_after_s)),))
        await context.abort(exc.grpc_code, exc.message)
    return success_response(signal, outcome)


class LogsServicer(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, pipeline: IngestPipeline) -> None:
        self.pipeline = pipeline

    async def Export(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await _export(self.pipeline, SIGNALS["logs"], request, context)


class TraceServicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, pipeline: IngestPipeline) -> None:
        self.pipeline = pipeline

    async def Export(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await _export(self.pipeline, SIGNALS["traces"], request, context)


class MetricsServicer(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, pipeline: IngestPipeline) -> None:
        self.pipeline = pipeline

    async def Export(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await _export(self.pipeline, SIGNALS["metrics"], request, context)


def create_server(pipeline: IngestPipeline) -> grpc.aio.Server:
    """The server with the three services registered; the caller binds and starts it."""
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", pipeline.max_body_bytes),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ]
    )
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(LogsServicer(pipeline), server)
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceServicer(pipeline), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(MetricsServicer(pipeline), server)
    return server
