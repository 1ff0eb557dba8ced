"""The gateway's ASGI app: the only authenticated edge of bzrk.

Route table (first match wins; docs/auth.md has the full description):

=====================================  ===========  =======================================
path                                   credential   goes to
=====================================  ===========  =======================================
``/api/grpc/<pkg>.<Service>/<Method>``  bearer       query service over gRPC (GrpcForwarder)
``POST /v1/rest/query|mgmt``,          bearer       query service (ADX REST), streamed
``POST /v2/rest/query``
``GET /v1/rest/auth/metadata``         none         404 here (no Entra ID; Kusto SDKs probe it)
``/mcp`` (every method)                bearer       query service (MCP); 401 names the PRM
``POST /query``                        bearer/UI    query service (Berserk HTTP API)
``/.well-known/oauth-*``, ``/oauth/*``, none        this gateway (OAuth AS, device flow)
``/device``, ``/auth/*``
``/api/v1/me``, ``/api/v1/admin/*``    bearer/UI    this gateway; tables and ingest tokens
                                                    are forwarded to the ingest admin API,
                                                    which decides per database
``GET /api/v1/databases…``,            bearer/UI    query service (``/databases…``, ``/runs…``:
``GET /api/v1/runs…``                               schema discovery and saved runs)
``/api/v1/alerts|workflows|connections`` bearer/UI  query service (alerting, docs/alerts.md)
``/api/v1/library/*``                  bearer/UI    this gateway (saved queries, library_routes)
``/api/v1/dashboards*``                bearer/UI    this gateway (dashboards, dashboard_routes)
other ``/api/``, ``/v1/``, ``/v2/``,   —            404 (internal routes are not reachable)
``/oauth/``, ``/.well-known/``
anything else                          UI session   the UI service
=====================================  ===========  =======================================
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, Router

from bzrk.auth.ratelimit import RateLimiter
from bzrk.gateway import (
    access_routes,
    admin_routes,
    dashboard_routes,
    library_routes,
    oauth_routes,
    session_routes,
)
from bzrk.gateway.authn import (
    GRPC,
    HTTP_API,
    INVALID_TOKEN,
    MCP,
    REST,
    SESSION_COOKIE,
    UI,
    Unauthenticated,
    authenticate,
    challenge,
    header,
    session_identity,
)
from bzrk.gateway.config import GatewayConfig
from bzrk.gateway.cors import Cors
from bzrk.gateway.forward import RequestBody, forward, is_identity_header
from bzrk.gateway.session_routes import LOGIN_CSRF_COOKIE
from bzrk.gateway.state import BadRequestBody, BodyTooLarge, GatewayState
from bzrk.server.context import AppContext
from bzrk.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("bzrk.gateway")

GRPC_PREFIX = "/api/grpc"
PRINCIPAL_KEY = "bzrk.principal"
# Path prefixes that belong to APIs: unknown paths under them are 404 here, never the UI's.
API_PREFIXES = ("/api/", "/v1/", "/v2/", "/oauth/", "/.well-known/", "/mcp/", "/auth/", "/admin/")
QUERY_ROUTES = {
    "/v1/rest/query": REST,
    "/v2/rest/query": REST,
    "/v1/rest/mgmt": REST,
    "/query": HTTP_API,
}
WRITE_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
INGEST_ADMIN_COLLECTIONS = ("databases", "tables", "ingest-tokens")
# Read-only query-service routes the UI needs, under the gateway's /api/v1 (prefix stripped).
QUERY_API_PREFIX = "/api/v1"
QUERY_API_ROUTES = ("/databases", "/databases/{rest:path}", "/runs", "/runs/{rest:path}")
# Alerting routes of the query service (every method; the service decides who may do what).
ALERT_API_ROUTES = tuple(
    p for c in ("alerts", "workflows", "connections") for p in (f"/{c}", f"/{c}/{{rest:path}}")
)


def _json_error(status: int, code: str, message: str) -> Response:
    return Response(
        json.dumps({"error": {"code": code, "message": message}}),
        status_code=status,
        media_type="application/json",
    )


async def _grpc_status(scope: Scope, send: Send, code: int, message: str) -> None:
    """A gRPC status with no messages.

    Over HTTP/2 the status goes in trailers (grpcio rejects a header block followed by an
    empty DATA frame); over HTTP/1.1, where trailers do not survive, in the headers.
    """
    status = [
        (b"grpc-status", str(code).encode()),
        (b"grpc-message", message.encode("ascii", "replace")),
    ]
    if scope.get("http_version") == "2":
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/grpc")],
                "trailers": True,
            }
        )
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        await send({"type": "http.response.trailers", "headers": status})
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/grpc"), *status],
        }
    )
    await send({"type": "http.response.body", "body": b""})


class GatewayApp:
    """Size limits and the gRPC prefix in plain ASGI; everything else through a Router."""

    def __init__(self, state: GatewayState) -> None:
        self.state = state
        self._grpc_forwarder: Any = None
        self.router = Router(
            routes=[
                *oauth_routes.routes(state),
                *session_routes.routes(state),
                *access_routes.routes(state),
                *admin_routes.routes(state),
                *library_routes.routes(state),
                *dashboard_routes.routes(state),
                *[
                    Route(QUERY_API_PREFIX + p, Asgi(self.to_query_api), methods=["GET"])
                    for p in QUERY_API_ROUTES
                ],
                *[
                    Route(QUERY_API_PREFIX + p, Asgi(self.to_query_api), methods=WRITE_METHODS)
                    for p in ALERT_API_ROUTES
                ],
                Route("/v1/rest/auth/metadata", self.no_auth_metadata, methods=["GET"]),
                *[Route(p, Asgi(self.to_query), methods=["POST"]) for p in QUERY_ROUTES],
                Route("/mcp", Asgi(self.to_mcp)),
                Route(
                    "/api/v1/admin/{rest:path}",
                    Asgi(self.to_ingest_admin),
                    methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                ),
            ],
            redirect_slashes=False,
            default=self.fallback,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        limits = self.state.config.limits
        limit = limits.body_limit(scope["path"])
        body = RequestBody(receive)
        length = header(scope, "content-length")
        if length is not None and (not length.strip().isdigit() or int(length) > limit):
            declared = int(length) if length.strip().isdigit() else None
            keep = declared is not None and declared <= limits.max_drain_bytes
            await self._too_large(scope, body, send, limit, keep=keep)
            return
        received = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            body.finished = message["type"] != "http.request" or not message.get("more_body")
            if received > limit:
                raise BodyTooLarge
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if message["status"] >= 400 and not body.finished:
                    message = await self._read_refused_body(scope, body, message)
            await send(message)

        try:
            if scope["path"] == GRPC_PREFIX or scope["path"].startswith(GRPC_PREFIX + "/"):
                await self.to_grpc(scope, counted_receive, tracked_send)
            else:
                await self.router(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            if not started:
                await self._too_large(scope, body, send, limit, keep=True)
        except BadRequestBody as exc:
            if not started:
                await _json_error(400, "BadRequest", str(exc))(scope, receive, send)

    async def _read_refused_body(self, scope: Scope, body: RequestBody, start: Message) -> Message:
        """Read the body of a request refused before it was read (bounded), so the HTTP/1.1
        keep-alive connection carries the next request; past the bound, the answer closes it.

        Without this, a refusal racing a body sent in a second write (as httpx sends one) left
        the connection waiting for a body the server would never read.
        """
        if await body.drain(self.state.config.limits.max_drain_bytes):
            return start
        if not scope.get("http_version", "1.1").startswith("1"):
            return start
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"connection"]
        return {**start, "headers": [*headers, (b"connection", b"close")]}

    async def _too_large(
        self, scope: Scope, body: RequestBody, send: Send, limit: int, *, keep: bool
    ) -> None:
        """413 (gRPC: RESOURCE_EXHAUSTED) for a body over ``limit``.

        The rest of the body is read first (up to ``max_drain_bytes``) so an HTTP/1.1
        keep-alive connection carries the next request; past that, or when the declared length
        is beyond it, the answer says ``Connection: close`` instead.
        """
        if keep:
            keep = await body.drain(self.state.config.limits.max_drain_bytes)
        if (header(scope, "content-type") or "").startswith("application/grpc"):
            await _grpc_status(scope, send, 8, f"request larger than {limit} bytes")
            return
        response = _json_error(
            413, "PayloadTooLarge", f"request bodies are limited to {limit} bytes"
        )
        if not keep and scope.get("http_version", "1.1").startswith("1"):
            response.headers["connection"] = "close"
        await response(scope, body.receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.state.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- forwarding to the query service ------------------------------------------------------
    async def _forward_query(
        self, scope: Scope, receive: Receive, send: Send, surface: str, challenge_for_mcp: bool
    ) -> None:
        state = self.state
        try:
            identity = await authenticate(
                state.ctx.meta, scope, surface, state.mcp_resource, state.now()
            )
        except Unauthenticated as exc:
            state.refused(scope, exc, surface)
            metadata = state.resource_metadata_url if challenge_for_mcp else None
            await challenge(exc.presented, resource_metadata=metadata)(scope, receive, send)
            return
        target = state.ctx.addresses.get("query")
        if not target:
            await _json_error(503, "UpstreamUnavailable", "no query service configured")(
                scope, receive, send
            )
            return
        await forward(
            state.http,
            scope,
            receive,
            send,
            target=target,
            path=scope["path"],
            internal_token=state.sign(identity.principal, "query"),
            max_drain_bytes=state.config.limits.max_drain_bytes,
        )

    async def to_query(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._forward_query(scope, receive, send, QUERY_ROUTES[scope["path"]], False)

    async def to_query_api(self, scope: Scope, receive: Receive, send: Send) -> None:
        inner = {**scope, "path": scope["path"].removeprefix(QUERY_API_PREFIX)}
        await self._forward_query(inner, receive, send, HTTP_API, False)

    async def to_mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._forward_query(scope, receive, send, MCP, True)

    async def no_auth_metadata(self, _request: Request) -> Response:
        # Kusto SDKs probe this for Entra ID settings; 404 tells them to send our token as is.
        return _json_error(404, "NotFound", "no Entra ID (AAD) metadata: use a bzrk bearer token")

    async def to_ingest_admin(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        target = self.state.ctx.addresses.get("otlp_http")
        answer: Response | None = None
        collection = path.removeprefix("/api/v1/admin/").split("/", 1)[0]
        if collection not in INGEST_ADMIN_COLLECTIONS:
            answer = _json_error(404, "NotFound", f"no route {path}")
        else:
            # Any signed-in principal: the ingest admin API decides per database (an editor
            # manages its tables and ingest tokens), with the one authorization function.
            identity = await admin_routes.signed_in(self.state, Request(scope, receive))
            if isinstance(identity, Response):
                answer = identity
            elif not target:
                answer = _json_error(503, "UpstreamUnavailable", "no ingest service configured")
        if answer is not None:
            await answer(scope, receive, send)
            return
        assert target is not None and not isinstance(identity, Response)
        await forward(
            self.state.http,
            scope,
            receive,
            send,
            target=target,
            path="/admin/v1/" + path.removeprefix("/api/v1/admin/"),
            internal_token=self.state.sign(identity.principal, "ingest"),
            max_drain_bytes=self.state.config.limits.max_drain_bytes,
        )

    # -- gRPC ----------------------------------------------------------------------------------
    def grpc_forwarder(self) -> ASGIApp | None:
        if self._grpc_forwarder is None:
            try:
                from bzrk.gateway.grpc_forward import GrpcForwarder  # type: ignore[import-not-found]
            except ImportError:
                return None
            state = self.state
            self._grpc_forwarder = GrpcForwarder(
                state.ctx.addresses.get("query", ""), lambda p: state.sign(p, "query")
            )
        return self._grpc_forwarder

    async def to_grpc(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = self.state
        if not (header(scope, "content-type") or "").startswith("application/grpc"):
            await _json_error(415, "UnsupportedMediaType", "/api/grpc takes gRPC requests only")(
                scope, receive, send
            )
            return
        try:
            identity = await authenticate(
                state.ctx.meta, scope, GRPC, state.mcp_resource, state.now()
            )
        except Unauthenticated as exc:
            state.refused(scope, exc, GRPC)
            await RequestBody(receive).drain(state.config.limits.max_drain_bytes)
            message = (
                INVALID_TOKEN if exc.presented else "authentication required: send a bearer token"
            )
            await _grpc_status(scope, send, 16, message)
            return
        forwarder = self.grpc_forwarder()
        if forwarder is None:
            await RequestBody(receive).drain(state.config.limits.max_drain_bytes)
            await _grpc_status(scope, send, 12, "gRPC forwarding is not available in this build")
            return
        inner = dict(scope)
        inner["headers"] = [
            (k, v) for k, v in scope["headers"] if not is_identity_header(k.decode("latin-1"))
        ]
        inner["root_path"] = scope.get("root_path", "") + GRPC_PREFIX
        inner[PRINCIPAL_KEY] = identity.principal
        await forwarder(inner, receive, send)

    # -- everything else: the UI ---------------------------------------------------------------
    async def fallback(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        if path.startswith(API_PREFIXES) or path in QUERY_ROUTES or path in ("/mcp", "/device"):
            await _json_error(404, "NotFound", f"no route {path}")(scope, receive, send)
            return
        state = self.state
        target = state.ctx.addresses.get("ui")
        if not target:
            await _json_error(404, "NotFound", f"no route {path}")(scope, receive, send)
            return
        identity = await session_identity(state.ctx.meta, scope, state.now())
        token = state.sign(identity.principal, UI) if identity is not None else None
        # forward() drops Cookie with the other credentials; the UI's own cookies go on.
        ui_cookies = _without_our_cookies(header(scope, "cookie"))
        await forward(
            state.http,
            scope,
            receive,
            send,
            target=target,
            path=path,
            internal_token=token,
            extra_headers=[("cookie", ui_cookies)] if ui_cookies else (),
            max_drain_bytes=state.config.limits.max_drain_bytes,
        )


def _without_our_cookies(raw: str | None) -> str:
    if not raw:
        return ""
    kept = [
        part.strip()
        for part in raw.split(";")
        if part.strip()
        and part.strip().partition("=")[0] not in (SESSION_COOKIE, LOGIN_CSRF_COOKIE)
    ]
    return "; ".join(kept)


class Asgi:
    """A bound method served as a plain ASGI app by a Starlette ``Route`` (no Request wrapper)."""

    def __init__(self, handler: ASGIApp) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(scope, receive, send)


def create_app(ctx: AppContext, config: GatewayConfig | None = None) -> ASGIApp:
    """The gateway app for ``ctx`` (``config`` overrides the settings-derived one in tests)."""
    state = GatewayState(ctx, config or GatewayConfig.from_settings(ctx.settings), RateLimiter())
    return Cors(GatewayApp(state))
