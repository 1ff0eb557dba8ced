"""The ADX REST surface: ``POST /v2/rest/query``, ``/v1/rest/query``, ``/v1/rest/mgmt``.

Each request becomes one :class:`QueryRequest` for ``ctx.executor`` (or one management
command over ``ctx.components["schema"]``), and the event stream is encoded as v2 frames or
v1 tables while it arrives. The HTTP status is chosen only after the first event that would
write rows: a failure up to then (parse, bind, unknown database) is an HTTP error with the
error body of :mod:`bzrk.api.adx.errors`; after it, failures are reported in-band.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import replace
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from bzrk.api.access import ACCESS_DENIED, refusal
from bzrk.api.adx.errors import JSON_MEDIA_TYPE, AdxError, RequestContext, error_response
from bzrk.api.adx.mgmt import CommandContext, find_database, run_command
from bzrk.api.adx.request import AdxRequest, parse_request
from bzrk.api.adx.v1 import encode_v1
from bzrk.api.adx.v2 import encode_v2, encode_v2_fragmented
from bzrk.auth.internal import Principal
from bzrk.engine.events import Error, Event, Progress, TableSchema
from bzrk.engine.request import QueryRequest, ResultLimits, SchemaProvider
from bzrk.server.context import AppContext
from bzrk.types import ASGIApp

log = logging.getLogger("bzrk.api.adx")

PRINCIPAL_KEY = "bzrk.principal"
# What "notruncation" lifts the row and byte caps to: far beyond any answer a client can hold.
NO_TRUNCATION = ResultLimits(max_rows=2**53, max_bytes=2**53)
DEADLINE_GRACE_S = 2.0


def _request_context(request: Request) -> RequestContext:
    client_id = request.headers.get("x-ms-client-request-id") or f"bzrk;{uuid.uuid4()}"
    return RequestContext.new(client_id)


def _headers(rc: RequestContext) -> dict[str, str]:
    return {"x-ms-client-request-id": rc.client_request_id, "x-ms-activity-id": rc.activity_id}


async def _guarded(
    events: AsyncIterator[Event], timeout_ms: int | None
) -> AsyncGenerator[Event, None]:
    """The executor's stream with a crash, or a run past its deadline, ending in ``Error``.

    The engine enforces the timeout itself; this deadline (a grace later) only guarantees
    that a client's ``servertimeout`` holds even if the engine does not stop.
    """
    deadline = (
        anyio.current_time() + timeout_ms / 1000 + DEADLINE_GRACE_S
        if timeout_ms is not None
        else math.inf
    )
    try:
        while True:
            with anyio.move_on_after(deadline - anyio.current_time()) as scope:
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    return
            if scope.cancelled_caught:
                seconds = (timeout_ms or 0) / 1000
                yield Error(
                    code="QueryTimeout",
                    message=f"query exceeded its servertimeout of {seconds:g} s",
                )
                return
            yield event
    except Exception:  # a crash must still end the answer well-formed, reported in-band
        log.exception("query execution failed")
        yield Error(code="Internal", message="internal error while running the query")
    finally:
        with anyio.CancelScope(shield=True):
            await events.aclose()  # type: ignore[attr-defined]


async def _chain(first: list[Event], rest: AsyncIterator[Event]) -> AsyncIterator[Event]:
    for event in first:
        yield event
    async for event in rest:
        yield event


class AdxApp:
    """Request handling; one instance per query service."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    # -- limits and request translation ------------------------------------------------------

    def query_request(
        self, adx: AdxRequest, principal: Principal, rc: RequestContext, *, progressive: bool
    ) -> QueryRequest:
        settings = self.ctx.settings
        options = adx.options
        timeout_ms = options.timeout_ms
        if timeout_ms is not None:
            # Kusto clients ask for long timeouts freely (up to an hour); clamp, never refuse.
            timeout_ms = min(timeout_ms, settings.query_max_timeout_ms)
        if options.no_truncation:
            limits = NO_TRUNCATION
        else:
            default = ResultLimits(max_rows=settings.query_max_result_rows)
            limits = ResultLimits(
                max_rows=options.max_rows if options.max_rows is not None else default.max_rows,
                max_bytes=options.max_bytes if options.max_bytes is not None else default.max_bytes,
            )
        return QueryRequest(
            query=adx.csl,
            database=adx.db,
            since=options.since,
            until=options.until,
            timeout_ms=timeout_ms,
            limits=limits,
            progressive=progressive,
            parameters=dict(adx.parameters),
            principal=principal.key,
            surface="adx",
            client_request_id=rc.client_request_id,
        )

    # -- the three endpoints ----------------------------------------------------------------

    async def v2_query(self, request: Request) -> Response:
        return await self._serve(request, version=2)

    async def v1_query(self, request: Request) -> Response:
        return await self._serve(request, version=1)

    async def v1_mgmt(self, request: Request) -> Response:
        return await self._serve(request, version=1, mgmt=True)

    async def _serve(self, request: Request, *, version: int, mgmt: bool = False) -> Response:
        rc = _request_context(request)
        principal: Principal | None = request.scope.get(PRINCIPAL_KEY)
        try:
            if principal is None:
                raise AdxError("Unauthenticated", "a bearer token is required")
            adx = parse_request(await request.body())
            if adx.is_command:
                return await self._command(adx, principal, rc, version=version)
            if mgmt:
                raise AdxError(
                    "UnknownCommand",
                    "management endpoint expects a command starting with '.'; "
                    "send queries to /v1/rest/query or /v2/rest/query",
                )
            if not adx.db:  # commands may name none (Grafana sends ""), queries must
                raise AdxError(
                    "BadRequest", "'db' (the database to query) is required and non-empty"
                )
        except AdxError as exc:
            return error_response(exc.error, rc)
        except Exception:  # never a bare 500: the SDKs need the error envelope
            log.exception("ADX request failed")
            return error_response(Error(code="Internal", message="internal error"), rc)
        return await self._query(adx, principal, rc, version=version)

    async def _command(
        self, adx: AdxRequest, principal: Principal, rc: RequestContext, *, version: int
    ) -> Response:
        schema: SchemaProvider | None = self.ctx.components.get("schema")
        if schema is None:
            raise AdxError("SchemaUnavailable", "schema discovery is not available on this server")
        command = CommandContext(schema=schema, principal=principal, db=adx.db, app=self.ctx)
        try:
            table = await anyio.to_thread.run_sync(run_command, command, adx.csl)
        except AdxError:
            raise
        except Exception as exc:
            log.exception("management command failed")
            raise AdxError("SchemaUnavailable", f"schema discovery failed: {exc}") from exc
        events = _from_list(table.events())
        encoded = encode_v1(events, rc, command=True) if version == 1 else encode_v2(events, rc)
        body = b"".join([chunk async for chunk in encoded])
        return Response(body, media_type=JSON_MEDIA_TYPE, headers=_headers(rc))

    async def _resolve_database(self, name: str) -> str | None:
        """The database's canonical name, None when unknown; unchecked without a provider."""
        schema: SchemaProvider | None = self.ctx.components.get("schema")
        if schema is None:
            return name  # the engine reports unknown databases itself
        try:
            found = await anyio.to_thread.run_sync(find_database, schema, name)
        except Exception:  # discovery trouble must not block queries: the engine decides
            log.warning("database lookup failed; leaving it to the engine", exc_info=True)
            return name
        return found.name if found is not None else None

    async def _query(
        self, adx: AdxRequest, principal: Principal, rc: RequestContext, *, version: int
    ) -> Response:
        executor = self.ctx.executor
        if executor is None:
            return error_response(
                Error(code="BackendUnavailable", message="the query engine is not running"), rc
            )
        database = await self._resolve_database(adx.db)
        # Checked before saying whether the database exists: without a grant, both look alike.
        denied = await refusal(self.ctx, principal, database or adx.db, surface="adx")
        if denied is not None:
            return error_response(Error(code=ACCESS_DENIED, message=denied.message), rc)
        if database is None:
            return error_response(
                Error(code="DatabaseNotFound", message=f"database '{adx.db}' not found"), rc
            )
        adx = replace(adx, db=database)
        progressive = version == 2 and adx.options.progressive
        fragmented = version == 2 and (progressive or adx.options.fragment_primary_tables)
        query = self.query_request(adx, principal, rc, progressive=progressive)
        events = _guarded(aiter(executor.execute(query)), query.timeout_ms)
        # Hold the status line until the first event that writes rows (or shows progress).
        first: list[Event] = []
        try:
            async for event in events:
                first.append(event)
                if isinstance(event, Error):
                    await events.aclose()
                    return error_response(event, rc)
                if isinstance(event, TableSchema):
                    continue
                if isinstance(event, Progress) and not progressive:
                    continue
                break
        except BaseException:  # cancelled while waiting: stop the run too
            with anyio.CancelScope(shield=True):
                await events.aclose()
            raise
        stream = _chain(first, events)
        if version == 1:
            body = encode_v1(stream, rc)
        elif fragmented:
            body = encode_v2_fragmented(stream, rc, progressive=progressive)
        else:
            body = encode_v2(stream, rc)
        return StreamingResponse(
            _closing(body, events), media_type=JSON_MEDIA_TYPE, headers=_headers(rc)
        )


async def _from_list(events: list[Event]) -> AsyncIterator[Event]:
    for event in events:
        yield event


async def _closing(body: AsyncIterator[bytes], events: Any) -> AsyncIterator[bytes]:
    """Stream ``body``; however it ends (done, failed, client gone), cancel the run."""
    try:
        async for chunk in body:
            yield chunk
    finally:
        with anyio.CancelScope(shield=True):
            await body.aclose()  # type: ignore[attr-defined]
            await events.aclose()


async def _auth_metadata(request: Request) -> Response:
    # The JS SDK asks before its first call; 404 means "use the defaults" (adx.md §1).
    return await _not_found(request)


async def _not_found(request: Request, exc: Exception | None = None) -> Response:
    rc = _request_context(request)
    return error_response(
        Error(code="NotFound", message=f"no such endpoint: {request.method} {request.url.path}"),
        rc,
    )


async def _method_not_allowed(request: Request, exc: Exception | None = None) -> Response:
    rc = _request_context(request)
    return error_response(
        Error(
            code="MethodNotAllowed",
            message=f"{request.method} is not allowed on {request.url.path}",
        ),
        rc,
    )


def create_app(ctx: AppContext) -> ASGIApp:
    adx = AdxApp(ctx)
    return Starlette(
        routes=[
            Route("/v2/rest/query", adx.v2_query, methods=["POST"]),
            Route("/v1/rest/query", adx.v1_query, methods=["POST"]),
            Route("/v1/rest/mgmt", adx.v1_mgmt, methods=["POST"]),
            Route("/v1/rest/auth/metadata", _auth_metadata, methods=["GET"]),
        ],
        exception_handlers={404: _not_found, 405: _method_not_allowed},
    )
