"""The gRPC-over-ASGI query service under Hypercorn, called by a real grpcio client over h2c.

The executor here is scripted (the engine's own tests cover the engine); what is tested is the
gRPC layer: framing, statuses, validation, deadlines, cancellation, streaming.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from bzrk.api.grpc.service import create_app
from bzrk.engine import events as ev
from bzrk.engine.request import QueryRequest

from .helpers import (
    ScriptedExecutor,
    WithPrincipal,
    check_value_table,
    payloads,
    request,
    serve,
    stub,
    table_rows,
    value_table_events,
)

LONG = (ev.Column("v", "long"),)


def one_row(request: QueryRequest) -> list[ev.Event]:
    return [
        ev.TableSchema(ev.PRIMARY_RESULT, LONG),
        ev.RowBatch(ev.PRIMARY_RESULT, "it-1", [[1]], True),
        ev.Metadata("it-1"),
        ev.Done(),
    ]


@pytest.fixture
def grpc_target(request: pytest.FixtureRequest) -> Iterator[tuple[str, ScriptedExecutor]]:
    script = getattr(request, "param", one_row)
    executor = ScriptedExecutor(script)
    app = WithPrincipal(create_app(SimpleNamespace(meta=None, executor=executor)))  # type: ignore[arg-type]
    with serve(app) as target:
        yield target, executor


def call(target: str, message: Any, **kwargs: Any) -> list[Any]:
    channel, execute = stub(target)
    with channel:
        return list(execute(message, **kwargs))


def test_print_one_value(grpc_target: tuple[str, ScriptedExecutor]) -> None:
    target, executor = grpc_target
    frames = call(target, request("print v = 1", since="1h ago", ingest_until="now"))
    assert payloads(frames) == ["schema", "batch", "metadata", "done"]
    assert frames[0].schema.columns[0].name == "v"
    assert table_rows(frames) == [[1]]
    assert len({f.request_id for f in frames}) == 1 and frames[0].request_id
    sent = executor.requests[0]
    assert (sent.query, sent.database, sent.surface, sent.principal) == (
        "print v = 1",
        "default",
        "grpc",
        "sp:tester",
    )
    assert (sent.since, sent.until, sent.ingest_until, sent.timezone) == (
        "1h ago",
        None,
        "now",
        "UTC",
    )
    assert sent.timeout_ms is None


@pytest.mark.parametrize("grpc_target", [lambda r: value_table_events()], indirect=True)
def test_value_table_over_the_wire(grpc_target: tuple[str, ScriptedExecutor]) -> None:
    frames = call(grpc_target[0], request("print ..."))
    check_value_table(frames)


def query_error(request: QueryRequest) -> list[ev.Event]:
    return [
        ev.Error(
            "ParseError", "unexpected token '|'", "Syntax error", ev.Location(6, 7, 1, 7, 1, 8)
        )
    ]


@pytest.mark.parametrize("grpc_target", [query_error], indirect=True)
def test_query_error_is_an_error_frame_with_status_ok(
    grpc_target: tuple[str, ScriptedExecutor],
) -> None:
    frames = call(grpc_target[0], request("print | x"))
    assert payloads(frames) == ["error"]
    error = frames[0].error
    assert (error.code, error.title, error.location.start_column) == (
        "ParseError",
        "Syntax error",
        7,
    )


def status_of(target: str, message: Any, **kwargs: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call(target, message, **kwargs)
    return info.value.code(), info.value.details()


def test_missing_database_is_invalid_argument(grpc_target: tuple[str, ScriptedExecutor]) -> None:
    code, details = status_of(grpc_target[0], request("print v = 1", database=None))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "database" in details
    code, _ = status_of(grpc_target[0], request("print v = 1", database=""))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    code, _ = status_of(grpc_target[0], request("   "))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert grpc_target[1].requests == []


@pytest.mark.parametrize(
    "field,value",
    [
        ("now_unix_nanos", 1),
        ("time_range_start_nanos", 0),
        ("time_range_end_nanos", 5),
        ("qws_members", b""),
        ("ingest_time_range_start_nanos", 0),
        ("ingest_time_range_end_nanos", 7),
    ],
)
def test_internal_only_fields_are_refused_publicly(
    grpc_target: tuple[str, ScriptedExecutor], field: str, value: Any
) -> None:
    code, details = status_of(grpc_target[0], request("print v = 1", **{field: value}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and field in details
    assert grpc_target[1].requests == []


def test_internal_callers_may_set_time_ranges(grpc_target: tuple[str, ScriptedExecutor]) -> None:
    target, executor = grpc_target
    message = request(
        "print v = 1",
        time_range_start_nanos=1705314600 * 10**9 + 123_456_700,
        ingest_time_range_end_nanos=0,
    )
    frames = call(target, message, metadata=[("x-test-principal-kind", "internal")])
    assert payloads(frames)[-1] == "done"
    sent = executor.requests[0]
    assert (
        call(
            target,
            request("print v = 1", time_range_end_nanos=-(2**63)),
            metadata=[("x-test-principal-kind", "internal")],
        )[-1].WhichOneof("payload")
        == "done"
    )
    assert executor.requests[1].until == "1677-09-21T00:12:43.1452241Z"
    assert sent.since == "2024-01-15T10:30:00.1234567Z"
    assert sent.ingest_until == "1970-01-01T00:00:00.0000000Z"


def queue_full(request: QueryRequest) -> list[ev.Event]:
    return [ev.Error("QueueFull", "64 queries are waiting; try again later")]


@pytest.mark.parametrize("grpc_target", [queue_full], indirect=True)
def test_full_admission_queue_is_resource_exhausted(
    grpc_target: tuple[str, ScriptedExecutor],
) -> None:
    code, details = status_of(grpc_target[0], request("print v = 1"))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "try again" in details


def test_unknown_method_is_unimplemented(grpc_target: tuple[str, ScriptedExecutor]) -> None:
    with grpc.insecure_channel(grpc_target[0]) as channel:
        method = channel.unary_stream("/query.QueryService/Nope")
        with pytest.raises(grpc.RpcError) as info:
            list(method(b""))
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_undecodable_request_is_invalid_argument(grpc_target: tuple[str, ScriptedExecutor]) -> None:
    with grpc.insecure_channel(grpc_target[0]) as channel:
        method = channel.unary_stream("/query.QueryService/ExecuteQuery")
        with pytest.raises(grpc.RpcError) as info:
            list(method(b"\xff\xff\xff"))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def endless(request: QueryRequest) -> AsyncIterator[ev.Event]:
    """An engine that keeps working (and reporting progress) until it is closed."""
    yield ev.TableSchema(ev.PRIMARY_RESULT, LONG)
    n = 0
    while True:
        n += 1
        yield ev.Progress(rows_processed=n)
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("grpc_target", [endless], indirect=True)
def test_deadline_exceeded_stops_the_executor(grpc_target: tuple[str, ScriptedExecutor]) -> None:
    target, executor = grpc_target
    code, _ = status_of(target, request("print v = 1"), timeout=0.5)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert executor.closed.wait(5), "executor stream was not closed after the deadline"
    # The deadline is enforced by the transport, not handed to the engine as a soft budget.
    assert executor.requests[0].timeout_ms is None


@pytest.mark.parametrize("grpc_target", [endless], indirect=True)
def test_client_cancel_stops_the_executor(grpc_target: tuple[str, ScriptedExecutor]) -> None:
    target, executor = grpc_target
    channel, execute = stub(target)
    with channel:
        responses = execute(request("print v = 1"))
        seen = [next(responses) for _ in range(5)]
        assert payloads(seen)[0] == "schema"
        responses.cancel()
        assert executor.closed.wait(5), "executor stream was not closed after the cancel"
    yielded = executor.yielded
    time.sleep(0.2)
    assert executor.yielded == yielded, "the executor kept producing after the cancel"


def snapshots(request: QueryRequest) -> list[ev.Event]:
    events: list[ev.Event] = [ev.TableSchema(ev.PRIMARY_RESULT, LONG)]
    for n in range(1, 4):
        iteration = f"snap-{n}"
        events += [
            ev.Progress(rows_processed=n * 100, slices_done=n, slices_total=3),
            ev.RowBatch(ev.PRIMARY_RESULT, iteration, [[n * 100]], True),
            ev.Metadata(iteration),
        ]
    return [*events, ev.Done()]


@pytest.mark.parametrize("grpc_target", [snapshots], indirect=True)
def test_summarize_iterations_each_close_with_metadata(
    grpc_target: tuple[str, ScriptedExecutor],
) -> None:
    frames = call(grpc_target[0], request("T | summarize count()"))
    kinds = payloads(frames)
    assert kinds[0] == "schema" and kinds[-1] == "done"
    assert kinds.count("metadata") == 3
    ids = [f.batch.result_iteration_id for f in frames if f.WhichOneof("payload") == "batch"]
    assert ids == ["snap-1", "snap-2", "snap-3"]
    assert table_rows(frames) == [[300]]
    progress = [f.progress for f in frames if f.WhichOneof("payload") == "progress"]
    assert [p.rows_processed for p in progress] == [100, 200, 300]


def broken(request: QueryRequest) -> list[ev.Event]:
    raise RuntimeError("secret internals")


@pytest.mark.parametrize("grpc_target", [broken], indirect=True)
def test_executor_failure_is_internal_without_details(
    grpc_target: tuple[str, ScriptedExecutor],
) -> None:
    code, details = status_of(grpc_target[0], request("print v = 1"))
    assert code == grpc.StatusCode.INTERNAL and "secret" not in details


@pytest.mark.parametrize("grpc_target", [lambda r: [ev.TableSchema("T", LONG)]], indirect=True)
def test_stream_without_completion_is_internal(grpc_target: tuple[str, ScriptedExecutor]) -> None:
    code, _ = status_of(grpc_target[0], request("print v = 1"))
    assert code == grpc.StatusCode.INTERNAL


def test_no_executor_is_unavailable() -> None:
    app = WithPrincipal(create_app(SimpleNamespace(meta=None, executor=None)))  # type: ignore[arg-type]
    with serve(app) as target:
        code, _ = status_of(target, request("print v = 1"))
    assert code == grpc.StatusCode.UNAVAILABLE


def wide_rows(request: QueryRequest) -> Iterator[ev.Event]:
    yield ev.TableSchema(ev.PRIMARY_RESULT, (ev.Column("n", "long"), ev.Column("s", "string")))
    for chunk in range(10):
        rows = [[chunk * 5000 + i, "p" * 1000] for i in range(5000)]
        yield ev.RowBatch(ev.PRIMARY_RESULT, "only", rows, chunk == 9)
    yield ev.Metadata("only")
    yield ev.Done()


@pytest.mark.parametrize("grpc_target", [wide_rows], indirect=True)
def test_fifty_megabytes_stream_in_frames_under_four_mebibytes(
    grpc_target: tuple[str, ScriptedExecutor],
) -> None:
    target, _ = grpc_target
    channel, execute = stub(target)
    with channel:
        sizes, count, last = [], 0, -1
        for frame in execute(request("big")):
            sizes.append(frame.ByteSize())
            if frame.WhichOneof("payload") == "batch":
                for row in frame.batch.rows:
                    assert row.values[0].long_value == last + 1
                    last += 1
                    count += 1
    assert count == 50_000
    assert sum(sizes) > 50_000_000
    assert max(sizes) <= 4 * 1024 * 1024


def test_a_long_client_deadline_is_not_a_soft_budget() -> None:
    executor = ScriptedExecutor(one_row)
    ctx = SimpleNamespace(
        meta=None, executor=executor, settings=SimpleNamespace(query_max_timeout_ms=1000)
    )
    with serve(WithPrincipal(create_app(ctx))) as target:  # type: ignore[arg-type]
        frames = call(target, request("print v = 1"), timeout=600)
    assert payloads(frames)[-1] == "done"
    assert executor.requests[0].timeout_ms is None


def test_no_principal_is_unauthenticated() -> None:
    """Only reachable if the query service's token check were bypassed: refuse anyway."""
    executor = ScriptedExecutor(one_row)
    with serve(create_app(SimpleNamespace(meta=None, executor=executor))) as target:  # type: ignore[arg-type]
        code, _ = status_of(target, request("print v = 1"))
    assert code == grpc.StatusCode.UNAUTHENTICATED and executor.requests == []


@pytest.mark.parametrize("grpc_target", [snapshots], indirect=True)
def test_concurrent_calls_on_one_connection_stay_apart(
    grpc_target: tuple[str, ScriptedExecutor],
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    channel, execute = stub(grpc_target[0])
    with channel, ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: list(execute(request("q"))), range(8)))
    assert len({frames[0].request_id for frames in results}) == 8
    for frames in results:
        assert len({f.request_id for f in frames}) == 1
        assert payloads(frames)[-1] == "done"
        assert table_rows(frames) == [[300]]
