"""The query library under ``/api/v1/library``: saved KQL queries in folders, shared by the team.

Any signed-in principal (bearer token, or UI session with its CSRF token on writes) may list,
open and save queries; changing or deleting one is for its owner or an admin. The owner is a
principal key (``user:<id>`` / ``sp:<id>``; ``owner_name`` is for display), so a user and a
service principal with the same name are two owners. A query saved for a database the caller
may not query is invisible to them (listed nowhere, opened as not found), and saving one for
such a database is refused (403 ``AccessDenied``). A folder is a ``/``-separated path string on
the query (``""`` is the root); ``(folder, name)`` is unique. docs/ui.md lists every route.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bzrk.auth import accounts, permissions
from bzrk.auth.bearer import Identity
from bzrk.auth.internal import Principal
from bzrk.gateway.authn import ADMIN, Unauthenticated, authenticate, challenge, forbidden
from bzrk.gateway.state import GatewayState, read_json_object
from bzrk.meta import schema
from bzrk.meta.store import MetaStore, new_id, utcnow

Handler = Callable[[Request, Identity], Awaitable[Response]]
TABLE = schema.saved_queries
# Field -> (max length, required on create). `query` is KQL text, the rest are short strings.
FIELDS: dict[str, tuple[int, bool]] = {
    "name": (256, True),
    "query": (100_000, True),
    "folder": (256, False),
    "description": (4096, False),
    "database": (128, False),
    "since": (64, False),
    "until": (64, False),
}
NULLABLE = frozenset({"database", "since", "until"})


class LibraryError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _clean(body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, (max_len, required) in FIELDS.items():
        if key not in body:
            if creating and required:
                raise LibraryError(400, "BadRequest", f"'{key}' is required")
            continue
        value = body[key]
        if value is None and key in NULLABLE:
            out[key] = None
            continue
        if not isinstance(value, str) or len(value) > max_len:
            raise LibraryError(400, "BadRequest", f"'{key}' must be a string of at most {max_len}")
        if key == "folder":
            value = "/".join(part.strip() for part in value.split("/") if part.strip())
        if required and not value.strip():
            raise LibraryError(400, "BadRequest", f"'{key}' must not be empty")
        out[key] = value
    return out


def _as_json(row: sa.Row, names: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "id": row.id,
        "folder": row.folder,
        "name": row.name,
        "query": row.query,
        "description": row.description,
        "database": row.database,
        "since": row.since,
        "until": row.until,
        "owner": row.owner,
        "owner_name": (names or {}).get(row.owner, ""),
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
    }


class Library:
    """Blocking reads and writes of ``saved_queries``; callers use ``asyncio.to_thread``."""

    def __init__(self, meta: MetaStore) -> None:
        self.meta = meta

    def _readable(self, principal: Principal) -> Any:
        """A test of a saved query's database: may ``principal`` query it?"""
        if principal.is_admin:
            return lambda _database: True
        allowed = permissions.visible(self.meta, principal, self.meta.list_databases())
        names = {db.name for db in allowed} | {db.id for db in allowed}
        return lambda database: database is None or database in names

    def list(self, folder: str | None, principal: Principal) -> list[dict[str, Any]]:
        query = sa.select(TABLE).order_by(TABLE.c.folder, TABLE.c.name)
        if folder is not None:
            query = query.where(TABLE.c.folder == folder)
        readable = self._readable(principal)
        names = accounts.principal_names(self.meta)
        with self.meta.engine.connect() as conn:
            return [_as_json(r, names) for r in conn.execute(query) if readable(r.database)]

    def get(self, query_id: str, principal: Principal | None = None) -> dict[str, Any]:
        with self.meta.engine.connect() as conn:
            row = conn.execute(sa.select(TABLE).where(TABLE.c.id == query_id)).first()
        if row is None or (principal is not None and not self._readable(principal)(row.database)):
            raise LibraryError(404, "NotFound", f"saved query '{query_id}' not found")
        return _as_json(row, accounts.principal_names(self.meta, {row.owner}))

    def check_database(self, values: dict[str, Any], principal: Principal) -> None:
        database = values.get("database")
        if database is None:
            return
        decision = permissions.authorize(self.meta, principal, permissions.Action.QUERY, database)
        if not decision.allowed:
            raise LibraryError(403, permissions.ACCESS_DENIED, decision.message)

    def create(self, values: dict[str, Any], owner: Principal) -> dict[str, Any]:
        self.check_database(values, owner)
        now, query_id = utcnow(), new_id()
        values = {"folder": "", "description": "", **values}
        try:
            with self.meta.begin() as conn:
                conn.execute(
                    sa.insert(TABLE).values(
                        id=query_id, owner=owner.key, created_at=now, updated_at=now, **values
                    )
                )
        except sa.exc.IntegrityError as exc:
            raise _conflict(values) from exc
        return self.get(query_id)

    def update(self, query_id: str, values: dict[str, Any], who: Identity) -> dict[str, Any]:
        current = self.get(query_id, who.principal)
        _check_owner(current, who)
        self.check_database(values, who.principal)
        try:
            with self.meta.begin() as conn:
                conn.execute(
                    sa.update(TABLE)
                    .where(TABLE.c.id == query_id)
                    .values(updated_at=utcnow(), **values)
                )
        except sa.exc.IntegrityError as exc:
            raise _conflict({**current, **values}) from exc
        return self.get(query_id)

    def delete(self, query_id: str, who: Identity) -> None:
        _check_owner(self.get(query_id, who.principal), who)
        with self.meta.begin() as conn:
            conn.execute(sa.delete(TABLE).where(TABLE.c.id == query_id))


def _conflict(values: dict[str, Any]) -> LibraryError:
    where = values.get("folder") or "the root folder"
    return LibraryError(409, "Conflict", f"'{values.get('name')}' already exists in {where}")


def _check_owner(saved: dict[str, Any], who: Identity) -> None:
    if saved["owner"] != who.principal.key and not who.principal.is_admin:
        raise LibraryError(403, "Forbidden", "only the owner or an admin may change this query")


def _folders(saved: list[dict[str, Any]]) -> list[dict[str, Any]]:
    counts: dict[str, int] = {}
    for item in saved:
        counts[item["folder"]] = counts.get(item["folder"], 0) + 1
    return [{"folder": name, "count": count} for name, count in sorted(counts.items())]


def routes(state: GatewayState) -> list[Route]:
    library = Library(state.ctx.meta)
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
            except LibraryError as exc:
                if exc.status == 403 and exc.code == "Forbidden":
                    return forbidden(str(exc))
                return _error(exc.status, exc.code, str(exc))

        return endpoint

    async def list_queries(request: Request, who: Identity) -> Response:
        folder = request.query_params.get("folder")
        found = await asyncio.to_thread(library.list, folder, who.principal)
        return JSONResponse({"queries": found})

    async def list_folders(_request: Request, who: Identity) -> Response:
        found = await asyncio.to_thread(library.list, None, who.principal)
        return JSONResponse({"folders": _folders(found)})

    async def create_query(request: Request, who: Identity) -> Response:
        values = _clean(await read_json_object(request, max_bytes), creating=True)
        saved = await asyncio.to_thread(library.create, values, who.principal)
        return JSONResponse({"query": saved}, status_code=201)

    async def get_query(request: Request, who: Identity) -> Response:
        saved = await asyncio.to_thread(library.get, request.path_params["query_id"], who.principal)
        return JSONResponse({"query": saved})

    async def update_query(request: Request, who: Identity) -> Response:
        values = _clean(await read_json_object(request, max_bytes), creating=False)
        saved = await asyncio.to_thread(
            library.update, request.path_params["query_id"], values, who
        )
        return JSONResponse({"query": saved})

    async def delete_query(request: Request, who: Identity) -> Response:
        await asyncio.to_thread(library.delete, request.path_params["query_id"], who)
        return Response(status_code=204)

    base = "/api/v1/library"
    item = f"{base}/queries/{{query_id}}"
    return [
        Route(f"{base}/folders", signed_in(list_folders), methods=["GET"]),
        Route(f"{base}/queries", signed_in(list_queries), methods=["GET"]),
        Route(f"{base}/queries", signed_in(create_query), methods=["POST"]),
        Route(item, signed_in(get_query), methods=["GET"]),
        Route(item, signed_in(update_query), methods=["PUT", "PATCH"]),
        Route(item, signed_in(delete_query), methods=["DELETE"]),
    ]
