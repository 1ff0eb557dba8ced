"""OTLP/HTTP (``/v1/logs``, ``/v1/traces``, ``/v1/metrics``) and Loki push receivers as Starlette apps.

Bodies are read with a size cap, gunzipped with the same cap, decoded (protobuf or JSON),
mapped, and handed to the :class:`~bzrk.ingest.pipeline.IngestPipeline`; the response waits
for the durable write. Errors follow the OTLP spec: a ``google.rpc.Status`` body in the
request's encoding, 429/503 with ``Retry-After``.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import snappy
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from bzrk.ingest import loki, metrics, otlp
from bzrk.ingest.errors import (
    BadRequest,
    IngestError,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from bzrk.ingest.pipeline import IngestPipeline, Outcome

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


@dataclass(frozen=True, slots=True)
class Signal:
    """One OTLP signal: its request/response messages, mapper, and partial-success field."""

    name: str
    request: type[Message]
    response: type[Message]
    mapper: Callable[[Any], otlp.Mapped]
    rejected_field: str


SIGNALS = {
    "logs": Signal(
        "logs",
        ExportLogsServiceRequest,
        ExportLogsServiceResponse,
        otlp.map_logs,
        "rejected_log_records",
    ),
    "traces": Signal(
        "traces",
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
        otlp.map_traces,
        "rejected_spans",
    ),
    "metrics": Signal(
        "metrics",
        ExportMetricsServiceRequest,
        ExportMetricsServiceResponse,
        otlp.map_metrics,
        "rejected_data_points",
    ),
}


def success_response(signal: Signal, outcome: Outcome) -> Message:
    response = signal.response()
    if outcome.rejected:
        setattr(response.partial_success, signal.rejected_field, outcome.rejected)
        response.partial_success.error_message = outcome.message
    return response


async def read_body(request: Request, max_bytes: int, *, snappy_body: bool = False) -> bytes:
    """The request body, decompressed, at most ``max_bytes``; 413/415/400 otherwise."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise PayloadTooLarge(f"request body of {declared} bytes exceeds the limit of {max_bytes}")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise PayloadTooLarge(f"request body exceeds the limit of {max_bytes} bytes")
            chunks.append(chunk)
    except ClientDisconnect as exc:
        # The client closed its side before the body it declared was complete.
        raise BadRequest(_short_body(size, declared)) from exc
    if declared is not None and declared.isdigit() and size < int(declared):
        raise BadRequest(_short_body(size, declared))
    body = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity") or (snappy_body and encoding == "snappy"):
        # Loki's protobuf body is a snappy block whether or not a client says so.
        return body
    if encoding == "gzip":
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = inflater.decompress(body, max_bytes + 1)
        except zlib.error as exc:
            raise BadRequest(f"invalid gzip body: {exc}") from exc
        if len(out) > max_bytes:
            raise PayloadTooLarge(f"decompressed body exceeds the limit of {max_bytes} bytes")
        if not inflater.eof:
            raise BadRequest("invalid gzip body: truncated stream")
        return out
    raise UnsupportedMediaType(f"unsupported Content-Encoding '{encoding}' (use gzip or none)")


def _short_body(size: int, declared: str | None) -> str:
    of = f" of the {declared} bytes its Content-Length declares" if declared else ""
    return f"request body ended after {size} bytes{of}"


def declared_length(request: Request) -> int:
    """The Content-Length a request declares (0 when absent or malformed)."""
    value = request.headers.get("content-length", "")
    return int(value) if value.isdigit() else 0


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


_ID_KEYS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def _hex_ids_to_base64(node: Any) -> None:
    # OTLP/JSON spells trace and span ids as hex, protobuf's JSON mapping expects base64.
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                if not value:
                    continue
                try:
                    raw = bytes.fromhex(value)
                except ValueError as exc:
                    raise BadRequest(f"{key} {value[:40]!r} is not hex") from exc
                node[key] = base64.b64encode(raw).decode("ascii")
            else:
                _hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids_to_base64(item)


def decode_otlp(signal: Signal, body: bytes, content_type: str) -> Message:
    message = signal.request()
    if content_type == PROTOBUF:
        try:
            message.ParseFromString(body)
        except DecodeError as exc:
            raise BadRequest(f"invalid OTLP protobuf: {exc}") from exc
        return message
    try:
        document = json.loads(body)
    except UnicodeDecodeError as exc:
        raise BadRequest(f"body is not valid UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    except RecursionError as exc:
        raise BadRequest("invalid JSON: nested too deeply") from exc
    if not isinstance(document, dict):
        raise BadRequest(
            f"invalid OTLP JSON: the body must be a JSON object (an {signal.request.__name__}), "
            f"not {_json_kind(document)}"
        )
    try:
        _hex_ids_to_base64(document)
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, binascii.Error, ValueError) as exc:
        raise BadRequest(f"invalid OTLP JSON: {exc}") from exc
    except (TypeError, AttributeError) as exc:
        # protobuf's JSON parser meets a value of the wrong JSON kind it does not check itself.
        raise BadRequest(
            "invalid OTLP JSON: a field holds a value of the wrong JSON type "
            "(an object, array, string or number where another is expected)"
        ) from exc
    except RecursionError as exc:
        raise BadRequest("invalid OTLP JSON: nested too deeply") from exc
    return message


def decode_and_map(signal: Signal, body: bytes, content_type: str) -> otlp.Mapped:
    """An OTLP request body as the rows of its signal, ready for the pipeline."""
    return signal.mapper(decode_otlp(signal, body, content_type))


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array"


def encode(message: Message, content_type: str) -> bytes:
    if content_type == JSON:
        return json_format.MessageToJson(message, indent=None).encode()
    return message.SerializeToString()


def error_response(exc: IngestError, content_type: str) -> Response:
    status = status_pb2.Status(code=exc.grpc_code.value[0], message=exc.message)
    headers = {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s else None
    kind = JSON if content_type == JSON else PROTOBUF
    return Response(encode(status, kind), exc.status, headers=headers, media_type=kind)


def _otlp_endpoint(pipeline: IngestPipeline, signal: Signal) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        content_type = media_type(request)
        try:
            if content_type not in (PROTOBUF, JSON):
                raise UnsupportedMediaType(
                    f"unsupported Content-Type '{content_type or '(none)'}': "
                    f"use {PROTOBUF} or {JSON}"
                )
            token = await pipeline.tokens.resolve(request.headers.get("authorization"))
            async with pipeline.admission.hold(
                min(declared_length(request), pipeline.max_body_bytes)
            ) as hold:
                body = await read_body(request, pipeline.max_body_bytes)
                hold.grow_to(len(body) * 2)
                # Decoding and mapping cost ~15 µs per record: off the event loop, so a large
                # request does not stall every other request of the process.
                mapped = await pipeline.decode(decode_and_map, signal, body, content_type)
                outcome = await pipeline.write(token, mapped, signal.name, hold)
        except IngestError as exc:
            if isinstance(exc, BadRequest):
                metrics.INVALID_REQUESTS.labels(signal.name).inc()
            return error_response(exc, content_type)
        return Response(
            encode(success_response(signal, outcome), content_type), 200, media_type=content_type
        )

    return endpoint


def otlp_routes(pipeline: IngestPipeline) -> list[Route]:
    return [
        Route(f"/v1/{name}", _otlp_endpoint(pipeline, signal), methods=["POST"])
        for name, signal in SIGNALS.items()
    ]


# -- Loki --------------------------------------------------------------------------------------
def snappy_uncompress(body: bytes, max_bytes: int) -> bytes:
    """A snappy block, refusing (before allocating) one that declares more than ``max_bytes``."""
    declared, shift = 0, 0
    for byte in body[:10]:
        declared |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    else:
        raise BadRequest("invalid snappy block: bad length header")
    if declared > max_bytes:
        raise PayloadTooLarge(
            f"decompressed body of {declared} bytes exceeds the limit of {max_bytes}"
        )
    try:
        return snappy.uncompress(body)
    except snappy.UncompressError as exc:  # it carries no message of its own
        raise BadRequest(
            f"invalid snappy block: the {len(body)}-byte body does not decompress (a Loki "
            "protobuf push is a snappy-compressed logproto.PushRequest; send JSON pushes with "
            "Content-Type: application/json)"
        ) from exc


def _loki_error(exc: IngestError) -> Response:
    headers = {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s else None
    return Response(exc.message + "\n", exc.status, headers=headers, media_type="text/plain")


def _decode_loki(body: bytes, content_type: str, max_bytes: int) -> otlp.Mapped:
    if content_type == JSON:
        streams = loki.decode_json(body)
    elif content_type in ("application/x-protobuf", ""):
        streams = loki.decode_protobuf(snappy_uncompress(body, max_bytes))
    else:
        raise UnsupportedMediaType(
            f"unsupported Content-Type '{content_type}': use "
            "application/x-protobuf (snappy) or application/json"
        )
    return loki.map_streams(streams)


def create_loki_routes(pipeline: IngestPipeline) -> list[Route]:
    async def push(request: Request) -> Response:
        content_type = media_type(request)
        try:
            token = await pipeline.tokens.resolve(request.headers.get("authorization"))
            async with pipeline.admission.hold(
                min(declared_length(request), pipeline.max_body_bytes)
            ) as hold:
                body = await read_body(request, pipeline.max_body_bytes, snappy_body=True)
                hold.grow_to(len(body) * 4)
                mapped = await pipeline.decode(
                    _decode_loki, body, content_type, pipeline.max_body_bytes
                )
                await pipeline.write(token, mapped, "loki", hold)
        except loki.LokiDecodeError as exc:
            metrics.INVALID_REQUESTS.labels("loki").inc()
            return _loki_error(BadRequest(str(exc)))
        except IngestError as exc:
            if isinstance(exc, BadRequest):
                metrics.INVALID_REQUESTS.labels("loki").inc()
            return _loki_error(exc)
        return Response(status_code=204)

    # /api/prom/push is the push path of Loki before 0.4 (python-logging-loki's "0" emitter).
    return [Route(path, push, methods=["POST"]) for path in ("/loki/api/v1/push", "/api/prom/push")]
