"""The vendor's bracket range, `x between [low, high]`: ADX's inclusive `between (low .. high)`."""

from __future__ import annotations

from typing import Any

from bzrk.engine.oneshot import execute_text

ROWS = "datatable(x:long, t:datetime) [1, datetime(2024-01-01), 5, datetime(2024-01-05), 9, datetime(2024-01-09)]"


def _xs(backend: Any, condition: str) -> list[int]:
    result = execute_text(backend, f"{ROWS} | where {condition} | order by x asc").tables[0]
    return [row[0] for row in result.rows]


def test_a_bracket_range_includes_both_ends(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    assert _xs(chdb_backend, "x between [1, 5]") == [1, 5]
    assert _xs(chdb_backend, "x !between [1, 5]") == [9]
    assert _xs(chdb_backend, "x between [1, 5]") == _xs(chdb_backend, "x between (1 .. 5)")


def test_a_bracket_range_of_datetimes_and_expressions(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    assert _xs(chdb_backend, "t between [datetime(2024-01-09) - 4d, datetime(2024-01-09)]") == [
        5,
        9,
    ]
    # A timespan as the upper end is an offset from the lower end, as in `(a .. b)`.
    assert _xs(chdb_backend, "t between [datetime(2024-01-01), 4d]") == [1, 5]
