"""The reduce operator through the whole engine."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text

CITIES = (
    'datatable(city:string) ["San Jose", "San Diego", "San Francisco", "Paris", "Paris",'
    ' "Paris", "One-on-One", "Two-on-Two", "Moscow"]'
)


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


def test_reduce_groups_by_pattern(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(chdb_backend, CITIES + " | reduce by city | order by Pattern asc")
    assert got == [
        ["*on*", 2, "One-on-One"],
        ["Paris", 3, "Paris"],
        ["San*", 3, "San Jose"],
        ["others", 1, ""],
    ]


def test_reduce_characters_and_others(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    base = 'range x from 1 to 10 step 1 | project s = strcat("foo", "Z", tostring(x))'
    assert rows(chdb_backend, base + " | reduce by s") == [["others", 10, ""]]
    assert rows(chdb_backend, base + ' | reduce by s with characters="Z"') == [
        ["foo*", 10, "fooZ1"]
    ]


def test_reduce_kind_source_appends_the_pattern(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(chdb_backend, CITIES + " | reduce kind=source by city | take 2")
    assert got == [["San Jose", "San*"], ["San Diego", "San*"]]


def test_reduce_rejects_a_bad_threshold(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError):
        rows(chdb_backend, CITIES + " | reduce by city with threshold=2")
