"""The one-shot event stream: schema, batches, metadata, done — or one located error."""

from __future__ import annotations

import asyncio
from typing import Any

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


def test_runtime_error_comes_back_as_an_error_event(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    (error,) = collect(
        chdb_backend, "print x = toscalar(range i from 1 to 3 step 1 | where i > 1) / 0"
    )
    # A scalar subquery divided by zero is null in Kusto; here it must not crash either way.
    assert isinstance(error, (Error, TableSchema))
