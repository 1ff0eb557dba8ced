"""`scan` and `partition` through the whole engine (parse → compile → chDB) on inline data."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text

MINUTE = 600_000_000


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


def test_scan_cumulative_sum_with_reset(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "range x from 1 to 5 step 1 | scan declare (c:long=0) with "
        "(step s1: true => c = iff(s1.c >= 5, x, x + s1.c);)",
    )
    assert got == [[1, 1], [2, 3], [3, 6], [4, 4], [5, 9]]


def test_scan_sequences_get_match_ids(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    datatable (Ts: timespan, Event: string) [0m, "A", 1m, "Start", 2m, "B", 4m, "Stop",
      6m, "C", 8m, "Start", 20m, "E", 21m, "Stop"]
    | sort by Ts asc
    | scan with_match_id=m with (
        step s1: Event == "Start";
        step s2: Event != "Start" and Event != "Stop" and Ts - s1.Ts <= 5m;
        step s3: Event == "Stop" and Ts - s1.Ts <= 5m;
    )"""
    got = rows(chdb_backend, kql)
    # The second sequence never reaches s2 (E comes 12 minutes after Start), so Stop is no match.
    assert got == [
        [1 * MINUTE, "Start", 0],
        [2 * MINUTE, "B", 0],
        [4 * MINUTE, "Stop", 0],
        [8 * MINUTE, "Start", 1],
    ]


def test_scan_output_none_and_session_restart(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    datatable (Ts: timespan) [0m, 3m, 40m, 41m]
    | sort by Ts asc
    | scan with_match_id=sid declare (start: timespan) with (
        step inS: true => start = iff(isnull(inS.start), Ts, inS.start);
        step endS output=none: Ts - inS.start > 30m;
    )"""
    got = rows(chdb_backend, kql)
    assert got == [
        [0, 0, 0],
        [3 * MINUTE, 0, 0],
        [40 * MINUTE, 40 * MINUTE, 1],
        [41 * MINUTE, 40 * MINUTE, 1],
    ]


def test_partition_runs_scan_and_prev_per_key(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    datatable (k: string, v: long) ["a", 1, "b", 10, "a", 2, "b", 20, "a", 3]
    | partition hint.strategy=native by k (
        scan declare (total: long = 0) with (step s: true => total = s.total + v;)
        | extend before = prev(total)
    )
    | order by k asc, v asc"""
    got = rows(chdb_backend, kql)
    assert got == [
        ["a", 1, 1, None],
        ["a", 2, 3, 1],
        ["a", 3, 6, 3],
        ["b", 10, 10, None],
        ["b", 20, 30, 10],
    ]


def test_scan_rejects_unknown_assignment(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError):
        rows(chdb_backend, "range x from 1 to 2 step 1 | scan with (step s: true => nope = 1;)")


def test_partition_with_a_query_per_key(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    let Limits = datatable(name:string, limit:long) ["low", 2, "high", 4];
    Limits
    | project k = strcat(name, ":", limit)
    | partition hint.strategy=native by k {
        range x from 1 to 5 step 1
        | extend key = toscalar(k)
        | where x > tolong(split(key, ":")[1])
    }
    | summarize n = count() by key
    | order by key asc"""
    assert rows(chdb_backend, kql) == [["high:4", 1], ["low:2", 3]]


def test_scan_refuses_huge_groups_quickly(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    from bzrk.engine.compile.operators.scan import MAX_GROUP_ROWS

    with pytest.raises(QueryError, match="more than"):
        rows(
            chdb_backend,
            f"range x from 0 to {MAX_GROUP_ROWS} step 1"
            " | scan declare (c:long=0) with (step s: true => c = s.c + x;)",
        )


def test_scan_normalises_column_types(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "range x from 1 to 4 step 1 | extend k = x % 2"
        " | scan declare (c:long=0) with (step s: true => c = s.c + k;) | project c",
    )
    assert got == [[1], [1], [2], [2]]
