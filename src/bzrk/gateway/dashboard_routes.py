"""Dashboards under ``/api/v1/dashboards``: named grids of saved library queries.

A dashboard is a name, a description, one time range (``since``/``until``, Berserk time
expressions) and a list of panels, each naming a saved query of the library by id (with an
optional title and a width of 1-3 grid columns). Reading a dashboard resolves its panels to the
saved queries' current text, database and range, so a dashboard always shows the library's
latest version; a panel whose query was deleted comes back with ``"query": null``.

Any signed-in principal may list, open and create dashboards; changing or deleting one is for
its owner (by principal key, ``user:<id>`` / ``sp:<id>``) or an admin, the library's rule
(:func:`may_change`). A panel shows its saved query only to callers who may query that query's
database (the library's own view of it, ``library_routes.Library``): for anyone else,
as for a deleted query, the panel's ``"query"`` is null; a new panel must name a saved query the
caller can see. docs/ui.md lists every route.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bzrk.auth import accounts
from bzrk.auth.bearer import Identity
from bzrk.auth.internal import Principal
from bzrk.gateway.authn import ADMIN, Unauthenticated, authenticate, challenge, forbidden
from bzrk.gateway.library_routes import Library
from bzrk.gateway.state import GatewayState, read_json_object
from bzrk.meta import schema
from bzrk.meta.store import MetaStore, new_id, utcnow

Handler = Callable[[Request, Identity], Awaitable[Response]]
TABLE = schema.dashboards
# What a panel carries of its saved query.
PANEL_QUERY_FIELDS = ("id", "folder", "name", "query", "description", "database", "since", "until")
MAX_PANELS = 48
# Field -> (max length, required on create).
FIELDS: dict[str, tuple[int, bool]] = {
    "name": (256, True),
    "description": (4096, False),
    "since": (64, False),
    "until": (64, False),
}
NULLABLE = frozenset({"since", "until"})


class DashboardError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def may_change(owner: str, who: Identity) -> bool:
    """Whether ``who`` may change or delete something ``owner`` (a principal key) created:
    the owner or a cluster admin, the library's rule."""
    return owner == who.principal.key or who.principal.is_admin


def _bad(message: str) -> DashboardError:
    return DashboardError(400, "BadRequest", message)


def _clean_panels(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise _bad("'panels' must be a list")
    if len(value) > MAX_PANELS:
        raise _bad(f"a dashboard holds at most {MAX_PANELS} panels")
    panels: list[dict[str, Any]] = []
    for i, panel in enumerate(value):
        where = f"panels[{i}]"
        if not isinstance(panel, dict):
            raise _bad(f"{where} must be an object")
        query_id = panel.get("query_id")
        if not isinstance(query_id, str) or not query_id or len(query_id) > 64:
            raise _bad(f"{where}.query_id must name a saved query")
        title = panel.get("title", "")
        if not isinstance(title, str) or len(title) > 256:
            raise _bad(f"{where}.title must be a string of at most 256")
        width = panel.get("width", 1)
        if not isinstance(width, int) or isinstance(width, bool) or not 1 <= width <= 3:
            raise _bad(f"{where}.width must be 1, 2 or 3")
        panels.append({"query_id": query_id, "title": title, "width": width})
    return panels


def _clean(body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, (max_len, required) in FIELDS.items():
        if key not in body:
            if creating and required:
                raise _bad(f"'{key}' is required")
            continue
        value = body[key]
        if value is None and key in NULLABLE:
            out[key] = None
            continue
        if not isinstance(value, str) or len(value) > max_len:
            raise _bad(f"'{key}' must be a string of at most {max_len}")
        if required and not value.strip():
            raise _bad(f"'{key}' must not be empty")
        out[key] = value.strip() if key == "name" else value
    if "panels" in body:
        out["panels"] = _clean_panels(body["panels"])
    elif creating:
        out["panels"] = []
    unknown = set(body) - set(FIELDS) - {"panels", "id", "owner", "created_at", "updated_at"}
    if unknown:
        raise _bad(f"unknown field(s): {', '.join(sorted(unknown))}")
    return out


class Dashboards:
    """Blocking reads and writes of ``dashboards``; callers use ``asyncio.to_thread``."""

    def __init__(self, meta: MetaStore) -> None:
        self.meta = meta
        # The library decides which saved queries a caller sees; panels follow it.
        self.library = Library(meta)

    def _as_json(
        self, row: sa.Row, names: dict[str, str], queries: dict[str, dict[str, Any]] | None
    ) -> dict[str, Any]:
        panels: list[dict[str, Any]] = json.loads(row.panels or "[]")
        if queries is not None:
            panels = [{**p, "query": queries.get(p["query_id"])} for p in panels]
        return {
            "id": row.id,
            "name": row.name,
            "description": row.description,
            "since": row.since,
            "until": row.until,
            "owner": row.owner,
            "owner_name": names.get(row.owner, ""),
            "created_at": row.created_at.isoformat(),
            "updated_at": row.updated_at.isoformat(),
            "panels": panels,
        }

    def _visible_queries(self, ids: set[str], principal: Principal) -> dict[str, dict[str, Any]]:
        """The saved queries of ``ids`` that ``principal`` may see (the library's view), by id."""
        if not ids:
            return {}
        return {
            q["id"]: {k: q[k] for k in PANEL_QUERY_FIELDS}
            for q in self.library.list(None, principal)
            if q["id"] in ids
        }

    def list(self) -> list[dict[str, Any]]:
        names = accounts.principal_names(self.meta)
        with self.meta.engine.connect() as conn:
            rows = conn.execute(sa.select(TABLE).order_by(TABLE.c.name, TABLE.c.created_at))
            return [self._as_json(r, names, None) for r in rows]

    def get(self, dashboard_id: str, principal: Principal) -> dict[str, Any]:
        with self.meta.engine.connect() as conn:
            row = conn.execute(sa.select(TABLE).where(TABLE.c.id == dashboard_id)).first()
            if row is None:
                raise DashboardError(404, "NotFound", f"dashboard '{dashboard_id}' not found")
        ids = {p["query_id"] for p in json.loads(row.panels or "[]")}
        queries = self._visible_queries(ids, principal)
        return self._as_json(row, accounts.principal_names(self.meta, {row.owner}), queries)

    def _check_queries(self, panels: list[dict[str, Any]], principal: Principal) -> None:
        # A query the caller may not see is reported as missing: no hint that it exists.
        ids = {p["query_id"] for p in panels}
        missing = sorted(ids - set(self._visible_queries(ids, principal)))
        if missing:
            raise _bad(f"no saved query with id {', '.join(repr(m) for m in missing)}")

    def create(self, values: dict[str, Any], owner: Principal) -> dict[str, Any]:
        now, dashboard_id = utcnow(), new_id()
        panels = values.pop("panels", [])
        self._check_queries(panels, owner)
        with self.meta.begin() as conn:
            conn.execute(
                sa.insert(TABLE).values(
                    id=dashboard_id,
                    owner=owner.key,
                    created_at=now,
                    updated_at=now,
                    description=values.pop("description", ""),
                    panels=json.dumps(panels),
                    **values,
                )
            )
        return self.get(dashboard_id, owner)

    def _owned(self, dashboard_id: str, who: Identity, verb: str) -> None:
        current = self.get(dashboard_id, who.principal)
        if not may_change(current["owner"], who):
            raise DashboardError(
                403, "Forbidden", f"only the owner or an admin may {verb} this dashboard"
            )

    def update(self, dashboard_id: str, values: dict[str, Any], who: Identity) -> dict[str, Any]:
        self._owned(dashboard_id, who, "change")
        changes = dict(values)
        if "panels" in changes:
            self._check_queries(changes["panels"], who.principal)
            changes["panels"] = json.dumps(changes["panels"])
        with self.meta.begin() as conn:
            conn.execute(
                sa.update(TABLE)
                .where(TABLE.c.id == dashboard_id)
                .values(updated_at=utcnow(), **changes)
            )
        return self.get(dashboard_id, who.principal)

    def delete(self, dashboard_id: str, who: Identity) -> None:
        self._owned(dashboard_id, who, "delete")
        with self.meta.begin() as conn:
            conn.execute(sa.delete(TABLE).where(TABLE.c.id == dashboard_id))


def routes(state: GatewayState) -> list[Route]:
    dashboards = Dashboards(state.ctx.meta)
    max_bytes = state.config.limits.max_form_bytes

    def signed_in(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                identity = await authenticate(
                    state.ctx.meta, request.scope, ADMIN, state.mcp_resource, state.now()
                )
            except Unauthenticated as exc:
                return challenge(exc.presented)
            try:
                return await handler(request, identity)
            except DashboardError as exc:
                if exc.status == 403:
                    return forbidden(str(exc))
                return JSONResponse(
                    {"error": {"code": exc.code, "message": str(exc)}}, status_code=exc.status
                )

        return endpoint

    async def list_dashboards(_request: Request, _who: Identity) -> Response:
        return JSONResponse({"dashboards": await asyncio.to_thread(dashboards.list)})

    async def create_dashboard(request: Request, who: Identity) -> Response:
        values = _clean(await read_json_object(request, max_bytes), creating=True)
        saved = await asyncio.to_thread(dashboards.create, values, who.principal)
        return JSONResponse({"dashboard": saved}, status_code=201)

    async def get_dashboard(request: Request, who: Identity) -> Response:
        found = await asyncio.to_thread(
            dashboards.get, request.path_params["dashboard_id"], who.principal
        )
        return JSONResponse({"dashboard": found})

    async def update_dashboard(request: Request, who: Identity) -> Response:
        values = _clean(await read_json_object(request, max_bytes), creating=False)
        saved = await asyncio.to_thread(
            dashboards.update, request.path_params["dashboard_id"], values, who
        )
        return JSONResponse({"dashboard": saved})

    async def delete_dashboard(request: Request, who: Identity) -> Response:
        await asyncio.to_thread(dashboards.delete, request.path_params["dashboard_id"], who)
        return Response(status_code=204)

    base = "/api/v1/dashboards"
    item = f"{base}/{{dashboard_id}}"
    return [
        Route(base, signed_in(list_dashboards), methods=["GET"]),
        Route(base, signed_in(create_dashboard), methods=["POST"]),
        Route(item, signed_in(get_dashboard), methods=["GET"]),
        Route(item, signed_in(update_dashboard), methods=["PUT", "PATCH"]),
        Route(item, signed_in(delete_dashboard), methods=["DELETE"]),
    ]
