"""gRPC ``query.QueryService`` served over ASGI on the query port.

``ExecuteQuery`` validates the request, builds a :class:`~bzrk.engine.request.QueryRequest`
(surface ``"grpc"``), and encodes the executor's result stream as frames
(:mod:`bzrk.api.grpc.encode`). Transport-level failures are gRPC statuses:

* ``INVALID_ARGUMENT`` — undecodable request, empty query, no database, or an internal-only
  field (6, 7, 8, 9, 12, 13) from a public caller. Public means every principal whose kind is
  not ``"internal"``: the gateway only mints user / service_principal / oauth_client tokens,
  so only a trusted internal service signing its own token can set those fields.
* ``PERMISSION_DENIED`` — the caller may not query the database (message ``AccessDenied: …``,
  decided by :func:`bzrk.auth.permissions.authorize` through :mod:`bzrk.api.access`).
* ``RESOURCE_EXHAUSTED`` — the executor's first event is ``Error(code="QueueFull")`` (its
  admission queue is full).
* ``UNAVAILABLE`` — this process runs no query executor.
* ``DEADLINE_EXCEEDED`` / cancellation — see :mod:`bzrk.api.grpc.server`.

Query errors (parse, bind, execution) are ``error`` frames with status OK, as the official
clients expect.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from google.protobuf.message import DecodeError

from bzrk.api.access import ACCESS_DENIED, Decision, refusal
from bzrk.api.commands import command_events, is_command
from bzrk.api.grpc._pb import query_pb2 as pb
from bzrk.api.grpc.encode import FrameEncoder
from bzrk.api.grpc.server import CallContext, GrpcAsgiApp, GrpcError, Status
from bzrk.auth.internal import Principal
from bzrk.engine import events as ev
from bzrk.engine.request import QueryExecutor, QueryRequest
from bzrk.server.context import AppContext
from bzrk.types import ASGIApp

EXECUTE_QUERY = "/query.QueryService/ExecuteQuery"
PRINCIPAL_KEY = "bzrk.principal"  # set by bzrk.api.query_service after the token check
INTERNAL_KIND = "internal"
QUEUE_FULL = "QueueFull"
INTERNAL_ONLY_FIELDS = (
    "now_unix_nanos",
    "time_range_start_nanos",
    "time_range_end_nanos",
    "qws_members",
    "ingest_time_range_start_nanos",
    "ingest_time_range_end_nanos",
)
# Batches with more rows than this are encoded in a worker thread, keeping the loop responsive.
# The pool is our own: the default executor also runs the engine's blocking ClickHouse calls,
# and frames must not wait behind long queries.
_THREAD_ENCODE_ROWS = 256
_ENCODE_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="grpc-encode")


def _rfc3339_from_nanos(nanos: int) -> str:
    seconds, rest = divmod(nanos, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{rest // 100:07d}Z"


def build_request(
    request: pb.ExecuteQueryRequest,
    principal: Principal | None,
    context: CallContext,
    max_timeout_ms: int | None = None,
) -> QueryRequest:
    """Validate a decoded request and turn it into the engine's :class:`QueryRequest`."""
    if principal is None:
        # The query service verifies the internal token first; never run a query without it.
        raise GrpcError(Status.UNAUTHENTICATED, "internal token required")
    internal = principal.kind == INTERNAL_KIND
    set_internal = [name for name in INTERNAL_ONLY_FIELDS if request.HasField(name)]
    if set_internal and not internal:
        raise GrpcError(
            Status.INVALID_ARGUMENT,
            f"internal-only field(s) not accepted on the public endpoint: {', '.join(set_internal)}",
        )
    unsupported = [n for n in set_internal if n in ("now_unix_nanos", "qws_members")]
    if unsupported:
        raise GrpcError(Status.UNIMPLEMENTED, f"not supported by bzrk: {', '.join(unsupported)}")
    if not request.query.strip():
        raise GrpcError(Status.INVALID_ARGUMENT, "query is required")
    kind = request.database.WhichOneof("identifier") if request.HasField("database") else None
    database = getattr(request.database, kind) if kind else ""
    if not database:
        raise GrpcError(
            Status.INVALID_ARGUMENT, "database is required (database.name or database.id)"
        )
    since, until = request.since or None, request.until or None
    ingest_since, ingest_until = request.ingest_since or None, request.ingest_until or None
    # sint64 nanoseconds span 1677-2262: always a valid datetime.
    if request.HasField("time_range_start_nanos"):
        since = _rfc3339_from_nanos(request.time_range_start_nanos)
    if request.HasField("time_range_end_nanos"):
        until = _rfc3339_from_nanos(request.time_range_end_nanos)
    if request.HasField("ingest_time_range_start_nanos"):
        ingest_since = _rfc3339_from_nanos(request.ingest_time_range_start_nanos)
    if request.HasField("ingest_time_range_end_nanos"):
        ingest_until = _rfc3339_from_nanos(request.ingest_time_range_end_nanos)
    # A gRPC deadline is the transport's hard limit: the server answers DEADLINE_EXCEEDED and
    # closes the run (see server.py). It is not passed on as a soft budget, so a large result
    # streams block by block instead of being held whole for a possible soft-budget answer;
    # the server's own cap (query_max_timeout_ms) still bounds every query.
    timeout_ms = None
    request_id = context.extras.get("request_id", "")
    return QueryRequest(
        query=request.query,
        database=database,
        since=since,
        until=until,
        timezone=request.timezone or "UTC",
        ingest_since=ingest_since,
        ingest_until=ingest_until,
        timeout_ms=timeout_ms,
        bypass_cache=request.bypass_map_reduce_state_cache,
        principal=principal.key,
        surface="grpc",
        client_request_id=context.metadata.get("x-bzrk-client-request-id") or request_id,
    )


Authorizer = Callable[[Principal | None, str], Awaitable[Decision | None]]
# A management command (`.show tables`) in a database → its events (bzrk.api.commands).
Commands = Callable[[Principal, str, str], AsyncIterator[ev.Event]]


class QueryServicer:
    """``ExecuteQuery``: one request in, the encoded result stream out."""

    def __init__(
        self,
        executor: Callable[[], QueryExecutor | None],
        authorize: Authorizer,
        max_timeout_ms: int | None = None,
        commands: Commands | None = None,
    ) -> None:
        self._executor = executor
        self._commands = commands
        self._max_timeout_ms = max_timeout_ms
        self._authorize = authorize

    async def execute_query(self, data: bytes, context: CallContext) -> AsyncIterator[bytes]:
        try:
            request = pb.ExecuteQueryRequest.FromString(data)
        except DecodeError as exc:
            raise GrpcError(Status.INVALID_ARGUMENT, f"undecodable request: {exc}") from None
        request_id = str(uuid.uuid4())
        context.extras["request_id"] = request_id
        principal = context.scope.get(PRINCIPAL_KEY)
        query_request = build_request(request, principal, context, self._max_timeout_ms)
        denied = await self._authorize(principal, query_request.database)
        if denied is not None:
            raise GrpcError(Status.PERMISSION_DENIED, f"{ACCESS_DENIED}: {denied.message}")
        executor = self._executor()
        if executor is None:
            raise GrpcError(Status.UNAVAILABLE, "this process does not run the query engine")
        encoder = FrameEncoder(request_id)
        events = (
            self._commands(principal, query_request.database, query_request.query)
            if self._commands is not None and is_command(query_request.query)
            else executor.execute(query_request)
        )
        try:
            async for event in events:
                if isinstance(event, ev.Error) and event.code == QUEUE_FULL:
                    raise GrpcError(Status.RESOURCE_EXHAUSTED, event.message or "query queue full")
                if isinstance(event, ev.RowBatch) and len(event.rows) > _THREAD_ENCODE_ROWS:
                    frames = encoder.encode(event)
                    loop = asyncio.get_running_loop()
                    while (
                        frame := await loop.run_in_executor(_ENCODE_POOL, next, frames, None)
                    ) is not None:
                        yield frame
                else:
                    for frame in encoder.encode(event):
                        yield frame
                if isinstance(event, ev.Done | ev.Error):
                    return
            raise GrpcError(Status.INTERNAL, "the result stream ended without done or error")
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()


def create_app(ctx: AppContext) -> ASGIApp:
    settings = getattr(ctx, "settings", None)

    async def authorize(principal: Principal | None, database: str) -> Decision | None:
        return await refusal(ctx, principal, database, surface="grpc")

    def commands(principal: Principal, database: str, text: str) -> AsyncIterator[ev.Event]:
        return command_events(ctx, principal, database, text, surface="grpc")

    servicer = QueryServicer(
        lambda: ctx.executor,
        authorize,
        getattr(settings, "query_max_timeout_ms", None),
        commands,
    )
    return GrpcAsgiApp({EXECUTE_QUERY: servicer.execute_query})
