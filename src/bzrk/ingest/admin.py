"""The ingest admin HTTP API under ``/admin/v1``: databases, tables and ingest tokens.

Only the gateway may call it: every request carries a gateway-signed internal token with
audience ``ingest``. What the principal may do is :func:`bzrk.auth.permissions.authorize`'s
decision, per route: creating and dropping databases needs the cluster admin role; tables and
ingest tokens of a database need ``editor`` on it; listings hold only the databases the caller
may query (tables) or edit (ingest tokens). The gateway forwards ``/api/v1/admin/tables`` and
``/api/v1/admin/ingest-tokens`` (and ``/databases``) here; ``docs/ingest.md`` lists the routes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from bzrk.auth import accounts, audit, permissions
from bzrk.auth.internal import InternalKeys, InvalidInternalToken, Principal, verify_internal_token
from bzrk.auth.permissions import Action
from bzrk.ingest.errors import (
    BadRequest,
    ConflictError,
    Forbidden,
    IngestError,
    NotFoundError,
    Unauthenticated,
)
from bzrk.ingest.pipeline import IngestPipeline
from bzrk.meta import schema as meta_schema
from bzrk.meta.store import Conflict, MetaError, NotFound, utcnow
from bzrk.storage.catalog import StorageCatalog, StorageError
from bzrk.storage.naming import InvalidName
from bzrk.storage.schema import SchemaError

AUDIENCE = "ingest"
Handler = Callable[[Request], Awaitable[Any]]
# Which database a request is about (None: the cluster); LISTING: decided per listed item.
Locator = Callable[[Request], Awaitable[str | None]]
LISTING = "*listing*"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _table_json(info: Any, shard_fields: dict[str, int]) -> dict[str, Any]:
    return {
        "id": info.id,
        "database": info.database,
        "name": info.name,
        "retention_days": info.retention_days,
        "shard_fields": shard_fields,
    }


def _shard_fields_arg(body: dict[str, Any]) -> dict[str, int] | None:
    value = body.get("shard_fields")
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(w, int) and not isinstance(w, bool)
        for k, w in value.items()
    ):
        raise BadRequest("shard_fields must be an object of field -> positive integer weight")
    return value


def list_ingest_tokens(catalog: StorageCatalog) -> list[dict[str, Any]]:
    t, tb, db = meta_schema.ingest_tokens, meta_schema.tables, meta_schema.databases
    query = (
        sa.select(t, tb.c.name.label("table"), db.c.name.label("database"))
        .join(tb, tb.c.id == t.c.table_id)
        .join(db, db.c.id == tb.c.database_id)
        .order_by(t.c.created_at)
    )
    with catalog.meta.engine.connect() as conn:
        rows = conn.execute(query).all()
    return [
        {
            "id": r.id,
            "name": r.name,
            "database": r.database,
            "table": r.table,
            "prefix": r.token_prefix,
            "created_at": _iso(r.created_at),
            "revoked_at": _iso(r.revoked_at),
        }
        for r in rows
    ]


def purge_ingest_token(catalog: StorageCatalog, token_id: str) -> None:
    """Delete a revoked token's record; a live one must be revoked first."""
    t = meta_schema.ingest_tokens
    with catalog.meta.begin() as conn:
        found = conn.execute(sa.select(t.c.revoked_at).where(t.c.id == token_id)).first()
        if found is None:
            raise NotFound(f"no ingest token with id '{token_id}'")
        if found.revoked_at is None:
            raise Conflict(f"ingest token '{token_id}' is live: revoke it first")
        conn.execute(sa.delete(t).where(t.c.id == token_id))


def revoke_ingest_token(catalog: StorageCatalog, token_id: str) -> None:
    t = meta_schema.ingest_tokens
    with catalog.meta.begin() as conn:
        result = conn.execute(
            sa.update(t)
            .where(t.c.id == token_id, t.c.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
    if result.rowcount == 0:
        raise NotFound(f"no live ingest token with id '{token_id}'")


class AdminApi:
    """Route handlers over a catalogue; each runs its blocking work in a thread."""

    def __init__(self, pipeline: IngestPipeline, keys: InternalKeys) -> None:
        self.pipeline = pipeline
        self.catalog = pipeline.catalog
        self.keys = keys
        self._components: dict[str, Any] = {}  # this API's audit log

    def _guard(
        self, handler: Handler, action: Action, database: Locator
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                try:
                    principal = verify_internal_token(
                        self.keys, request.headers.get("authorization"), AUDIENCE
                    )
                except InvalidInternalToken as exc:
                    raise Unauthenticated(f"admin API needs a gateway-signed token: {exc}") from exc
                request.state.principal = principal
                target = await database(request)
                if target != LISTING:
                    decision = await asyncio.to_thread(
                        permissions.authorize, self.catalog.meta, principal, action, target
                    )
                    if not decision.allowed:
                        raise Forbidden(decision.message)
                try:
                    result = await handler(request)
                except NotFound as exc:
                    raise NotFoundError(str(exc)) from exc
                except Conflict as exc:
                    raise ConflictError(str(exc)) from exc
                except (InvalidName, SchemaError, StorageError, MetaError) as exc:
                    raise BadRequest(str(exc)) from exc
            except IngestError as exc:
                return JSONResponse(
                    {"error": {"code": exc.status, "message": exc.message}}, exc.status
                )
            if isinstance(result, Response):
                return result
            return JSONResponse(result, 201 if request.method == "POST" else 200)

        return endpoint

    @staticmethod
    async def _json(request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError as exc:
            raise BadRequest(f"request body must be a JSON object: {exc}") from exc
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object")
        return body

    # which database a request names
    @staticmethod
    async def _cluster(request: Request) -> str | None:
        return None

    @staticmethod
    async def _listing(request: Request) -> str | None:
        return LISTING

    @staticmethod
    async def _path_database(request: Request) -> str | None:
        return str(request.path_params["database"])

    @staticmethod
    async def _query_database(request: Request) -> str | None:
        return request.query_params.get("database") or LISTING

    async def _body_database(self, request: Request) -> str | None:
        return str((await self._json(request)).get("database") or "default")

    async def _token_database(self, request: Request) -> str | None:
        def lookup() -> str:
            t, tb, db = meta_schema.ingest_tokens, meta_schema.tables, meta_schema.databases
            with self.catalog.meta.engine.connect() as conn:
                found = conn.execute(
                    sa.select(db.c.name)
                    .join(tb, tb.c.database_id == db.c.id)
                    .join(t, t.c.table_id == tb.c.id)
                    .where(t.c.id == request.path_params["token_id"])
                ).scalar()
            # An unknown token is refused like a database without a grant (nothing to reveal).
            return str(found) if found is not None else "\x00unknown"

        return await asyncio.to_thread(lookup)

    def _visible(self, request: Request, databases: Any, action: Action = Action.QUERY) -> Any:
        principal: Principal = request.state.principal
        return permissions.visible(self.catalog.meta, principal, databases, action)

    # databases
    async def list_databases(self, request: Request) -> Any:
        dbs = await asyncio.to_thread(lambda: self._visible(request, self.catalog.list_databases()))
        return {"databases": [{"id": d.id, "name": d.name, "tables": list(d.tables)} for d in dbs]}

    async def create_database(self, request: Request) -> Any:
        body = await self._json(request)
        info = await asyncio.to_thread(self.catalog.create_database, str(body.get("name", "")))
        return {"id": info.id, "name": info.name}

    async def drop_database(self, request: Request) -> Any:
        await asyncio.to_thread(self.catalog.drop_database, request.path_params["database"])
        self.pipeline.tokens.invalidate()
        return Response(status_code=204)

    # tables
    async def list_tables(self, request: Request) -> Any:
        database = request.query_params.get("database")
        if database:
            tables = await asyncio.to_thread(self.catalog.list_tables, database)
        else:
            dbs = await asyncio.to_thread(
                lambda: self._visible(request, self.catalog.list_databases())
            )
            tables = []
            for db in dbs:
                tables += await asyncio.to_thread(self.catalog.list_tables, db.name)
        return {"tables": [await self._table(t) for t in tables]}

    async def _table(self, info: Any) -> dict[str, Any]:
        fields = await asyncio.to_thread(self.catalog.shard_fields, info.database, info.name)
        return _table_json(info, fields)

    async def create_table(self, request: Request) -> Any:
        body = await self._json(request)
        retention = body.get("retention_days")
        shard_fields = _shard_fields_arg(body)
        if retention is not None and not isinstance(retention, int):
            raise BadRequest("retention_days must be an integer")
        info = await asyncio.to_thread(
            lambda: self.catalog.create_table(
                str(body.get("database") or "default"),
                str(body.get("name", "")),
                retention_days=retention,
                shard_fields=shard_fields,
            )
        )
        return await self._table(info)

    async def update_table(self, request: Request) -> Any:
        body = await self._json(request)
        database, table = request.path_params["database"], request.path_params["table"]
        if not {"retention_days", "shard_fields"} & set(body):
            raise BadRequest("nothing to change: send retention_days and/or shard_fields")
        shard_fields = _shard_fields_arg(body)
        if "shard_fields" in body and shard_fields is None:
            raise BadRequest("shard_fields must be an object of field -> weight ({} clears them)")
        if "retention_days" in body:
            retention = body["retention_days"]
            if retention is not None and (
                not isinstance(retention, int) or isinstance(retention, bool)
            ):
                raise BadRequest("retention_days must be an integer or null")
            info = await asyncio.to_thread(self.catalog.set_retention, database, table, retention)
        if shard_fields is not None:
            info = await asyncio.to_thread(
                self.catalog.set_shard_fields, database, table, shard_fields
            )
        return await self._table(info)

    async def drop_table(self, request: Request) -> Any:
        await asyncio.to_thread(
            self.catalog.drop_table, request.path_params["database"], request.path_params["table"]
        )
        self.pipeline.tokens.invalidate()
        return Response(status_code=204)

    # ingest tokens
    async def list_tokens(self, request: Request) -> Any:
        def editable() -> list[dict[str, Any]]:
            dbs = self._visible(request, self.catalog.meta.list_databases(), Action.WRITE)
            names = {d.name for d in dbs}
            return [t for t in list_ingest_tokens(self.catalog) if t["database"] in names]

        return {"ingest_tokens": await asyncio.to_thread(editable)}

    async def create_token(self, request: Request) -> Any:
        body = await self._json(request)
        name = str(body.get("name") or "").strip()
        if not name:
            raise BadRequest("an ingest token needs a name")
        database = str(body.get("database") or "default")
        table = str(body.get("table") or "default")
        issued = await asyncio.to_thread(
            accounts.create_ingest_token, self.catalog.meta, name, database, table
        )
        self._audit(request, "token_minted", f"ingest-token:{issued.prefix}", database, table)
        return {
            "id": issued.id,
            "name": name,
            "database": database,
            "table": table,
            "prefix": issued.prefix,
            "token": issued.value,  # shown once; only its hash is stored
        }

    async def revoke_token(self, request: Request) -> Any:
        token_id = request.path_params["token_id"]
        if request.query_params.get("purge", "").lower() in ("1", "true", "yes"):
            await asyncio.to_thread(purge_ingest_token, self.catalog, token_id)
        else:
            await asyncio.to_thread(revoke_ingest_token, self.catalog, token_id)
        self.pipeline.tokens.invalidate()
        self._audit(request, "token_revoked", f"ingest-token:{request.path_params['token_id']}")
        return Response(status_code=204)

    def _audit(self, request: Request, event: str, target: str, *where: str) -> None:
        details = {"database": where[0], "table": where[1]} if where else None
        audit.shared(self._components, self.catalog.meta).record(
            event, actor=request.state.principal, target=target, surface="admin", details=details
        )

    def routes(self) -> Mount:
        g = self._guard
        query, write = Action.QUERY, Action.WRITE
        return Mount(
            "/admin/v1",
            routes=[
                Route("/databases", g(self.list_databases, query, self._listing), methods=["GET"]),
                Route(
                    "/databases", g(self.create_database, write, self._cluster), methods=["POST"]
                ),
                Route(
                    "/databases/{database}",
                    g(self.drop_database, write, self._cluster),
                    methods=["DELETE"],
                ),
                Route("/tables", g(self.list_tables, query, self._query_database), methods=["GET"]),
                Route(
                    "/tables", g(self.create_table, write, self._body_database), methods=["POST"]
                ),
                Route(
                    "/tables/{database}/{table}",
                    g(self.update_table, write, self._path_database),
                    methods=["PATCH"],
                ),
                Route(
                    "/tables/{database}/{table}",
                    g(self.drop_table, write, self._path_database),
                    methods=["DELETE"],
                ),
                Route("/ingest-tokens", g(self.list_tokens, write, self._listing), methods=["GET"]),
                Route(
                    "/ingest-tokens",
                    g(self.create_token, write, self._body_database),
                    methods=["POST"],
                ),
                Route(
                    "/ingest-tokens/{token_id}",
                    g(self.revoke_token, write, self._token_database),
                    methods=["DELETE"],
                ),
            ],
        )
