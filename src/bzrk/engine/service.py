"""The query service: a :class:`QueryRequest` in, the one result stream out.

Berserk semantics live here: every table scan is bounded by the request window (intersected with
in-query bounds; none at all is ``MissingTimeFilter``), unlimited results get an implicit
``take 2000`` (a bare table ``tail 2000``), ``stop_when`` and ``timeout_ms`` end a run early with
an honest status, and every run is recorded.

**Progressive snapshots.** A query over tables runs on growing windows that share the request's
end and reach back 1/512, 1/64, 1/8 and all of it (newest first). Each run is a whole, correct
answer for its window — a lower bound of the final one — so any pipeline is progressive, the
final snapshot equals a one-shot run, and the repeated work costs at most 1/8 + 1/64 + … ≈ 14 %
more than one run (the 1/8 slice is skipped when the first two project the whole window to
answer within ``progressive_direct_below_ms``). Windows apply to every read of a table as a
``WHERE`` on the read (the plan's ``sql.ScanBounds`` node, given each run's window when the
plan tree is rendered for that run), so joins, unions and sub-queries are bounded the same
way and the sorting key and partitions prune what lies outside. The row cap and the hiding of
``$raw`` are nodes of the same tree (``_limit``); SQL text exists only per run, rendered once,
last.

Compiled plans (trees, not text) do not depend on the window and are cached (``plancache.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bzrk.engine import sql as S
from bzrk.engine import timewindow
from bzrk.engine.admission import Admission, QueueFull
from bzrk.engine.analysis import QueryShape, analyze_shape
from bzrk.engine.backends.base import Backend, QuerySettings, ScanStats
from bzrk.engine.budget import (
    group_limit_settings,
    is_overflow,
    next_reduction,
    overflow_error,
    reduction_warning,
)
from bzrk.engine.catalog_resolver import CatalogResolver, TableCatalog
from bzrk.engine.compile.context import Probe
from bzrk.engine.compile.errors import CompileError
from bzrk.engine.compile.query import CompiledQuery, TableResolver, TableSource
from bzrk.engine.compile.relation import CompiledTable, RenderedQuery, RenderedTable
from bzrk.engine.compile.scope import QueryEnvironment
from bzrk.engine.compile.summarize_budget import BudgetPolicy, Reduction
from bzrk.engine.errors import EngineError, QueryCancelled, QueryTimeout
from bzrk.engine.events import (
    Column,
    Done,
    Error,
    Event,
    Metadata,
    QueryWarning,
    RowBatch,
    RunStatus,
    TableSchema,
)
from bzrk.engine.failures import error_event, source_location
from bzrk.engine.parameters import ParameterError
from bzrk.engine.plancache import CachedPlan, PlanCache, plan_key
from bzrk.engine.planning import (
    Deadline,
    PlanningLimits,
    PlanningPool,
    PlanningTimeout,
    bound_query,
    compile_bound,
    globals_for,
)
from bzrk.engine.progress import RunProgress, ScanSample, ScanTicker, bin_progress
from bzrk.engine.request import QueryExecutor, QueryRequest
from bzrk.engine.runlog import RunLog, RunObserver, RunRecorder, with_run_id
from bzrk.engine.scanplan import GranuleCount, GranuleStats, explain_granules
from bzrk.engine.semantic_settings import SEMANTIC_SETTINGS, plan_settings
from bzrk.engine.shortcircuit import WholeAt, whole_at
from bzrk.engine.snapshots import (
    ROWS_PER_BATCH,
    ArrowRows,
    FinalResult,
    Snapshot,
    Streamed,
    primary_table,
    result_payload,
    snapshot_events,
    truncation_warning,
)
from bzrk.engine.stop import StopPredicate, StopPredicateError, parse_stop_when
from bzrk.engine.timewindow import (
    TimeExpressionError,
    Window,
    progressive_windows,
    scan_filter,
    window_coverage,
)
from bzrk.engine.values import table_rows
from bzrk.kql.diagnostics import KqlError, Span

log = logging.getLogger("bzrk.engine.service")

IMPLICIT_TAKE = 2000
RAW_FIELD = "$raw"


@dataclass(frozen=True, slots=True)
class ServiceLimits:
    max_timeout_ms: int = 300_000
    max_memory_bytes: int = 4 * 1024**3
    max_result_rows: int = 500_000
    # Default memory budget of one `summarize` (hint.budget overrides it per operator).
    summarize_budget_bytes: int = 256 * 1024**2
    # A query's chunk counters come from its plan (a second planning, run beside the query)
    # once it has run this long; a faster query reports rows only (scanplan.GranuleCount).
    # The second planning evaluates the skip indexes again: on a 33 ms trace lookup it costs
    # 25 ms of CPU, which on two cores the query shares. 200 ms: every query a user watches
    # progress of (the first progress tick comes at 500 ms) gets the figures.
    chunk_counters_after_ms: int = 200
    # Once the rows are in, an unfinished count is awaited at most this share of the query's
    # time, then dropped (None: awaited to its end).
    chunk_counters_grace: float | None = 0.25
    # How often a running window's scan progress is read and reported (engine/progress.py).
    progress_tick_ms: int = 500
    # The whole window runs next, skipping the remaining intermediate windows, once the two
    # last completed windows project it to take less than this: a snapshot shortly before the
    # final answer tells a user nothing, and its run costs the final answer that much later.
    progressive_direct_below_ms: int = 500
    # Planning (parse, bind, compile) of one query ends within this many seconds, or sooner
    # at the request's timeout_ms (engine/planning.py).
    planning_max_seconds: float = 10.0
    # Berserk's implicit cap of a result without take/limit/top/summarize (None: none, as a
    # one-shot run has, engine/oneshot.py; such a result still stops at max_result_rows).
    implicit_take: int | None = IMPLICIT_TAKE
    # Whether a query over tables needs a time bound (MissingTimeFilter without one). Berserk
    # requires one; a one-shot run over tables its caller made reads them whole.
    time_filter_required: bool = True


def _capped_outside(
    table: CompiledTable, rows: int, columns: tuple[Column, ...], newest_first: bool
) -> CompiledTable:
    """``table`` read by an outer SELECT of ``columns`` (``$raw`` left out), newest first when
    asked, cut at ``rows``: a node over the plan tree, rendered with it per run."""
    shown = [c.name for c in table.columns]
    hidden = [n for n in shown if n not in {c.name for c in columns}]
    outer = S.Select(
        columns=[(S.Star(except_=hidden or None), None)],
        from_=S.Subquery(table.plan),
        order_by=[(S.Col("timestamp"), True, False)] if newest_first else None,
        limit=S.Lit(rows),
    )
    return replace(table, plan=outer, columns=columns, cappable=False, row_cap=None)


class QueryFailed(Exception):
    def __init__(self, error: Error) -> None:
        super().__init__(error.message)
        self.error = error


def _fail(code: str, message: str, title: str = "") -> QueryFailed:
    return QueryFailed(Error(code=code, title=title or code, message=message))


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Take the outcome of a killed query's future: its QueryCancelled is expected, and
    asyncio would log it as "Future exception was never retrieved" (with a traceback)."""
    if future.done() and not future.cancelled():
        future.exception()


def _next_or_close(blocks: Any) -> Any:
    """The next block, or None after closing the exhausted stream (one thread hop for both)."""
    block = next(blocks, None)
    if block is None:
        blocks.close()
    return block


# ClickHouse's own max_block_size. A stream of raw rows reads in small blocks (chDB holds a
# few blocks ahead of the reader, so their size bounds its memory); a grouped result is small
# whatever the block size, and the scan under it runs faster in large blocks (the bench's
# errors_by_service: 59-67 ms at 8,192 rows per block, 45-48 ms at this size).
GROUPED_BLOCK_ROWS = 65_409


def _block_settings(settings: QuerySettings, table: RenderedTable) -> QuerySettings:
    """``settings`` for streaming ``table``: ClickHouse's block size for a grouped result."""
    if not table.grouped or "max_block_size" in settings.extra:
        return settings
    return replace(settings, extra={**settings.extra, "max_block_size": GROUPED_BLOCK_ROWS})


@dataclass(frozen=True, slots=True)
class _Block:
    """A streamed block cut at the rows still wanted, converted to rows in batches."""

    rows: int
    truncated: bool
    batches: list[list[list[Any]]]


def _next_rows(blocks: Any, columns: tuple[Column, ...], room: int) -> _Block | None:
    """The next block (at most ``room`` rows) as converted row batches, or None at the end:
    reading and converting in one thread hop, since a hop costs more than a small block's
    conversion (the loop stays free either way)."""
    block = _next_or_close(blocks)
    if block is None:
        return None
    truncated = block.num_rows > room
    if truncated:
        block = block.slice(0, room)
    batches = [
        table_rows(block.slice(start, ROWS_PER_BATCH), columns)
        for start in range(0, block.num_rows, ROWS_PER_BATCH)
    ]
    return _Block(block.num_rows, truncated, batches)


@dataclass
class _Plan:
    compiled: CompiledQuery
    resolver: CatalogResolver
    ingest: Window
    shape: QueryShape
    windows: list[Window]
    deadline: float | None
    stop: StopPredicate | None
    # Result table name -> (row cap, why: "take" | "tail" | "existence" | "cap").
    limits: dict[str, tuple[int, str]]
    # Compiles the query again keeping fewer series in budgeted summarizes (after an overflow).
    reduce: Callable[[Reduction], CompiledQuery] | None = None
    # When a snapshot is the whole answer however much of the window it covers (_whole_at).
    whole_at: WholeAt | None = None


@dataclass
class Discovery:
    """A request's discovery probe (``compile.context.Probe``): runs each query through
    :meth:`QueryService.run_discovery` and remembers that one ran."""

    service: QueryService
    bounds: S.Expr | None
    deadline: Deadline
    ran: bool = False

    def __call__(self, query: S.Query) -> list[dict[str, Any]]:
        self.ran = True
        return self.service.run_discovery(query, self.bounds, self.deadline)


class QueryService(QueryExecutor):
    def __init__(
        self,
        backend: Backend,
        *,
        catalog: TableCatalog | None = None,
        admission: Admission | None = None,
        runs: RunRecorder | None = None,
        observer: RunObserver | None = None,
        limits: ServiceLimits | None = None,
        engine_settings: dict[str, str | int | float] | None = None,
        tables: TableResolver | None = None,
    ) -> None:
        """``tables`` names tables instead of ``catalog`` (a one-shot run's own tables)."""
        self.backend = backend
        self.tables = tables
        # ClickHouse settings added to every query (benchmarks turn caches off this way).
        self.engine_settings = dict(engine_settings or {})
        self.catalog = catalog
        self.admission = admission or Admission(4, 64)
        self.runs = runs
        self.observer = observer
        self.limits = limits or ServiceLimits()
        self.plans = PlanCache()
        self.planning = PlanningPool(max(1, min(self.admission.max_running, 4)))
        self._sources: dict[tuple[str, str], tuple[Any, TableSource]] = {}

    # -- public -----------------------------------------------------------------------------
    async def execute(self, request: QueryRequest) -> AsyncIterator[Event]:
        run_id = str(uuid.uuid4())
        started = time.monotonic_ns()
        if self.runs is None and self.observer is None:
            # Nothing records the run: the events go straight out.
            async for event in self._execute(run_id, request, started):
                if not isinstance(event, FinalResult):
                    yield with_run_id(event, run_id)
            return
        record = RunLog(self.runs, run_id, request, self.observer)
        try:
            async for event in self._execute(run_id, request, started):
                if record.see(event):
                    yield with_run_id(event, run_id)
        except (GeneratorExit, asyncio.CancelledError):
            # Surfaces close the stream once they have the last event: only a close before
            # it is a cancel (a run that ended with Done or Error keeps its status).
            record.cancelled()
            raise
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(record.finish())

    # -- the run ----------------------------------------------------------------------------
    async def _execute(
        self, run_id: str, request: QueryRequest, started: int
    ) -> AsyncIterator[Any]:
        try:
            async with self.admission.admit() as waited_ns:
                # Planning is CPU work: a planning thread, inside admission, under a deadline.
                try:
                    plan = await self.planning.run(self._plan, request, run_id, started)
                except QueryFailed as failed:
                    yield failed.error
                    return
                for table in plan.compiled.tables:
                    yield TableSchema(table.name, tuple(table.columns))
                async for event in self._run_windows(run_id, request, plan, started, waited_ns):
                    yield event
        except QueueFull as exc:
            yield Error(code="QueueFull", title="Too many queries", message=str(exc))

    def _plan(self, request: QueryRequest, run_id: str = "", started: int | None = None) -> _Plan:
        """Check the request and compile its query (blocking: runs in a planning thread)."""
        started = time.monotonic_ns() if started is None else started
        now = timewindow.now_ticks()
        try:
            window = timewindow.request_window(
                request.since, request.until, now_ticks=now, timezone=request.timezone
            )
            ingest = (
                timewindow.request_window(
                    request.ingest_since,
                    request.ingest_until,
                    now_ticks=now,
                    timezone=request.timezone,
                )
                if request.ingest_since or request.ingest_until
                else Window()
            )
        except TimeExpressionError as exc:
            raise _fail("InvalidTimeRange", str(exc), "Invalid time range") from exc
        if request.timeout_ms is not None and request.timeout_ms > self.limits.max_timeout_ms:
            raise _fail(
                "InvalidArgument",
                f"timeout_ms {request.timeout_ms} is above the cap of {self.limits.max_timeout_ms} ms",
            )
        if request.timeout_ms is not None and request.timeout_ms <= 0:
            raise _fail("InvalidArgument", "timeout_ms must be positive")
        stop: StopPredicate | None = None
        if request.stop_when:
            try:
                stop = parse_stop_when(request.stop_when)
            except StopPredicateError as exc:
                raise _fail("InvalidStopWhen", str(exc), "Invalid stop_when") from exc
        if not request.database:
            raise _fail("InvalidArgument", "a database is required")
        name_of = getattr(self.catalog, "database_name", None)
        database = name_of(request.database) if name_of is not None else request.database
        if database is None:
            raise _fail(
                "DatabaseNotFound", f"database '{request.database}' not found", "Database not found"
            )
        environment = QueryEnvironment(database, request.principal)
        # The request's deadline counts from its arrival (queue wait and planning included).
        begun = time.monotonic() - (time.monotonic_ns() - started) / 1e9
        limit = PlanningLimits(self.limits.planning_max_seconds)
        budget = Deadline.of(request.timeout_ms, limit, begun)
        resolver = CatalogResolver(self.catalog, request.database, self._sources, self.tables)
        key = plan_key(request.database, request.query, request.parameters, request.principal)
        cached = self.plans.get(key, resolver.resolve)
        compile_window = (
            (window.start, window.end)
            if window.start is not None and window.end is not None
            else None
        )
        if cached is not None and cached.compiled.window_dependent:
            # bin_auto and make-series without from/to were sized for the plan's own window.
            cached = cached if cached.compiled.window == compile_window else None
        # Discovery queries (bag_unpack's keys, partition's values) read the request's window.
        discovery = Discovery(self, scan_filter(window, ingest), budget)
        if cached is not None:
            bound, compiled, shape = cached.query, cached.compiled, cached.shape
        else:
            bound, compiled = self._compile_request(
                request, resolver, environment, budget, run_id, compile_window, discovery
            )
            shape = analyze_shape(bound.query, request.query)
            # A plan shaped by the data a discovery query read is not reused for other data.
            if not resolver.listed and not discovery.ran:
                self.plans.put(key, CachedPlan(bound, compiled, shape, dict(resolver.lookups)))
        scans = bool(resolver.used)
        if (
            scans
            and self.limits.time_filter_required
            and window.start is None
            and ingest.start is None
            and not shape.has_time_bound
        ):
            raise _fail(
                "MissingTimeFilter",
                "this query scans a table without a time bound: pass since/until or filter on timestamp",
                "Missing time filter",
            )
        self._prepare(compiled, run_id)
        compiled, limits = self._limit(
            compiled, shape, stop, request.limits.max_rows, request.query
        )

        def reduce(reduction: Reduction) -> CompiledQuery:
            again = self._compile(
                bound, resolver, reduction, environment, compile_window, probe=discovery
            )
            return self._limit(again, shape, stop, request.limits.max_rows, request.query)[0]

        deadline = begun + request.timeout_ms / 1000 if request.timeout_ms is not None else None
        if scans and shape.time_bounds is not None:
            # The query's own time filter bounds the window the progressive runs slice.
            window = window.intersect(shape.time_bounds.window(now))
        windows = progressive_windows(
            window, request.progressive and scans and window.start is not None
        )
        return _Plan(
            compiled,
            resolver,
            ingest,
            shape,
            windows,
            deadline,
            stop,
            limits,
            reduce,
            whole_at(shape, limits, compiled),
        )

    def _prepare(self, compiled: CompiledQuery, run_id: str) -> None:
        """Create what the plan's SQL reads that exists once per backend (blocking: planning;
        each preparation remembers the backends it served, so a second call costs nothing)."""
        for key, create in compiled.preparations.items():
            try:
                create(self.backend)
            except Exception as exc:  # ClickHouse's text or a bug: the log gets it, not the user
                log.exception("run %s: preparing %s failed", run_id, key)
                raise _fail(
                    "InternalError",
                    f"the query needs {key.replace('_', '-')} data the engine could not set up "
                    f"(run id {run_id})",
                    "Internal error",
                ) from exc

    def _compile_request(
        self,
        request: QueryRequest,
        resolver: CatalogResolver,
        environment: QueryEnvironment,
        budget: Deadline,
        run_id: str,
        window: tuple[int, int] | None,
        probe: Probe | None = None,
    ) -> tuple[Any, CompiledQuery]:
        """Parse, bind and compile the request's query; failures become located errors."""
        text = request.query
        try:
            bound = bound_query(
                text,
                request.parameters,
                globals_for(resolver, self._listed_tables(request.database), request.database),
                deadline=budget,
            )
            return bound, self._compile(bound, resolver, None, environment, window, budget, probe)
        except ParameterError as exc:
            raise _fail("InvalidArgument", str(exc), "Invalid query parameter") from exc
        except PlanningTimeout as exc:
            code = "QueryTimeout" if exc.requested else "QueryTooComplex"
            message = (
                f"planning the query did not finish within its {exc.seconds:g} s budget"
                if exc.requested
                else f"planning the query took longer than {exc.seconds:g} s; simplify it"
            )
            raise QueryFailed(
                Error(
                    code=code,
                    title="Query too complex",
                    message=message,
                    location=source_location(text, Span(0, len(text))),
                )
            ) from exc
        except (KqlError, CompileError) as exc:
            raise QueryFailed(error_event(text, exc)) from exc
        except EngineError as exc:  # a discovery query failed: the log gets ClickHouse's text
            log.warning("run %s: a discovery query failed: %s", run_id, exc)
            raise QueryFailed(error_event(text, exc, run_id)) from exc
        except Exception as exc:  # a bug: logged with the run id, told without internals
            log.exception("planning failed (run %s)", run_id)
            raise _fail(
                "InternalError",
                f"the query could not be planned (an internal error; run id {run_id})",
                "Internal error",
            ) from exc

    def _compile(
        self,
        query: Any,
        resolver: CatalogResolver,
        reduction: Reduction | None,
        environment: QueryEnvironment,
        window: tuple[int, int] | None = None,
        deadline: Deadline | None = None,
        probe: Probe | None = None,
    ) -> CompiledQuery:
        """The plan of a parsed and bound query (at ``reduction`` after a budget overflow), sized
        for the request ``window`` where the query asks for it (bin_auto, make-series), with
        ``probe`` running its discovery queries, as ``environment``'s principal."""
        policy = BudgetPolicy(self.limits.summarize_budget_bytes, reduction)
        return compile_bound(
            query,
            resolver,
            budget=policy,
            deadline=deadline,
            window=window,
            probe=probe,
            environment=environment,
        )

    def run_discovery(
        self, query: S.Query, bounds: S.Expr | None, deadline: Deadline
    ) -> list[dict[str, Any]]:
        """Run a planning-time discovery query over ``bounds`` (the request's window), within
        what is left of the planning ``deadline``; blocking (a planning thread calls it)."""
        remaining = min(deadline.at - time.monotonic(), self.limits.max_timeout_ms / 1000)
        if remaining <= 0:
            raise PlanningTimeout(deadline.seconds, deadline.requested)
        settings = QuerySettings(
            max_execution_time_s=max(remaining, 0.05),
            max_memory_usage=self.limits.max_memory_bytes,
            extra={**SEMANTIC_SETTINGS, **self.engine_settings},
        )
        arrow = self.backend.query_arrow(S.render(query, S.Bindings(bounds)), settings=settings)
        rows: list[dict[str, Any]] = arrow.to_pylist()
        return rows

    def _listed_tables(self, database: str) -> dict[str, list[tuple[str, str]]]:
        """The database's tables and columns, as the binder sees them (none without a catalogue)."""
        if self.catalog is None:
            return {}
        try:
            listed = self.catalog.list_tables(database)
        except Exception:  # no catalogue answer: the resolver still names tables one by one
            log.debug("listing the tables of %s failed", database, exc_info=True)
            return {}
        return {t.name: list(t.columns) for t in listed}

    def _limit(
        self,
        compiled: CompiledQuery,
        shape: QueryShape,
        stop: StopPredicate | None,
        requested_max: int,
        query_text: str,
    ) -> tuple[CompiledQuery, dict[str, tuple[int, str]]]:
        """Cap every result: implicit take/tail for unlimited ones, the row cap for the rest."""
        statements = list(shape.statements)
        tables = []
        limits: dict[str, tuple[int, str]] = {}
        show_raw = RAW_FIELD in query_text
        for index, table in enumerate(compiled.tables):
            own = len(statements) == len(compiled.tables)
            statement = statements[index] if own else shape.last
            cap = max(1, min(self.limits.max_result_rows, requested_max))
            newest_first = False
            kind = "cap"
            implicit = self.limits.implicit_take
            if statement is not None and not statement.limited and implicit is not None:
                cap, kind = implicit, "take"
                if statement.bare_table and any(c.name == "timestamp" for c in table.columns):
                    newest_first, kind = True, "tail"
            if (
                stop is not None
                and stop.is_existence
                and statement is not None
                and table.name == compiled.tables[-1].name
                and not statement.limited
                and not statement.aggregating
                and statement.extendable
                and not shape.trailing_semicolon
            ):
                cap, kind, newest_first = 1, "existence", False
            columns = table.columns
            hide_raw = not show_raw and any(c.name == RAW_FIELD for c in columns)
            if hide_raw:
                # `$raw` is the record's hidden twin: queries read it, results only show it
                # when the query names it. Dropping it here also spares building it per row.
                columns = tuple(c for c in columns if c.name != RAW_FIELD)
            if own and statement is not None and statement.single_row and not hide_raw:
                # one row: nothing to cap (a LIMIT still costs planning)
                tables.append(replace(table, one_row=True))
            elif table.cappable and not newest_first and not hide_raw:
                tables.append(table.capped(cap + 1))
            else:
                tables.append(_capped_outside(table, cap + 1, columns, newest_first))
            if statement is not None and statement.aggregating:
                tables[-1] = replace(tables[-1], grouped=True)
            limits[table.name] = (cap, kind)
        return replace(compiled, tables=tables), limits

    async def _run_windows(
        self,
        run_id: str,
        request: QueryRequest,
        plan: _Plan,
        started: int,
        waited_ns: int,
    ) -> AsyncIterator[Any]:
        compiled, windows, deadline, stop = plan.compiled, plan.windows, plan.deadline, plan.stop
        full = windows[-1]
        progress = RunProgress(started, waited_ns, len(windows))
        last: Snapshot | None = None
        final_payload: Callable[[], dict[str, Any]] | None = None
        status: RunStatus = "complete"
        reduction: Reduction | None = None
        budget_note: QueryWarning | None = None
        index = 0
        timings: list[tuple[float, float]] = []  # (coverage, seconds) of completed windows
        skip_to_whole = False
        while index < len(windows):
            window = windows[index]
            run_started = time.monotonic()
            bounds = scan_filter(window, plan.ingest)
            # A plan with registry facts reads them per run (a small blocking query): not on
            # the event loop, unless memory holds them (no write since they were read). One
            # renders in place otherwise (a thread hop costs a fast query ~0.4 ms).
            run = compiled.bound_from_memory(bounds)
            if run is None:
                run = await asyncio.to_thread(compiled.bound, bounds)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                status = "soft_budget"
                break
            hard_limit = self.limits.max_timeout_ms / 1000
            settings = QuerySettings(
                # ClickHouse's own limit is a backstop a second after the deadline this loop
                # keeps; in whole seconds, so runs of one timeout share a kept connection (the
                # backend keeps one per set of settings).
                max_execution_time_s=min(hard_limit, math.ceil(remaining + 1))
                if remaining is not None
                else hard_limit,
                max_memory_usage=self.limits.max_memory_bytes,
                extra={
                    **SEMANTIC_SETTINGS,
                    **self.engine_settings,
                    **group_limit_settings(compiled),
                    **plan_settings(table.plan for table in compiled.tables),
                },
            )
            query_id = f"{run_id.replace('-', '')}{index}"
            coverage = window_coverage(window, full)
            ticker = ScanTicker(self.backend, query_id, self.limits.progress_tick_ms / 1000)
            # The last (whole-window) run of a query without a deadline streams block by block:
            # rows go out while ClickHouse still reads (a deadline could tear such a snapshot).
            # A query of one-row results is read whole: a stream's extra thread hops cost
            # ~0.9 ms of a 5 ms count (bench, alternating), and there is nothing to stream.
            streaming = (
                index == len(windows) - 1
                and deadline is None
                and self._streams
                and not all(t.one_row for t in compiled.tables)
            )
            streamed = Streamed(coverage)
            if budget_note is not None:
                streamed.warnings.append(budget_note)
            try:
                if streaming:
                    async for event in self._stream(
                        run,
                        plan.limits,
                        settings,
                        query_id,
                        streamed,
                        bool(plan.resolver.used),
                        ticker,
                    ):
                        if isinstance(event, ScanSample):
                            if (tick := progress.running(event, coverage)) is not None:
                                yield tick
                        else:
                            yield event
                    stats, run_granules = streamed.stats, streamed.granules
                else:
                    ran: tuple[list[Any], ScanStats, GranuleStats] | None = None
                    async for item in self._run_once(
                        run,
                        settings,
                        query_id,
                        remaining,
                        # Chunk counters come from the whole-window run's plan: an EXPLAIN per
                        # intermediate window would cost more than those small runs themselves.
                        bool(plan.resolver.used) and index == len(windows) - 1,
                        ticker,
                    ):
                        if isinstance(item, ScanSample):
                            if (tick := progress.running(item, coverage)) is not None:
                                yield tick
                        else:
                            ran = item
                    assert ran is not None
                    results, stats, run_granules = ran
                    timings.append((coverage, time.monotonic() - run_started))
                    # Decided before this window's progress goes out, so it counts the slices
                    # that will run.
                    if index < len(windows) - 2 and self._whole_next(timings, deadline):
                        skip_to_whole = True
                        progress.slices = progress.done + 2
            except TimeoutError:
                status = "soft_budget"
                break
            except QueryTimeout as exc:
                if deadline is not None:
                    status = "soft_budget"
                    break
                log.info("run %s timed out in the engine: %s", run_id, exc)
                yield error_event(request.query, exc, run_id)
                return
            except QueryCancelled:
                raise asyncio.CancelledError from None
            except EngineError as exc:
                if not (is_overflow(exc, compiled) and plan.reduce is not None):
                    # ClickHouse's text names the generated SQL: the log gets it, the user a code.
                    log.warning("run %s failed in the engine: %s", run_id, exc)
                    yield error_event(request.query, exc, run_id)
                    return
                # Over the summarize memory budget: keep fewer whole series, run the window again.
                reduction = next_reduction(reduction)
                if reduction is None or not any(b.series for b in compiled.budgets):
                    yield overflow_error(compiled, request.query)
                    return
                compiled = await self.planning.run(plan.reduce, reduction)
                budget_note = reduction_warning(compiled.budgets, reduction)
                continue
            if streaming:
                snapshot = streamed.snapshot()
                final_payload = streamed.payload
            else:
                snapshot = self._snapshot(compiled, results, plan.limits, coverage)
                if budget_note is not None:
                    snapshot.warnings.append(budget_note)
                async for event in snapshot_events(snapshot, str(uuid.uuid4()), compiled):
                    yield event
            last = snapshot
            # Berserk's short-circuit completion: a snapshot that already holds the whole
            # answer (take N with N rows, ...) ends the run, complete, before the full window.
            whole = (
                index < len(windows) - 1
                and plan.whole_at is not None
                and plan.whole_at.holds(snapshot)
            )
            if whole:
                progress.short_circuit = True
                snapshot.coverage = 1.0
            yield progress.completed(
                stats, run_granules, coverage, bin_progress(plan.shape.time_bin, window, full)
            )
            if whole:
                break
            if stop is not None and snapshot.tables:
                _, columns, rows = primary_table(snapshot)
                try:
                    if stop.cancels(columns, rows) and coverage < 1.0:
                        status = "stopped_early"
                        break
                except StopPredicateError as exc:
                    yield Error(code="InvalidStopWhen", title="Invalid stop_when", message=str(exc))
                    return
            index += 1
            if skip_to_whole:
                index = max(index, len(windows) - 1)
        if last is None:
            # Nothing finished inside the budget: an honest, empty snapshot.
            empty = Snapshot(
                [(t.name, [c.name for c in t.columns], []) for t in compiled.tables], [], 0.0
            )
            empty.warnings.append(
                QueryWarning(
                    kind="SoftBudget", message="no part of the window completed before the timeout"
                )
            )
            last = empty
            async for event in snapshot_events(empty, str(uuid.uuid4()), compiled):
                yield event
        kept = last
        yield FinalResult(final_payload or (lambda: result_payload(kept)))
        coverage = last.coverage
        if status == "complete" and coverage < 1.0:
            status = "soft_budget"
        yield Done(
            status=status,
            coverage=coverage,
            stop_reason=stop.text if status == "stopped_early" and stop else None,
        )  # type: ignore[arg-type]

    def _whole_next(self, timings: list[tuple[float, float]], deadline: float | None) -> bool:
        """Whether the whole window runs next: it is projected to answer within
        ``progressive_direct_below_ms``, and well within the deadline if there is one."""
        projected = timewindow.whole_window_seconds(timings)
        if projected is None or projected * 1000 >= self.limits.progressive_direct_below_ms:
            return False
        return deadline is None or deadline - time.monotonic() > 2 * projected

    async def _run_once(
        self,
        compiled: RenderedQuery,
        settings: QuerySettings,
        query_id: str,
        remaining: float | None,
        scans: bool,
        ticker: ScanTicker,
    ) -> AsyncIterator[ScanSample | tuple[list[Any], ScanStats, GranuleStats]]:
        """Scan samples while the window's tables run, then (results, scan stats, granules)."""

        def work() -> tuple[list[Any], ScanStats]:
            tables, total = [], ScanStats()
            for position, table in enumerate(compiled.tables):
                run = getattr(self.backend, "query_arrow_stats", None)
                qid = f"{query_id}x{position}"
                if run is not None:
                    arrow, stats = run(table.sql, settings=settings, query_id=qid)
                else:
                    arrow, stats = (
                        self.backend.query_arrow(table.sql, settings=settings, query_id=qid),
                        ScanStats(),
                    )
                tables.append(arrow)
                total = ScanStats(
                    total.rows_read + stats.rows_read,
                    total.bytes_read + stats.bytes_read,
                    total.elapsed_ns + stats.elapsed_ns,
                )
            return tables, total

        # The plan (chunk counters) is read on another connection while the query runs.
        plan = self._plan_granules(compiled, settings) if scans else None
        # A plain executor future and asyncio.wait (which never cancels it): the fewest event
        # loop turns between the query's end and its rows, which counts on a 7 ms query.
        future = asyncio.get_running_loop().run_in_executor(None, work)
        try:
            timeout = None if remaining is None else max(remaining, 0.001)
            async for sample in ticker.wait(future, timeout):
                yield sample
            tables, total = future.result()
            granules = await plan.result() if plan is not None else GranuleStats()
        except (TimeoutError, asyncio.CancelledError, GeneratorExit):
            if plan is not None:
                plan.cancel()
            await self._kill(compiled, query_id)
            with contextlib.suppress(BaseException):
                await asyncio.wait({future}, timeout=5)
            _retrieved(future)
            raise
        yield tables, total, granules

    @property
    def _streams(self) -> bool:
        return bool(getattr(self.backend, "streams_results", False))

    async def _stream(
        self,
        compiled: RenderedQuery,
        limits: dict[str, tuple[int, str]],
        settings: QuerySettings,
        query_id: str,
        out: Streamed,
        scans: bool,
        ticker: ScanTicker,
    ) -> AsyncIterator[Event | ScanSample]:
        """One snapshot of every table, converted and sent block by block as ClickHouse reads,
        with scan samples while a block is awaited."""
        iteration = str(uuid.uuid4())
        # The plan (chunk counters) is read on another connection while rows stream.
        plan = self._plan_granules(compiled, settings) if scans else None
        for position, table in enumerate(compiled.tables):
            cap, kind = limits.get(table.name, (self.limits.max_result_rows, "cap"))
            block_stats: list[ScanStats] = []
            blocks: Any = self.backend.stream_arrow(  # type: ignore[call-arg]
                table.sql,
                settings=_block_settings(settings, table),
                query_id=f"{query_id}x{position}",
                stats=block_stats,
            )
            sent, pending, truncated, ended = 0, None, False, False
            fetch: asyncio.Future[Any] | None = None
            names = [c.name for c in table.columns]
            try:
                while not truncated:
                    # Converting is CPU work proportional to the data: not on the loop.
                    fetch = asyncio.get_running_loop().run_in_executor(
                        None, _next_rows, blocks, table.columns, cap - sent
                    )
                    async for sample in ticker.wait(fetch):
                        yield sample
                    block = fetch.result()
                    if block is None:
                        ended = True
                        break
                    truncated = block.truncated
                    for rows in block.batches:
                        if pending is not None:
                            yield RowBatch(table.name, iteration, pending, False)
                        pending = rows
                        out.keep(table.name, names, rows)
                    sent += block.rows
            except (GeneratorExit, asyncio.CancelledError):
                if plan is not None:
                    plan.cancel()
                await self._kill(compiled, query_id)
                if fetch is not None:  # the stream may not be closed while a block is read
                    with contextlib.suppress(BaseException):
                        await asyncio.wait({fetch}, timeout=5)
                    _retrieved(fetch)
                raise
            finally:
                if not ended:  # stopping a running query can take a moment: not on the loop
                    await asyncio.to_thread(blocks.close)
                out.add(block_stats)
            out.counts[table.name] = sent
            yield RowBatch(table.name, iteration, pending or [], True)
            if truncated and kind != "existence":
                out.warnings.append(truncation_warning(table.name, cap, kind))
        out.tables = [(t.name, [c.name for c in t.columns]) for t in compiled.tables]
        if plan is not None:
            out.granules = out.granules + await plan.result()
        yield Metadata(iteration, tuple(out.warnings), compiled.visualization)

    def _plan_granules(self, compiled: RenderedQuery, settings: QuerySettings) -> GranuleCount:
        """Count the granules of every table's plan (``EXPLAIN``) once the query has run a while."""

        def count() -> GranuleStats:
            granules = GranuleStats()
            for table in compiled.tables:
                try:
                    granules = granules + explain_granules(
                        self.backend, table.explain_sql(), settings
                    )
                except EngineError:
                    log.debug("EXPLAIN failed; chunk counters stay zero", exc_info=True)
            return granules

        return GranuleCount(
            count, self.limits.chunk_counters_after_ms / 1000, self.limits.chunk_counters_grace
        )

    async def _kill(self, compiled: RenderedQuery, query_id: str) -> None:
        for position in range(len(compiled.tables)):
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.backend.kill, f"{query_id}x{position}")

    def _snapshot(
        self,
        compiled: CompiledQuery,
        results: Sequence[Any],
        limits: dict[str, tuple[int, str]],
        coverage: float,
    ) -> Snapshot:
        tables: list[tuple[str, list[str], Sequence[list[Any]]]] = []
        warnings: list[QueryWarning] = []
        for table, arrow in zip(compiled.tables, results, strict=True):
            cap, kind = limits.get(table.name, (self.limits.max_result_rows, "cap"))
            if arrow.num_rows > cap:
                arrow = arrow.slice(0, cap)
                if kind != "existence":
                    warnings.append(truncation_warning(table.name, cap, kind))
            tables.append(
                (table.name, [c.name for c in table.columns], ArrowRows(arrow, table.columns))
            )
        return Snapshot(tables, warnings, coverage)

    # -- runs -------------------------------------------------------------------------------
