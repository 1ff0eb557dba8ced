"""Grants and the audit log over HTTP: ``/api/v1/admin/grants`` and ``/api/v1/admin/audit``.

Grants are the permission tuples of :mod:`bzrk.auth.permissions`. A cluster admin manages
every tuple (and the cluster ``admin`` role, as object ``cluster``); a database ``admin``
manages the tuples of that database. Anyone signed in may list their own grants. Every change
is in the audit log, which cluster admins read. docs/auth.md lists the routes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bzrk.auth import accounts, audit, permissions
from bzrk.auth.bearer import Identity
from bzrk.auth.permissions import ACCESS_DENIED, CLUSTER_OBJECT, Action
from bzrk.gateway.admin_routes import require_admin, signed_in
from bzrk.gateway.state import GatewayState, client_ip, read_json_object
from bzrk.meta.store import NotFound

Handler = Callable[[Request, Identity], Awaitable[Response]]
CLUSTER_NAMES = (CLUSTER_OBJECT, "*")


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


class Refused(Exception):
    def __init__(self, decision: permissions.Decision) -> None:
        super().__init__(decision.message)
        self.decision = decision


def _text(body: dict[str, Any] | Any, key: str, max_len: int = 256) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > max_len:
        raise ValueError(f"'{key}' is required: a string of at most {max_len} characters")
    return value.strip()


def routes(state: GatewayState) -> list[Route]:
    meta = state.ctx.meta
    max_bytes = state.config.limits.max_form_bytes

    def guarded(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            identity = await signed_in(state, request)
            if isinstance(identity, Response):
                return identity
            try:
                return await handler(request, identity)
            except Refused as exc:
                state.audit.record(
                    "request_refused",
                    outcome=audit.REFUSED,
                    reason=f"{ACCESS_DENIED}:{exc.decision.reason}",
                    actor=identity.principal,
                    target=request.url.path,
                    surface="admin",
                    address=client_ip(request.scope),
                )
                return _error(403, ACCESS_DENIED, exc.decision.message)
            except NotFound as exc:
                return _error(404, "NotFound", str(exc))
            except ValueError as exc:
                return _error(400, "BadRequest", str(exc))

        return endpoint

    async def may(identity: Identity, database: str | None) -> None:
        decision = await asyncio.to_thread(
            permissions.authorize, meta, identity.principal, Action.MANAGE, database
        )
        if not decision.allowed:
            raise Refused(decision)

    def listing(identity: Identity, principal: str | None, database: str | None) -> list[Any]:
        """Own grants, and those of the databases the caller manages (all, for cluster admins)."""
        grants = permissions.list_grants(meta, principal=principal, database=database)
        me = identity.principal
        managed = {
            db.id for db in permissions.visible(meta, me, meta.list_databases(), Action.MANAGE)
        }
        names = accounts.principal_names(meta)
        out = [
            g.as_json(names) for g in grants if g.principal == me.key or g.database_id in managed
        ]
        if me.is_admin and database is None:
            for admin in accounts.cluster_admins(meta):
                if principal is None or admin.key == principal:
                    out.append(
                        {
                            "id": None,
                            "principal": admin.key,
                            "principal_name": admin.name,
                            "relation": permissions.ADMIN,
                            "object": CLUSTER_OBJECT,
                            "database": None,
                            "database_id": None,
                            "created_by": "",
                            "created_at": None,
                        }
                    )
        return out

    async def list_grants(request: Request, identity: Identity) -> Response:
        params = request.query_params
        principal = params.get("principal") or None
        if principal is not None:
            principal = (await asyncio.to_thread(accounts.resolve_principal, meta, principal)).key
        found = await asyncio.to_thread(listing, identity, principal, params.get("database"))
        return JSONResponse({"grants": found, "relations": list(permissions.RELATIONS)})

    def changed(identity: Identity, event: str, who: accounts.PrincipalInfo, what: str) -> None:
        state.audit.record(
            event,
            actor=identity.principal,
            target=who.key,
            surface="admin",
            details={"principal_name": who.name, "grant": what},
        )

    async def add_grant(request: Request, identity: Identity) -> Response:
        body = await read_json_object(request, max_bytes)
        who = await asyncio.to_thread(accounts.resolve_principal, meta, _text(body, "principal"))
        relation = permissions.check_relation(_text(body, "relation", 16))
        database = _text(body, "database", 128)
        if database in CLUSTER_NAMES:
            if relation != permissions.ADMIN:
                raise ValueError("the cluster has one relation: admin")
            await may(identity, None)
            updated = await asyncio.to_thread(accounts.set_role, meta, who.key, "admin")
            changed(identity, "role_changed", who, "admin on cluster")
            return JSONResponse({"principal": updated.as_json(), "created": who.role != "admin"})
        await may(identity, database)
        grant, created = await asyncio.to_thread(
            permissions.add_grant, meta, who.key, relation, database, by=identity.principal.key
        )
        if created:
            changed(identity, "grant_added", who, f"{relation} on database:{grant.database}")
        names = {who.key: who.name}
        return JSONResponse(
            {"grant": grant.as_json(names), "created": created}, status_code=201 if created else 200
        )

    async def remove_grant(request: Request, identity: Identity) -> Response:
        params = request.query_params
        who = await asyncio.to_thread(accounts.resolve_principal, meta, _text(params, "principal"))
        relation = permissions.check_relation(_text(params, "relation", 16))
        database = _text(params, "database", 128)
        if database in CLUSTER_NAMES:
            if relation != permissions.ADMIN:
                raise ValueError("the cluster has one relation: admin")
            await may(identity, None)
            if who.key == identity.principal.key:
                raise ValueError("you cannot remove your own admin role")
            await asyncio.to_thread(accounts.set_role, meta, who.key, "member")
            changed(identity, "role_changed", who, "member (admin on cluster removed)")
            return Response(status_code=204)
        await may(identity, database)
        grant = await asyncio.to_thread(permissions.remove_grant, meta, who.key, relation, database)
        changed(identity, "grant_removed", who, f"{relation} on database:{grant.database}")
        return Response(status_code=204)

    async def audit_log(request: Request) -> Response:
        identity = await require_admin(state, request)
        if isinstance(identity, Response):
            return identity
        params = request.query_params
        try:
            limit = int(params.get("limit", "100"))
            before = int(params["before"]) if params.get("before") else None
        except ValueError:
            return _error(400, "BadRequest", "'limit' and 'before' are integers")
        await asyncio.to_thread(state.audit.flush)  # what this process saw is readable now
        events = await asyncio.to_thread(
            audit.list_events,
            meta,
            limit=limit,
            before=before,
            event=params.get("event") or None,
            actor=params.get("actor") or None,
            outcome=params.get("outcome") or None,
        )
        return JSONResponse({"events": events}, headers={"Cache-Control": "no-store"})

    base = "/api/v1/admin"
    return [
        Route(f"{base}/grants", guarded(list_grants), methods=["GET"]),
        Route(f"{base}/grants", guarded(add_grant), methods=["POST"]),
        Route(f"{base}/grants", guarded(remove_grant), methods=["DELETE"]),
        Route(f"{base}/audit", audit_log, methods=["GET"]),
    ]
