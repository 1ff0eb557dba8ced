"""Queries over real MergeTree tables through the table resolver (typed columns and JSON bags)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

from bzrk.engine.compile.query import TableResolver, TableSource
from bzrk.engine.oneshot import execute_text

T0 = 17_040_672_000_000_000  # 2024-01-01T00:00:00Z in ticks
HOUR = 36_000_000_000


class OneTable(TableResolver):
    def __init__(self, database: str) -> None:
        self.database = database

    def resolve(self, name: str) -> TableSource | None:
        if name != "logs":
            return None
        return TableSource(
            self.database,
            "logs",
            [("timestamp", "datetime"), ("body", "string"), ("attributes", "dynamic")],
        )


def _load(backend, database: str) -> None:  # type: ignore[no-untyped-def]
    backend.execute(
        f"CREATE TABLE {database}.logs (timestamp DateTime64(7, 'UTC'), body String, attributes JSON)"
        " ENGINE = MergeTree ORDER BY timestamp"
    )
    backend.execute(
        f"INSERT INTO {database}.logs VALUES "
        '(\'2024-01-01 00:10:00.0000001\', \'GET /a ok\', \'{"http": {"route": "/a", "status": 200}}\'),'
        '(\'2024-01-01 00:20:00\', \'GET /b failed\', \'{"http": {"route": "/b", "status": 500}}\'),'
        '(\'2024-01-01 01:05:00\', \'GET /a ok\', \'{"http": {"route": "/a", "status": 200}}\')'
    )


def test_summarize_over_a_table_with_a_json_bag(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    _load(chdb_backend, ch_database)
    result = execute_text(
        chdb_backend,
        "logs | where attributes.http.route == '/a' | summarize n = count() by bin(timestamp, 1h)"
        " | order by timestamp asc",
        resolver=OneTable(ch_database),
    )
    table = result.tables[0]
    assert [(c.name, c.type) for c in table.columns] == [("timestamp", "datetime"), ("n", "long")]
    assert table.rows == [[T0, 1], [T0 + HOUR, 1]]


def test_table_values_keep_100ns_precision_and_bag_types(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    _load(chdb_backend, ch_database)
    result = execute_text(
        chdb_backend,
        "logs | where body has 'failed' or timestamp < datetime(2024-01-01 00:15)"
        " | project timestamp, status = toint(attributes.http.status) | order by timestamp asc",
        resolver=OneTable(ch_database),
    )
    assert result.tables[0].rows == [[T0 + 6_000_000_001, 200], [T0 + 12_000_000_000, 500]]


def test_unknown_table_is_a_located_error(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    from bzrk.engine.oneshot import QueryError

    try:
        execute_text(chdb_backend, "nope | take 1", resolver=OneTable(ch_database))
    except QueryError as exc:
        assert exc.code == "UnknownTable"
        assert exc.location is not None and exc.location.start_byte == 0
    else:
        raise AssertionError("expected an UnknownTable error")


def test_arrow_inserts_round_trip(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    chdb_backend.execute(
        f"CREATE TABLE {ch_database}.logs (timestamp DateTime64(7, 'UTC'), body String, attributes JSON)"
        " ENGINE = MergeTree ORDER BY timestamp"
    )
    data = pa.table(
        {
            "timestamp": pa.array([datetime(2024, 1, 1, tzinfo=UTC)], pa.timestamp("ns", "UTC")),
            "body": ["hello world"],
            "attributes": ['{"k": 1}'],
        }
    )
    chdb_backend.insert_arrow(f"{ch_database}.logs", data)
    result = execute_text(
        chdb_backend, "logs | project body, k = attributes.k", resolver=OneTable(ch_database)
    )
    assert result.tables[0].rows == [["hello world", 1]]
