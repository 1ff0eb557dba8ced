"""The Berserk JSON HTTP API on the query service: ``POST /query`` and ``GET /databases``.

``POST /query`` takes ``{"query", "database": "name" | {"name"} | {"id"}, "since"|"from",
"until"|"to", "timezone", "timeout_ms", "stop_when"}`` and answers the final snapshot as
``{"Tables": [{"name", "columns": [{"column_name", "column_type"}], "rows"}, {"name":
"@Warnings", …}, {"name": "@ExtendedProperties", …} (only with render)], "status",
"coverage", "run_id"}``. Values are JSON-native, encoded as the ADX surface encodes them.
Failures before any result use the seed's problem-JSON shape (``type``, ``message``, ``code``,
``error_details``); an unknown database uses the ``DatabaseNotFound`` envelope with status 404.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bzrk.api.adx.values import RowEncoder
from bzrk.auth.internal import Principal
from bzrk.engine.events import (
    Column,
    Done,
    Error,
    Metadata,
    RowBatch,
    TableSchema,
)
from bzrk.engine.request import QueryRequest
from bzrk.server.context import AppContext
from bzrk.types import ASGIApp

PROBLEM_TYPE = "https://api.bzrk.dev/problems/query-error"
MAX_BODY_BYTES = 1024 * 1024

# Error code -> HTTP status for failures before any result (one table for this surface).
STATUS_BY_CODE = {
    "DatabaseNotFound": 404,
    "MissingTimeFilter": 400,
    "ParseError": 400,
    "InvalidArgument": 400,
    "InvalidTimeRange": 400,
    "InvalidStopWhen": 400,
    "QueueFull": 429,
    "QueryTimeout": 408,
    "Unsupported": 400,
}


def _problem(code: str, message: str, *, details: dict[str, Any] | None = None) -> JSONResponse:
    status = STATUS_BY_CODE.get(code, 400 if code[:1].isupper() else 500)
    if code == "DatabaseNotFound":
        body: dict[str, Any] = {
            "error": {"code": code, "message": message, "@type": "BzrkClient/v1"},
            "status": 404,
        }
        return JSONResponse(body, status_code=404)
    if code in ("InternalError", "ExecutionError", "BackendUnavailable"):
        status = 500
    return JSONResponse(
        {
            "type": PROBLEM_TYPE,
            "message": message,
            "code": code,
            "error_details": details or {"message": message},
        },
        status_code=status,
    )


def _database(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict):
        return value.get("name") or value.get("id") or None
    return None


def _error_details(error: Error) -> dict[str, Any]:
    details: dict[str, Any] = {"message": error.message, "title": error.title}
    if error.location is not None:
        loc = error.location
        details["location"] = {
            "start_byte": loc.start_byte,
            "end_byte": loc.end_byte,
            "start_line": loc.start_line,
            "start_column": loc.start_column,
            "end_line": loc.end_line,
            "end_column": loc.end_column,
        }
    if error.run_id:
        details["run_id"] = error.run_id
    return details


async def query(request: Request) -> Response:
    ctx: AppContext = request.app.state.ctx
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        return _problem("PayloadTooLarge", f"request body over {MAX_BODY_BYTES} bytes")
    try:
        body = json.loads(raw or b"{}")
    except json.JSONDecodeError as exc:
        return _problem(
            "InvalidArgument", f"request body is not JSON: {exc.msg} at position {exc.pos}"
        )
    if not isinstance(body, dict):
        return _problem("InvalidArgument", "request body must be a JSON object")
    text = body.get("query")
    database = _database(body.get("database"))
    if not isinstance(text, str) or not text.strip():
        return _problem("InvalidArgument", "'query' (KQL text) is required")
    if database is None:
        return _problem(
            "InvalidArgument", '\'database\' is required: a name or {"name": …} / {"id": …}'
        )
    timeout = body.get("timeout_ms")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool)):
        return _problem("InvalidArgument", "'timeout_ms' must be an integer")
    principal: Principal | None = request.scope.get("bzrk.principal")
    executor = ctx.executor
    assert executor is not None
    stream = executor.execute(
        QueryRequest(
            query=text,
            database=database,
            since=body.get("since") or body.get("from"),
            until=body.get("until") or body.get("to"),
            timezone=body.get("timezone") or "UTC",
            timeout_ms=timeout,
            stop_when=body.get("stop_when"),
            progressive=False,
            principal=principal.subject if principal else "",
            surface="http",
        )
    )
    schemas: dict[str, tuple[Column, ...]] = {}
    rows: dict[str, list[Any]] = {}
    iteration: str | None = None
    metadata: Metadata | None = None
    done: Done | None = None
    try:
        async for event in stream:
            if isinstance(event, TableSchema):
                schemas[event.table] = event.columns
            elif isinstance(event, RowBatch):
                if event.iteration_id != iteration:
                    iteration, rows = event.iteration_id, {}
                rows.setdefault(event.table, []).extend(event.rows)
            elif isinstance(event, Metadata):
                metadata = event
            elif isinstance(event, Error):
                return _problem(event.code, event.message, details=_error_details(event))
            elif isinstance(event, Done):
                done = event
    finally:
        await stream.aclose()
    tables: list[dict[str, Any]] = []
    for name, columns in schemas.items():
        encoder = RowEncoder(columns)
        tables.append(
            {
                "name": name,
                "columns": [{"column_name": c.name, "column_type": c.type} for c in columns],
                "rows": [encoder.cells(row) for row in rows.get(name, [])],
            }
        )
    warnings = metadata.warnings if metadata else ()
    tables.append(
        {
            "name": "@Warnings",
            "columns": [
                {"column_name": "kind", "column_type": "string"},
                {"column_name": "message", "column_type": "string"},
            ],
            "rows": [[w.kind, w.message] for w in warnings],
        }
    )
    if metadata is not None and metadata.visualization is not None:
        vis = metadata.visualization
        tables.append(
            {
                "name": "@ExtendedProperties",
                "columns": [{"column_name": "Value", "column_type": "dynamic"}],
                "rows": [[{"Visualization": vis.type, **vis.properties}]],
            }
        )
    return JSONResponse(
        {
            "Tables": tables,
            "status": done.status if done else "complete",
            "coverage": done.coverage if done else 1.0,
            "run_id": done.run_id if done else None,
        }
    )


async def databases(request: Request) -> Response:
    ctx: AppContext = request.app.state.ctx
    provider = ctx.components.get("schema")
    if provider is None:
        return JSONResponse({"databases": []})
    import asyncio

    listed = await asyncio.to_thread(provider.list_databases)
    return JSONResponse(
        {"databases": [{"id": db.id, "name": db.name, "tables": list(db.tables)} for db in listed]}
    )


async def not_found(request: Request, exc: Exception) -> Response:
    return JSONResponse(
        {"error": {"code": "NotFound", "message": f"no route {request.url.path}"}}, status_code=404
    )


def create_app(ctx: AppContext) -> ASGIApp:
    app = Starlette(
        routes=[
            Route("/query", query, methods=["POST"]),
            Route("/databases", databases, methods=["GET"]),
        ],
        exception_handlers={404: not_found},
    )
    app.state.ctx = ctx
    return app
