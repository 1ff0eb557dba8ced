"""Access and refresh tokens for people: the CLI's (device flow) and MCP hosts' (OAuth).

A login yields a *family*: one access token and one refresh token. Refreshing spends the
refresh token and issues a new pair in the same family (rotation). Presenting a refresh token
that was already spent means it leaked, so the whole family is revoked (OAuth 2.1 §4.3.1,
RFC 9700 §4.14.2). Tokens are opaque; the store keeps SHA-256 hashes only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from bzrk.auth import tokens
from bzrk.auth.bearer import canonical_resource
from bzrk.auth.errors import OAuthError
from bzrk.auth.timestamps import is_past
from bzrk.meta import schema
from bzrk.meta.store import MetaStore, new_id

CLI = "cli"
OAUTH = "oauth"
CLI_CLIENT_ID = "bzrk-cli"

_PREFIXES = {
    CLI: (tokens.CLI_ACCESS_PREFIX, tokens.CLI_REFRESH_PREFIX),
    OAUTH: (tokens.OAUTH_ACCESS_PREFIX, tokens.OAUTH_REFRESH_PREFIX),
}


@dataclass(frozen=True, slots=True)
class Lifetimes:
    """How long each credential lives; every default is finite."""

    cli_access_s: int = 3600
    oauth_access_s: int = 3600
    refresh_s: int = 30 * 24 * 3600
    authorization_code_s: int = 120
    device_code_s: int = 600
    device_poll_interval_s: int = 5
    session_s: int = 14 * 24 * 3600


@dataclass(frozen=True, slots=True)
class TokenPair:
    access_token: str
    refresh_token: str
    expires_in: int
    scope: str
    user_id: str = ""  # whose tokens (for the audit log; not part of the response)

    def as_json(self) -> dict[str, object]:
        """The RFC 6749 §5.1 token response body."""
        return {
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "refresh_token": self.refresh_token,
            "scope": self.scope,
        }


def issue_pair(
    conn: sa.Connection,
    *,
    kind: str,
    user_id: str,
    client_id: str,
    resource: str | None,
    scope: str,
    now: datetime,
    lifetimes: Lifetimes,
    family_id: str | None = None,
) -> TokenPair:
    """Insert a new access + refresh token (in ``family_id``, or a new family)."""
    access_prefix, refresh_prefix = _PREFIXES[kind]
    access_ttl = lifetimes.cli_access_s if kind == CLI else lifetimes.oauth_access_s
    family = family_id or new_id()
    access, refresh = tokens.generate(access_prefix), tokens.generate(refresh_prefix)
    common = {
        "kind": kind,
        "family_id": family,
        "user_id": user_id,
        "client_id": client_id,
        "resource": resource,
        "scope": scope,
        "created_at": now,
    }
    conn.execute(
        sa.insert(schema.access_tokens).values(
            id=new_id(),
            token_hash=tokens.hash_token(access),
            expires_at=now + timedelta(seconds=access_ttl),
            **common,
        )
    )
    conn.execute(
        sa.insert(schema.refresh_tokens).values(
            id=new_id(),
            token_hash=tokens.hash_token(refresh),
            expires_at=now + timedelta(seconds=lifetimes.refresh_s),
            **common,
        )
    )
    return TokenPair(access, refresh, access_ttl, scope, user_id)


def revoke_family(conn: sa.Connection, family_id: str, now: datetime) -> None:
    for table in (schema.access_tokens, schema.refresh_tokens):
        conn.execute(
            sa.update(table)
            .where(table.c.family_id == family_id, table.c.revoked_at.is_(None))
            .values(revoked_at=now)
        )


def refresh(
    meta: MetaStore,
    refresh_token: str,
    *,
    client_id: str,
    resource: str | None,
    now: datetime,
    lifetimes: Lifetimes,
) -> TokenPair:
    """Spend ``refresh_token`` for a new pair; a second spend revokes the family.

    A request that is wrong for other reasons (expired, another resource) does not spend it.
    """
    t = schema.refresh_tokens
    with meta.engine.connect() as conn:
        row = conn.execute(
            sa.select(t).where(t.c.token_hash == tokens.hash_token(refresh_token))
        ).first()
    if row is None or not tokens.matches(refresh_token, row.token_hash):
        raise OAuthError("invalid_grant", "unknown refresh token")
    if row.client_id != client_id:
        raise OAuthError("invalid_grant", "refresh token was issued to another client")
    if row.revoked_at is not None:
        raise OAuthError("invalid_grant", "refresh token revoked")
    if row.used_at is None and is_past(row.expires_at, now):
        raise OAuthError("invalid_grant", "refresh token expired")
    if (
        row.used_at is None
        and resource is not None
        and row.resource is not None
        and canonical_resource(resource) != canonical_resource(row.resource)
    ):
        raise OAuthError("invalid_target", "resource does not match the original grant")
    with meta.begin() as conn:
        # Conditional update: of two concurrent spends exactly one wins; the other is a reuse.
        spent = conn.execute(
            sa.update(t).where(t.c.id == row.id, t.c.used_at.is_(None)).values(used_at=now)
        )
        if spent.rowcount == 1:
            return issue_pair(
                conn,
                kind=row.kind,
                user_id=row.user_id,
                client_id=row.client_id,
                resource=row.resource,
                scope=row.scope,
                now=now,
                lifetimes=lifetimes,
                family_id=row.family_id,
            )
        revoke_family(conn, row.family_id, now)
    raise OAuthError("invalid_grant", "refresh token already used; the session was revoked")


def revoke_token(meta: MetaStore, token: str, *, client_id: str | None, now: datetime) -> None:
    """RFC 7009: revoke an access or refresh token (a refresh token takes its family along).

    Unknown tokens, and tokens of another client, are ignored: the endpoint answers 200 anyway.
    """
    digest = tokens.hash_token(token)
    with meta.begin() as conn:
        for table in (schema.refresh_tokens, schema.access_tokens):
            row = conn.execute(sa.select(table).where(table.c.token_hash == digest)).first()
            if row is None:
                continue
            if client_id is not None and row.client_id != client_id:
                return
            if table is schema.refresh_tokens:
                revoke_family(conn, row.family_id, now)
            else:
                conn.execute(
                    sa.update(table)
                    .where(table.c.id == row.id, table.c.revoked_at.is_(None))
                    .values(revoked_at=now)
                )
            return
