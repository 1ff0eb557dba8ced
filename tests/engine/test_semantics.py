"""KQL semantics through the whole engine (parse → compile → chDB), one row per trap or function."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text

DAY = 864_000_000_000
T2024 = 17_040_672_000_000_000  # 2024-01-01T00:00:00Z in ticks


def one(backend: Any, kql: str) -> tuple[list[tuple[str, str]], list[list[Any]]]:
    result = execute_text(backend, kql)
    table = result.tables[0]
    return [(c.name, c.type) for c in table.columns], table.rows


CASES = [
    # arithmetic traps
    ("print -10 % 4", [[2]]),
    ("print 14 % -12", [[2]]),
    ("print -7 / 2", [[-3]]),
    ("print 7.0 / 2", [[3.5]]),
    # strings: no null string, .NET spellings, case rules
    ("print isempty(''), isnull('')", [[True, False]]),
    (
        "print tostring(true), tostring(1.5), tostring(1h), tostring(90m)",
        [["true", "1.5", "01:00:00", "01:30:00"]],
    ),
    ("print 'abc' == 'ABC', 'abc' =~ 'ABC', 'abc' !~ 'ABD'", [[False, True, True]]),
    (
        "print 'Hello World' has 'world', 'Hello World' has 'wor', 'Hello World' contains 'wor'",
        [[True, False, True]],
    ),
    ("print 'a.b-c' has 'b', 'xbx' has 'b', 'abc' has_cs 'ABC'", [[True, False, False]]),
    ("print 'x' in~ ('X', 'y'), 'x' in ('X', 'y'), 5 between (1 .. 5)", [[True, False, True]]),
    ("print strlen('héllo'), toupper('ab'), substring('abcdef', 2, 3)", [[5, "AB", "cde"]]),
    ("print strcat('a', 1, true), indexof('abcdef', 'cd')", [["a1true", 2]]),
    ("print replace_string('aXbX', 'X', '-'), trim('-', '--a--')", [["a-b-", "a"]]),
    ("print extract('(\\\\d+)', 1, 'abc 123 def')", [["123"]]),
    # conversions
    ("print toint('x'), tolong('42'), todouble('1.5'), tobool('true')", [[None, 42, 1.5, True]]),
    ("print toint(2.9), tolong(-2.9)", [[2, -2]]),
    # datetime: ticks, epoch bins, 100 ns precision
    ("print datetime(2024-01-01)", [[T2024]]),
    ("print datetime(2024-01-01 00:00:00.0000001)", [[T2024 + 1]]),
    ("print bin(datetime(2024-01-01 13:45), 1d)", [[T2024]]),
    ("print datetime(2024-01-02) - datetime(2024-01-01)", [[DAY]]),
    ("print datetime(2024-01-01) + 1d", [[T2024 + DAY]]),
    ("print bin(7, 5), bin(-1, 5), bin(7.5, 2.0)", [[5, -5, 6.0]]),
    ("print getyear(datetime(2024-03-04)), dayofmonth(datetime(2024-03-04))", [[2024, 4]]),
    ("print startofmonth(datetime(2024-03-04 10:00))", [[T2024 + 60 * DAY]]),
    (
        "print format_datetime(datetime(2017-01-29 09:00:05), 'yy-MM-dd [HH:mm:ss]')",
        [["17-01-29 [09:00:05]"]],
    ),
    # dynamic
    ("print d = dynamic({'a': [1, 2]}) | project x = d.a[1], n = array_length(d.a)", [[2, 2]]),
    ("print pack_array(1, 'x', dynamic(null))", [[[1, "x", None]]]),
    ("print bag_pack('k', 1)", [[{"k": 1}]]),
    ("print tostring(dynamic({'a':1}))", [['{"a":1}']]),
    ("print range(1, 5, 2)", [[[1, 3, 5]]]),
    # logic
    ("print iff(1 > 2, 'a', 'b'), case(false, 1, true, 2, 3), coalesce('', 'x')", [["b", 2, "x"]]),
    ("print max_of(1, 5, 3), min_of(4, 2)", [[5, 2]]),
]


@pytest.mark.parametrize(("kql", "rows"), CASES)
def test_scalar_semantics(chdb_backend, kql: str, rows: list[list[Any]]) -> None:  # type: ignore[no-untyped-def]
    _, got = one(chdb_backend, kql)
    assert got == rows


def test_range_includes_both_ends(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    schema, rows = one(chdb_backend, "range x from 1 to 10 step 3")
    assert schema == [("x", "long")]
    assert rows == [[1], [4], [7], [10]]


def test_make_list_skips_nulls_and_auto_names(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    schema, rows = one(
        chdb_backend,
        "datatable(k:string, v:long)['a', 1, 'a', long(null), 'b', 3]"
        " | summarize count(), make_list(v), sum(v) by k | order by k asc",
    )
    assert schema == [("k", "string"), ("count_", "long"), ("list_v", "dynamic"), ("sum_v", "long")]
    assert rows == [["a", 2, [1], 1], ["b", 1, [3], 3]]


def test_bin_keeps_the_column_name(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    schema, rows = one(
        chdb_backend,
        "datatable(t:datetime)[datetime(2024-01-01 10:00), datetime(2024-01-01 11:30)]"
        " | summarize count() by bin(t, 1d)",
    )
    assert schema == [("t", "datetime"), ("count_", "long")]
    assert rows == [[T2024, 2]]


def test_join_defaults_to_innerunique(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = one(
        chdb_backend,
        "let L = datatable(k:long, a:string)[1, 'x', 1, 'y'];"
        " let R = datatable(k:long, b:string)[1, 'p', 1, 'q'];"
        " L | join R on k | project b | order by b asc",
    )
    # The left side is deduplicated on the key: one left row meets both right rows.
    assert rows == [["p"], ["q"]]


PAIRS = (
    "let t1 = datatable(key:long, value:string)[1, 'val1.1', 1, 'val1.2'];"
    " let t2 = datatable(key:long, value:string)[1, 'val1.3', 1, 'val1.4'];"
)


def test_a_filter_on_left_columns_runs_before_the_innerunique_dedup(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # ADX's documented example: the filter is pushed to the left side, so it picks which left
    # row the de-duplication keeps (filtered after the join, the kept val1.1 would leave none).
    _, rows = one(
        chdb_backend,
        PAIRS + " t1 | join kind=innerunique t2 on key | where value == 'val1.2'"
        " | order by value1 asc",
    )
    assert rows == [[1, "val1.2", 1, "val1.3"], [1, "val1.2", 1, "val1.4"]]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # A right column: filtered after the join, over the one kept left row.
        (PAIRS + " t1 | join t2 on key | where value1 == 'val1.4' | project value1", [["val1.4"]]),
        # inner keeps every left row: the order of filter and join changes nothing.
        (
            PAIRS + " t1 | join kind=inner t2 on key | where value == 'val1.2' | count",
            [[2]],
        ),
        # Both sides in one predicate: not pushed (the kept left row is val1.1).
        (
            PAIRS + " t1 | join t2 on key | where value == 'val1.2' or value1 == 'val1.3' | count",
            [[1]],
        ),
    ],
)
def test_filters_that_read_right_columns_stay_after_the_join(  # type: ignore[no-untyped-def]
    chdb_backend, query: str, expected: list[list[Any]]
) -> None:
    _, rows = one(chdb_backend, query)
    assert rows == expected


def test_join_kinds_and_right_column_suffix(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    schema, rows = one(
        chdb_backend,
        "let L = datatable(k:long, v:string)[1, 'a', 2, 'b'];"
        " let R = datatable(k:long, v:string)[2, 'c', 3, 'd'];"
        " L | join kind=leftouter R on k | order by k asc",
    )
    assert [n for n, _ in schema] == ["k", "v", "k1", "v1"]
    assert rows == [[1, "a", None, ""], [2, "b", 2, "c"]]


def test_extend_sees_input_columns_and_earlier_items(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = one(chdb_backend, "print x = 1 | extend x = x + 1, y = x * 10")
    assert rows == [[2, 20]]


def test_mv_expand_and_union(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = one(chdb_backend, "print a = dynamic([1, 2, 3]) | mv-expand a to typeof(long)")
    assert rows == [[1], [2], [3]]
    _, rows = one(chdb_backend, "union (print x = 1), (print x = 2) | order by x asc")
    assert rows == [[1], [2]]


def test_multiple_statements_give_multiple_tables(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    result = execute_text(chdb_backend, "print a = 1; print b = 2")
    assert [t.name for t in result.tables] == ["PrimaryResult", "Table_1"]
    assert [t.rows for t in result.tables] == [[[1]], [[2]]]


def test_render_gives_visualization_metadata(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    result = execute_text(
        chdb_backend, "range x from 1 to 3 step 1 | render timechart with (title='t')"
    )
    assert result.visualization is not None
    assert result.visualization.type == "timechart"
    assert result.visualization.properties == {"title": "t"}


def test_unsupported_construct_is_located(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    text = "print x = 1 | extend y = no_such_function(x)"
    with pytest.raises(QueryError) as info:  # the binder's error, as on every surface
        execute_text(chdb_backend, text)
    assert info.value.code == "UnknownFunction"
    where = info.value.location
    assert where is not None
    assert text[where.start_byte : where.end_byte].startswith("no_such_function")


def test_template_lambdas_never_capture_user_columns(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # Builders use lambdas such as `x -> ...`; a user column named x must stay the user's.
    _, rows = one(
        chdb_backend,
        "print x = dynamic([-1, 2]), i = 5 | project a = series_abs(x), s = array_sum(x), i",
    )
    assert rows == [[[1, 2], 1.0, 5]]


def test_dotted_bag_keys_read_flat_or_nested(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    from bzrk.engine.oneshot import execute_text

    result = execute_text(
        chdb_backend,
        'print r = dynamic({"service": {"name": "checkout"}, "a.b": 1}) '
        '| project s = tostring(r["service.name"]), ab = toint(r["a.b"]), m = tostring(r.service.name)',
    )
    assert result.tables[0].rows == [["checkout", 1, "checkout"]]


def test_make_list_appends_array_elements(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # Real Kusto (the emulator corpus) flattens array values one level, as make_set does.
    from bzrk.engine.oneshot import execute_text

    result = execute_text(
        chdb_backend,
        "datatable(d:dynamic)[dynamic([1, 2]), dynamic({'a': 1}), dynamic(3)]"
        " | summarize l = make_list(d), s = make_list(tostring(d))",
    )
    [[flat, strings]] = result.tables[0].rows
    assert sorted(map(str, flat)) == sorted(map(str, [1, 2, {"a": 1}, 3]))
    assert len(strings) == 3
