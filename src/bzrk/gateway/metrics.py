"""Gateway metrics: requests by route and status, auth refusals by reason, forward latency.

:class:`GatewayMetrics` wraps the gateway app (``server/run.py``) and watches each request's
answer: its status (for gRPC calls also the ``grpc-status`` of the headers or trailers), when
its first byte left, and when it ended. Routes are a fixed table of path prefixes, so a caller
cannot create label values. The families are on the gateway listener's ``/metrics``.
"""

from __future__ import annotations

import time

import grpc
from prometheus_client import Counter, Histogram

from bzrk.metrics import LATENCY_BUCKETS, registry
from bzrk.types import ASGIApp, Message, Receive, Scope, Send

_REGISTRY = registry("gateway")

# (path, exact?) -> route label; first match wins. Keep in step with gateway/app.py's routes.
_ROUTES: tuple[tuple[str, bool, str], ...] = (
    ("/api/grpc/", False, "/api/grpc"),
    ("/v1/rest/query", True, "/v1/rest/query"),
    ("/v2/rest/query", True, "/v2/rest/query"),
    ("/v1/rest/mgmt", True, "/v1/rest/mgmt"),
    ("/v1/rest/auth/metadata", True, "/v1/rest/auth/metadata"),
    ("/query", True, "/query"),
    ("/mcp", True, "/mcp"),
    ("/api/v1/admin/", False, "/api/v1/admin"),
    ("/api/v1/databases", False, "/api/v1/databases"),
    ("/api/v1/runs", False, "/api/v1/runs"),
    ("/api/v1/library/", False, "/api/v1/library"),
    ("/api/v1/me", True, "/api/v1/me"),
    ("/oauth/", False, "/oauth"),
    ("/.well-known/", False, "/.well-known"),
    ("/device", False, "/device"),
    ("/auth/", False, "/auth"),
    ("/api/", False, "other_api"),
    ("/v1/", False, "other_api"),
    ("/v2/", False, "other_api"),
)
# Routes the gateway forwards to a service (the rest it answers itself).
FORWARDED = frozenset(
    {
        "/api/grpc",
        "/v1/rest/query",
        "/v2/rest/query",
        "/v1/rest/mgmt",
        "/query",
        "/mcp",
        "/api/v1/databases",
        "/api/v1/runs",
        "ui",
    }
)
# Answers the gateway gives without forwarding, even on a forwarded route.
_REFUSALS = frozenset({401, 403, 413, 415, 426, 429})
_GRPC_CODES = {code.value[0]: code.name for code in grpc.StatusCode}
_GRPC_UNAUTHENTICATED, _GRPC_PERMISSION_DENIED = 16, 7

REQUESTS = Counter(
    "bzrk_gateway_requests_total",
    "Requests answered by the gateway, by route and HTTP status.",
    ["route", "status"],
    registry=_REGISTRY,
)
DURATION = Histogram(
    "bzrk_gateway_request_duration_seconds",
    "Time from a request's arrival to the end of its answer (streamed answers included).",
    ["route"],
    buckets=LATENCY_BUCKETS,
    registry=_REGISTRY,
)
FORWARD = Histogram(
    "bzrk_gateway_forward_duration_seconds",
    "Forward latency: from a request's arrival to the first byte of the service's answer "
    "(authentication, token signing and the upstream's time to respond).",
    ["route"],
    buckets=LATENCY_BUCKETS,
    registry=_REGISTRY,
)
AUTH_REFUSALS = Counter(
    "bzrk_gateway_auth_refusals_total",
    "Requests refused for their credentials, by route and reason (missing_credentials, "
    "invalid_credentials, forbidden).",
    ["route", "reason"],
    registry=_REGISTRY,
)
GRPC_CALLS = Counter(
    "bzrk_gateway_grpc_calls_total",
    "gRPC calls through /api/grpc, by the gRPC status they ended with.",
    ["code"],
    registry=_REGISTRY,
)


def route_of(path: str) -> str:
    """The route label of a request path (``ui`` for everything the UI serves)."""
    for prefix, exact, label in _ROUTES:
        if path == prefix or (not exact and path.startswith(prefix)):
            return label
        if not exact and path == prefix.rstrip("/"):
            return label
    return "ui"


def _has_credentials(scope: Scope) -> bool:
    for key, value in scope.get("headers", ()):
        if key.lower() == b"authorization" or (
            key.lower() == b"cookie" and b"bzrk_session" in value
        ):
            return True
    return False


def _grpc_status(headers: list[tuple[bytes, bytes]]) -> int | None:
    for key, value in headers:
        if key.lower() == b"grpc-status":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class GatewayMetrics:
    """ASGI middleware recording the gateway families for every HTTP request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived = time.monotonic()
        route = route_of(scope.get("path", ""))
        status = 0
        grpc_code: int | None = None
        # gRPC answers start with headers either way; the upstream's first byte is a message.
        first_byte = route in FORWARDED

        async def watching(message: Message) -> None:
            nonlocal status, grpc_code, first_byte
            if message["type"] == "http.response.start":
                status = int(message["status"])
                grpc_code = _grpc_status(list(message.get("headers", ())))
                if first_byte and route != "/api/grpc":
                    first_byte = False
                    if status not in _REFUSALS:
                        FORWARD.labels(route).observe(time.monotonic() - arrived)
            elif message["type"] == "http.response.body":
                if first_byte and message.get("body"):
                    first_byte = False
                    FORWARD.labels(route).observe(time.monotonic() - arrived)
            elif message["type"] == "http.response.trailers":
                found = _grpc_status(list(message.get("headers", ())))
                grpc_code = found if found is not None else grpc_code
            await send(message)

        try:
            await self.app(scope, receive, watching)
        finally:
            self._record(scope, route, status, grpc_code, time.monotonic() - arrived)

    @staticmethod
    def _record(
        scope: Scope, route: str, status: int, grpc_code: int | None, elapsed: float
    ) -> None:
        REQUESTS.labels(route, str(status or 499)).inc()  # 499: the client left first
        DURATION.labels(route).observe(elapsed)
        if route == "/api/grpc" and status == 200:
            code = grpc_code if grpc_code is not None else 2  # no status at all reads as UNKNOWN
            GRPC_CALLS.labels(
                _GRPC_CODES[code] if 0 <= code < len(_GRPC_CODES) else "UNKNOWN"
            ).inc()
        refused = status in (401, 403) or grpc_code in (
            _GRPC_UNAUTHENTICATED,
            _GRPC_PERMISSION_DENIED,
        )
        if refused:
            if status == 403 or grpc_code == _GRPC_PERMISSION_DENIED:
                reason = "forbidden"
            elif _has_credentials(scope):
                reason = "invalid_credentials"
            else:
                reason = "missing_credentials"
            AUTH_REFUSALS.labels(route, reason).inc()
