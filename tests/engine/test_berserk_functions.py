"""Berserk's scalar functions on inline data: datetime numbers as .NET ticks, the series reducers."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import execute_text


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


# 2024-01-15 10:30:00 UTC in .NET ticks (100 ns since 0001-01-01): 738,899 days and 10.5 hours.
TICKS_2024_01_15_1030 = 738_899 * 864_000_000_000 + 378_000_000_000


def test_tolong_of_a_datetime_is_dotnet_ticks(chdb_backend: Any) -> None:
    assert rows(chdb_backend, "print tolong(datetime(2024-01-15 10:30:00))") == [
        [TICKS_2024_01_15_1030]
    ]
    # the epoch itself, and the other numeric conversions agree
    assert rows(
        chdb_backend,
        "print tolong(datetime(1970-01-01)), toreal(datetime(1970-01-01)), "
        "todecimal(datetime(1970-01-01))",
    ) == [[621_355_968_000_000_000, 6.21355968e17, 621_355_968_000_000_000]]


def test_todatetime_of_a_number_reads_dotnet_ticks(chdb_backend: Any) -> None:
    assert rows(chdb_backend, f"print todatetime({TICKS_2024_01_15_1030})") == [
        [17_053_146_000_000_000]  # the datetime's own ticks since the Unix epoch
    ]
    # round trip, to the 100 ns tick
    assert rows(
        chdb_backend,
        "print t = datetime(2024-01-15 10:30:00.1234567) | project todatetime(tolong(t)) == t",
    ) == [[True]]


@pytest.mark.parametrize(
    "number",
    # before 1900 and after 2299 (what a stored datetime can hold), zero, negative, not finite
    ["0", "599266079999999999", "725846976000000000", "-1", "real(nan)", "1e30"],
)
def test_todatetime_out_of_range_is_null_not_an_error(chdb_backend: Any, number: str) -> None:
    assert rows(chdb_backend, f"print d = todatetime({number})") == [[None]]


def test_timespans_stay_100ns_ticks(chdb_backend: Any) -> None:
    assert rows(chdb_backend, "print tolong(1ms), toint(1s), totimespan(10000)") == [
        [10_000, 10_000_000, 10_000]
    ]


def test_series_reducers_skip_nulls_and_non_numbers(chdb_backend: Any) -> None:
    assert rows(
        chdb_backend,
        "print s = dynamic([1, 5, null, 'x', 3]) "
        "| project series_max(s), series_min(s), series_sum(s), series_avg(s)",
    ) == [[5.0, 1.0, 9.0, 3.0]]


def test_series_reducers_of_nothing_are_null(chdb_backend: Any) -> None:
    # an empty series, a series of nulls, and values that are not series
    assert rows(
        chdb_backend,
        "print series_max(dynamic([])), series_min(dynamic([null])), "
        "series_sum(dynamic({'a': 1})), series_avg(dynamic(null))",
    ) == [[None, None, None, None]]


def test_top_by_series_max_ranks_made_series(chdb_backend: Any) -> None:
    assert rows(
        chdb_backend,
        "datatable(t: datetime, k: string, v: real)"
        "[datetime(2024-01-01 00:00), 'a', 1, datetime(2024-01-01 00:01), 'a', 7,"
        " datetime(2024-01-01 00:00), 'b', 3, datetime(2024-01-01 00:02), 'b', 4]"
        "| make-series v = avg(v) default = 0 on t from datetime(2024-01-01) "
        "to datetime(2024-01-01 00:03) step 1m by k"
        "| top 2 by series_max(v) desc | project k, m = series_max(v)",
    ) == [["a", 7.0], ["b", 4.0]]


def test_a_column_named_with_a_dot_is_referred_to_as_written(chdb_backend: Any) -> None:
    # Berserk names tostring(resource['service.name']) `resource_service.name`; the vendor's
    # triage skill then writes `project resource_service.name`.
    data = (
        "datatable(resource: dynamic) [dynamic({'service.name': 'cart'}),"
        " dynamic({'service.name': 'cart'}), dynamic({'service.name': 'pay'})]"
    )
    result = execute_text(
        chdb_backend,
        data + " | summarize n = count() by tostring(resource['service.name'])"
        " | project resource_service.name, n | where resource_service.name != 'pay'",
    ).tables[0]
    assert [c.name for c in result.columns] == ["resource_service.name", "n"]
    assert result.rows == [["cart", 2]]
    # A bag's member chain that names no column is still a path into the bag.
    assert rows(chdb_backend, "print d = dynamic({'a': {'b': 1}}) | project v = toint(d.a.b)") == [
        [1]
    ]
