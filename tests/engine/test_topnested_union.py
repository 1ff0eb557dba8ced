"""top-nested and union inputs (wildcards, isfuzzy, split column names) on inline data."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text

DATA = """
let T = datatable(region:string, host:string, bytes:long) [
  "eu", "a", 10, "eu", "a", 5, "eu", "b", 30, "eu", "c", 1,
  "us", "d", 7, "us", "e", 8, "ap", "f", 2];
"""


def table(backend: Any, kql: str) -> tuple[list[str], list[list[Any]]]:
    result = execute_text(backend, kql).tables[0]
    return [c.name for c in result.columns], result.rows


def test_top_nested_two_levels(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = table(
        chdb_backend,
        DATA
        + "T | top-nested 2 of region by total = sum(bytes), top-nested 1 of host by sum(bytes)"
        " | order by total desc",
    )
    assert columns == ["region", "total", "host", "aggregated_host"]
    assert rows == [["eu", 46, "b", 30], ["us", 15, "e", 8]]


def test_top_nested_ascending(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = table(chdb_backend, DATA + "T | top-nested 1 of region by n = count() asc")
    assert rows == [["ap", 1]]


STORMS = (
    'let S = datatable(State: string, EventType: string, D: long)["CA", "Flood", 100, '
    '"CA", "Fire", 30, "CA", "Hail", 5, "OK", "Flood", 80, "TX", "Hail", 3, "WA", "Fire", 7]; '
)


def test_top_nested_with_others_adds_a_row_for_the_rest(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # the reference's pie-chart example: the top states and one row for all the others
    names, rows = table(
        chdb_backend,
        STORMS + 'S | top-nested 2 of State with others = "OtherStates" by sum(D) | order by State',
    )
    assert names == ["State", "aggregated_State"]
    assert rows == [["OtherStates", 10], ["OK", 80], ["CA", 135]]


def test_top_nested_with_others_on_two_levels(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = table(
        chdb_backend,
        STORMS + 'S | top-nested 2 of State with others = "OtherStates" by sum(D), '
        'top-nested 1 of EventType with others = "OtherEvents" by sum(D) '
        "| order by State, EventType",
    )
    # an `others` row has nothing under it; a parent whose values all made the top has no
    # `others` child
    assert rows == [
        ["OtherStates", 10, None, None],
        ["OK", 80, "Flood", 80],
        ["CA", 135, "OtherEvents", 35],
        ["CA", 135, "Flood", 100],
    ]


def test_top_nested_with_others_and_nothing_left_adds_no_row(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = table(
        chdb_backend,
        STORMS + 'S | where State == "CA" | top-nested 2 of State with others = "x" by sum(D)',
    )
    assert rows == [["CA", 135]]


def test_union_wildcard_and_fuzzy(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    let V_1 = view () { print x = 1 };
    let V_2 = view () { print x = 2 };
    let W = view () { print x = 3 };
    union isfuzzy=true V*, (Missing | where x > 0) | order by x asc"""
    assert table(chdb_backend, kql)[1] == [[1], [2]]


def test_union_unknown_table_without_fuzzy_is_an_error(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError) as err:
        table(chdb_backend, "union (print x = 1), Missing")
    assert err.value.code in ("UnknownName", "UnknownTable")


def test_union_split_columns_yield_to_real_names(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, _ = table(
        chdb_backend, "union (print x = 1), (print x = toint(2)), (print x_long = 3)"
    )
    assert columns == ["x_long1", "x_int", "x_long"]


def test_externaldata_is_refused_with_a_reason(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError, match="external storage"):
        table(chdb_backend, 'externaldata (a:string) [h@"https://example.com/x.csv"]')


def test_an_unnamed_top_nested_aggregate_is_aggregated_level_and_can_be_referenced(
    chdb_backend,
) -> None:  # type: ignore[no-untyped-def]
    # the reference's first example projects `StateTotalDamage = aggregated_State`
    kql = (
        'datatable(State: string, DamageProperty: long)["CA", 100, "OK", 80, "TX", 3, "CA", 5] '
        "| top-nested 2 of State by sum(DamageProperty) "
        "| project State, StateTotalDamage = aggregated_State | order by StateTotalDamage"
    )
    result = execute_text(chdb_backend, kql).tables[0]
    assert [c.name for c in result.columns] == ["State", "StateTotalDamage"]
    assert result.rows == [["CA", 105], ["OK", 80]]
