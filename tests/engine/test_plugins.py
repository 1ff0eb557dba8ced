"""`evaluate` plugins through the whole engine (parse → compile → chDB) on inline data."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text

DAY = 864_000_000_000
D1 = 14_832_288_000_000_000  # 2017-01-01 in ticks

ACTIVITY = """
let T = datatable(id:string, ts:datetime) [
  "a", datetime(2017-01-01), "b", datetime(2017-01-01 10:00),
  "a", datetime(2017-01-02), "c", datetime(2017-01-02), "c", datetime(2017-01-03)
];
"""


def table(backend: Any, kql: str) -> tuple[list[str], list[list[Any]]]:
    result = execute_text(backend, kql).tables[0]
    return [c.name for c in result.columns], result.rows


def test_rows_near_keeps_neighbours_in_order(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = table(
        chdb_backend,
        "range x from 1 to 10 step 1 | extend bad = x == 5 or x == 9"
        " | evaluate rows_near(bad, 1) | project x",
    )
    assert rows == [[4], [5], [6], [8], [9], [10]]


def test_rows_near_with_rows_after(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = table(
        chdb_backend, "range x from 1 to 10 step 1 | evaluate rows_near(x == 5, 0, 2) | project x"
    )
    assert rows == [[5], [6], [7]]


def test_dcount_intersect(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = table(
        chdb_backend,
        "range x from 1 to 30 step 1 | summarize a = hll(iff(x % 2 == 0, x, 0)),"
        " b = hll(iff(x % 3 == 0, x, 0)) | evaluate dcount_intersect(a, b) | project s0, s1",
    )
    assert rows == [[16, 6]]  # 15 evens + 0; 5 multiples of 6 + 0


def test_rolling_percentile(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = table(
        chdb_backend,
        "range i from 0 to 5 step 1 | extend t = i / 2, v = i * 10"
        " | evaluate rolling_percentile(v, 50, t, 1, 2) | order by t asc",
    )
    assert columns == ["t", "rolling_2_percentile_v_50"]
    # bins 0:{0,10} 1:{20,30} 2:{40,50}; each looks back over itself and the bin before.
    assert rows == [[0, 0], [1, 10], [2, 30]]


def test_sliding_window_counts(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = table(
        chdb_backend,
        ACTIVITY
        + "T | evaluate sliding_window_counts(id, ts, datetime(2017-01-01), datetime(2017-01-03), 2d, 1d)",
    )
    assert columns == ["ts", "Count", "Dcount"]
    assert rows == [[D1, 2, 2], [D1 + DAY, 4, 3], [D1 + 2 * DAY, 3, 2]]


def test_activity_counts_metrics(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = table(
        chdb_backend,
        ACTIVITY
        + "T | evaluate activity_counts_metrics(id, ts, datetime(2017-01-01), datetime(2017-01-03), 1d)",
    )
    assert columns == ["ts", "count", "dcount", "new_dcount", "aggregated_dcount"]
    assert rows == [[D1, 2, 2, 2, 2], [D1 + DAY, 2, 2, 1, 3], [D1 + 2 * DAY, 1, 1, 0, 3]]


def test_activity_metrics(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = table(
        chdb_backend,
        ACTIVITY
        + "T | evaluate activity_metrics(id, ts, datetime(2017-01-01), datetime(2017-01-03), 1d)",
    )
    assert rows == [
        [D1, 2, 2, None, None],
        [D1 + DAY, 2, 1, 0.5, 0.5],
        [D1 + 2 * DAY, 1, 0, 0.5, 0.5],
    ]


def test_new_activity_metrics(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = table(
        chdb_backend,
        ACTIVITY
        + "T | evaluate new_activity_metrics(id, ts, datetime(2017-01-01), datetime(2017-01-03), 1d)",
    )
    assert columns[:3] == ["from_ts", "to_ts", "dcount_new_values"]
    assert [r[:5] for r in rows] == [
        [D1, D1, 2, 2, 0],
        [D1, D1 + DAY, 2, 1, 1],
        [D1, D1 + 2 * DAY, 2, 0, 2],
        [D1 + DAY, D1 + DAY, 1, 1, 0],
        [D1 + DAY, D1 + 2 * DAY, 1, 1, 0],
    ]


def test_activity_engagement(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = table(
        chdb_backend,
        ACTIVITY
        + "T | evaluate activity_engagement(id, ts, datetime(2017-01-01), datetime(2017-01-03), 1d, 2d)"
        " | project ts, activity_ratio",
    )
    assert rows == [[D1, 1.0], [D1 + DAY, 2 / 3], [D1 + 2 * DAY, 0.5]]


def test_session_count(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # id 1 every 3 (one session), id 2 at 1 and 9 (gap 8 >= 5: two sessions).
    columns, rows = table(
        chdb_backend,
        "datatable(id:long, t:long) [1, 1, 1, 4, 1, 7, 1, 10, 2, 1, 2, 9]"
        " | evaluate session_count(id, t, 0, 20, 5, 5)",
    )
    assert columns == ["t", "count_sessions"]
    assert rows == [[0, 2], [5, 1]]


def test_active_users_count(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # "a" is seen on 3 distinct days within 3 days of 01-03; "b" only on two.
    kql = """
    datatable(u:string, ts:datetime) [
      "a", datetime(2017-01-01), "a", datetime(2017-01-02), "a", datetime(2017-01-03),
      "b", datetime(2017-01-02), "b", datetime(2017-01-03)]
    | evaluate active_users_count(u, ts, datetime(2017-01-01), datetime(2017-01-05), 3d, 1d, 3, 7d)"""
    assert table(chdb_backend, kql)[1] == [[D1, 1]]


def test_ipv6_lookup(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    let R = datatable(net:string, name:string) ["2001:db8::/32", "doc", "fe80::/10", "local"];
    datatable(ip:string) ["2001:db8:1::5", "fe80::1", "::1"]
    | evaluate ipv6_lookup(R, ip, net, return_unmatched = true) | order by ip asc"""
    assert table(chdb_backend, kql)[1] == [
        ["2001:db8::/32", "doc", "2001:db8:1::5"],
        ["", "", "::1"],
        ["fe80::/10", "local", "fe80::1"],
    ]


def test_unknown_plugin_is_a_located_error(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError) as err:  # the binder's, as on every surface
        table(chdb_backend, "print x = 1 | evaluate no_such_plugin()")
    assert err.value.code == "UnknownFunction" and err.value.location is not None


def test_schema_merge(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    let s1 = datatable(Uri:string, Status:int)[] | getschema;
    let s2 = datatable(Uri:string, Referrer:string, Status:long)[] | getschema;
    union s1, s2 | evaluate schema_merge(PreserveOrder = false)"""
    assert table(chdb_backend, kql)[1] == [
        ["Uri", 0, "System.String", "string"],
        ["Referrer", 1, "System.String", "string"],
        ["Status", 2, "System.Int64", "long"],  # int and long merge to long
    ]
    kql = kql.replace("schema_merge(PreserveOrder = false)", "schema_merge()")
    rows = table(chdb_backend, kql)[1]
    assert rows[2][:2] == ["Status", -1]  # moved from ordinal 1 to 2


STORMS = """datatable(State:string, EventType:string, DeathsDirect:long, Source:string) [
  "ARKANSAS", "Heavy Rain", 1, "EM", "ARIZONA", "Lightning", 1, "News",
  "ARIZONA", "Flash Flood", 2, "TS", "ARIZONA", "Flash Flood", 3, "BM",
  "ARKANSAS", "Heat", 3, "News", "ALABAMA", "Heat", 0, "News"
]"""


@pytest.mark.parametrize(
    ("tail", "names", "rows"),
    [
        # the reference's first example: a column per State, counted per EventType (0: none)
        (
            "project State, EventType | evaluate pivot(State)",
            ["EventType", "ALABAMA", "ARIZONA", "ARKANSAS"],
            [["Flash Flood", 0, 2, 0], ["Heat", 1, 0, 1], ["Heavy Rain", 0, 0, 1],
             ["Lightning", 0, 1, 0]],
        ),
        # the aggregate's column is no group column
        (
            "where DeathsDirect > 0 | project State, EventType, DeathsDirect"
            " | evaluate pivot(State, sum(DeathsDirect))",
            ["EventType", "ARIZONA", "ARKANSAS"],
            [["Flash Flood", 5, 0], ["Heat", 0, 3], ["Heavy Rain", 0, 1], ["Lightning", 1, 0]],
        ),
        # the output schema names exactly its columns, values absent from the data included
        (
            "project State, EventType"
            " | evaluate pivot(State) : (EventType:string, ALABAMA:long, ALASKA:long)",
            ["EventType", "ALABAMA", "ALASKA"],
            [["Flash Flood", 0, 0], ["Heat", 1, 0], ["Heavy Rain", 0, 0], ["Lightning", 0, 0]],
        ),
    ],
)  # fmt: skip
def test_pivot_makes_a_column_per_value(
    chdb_backend, tail: str, names: list[str], rows: list[Any]
) -> None:  # type: ignore[no-untyped-def]
    got_names, got_rows = table(chdb_backend, f"{STORMS} | {tail}")
    assert got_names == names and sorted(got_rows) == rows


def test_pivot_groups_by_the_columns_named(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    names, rows = table(
        chdb_backend, STORMS + " | evaluate pivot(State, make_set(Source), EventType)"
    )
    assert names == ["EventType", "ALABAMA", "ARIZONA", "ARKANSAS"]
    assert sorted(rows)[0] == ["Flash Flood", [], ["TS", "BM"], []]


@pytest.mark.parametrize(
    ("plugin", "code"),
    [
        ("pivot(Nope)", "UnknownName"),
        ("pivot(State, percentile(DeathsDirect, 50))", "InvalidArgument"),
        ("pivot(State, count(), Nope)", "UnknownName"),
    ],
)
def test_pivot_refuses_what_it_cannot_make(chdb_backend, plugin: str, code: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError) as info:
        execute_text(chdb_backend, STORMS + " | evaluate " + plugin)
    assert info.value.code == code


def test_pivot_names_an_empty_value_column1(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # an absent OTel status (null) or an empty string names no column: Kusto's `Column1`
    names, rows = table(
        chdb_backend,
        'datatable(s:string, k:string)["a", "x", "", "x", "a", "y"] | evaluate pivot(s, count(), k)',
    )
    assert names == ["k", "Column1", "a"]
    assert sorted(rows) == [["x", 1, 1], ["y", 0, 1]]


def test_narrow_gives_one_row_per_cell_in_row_then_column_order(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    names, rows = table(
        chdb_backend,
        "datatable(a: long, b: string, c: datetime, d: dynamic)"
        "[1, 'x', datetime(2020-01-01), dynamic({'k': [1]}), long(null), '', datetime(null), dynamic(null)]"
        " | evaluate narrow()",
    )
    assert names == ["Row", "Column", "Value"]
    assert rows == [
        [0, "a", "1"],
        [0, "b", "x"],
        [0, "c", "2020-01-01T00:00:00.0000000Z"],
        [0, "d", '{"k":[1]}'],
        [1, "a", ""],
        [1, "b", ""],
        [1, "c", ""],
        [1, "d", ""],
    ]


def test_narrow_of_a_stored_record_shows_its_fields_not_raw(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    from tests.engine.stored_logs import Logs, create_logs

    create_logs(
        chdb_backend, ch_database, 1_700_000_000 * 10**9, [{"attributes": {"http.route": "/a"}}]
    )

    def rows(kql: str) -> list[list[Any]]:
        return execute_text(chdb_backend, kql, resolver=Logs(ch_database)).tables[0].rows

    [[bag_text]] = rows("logs | project tostring(attributes)")
    cells = rows("logs | evaluate narrow() | where Column in ('body', 'attributes', '$raw')")
    assert cells == [[0, "body", "line 0"], [0, "attributes", bag_text]]
    assert "/a" in bag_text


def test_preview_gives_the_first_rows_and_the_row_count(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    result = execute_text(chdb_backend, "range x from 1 to 10 step 1 | evaluate preview(3)")
    assert [(t.name, [c.name for c in t.columns], len(t.rows)) for t in result.tables] == [
        ("PrimaryResult", ["x"], 3),
        ("Count", ["Count"], 1),
    ]
    assert result.tables[1].rows == [[10]]
