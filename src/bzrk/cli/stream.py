"""Reads an ``ExecuteQuery`` frame stream through the gateway into whole snapshots.

Frames arrive as: schemas, then per snapshot its row batches and one metadata frame, then the
progress frame the engine emits after each snapshot (its ``custom_stats`` carry
``slices_done``/``slices_total``), and ``done`` or ``error`` last. A snapshot is handed on when
the progress frame after its metadata arrives (or ``done``), so its slice count is known.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import grpc

from bzrk.api.grpc._pb import common_api_pb2, query_pb2
from bzrk.api.grpc._pb import dynamic_value_pb2 as dv
from bzrk.cli.errors import AuthError, CliError, token_refused, transport_reason
from bzrk.gateway.grpc_forward import UPSTREAM_UNREACHABLE

EXECUTE_QUERY = "/api/grpc/query.QueryService/ExecuteQuery"
PRIMARY = "PrimaryResult"
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

COLUMN_TYPE_NAMES = {
    query_pb2.COLUMN_TYPE_BOOL: "bool",
    query_pb2.COLUMN_TYPE_INT: "int",
    query_pb2.COLUMN_TYPE_LONG: "long",
    query_pb2.COLUMN_TYPE_REAL: "real",
    query_pb2.COLUMN_TYPE_STRING: "string",
    query_pb2.COLUMN_TYPE_DATETIME: "datetime",
    query_pb2.COLUMN_TYPE_TIMESPAN: "timespan",
    query_pb2.COLUMN_TYPE_GUID: "guid",
    query_pb2.COLUMN_TYPE_DYNAMIC: "dynamic",
}


@dataclass(frozen=True)
class DateTime:
    """A KQL datetime as it came over the wire: nanoseconds since the Unix epoch (UTC)."""

    nanos: int


@dataclass(frozen=True)
class TimeSpan:
    """A KQL timespan: 100 ns ticks."""

    ticks: int


def decode_value(cell: dv.BqlValue) -> Any:
    kind = cell.WhichOneof("value")
    if kind is None or kind == "null_value":
        return None
    if kind == "datetime_value":
        return DateTime(cell.datetime_value)
    if kind == "timespan_value":
        return TimeSpan(cell.timespan_value)
    if kind == "bag_value":
        # Protobuf maps have no order: sorted keys make output and history files stable.
        properties = cell.bag_value.properties
        return {key: decode_value(properties[key]) for key in sorted(properties)}
    if kind == "array_value":
        return [decode_value(value) for value in cell.array_value.values]
    return getattr(cell, kind)


@dataclass
class Table:
    name: str
    columns: list[str]
    types: list[str]
    rows: list[list[Any]] = field(default_factory=list)


@dataclass
class Snapshot:
    """One whole result iteration, with the progress known when it completed."""

    number: int
    tables: dict[str, Table]
    warnings: list[str]
    slices_done: int
    slices_total: int
    at: float
    # The server said this snapshot is the whole answer before the last slice (short-circuit).
    short_circuit: bool = False

    @property
    def primary(self) -> Table:
        if PRIMARY in self.tables:
            return self.tables[PRIMARY]
        return next(iter(self.tables.values()), Table(PRIMARY, [], []))

    @property
    def final(self) -> bool:
        """The whole answer: every slice done, or the server stopped because it is whole."""
        return self.short_circuit or self.slices_total == 0 or self.slices_done >= self.slices_total


@dataclass
class RunOutcome:
    request_id: str
    last: Snapshot | None
    progress: query_pb2.Progress | None
    done: bool  # a done frame arrived (not cancelled, not timed out)
    timed_out: bool = False
    interrupted: bool = False  # Ctrl-C

    @property
    def complete(self) -> bool:
        return self.done and not self.timed_out and self.last is not None and self.last.final


class QueryFailed(CliError):
    """An ``error`` frame: a query error with its code and location."""


def grpc_target(endpoint: str) -> tuple[str, bool]:
    parts = urlsplit(endpoint)
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    return f"{parts.hostname}:{port}", secure


def open_channel(endpoint: str) -> grpc.Channel:
    target, secure = grpc_target(endpoint)
    opts = [
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.primary_user_agent", "bzrk-cli"),
    ]
    if secure:
        return grpc.secure_channel(target, grpc.ssl_channel_credentials(), options=opts)
    return grpc.insecure_channel(target, options=opts)


def build_request(
    query: str,
    database: str,
    since: str | None,
    until: str | None,
    ingest_since: str | None,
    ingest_until: str | None,
) -> query_pb2.ExecuteQueryRequest:
    return query_pb2.ExecuteQueryRequest(
        query=query,
        since=since or "",
        until=until or "",
        ingest_since=ingest_since or "",
        ingest_until=ingest_until or "",
        database=common_api_pb2.DatabaseRef(name=database),
    )


def describe_error(error: query_pb2.Error) -> str:
    text = f"{error.code or 'QueryError'}: {error.message or error.title}"
    if error.HasField("location") and error.location.start_line:
        text += f" (line {error.location.start_line}, column {error.location.start_column})"
    return text


def rpc_failure(exc: grpc.RpcError, endpoint: str, token_source: str) -> CliError:
    """A failed call as a message naming the hop that failed: the gateway (unreachable, or
    refusing the credential), the query service behind it, or the query itself."""
    code = exc.code() if hasattr(exc, "code") else None
    details = (exc.details() if hasattr(exc, "details") else str(exc)) or ""
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return token_refused(endpoint, token_source)
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return AuthError(
            f"the gateway at {endpoint} refused the query: permission denied ({details})"
        )
    if code == grpc.StatusCode.UNAVAILABLE:
        if details.startswith(UPSTREAM_UNREACHABLE):
            return CliError(f"the gateway at {endpoint} {details}")
        if _is_connection_failure(details):
            return CliError(f"cannot reach the gateway at {endpoint}: {transport_reason(details)}")
        return CliError(f"the query service behind {endpoint} is unavailable: {details}")
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return CliError(f"the query service is busy: {details}; retry later")
    name = code.name if code is not None else "UNKNOWN"
    return CliError(f"the query failed at {endpoint} ({name}): {details}")


_CONNECT_FAILURES = ("failed to connect", "connection refused", "dns resolution", "unreachable")


def _is_connection_failure(details: str) -> bool:
    lowered = details.lower()
    return any(marker in lowered for marker in _CONNECT_FAILURES)


class SnapshotReader:
    """Consumes frames; calls ``on_snapshot`` for each whole snapshot, ``on_progress`` for each
    progress frame. ``on_snapshot`` returns True to stop (the caller cancels the call)."""

    def __init__(
        self,
        on_snapshot: Callable[[Snapshot], bool],
        on_progress: Callable[[query_pb2.Progress], None] | None = None,
    ) -> None:
        self.on_snapshot = on_snapshot
        self.on_progress = on_progress or (lambda _p: None)
        self.request_id = ""
        self.schemas: dict[str, tuple[list[str], list[str]]] = {}
        self.iteration: str | None = None
        self.tables: dict[str, Table] = {}
        self.pending: tuple[dict[str, Table], list[str]] | None = None
        self.progress: query_pb2.Progress | None = None
        self.count = 0
        self.last: Snapshot | None = None
        self.stopped = False
        self.done = False

    def _slices(self) -> tuple[int, int]:
        if self.progress is None:
            return 0, 0
        stats = self.progress.custom_stats
        return int(stats.get("slices_done", 0)), int(stats.get("slices_total", 0))

    def _emit(self) -> bool:
        if self.pending is None:
            return False
        tables, warnings = self.pending
        self.pending = None
        self.count += 1
        done, total = self._slices()
        whole = bool(self.progress is not None and self.progress.short_circuit_completion)
        self.last = Snapshot(self.count, tables, warnings, done, total, time.time(), whole)
        return self.on_snapshot(self.last)

    def feed(self, frames: Iterator[query_pb2.ExecuteQueryResultFrame]) -> None:
        for frame in frames:
            if frame.request_id and not self.request_id:
                self.request_id = frame.request_id
            kind = frame.WhichOneof("payload")
            if kind == "schema":
                columns = [c.name for c in frame.schema.columns]
                types = [COLUMN_TYPE_NAMES.get(c.type, "dynamic") for c in frame.schema.columns]
                self.schemas[frame.schema.name] = (columns, types)
            elif kind == "batch":
                batch = frame.batch
                if batch.result_iteration_id != self.iteration:
                    self.iteration = batch.result_iteration_id
                    self.tables = {}
                table = self.tables.get(batch.table_name)
                if table is None:
                    columns, types = self.schemas.get(batch.table_name, ([], []))
                    table = self.tables[batch.table_name] = Table(
                        batch.table_name, list(columns), list(types)
                    )
                table.rows.extend([decode_value(v) for v in row.values] for row in batch.rows)
            elif kind == "metadata":
                # Tables with a schema but no batch in this snapshot are empty, not absent.
                for name, (columns, types) in self.schemas.items():
                    self.tables.setdefault(name, Table(name, list(columns), list(types)))
                warnings = [w.message or w.kind for w in frame.metadata.warnings]
                warnings += [f.message for f in frame.metadata.partial_failures]
                ordered = dict(sorted(self.tables.items(), key=lambda kv: kv[0] != PRIMARY))
                self.pending = (ordered, warnings)
                self.tables = {}
                self.iteration = None
            elif kind == "progress":
                self.progress = frame.progress
                self.on_progress(frame.progress)
                if self._emit():
                    self.stopped = True
                    return
            elif kind == "done":
                if self._emit():
                    self.stopped = True
                    return
                self.done = True
                return
            elif kind == "error":
                raise QueryFailed(describe_error(frame.error))


def run_query(
    endpoint: str,
    token: str,
    request: query_pb2.ExecuteQueryRequest,
    timeout_s: float,
    reader: SnapshotReader,
    token_source: str = "--token",
) -> RunOutcome:
    """Run one call to the end, to a stop (cancelled), to the deadline or to Ctrl-C."""
    with open_channel(endpoint) as channel:
        execute = channel.unary_stream(
            EXECUTE_QUERY,
            request_serializer=query_pb2.ExecuteQueryRequest.SerializeToString,
            response_deserializer=query_pb2.ExecuteQueryResultFrame.FromString,
        )
        call = execute(
            request,
            metadata=[("authorization", f"Bearer {token}")],
            timeout=timeout_s,
        )
        timed_out = interrupted = False
        try:
            reader.feed(call)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                timed_out = True
            else:
                raise rpc_failure(exc, endpoint, token_source) from None
        except KeyboardInterrupt:
            interrupted = True  # the caller shows the last complete snapshot
        finally:
            if not reader.done:
                call.cancel()
        return RunOutcome(
            reader.request_id, reader.last, reader.progress, reader.done, timed_out, interrupted
        )


def snapshot_rows(snapshot: Snapshot) -> tuple[Sequence[str], Sequence[Sequence[Any]]]:
    table = snapshot.primary
    return table.columns, table.rows
