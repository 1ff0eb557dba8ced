"""What the gateway's routes share: context, config, clock, rate limiter, upstream client.

Also the small request readers every route uses, each bounded in size.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bzrk.auth import audit
from bzrk.auth.internal import Principal
from bzrk.auth.ratelimit import RateLimiter, Rule
from bzrk.gateway.config import GatewayConfig
from bzrk.gateway.metadata_documents import resolve as metadata_resolve
from bzrk.server.context import AppContext
from bzrk.types import Scope


class BodyTooLarge(Exception):
    """The request body exceeds the gateway's limit (answered with 413)."""


class BadRequestBody(Exception):
    """The body is not the form or JSON document the route expects (answered with 400)."""


@dataclass
class GatewayState:
    ctx: AppContext
    config: GatewayConfig
    limiter: RateLimiter = field(default_factory=RateLimiter)
    clock: Callable[[], float] = time.time
    # How a throttled attempt waits (tests record the delays instead of sleeping).
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    # Host name -> addresses, for metadata-document fetches (tests stand in for DNS).
    resolver: Callable[[str, int], Awaitable[list[str]]] = metadata_resolve
    _http: httpx.AsyncClient | None = None

    # -- URLs this gateway is known by --------------------------------------------------------
    @property
    def base_url(self) -> str:
        return self.ctx.public_url

    @property
    def issuer(self) -> str:
        return self.base_url

    @property
    def mcp_resource(self) -> str:
        return self.base_url + "/mcp"

    @property
    def resource_metadata_url(self) -> str:
        return self.base_url + "/.well-known/oauth-protected-resource/mcp"

    @property
    def secure_cookies(self) -> bool:
        return self.base_url.startswith("https://")

    # -- time, tokens, upstream ---------------------------------------------------------------
    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def sign(self, principal: Principal, audience: str) -> str:
        return self.ctx.keys.sign(
            principal, audience=audience, ttl_s=self.ctx.settings.internal_token_ttl_s
        )

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            limits = self.config.limits
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(
                    connect=limits.upstream_connect_timeout_s,
                    read=limits.upstream_read_timeout_s,
                    write=30.0,
                    pool=10.0,
                ),
                limits=httpx.Limits(max_connections=256, max_keepalive_connections=32),
                follow_redirects=False,
                trust_env=False,
            )
        return self._http

    @property
    def audit(self) -> audit.AuditLog:
        """The process's audit log (shared with the query service's surfaces)."""
        return audit.shared(self.ctx.components, self.ctx.meta)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.audit.flush)
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def refused(self, scope: Scope, exc: Any, surface: str) -> None:
        """Audit a refused credential (an ``authn.Unauthenticated``); a bare 401 is not one."""
        if exc.reason == "no_credential":
            return
        self.audit.record(
            "request_refused",
            outcome=audit.REFUSED,
            reason=exc.reason,
            target=scope.get("path", ""),
            surface=surface,
            address=client_ip(scope),
            details={"token": exc.prefix} if exc.prefix else None,
        )

    # -- abuse resistance ---------------------------------------------------------------------
    def throttle(self, name: str, key: str, rule: Rule) -> Response | None:
        """A 429 answer when ``key`` used up its ``name`` bucket, else ``None``."""
        wait = self.limiter.allow(name, key, rule, self.clock())
        if wait <= 0:
            return None
        self.audit.record(
            "request_refused",
            outcome=audit.REFUSED,
            reason="rate_limited",
            target=name,
            address=key if name.endswith("-ip") else "",
        )
        return self.too_many(wait)

    @staticmethod
    def too_many(wait_s: float) -> Response:
        return JSONResponse(
            {"error": "slow_down", "error_description": "too many attempts; retry later"},
            status_code=429,
            headers={"Retry-After": str(max(1, int(wait_s + 0.999)))},
        )


def client_ip(scope: Scope) -> str:
    # The socket peer, not X-Forwarded-For: a client could claim any address there.
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


async def read_body(request: Request, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _content_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


async def read_form(request: Request, max_bytes: int) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body (repeated keys: the first one wins)."""
    if _content_type(request) != "application/x-www-form-urlencoded":
        raise BadRequestBody("expected application/x-www-form-urlencoded")
    body = await read_body(request, max_bytes)
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=100)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequestBody("malformed form body") from exc
    form: dict[str, str] = {}
    for key, value in pairs:
        form.setdefault(key, value)
    return form


async def read_json_object(request: Request, max_bytes: int) -> dict[str, Any]:
    if _content_type(request) != "application/json":
        raise BadRequestBody("expected application/json")
    body = await read_body(request, max_bytes)
    try:
        value = json.loads(body or b"{}")
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequestBody("malformed JSON body") from exc
    if not isinstance(value, dict):
        raise BadRequestBody("expected a JSON object")
    return value


def is_json(request: Request) -> bool:
    return _content_type(request) == "application/json"
