"""Streaming HTTP forwarding from the gateway to internal services, with the identity swapped.

Client-sent identity headers and credentials never pass: ``Authorization``, ``Cookie``,
``X-Bzrk-*``, the ``X-Forwarded-*``/``Forwarded`` family and the usual proxy user headers are
dropped, and the gateway adds its own signed token. Bodies stream both ways (no buffering),
so SSE and progressive ADX frames reach the client as they are produced; when the client goes
away the upstream response is closed, which the upstream sees as a disconnect.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterable

import httpx
from starlette.responses import Response, StreamingResponse

from bzrk.types import Receive, Scope, Send

log = logging.getLogger("bzrk.gateway")

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
# Headers through which a client could claim an identity or a provenance it does not have.
IDENTITY_HEADERS = frozenset(
    {
        "authorization",
        "cookie",
        "forwarded",
        "x-real-ip",
        "x-remote-user",
        "remote-user",
        "x-user",
        "x-email",
        "x-user-id",
        "on-behalf-of",
        "x-service-token",
    }
)
IDENTITY_PREFIXES = ("x-bzrk-", "x-forwarded-", "x-auth-request-", "x-ms-client-principal")


def is_identity_header(name: str) -> bool:
    lower = name.lower()
    return lower in IDENTITY_HEADERS or lower.startswith(IDENTITY_PREFIXES)


def upstream_headers(scope: Scope, internal_token: str | None) -> list[tuple[str, str]]:
    """The client's headers minus hop-by-hop and identity ones, plus the gateway's own."""
    out: list[tuple[str, str]] = []
    host = ""
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        if name == "host":
            host = raw_value.decode("latin-1")
        if name in HOP_BY_HOP or is_identity_header(name):
            continue
        out.append((name, raw_value.decode("latin-1")))
    client = scope.get("client")
    if client:
        out.append(("x-forwarded-for", str(client[0])))
    out.append(("x-forwarded-proto", scope.get("scheme", "http")))
    if host:
        out.append(("x-forwarded-host", host))
    if internal_token is not None:
        out.append(("authorization", f"Bearer {internal_token}"))
    return out


def _content_length(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            return value.decode("latin-1")
    return None


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        lower = name.lower()
        if lower == b"transfer-encoding" or (lower == b"content-length" and value.strip() != b"0"):
            return True
    return False


class RequestBody:
    """The request body as ``receive`` delivers it, remembering whether it was read to the end."""

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self.finished = False

    async def chunks(self) -> AsyncIterator[bytes]:
        while not self.finished:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.finished = True
                return
            chunk = message.get("body", b"")
            self.finished = not message.get("more_body", False)
            if chunk:
                yield chunk

    async def drain(self, max_bytes: int) -> bool:
        """Read the rest and drop it; False if the client went away or it passed ``max_bytes``.

        An HTTP/1.1 connection can carry the next request only once this one was read to its
        end, so a refusal that did not read the body reads it here (bounded).
        """
        dropped = 0
        while not self.finished:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.finished = True
                return False
            dropped += len(message.get("body", b""))
            self.finished = not message.get("more_body", False)
            if dropped > max_bytes:
                return False
        return True


def _error(status: int, code: str, message: str) -> Response:
    body = json.dumps({"error": {"code": code, "message": message}})
    return Response(body, status_code=status, media_type="application/json")


async def forward(
    client: httpx.AsyncClient,
    scope: Scope,
    receive: Receive,
    send: Send,
    *,
    target: str,
    path: str,
    internal_token: str | None,
    extra_headers: Iterable[tuple[str, str]] = (),
    max_drain_bytes: int,
) -> None:
    """Send the request in ``scope`` to ``target + path`` and stream the answer back."""
    headers = [*upstream_headers(scope, internal_token), *extra_headers]
    length = _content_length(scope)
    if length is not None:
        headers.append(("content-length", length))
    query = scope.get("query_string", b"")
    url = target.rstrip("/") + path + (("?" + query.decode("latin-1")) if query else "")
    body = RequestBody(receive)
    content = body.chunks() if _has_body(scope) else None
    request = client.build_request(scope["method"], url, headers=headers, content=content)
    try:
        upstream = await client.send(request, stream=True)
    except httpx.TransportError as exc:
        # Read what the client still sends (bounded by the gateway's limit on this route), so
        # its keep-alive connection carries the next request instead of hanging.
        await body.drain(max_drain_bytes)
        if isinstance(exc, httpx.TimeoutException):
            answer = _error(504, "UpstreamTimeout", "the service did not answer in time")
        else:
            log.warning("upstream %s unreachable: %s", target, type(exc).__name__)
            answer = _error(502, "UpstreamUnavailable", "the service is unavailable")
        await answer(scope, receive, send)
        return

    async def relay() -> AsyncIterator[bytes]:
        try:
            async for chunk in upstream.aiter_raw():
                yield chunk
        finally:
            await upstream.aclose()

    response_headers = [
        (k.decode("latin-1"), v.decode("latin-1"))
        for k, v in upstream.headers.raw
        if k.decode("latin-1").lower() not in HOP_BY_HOP - {"content-length"}
        and k.lower() not in (b"server", b"date")
    ]
    response = StreamingResponse(relay(), status_code=upstream.status_code)
    response.raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response_headers]
    try:
        await response(scope, receive, send)
    finally:
        await upstream.aclose()
