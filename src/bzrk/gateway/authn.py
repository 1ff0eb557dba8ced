"""Who is calling: bearer tokens and session cookies read off a request, and the 401 answers.

Which credential a surface accepts is decided here, in one table (:data:`COOKIE_SURFACES`):
bearer tokens everywhere, session cookies only on the UI and the gateway's ``/api/v1`` API —
never on ``/mcp``, ``/api/grpc`` or the REST query endpoints. Failures never say why a token
was refused (the reason goes to the log, with the token's display prefix only).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from datetime import datetime

from starlette.responses import Response

from bzrk.auth import sessions
from bzrk.auth.bearer import Identity, check_surface, verify_bearer
from bzrk.auth.errors import InvalidToken, WrongAudience
from bzrk.auth.tokens import shown
from bzrk.meta.store import MetaStore
from bzrk.types import Scope

log = logging.getLogger("bzrk.gateway.auth")

SESSION_COOKIE = "bzrk_session"
CSRF_HEADER = "x-csrf-token"
MCP, GRPC, REST, HTTP_API, ADMIN, UI = "mcp", "grpc", "rest", "http", "admin", "ui"
COOKIE_SURFACES = frozenset({ADMIN, UI, HTTP_API})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# What a refused presented token is told, on every surface (never why).
INVALID_TOKEN = "the bearer token is invalid, expired or not valid here"


class Unauthenticated(Exception):
    """No acceptable credential; ``presented`` tells whether one was sent at all.

    ``reason`` (for the audit log, never the client): ``invalid_token``, ``wrong_audience``,
    ``session_cookie_not_accepted`` or ``no_credential``; ``prefix`` is the token's display
    prefix when one was presented.
    """

    def __init__(self, presented: bool, reason: str = "no_credential", prefix: str = "") -> None:
        super().__init__("unauthenticated")
        self.presented = presented
        self.reason = reason
        self.prefix = prefix


def header(scope: Scope, name: str) -> str | None:
    wanted = name.encode("latin-1")
    for key, value in scope.get("headers", ()):
        if key.lower() == wanted:
            return value.decode("latin-1")
    return None


def bearer_token(scope: Scope) -> str | None:
    """The token of ``Authorization: Bearer …``; ``""`` for any other Authorization value."""
    value = header(scope, "authorization")
    if value is None:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        return ""
    return token.strip()


def cookie(scope: Scope, name: str) -> str | None:
    raw = header(scope, "cookie")
    if not raw:
        return None
    for part in raw.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def _log_refusal(token: str, reason: str, surface: str) -> None:
    log.info("refused token %s… on %s: %s", shown(token), surface, reason)


async def authenticate(
    meta: MetaStore, scope: Scope, surface: str, mcp_resource: str, now: datetime
) -> Identity:
    """The caller's identity on ``surface``.

    Raises:
        Unauthenticated: nothing acceptable was presented, or it did not verify.
    """
    token = bearer_token(scope)
    if token is not None:
        try:
            identity = await asyncio.to_thread(verify_bearer, token, now, meta)
            check_surface(identity, surface, mcp_resource)
        except InvalidToken as exc:
            _log_refusal(token, str(exc), surface)
            reason = "wrong_audience" if isinstance(exc, WrongAudience) else "invalid_token"
            raise Unauthenticated(True, reason, shown(token)) from exc
        return identity
    if surface in COOKIE_SURFACES:
        from_session = await session_identity(meta, scope, now)
        if from_session is not None:
            return from_session
    return _refuse_cookie_only(scope, surface)


def _refuse_cookie_only(scope: Scope, surface: str) -> Identity:
    if cookie(scope, SESSION_COOKIE) is not None and surface not in COOKIE_SURFACES:
        log.info("refused a session cookie on %s (bearer tokens only)", surface)
        raise Unauthenticated(False, "session_cookie_not_accepted")
    raise Unauthenticated(presented=False)


async def session_identity(meta: MetaStore, scope: Scope, now: datetime) -> Identity | None:
    """The session behind the cookie; for unsafe methods only with a matching CSRF token."""
    value = cookie(scope, SESSION_COOKIE)
    if not value:
        return None
    try:
        identity = await asyncio.to_thread(sessions.verify, meta, value, now)
    except InvalidToken:
        return None
    if scope.get("method", "GET") not in SAFE_METHODS and not csrf_ok(
        identity, header(scope, CSRF_HEADER)
    ):
        return None
    return identity


def csrf_ok(identity: Identity, presented: str | None) -> bool:
    expected = identity.csrf_token or ""
    return bool(expected) and hmac.compare_digest(expected.encode(), (presented or "").encode())


def challenge(presented: bool, *, resource_metadata: str | None = None) -> Response:
    """401 with a ``WWW-Authenticate: Bearer`` challenge (RFC 6750 §3), never a redirect."""
    parts = ['Bearer realm="bzrk"']
    if resource_metadata is not None:
        parts = [f'Bearer resource_metadata="{resource_metadata}"', 'scope="mcp:read"']
    if presented:
        parts.append('error="invalid_token"')
    message = (
        INVALID_TOKEN
        if presented
        else "authentication required: send Authorization: Bearer <token>"
    )
    if resource_metadata is not None:
        body: dict[str, object] = {
            "error": "invalid_token" if presented else "unauthorized",
            "error_description": message,
        }
    else:
        body = {"error": {"code": "Unauthenticated", "message": message}}
    return Response(
        json.dumps(body),
        status_code=401,
        media_type="application/json",
        headers={"WWW-Authenticate": ", ".join(parts), "Cache-Control": "no-store"},
    )


def forbidden(message: str) -> Response:
    return Response(
        json.dumps({"error": {"code": "Forbidden", "message": message}}),
        status_code=403,
        media_type="application/json",
    )
