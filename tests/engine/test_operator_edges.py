"""Operator edge cases the docs functions library relies on."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


def test_range_bounds_from_toscalar(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    let T = datatable(v:long) [3, 7];
    let lo = toscalar(T | summarize min(v));
    let hi = toscalar(T | summarize max(v));
    range x from lo to hi step 2"""
    assert rows(chdb_backend, kql) == [[3], [5], [7]]


def test_where_with_prev(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "range x from 1 to 6 step 1 | extend y = x / 2 | where y != prev(y) | project x",
    )
    # The first row's prev(y) is null, and Kusto's `0 != null` is true: the row stays.
    assert got == [[1], [2], [4], [6]]


def test_invoke_binds_the_input_with_optional_parameters(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    let f = (T:(*), col:string, factor:long, suffix:string = '')
    { T | extend r = column_ifexists(col, 0) * factor, s = suffix };
    datatable(a:long) [1, 2] | invoke f('a', 10)"""
    assert rows(chdb_backend, kql) == [[1, 10, ""], [2, 20, ""]]


def test_percentiles_of_a_function_parameter(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    let f = (T:(x:long), hi:double) { T | summarize p = percentiles(x, hi) };
    range x from 1 to 100 step 1 | invoke f(90)"""
    literal = "range x from 1 to 100 step 1 | summarize p = percentiles(x, 90)"
    assert rows(chdb_backend, kql) == rows(chdb_backend, literal)


def test_dcount_over_no_rows_is_zero(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = "datatable(x:long)[] | summarize dcount(x), dcountif(x, x > 0)"
    assert rows(chdb_backend, kql) == [[0, 0]]


def test_bag_unpack_schema_with_star(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    datatable(d:dynamic, k:string) [dynamic({"a": 1, "b": "x"}), "r"]
    | evaluate bag_unpack(d) : (*, a:long)"""
    assert rows(chdb_backend, kql) == [["r", 1]]


def test_fork_branches_take_their_as_names() -> None:
    from bzrk.engine.compile.query import QueryCompiler
    from bzrk.kql.parser import parse

    def names(kql: str) -> list[str]:
        return [t.name for t in QueryCompiler().compile(parse(kql)).tables]

    assert names("range x from 1 to 5 step 1 | fork (count | as Totals) (take 2 | as Two)") == [
        "Totals",
        "Two",
    ]
    assert names("range x from 1 to 5 step 1 | fork A = (count) (take 2)") == [
        "A",
        "GenericResult1",
    ]


def test_tail_is_the_newest_rows_newest_first(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = """
    datatable(timestamp:datetime, s:string)
    [datetime(2024-01-02), 'b', datetime(2024-01-04), 'd', datetime(2024-01-01), 'a',
     datetime(2024-01-03), 'c']
    | tail 2 | project s"""
    assert rows(chdb_backend, kql) == [["d"], ["c"]]
    # Without a `timestamp`, the first datetime column says which rows are newest.
    other = "datatable(n:long, at:datetime)[1, datetime(2024-01-01), 2, datetime(2024-01-05)]"
    assert rows(chdb_backend, other + " | tail 1 | project n") == [[2]]


def test_tail_without_a_datetime_column_is_a_located_error(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError) as raised:
        rows(chdb_backend, "range x from 1 to 5 step 1 | tail 2")
    assert raised.value.code == "InvalidArgument"
    assert "tail needs a datetime column" in str(raised.value)


FIELDS = """datatable(timestamp:datetime, body:string, attributes:dynamic)[
    datetime(2024-01-01), 'a', dynamic({"http": {"method": "GET", "code": 200}, "user": "u1"}),
    datetime(2024-01-02), 'b', dynamic({"http": {"method": "POST", "code": "500"}, "tags": [1]}),
    datetime(2024-01-03), 'c', dynamic(null)]"""


def test_fieldstats_paths_types_cardinality_frequency(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = {r[0]: r[1:4] for r in rows(chdb_backend, FIELDS + " | fieldstats attributes")}
    assert got == {
        # Stored as a number on one record and a string on the other: dynamic.
        "attributes.http.code": ["dynamic", 2, 2 / 3],
        "attributes.http.method": ["string", 2, 2 / 3],
        "attributes.tags": ["dynamic", 1, 1 / 3],
        "attributes.user": ["string", 1, 1 / 3],
    }
    hint = rows(chdb_backend, FIELDS + ' | fieldstats attributes with field="*CODE*"')
    assert [(r[0], r[4]) for r in hint] == [
        ("attributes.http.code", {"types": ["long", "string"], "examples": ["200", "500"]})
    ]


def test_fieldstats_depth_counts_levels_below_the_column(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    top = rows(chdb_backend, FIELDS + " | fieldstats with depth=1")
    assert {r[0]: r[1] for r in top} == {
        "timestamp": "datetime",
        "body": "string",
        "attributes": "dynamic",
    }
    # A cut path is one field per record, however many keys are under it. (A column named as
    # a stored OTel bag, `attributes`, has flat keys instead: test_bag_paths.)
    bag = FIELDS.replace("attributes", "props")
    one = rows(chdb_backend, bag + " | fieldstats props with depth=1")
    assert {r[0]: r[3] for r in one}["props.http"] == 2 / 3
    flat = rows(chdb_backend, FIELDS + " | fieldstats attributes with depth=1")
    assert {r[0] for r in flat} >= {"attributes.http.method", "attributes.http.code"}
    with pytest.raises(QueryError) as raised:
        rows(chdb_backend, FIELDS + " | fieldstats with limit=0")
    assert raised.value.code == "InvalidArgument"


def test_sample_distinct_gives_at_most_n_distinct_values(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    data = "datatable(E: string, D: long)['a', 1, 'b', 5, 'a', 3, 'c', 2, 'b', 9]"
    two = execute_text(chdb_backend, f"{data} | sample-distinct 2 of E").tables[0]
    assert [c.name for c in two.columns] == ["E"]
    values = [r[0] for r in two.rows]
    assert len(values) == 2 and len(set(values)) == 2 and set(values) <= {"a", "b", "c"}
    assert sorted(r[0] for r in rows(chdb_backend, f"{data} | sample-distinct 10 of E")) == [
        "a",
        "b",
        "c",
    ]


def test_percentilew_weights_each_row(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    data = "datatable(E: string, D: long, W: long)['a', 1, 1, 'a', 2, 3, 'b', 5, 1]"
    result = execute_text(
        chdb_backend, f"{data} | summarize percentilew(D, W, 50), x = percentilew(D, W, 99) * 2"
    )
    assert [c.name for c in result.tables[0].columns] == ["percentile_D_50", "x"]
    assert result.tables[0].rows == [[2, 10]]


def test_facet_gives_the_with_rows_then_a_count_table_per_column(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    data = (
        'let S = datatable(State: string, EventType: string, D: long)["ALASKA", "Heavy Snow", 1, '
        '"ALASKA", "Heavy Rain", 2, "ARIZONA", "Heavy Rain", 3, "TEXAS", "Hail", 4]; '
    )
    result = execute_text(
        chdb_backend,
        data
        + 'S | where State startswith "A" | facet by State, EventType with (where D > 1 | take 5)',
    )
    shapes = [(t.name, [c.name for c in t.columns]) for t in result.tables]
    assert shapes == [
        ("PrimaryResult", ["State", "EventType", "D"]),
        ("State", ["State", "count_State"]),
        ("EventType", ["EventType", "count_EventType"]),
    ]
    with_rows, states, events = (sorted(t.rows) for t in result.tables)
    assert with_rows == [["ALASKA", "Heavy Rain", 2], ["ARIZONA", "Heavy Rain", 3]]
    assert states == [["ALASKA", 2], ["ARIZONA", 1]]
    assert events == [["Heavy Rain", 2], ["Heavy Snow", 1]]
    only = execute_text(chdb_backend, data + "S | facet by State").tables
    assert [(t.name, sorted(t.rows)) for t in only] == [
        ("State", [["ALASKA", 2], ["ARIZONA", 1], ["TEXAS", 1]])
    ]


STATES = 'datatable(State: string)["NEW YORK", "TEXAS", "GEORGIA", "GEORGIA TEXAS"]'


@pytest.mark.parametrize(
    ("kql", "expected"),
    [
        # a table's first column, by name or as a parenthesized query (the reference's forms)
        (
            'let large = datatable(s: string)["TEXAS", "GEORGIA"]; '
            + STATES
            + " | where State has_any (large)",
            ["TEXAS", "GEORGIA", "GEORGIA TEXAS"],
        ),
        (
            'let large = datatable(s: string)["TEXAS", "GEORGIA"]; '
            + STATES
            + ' | where State has_any ((large | where s == "TEXAS"))',
            ["TEXAS", "GEORGIA TEXAS"],
        ),
        (
            'let large = datatable(s: string)["TEXAS", "GEORGIA"]; '
            + STATES
            + " | where State has_all (large)",
            ["GEORGIA TEXAS"],
        ),
        # arrays known only when the query runs
        (
            "let L = toscalar(datatable(s: string)['texas'] | summarize make_list(s)); "
            + STATES
            + " | where State has_any (L)",
            ["TEXAS", "GEORGIA TEXAS"],
        ),
        (STATES + " | where State has_all (pack_array('georgia', 'texas'))", ["GEORGIA TEXAS"]),
        (
            STATES + " | where State has_any (pack_array('york'), 'GEORGIA')",
            ["NEW YORK", "GEORGIA", "GEORGIA TEXAS"],
        ),
    ],
)
def test_has_any_and_has_all_read_tables_and_runtime_arrays(
    chdb_backend, kql: str, expected: list[str]
) -> None:  # type: ignore[no-untyped-def]
    # these used to match nothing (has_any) or everything (has_all), with no error
    assert [r[0] for r in rows(chdb_backend, kql)] == expected


def test_has_any_over_a_per_row_array(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = (
        'datatable(a: string, l: dynamic)["hello world", dynamic(["world"]), "x", dynamic(["y"]), '
        '"a c", dynamic(["a", "b"])] | project h = a has_any (l), al = a has_all (l)'
    )
    assert rows(chdb_backend, kql) == [[True, True], [False, False], [True, False]]


def test_a_null_is_in_no_list_and_not_in_every_list(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # `in` is an OR of `==`, `!in` an AND of `!=` (the null-values reference page), and
    # `int(null) == 1` is false, `int(null) != 1` true: so `!in` keeps the null row
    data = "datatable(x: int)[1, int(null), 3]"
    assert rows(chdb_backend, data + " | where x !in (1, 2)") == [[None], [3]]
    assert rows(chdb_backend, data + " | where x in (1, 2)") == [[1]]
    assert rows(
        chdb_backend, "print int(null) in (1, 2), int(null) !in (1, 2), 1 in (int(null), 1)"
    ) == [[False, True, True]]


DYNAMIC_NUMBERS = "datatable(x: dynamic, y: string)[dynamic(10), 'a', dynamic(9), 'b', dynamic(100), 'c', dynamic(null), 'd']"


def test_dynamic_numbers_sort_and_win_by_value_not_text(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # as text 9 > 100 > 10: `top 1 by attributes.duration_ms desc` gave 99.2 over 8939
    assert rows(
        chdb_backend, DYNAMIC_NUMBERS + " | where isnotnull(x) | sort by x desc | project x"
    ) == [
        [100],
        [10],
        [9],
    ]
    assert rows(
        chdb_backend, DYNAMIC_NUMBERS + " | where isnotnull(x) | top 1 by x asc | project x"
    ) == [[9]]
    assert rows(
        chdb_backend,
        DYNAMIC_NUMBERS + " | summarize a = arg_max(x, y), mi = maxif(x, true), b = arg_min(x, y)",
    ) == [[100, "c", 100.0, 9, "b"]]


def test_an_otel_attribute_number_tops_by_value(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    from tests.engine.stored_logs import Logs, create_logs

    bags = [{"attributes": {"duration_ms": v}} for v in (99.2, 8939, 1000, 5)]
    create_logs(chdb_backend, ch_database, 1_700_000_000 * 10**9, bags)
    result = execute_text(
        chdb_backend,
        "logs | top 2 by attributes.duration_ms desc | project d = todouble(attributes.duration_ms)",
        resolver=Logs(ch_database),
    )
    assert result.tables[0].rows == [[8939.0], [1000.0]]
    arg = execute_text(
        chdb_backend,
        "logs | summarize arg_max(attributes.duration_ms, body)",
        resolver=Logs(ch_database),
    )
    assert arg.tables[0].rows[0][1] == "line 1"


def test_typed_functions_read_an_otel_attribute_as_their_type(chdb_backend, ch_database) -> None:  # type: ignore[no-untyped-def]
    # Berserk's permissive mode: "passing a field to a typed function coerces it"; these
    # failed in ClickHouse with a TypeMismatch (percentile over attributes.duration_ms)
    from tests.engine.stored_logs import Logs, create_logs

    bags = [
        {"attributes": {"duration_ms": v, "started": "2020-01-01 10:30:00", "wait": "00:01:00"}}
        for v in (10, 30, -20)
    ]
    create_logs(chdb_backend, ch_database, 1_700_000_000 * 10**9, bags)
    result = execute_text(
        chdb_backend,
        "logs | summarize p = percentile(attributes.duration_ms, 50), "
        "ps = percentiles(attributes.duration_ms, 90), s = sumif(attributes.duration_ms, true), "
        "a = max(abs(attributes.duration_ms)), d = take_any(startofday(attributes.started)), "
        "h = take_any(hourofday(attributes.started)), w = take_any(totimespan(attributes.wait) * 2)",
        resolver=Logs(ch_database),
    )
    [[p, ps, s, a, d, h, w]] = result.tables[0].rows
    assert (p, ps, s, a, h) == (10.0, 30.0, 20.0, 30.0, 10)
    assert d == 15778368000000000  # 2020-01-01 in 100 ns ticks
    assert w == 1_200_000_000  # two minutes


def test_take_any_of_several_expressions_reads_one_row(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    data = 'datatable(s: string, e: long)["a", 1, "b", 2, "c", 3]'
    result = execute_text(
        chdb_backend, data + " | summarize take_any(s, e), (x, y) = take_any(s, e)"
    ).tables[0]
    assert [c.name for c in result.columns] == ["s", "e", "x", "y"]
    [[s, e, x, y]] = result.rows
    assert {"a": 1, "b": 2, "c": 3}[s] == e and {"a": 1, "b": 2, "c": 3}[x] == y  # one row's values
    star = execute_text(
        chdb_backend, data + " | summarize take_any(*) by s | order by s asc"
    ).tables[0]
    assert [c.name for c in star.columns] == ["s", "e"] and star.rows == [
        ["a", 1],
        ["b", 2],
        ["c", 3],
    ]
    old = execute_text(chdb_backend, data + " | where s == 'b' | summarize any(*)").tables[0]
    assert [c.name for c in old.columns] == ["any_s", "any_e"] and old.rows == [["b", 2]]


def test_percentiles_array_takes_a_let_bound_array(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # "The array must be constant but doesn't have to be literal" (the percentiles reference)
    kql = (
        "let p = dynamic([50, 90]); range x from 1 to 10 step 1 | summarize percentiles_array(x, p)"
    )
    assert rows(chdb_backend, kql) == [[[5, 9]]]


def test_summarize_of_constants_alone_is_one_row(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # `summarize x = max_of(1, 2)` answered one row per input row (19,982 on the demo)
    data = "datatable(a: long)[1, 2, 3]"
    assert rows(chdb_backend, data + " | summarize x = max_of(1, 2)") == [[2]]
    assert rows(chdb_backend, data + " | summarize x = 1 + 1, c = count()") == [[2, 3]]
    assert rows(chdb_backend, data + " | summarize x = 1 by a | count") == [[3]]


def test_list_sizes_and_percentile_arrays_as_the_references_give_them(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # the deprecated makelist/makeset keep 128 items by default; a size of 0 is the default
    # (ClickHouse refused groupArray(0)); percentiles_array of datetimes holds ISO text and an
    # int's percentile is a long
    sizes = (
        "range x from 1 to 300 step 1 | summarize array_length(makelist(x)), "
        "array_length(makeset(x)), array_length(make_list(x)), array_length(make_list(x, 0))"
    )
    assert rows(chdb_backend, sizes) == [[128, 128, 300, 300]]
    result = execute_text(
        chdb_backend,
        "datatable(t: datetime, i: int)[datetime(2020-01-01 10:00), 1, datetime(2020-01-02), 2] "
        "| summarize percentiles_array(t, 50, 100), percentiles(i, 50)",
    ).tables[0]
    assert [c.type for c in result.columns] == ["dynamic", "long"]
    assert result.rows == [[["2020-01-01T10:00:00.0000000Z", "2020-01-02T00:00:00.0000000Z"], 1]]


def test_arg_max_names_its_columns_as_kusto_does(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    data = 'datatable(x: long, y: string)[1, "a", 2, "B"]'

    def names(kql: str) -> list[str]:
        return [c.name for c in execute_text(chdb_backend, data + kql).tables[0].columns]

    assert names(" | summarize arg_max(x, x * 2, tolower(y))") == ["x", "max_x_arg1", "max_x_arg2"]
    assert names(" | summarize (a, b) = arg_max(x, y)") == ["a", "b"]
    assert names(" | summarize arg_max(x, *, y)") == ["x", "y"]  # y comes once


def named_rows(backend: Any, kql: str) -> tuple[list[str], list[list[Any]]]:
    """The first result table's column names and rows."""
    table = execute_text(backend, kql).tables[0]
    return [c.name for c in table.columns], table.rows


def test_distinct_names_a_computed_column_as_kql_does(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # Kusto.Language's names (as project's): a conversion of a member is its path, a call of
    # a literal its prefix, an operator expression ColumnN. Before, every computed item of
    # distinct was ColumnN, so `distinct tostring(attributes.n)` had no `attributes_n`.
    data = 'datatable(attributes:dynamic, x:long)[dynamic({"n":1, "a.b":2}), 1]'
    assert named_rows(
        chdb_backend,
        f'{data} | distinct tostring(attributes.n), tostring(attributes["a.b"]), strlen("a"),'
        " x + 1, x",
    ) == (["attributes_n", "attributes_a.b", "strlen_", "Column1", "x"], [["1", "2", 1, 2, 1]])


def test_make_series_and_top_nested_name_a_computed_key_as_kql_does(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    data = 'datatable(attributes:dynamic, t:datetime)[dynamic({"n":"a"}), datetime(2020-01-01)]'
    names, rows = named_rows(
        chdb_backend,
        f"{data} | make-series c = count() on t from datetime(2020-01-01)"
        " to datetime(2020-01-01 02:00) step 1h by tostring(attributes.n)",
    )
    assert names == ["attributes_n", "c", "t"]
    assert rows[0][:2] == ["a", [1, 0]]
    assert named_rows(
        chdb_backend, f"{data} | top-nested 2 of tostring(attributes.n) by count()"
    ) == (["attributes_n", "aggregated_attributes_n"], [["a", 1]])


def test_project_suffixes_a_repeated_member_name_as_the_binder_names_it(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    assert named_rows(
        chdb_backend,
        'datatable(attributes:dynamic)[dynamic({"n":1})]'
        " | project tostring(attributes.n), attributes.n, attributes_n = 2",
    ) == (["attributes_n", "attributes_n1", "attributes_n2"], [["1", 1, 2]])


def test_arguments_named_in_an_aggregate_call_name_its_columns(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    """`arg_min(t, name, service = …)` gives `service` (the Tracing tab's trace list read an
    empty Service column when it was min_t_arg1), `sum(x = a)` gives sum_x, and a built-in's
    named arguments are positional (Kusto.Language)."""
    result = execute_text(
        chdb_backend,
        'datatable(t:long, name:string, svc:string)[2, "b", "cart", 1, "a", "checkout"]'
        " | summarize arg_min(t, name, service = toupper(svc)), sum(x = t), take_any(z = name)",
    )
    table = result.tables[0]
    assert [c.name for c in table.columns] == ["t", "name", "service", "sum_x", "z"]
    assert table.rows[0][:4] == [1, "a", "CHECKOUT", 3]
    assert execute_text(chdb_backend, 'print strlen(s = "abc")').tables[0].rows == [[3]]
