"""Planning a query, bounded: parse, bind and compile in a planning thread under a deadline.

Planning is CPU work in Python. Run on the event loop, one expensive query stalled every service
of the process (a 250-operator pipeline took ~10 s); so the query service plans in a
:class:`PlanningPool` thread, inside admission, and each plan has a deadline: the request's
``timeout_ms`` (at least :attr:`PlanningLimits.min_seconds`) or
:attr:`PlanningLimits.max_seconds`, whichever comes first. The binder and the
compiler check the clock as they go (a Python thread cannot be stopped from outside) and stop
with a located ``QueryTooComplex`` (the service's cap) or ``QueryTimeout`` (the request's own
budget) error.

Planning threads have large stacks and the process's recursion limit is raised to
:data:`RECURSION_LIMIT`: the compiler and the SQL renderer recurse once per level of an
expression, and the binder accepts expressions :data:`~bzrk.kql.binder.core.MAX_BIND_DEPTH`
levels deep, so a deep but legal query never meets a ``RecursionError``.

:func:`compile_query` is the front end's whole path: ``kql.parse`` → query parameters →
``kql.bind`` (the first step: Kusto's semantic errors, with Kusto's codes and locations, come
from it) → the compiler.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from bzrk.engine.compile import deadline as compile_deadline
from bzrk.engine.compile.context import Probe
from bzrk.engine.compile.query import CompiledQuery, QueryCompiler, TableResolver
from bzrk.engine.compile.scope import QueryEnvironment
from bzrk.engine.compile.summarize_budget import BudgetPolicy
from bzrk.engine.parameters import bind_parameters
from bzrk.kql import GlobalState, bind
from bzrk.kql import syntax as K
from bzrk.kql.binder.bound import BoundQuery
from bzrk.kql.diagnostics import KqlError, too_deep
from bzrk.kql.parser import parse
from bzrk.kql.symbols import Column, TableSchema, TableSymbol

log = logging.getLogger("bzrk.engine.planning")

# Python frames the compiler may use; planning threads get stacks large enough for them.
RECURSION_LIMIT = 8000
PLANNING_STACK_BYTES = 256 * 1024 * 1024

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PlanningLimits:
    """Bounds on planning one query; finite by default."""

    # The longest a plan may take when the request sets no shorter timeout_ms.
    max_seconds: float = 10.0
    # The least a plan gets under a request's timeout_ms: a tiny budget still plans an
    # ordinary query (which then answers an empty soft-budget snapshot, not an error).
    min_seconds: float = 0.25
    # Planning threads (at most this many queries are planned at once).
    threads: int = 2


class PlanningTimeout(Exception):
    """Planning passed its deadline; ``requested`` says whether it was the request's own."""

    def __init__(self, seconds: float, requested: bool) -> None:
        super().__init__(f"planning took longer than {seconds:g} s")
        self.seconds = seconds
        self.requested = requested


class PlanningPool:
    """Threads with large stacks that run planning work for the event loop."""

    def __init__(self, threads: int = 2) -> None:
        if sys.getrecursionlimit() < RECURSION_LIMIT:
            sys.setrecursionlimit(RECURSION_LIMIT)
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._size = max(1, threads)
        self._lock = threading.Lock()

    def _start(self) -> None:
        with self._lock:
            if self._threads:
                return
            previous = threading.stack_size()
            threading.stack_size(PLANNING_STACK_BYTES)
            try:
                for index in range(self._size):
                    worker = threading.Thread(
                        target=self._work, name=f"bzrk-planning-{index}", daemon=True
                    )
                    worker.start()
                    self._threads.append(worker)
            finally:
                threading.stack_size(previous)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            loop, future, fn, args = job
            if future.cancelled():
                continue
            try:
                result, error = fn(*args), None
            except BaseException as exc:  # handed to the awaiting coroutine as it is
                result, error = None, exc
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the caller's loop closed meanwhile: nobody waits for it
                log.debug("a planning result was dropped: its event loop is closed")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a planning thread; the caller's loop stays free meanwhile."""
        self._start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop, future, fn, args))
        return await future

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


@dataclass(frozen=True, slots=True)
class Deadline:
    """When planning must end, and whose limit that is (the request's or the service's)."""

    at: float
    seconds: float
    requested: bool

    @staticmethod
    def of(timeout_ms: int | None, limits: PlanningLimits, started: float) -> Deadline:
        if timeout_ms is not None:
            seconds = max(timeout_ms / 1000, limits.min_seconds)
            if seconds < limits.max_seconds:
                return Deadline(started + seconds, seconds, True)
        return Deadline(started + limits.max_seconds, limits.max_seconds, False)


def globals_for(
    resolver: TableResolver, tables: Mapping[str, list[tuple[str, str]]], database: str
) -> GlobalState:
    """What the binder knows: the database's tables, and the resolver for names not listed."""

    def symbol(name: str, columns: list[tuple[str, str]]) -> TableSymbol:
        raw = any(column == "$raw" for column, _ in columns)
        schema = TableSchema(tuple(Column(c, t) for c, t in columns), raw=raw)
        return TableSymbol(name, database, schema)

    def resolve(name: str) -> TableSymbol | None:
        source = resolver.resolve(name)
        return None if source is None else symbol(name, list(source.columns))

    listed = GlobalState.from_tables(dict(tables), database=database)
    return GlobalState(listed.databases, database, True, resolve)


def compile_query(
    text: str,
    parameters: Mapping[str, Any],
    resolver: TableResolver,
    globals: GlobalState,
    *,
    budget: BudgetPolicy | None = None,
    deadline: Deadline | None = None,
    probe: Probe | None = None,
) -> tuple[K.Query, CompiledQuery]:
    """Parse, bind and compile ``text``; the parsed (parameter-bound) query and its plan.

    Raises:
        KqlError: a syntax or semantic error (the binder's, with Kusto's codes), or a query
            too deep or too slow to analyze.
        ParameterError: a query parameter is missing or not a literal of its type.
        CompileError: a construct without a translation (located).
        PlanningTimeout: the deadline passed while compiling.
    """
    bound = bound_query(text, parameters, globals, deadline=deadline)
    return bound.query, compile_bound(
        bound, resolver, budget=budget, deadline=deadline, probe=probe
    )


def bound_query(
    text: str,
    parameters: Mapping[str, Any],
    globals: GlobalState,
    *,
    deadline: Deadline | None = None,
) -> BoundQuery:
    """Parse ``text``, bind its query parameters and bind it (the first half of
    :func:`compile_query`; the same errors but ``CompileError``): the bound tree the compiler
    reads."""
    query = parse(text)
    if parameters or any(isinstance(st, K.DeclareParameters) for st in query.statements):
        query = bind_parameters(query, parameters)
    try:
        return bind(query, globals, text, deadline.at if deadline is not None else None)
    except KqlError as exc:
        if (
            deadline is not None
            and exc.code == "QueryTooComplex"
            and time.monotonic() > deadline.at
        ):
            raise PlanningTimeout(deadline.seconds, deadline.requested) from None
        raise


def compile_bound(
    query: K.Query | BoundQuery,
    resolver: TableResolver,
    *,
    budget: BudgetPolicy | None = None,
    deadline: Deadline | None = None,
    probe: Probe | None = None,
    window: tuple[int, int] | None = None,
    environment: QueryEnvironment | None = None,
) -> CompiledQuery:
    """Compile a bound query under ``deadline`` (see :func:`compile_query`); ``window`` is
    the request's time window in ns, which bin_auto and make-series without from/to are sized
    from; ``environment`` the request's database and principal. The compiler reads the
    binder's findings (output names); a bare syntax tree compiles without them."""
    compiler = QueryCompiler(resolver, probe)
    if isinstance(query, BoundQuery):
        compiler.binding, query = query, query.query
    compiler.budget_policy = budget
    compiler.request_window = window
    if environment is not None:
        compiler.query_environment = environment
    try:
        with compile_deadline.planning_deadline(deadline.at if deadline is not None else None):
            return compiler.compile(query)
    except compile_deadline.PlanningTooLong:
        assert deadline is not None
        raise PlanningTimeout(deadline.seconds, deadline.requested) from None
    except RecursionError:
        # A safety net: the binder's depth limit keeps legal input well inside the stack.
        raise too_deep().at(query.span) from None
