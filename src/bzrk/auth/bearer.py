"""The bearer-token decision: which identity, if any, a presented token stands for.

``verify_bearer(token, now, meta)`` knows every external token kind by its prefix:

* ``bzrk_sp_…``  service-principal token (until revoked or its optional expiry)
* ``bzrk_at_…``  CLI access token from the device flow (1 h)
* ``bzrk_oat_…`` OAuth access token of an MCP host, bound to one resource (the ``/mcp`` URL)

Lookup is by SHA-256 hash, the final comparison constant-time. Which *surface* may accept
which kind is :func:`check_surface`'s decision. No web framework is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from bzrk.auth import tokens
from bzrk.auth.errors import InvalidToken, WrongAudience
from bzrk.auth.internal import SERVICE_PRINCIPAL as SERVICE_PRINCIPAL_KIND
from bzrk.auth.internal import USER, Principal
from bzrk.auth.timestamps import is_past
from bzrk.meta import schema
from bzrk.meta.store import MetaStore

SERVICE_PRINCIPAL = "service_principal"
CLI_TOKEN = "cli"
OAUTH_TOKEN = "oauth"
SESSION = "session"

# Surfaces a request can hit; OAuth tokens are good for MCP only (see check_surface).
MCP_SURFACE = "mcp"
MAX_TOKEN_CHARS = 256


@dataclass(frozen=True, slots=True)
class Identity:
    """An authenticated caller: the principal forwarded inward, and how it proved itself."""

    principal: Principal
    credential: str  # service_principal | cli | oauth | session
    account_id: str  # users.id or service_principals.id
    resource: str | None = None
    scope: str = ""
    csrf_token: str | None = None  # sessions only


def _well_formed(token: str) -> bool:
    return 0 < len(token) <= MAX_TOKEN_CHARS and token.isascii() and token.isprintable()


def verify_bearer(token: str, now: datetime, meta: MetaStore) -> Identity:
    """The identity behind ``token`` at ``now``.

    Raises:
        InvalidToken: malformed, unknown, expired, revoked, or its account is disabled.
    """
    if not _well_formed(token):
        raise InvalidToken("malformed token")
    if token.startswith(tokens.SERVICE_PRINCIPAL_PREFIX):
        return _service_principal(token, now, meta)
    if token.startswith((tokens.CLI_ACCESS_PREFIX, tokens.OAUTH_ACCESS_PREFIX)):
        return _user_access_token(token, now, meta)
    raise InvalidToken("unknown token format")


def _service_principal(token: str, now: datetime, meta: MetaStore) -> Identity:
    t, sp = schema.service_principal_tokens, schema.service_principals
    with meta.engine.connect() as conn:
        row = conn.execute(
            sa.select(t, sp.c.name.label("sp_name"), sp.c.role)
            .join(sp, sp.c.id == t.c.service_principal_id)
            .where(t.c.token_hash == tokens.hash_token(token))
        ).first()
    if row is None or not tokens.matches(token, row.token_hash):
        raise InvalidToken("unknown service-principal token")
    if row.revoked_at is not None:
        raise InvalidToken("service-principal token revoked")
    if is_past(row.expires_at, now):
        raise InvalidToken("service-principal token expired")
    return Identity(
        Principal(SERVICE_PRINCIPAL_KIND, row.service_principal_id, row.sp_name, (row.role,)),
        SERVICE_PRINCIPAL,
        row.service_principal_id,
    )


def _user_access_token(token: str, now: datetime, meta: MetaStore) -> Identity:
    t, u = schema.access_tokens, schema.users
    with meta.engine.connect() as conn:
        row = conn.execute(
            sa.select(t, u.c.username, u.c.role, u.c.disabled)
            .join(u, u.c.id == t.c.user_id)
            .where(t.c.token_hash == tokens.hash_token(token))
        ).first()
    if row is None or not tokens.matches(token, row.token_hash):
        raise InvalidToken("unknown access token")
    expected_kind = OAUTH_TOKEN if token.startswith(tokens.OAUTH_ACCESS_PREFIX) else CLI_TOKEN
    if row.kind != expected_kind:
        raise InvalidToken("token kind mismatch")
    if row.revoked_at is not None:
        raise InvalidToken("access token revoked")
    if is_past(row.expires_at, now):
        raise InvalidToken("access token expired")
    if row.disabled:
        raise InvalidToken("account disabled")
    return Identity(
        Principal(USER, row.user_id, row.username, (row.role,)),
        row.kind,
        row.user_id,
        resource=row.resource,
        scope=row.scope,
    )


def canonical_resource(url: str) -> str:
    """RFC 8707 / MCP canonical form: lowercase scheme and host, no fragment or trailing slash."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/") if parts.path != "/" else ""
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def check_surface(identity: Identity, surface: str, mcp_resource: str) -> None:
    """Refuse a token on a surface it was not issued for.

    OAuth access tokens are audience-bound to this gateway's ``/mcp`` resource, so they work
    on ``/mcp`` only; service-principal and CLI tokens work on every bearer surface.

    Raises:
        WrongAudience: an OAuth token elsewhere than ``/mcp``, or bound to another resource.
    """
    if identity.credential != OAUTH_TOKEN:
        return
    if surface != MCP_SURFACE:
        raise WrongAudience(f"OAuth access tokens are valid on /mcp only, not on {surface}")
    if identity.resource is None or canonical_resource(identity.resource) != canonical_resource(
        mcp_resource
    ):
        raise WrongAudience("token was issued for another resource")
