"""make-series on numeric axes, against the forms of the ADX make-series page."""

from __future__ import annotations

from typing import Any

from bzrk.engine.oneshot import execute_text

DATA = """
let T = datatable(a:string, n:long, x:real)
  ['p', 1, 0.5, 'q', 2, 1.5, 'p', 3, 4.0, 'r', 10, 7.0, 'q', 1, 9.5];
"""


def run(backend: Any, kql: str) -> tuple[list[tuple[str, str]], list[list[Any]]]:
    result = execute_text(backend, DATA + kql).tables[0]
    return [(c.name, c.type) for c in result.columns], result.rows


def test_long_axis_from_to_step(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = run(chdb_backend, "T | make-series count() on n from 0 to 10 step 2")
    assert columns == [("count_", "dynamic"), ("n", "dynamic")]
    # `to` is exclusive: n = 10 is past the last bin [8, 10).
    assert rows == [[[2, 2, 0, 0, 0], [0, 2, 4, 6, 8]]]


def test_axis_without_bounds_spans_the_bins_holding_data(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = run(chdb_backend, "T | make-series count() on n step 3")
    assert rows == [[[3, 1, 0, 1], [0, 3, 6, 9]]]


def test_in_range_bins_with_bin_and_includes_stop(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # ADX's alternate syntax: points at multiples of step from bin(1, 2) = 0, stop inclusive.
    _, rows = run(chdb_backend, "T | make-series s = sum(n) on n in range(1, 10, 2)")
    assert rows == [[[2, 5, 0, 0, 0, 10], [0, 2, 4, 6, 8, 10]]]
    _, rows = run(chdb_backend, "T | make-series count() on x in range(0.5, 7.0, 2.5)")
    assert rows == [[[2, 1, 1], [0.0, 2.5, 5.0]]]


def test_in_range_on_a_datetime_axis(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = run(
        chdb_backend,
        "print t = datetime(2017-01-01T05:00) | make-series count() on t "
        "in range(datetime(2017-01-01T03:00), datetime(2017-01-03), 1d)",
    )
    assert rows == [
        [
            [1, 0, 0],
            [
                "2017-01-01T00:00:00.0000000Z",
                "2017-01-02T00:00:00.0000000Z",
                "2017-01-03T00:00:00.0000000Z",
            ],
        ]
    ]


def test_real_axis_several_aggregates_defaults_and_by(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = run(
        chdb_backend,
        "T | make-series m = avg(x) default = double(null), c = count() default = -1 "
        "on x from 0 to 10 step 2.5 by a | order by a asc",
    )
    assert columns == [
        ("a", "string"),
        ("m", "dynamic"),
        ("c", "dynamic"),
        ("x", "dynamic"),
    ]
    axis = [0.0, 2.5, 5.0, 7.5]
    assert rows == [
        ["p", [0.5, 4.0, None, None], [1, 1, -1, -1], axis],
        ["q", [1.5, None, None, 9.5], [1, -1, -1, 1], axis],
        ["r", [None, None, 7.0, None], [-1, -1, 1, -1], axis],
    ]


def test_empty_input_gives_no_series_unless_nonempty(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = run(chdb_backend, "T | take 0 | make-series count() on n from 0 to 4 step 2")
    assert rows == []
    _, rows = run(
        chdb_backend,
        "T | take 0 | make-series kind=nonempty avg(x) default = 1 on n from 0 to 4 step 2",
    )
    assert rows == [[[1.0, 1.0], [0, 2]]]
