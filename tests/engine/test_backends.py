"""The engine backends: per-query limits, cancellation from another thread, the server backend."""

from __future__ import annotations

import os
import threading
import time

import pytest

from bzrk.engine.backends.base import QuerySettings
from bzrk.engine.errors import BackendError, QueryCancelled, QueryTimeout

_SLOW = "SELECT count() FROM numbers(100000000000) WHERE sipHash64(number) % 7 = 3"


def _running(backend, query_id: str) -> bool:  # type: ignore[no-untyped-def]
    table = backend.query_arrow(
        "SELECT count() AS n FROM system.processes "
        f"WHERE query LIKE '%bzrk_qid:{query_id}%' AND query NOT LIKE '%system.processes%'"
    )
    return bool(table.column("n").to_pylist()[0])


def test_max_execution_time_stops_a_query(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryTimeout) as info:
        chdb_backend.query_arrow(_SLOW, settings=QuerySettings(max_execution_time_s=0.5))
    assert info.value.clickhouse_code == 159
    assert chdb_backend.query_arrow("SELECT 1 AS x").column("x").to_pylist() == [1]


def test_result_row_cap_is_enforced(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(BackendError):
        chdb_backend.query_arrow(
            "SELECT number FROM numbers(1000)", settings=QuerySettings(max_result_rows=10)
        )


def test_kill_from_another_thread_leaves_backend_healthy(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    query_id = "killme1"
    outcome: dict[str, BaseException | None] = {"error": None}

    def run() -> None:
        try:
            chdb_backend.query_arrow(
                _SLOW, settings=QuerySettings(max_execution_time_s=60), query_id=query_id
            )
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 20
    while not _running(chdb_backend, query_id):
        assert time.monotonic() < deadline, "the query never showed up in system.processes"
        time.sleep(0.05)
    chdb_backend.kill(query_id)
    worker.join(timeout=20)
    assert not worker.is_alive()
    assert isinstance(outcome["error"], QueryCancelled)
    assert not _running(chdb_backend, query_id)
    assert chdb_backend.query_arrow("SELECT 41 + 1 AS x").column("x").to_pylist() == [42]


def _server_backend():  # type: ignore[no-untyped-def]
    from bzrk.engine.backends.clickhouse_backend import ClickHouseBackend
    from bzrk.engine.errors import BackendUnavailable

    host = os.environ.get("BZRK_CLICKHOUSE_HOST", "127.0.0.1")
    port = int(os.environ.get("BZRK_CLICKHOUSE_PORT", "8123"))
    try:
        return ClickHouseBackend(host, port, connect_timeout_s=1)
    except BackendUnavailable as exc:
        pytest.skip(f"no ClickHouse server reachable at {host}:{port} ({exc.message[:80]})")


def test_clickhouse_server_backend_runs_and_times_out() -> None:
    backend = _server_backend()
    try:
        assert backend.query_arrow("SELECT 1 + 1 AS x").column("x").to_pylist() == [2]
        with pytest.raises(QueryTimeout):
            backend.query_arrow(_SLOW, settings=QuerySettings(max_execution_time_s=0.5))
    finally:
        backend.close()


def test_clickhouse_server_backend_keeps_a_date_like_string_a_string() -> None:
    # its insert reads text as String through input() and casts it under INSERT_SETTINGS
    # (tests/engine/test_arrow_input.py runs the same statement in chDB)
    import pyarrow as pa

    from bzrk.storage.schema import INSERT_SETTINGS

    backend = _server_backend()
    table = f"bzrk_test_{os.getpid()}"
    try:
        backend.execute(f"CREATE TABLE {table} (a JSON) ENGINE = MergeTree ORDER BY tuple()")
        data = pa.table({"a": pa.array(['{"day": "2024-01-01"}'])})
        backend.insert_arrow(table, data, settings=INSERT_SETTINGS)
        types = backend.query_arrow(f"SELECT dynamicType(a.day) AS t FROM {table}")
        assert types.column("t").to_pylist() == ["String"]
    finally:
        backend.execute(f"DROP TABLE IF EXISTS {table}")
        backend.close()


def test_streamed_results_come_in_small_blocks(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # chDB buffers a fixed number of blocks ahead of a slow reader, so memory stays bounded
    # only if the blocks are small; a caller may still ask for other sizes.
    from bzrk.engine.backends.chdb_backend import STREAM_BLOCK_ROWS

    sql = "SELECT number AS n, repeat('x', 100) AS s FROM numbers(100000)"
    sizes = [b.num_rows for b in chdb_backend.stream_arrow(sql, settings=QuerySettings())]
    assert sum(sizes) == 100_000
    assert max(sizes) == STREAM_BLOCK_ROWS
    bigger = QuerySettings(extra={"max_block_size": 50_000})
    assert max(b.num_rows for b in chdb_backend.stream_arrow(sql, settings=bigger)) == 50_000
    assert max(b.num_rows for b in chdb_backend.stream_arrow(sql)) == STREAM_BLOCK_ROWS


def test_a_finished_stream_leaves_its_connection_to_the_next(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    """Opening a connection costs a fast query ~0.3 ms: streams read to their end with the same
    settings share one; one stopped early or failed is closed, and the next stream answers."""
    from bzrk.engine.backends.chdb_backend import STREAM_BLOCK_ROWS

    settings = QuerySettings(max_execution_time_s=30)
    sql = "SELECT number FROM numbers(20000)"
    before = chdb_backend.open_connections
    for _ in range(5):
        assert sum(b.num_rows for b in chdb_backend.stream_arrow(sql, settings=settings)) == 20000
    assert chdb_backend.open_connections == before + 1
    # Stopped after its first block: that connection is not kept.
    stream = chdb_backend.stream_arrow(sql, settings=settings)
    assert next(stream).num_rows == STREAM_BLOCK_ROWS
    stream.close()
    assert chdb_backend.open_connections == before
    # A failed query's connection is not kept either.
    with pytest.raises(BackendError):
        list(
            chdb_backend.stream_arrow(
                "SELECT throwIf(number = 3) FROM numbers(10)", settings=settings
            )
        )
    assert chdb_backend.open_connections == before
    # Two streams at once each hold their own; both answer whole.
    first = chdb_backend.stream_arrow(sql, settings=settings)
    second = chdb_backend.stream_arrow(sql, settings=settings)
    head = next(first)
    assert sum(b.num_rows for b in second) + head.num_rows + sum(b.num_rows for b in first) == 40000
    assert chdb_backend.open_connections == before + 2
