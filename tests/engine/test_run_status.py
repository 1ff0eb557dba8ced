"""A run's record says how it really ended, however the consumer closes the stream.

Every surface closes the executor's stream once it has the last event (gRPC, ADX, MCP do it in
a ``finally``); a close before ``Done``/``Error`` is a cancel, a close after it is not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from bzrk.engine.events import Done, Error, RowBatch
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService
from bzrk.meta.runs import RunStore
from bzrk.meta.store import MetaStore


@pytest.fixture
def service(chdb_backend, meta: MetaStore) -> Iterator[tuple[QueryService, RunStore]]:  # type: ignore[no-untyped-def]
    runs = RunStore(meta)
    yield QueryService(chdb_backend, runs=runs), runs


async def _read_until(stream: Any, last: type) -> Any:
    """Read events up to the first ``last`` one, then close the stream as the surfaces do."""
    try:
        async for event in stream:
            if isinstance(event, last):
                return event
    finally:
        await stream.aclose()
    raise AssertionError(f"no {last.__name__} event")


def test_a_run_closed_after_done_is_complete_with_its_rows(
    service: tuple[QueryService, RunStore],
) -> None:
    executor, runs = service
    request = QueryRequest(query="range x from 1 to 3 step 1", database="default", surface="grpc")
    final = asyncio.run(_read_until(executor.execute(request), Done))
    record = runs.get(final.run_id)
    assert record.status == "complete", record
    assert record.result is not None and record.result["row_count"] == 3
    assert record.finished_at is not None


def test_a_run_closed_after_an_error_keeps_the_error_code(
    service: tuple[QueryService, RunStore],
) -> None:
    executor, runs = service
    request = QueryRequest(query="print x = ", database="default", surface="adx")
    failed = asyncio.run(_read_until(executor.execute(request), Error))
    record = runs.get(failed.run_id)
    assert record.status == "error"
    assert record.error is not None and record.error["code"] == failed.code == "ParseError"


def test_a_run_closed_before_its_end_is_cancelled(service: tuple[QueryService, RunStore]) -> None:
    executor, runs = service

    async def scenario() -> str:
        stream = executor.execute(
            QueryRequest(
                query="range x from 1 to 3 step 1 | extend y = x",
                database="default",
                surface="mcp",
            )
        )
        async for event in stream:
            if isinstance(event, RowBatch):
                break  # rows seen, Done not yet: the consumer goes away
        await stream.aclose()
        listed = runs.list_recent(limit=5)
        return listed[0].id

    run_id = asyncio.run(scenario())
    record = runs.get(run_id)
    assert record.status == "cancelled" and record.surface == "mcp"
