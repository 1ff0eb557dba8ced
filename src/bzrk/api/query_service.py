"""The query service's app on its own port (9510): gRPC and HTTP behind the internal-token check.

Every request must carry ``Authorization: Bearer <gateway-signed JWT>`` for audience
``query``; anything else gets 401 (HTTP) or ``UNAUTHENTICATED`` (gRPC). The verified
:class:`~bzrk.auth.internal.Principal` is put in ``scope["bzrk.principal"]`` for the surfaces.

Routing, by what the request is:

* ``content-type: application/grpc*``  → :mod:`bzrk.api.grpc` (``query.QueryService``)
* ``/mcp``                              → :mod:`bzrk.api.mcp`
* ``/v1/rest/...``, ``/v2/rest/...``    → :mod:`bzrk.api.adx`
* anything else                        → :mod:`bzrk.api.http` (Berserk JSON ``/query`` etc.)
"""

from __future__ import annotations

import json

from bzrk.api.adx.app import create_app as create_adx_app
from bzrk.api.grpc.server import send_status as send_grpc_status
from bzrk.api.grpc.service import create_app as create_grpc_app
from bzrk.api.http.app import create_app as create_http_app
from bzrk.api.mcp.app import create_app as create_mcp_app
from bzrk.auth.internal import InternalKeys, InvalidInternalToken, verify_internal_token
from bzrk.server.context import AppContext
from bzrk.types import ASGIApp, Receive, Scope, Send

QUERY_AUDIENCE = "query"
PRINCIPAL_KEY = "bzrk.principal"


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def is_grpc(scope: Scope) -> bool:
    return (_header(scope, b"content-type") or "").startswith("application/grpc")


async def _refuse(scope: Scope, send: Send, reason: str) -> None:
    if is_grpc(scope):
        await send_grpc_status(scope, send, 16, "internal token required: " + reason[:200])
        return
    body = json.dumps(
        {
            "error": {
                "code": "Unauthenticated",
                "message": "this service accepts only gateway-signed tokens",
            }
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="bzrk-internal"'),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class QueryServiceApp:
    def __init__(self, ctx: AppContext) -> None:
        self.keys: InternalKeys = ctx.keys
        self.grpc = create_grpc_app(ctx)
        self.mcp = create_mcp_app(ctx)
        self.adx = create_adx_app(ctx)
        self.http = create_http_app(ctx)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.http(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            principal = verify_internal_token(
                self.keys, _header(scope, b"authorization"), QUERY_AUDIENCE
            )
        except InvalidInternalToken as exc:
            if is_grpc(scope):
                # Ending an HTTP/2 stream mid-upload makes Hypercorn drop the connection
                # (grpcio then sees UNAVAILABLE): read the request to its end first (bounded).
                drained = 0
                while drained < 4 * 1024 * 1024:
                    message = await receive()
                    drained += len(message.get("body", b""))
                    if message["type"] != "http.request" or not message.get("more_body", False):
                        break
            await _refuse(scope, send, str(exc))
            return
        scope[PRINCIPAL_KEY] = principal
        path: str = scope["path"]
        if is_grpc(scope):
            await self.grpc(scope, receive, send)
        elif path == "/mcp" or path.startswith("/mcp/"):
            await self.mcp(scope, receive, send)
        elif path.startswith(("/v1/rest/", "/v2/rest/")):
            await self.adx(scope, receive, send)
        else:
            await self.http(scope, receive, send)


def create_app(ctx: AppContext) -> ASGIApp:
    return QueryServiceApp(ctx)
