"""Star expressions over a stored table: `* has "x"` (any column), `events[*].name` (elements)."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.compile.query import TableResolver, TableSource
from bzrk.engine.oneshot import QueryError, execute_text

COLUMNS = [
    ("timestamp", "datetime"),
    ("body", "string"),
    ("span_name", "string"),
    ("code", "long"),
    ("attributes", "dynamic"),
    ("events", "dynamic"),
]


class Spans(TableResolver):
    def __init__(self, database: str) -> None:
        self.database = database

    def resolve(self, name: str) -> TableSource | None:
        if name != "spans":
            return None
        return TableSource(self.database, "spans", list(COLUMNS), absent={"events": "[]"})


def _load(backend: Any, database: str) -> None:
    backend.execute(
        f"CREATE TABLE {database}.spans (timestamp DateTime64(7, 'UTC'), body String,"
        " span_name String, code Int64, attributes JSON, events Array(JSON))"
        " ENGINE = MergeTree ORDER BY timestamp"
    )
    backend.execute(
        f"INSERT INTO {database}.spans VALUES "
        "('2024-01-01 00:10:00', 'Deadlock found', 'POST /pay', 500, '{\"db\": \"pg\"}',"
        ' [\'{"name": "retry", "attempt": 1}\', \'{"name": "exception", "attempt": 2}\']),'
        "('2024-01-01 00:20:00', 'all good', 'GET /cart', 200, '{\"db\": \"timeout-db\"}',"
        ' [\'{"name": "cache miss", "attempt": 1}\']),'
        "('2024-01-01 00:30:00', 'request timeout', 'GET /home', 504, '{}', [])"
    )


def _rows(backend: Any, database: str, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql, resolver=Spans(database)).tables[0].rows


def test_star_has_looks_in_every_string_column_and_bag(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    _load(chdb_backend, ch_database)
    names = 'spans | where * has "{}" | order by timestamp asc | project span_name'
    assert _rows(chdb_backend, ch_database, names.format("deadlock")) == [["POST /pay"]]
    # "pg" is only in a bag's text; "exception" only in an array of bags.
    assert _rows(chdb_backend, ch_database, names.format("pg")) == [["POST /pay"]]
    assert _rows(chdb_backend, ch_database, names.format("exception")) == [["POST /pay"]]
    # Numbers are no search text: 504 is a long column.
    assert _rows(chdb_backend, ch_database, names.format("504")) == []


def test_star_contains_and_negated_operators(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    _load(chdb_backend, ch_database)
    rows = _rows(
        chdb_backend,
        ch_database,
        'spans | where * contains "timeout" | order by timestamp asc | project span_name',
    )
    assert rows == [["GET /cart"], ["GET /home"]]
    rows = _rows(chdb_backend, ch_database, 'spans | where * !has "timeout" | project span_name')
    assert rows == [["POST /pay"]]


def test_star_refuses_a_comparison(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    _load(chdb_backend, ch_database)
    with pytest.raises(QueryError) as err:
        _rows(chdb_backend, ch_database, 'spans | where * == "x"')
    assert err.value.code == "UnsupportedConstruct" and "string operator" in str(err.value)


def test_an_array_path_filters_on_any_element(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    _load(chdb_backend, ch_database)
    query = "spans | where {} | order by timestamp asc | project span_name"
    for condition, expected in [
        ('events[*].name == "exception"', [["POST /pay"]]),
        ('events[*].name has "miss"', [["GET /cart"]]),
        ("events[*].attempt > 1", [["POST /pay"]]),
        ('events[*].name in ("retry", "cache miss")', [["POST /pay"], ["GET /cart"]]),
        ('"exception" == events[*].name', [["POST /pay"]]),
    ]:
        assert _rows(chdb_backend, ch_database, query.format(condition)) == expected, condition


def test_an_array_path_as_a_value_is_the_array_of_element_values(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    _load(chdb_backend, ch_database)
    rows = _rows(
        chdb_backend,
        ch_database,
        "spans | order by timestamp asc | project names = events[*].name, all = events[*]",
    )
    assert [r[0] for r in rows] == [["retry", "exception"], ["cache miss"], None]
    assert rows[1][1] == [{"name": "cache miss", "attempt": 1}]


def test_nested_array_paths(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    rows = (
        execute_text(
            chdb_backend,
            'print d = dynamic([{"b": [{"c": 1}, {"c": 2}]}, {"b": [{"c": 3}]}])'
            " | project all = d[*].b[*].c, has3 = d[*].b[*].c == 3, has4 = d[*].b[*].c == 4",
        )
        .tables[0]
        .rows
    )
    assert rows == [[[[1, 2], [3]], True, False]]
