"""Aggregates on the benchmark's hot path: their values, and the SQL shape that keeps them cheap."""

from __future__ import annotations

from bzrk.engine.compile.query import QueryCompiler
from bzrk.engine.oneshot import execute_text
from bzrk.kql.parser import parse

DATA = (
    "datatable(g:string, d:long, t:datetime)["
    "'a', 1, datetime(2024-01-01), 'a', 2, datetime(2024-01-02), 'a', 3, datetime(2024-01-03),"
    "'a', 4, datetime(2024-01-04), 'b', long(null), datetime(null), 'c', 10, datetime(2024-02-01)]"
)


def test_percentiles_share_one_state_and_keep_nearest_rank_values(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    text = f"{DATA} | summarize percentiles(d, 50, 95), percentiles(t, 50) by g | order by g asc"
    sql = QueryCompiler().compile(parse(text)).tables[0].sql
    assert sql.count("quantilesExactLow(") == 3  # d's state read twice, t's once
    assert "quantileExactLow(" not in sql
    rows = execute_text(chdb_backend, text).tables[0].rows
    jan2 = 17_041_536_000_000_000
    assert rows == [
        ["a", 2, 4, jan2],
        ["b", None, None, None],  # only nulls: null, as KQL's percentile gives
        ["c", 10, 10, 17_067_456_000_000_000],
    ]
    names = [c.name for c in execute_text(chdb_backend, text).tables[0].columns]
    assert names == ["g", "percentile_d_50", "percentile_d_95", "percentile_t_50"]


def test_bin_by_a_constant_span_is_not_nullable_and_floors_before_the_epoch(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    text = (
        "datatable(t:datetime)[datetime(2024-01-01 05:30), datetime(1969-12-31 23:30),"
        " datetime(null)] | summarize n = count() by b = bin(t, 1h) | order by b asc"
    )
    sql = QueryCompiler().compile(parse(text)).tables[0].sql
    # bins count from 0001-01-01 (.NET's ticks): 621355968000000000 ticks before the epoch
    assert "positiveModulo(reinterpretAsInt64(`t`) + 621355968000000000, 36000000000)" in sql
    assert "NULL, 0 +" not in sql  # no zero-step check for a literal step
    rows = execute_text(chdb_backend, text).tables[0].rows
    hour = 36_000_000_000
    assert rows == [[None, 1], [-hour, 1], [17_040_672_000_000_000 + 5 * hour, 1]]
