"""The query service's side of authorization: every surface asks here before touching a database.

A thin async layer over :func:`bzrk.auth.permissions.authorize` (which reads the metadata
store, so it runs in a thread) that also writes refusals to the audit log. Each surface maps
a refusal to its own shape: HTTP 403 with code ``AccessDenied`` (``POST /query``,
``/databases…``, ADX), gRPC ``PERMISSION_DENIED``, an MCP tool error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TypeVar

from bzrk.auth import audit, permissions
from bzrk.auth.internal import Principal
from bzrk.auth.permissions import ACCESS_DENIED, Action, Decision, NamedDatabase
from bzrk.server.context import AppContext

__all__ = [
    "ACCESS_DENIED",
    "Action",
    "Decision",
    "queryable",
    "refusal",
    "refusal_now",
    "visible_databases",
]

T = TypeVar("T", bound=NamedDatabase)


def refusal_now(
    ctx: AppContext,
    principal: Principal | None,
    database: str,
    *,
    surface: str,
    action: Action = Action.QUERY,
) -> Decision | None:
    """None when ``principal`` may ``action`` on ``database``; else the refused decision,
    recorded in the audit log. Blocking: from async code use :func:`refusal`."""
    if principal is None:
        return permissions.Decision(
            False, "no_principal", "no authenticated principal", ACCESS_DENIED
        )
    decision = permissions.authorize(ctx.meta, principal, action, database)
    if decision.allowed:
        return None
    audit.shared(ctx.components, ctx.meta).record(
        "request_refused",
        outcome=audit.REFUSED,
        reason=f"{ACCESS_DENIED}:{decision.reason}",
        actor=principal,
        target=f"database:{database}",
        surface=surface,
        details={"action": action.value},
    )
    return decision


async def refusal(
    ctx: AppContext,
    principal: Principal | None,
    database: str,
    *,
    surface: str,
    action: Action = Action.QUERY,
) -> Decision | None:
    """:func:`refusal_now`, in a worker thread when the decision reads the metadata store."""
    if principal is not None:
        decided = permissions.decided_without_store(principal, action, database)
        if decided is not None and decided.allowed:
            return None  # a cluster admin: no store read, no thread hop
    return await asyncio.to_thread(
        refusal_now, ctx, principal, database, surface=surface, action=action
    )


async def visible_databases(
    ctx: AppContext, principal: Principal | None, databases: Iterable[T]
) -> list[T]:
    """The databases of ``databases`` the caller may query (nothing without a principal)."""
    if principal is None:
        return []
    return await asyncio.to_thread(permissions.visible, ctx.meta, principal, databases)


async def queryable(ctx: AppContext, principal: Principal | None) -> Callable[[str], bool]:
    """A test of a database name or id: may the caller query it? (For records that name one,
    such as saved runs: a result stays readable only while its database is.)"""
    if principal is None:
        return lambda _database: False
    if principal.is_admin:
        return lambda _database: True
    allowed = await visible_databases(
        ctx, principal, await asyncio.to_thread(ctx.meta.list_databases)
    )
    names = {db.name for db in allowed} | {db.id for db in allowed}
    return names.__contains__
