"""Planning is bounded: linear in the pipeline, shared values spelled once, deep input and slow
plans answered with located errors, never a RecursionError, a hang or an internal error."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from bzrk.engine.compile.passes import fuse
from bzrk.engine.compile.query import QueryCompiler, TableResolver
from bzrk.engine.events import Done, Error, RowBatch
from bzrk.engine.planning import (
    Deadline,
    PlanningLimits,
    PlanningTimeout,
    compile_bound,
    compile_query,
)
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService, ServiceLimits
from bzrk.kql import GlobalState
from bzrk.kql.parser import parse


def run(service: QueryService, query: str, **kwargs: Any) -> list[Any]:
    async def collect() -> list[Any]:
        request = QueryRequest(query=query, database="default", progressive=False, **kwargs)
        return [event async for event in service.execute(request)]

    return asyncio.run(collect())


def rows(events: list[Any]) -> list[list[Any]]:
    assert isinstance(events[-1], Done), events[-1]
    return [row for e in events if isinstance(e, RowBatch) for row in e.rows]


@pytest.fixture(scope="module")
def service(chdb_backend) -> QueryService:  # type: ignore[no-untyped-def]
    return QueryService(chdb_backend)


def doubling_lets(levels: int) -> str:
    text = "let a0 = 1; " + " ".join(f"let a{i + 1} = a{i} + a{i};" for i in range(levels))
    return text + f" print r = a{levels}"


def doubling_functions(levels: int) -> str:
    text = "let f0 = (x:long) { x + 1 }; "
    text += " ".join(f"let f{i + 1} = (x:long) {{ f{i}(x) + f{i}(x) }};" for i in range(levels))
    return text + f" range y from 1 to 3 step 1 | extend z = f{levels}(y)"


def test_a_let_chain_doubling_per_level_is_spelled_once_and_answers(service) -> None:  # type: ignore[no-untyped-def]
    # Inlined at every use, 22 levels spelled `a0` 4 M times (the process froze for 30 s).
    sql = QueryCompiler().compile(parse(doubling_lets(21))).tables[0].sql
    assert len(sql) < 20_000
    assert rows(run(service, doubling_lets(21))) == [[2**21]]


def test_a_function_chain_doubling_per_level_compiles_once_per_call(service) -> None:  # type: ignore[no-untyped-def]
    sql = QueryCompiler().compile(parse(doubling_functions(22))).tables[0].sql
    assert len(sql) < 20_000
    assert rows(run(service, doubling_functions(22))) == [[y, (y + 1) * 2**22] for y in (1, 2, 3)]


@pytest.mark.parametrize("steps", [300, 1000])
def test_a_long_extend_chain_compiles_to_sql_linear_in_its_length(service, steps: int) -> None:  # type: ignore[no-untyped-def]
    query = "print x = 1 | " + " | ".join("extend x = x + 1" for _ in range(steps))
    sql = QueryCompiler().compile(parse(query)).tables[0].sql
    # Merging every step into one expression nested them `steps` deep (and took ~10 s at 250).
    assert len(sql) < 40 * steps
    assert max(len(line) for line in sql.splitlines()) < 30 * fuse.MAX_EXPRESSION_NODES
    assert rows(run(service, query)) == [[steps + 1]]


def test_an_extend_chain_of_new_columns_answers(service) -> None:  # type: ignore[no-untyped-def]
    query = "print x0 = 1 | " + " | ".join(f"extend x{i + 1} = x{i} + 1" for i in range(300))
    answer = rows(run(service, query + " | project x300"))
    assert answer == [[301]]


def test_a_sum_of_250_terms_answers_and_2000_is_too_complex(service) -> None:  # type: ignore[no-untyped-def]
    assert rows(run(service, "print " + " + ".join(["1"] * 250))) == [[250]]
    events = run(service, "print " + " + ".join(["1"] * 2000))
    assert isinstance(events[-1], Error) and events[-1].code == "QueryTooComplex"
    assert events[-1].location is not None and events[-1].location.start_column == 7


def test_planning_past_the_deadline_raises_planning_timeout() -> None:
    query = "print x = 1 | " + " | ".join("extend x = x + 1" for _ in range(200))
    limits = PlanningLimits(max_seconds=1.0)
    past = Deadline(time.monotonic() - 1, 1.0, True)
    with pytest.raises(PlanningTimeout) as info:  # stopped by the binder
        compile_query(query, {}, TableResolver(), GlobalState(), deadline=past)
    assert info.value.requested
    with pytest.raises(PlanningTimeout):  # stopped by the compiler
        compile_bound(parse(query), TableResolver(), deadline=past)
    assert Deadline.of(50, limits, 0.0).seconds == limits.min_seconds  # a tiny budget still plans
    assert Deadline.of(500, limits, 0.0) == Deadline(0.5, 0.5, True)
    assert Deadline.of(None, limits, 0.0) == Deadline(1.0, 1.0, False)


def test_a_plan_over_the_service_cap_is_a_located_too_complex_error(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    service = QueryService(chdb_backend, limits=ServiceLimits(planning_max_seconds=0.001))
    query = "print x0 = 1 | " + " | ".join(f"extend x{i + 1} = x{i} + 1" for i in range(1000))
    events = run(service, query)
    assert len(events) == 1 and isinstance(events[0], Error)
    assert events[0].code == "QueryTooComplex"
    assert "longer than" in events[0].message and events[0].location is not None
