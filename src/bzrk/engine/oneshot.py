"""One-shot execution: KQL text → compiled SQL → backend → the result-stream events.

One final snapshot per query, planned by the query service's own front end (parse, bind,
compile: :mod:`bzrk.engine.planning`). :func:`execute_text` is the blocking core (the conformance
runner and the engine tests use it); :func:`run_query` wraps it as an async event stream with
located errors.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from bzrk.engine.backends.base import Backend, QuerySettings
from bzrk.engine.compile.errors import CompileError
from bzrk.engine.compile.query import CompiledQuery, TableResolver
from bzrk.engine.errors import EngineError, told
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
from bzrk.engine.values import table_rows

# Settings every compiled query relies on for KQL semantics.
SEMANTIC_SETTINGS: dict[str, str | int | float] = {
    # `extend x = x + 1, y = x` must see the input column, not the new alias.
    "prefer_column_name_to_alias": 1,
    # Outer joins fill missing sides with nulls, as KQL does, not with type defaults.
    "join_use_nulls": 1,
    # mv-expand of several arrays pads the shorter ones with nulls.
    "enable_unaligned_array_join": 1,
    "output_format_arrow_low_cardinality_as_dictionary": 0,
    # Inlined KQL expressions can be long; ClickHouse folds the repeated parts.
    "max_query_size": 16 * 1024 * 1024,
    # The binder accepts expressions 300 levels deep (kql/binder/core.py MAX_BIND_DEPTH),
    # which ClickHouse parses and analyses as about three AST levels each.
    "max_ast_depth": 4000,
    "max_parser_depth": 4000,
    # Dynamic values are JSON text; Kusto writes '/' unescaped, and a bag path read natively
    # (compile/bag_paths.py) must spell its text as the whole bag's text does.
    "output_format_json_escape_forward_slashes": 0,
}


@dataclass
class ResultTable:
    name: str
    columns: tuple[Column, ...]
    rows: list[list[Any]]


@dataclass
class QueryResult:
    tables: list[ResultTable] = field(default_factory=list)
    visualization: Visualization | None = None


def compile_text(
    text: str,
    resolver: TableResolver | None = None,
    probe: Callable[[str], list[dict[str, Any]]] | None = None,
    database: str = "default",
) -> CompiledQuery:
    """Parse, bind and compile KQL text the way the query service does
    (:func:`bzrk.engine.planning.compile_query`: the binder's semantic errors first); raises
    ``KqlError`` or :class:`CompileError`."""
    from bzrk.engine.planning import compile_query, globals_for

    tables = resolver or TableResolver()
    _, compiled = compile_query(text, {}, tables, globals_for(tables, {}, database), probe=probe)
    return compiled


def _with_semantics(settings: QuerySettings | None) -> QuerySettings:
    base = settings or QuerySettings()
    return replace(base, extra={**SEMANTIC_SETTINGS, **base.extra})


def execute_text(
    backend: Backend,
    text: str,
    *,
    resolver: TableResolver | None = None,
    settings: QuerySettings | None = None,
    query_id: str | None = None,
) -> QueryResult:
    """Compile and run a KQL query to completion; blocking.

    Raises:
        KqlError: the text does not parse.
        CompileError: a construct has no translation (located by its span).
        EngineError: ClickHouse failed (timeout, memory, cancellation, …).
    """
    effective = _with_semantics(settings)

    def probe(sql: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = backend.query_arrow(sql, settings=effective).to_pylist()
        return rows

    compiled = compile_text(text, resolver, probe)
    result = QueryResult(visualization=compiled.visualization)
    for index, table in enumerate(compiled.tables):
        qid = f"{query_id}-{index}" if query_id else None
        arrow = backend.query_arrow(table.render(), settings=effective, query_id=qid)
        result.tables.append(
            ResultTable(table.name, table.columns, table_rows(arrow, table.columns))
        )
    return result


def source_location(text: str, span: Any) -> Location | None:
    if span is None:
        return None
    from bzrk.kql.diagnostics import SourceText

    loc = SourceText(text).location(span)
    return Location(
        loc.start_byte, loc.end_byte, loc.start_line, loc.start_column, loc.end_line, loc.end_column
    )


def error_event(text: str, exc: BaseException, run_id: str = "") -> Error:
    """The located ``Error`` event for a failure while planning or running ``text``.

    What reaches the user is a code and a sentence of ours: ClickHouse's text (which names the
    generated SQL and settings) and Python's exception text are for the log, where the caller
    writes them with the run id.
    """
    from bzrk.kql.diagnostics import KqlError

    if isinstance(exc, KqlError):
        location = exc.location
        if location is None and exc.span is not None:
            return Error(
                code=exc.code,
                title=exc.title,
                message=exc.message,
                location=source_location(text, exc.span),
            )
        loc = (
            None
            if location is None
            else Location(
                location.start_byte,
                location.end_byte,
                location.start_line,
                location.start_column,
                location.end_line,
                location.end_column,
            )
        )
        return Error(code=exc.code, title=exc.title, message=exc.message, location=loc)
    if isinstance(exc, CompileError):
        return Error(
            code=exc.code,
            title="Unsupported",
            message=exc.message,
            location=source_location(text, exc.span),
        )
    if isinstance(exc, EngineError):
        said = told(exc, run_id)
        return Error(code=said.code, title=said.title, message=said.message)
    reference = f" (run id {run_id})" if run_id else ""
    return Error(
        code="InternalError",
        title="Internal error",
        message=f"the query failed on an internal error{reference}",
    )


async def run_query(
    backend: Backend,
    text: str,
    *,
    resolver: TableResolver | None = None,
    settings: QuerySettings | None = None,
    batch_rows: int = 10_000,
) -> AsyncIterator[Event]:
    """Run a KQL query once and yield TableSchema / RowBatch / Metadata / Done, or one Error.

    Closing the iterator early kills the running ClickHouse query.
    """
    query_id = f"q{uuid.uuid4().hex[:20]}"
    task = asyncio.ensure_future(
        asyncio.to_thread(
            execute_text, backend, text, resolver=resolver, settings=settings, query_id=query_id
        )
    )
    try:
        result = await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.to_thread(_kill_all, backend, query_id)
        raise
    except Exception as exc:
        yield error_event(text, exc)
        return
    iteration = uuid.uuid4().hex[:12]
    for table in result.tables:
        yield TableSchema(table.name, table.columns)
    for table in result.tables:
        rows = table.rows
        for start in range(0, max(len(rows), 1), batch_rows):
            chunk = rows[start : start + batch_rows]
            last = start + batch_rows >= len(rows)
            yield RowBatch(table.name, iteration, chunk, iteration_complete=last)
    yield Metadata(iteration, visualization=result.visualization)
    yield Done()


def _kill_all(backend: Backend, query_id: str) -> None:
    for index in range(16):
        backend.kill(f"{query_id}-{index}")
