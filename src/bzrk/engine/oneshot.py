"""One-shot execution: one query, one final answer, run by the query service.

The conformance runner and the engine tests run KQL here, and it goes the way every user's query
goes: :class:`~bzrk.engine.service.QueryService` plans it (parse, bind, compile in a planning
thread under a deadline), renders the plan once and runs it. Only the service's configuration
differs, as a one-shot ADX query differs from a Berserk search (:func:`one_shot_service`): one
final snapshot (progressive off), no implicit ``take 2000``, no required time filter, and the
tables its caller names (a :class:`TableResolver`) instead of a catalogue.

:func:`execute_text` is the blocking form (an answer, or :class:`QueryError` with the code and
location every surface would give); :func:`run_query` is the event stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from bzrk.engine.backends.base import Backend, QuerySettings
from bzrk.engine.compile.query import CompiledQuery, TableResolver
from bzrk.engine.events import (
    Column,
    Done,
    Error,
    Event,
    Location,
    Metadata,
    RowBatch,
    TableSchema,
    Visualization,
)
from bzrk.engine.request import QueryRequest, ResultLimits
from bzrk.engine.service import QueryService, ServiceLimits

# The events of a one-shot answer (the service's progress and run records are left out).
ANSWER_EVENTS = (TableSchema, RowBatch, Metadata, Done, Error)


@dataclass
class ResultTable:
    name: str
    columns: tuple[Column, ...]
    rows: list[list[Any]]


@dataclass
class QueryResult:
    tables: list[ResultTable] = field(default_factory=list)
    visualization: Visualization | None = None


class QueryError(Exception):
    """A query refused or failed: the ``Error`` event a surface would send, as an exception."""

    def __init__(self, error: Error) -> None:
        super().__init__(f"{error.code}: {error.message}")
        self.error = error

    @property
    def code(self) -> str:
        return self.error.code

    @property
    def message(self) -> str:
        return self.error.message

    @property
    def location(self) -> Location | None:
        return self.error.location


def one_shot_service(
    backend: Backend,
    resolver: TableResolver | None = None,
    settings: QuerySettings | None = None,
) -> QueryService:
    """The query service configured for one final answer over ``resolver``'s tables.

    ``settings`` bound the run as they bound a backend call: its time and memory limits become
    the service's, its ``extra`` ClickHouse settings go with every query.
    """
    bounds = settings or QuerySettings()
    limits = ServiceLimits(
        max_timeout_ms=max(1, int(bounds.max_execution_time_s * 1000)),
        max_memory_bytes=bounds.max_memory_usage,
        max_result_rows=bounds.max_result_rows or ServiceLimits().max_result_rows,
        implicit_take=None,
        time_filter_required=False,
    )
    return QueryService(
        backend,
        limits=limits,
        engine_settings=dict(bounds.extra),
        tables=resolver or TableResolver(),
    )


def one_shot_request(
    text: str, database: str = "default", max_rows: int | None = None
) -> QueryRequest:
    limits = ResultLimits(max_rows=max_rows) if max_rows else ResultLimits()
    return QueryRequest(query=text, database=database, progressive=False, limits=limits)


async def run_query(
    backend: Backend,
    text: str,
    *,
    resolver: TableResolver | None = None,
    settings: QuerySettings | None = None,
    database: str = "default",
) -> AsyncIterator[Event]:
    """Run a KQL query once: TableSchema / RowBatch / Metadata / Done, or an Error (alone when
    planning refuses the query, after the TableSchema when the run fails).

    Closing the iterator early kills the running ClickHouse query (the service does).
    """
    service = one_shot_service(backend, resolver, settings)
    request = one_shot_request(text, database, settings.max_result_rows if settings else None)
    try:
        async for event in service.execute(request):
            if isinstance(event, ANSWER_EVENTS):
                yield event
    finally:
        service.planning.close()


def execute_text(
    backend: Backend,
    text: str,
    *,
    resolver: TableResolver | None = None,
    settings: QuerySettings | None = None,
    database: str = "default",
) -> QueryResult:
    """Run a KQL query to its final answer; blocking (not on a running event loop).

    Raises:
        QueryError: the service's ``Error`` event (a syntax or semantic error, no translation,
            an engine failure or timeout), with its code, message and location.
    """

    async def collect() -> QueryResult:
        result = QueryResult()
        tables: dict[str, ResultTable] = {}
        async for event in run_query(
            backend, text, resolver=resolver, settings=settings, database=database
        ):
            if isinstance(event, Error):
                raise QueryError(event)
            if isinstance(event, TableSchema):
                tables[event.table] = ResultTable(event.table, tuple(event.columns), [])
                result.tables.append(tables[event.table])
            elif isinstance(event, RowBatch):
                tables[event.table].rows.extend(list(row) for row in event.rows)
            elif isinstance(event, Metadata) and event.visualization is not None:
                result.visualization = event.visualization
        return result

    return asyncio.run(collect())


def compile_text(
    text: str, resolver: TableResolver | None = None, database: str = "default"
) -> CompiledQuery:
    """The plan the query service makes of ``text`` (parse, bind, compile:
    :func:`bzrk.engine.planning.compile_query`, the binder's semantic errors first), for tests
    that read the plan itself; raises ``KqlError`` or ``CompileError``."""
    from bzrk.engine.planning import compile_query, globals_for

    tables = resolver or TableResolver()
    _, compiled = compile_query(text, {}, tables, globals_for(tables, {}, database))
    return compiled
