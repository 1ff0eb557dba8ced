"""The one-shot event stream: schema, batches, metadata, done — or one located error."""

from __future__ import annotations

import asyncio
from typing import Any

from bzrk.engine.backends.base import QuerySettings
from bzrk.engine.events import Done, Error, Metadata, RowBatch, TableSchema
from bzrk.engine.oneshot import run_query


def collect(backend: Any, text: str) -> list[Any]:
    async def go() -> list[Any]:
        return [event async for event in run_query(backend, text)]

    return asyncio.run(go())


def test_events_in_order(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    events = collect(
        chdb_backend, "range x from 1 to 3 step 1 | extend y = x * 2 | render barchart"
    )
    kinds = [type(e) for e in events]
    assert kinds == [TableSchema, RowBatch, Metadata, Done]
    schema, batch, meta = events[0], events[1], events[2]
    assert [(c.name, c.type) for c in schema.columns] == [("x", "long"), ("y", "long")]
    assert batch.rows == [[1, 2], [2, 4], [3, 6]] and batch.iteration_complete
    assert meta.iteration_id == batch.iteration_id
    assert meta.visualization is not None and meta.visualization.type == "barchart"


def test_parse_error_is_located(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    text = "print x = (1 +"
    events = collect(chdb_backend, text)
    assert len(events) == 1 and isinstance(events[0], Error)
    assert events[0].location is not None and events[0].location.start_line == 1


def test_unknown_function_is_located(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    text = "print a = 1\n| extend b = frobnicate(a)"
    (error,) = collect(chdb_backend, text)
    assert isinstance(error, Error)
    assert error.code == "UnknownFunction"
    assert error.location is not None
    assert (error.location.start_line, error.location.start_column) == (2, 14)


def test_timeout_comes_back_as_an_error_event(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    async def go() -> list[Any]:
        heavy = "range x from 1 to 100000000000 step 1 | summarize count() by x % 7"
        settings = QuerySettings(max_execution_time_s=0.5)
        return [e async for e in run_query(chdb_backend, heavy, settings=settings)]

    # The schema went out when the plan was made; the run then ends in the coded error.
    *schema, error = asyncio.run(go())
    assert [type(e) for e in schema] == [TableSchema]
    assert isinstance(error, Error)
    assert error.code == "QueryTimeout"
    assert chdb_backend.query_arrow("SELECT 1 AS x").column("x").to_pylist() == [1]
