"""Users, service principals and their tokens, ingest tokens: creation, lookup, revocation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from bzrk.auth import permissions, tokens
from bzrk.auth.internal import SERVICE_PRINCIPAL, USER, parse_key, principal_key
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
    meta: MetaStore,
    username: str,
    password: str | None,
    role: str,
    display_name: str = "",
    created_by: str = "",
) -> str:
    """A new user's id; a member starts with ``viewer`` on ``default`` (docs/auth.md)."""
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
            if role != "admin":
                permissions.grant_default_access(conn, principal_key(USER, user_id), created_by)
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
            if role != "admin":
                by = principal_key(USER, created_by) if created_by else ""
                permissions.grant_default_access(conn, principal_key(SERVICE_PRINCIPAL, sp_id), by)
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


# -- users: lookup, password check, administration ------------------------------------------


@dataclass(frozen=True, slots=True)
class UserInfo:
    id: str
    username: str
    display_name: str
    role: str
    disabled: bool
    created_at: datetime

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "username": self.username,
            "display_name": self.display_name,
            "role": self.role,
            "disabled": self.disabled,
            "created_at": self.created_at.isoformat(),
        }


def _user(row: sa.Row[Any]) -> UserInfo:
    return UserInfo(
        row.id, row.username, row.display_name, row.role, bool(row.disabled), row.created_at
    )


# Verified when the username is unknown, so a miss costs the same time as a wrong password.
_DUMMY_HASH = hash_password("bzrk-timing-equaliser")


def authenticate_password(meta: MetaStore, username: str, password: str) -> UserInfo | None:
    """The enabled user with this username and password, or ``None`` (same cost either way)."""
    from bzrk.auth.passwords import verify_password

    t = schema.users
    with meta.engine.connect() as conn:
        row = conn.execute(sa.select(t).where(t.c.username == username)).first()
    stored = row.password_hash if row is not None and row.password_hash else _DUMMY_HASH
    ok = verify_password(password, stored)
    if row is None or not row.password_hash or not ok or row.disabled:
        return None
    return _user(row)


def get_user(meta: MetaStore, user_id: str) -> UserInfo:
    t = schema.users
    with meta.engine.connect() as conn:
        row = conn.execute(sa.select(t).where(t.c.id == user_id)).first()
    if row is None:
        raise NotFound(f"user '{user_id}' not found")
    return _user(row)


def list_users(meta: MetaStore) -> list[UserInfo]:
    t = schema.users
    with meta.engine.connect() as conn:
        return [_user(r) for r in conn.execute(sa.select(t).order_by(t.c.username))]


def update_user(
    meta: MetaStore,
    user_id: str,
    *,
    role: str | None = None,
    disabled: bool | None = None,
    password: str | None = None,
    display_name: str | None = None,
) -> UserInfo:
    """Change a user; disabling one also ends their sessions and tokens."""
    values: dict[str, object] = {}
    if role is not None:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")
        values["role"] = role
    if disabled is not None:
        values["disabled"] = disabled
    if password is not None:
        values["password_hash"] = hash_password(password)
    if display_name is not None:
        values["display_name"] = display_name
    get_user(meta, user_id)
    if values:
        with meta.begin() as conn:
            conn.execute(sa.update(schema.users).where(schema.users.c.id == user_id).values(values))
    if disabled or password is not None:
        revoke_user_credentials(meta, user_id)
    return get_user(meta, user_id)


def revoke_user_credentials(meta: MetaStore, user_id: str) -> None:
    """End every session and CLI/OAuth token of a user (disable, password change)."""
    now = utcnow()
    with meta.begin() as conn:
        for table in (schema.auth_sessions, schema.access_tokens, schema.refresh_tokens):
            conn.execute(
                sa.update(table)
                .where(table.c.user_id == user_id, table.c.revoked_at.is_(None))
                .values(revoked_at=now)
            )


# -- service principals and their tokens ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServicePrincipalInfo:
    id: str
    name: str
    display_name: str
    role: str
    created_by: str | None
    created_at: datetime

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "display_name": self.display_name,
            "role": self.role,
            "created_by": self.created_by,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class ServicePrincipalTokenInfo:
    id: str
    service_principal_id: str
    name: str
    prefix: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    def as_json(self) -> dict[str, object]:
        def iso(value: datetime | None) -> str | None:
            return value.isoformat() if value is not None else None

        return {
            "id": self.id,
            "service_principal_id": self.service_principal_id,
            "name": self.name,
            "prefix": self.prefix,
            "created_at": iso(self.created_at),
            "expires_at": iso(self.expires_at),
            "revoked_at": iso(self.revoked_at),
        }


def list_service_principals(meta: MetaStore) -> list[ServicePrincipalInfo]:
    t = schema.service_principals
    with meta.engine.connect() as conn:
        rows = conn.execute(sa.select(t).order_by(t.c.name))
        return [
            ServicePrincipalInfo(r.id, r.name, r.display_name, r.role, r.created_by, r.created_at)
            for r in rows
        ]


def get_service_principal(meta: MetaStore, sp_id: str) -> ServicePrincipalInfo:
    for sp in list_service_principals(meta):
        if sp.id == sp_id or sp.name == sp_id:
            return sp
    raise NotFound(f"service principal '{sp_id}' not found")


def delete_service_principal(meta: MetaStore, sp_id: str) -> None:
    sp = get_service_principal(meta, sp_id)
    with meta.begin() as conn:
        conn.execute(
            sa.delete(schema.service_principal_tokens).where(
                schema.service_principal_tokens.c.service_principal_id == sp.id
            )
        )
        conn.execute(
            sa.delete(schema.service_principals).where(schema.service_principals.c.id == sp.id)
        )
        permissions.remove_principal_grants(conn, principal_key(SERVICE_PRINCIPAL, sp.id))


def list_service_principal_tokens(meta: MetaStore, sp_id: str) -> list[ServicePrincipalTokenInfo]:
    sp = get_service_principal(meta, sp_id)
    t = schema.service_principal_tokens
    with meta.engine.connect() as conn:
        rows = conn.execute(
            sa.select(t).where(t.c.service_principal_id == sp.id).order_by(t.c.created_at)
        )
        return [
            ServicePrincipalTokenInfo(
                r.id,
                r.service_principal_id,
                r.name,
                r.token_prefix,
                r.created_at,
                r.expires_at,
                r.revoked_at,
            )
            for r in rows
        ]


def revoke_service_principal_token(meta: MetaStore, sp_id: str, token_id: str) -> None:
    sp = get_service_principal(meta, sp_id)
    t = schema.service_principal_tokens
    with meta.begin() as conn:
        result = conn.execute(
            sa.update(t)
            .where(t.c.id == token_id, t.c.service_principal_id == sp.id)
            .values(revoked_at=sa.func.coalesce(t.c.revoked_at, utcnow()))
        )
    if result.rowcount == 0:
        raise NotFound(f"token '{token_id}' not found for service principal '{sp.name}'")


# -- principals by key: what grants, owners and audit records name ---------------------------


@dataclass(frozen=True, slots=True)
class PrincipalInfo:
    key: str
    kind: str
    id: str
    name: str
    role: str

    def as_json(self) -> dict[str, object]:
        return {
            "key": self.key,
            "kind": self.kind,
            "id": self.id,
            "name": self.name,
            "role": self.role,
        }


def resolve_principal(meta: MetaStore, spec: str) -> PrincipalInfo:
    """The user or service principal ``spec`` names: ``user:<id or username>``,
    ``sp:<id or name>`` (the kind is required: a user and a principal may share a name)."""
    kind, ident = parse_key(spec.strip())
    if kind == USER:
        t = schema.users
        query = sa.select(t.c.id, t.c.username.label("name"), t.c.role).where(
            sa.or_(t.c.id == ident, t.c.username == ident)
        )
    elif kind == SERVICE_PRINCIPAL:
        s = schema.service_principals
        query = sa.select(s.c.id, s.c.name, s.c.role).where(
            sa.or_(s.c.id == ident, s.c.name == ident)
        )
    else:
        raise ValueError("grants name users (user:…) or service principals (sp:…)")
    with meta.engine.connect() as conn:
        rows = conn.execute(query).all()
    exact = [r for r in rows if r.id == ident] or rows
    if len(exact) != 1:
        raise NotFound(f"no {kind.replace('_', ' ')} '{ident}'")
    row = exact[0]
    return PrincipalInfo(principal_key(kind, row.id), kind, row.id, row.name, row.role)


def principal_names(meta: MetaStore, keys: set[str] | None = None) -> dict[str, str]:
    """Display names by principal key (all principals, or those of ``keys``)."""
    names: dict[str, str] = {}
    with meta.engine.connect() as conn:
        for row in conn.execute(sa.select(schema.users.c.id, schema.users.c.username)):
            names[principal_key(USER, row.id)] = row.username
        sps = schema.service_principals
        for row in conn.execute(sa.select(sps.c.id, sps.c.name)):
            names[principal_key(SERVICE_PRINCIPAL, row.id)] = row.name
    return names if keys is None else {k: v for k, v in names.items() if k in keys}


def cluster_admins(meta: MetaStore) -> list[PrincipalInfo]:
    """Every principal with the cluster ``admin`` role (the ``(p, admin, cluster)`` tuples)."""
    out: list[PrincipalInfo] = []
    with meta.engine.connect() as conn:
        u, s = schema.users, schema.service_principals
        for row in conn.execute(
            sa.select(u.c.id, u.c.username).where(u.c.role == "admin", u.c.disabled.is_(False))
        ):
            out.append(
                PrincipalInfo(principal_key(USER, row.id), USER, row.id, row.username, "admin")
            )
        for row in conn.execute(sa.select(s.c.id, s.c.name).where(s.c.role == "admin")):
            out.append(
                PrincipalInfo(
                    principal_key(SERVICE_PRINCIPAL, row.id),
                    SERVICE_PRINCIPAL,
                    row.id,
                    row.name,
                    "admin",
                )
            )
    return out


def set_role(meta: MetaStore, key: str, role: str) -> PrincipalInfo:
    """Give a user or service principal the cluster role ``admin`` or ``member``."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    found = resolve_principal(meta, key)
    table = schema.users if found.kind == USER else schema.service_principals
    with meta.begin() as conn:
        conn.execute(sa.update(table).where(table.c.id == found.id).values(role=role))
    return resolve_principal(meta, found.key)
