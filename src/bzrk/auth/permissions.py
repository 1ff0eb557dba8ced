"""Authorization: permission tuples (principal, relation, database) and the one check.

Berserk keeps permissions as tuples in its ``permissions`` service and every surface asks it
before touching data (``/v1/check``). bzrk does the same in-process: the tuples live in the
metadata store (``grants``), and :func:`authorize` is the check every surface calls — gRPC,
ADX query and management, ``POST /query``, MCP tools, ``/api/v1/databases``, the UI's calls,
ingest-token and table administration, alerts and dashboards.

Relations on a database, each including the ones before it:

* ``viewer`` — query the database, see it and its schema;
* ``editor`` — also create and change its tables, mint and revoke its ingest tokens;
* ``admin``  — also grant and revoke access to it.

The cluster ``admin`` role (the account's ``role``) allows everything on every database,
including ones that do not exist yet. A new member starts with ``viewer`` on ``default``
(:func:`grant_default_access`). The check reads the store every time, so a grant takes effect
on the next request and a revoke within one request, without a restart or a cache to expire.

A refusal does not say whether the database exists: for a caller without a grant, an unknown
database and someone else's database are the same ``AccessDenied``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol, TypeVar

import sqlalchemy as sa

from bzrk.auth.errors import Forbidden
from bzrk.auth.internal import Principal
from bzrk.meta import schema
from bzrk.meta.store import DEFAULT_DATABASE, MetaStore, NotFound, new_id, utcnow

VIEWER, EDITOR, ADMIN = "viewer", "editor", "admin"
# Ordered: a relation includes every relation before it.
RELATIONS = (VIEWER, EDITOR, ADMIN)
_RANK = {relation: rank for rank, relation in enumerate(RELATIONS)}
ACCESS_DENIED = "AccessDenied"
CLUSTER_OBJECT = "cluster"


class Action(StrEnum):
    """What a caller wants to do to a database; :data:`NEEDS` says which relation allows it."""

    QUERY = "query"  # run queries, list it, read its schema and fields
    WRITE = "write"  # create/alter/drop its tables, mint/revoke its ingest tokens
    MANAGE = "manage"  # grant and revoke access to it


NEEDS: dict[Action, str] = {Action.QUERY: VIEWER, Action.WRITE: EDITOR, Action.MANAGE: ADMIN}


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer of :func:`authorize`: allowed, or refused with a code, a reason and a message.

    ``reason`` is for logs and the audit log (``cluster_admin``, ``grant:editor``, ``no_grant``,
    ``needs_editor``, ``needs_admin``, ``needs_cluster_admin``); ``message`` is for the caller.
    """

    allowed: bool
    reason: str
    message: str = ""
    code: str = ""  # ACCESS_DENIED when refused

    def __bool__(self) -> bool:
        return self.allowed


class AccessDenied(Forbidden):
    """A refused :class:`Decision`, raised by :func:`check`."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.message)
        self.decision = decision


_CLUSTER_ADMIN = Decision(True, "cluster_admin")


def _refused(reason: str, message: str) -> Decision:
    return Decision(False, reason, message, ACCESS_DENIED)


def _decide(principal: Principal, action: Action, database: str, relation: str | None) -> Decision:
    needed = NEEDS[action]
    if relation is not None and _RANK[relation] >= _RANK[needed]:
        return Decision(True, f"grant:{relation}")
    who = principal.display_name
    if relation is None:
        return _refused(
            "no_grant",
            f"{who} has no access to database '{database}' (it does not exist, or there is "
            "no grant on it); ask an admin to grant one",
        )
    return _refused(
        f"needs_{needed}",
        f"{who} is {relation} of database '{database}'; {action.value} needs {needed}",
    )


def _relation_on(meta: MetaStore, key: str, database: str) -> str | None:
    """The best relation ``key`` holds on the one database named (or with the id) ``database``."""
    d, g = schema.databases, schema.grants
    query = (
        sa.select(d.c.id, g.c.relation)
        .select_from(d)
        .outerjoin(g, sa.and_(g.c.database_id == d.c.id, g.c.principal == key))
        .where(sa.or_(d.c.name == database, d.c.id == database))
    )
    with meta.engine.connect() as conn:
        rows = conn.execute(query).all()
    if len({row.id for row in rows}) != 1:
        return None  # unknown, or a name that is also another database's id: no access
    held = [row.relation for row in rows if row.relation in _RANK]
    return max(held, key=_RANK.__getitem__) if held else None


def authorize(
    meta: MetaStore, principal: Principal, action: Action, database: str | None
) -> Decision:
    """May ``principal`` do ``action`` on ``database`` (a name or id; ``None``: the cluster)?

    Blocking (one indexed read of the metadata store): async callers use a thread.

    Returns:
        An allowed :class:`Decision`, or a refused one with ``code="AccessDenied"``.
    """
    decided = decided_without_store(principal, action, database)
    if decided is not None:
        return decided
    assert database is not None
    return _decide(principal, action, database, _relation_on(meta, principal.key, database))


def decided_without_store(
    principal: Principal, action: Action, database: str | None
) -> Decision | None:
    """:func:`authorize`'s answer when it needs no tuple (cluster admins, cluster actions);
    None when it must read the store. Lets async callers skip a thread for those."""
    if principal.is_admin:
        return _CLUSTER_ADMIN
    if database is None:
        return _refused(
            "needs_cluster_admin",
            f"{principal.display_name} may not {action.value} the cluster; it needs the admin role",
        )
    return None


def check(meta: MetaStore, principal: Principal, action: Action, database: str | None) -> None:
    """:func:`authorize`, raising :class:`AccessDenied` on a refusal."""
    decision = authorize(meta, principal, action, database)
    if not decision.allowed:
        raise AccessDenied(decision)


class NamedDatabase(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=NamedDatabase)


def visible(
    meta: MetaStore, principal: Principal, databases: Iterable[T], action: Action = Action.QUERY
) -> list[T]:
    """The databases ``principal`` may ``action``: what every listing shows.

    One read of the store for the whole list, each database decided as :func:`authorize` does.
    """
    items = list(databases)
    if principal.is_admin:
        return items
    d, g = schema.databases, schema.grants
    with meta.engine.connect() as conn:
        rows = conn.execute(
            sa.select(d.c.id, d.c.name, g.c.relation)
            .join(g, g.c.database_id == d.c.id)
            .where(g.c.principal == principal.key)
        ).all()
    best: dict[str, str] = {}
    for row in rows:
        if row.relation not in _RANK:
            continue
        for ident in (row.id, row.name):
            if ident not in best or _RANK[row.relation] > _RANK[best[ident]]:
                best[ident] = row.relation
    out = []
    for item in items:
        relation = best.get(item.id) if item.id in best else best.get(item.name)
        if _decide(principal, action, item.name, relation).allowed:
            out.append(item)
    return out


# -- the tuples ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Grant:
    id: str
    principal: str
    relation: str
    database_id: str
    database: str
    created_by: str
    created_at: datetime

    def as_json(self, names: dict[str, str] | None = None) -> dict[str, object]:
        return {
            "id": self.id,
            "principal": self.principal,
            "principal_name": (names or {}).get(self.principal, ""),
            "relation": self.relation,
            "object": f"database:{self.database}",
            "database": self.database,
            "database_id": self.database_id,
            "created_by": self.created_by,
            "created_at": self.created_at.isoformat(),
        }


def _grant_query() -> sa.Select:
    g, d = schema.grants, schema.databases
    return (
        sa.select(g, d.c.name.label("database"))
        .join(d, d.c.id == g.c.database_id)
        .order_by(d.c.name, g.c.principal, g.c.relation)
    )


def _grant(row: sa.Row) -> Grant:
    return Grant(
        row.id,
        row.principal,
        row.relation,
        row.database_id,
        row.database,
        row.created_by,
        row.created_at,
    )


def check_relation(relation: str) -> str:
    if relation not in _RANK:
        raise ValueError(f"unknown relation {relation!r}: one of {', '.join(RELATIONS)}")
    return relation


def list_grants(
    meta: MetaStore, *, principal: str | None = None, database: str | None = None
) -> list[Grant]:
    """Every tuple, or those of one principal key and/or one database (name or id)."""
    query = _grant_query()
    if principal is not None:
        query = query.where(schema.grants.c.principal == principal)
    if database is not None:
        db = meta.get_database(database)
        query = query.where(schema.grants.c.database_id == db.id)
    with meta.engine.connect() as conn:
        return [_grant(row) for row in conn.execute(query)]


def add_grant(
    meta: MetaStore, principal: str, relation: str, database: str, *, by: str
) -> tuple[Grant, bool]:
    """Add the tuple ``(principal, relation, database)``; ``(grant, created)`` — adding one
    that exists changes nothing."""
    check_relation(relation)
    db = meta.get_database(database)
    g = schema.grants
    with meta.begin() as conn:
        existing = conn.execute(
            sa.select(g.c.id).where(
                g.c.principal == principal, g.c.relation == relation, g.c.database_id == db.id
            )
        ).first()
        created = existing is None
        if created:
            conn.execute(
                sa.insert(g).values(
                    id=new_id(),
                    principal=principal,
                    relation=relation,
                    database_id=db.id,
                    created_by=by,
                    created_at=utcnow(),
                )
            )
    found = [
        x for x in list_grants(meta, principal=principal, database=db.id) if x.relation == relation
    ]
    return found[0], created


def remove_grant(meta: MetaStore, principal: str, relation: str, database: str) -> Grant:
    """Remove one tuple; :class:`NotFound` if there is no such grant."""
    check_relation(relation)
    db = meta.get_database(database)
    found = [
        x for x in list_grants(meta, principal=principal, database=db.id) if x.relation == relation
    ]
    if not found:
        raise NotFound(f"{principal} has no {relation} grant on database '{db.name}'")
    with meta.begin() as conn:
        conn.execute(sa.delete(schema.grants).where(schema.grants.c.id == found[0].id))
    return found[0]


def remove_principal_grants(conn: sa.Connection, principal: str) -> None:
    """Drop every tuple of a principal that is going away (in the caller's transaction)."""
    conn.execute(sa.delete(schema.grants).where(schema.grants.c.principal == principal))


def grant_default_access(conn: sa.Connection, principal: str, by: str) -> None:
    """A new member's starting access: ``viewer`` on ``default`` (in the caller's transaction)."""
    d = schema.databases
    default_id = conn.execute(sa.select(d.c.id).where(d.c.name == DEFAULT_DATABASE)).scalar()
    if default_id is None:
        return
    conn.execute(
        sa.insert(schema.grants).values(
            id=new_id(),
            principal=principal,
            relation=VIEWER,
            database_id=default_id,
            created_by=by,
            created_at=utcnow(),
        )
    )
