"""The gateway's gRPC forwarder: ``/api/grpc/<pkg>.<Service>/<Method>`` → the query service.

:class:`GrpcForwarder` is an ASGI app for the gateway's HTTP/2 port. For each call it

1. strips the ``/api/grpc`` prefix (and any ``root_path`` a mount set) to get the method path;
2. takes the caller's :class:`~bzrk.auth.internal.Principal` from ``scope["bzrk.principal"]``
   (the gateway authenticates before calling the forwarder), or, if absent and an
   ``authenticate`` callable was given, from ``await authenticate(<authorization header>)``;
   no principal (None, or an exception from ``authenticate``) → ``UNAUTHENTICATED``;
3. forwards the request message unchanged to the query service through one grpcio aio channel
   (``unary_stream`` with pass-through bytes serializers), with the client's metadata minus
   credentials, identity headers and reserved names, and ``authorization: Bearer <sign(principal)>``;
4. streams each response message back as it arrives and ends with the upstream status in
   trailers. A client that goes away cancels the upstream call; an upstream cancel or failure
   reaches the client as its status. The client's ``grpc-timeout`` becomes the upstream deadline.

A request message the client compressed (``grpc-encoding: gzip`` or ``deflate``, as grpcio and
grpc-js send with compression on) is decompressed, within the size limit, and forwarded as an
uncompressed one; answers go back uncompressed, which every client accepts. gRPC needs HTTP/2
trailers: a call over HTTP/1.1 gets ``426 Upgrade Required`` (JSON body, ``Upgrade: h2c``)
instead of a status that cannot be delivered.

Only server-streaming and unary methods (one request message) are forwarded, which is every
method bzrk serves.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import re
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from bzrk.auth.internal import Principal
from bzrk.types import Message, Receive, Scope, Send

log = logging.getLogger("bzrk.gateway.grpc")

PREFIX = "/api/grpc"
PRINCIPAL_KEY = "bzrk.principal"  # where the gateway puts the authenticated Principal
MAX_REQUEST_BYTES = 4 * 1024 * 1024
# Frames are ≤ 4 MiB by contract; the forwarder passes bytes through and should not be the
# component that refuses an oversized one.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024

_METHOD_RE = re.compile(r"^/[A-Za-z_][\w.]*/[A-Za-z_]\w*$")
_TIMEOUT_RE = re.compile(r"^(\d{1,8})([HMSmun])$")
_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}
# Never forwarded: credentials, transport and reserved headers, and anything that could pass
# as an identity the gateway did not vouch for.
_DROP = {
    "authorization",
    "cookie",
    "host",
    "te",
    "connection",
    "content-type",
    "content-length",
    "user-agent",
    "forwarded",
    "proxy-authorization",
}
_DROP_PREFIXES = ("grpc-", "x-forwarded-", ":")
_BZRK_ALLOWED = {"x-bzrk-client-name", "x-bzrk-client-request-id"}

# Message encodings a client may compress its request with (gRPC "Message-Encoding"): zlib's
# window bits for each. Answers are sent uncompressed.
_DECOMPRESS_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
ACCEPT_ENCODING = b"identity, gzip, deflate"
_TRAILERS_EXTENSION = "http.response.trailers"

# The message of an UNAVAILABLE the forwarder could not deliver upstream (the CLI keys on it).
UPSTREAM_UNREACHABLE = "could not reach the query service"

# gRPC status codes used here (the numbers are the wire contract).
_UNIMPLEMENTED, _UNAUTHENTICATED, _INVALID_ARGUMENT, _DEADLINE, _INTERNAL = 12, 16, 3, 4, 13
_RESOURCE_EXHAUSTED = 8

Authenticate = Callable[[str | None], Awaitable[Principal | None]]
Sign = Callable[[Principal], str]


def _timeout(value: str | None) -> float | None:
    match = _TIMEOUT_RE.match(value.strip()) if value else None
    return int(match.group(1)) * _TIMEOUT_UNITS[match.group(2)] if match else None


def _encode_message(message: str) -> bytes:
    out = []
    for byte in message[:1024].encode("utf-8"):
        out.append(chr(byte) if 0x20 <= byte <= 0x7E and byte != 0x25 else f"%{byte:02X}")
    return "".join(out).encode("ascii")


def _forwarded_metadata(headers: list[tuple[bytes, bytes]]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for raw_key, raw_value in headers:
        key = raw_key.decode("latin-1").lower()
        if key in _DROP or key.startswith(_DROP_PREFIXES):
            continue
        if key.startswith("x-bzrk-") and key not in _BZRK_ALLOWED:
            continue
        if key.endswith("-bin"):
            text = raw_value.decode("ascii", "replace")
            with contextlib.suppress(ValueError):
                out.append((key, base64.b64decode(text + "=" * (-len(text) % 4))))
            continue
        out.append((key, raw_value.decode("latin-1")))
    return out


def _target(target: str) -> str:
    for scheme in ("http://", "https://", "grpc://"):
        if target.startswith(scheme):
            return target[len(scheme) :].rstrip("/")
    return target


class _Reply:
    """Response headers on first message or at the end, messages, then trailers."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.finished = False

    async def _start(self) -> None:
        await self._send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/grpc"),
                    (b"grpc-accept-encoding", ACCEPT_ENCODING),
                ],
                "trailers": True,
            }
        )
        self.started = True

    async def message(self, data: bytes) -> None:
        if not self.started:
            await self._start()
        body = b"\x00" + len(data).to_bytes(4, "big") + data
        await self._send({"type": "http.response.body", "body": body, "more_body": True})

    async def finish(self, status: int, message: str = "") -> None:
        if self.finished:
            return
        self.finished = True
        if not self.started:
            await self._start()
        trailers = [(b"grpc-status", str(status).encode())]
        if message:
            trailers.append((b"grpc-message", _encode_message(message)))
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})
        await self._send({"type": "http.response.trailers", "headers": trailers})


async def send_status(send: Send, status: int, message: str = "") -> None:
    """Answer a gRPC call with only a status, in trailers (for the gateway's own refusals).

    grpcio and grpc-js read a status in response headers followed by an empty DATA frame as
    ``UNKNOWN: Stream removed``; headers then trailers is what every client understands.
    """
    await _Reply(send).finish(status, message)


def speaks_grpc(scope: Scope) -> bool:
    """Whether this connection can carry a gRPC answer (HTTP/2, where trailers exist)."""
    return _TRAILERS_EXTENSION in (scope.get("extensions") or {})


async def refuse_http1(scope: Scope, receive: Receive, send: Send) -> bool:
    """Answer a gRPC call over HTTP/1.1 with ``426 Upgrade Required``; False when on HTTP/2.

    A gRPC status travels in trailers, which HTTP/1.1 cannot carry. The request body is read
    first (the gateway bounds its size), so the client sees the answer, not a reset.
    """
    if speaks_grpc(scope):
        return False
    await _drain(receive)
    body = json.dumps(
        {
            "error": {
                "code": "Http2Required",
                "message": "gRPC needs HTTP/2: connect with h2c (prior knowledge) or TLS with "
                "ALPN h2; grpcio, grpc-js and the bzrk CLI do",
            }
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 426,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"upgrade", b"h2c"),
                (b"connection", b"Upgrade"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
    return True


class GrpcForwarder:
    """ASGI app forwarding authenticated gRPC calls to ``target`` (``host:port`` or a URL).

    ``sign(principal)`` returns the internal token for the query service (audience ``query``).
    """

    def __init__(
        self,
        target: str,
        sign: Sign,
        authenticate: Authenticate | None = None,
        *,
        prefix: str = PREFIX,
        max_request_bytes: int = MAX_REQUEST_BYTES,
    ) -> None:
        self.target = _target(target)
        self.authenticate = authenticate
        self.sign = sign
        self.prefix = prefix.rstrip("/")
        self.max_request_bytes = max_request_bytes
        self._channel: grpc.aio.Channel | None = None

    def _get_channel(self) -> grpc.aio.Channel:
        # An aio channel belongs to the event loop it is created in: make it on first use.
        if self._channel is None:
            self._channel = grpc.aio.insecure_channel(
                self.target,
                options=[
                    ("grpc.max_receive_message_length", MAX_RESPONSE_BYTES),
                    ("grpc.max_send_message_length", self.max_request_bytes + 1024),
                    ("grpc.enable_retries", 0),
                ],
            )
        return self._channel

    async def aclose(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    def method_path(self, scope: Scope) -> str:
        path: str = scope.get("path", "")
        root = (scope.get("root_path") or "").rstrip("/")
        if root and path.startswith(root + "/"):
            path = path[len(root) :]
        if path.startswith(self.prefix + "/"):
            path = path[len(self.prefix) :]
        return path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if await refuse_http1(scope, receive, send):
            return
        reply = _Reply(send)
        method = self.method_path(scope)
        content_type = dict(scope.get("headers", ())).get(b"content-type", b"")
        if (
            scope.get("method") != "POST"
            or not content_type.startswith(b"application/grpc")
            or not _METHOD_RE.match(method)
        ):
            await _drain(receive)
            await reply.finish(_UNIMPLEMENTED, f"unknown method {scope.get('path', '')}")
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers", ()))
        principal = await self._principal(scope, headers)
        if principal is None:
            await _drain(receive)
            await reply.finish(_UNAUTHENTICATED, "missing or invalid credentials")
            return
        timeout = _timeout(
            next((v.decode("latin-1") for k, v in headers if k == b"grpc-timeout"), None)
        )
        encoding = next(
            (v.decode("latin-1").strip().lower() for k, v in headers if k == b"grpc-encoding"),
            "identity",
        )
        if encoding != "identity" and encoding not in _DECOMPRESS_WBITS:
            await _drain(receive)
            await reply.finish(
                _UNIMPLEMENTED, f"grpc-encoding {encoding!r} is not supported (gzip, deflate)"
            )
            return
        try:
            message = await asyncio.wait_for(self._read_message(receive, encoding), timeout)
        except TimeoutError:
            await reply.finish(_DEADLINE, "deadline exceeded")
            return
        except _Refused as exc:
            await reply.finish(exc.status, exc.message)
            return
        if message is None:  # the client went away
            return
        metadata = [
            *_forwarded_metadata(headers),
            ("authorization", f"Bearer {self.sign(principal)}"),
        ]
        call = self._get_channel().unary_stream(
            method, request_serializer=None, response_deserializer=None
        )(message, metadata=metadata, timeout=timeout)
        await self._relay(call, receive, reply)

    async def _principal(
        self, scope: Scope, headers: list[tuple[bytes, bytes]]
    ) -> Principal | None:
        principal = scope.get(PRINCIPAL_KEY)
        if isinstance(principal, Principal):
            return principal
        if self.authenticate is None:
            return None
        authorization = next(
            (v.decode("latin-1") for k, v in headers if k.lower() == b"authorization"), None
        )
        try:
            return await self.authenticate(authorization)
        except Exception as exc:  # the gateway's authenticator raises its own error types
            log.info("grpc call refused: %s", type(exc).__name__)
            return None

    async def _read_message(self, receive: Receive, encoding: str = "identity") -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            event: Message = await receive()
            if event["type"] == "http.disconnect":
                return None
            body = event.get("body", b"")
            size += len(body)
            if size > self.max_request_bytes + 5:
                raise _Refused(_RESOURCE_EXHAUSTED, "request message too large")
            chunks.append(body)
            if not event.get("more_body", False):
                break
        data = b"".join(chunks)
        if len(data) < 5 or len(data) != 5 + int.from_bytes(data[1:5], "big"):
            raise _Refused(_INVALID_ARGUMENT, "expected exactly one request message")
        if data[0] == 0:
            return data[5:]
        if data[0] != 1 or encoding == "identity":
            raise _Refused(_INTERNAL, "a compressed message without a grpc-encoding")
        return self._decompress(data[5:], encoding)

    def _decompress(self, payload: bytes, encoding: str) -> bytes:
        inflater = zlib.decompressobj(_DECOMPRESS_WBITS[encoding])
        try:
            # One byte past the limit tells "too large" from "exactly the limit".
            message = inflater.decompress(payload, self.max_request_bytes + 1)
        except zlib.error:
            raise _Refused(_INTERNAL, f"the request message is not valid {encoding}") from None
        if len(message) > self.max_request_bytes or inflater.unconsumed_tail:
            raise _Refused(_RESOURCE_EXHAUSTED, "request message too large once decompressed")
        if not inflater.eof:
            raise _Refused(_INTERNAL, f"the request message is truncated {encoding} data")
        return message

    async def _relay(self, call: Any, receive: Receive, reply: _Reply) -> None:
        async def pump() -> None:
            async for data in call:
                await reply.message(data)

        async def watch_disconnect() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        streaming = asyncio.create_task(pump(), name="grpc-forward")
        watcher = asyncio.create_task(watch_disconnect(), name="grpc-forward-disconnect")
        try:
            done, _ = await asyncio.wait({streaming, watcher}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            call.cancel()
            for task in (streaming, watcher):
                task.cancel()
            raise
        if streaming not in done:
            # The client cancelled (RST_STREAM) or disconnected: cancel upstream too.
            call.cancel()
            streaming.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await streaming
            return
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        exc = streaming.exception()
        if isinstance(exc, grpc.aio.AioRpcError):
            details = exc.details() or ""
            if exc.code() == grpc.StatusCode.UNAVAILABLE and not reply.started:
                # Say which hop failed: the client reached us; we did not reach the service.
                details = f"{UPSTREAM_UNREACHABLE}: {details}"
            await reply.finish(exc.code().value[0], details)
        elif exc is not None:
            log.error("grpc forwarding failed", exc_info=exc)
            await reply.finish(_INTERNAL, "gateway forwarding failed")
        else:
            code = await call.code()
            await reply.finish(code.value[0], (await call.details()) or "")


async def _drain(receive: Receive) -> None:
    """Read the request to its end before answering without it (HTTP/2 resets otherwise)."""
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
