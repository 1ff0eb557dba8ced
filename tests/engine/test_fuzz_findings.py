"""The fuzz findings of issue 19, each through the query service: a located, coded error of ours
(or Kusto's answer), never an internal error, a wrong value or ClickHouse's text."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from bzrk.engine.events import Done, Error, RowBatch
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService, ServiceLimits


@pytest.fixture(scope="module")
def service(chdb_backend) -> QueryService:  # type: ignore[no-untyped-def]
    return QueryService(chdb_backend)


def run(service: QueryService, query: str, parameters: dict[str, Any] | None = None) -> list[Any]:
    async def collect() -> list[Any]:
        request = QueryRequest(
            query=query, database="default", progressive=False, parameters=parameters or {}
        )
        return [event async for event in service.execute(request)]

    return asyncio.run(collect())


def rows(events: list[Any]) -> list[list[Any]]:
    assert isinstance(events[-1], Done), events[-1]
    return [row for e in events if isinstance(e, RowBatch) for row in e.rows]


def error(events: list[Any]) -> Error:
    errors = [e for e in events if isinstance(e, Error)]
    assert errors, events
    for marker in ("Code: ", "DB::Exception", "SELECT", "SETTINGS", "Traceback"):
        assert marker not in errors[0].message
    return errors[0]


def test_an_integer_literal_past_the_long_range_is_real_as_in_kusto(service) -> None:  # type: ignore[no-untyped-def]
    assert rows(run(service, "print x = 99999999999999999999999")) == [[1e23]]
    assert rows(run(service, "print x = " + "9" * 400)) == [[float("inf")]]
    assert rows(run(service, "print x = -9223372036854775808")) == [[-(2**63)]]


def test_a_long_literal_past_the_range_is_a_located_syntax_error(service) -> None:  # type: ignore[no-untyped-def]
    found = error(run(service, "print x = long(99999999999999999999999)"))
    assert found.code == "ParseError" and found.location is not None


@pytest.mark.parametrize(
    "query",
    [
        "print datetime_part('foo', now())",
        "print datetime_add('foo', 1, now())",
        "print datetime_diff('eon', now(), now())",
    ],
)
def test_an_unknown_datetime_part_is_a_located_invalid_argument(service, query: str) -> None:  # type: ignore[no-untyped-def]
    found = error(run(service, query))
    assert found.code == "InvalidArgument" and "must be one of: year, quarter" in found.message
    # located at the part name (the binder's KS140), where it was the whole call
    assert found.location is not None
    assert query[found.location.start_byte : found.location.end_byte] in ("'foo'", "'eon'")


@pytest.mark.parametrize(
    "call", ["percentiles(x, 200)", "percentile(x, -1)", "percentiles(x, 5, 101)"]
)
def test_a_percentile_outside_0_to_100_is_a_located_invalid_argument(service, call: str) -> None:  # type: ignore[no-untyped-def]
    found = error(run(service, f"range x from 1 to 10 step 1 | summarize {call}"))
    assert found.code == "InvalidArgument" and found.location is not None


def test_a_string_where_a_number_is_declared_is_the_binders_type_mismatch(service) -> None:  # type: ignore[no-untyped-def]
    found = error(run(service, "print array_slice(dynamic([1, 2]), 'a', 1)"))
    assert found.code == "TypeMismatch" and "start" in found.message
    assert found.location is not None and found.location.start_column == 36
    assert rows(run(service, "print array_slice(dynamic([1, 2, 3]), 1, 2)")) == [[[2, 3]]]


@pytest.mark.parametrize("value", [{"a": 1}, 1e29, "1e29", [1], "1d", True])
def test_a_query_parameter_not_of_its_declared_type_is_refused(service, value: Any) -> None:  # type: ignore[no-untyped-def]
    found = error(run(service, "declare query_parameters(p:long); print p", {"p": value}))
    assert found.code == "InvalidArgument" and "'p'" in found.message


@pytest.mark.parametrize(
    ("declared", "value", "expected"),
    [("long", 42, 42), ("long", "-5", -5), ("int", 4.0, 4), ("real", 3, 3.0), ("bool", True, True)],
)
def test_a_query_parameter_of_its_type_is_taken(
    service, declared: str, value: Any, expected: Any
) -> None:  # type: ignore[no-untyped-def]
    query = f"declare query_parameters(p:{declared}); print p"
    assert rows(run(service, query, {"p": value})) == [[expected]]


def test_engine_failures_are_told_in_our_words(service) -> None:  # type: ignore[no-untyped-def]
    found = error(run(service, "print x = extract('(', 1, 'a')"))
    assert found.code == "InvalidArgument" and "regular expression" in found.message
    found = error(
        run(service, "range x from 1 to 3 step 1 | extend y = assert(x < 2, 'x too big')")
    )
    assert (found.code, found.message) == ("AssertionFailed", "x too big")


def test_modulo_of_decimals_is_defined(service) -> None:  # type: ignore[no-untyped-def]
    # Was an InternalError ("unknown operator '%'"): the SQL layer has no % operator.
    query = "print a = todecimal(5) % 2, b = todecimal(-5.5) % todecimal(2), c = todecimal(5) % 0"
    assert rows(run(service, query)) == [[Decimal("1"), Decimal("0.5"), None]]


def test_an_engine_timeout_is_told_without_clickhouse_text(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # The hard limit (no timeout_ms of the request) sent ClickHouse's "Code: 159. DB::Exception".
    service = QueryService(chdb_backend, limits=ServiceLimits(max_timeout_ms=1000))
    query = "range x from 1 to 100000000000 step 1 | summarize s = sum(x * x)"
    found = error(run(service, query))
    assert found.code == "QueryTimeout" and "time limit" in found.message


def test_a_column_outside_an_aggregate_in_summarize_is_a_located_type_mismatch(service) -> None:  # type: ignore[no-untyped-def]
    # Was an InternalError (ClickHouse's code 215), or rows when no other aggregate was there;
    # Kusto refuses `summarize a by b` (Kusto-Query-Language issue 125).
    for query in (
        "datatable(x: int) [1, 3, 2, 1] | summarize a = (x), b = make_list(x, 2)",
        "datatable(x: int, y: int) [1, 3, 2, 1] | summarize a = x by y",
    ):
        found = error(run(service, query))
        assert found.code == "TypeMismatch" and "'x'" in found.message
        assert found.location is not None
    query = (
        "datatable(x: int, y: int) [1, 3, 2, 1]"
        " | summarize a = count() + 1, b = sum(x) * 2, c = y by y | order by y asc"
    )
    assert rows(run(service, query)) == [[1, 2, 4, 1], [3, 2, 2, 3]]


def test_an_aggregate_bzrk_does_not_translate_is_named_as_such(service) -> None:  # type: ignore[no-untyped-def]
    # Kusto's `passthrough` aggregate was refused as "summarize reads the column 'x' outside an
    # aggregate function" (so was count_distinct, which now runs).
    found = error(run(service, "datatable(x: int) [1, 2] | summarize passthrough(x)"))
    assert found.code == "UnknownFunction" and "passthrough" in found.message


def test_repeat_makes_at_most_1048576_elements_as_range_does(service) -> None:  # type: ignore[no-untyped-def]
    # repeat('a', 1000000000) answered a 4 GB array; four at once took bzrk dev past 23 GB.
    query = "print n = array_length(repeat('a', 1000000000)), r = repeat(1, 3), e = repeat('b', -1)"
    # a negative count is null ("If count is less than zero, a null value is returned")
    assert rows(run(service, query)) == [[1_048_576, [1, 1, 1], None]]


def test_decimal_overflow_is_null_not_an_engine_error(service) -> None:  # type: ignore[no-untyped-def]
    # Was BackendError "Decimal value is too big" (ClickHouse code 69) through the service.
    query = "print a = todecimal(1e20) * todecimal(1e20), b = decimal(100) * decimal(10)"
    assert rows(run(service, query)) == [[None, Decimal(1000)]]
    found = error(run(service, "print d = decimal(1e40)"))
    assert found.code == "ParseError" and found.location is not None


def test_a_huge_variable_length_edge_is_refused_without_listing_its_hops(service) -> None:  # type: ignore[no-untyped-def]
    # `*1..2147483648` listed 2^31 hop combinations before checking the cap: bzrk dev grew to
    # 23 GB and was OOM-killed (3,000-query fuzz, twice at the same query).
    query = (
        "datatable(a:string, b:string)['x', 'y', 'y', 'z'] | make-graph a --> b with_node_id=n"
        " | graph-match (s)-[e*1..2147483648]->(d) project s.n, d.n"
    )
    found = error(run(service, query))
    assert found.code == "UnsupportedConstruct" and "hop combinations" in found.message
    small = query.replace("2147483648", "2") + " | order by s_n asc, d_n asc"
    assert rows(run(service, small)) == [["x", "y"], ["x", "z"], ["y", "z"]]
