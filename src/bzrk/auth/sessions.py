"""Browser sessions for the web UI: created by a password login, carried by an HttpOnly cookie.

A session authenticates UI pages, the UI's own calls and the gateway's ``/api/v1`` JSON API —
never ``/mcp``, ``/api/grpc`` or the REST query endpoints (the gateway enforces that). Each
session has a CSRF token that state-changing cookie-authenticated requests must echo.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

import sqlalchemy as sa

from bzrk.auth import tokens
from bzrk.auth.bearer import SESSION, Identity
from bzrk.auth.errors import InvalidToken
from bzrk.auth.internal import USER, Principal
from bzrk.auth.timestamps import is_past
from bzrk.meta import schema
from bzrk.meta.store import MetaStore, new_id

SESSION_PREFIX = "bzrk_ss_"


def create(meta: MetaStore, user_id: str, now: datetime, ttl_s: int) -> tuple[str, str]:
    """A new session for ``user_id``: ``(cookie value, csrf token)``."""
    value = tokens.generate(SESSION_PREFIX)
    csrf = secrets.token_urlsafe(24)
    with meta.begin() as conn:
        conn.execute(
            sa.insert(schema.auth_sessions).values(
                id=new_id(),
                token_hash=tokens.hash_token(value),
                user_id=user_id,
                csrf_token=csrf,
                created_at=now,
                expires_at=now + timedelta(seconds=ttl_s),
            )
        )
    return value, csrf


def verify(meta: MetaStore, value: str, now: datetime) -> Identity:
    """The identity of a live session cookie.

    Raises:
        InvalidToken: unknown, expired, revoked, or the user is disabled.
    """
    if not value.startswith(SESSION_PREFIX) or len(value) > 128:
        raise InvalidToken("malformed session")
    s, u = schema.auth_sessions, schema.users
    with meta.engine.connect() as conn:
        row = conn.execute(
            sa.select(s, u.c.username, u.c.role, u.c.disabled)
            .join(u, u.c.id == s.c.user_id)
            .where(s.c.token_hash == tokens.hash_token(value))
        ).first()
    if row is None or not tokens.matches(value, row.token_hash):
        raise InvalidToken("unknown session")
    if row.revoked_at is not None or is_past(row.expires_at, now) or row.disabled:
        raise InvalidToken("session ended")
    return Identity(
        Principal(USER, row.user_id, row.username, (row.role,)),
        SESSION,
        row.user_id,
        csrf_token=row.csrf_token,
    )


def end(meta: MetaStore, value: str, now: datetime) -> None:
    s = schema.auth_sessions
    with meta.begin() as conn:
        conn.execute(
            sa.update(s)
            .where(s.c.token_hash == tokens.hash_token(value), s.c.revoked_at.is_(None))
            .values(revoked_at=now)
        )
