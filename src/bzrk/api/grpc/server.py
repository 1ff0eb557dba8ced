"""gRPC over ASGI: server-streaming calls answered on the query port's Hypercorn (HTTP/2 + trailers).

A gRPC call is an HTTP/2 POST whose body holds length-prefixed messages (1 flag byte, 4-byte
big-endian length) and whose status travels in trailers (``grpc-status``, ``grpc-message``).
:class:`GrpcAsgiApp` reads the one request message, runs the method's handler (an async
iterator of serialized response messages), writes each as a length-prefixed message and
finishes with ``http.response.trailers``. It honours ``grpc-timeout`` (DEADLINE_EXCEEDED) and
client cancellation: on ``http.disconnect`` or an expired deadline the handler's iterator is
closed, so whatever it drives (the query executor) stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from bzrk.types import Message, Receive, Scope, Send

log = logging.getLogger("bzrk.api.grpc")

MAX_REQUEST_BYTES = 4 * 1024 * 1024
_TIMEOUT_RE = re.compile(r"^(\d{1,8})([HMSmun])$")
_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


class Status(IntEnum):
    """gRPC status codes (the numbers are the wire contract)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    UNAUTHENTICATED = 16


class GrpcError(Exception):
    """Ends a call with a non-OK status (raised by handlers, before or after frames)."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class CallContext:
    """What a handler knows about its call."""

    method: str
    metadata: Mapping[str, str]
    scope: Scope
    deadline: float | None = None  # time.monotonic() value
    extras: dict[str, Any] = field(default_factory=dict)

    def time_remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()


Handler = Callable[[bytes, CallContext], AsyncIterator[bytes]]


def parse_timeout(value: str | None) -> float | None:
    """``grpc-timeout`` (e.g. ``"2500m"``) in seconds; None when absent or malformed."""
    if not value:
        return None
    match = _TIMEOUT_RE.match(value.strip())
    if match is None:
        return None
    return int(match.group(1)) * _TIMEOUT_UNITS[match.group(2)]


def encode_grpc_message(message: str) -> bytes:
    """Percent-encode a status message as the gRPC HTTP/2 spec requires (UTF-8, %XX)."""
    out = []
    for byte in message[:1024].encode("utf-8"):
        out.append(chr(byte) if 0x20 <= byte <= 0x7E and byte != 0x25 else f"%{byte:02X}")
    return "".join(out).encode("ascii")


def length_prefixed(message: bytes) -> bytes:
    return b"\x00" + len(message).to_bytes(4, "big") + message


def _metadata(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        name = key.decode("latin-1").lower()
        if not name.endswith("-bin"):
            out[name] = value.decode("latin-1")
    return out


class _Responder:
    """Sends headers lazily (so early failures carry only a status), messages, then trailers."""

    def __init__(self, scope: Scope, send: Send) -> None:
        self._send = send
        self._trailers = "http.response.trailers" in scope.get("extensions", {})
        self.started = False
        self.finished = False

    async def _start(self, status_headers: list[tuple[bytes, bytes]]) -> None:
        headers = [(b"content-type", b"application/grpc"), (b"grpc-accept-encoding", b"identity")]
        await self._send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": headers + status_headers,
                "trailers": self._trailers,
            }
        )
        self.started = True

    async def message(self, data: bytes) -> None:
        if not self.started:
            await self._start([])
        await self._send(
            {"type": "http.response.body", "body": length_prefixed(data), "more_body": True}
        )

    async def finish(self, status: Status, message: str = "") -> None:
        if self.finished:
            return
        self.finished = True
        status_headers = [(b"grpc-status", str(int(status)).encode())]
        if message:
            status_headers.append((b"grpc-message", encode_grpc_message(message)))
        if not self._trailers:
            # No trailers (not HTTP/2): the best a gRPC-ish client can get is a status header.
            if not self.started:
                await self._start(status_headers)
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        if not self.started:
            await self._start([])
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})
        await self._send({"type": "http.response.trailers", "headers": status_headers})


async def send_status(scope: Scope, send: Send, status: int, message: str = "") -> None:
    """Answer a gRPC call with no messages, just a status (e.g. UNAUTHENTICATED).

    Sent as response headers followed by trailers: grpcio and grpc-js report
    ``UNKNOWN: Stream removed`` for a status in headers followed by an empty DATA frame (what
    an ASGI start + empty body produces), so the status must travel in real trailers.
    """
    await _Responder(scope, send).finish(Status(status), message)


async def _read_request(receive: Receive, limit: int) -> tuple[bytes | None, bool]:
    """The whole request body, or (None, True) if the client went away first."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            return None, True
        body = message.get("body", b"")
        size += len(body)
        if size > limit + 5:
            raise GrpcError(Status.RESOURCE_EXHAUSTED, f"request message larger than {limit} bytes")
        chunks.append(body)
        if not message.get("more_body", False):
            return b"".join(chunks), False


def _unary_message(body: bytes) -> bytes:
    if len(body) < 5:
        raise GrpcError(Status.INVALID_ARGUMENT, "missing request message")
    if body[0] != 0:
        raise GrpcError(
            Status.UNIMPLEMENTED, "compressed request messages are not supported (use identity)"
        )
    length = int.from_bytes(body[1:5], "big")
    if len(body) != 5 + length:
        raise GrpcError(Status.INVALID_ARGUMENT, "expected exactly one request message")
    return body[5:]


class GrpcAsgiApp:
    """Serves server-streaming gRPC methods (``/<pkg>.<Service>/<Method>`` → handler)."""

    def __init__(self, methods: Mapping[str, Handler], max_request_bytes: int = MAX_REQUEST_BYTES):
        self.methods = dict(methods)
        self.max_request_bytes = max_request_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        responder = _Responder(scope, send)
        handler = self.methods.get(scope["path"])
        if scope.get("method") != "POST" or handler is None:
            await responder.finish(Status.UNIMPLEMENTED, f"unknown method {scope['path']}")
            return
        metadata = _metadata(scope)
        timeout = parse_timeout(metadata.get("grpc-timeout"))
        deadline = None if timeout is None else time.monotonic() + timeout
        context = CallContext(scope["path"], metadata, scope, deadline)
        try:
            body, gone = await asyncio.wait_for(
                _read_request(receive, self.max_request_bytes), timeout
            )
            if gone:
                return
            assert body is not None
            request = _unary_message(body)
        except TimeoutError:
            await responder.finish(Status.DEADLINE_EXCEEDED, "deadline exceeded")
            return
        except GrpcError as exc:
            await responder.finish(exc.status, exc.message)
            return
        await self._stream(handler(request, context), receive, responder, deadline)

    async def _stream(
        self,
        frames: AsyncIterator[bytes],
        receive: Receive,
        responder: _Responder,
        deadline: float | None,
    ) -> None:
        async def pump() -> None:
            try:
                async for frame in frames:
                    await responder.message(frame)
            finally:
                # Closing the handler's iterator closes the executor's: engine work stops.
                aclose = getattr(frames, "aclose", None)
                if aclose is not None:
                    await aclose()

        async def watch_disconnect() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        streaming = asyncio.create_task(pump(), name="grpc-stream")
        watcher = asyncio.create_task(watch_disconnect(), name="grpc-disconnect")
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            done, _ = await asyncio.wait(
                {streaming, watcher}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            # The server is shutting down (or the connection task was cancelled).
            await _cancel(streaming)
            await _cancel(watcher)
            raise
        if streaming not in done:
            await _cancel(streaming)
            await _cancel(watcher)
            if watcher in done:
                log.info("grpc call cancelled by the client")
            else:
                await responder.finish(Status.DEADLINE_EXCEEDED, "deadline exceeded")
            return
        await _cancel(watcher)
        exc = streaming.exception()
        if exc is None:
            await responder.finish(Status.OK)
        elif isinstance(exc, GrpcError):
            await responder.finish(exc.status, exc.message)
        else:
            log.error("grpc handler failed", exc_info=exc)
            await responder.finish(Status.INTERNAL, "internal error (see the server log)")


async def _cancel(task: asyncio.Task[None]) -> None:
    if task.done():
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
