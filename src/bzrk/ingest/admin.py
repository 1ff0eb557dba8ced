"""The ingest admin HTTP API under ``/admin/v1``: databases, tables and ingest tokens.

Only the gateway may call it: every request carries a gateway-signed internal token with
audience ``ingest`` and the ``admin`` role. The gateway forwards ``/api/v1/admin/tables`` and
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

from bzrk.auth import accounts
from bzrk.auth.internal import InternalKeys, InvalidInternalToken, verify_internal_token
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


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _table_json(info: Any) -> dict[str, Any]:
    return {
        "id": info.id,
        "database": info.database,
        "name": info.name,
        "retention_days": info.retention_days,
    }


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

    def _guard(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                try:
                    principal = verify_internal_token(
                        self.keys, request.headers.get("authorization"), AUDIENCE
                    )
                except InvalidInternalToken as exc:
                    raise Unauthenticated(f"admin API needs a gateway-signed token: {exc}") from exc
                if not principal.is_admin:
                    raise Forbidden("the admin role is required")
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

    # databases
    async def list_databases(self, request: Request) -> Any:
        dbs = await asyncio.to_thread(self.catalog.list_databases)
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
            dbs = await asyncio.to_thread(self.catalog.list_databases)
            tables = []
            for db in dbs:
                tables += await asyncio.to_thread(self.catalog.list_tables, db.name)
        return {"tables": [_table_json(t) for t in tables]}

    async def create_table(self, request: Request) -> Any:
        body = await self._json(request)
        retention = body.get("retention_days")
        shard_fields = body.get("shard_fields")
        if retention is not None and not isinstance(retention, int):
            raise BadRequest("retention_days must be an integer")
        if shard_fields is not None and not isinstance(shard_fields, dict):
            raise BadRequest("shard_fields must be an object of field -> weight")
        info = await asyncio.to_thread(
            lambda: self.catalog.create_table(
                str(body.get("database") or "default"),
                str(body.get("name", "")),
                retention_days=retention,
                shard_fields=shard_fields,
            )
        )
        return _table_json(info)

    async def update_table(self, request: Request) -> Any:
        body = await self._json(request)
        retention = body.get("retention_days")
        if retention is not None and not isinstance(retention, int):
            raise BadRequest("retention_days must be an integer or null")
        info = await asyncio.to_thread(
            self.catalog.set_retention,
            request.path_params["database"],
            request.path_params["table"],
            retention,
        )
        return _table_json(info)

    async def drop_table(self, request: Request) -> Any:
        await asyncio.to_thread(
            self.catalog.drop_table, request.path_params["database"], request.path_params["table"]
        )
        self.pipeline.tokens.invalidate()
        return Response(status_code=204)

    # ingest tokens
    async def list_tokens(self, request: Request) -> Any:
        return {"ingest_tokens": await asyncio.to_thread(list_ingest_tokens, self.catalog)}

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
        return {
            "id": issued.id,
            "name": name,
            "database": database,
            "table": table,
            "prefix": issued.prefix,
            "token": issued.value,  # shown once; only its hash is stored
        }

    async def revoke_token(self, request: Request) -> Any:
        await asyncio.to_thread(revoke_ingest_token, self.catalog, request.path_params["token_id"])
        self.pipeline.tokens.invalidate()
        return Response(status_code=204)

    def routes(self) -> Mount:
        g = self._guard
        return Mount(
            "/admin/v1",
            routes=[
                Route("/databases", g(self.list_databases), methods=["GET"]),
                Route("/databases", g(self.create_database), methods=["POST"]),
                Route("/databases/{database}", g(self.drop_database), methods=["DELETE"]),
                Route("/tables", g(self.list_tables), methods=["GET"]),
                Route("/tables", g(self.create_table), methods=["POST"]),
                Route("/tables/{database}/{table}", g(self.update_table), methods=["PATCH"]),
                Route("/tables/{database}/{table}", g(self.drop_table), methods=["DELETE"]),
                Route("/ingest-tokens", g(self.list_tokens), methods=["GET"]),
                Route("/ingest-tokens", g(self.create_token), methods=["POST"]),
                Route("/ingest-tokens/{token_id}", g(self.revoke_token), methods=["DELETE"]),
            ],
        )
