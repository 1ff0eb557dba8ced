"""Users, service principals and their tokens, ingest tokens: creation, lookup, revocation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from bzrk.auth import tokens
from bzrk.auth.passwords import hash_password
from bzrk.meta import schema
from bzrk.meta.store import Conflict, MetaStore, NotFound, new_id, utcnow

ROLES = ("admin", "member")


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A token just created: the only moment its value is known in clear."""

    id: str
    value: str
    prefix: str


def create_user(
    meta: MetaStore, username: str, password: str | None, role: str, display_name: str = ""
) -> str:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    user_id = new_id()
    try:
        with meta.begin() as conn:
            conn.execute(
                sa.insert(schema.users).values(
                    id=user_id,
                    username=username,
                    display_name=display_name or username,
                    password_hash=hash_password(password) if password else None,
                    role=role,
                    disabled=False,
                    created_at=utcnow(),
                )
            )
    except sa.exc.IntegrityError as exc:
        raise Conflict(f"user '{username}' already exists") from exc
    return user_id


def create_service_principal(
    meta: MetaStore,
    name: str,
    role: str = "member",
    display_name: str = "",
    created_by: str | None = None,
) -> str:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    sp_id = new_id()
    try:
        with meta.begin() as conn:
            conn.execute(
                sa.insert(schema.service_principals).values(
                    id=sp_id,
                    name=name,
                    display_name=display_name or name,
                    role=role,
                    created_by=created_by,
                    created_at=utcnow(),
                )
            )
    except sa.exc.IntegrityError as exc:
        raise Conflict(f"service principal '{name}' already exists") from exc
    return sp_id


def create_service_principal_token(
    meta: MetaStore, service_principal_id: str, name: str, expires_at: datetime | None = None
) -> IssuedToken:
    value = tokens.generate(tokens.SERVICE_PRINCIPAL_PREFIX)
    token_id = new_id()
    with meta.begin() as conn:
        conn.execute(
            sa.insert(schema.service_principal_tokens).values(
                id=token_id,
                service_principal_id=service_principal_id,
                name=name,
                token_hash=tokens.hash_token(value),
                token_prefix=tokens.display_prefix(value),
                created_at=utcnow(),
                expires_at=expires_at,
            )
        )
    return IssuedToken(token_id, value, tokens.display_prefix(value))


def create_ingest_token(meta: MetaStore, name: str, database: str, table: str) -> IssuedToken:
    table_row = meta.get_table(database, table)
    value = tokens.generate(tokens.INGEST_PREFIX)
    token_id = new_id()
    with meta.begin() as conn:
        conn.execute(
            sa.insert(schema.ingest_tokens).values(
                id=token_id,
                name=name,
                table_id=table_row.id,
                token_hash=tokens.hash_token(value),
                token_prefix=tokens.display_prefix(value),
                created_at=utcnow(),
            )
        )
    return IssuedToken(token_id, value, tokens.display_prefix(value))


@dataclass(frozen=True, slots=True)
class IngestTokenInfo:
    id: str
    name: str
    table_id: str
    database: str
    table: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None


def resolve_ingest_token(meta: MetaStore, value: str) -> IngestTokenInfo:
    """The live ingest token with this value; :class:`NotFound` if unknown or revoked."""
    if not value.startswith(tokens.INGEST_PREFIX):
        raise NotFound("not an ingest token")
    t = schema.ingest_tokens
    with meta.engine.connect() as conn:
        row = conn.execute(sa.select(t).where(t.c.token_hash == tokens.hash_token(value))).first()
    if row is None or row.revoked_at is not None or not tokens.matches(value, row.token_hash):
        raise NotFound("unknown or revoked ingest token")
    table = meta.get_table_by_id(row.table_id)
    return IngestTokenInfo(
        row.id,
        row.name,
        row.table_id,
        table.database,
        table.name,
        row.token_prefix,
        row.created_at,
        row.revoked_at,
    )
