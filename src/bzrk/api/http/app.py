"""The Berserk JSON HTTP API on the query service: ``POST /query``, discovery and saved runs.

Discovery: ``GET /databases``, ``GET /databases/{db}/tables``,
``GET /databases/{db}/tables/{table}/fields``. Saved runs of the calling principal:
``GET /runs`` (newest first) and ``GET /runs/{id}``.

``POST /query`` takes ``{"query", "database": "name" | {"name"} | {"id"}, "since"|"from",
"until"|"to", "timezone", "timeout_ms", "stop_when"}`` and answers the final snapshot as
``{"Tables": [{"name", "columns": [{"column_name", "column_type"}], "rows"}, {"name":
"@Warnings", …}, {"name": "@ExtendedProperties", …} (only with render)], "status",
"coverage", "run_id"}``. Values are JSON-native, encoded as the ADX surface encodes them.

With ``"stream": true`` the answer is ``application/x-ndjson``: one JSON object per line for each
event of the result stream as it happens — ``{"type": "schema", "table", "columns"}``,
``{"type": "rows", "table", "iteration", "rows", "complete"}``, ``{"type": "metadata",
"iteration", "warnings", "visualization"}`` (closes a snapshot; a new ``iteration`` replaces
every table's rows), ``{"type": "progress", …counters…}``, then ``{"type": "done", "status",
"coverage", "run_id"}`` or ``{"type": "error", "code", "title", "message", "location"}``. This
is what the web UI reads; closing the connection cancels the query.
Failures before any result use the seed's problem-JSON shape (``type``, ``message``, ``code``,
``error_details``); an unknown database uses the ``DatabaseNotFound`` envelope with status 404.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from bzrk.api.access import ACCESS_DENIED, queryable, refusal, visible_databases
from bzrk.api.adx.values import RowEncoder
from bzrk.api.commands import command_events, is_command
from bzrk.api.http import alert_routes
from bzrk.auth.internal import Principal
from bzrk.engine.events import (
    Column,
    Done,
    Error,
    Metadata,
    Progress,
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
    "TableNotFound": 404,
    "PayloadTooLarge": 413,
    ACCESS_DENIED: 403,
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
    denied = await refusal(ctx, principal, database, surface="http")
    if denied is not None:
        return _problem(ACCESS_DENIED, denied.message)
    assert principal is not None
    executor = ctx.executor
    assert executor is not None
    stream = (
        command_events(ctx, principal, database, text, surface="http")
        if is_command(text)
        else executor.execute(
            QueryRequest(
                query=text,
                database=database,
                since=body.get("since") or body.get("from"),
                until=body.get("until") or body.get("to"),
                timezone=body.get("timezone") or "UTC",
                timeout_ms=timeout,
                stop_when=body.get("stop_when"),
                progressive=bool(body.get("stream")),
                principal=principal.key,
                surface="http",
            )
        )
    )
    if body.get("stream"):
        return StreamingResponse(
            _ndjson(stream),
            media_type="application/x-ndjson",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
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


def _line(payload: dict[str, Any]) -> bytes:
    from bzrk.api.adx.values import dumps

    return (dumps(payload) + "\n").encode()


async def _ndjson(stream: Any) -> Any:
    encoders: dict[str, RowEncoder] = {}
    try:
        async for event in stream:
            if isinstance(event, TableSchema):
                encoders[event.table] = RowEncoder(event.columns)
                yield _line(
                    {
                        "type": "schema",
                        "table": event.table,
                        "columns": [{"name": c.name, "type": c.type} for c in event.columns],
                    }
                )
            elif isinstance(event, RowBatch):
                encoder = encoders.get(event.table)
                rows = (
                    [encoder.cells(r) for r in event.rows]
                    if encoder
                    else [list(r) for r in event.rows]
                )
                yield _line(
                    {
                        "type": "rows",
                        "table": event.table,
                        "iteration": event.iteration_id,
                        "rows": rows,
                        "complete": event.iteration_complete,
                    }
                )
            elif isinstance(event, Metadata):
                vis = event.visualization
                yield _line(
                    {
                        "type": "metadata",
                        "iteration": event.iteration_id,
                        "warnings": [
                            {"kind": w.kind, "message": w.message} for w in event.warnings
                        ],
                        "visualization": None
                        if vis is None
                        else {"type": vis.type, "properties": vis.properties, "table": vis.table},
                    }
                )
            elif isinstance(event, Progress):
                yield _line(
                    {
                        "type": "progress",
                        "rows_processed": event.rows_processed,
                        "chunks_total": event.chunks_total,
                        "chunks_scanned": event.chunks_scanned,
                        "chunks_skipped_range": event.chunks_skipped_range,
                        "chunks_skipped_bloom": event.chunks_skipped_bloom,
                        "bytes_scanned": event.chunk_scanned_raw_body_size,
                        "query_time_nanos": event.query_time_nanos,
                        "queue_wait_nanos": event.queue_wait_nanos or 0,
                        "coverage": event.coverage,
                        "slices_done": event.slices_done,
                        "slices_total": event.slices_total,
                    }
                )
            elif isinstance(event, Error):
                yield _line({"type": "error", "code": event.code, **_error_details(event)})
            elif isinstance(event, Done):
                yield _line(
                    {
                        "type": "done",
                        "status": event.status,
                        "coverage": event.coverage,
                        "run_id": event.run_id,
                    }
                )
    finally:
        await stream.aclose()


async def databases(request: Request) -> Response:
    ctx: AppContext = request.app.state.ctx
    provider = ctx.components.get("schema")
    if provider is None:
        return JSONResponse({"databases": []})
    import asyncio

    listed = await visible_databases(
        ctx, request.scope.get("bzrk.principal"), await asyncio.to_thread(provider.list_databases)
    )
    return JSONResponse(
        {"databases": [{"id": db.id, "name": db.name, "tables": list(db.tables)} for db in listed]}
    )


async def tables(request: Request) -> Response:
    import asyncio

    ctx: AppContext = request.app.state.ctx
    provider = ctx.components.get("schema")
    database = request.path_params["database"]
    denied = await refusal(ctx, request.scope.get("bzrk.principal"), database, surface="http")
    if denied is not None:
        return _problem(ACCESS_DENIED, denied.message)
    if provider is None:
        return JSONResponse({"tables": []})
    if not await asyncio.to_thread(getattr(provider, "has_database", lambda _name: True), database):
        return _problem("DatabaseNotFound", f"database '{database}' not found")
    listed = await asyncio.to_thread(provider.list_tables, database)
    return JSONResponse(
        {
            "tables": [
                {
                    "id": t.id,
                    "name": t.name,
                    "columns": [{"name": name, "type": kind} for name, kind in t.columns],
                    "retention_days": t.retention_days,
                }
                for t in listed
            ]
        }
    )


async def fields(request: Request) -> Response:
    """Field discovery: ``?since=&until=&filter=&limit=`` over a table's sampled rows."""
    import asyncio

    from bzrk.engine import timewindow

    ctx: AppContext = request.app.state.ctx
    provider = ctx.components.get("schema")
    database, table = request.path_params["database"], request.path_params["table"]
    denied = await refusal(ctx, request.scope.get("bzrk.principal"), database, surface="http")
    if denied is not None:
        return _problem(ACCESS_DENIED, denied.message)
    if provider is None:
        return JSONResponse({"fields": []})
    params = request.query_params
    try:
        window = timewindow.request_window(
            params.get("since") or "1d ago", params.get("until"), now_ticks=timewindow.now_ticks()
        )
        limit = min(int(params.get("limit", "200")), 1000)
    except (timewindow.TimeExpressionError, ValueError) as exc:
        return _problem("InvalidArgument", str(exc))
    try:
        found = await asyncio.to_thread(
            provider.discover_fields,
            database,
            table,
            since_ticks=window.start,
            until_ticks=window.end,
            name_filter=params.get("filter") or None,
            limit=limit,
        )
    except Exception as exc:  # NotFound from the catalogue, named for the user
        if type(exc).__name__ == "NotFound":
            return _problem(
                "DatabaseNotFound" if "database" in str(exc) else "TableNotFound", str(exc)
            )
        raise
    return JSONResponse(
        {
            "fields": [
                {
                    "path": f.path,
                    "type": f.type,
                    "frequency": f.frequency,
                    "cardinality": f.cardinality,
                    "samples": list(f.samples),
                }
                for f in found
            ]
        }
    )


def _run_json(run: Any, *, full: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": run.id,
        "query": run.query,
        "database": run.database,
        "parameters": run.parameters,
        "surface": run.surface,
        "status": run.status,
        "started_at": run.started_at.isoformat(),
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "duration_ms": run.duration_ms,
        "error": run.error,
    }
    if full:
        out.update(principal=run.principal, progress=run.progress, result=run.result)
    return out


async def list_runs(request: Request) -> Response:
    """The caller's recent runs, newest first: ``?limit=`` (at most 200, default 50).

    Runs are the caller's by principal key (a user and a service principal with one name are
    two owners), and only those on databases the caller may still query are listed.
    """
    import asyncio

    from bzrk.meta.runs import RunStore

    ctx: AppContext = request.app.state.ctx
    principal: Principal | None = request.scope.get("bzrk.principal")
    try:
        limit = max(1, min(int(request.query_params.get("limit", "50")), 200))
    except ValueError:
        return _problem("InvalidArgument", "'limit' must be an integer")
    if principal is None:
        return JSONResponse({"runs": []})
    found = await asyncio.to_thread(RunStore(ctx.meta).list_recent, principal.key, limit)
    allowed = await queryable(ctx, principal)
    return JSONResponse({"runs": [_run_json(r, full=False) for r in found if allowed(r.database)]})


async def get_run(request: Request) -> Response:
    """One run of the caller (another principal's run is reported as not found)."""
    import asyncio

    from bzrk.meta.runs import RunStore
    from bzrk.meta.store import NotFound

    ctx: AppContext = request.app.state.ctx
    principal: Principal | None = request.scope.get("bzrk.principal")
    try:
        run = await asyncio.to_thread(RunStore(ctx.meta).get, request.path_params["run_id"])
    except NotFound:
        run = None
    visible = (
        run is not None
        and principal is not None
        and run.principal == principal.key
        and (await queryable(ctx, principal))(run.database)
    )
    if run is None or not visible:
        return JSONResponse(
            {"error": {"code": "NotFound", "message": "run not found"}}, status_code=404
        )
    return JSONResponse({"run": _run_json(run, full=True)})


async def not_found(request: Request, exc: Exception) -> Response:
    return JSONResponse(
        {"error": {"code": "NotFound", "message": f"no route {request.url.path}"}}, status_code=404
    )


def create_app(ctx: AppContext) -> ASGIApp:
    app = Starlette(
        routes=[
            Route("/query", query, methods=["POST"]),
            Route("/databases", databases, methods=["GET"]),
            Route("/databases/{database}/tables", tables, methods=["GET"]),
            Route("/databases/{database}/tables/{table}/fields", fields, methods=["GET"]),
            Route("/runs", list_runs, methods=["GET"]),
            Route("/runs/{run_id}", get_run, methods=["GET"]),
            *alert_routes.routes(),
        ],
        exception_handlers={404: not_found},
    )
    app.state.ctx = ctx
    return app
