"""A leading `search` without `in (...)` looks in every table of the database (ADX), with `$table`."""

from __future__ import annotations

from typing import Any

from bzrk.engine.compile.query import TableResolver, TableSource
from bzrk.engine.oneshot import execute_text

COLUMNS = [("timestamp", "datetime"), ("body", "string"), ("attributes", "dynamic")]


class TwoTables(TableResolver):
    def __init__(self, database: str) -> None:
        self.database = database

    def resolve(self, name: str) -> TableSource | None:
        if name not in ("app", "audit"):
            return None
        return TableSource(self.database, name, list(COLUMNS))

    def table_names(self) -> tuple[str, ...]:
        return ("app", "audit")


def _load(backend: Any, database: str) -> None:
    for name, rows in (
        ("app", "('2024-01-01 00:10:00', 'disk error on sda', '{\"k\": \"a\"}'),"
                "('2024-01-01 00:20:00', 'all good', '{\"k\": \"error\"}')"),
        ("audit", "('2024-01-01 00:30:00', 'login ok', '{\"k\": \"b\"}'),"
                  "('2024-01-01 00:40:00', 'errorbox denied', '{\"k\": \"c\"}')"),
    ):  # fmt: skip
        backend.execute(
            f"CREATE TABLE {database}.{name} (timestamp DateTime64(7, 'UTC'), body String,"
            " attributes JSON) ENGINE = MergeTree ORDER BY timestamp"
        )
        backend.execute(f"INSERT INTO {database}.{name} VALUES {rows}")


def _rows(backend: Any, database: str, kql: str) -> tuple[list[str], list[list[Any]]]:
    table = execute_text(backend, kql, resolver=TwoTables(database)).tables[0]
    return [c.name for c in table.columns], table.rows


def test_leading_search_covers_every_table_and_names_it(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    _load(chdb_backend, ch_database)
    columns, rows = _rows(
        chdb_backend, ch_database, 'search "error" | project $table, body | order by body asc'
    )
    assert columns == ["$table", "body"]
    # The bag's text is searched too (`{"k": "error"}`); "errorbox" is not the term "error".
    assert rows == [["app", "all good"], ["app", "disk error on sda"]]


def test_leading_search_counts_per_table(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    _load(chdb_backend, ch_database)
    _, rows = _rows(
        chdb_backend,
        ch_database,
        'search "error*" | summarize n = count() by t = $table | order by t asc',
    )
    assert rows == [["app", 2], ["audit", 1]]


def test_leading_search_adds_the_query_views(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    _load(chdb_backend, ch_database)
    _, rows = _rows(
        chdb_backend,
        ch_database,
        'let Notes = datatable(body:string) ["login error", "fine"];\n'
        'search "login" | project $table, body | order by $table asc',
    )
    assert rows == [["Notes", "login error"], ["audit", "login ok"]]


def test_a_view_shadows_the_table_of_its_name(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    _load(chdb_backend, ch_database)
    _, rows = _rows(
        chdb_backend,
        ch_database,
        'let app = datatable(body:string) ["no match"];\nsearch "denied" or "match"'
        " | project $table, body | order by $table asc",
    )
    assert rows == [["app", "no match"], ["audit", "errorbox denied"]]
