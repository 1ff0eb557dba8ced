"""Binder: result schemas and naming rules, types, symbols, permissive/strict resolution."""

from __future__ import annotations

import pytest

from bzrk.kql import GlobalState, KqlError, analyze
from bzrk.kql import syntax as s
from bzrk.kql.symbols import ColumnSymbol, RawPathSymbol, TableRefSymbol, VariableSymbol

G = GlobalState.from_tables(
    {
        "default": [
            ("timestamp", "datetime"),
            ("body", "string"),
            ("severity_number", "int"),
            ("duration", "timespan"),
            ("resource", "dynamic"),
            ("attributes", "dynamic"),
        ],
        "T": [("a", "long"), ("b", "string")],
    }
)


def schema(text: str, g: GlobalState = G) -> list[tuple[str, str]]:
    result = analyze(text, g).result_schema
    assert result is not None
    return [(c.name, c.type) for c in result.columns]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("print 1, x=2.5, 'a'", [("print_0", "long"), ("x", "real"), ("print_2", "string")]),
        ("T | summarize count()", [("count_", "long")]),
        (
            "T | summarize sum(a), avg(a) by b",
            [("b", "string"), ("sum_a", "long"), ("avg_a", "real")],
        ),
        (
            "default | summarize count() by bin(timestamp, 1h)",
            [("timestamp", "datetime"), ("count_", "long")],
        ),
        (
            "default | summarize count() by tostring(resource.service.name)",
            [("resource_service_name", "string"), ("count_", "long")],
        ),
        ("T | project a + 1, a * 2", [("Column1", "long"), ("Column2", "long")]),
        ("T | extend c = a / 2.0 | project c", [("c", "real")]),
        ("T | summarize arg_max(a, *) by b", [("b", "string"), ("a", "long")]),
        (
            "T | summarize percentiles(a, 50, 99.9)",
            [("percentile_a_50", "long"), ("percentile_a_99_9", "long")],
        ),
        ("T | count", [("Count", "long")]),
        # a computed take_any value is any_arg<position> (Kusto.Language; it was take_any_)
        (
            "T | summarize take_any(a + 1), take_any(a, strcat(b, 'x'))",
            [("any_arg0", "long"), ("a", "long"), ("any_arg1", "string")],
        ),
        # an argument named in an aggregate call names its column (Kusto.Language: the trace
        # list's `arg_min(start_time, span_name, service = …)` lost `service` to min_…_arg1)
        (
            "T | summarize arg_min(a, b, service = strlen(b)), arg_max(y = a, b)",
            [("a", "long"), ("b", "string"), ("service", "long"), ("y", "long"), ("b1", "string")],
        ),
        (
            "T | summarize sum(x = a), make_list(x = a), take_any(z = b), any(z = b)",
            [("sum_x", "long"), ("list_x", "dynamic"), ("z", "string"), ("any_z", "string")],
        ),
        ("T | join (T) on a", [("a", "long"), ("b", "string"), ("a1", "long"), ("b1", "string")]),
        ("T | join kind=leftsemi (T) on a", [("a", "long"), ("b", "string")]),
        # a member path's name is derived, so a repeat gets a suffix, and so does a spelled
        # name that repeats a derived one (Kusto.Language; it was a DuplicateName)
        (
            "default | project tostring(attributes.n), attributes.n, attributes_n = 1",
            [("attributes_n", "string"), ("attributes_n1", "dynamic"), ("attributes_n2", "long")],
        ),
        (
            "T | union withsource=Src (T | project c = 1)",
            [("Src", "string"), ("a", "long"), ("b", "string"), ("c", "long")],
        ),
        ("range x from 1 to 10 step 1", [("x", "long")]),
        ("range t from datetime(2020-01-01) to datetime(2020-01-02) step 1h", [("t", "datetime")]),
        (
            "datatable(a:int, b:dynamic)[1, dynamic(null)] | mv-expand b",
            [("a", "int"), ("b", "dynamic")],
        ),
        (
            "T | parse b with x:long '-' y",
            [("a", "long"), ("b", "string"), ("x", "long"), ("y", "string")],
        ),
        ("T | project-rename c = a | project-away b", [("c", "long")]),
        ("T | project-reorder b", [("b", "string"), ("a", "long")]),
        (  # the axis after a key of the same name takes a suffix (it repeated `timestamp`)
            "default | make-series count() on timestamp step 1h by bin(timestamp, 1d)",
            [("timestamp", "datetime"), ("count_", "dynamic"), ("timestamp1", "dynamic")],
        ),
        (
            "T | make-series sum(a) on timestamp step 1h by b",
            [("b", "string"), ("sum_a", "dynamic"), ("timestamp", "dynamic")],
        ),
        (
            "T | getschema",
            [
                ("ColumnName", "string"),
                ("ColumnOrdinal", "int"),
                ("DataType", "string"),
                ("ColumnType", "string"),
            ],
        ),
        ("let f = (x: long) { x * 2 }; T | extend y = f(a) | project y", [("y", "long")]),
        ("let V = T | where a > 1; V | distinct b", [("b", "string")]),
        ("print d = dynamic({'a': 1}) | extend d.a", [("d", "dynamic"), ("d_a", "dynamic")]),
        ("print x = strlen('ab') | extend strlen('a')", [("x", "long"), ("strlen_", "long")]),
        (
            "default | where timestamp > ago(1h) | take 5 | project duration / 2",
            [("Column1", "timespan")],
        ),
        # Berserk's name of tostring(resource['service.name']), referred to as written.
        (
            "default | summarize n = count() by tostring(resource['service.name'])"
            " | project resource_service.name, n | where resource_service.name != ''",
            [("resource_service.name", "string"), ("n", "long")],
        ),
    ],
)
def test_result_schema(query: str, expected: list[tuple[str, str]]) -> None:
    assert schema(query) == expected


def test_side_tables_resolve_names_calls_and_schemas() -> None:
    text = "let n = 2; default | where body has 'x' | extend k = foo.bar | summarize c = count() by severity_number | top n by c"
    b = analyze(text, G)
    stmt = b.query.statements[1]
    assert isinstance(stmt, s.ExprStatement) and isinstance(stmt.expr, s.Pipeline)
    pipe = stmt.expr
    assert isinstance(b.symbols[pipe.source], TableRefSymbol)
    where, extend, summarize, top = pipe.operators
    assert b.inputs[where] is b.schemas[pipe.source]
    body = where.predicate.left  # type: ignore[attr-defined]
    assert isinstance(b.symbols[body], ColumnSymbol) and b.types[body] == "string"
    path = extend.items[0].expr  # type: ignore[attr-defined]
    assert isinstance(path, s.Member)
    sym = b.symbols[path]
    assert isinstance(sym, RawPathSymbol) and sym.path == ("foo", "bar")
    assert b.types[path] == "dynamic"
    agg = summarize.aggregates[0]  # type: ignore[attr-defined]
    info = b.calls[agg.expr]
    assert info.kind == "aggregate" and info.function is not None and info.function.name == "count"
    assert b.names[agg] == ("c",)
    count_ref = top.count  # type: ignore[attr-defined]
    assert isinstance(b.symbols[count_ref], VariableSymbol) and b.types[count_ref] == "long"
    assert [c.name for c in b.schemas[top].columns] == ["severity_number", "c"]


def test_strict_mode_rejects_unknown_names_permissive_resolves_raw() -> None:
    assert schema("default | project x = foo.bar") == [("x", "dynamic")]
    with pytest.raises(KqlError) as info:
        analyze("default | project x = foo.bar", G.with_permissive(False))
    err = info.value
    assert err.code == "UnknownName" and "'foo'" in err.message
    assert err.location is not None and err.location.start_column == 23


def test_raw_does_not_survive_project() -> None:
    with pytest.raises(KqlError) as info:
        analyze("default | project body | where foo == 1", G)
    assert info.value.code == "UnknownName"


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("T | where nosuchfunc(a)", "UnknownFunction"),
        ("print strlen()", "WrongArgumentCount"),
        ("print strlen('a', 'b')", "WrongArgumentCount"),
        ("print base64_encode_fromguid('abc')", "TypeMismatch"),
        ("print 'a' - 1", "TypeMismatch"),
        ("T | project a, a", "DuplicateName"),
        ("T | summarize count() by a, a", "DuplicateName"),  # KS171 (it was a, a1)
        ("print count()", "TypeMismatch"),
        ("NoSuchTable | take 1", "UnknownTable"),
        ("T | evaluate no_such_plugin()", "UnknownFunction"),
        ("print x = 1 | extend r = x in (1, 'a')", "TypeMismatch"),
        ("T | where b !in~ ('x', 2)", "TypeMismatch"),
        ("print bin_auto('a')", "TypeMismatch"),
        ("print v = 1 | extend s = row_window_session(v, 10, 3)", "TypeMismatch"),
    ],
)
def test_semantic_errors(query: str, code: str) -> None:
    with pytest.raises(KqlError) as info:
        analyze(query, G.with_permissive(False))
    assert info.value.code == code
    assert info.value.location is not None


def test_berserk_extensions_bind() -> None:
    assert schema(
        "default | summarize hint.budget=1000 hint.sample=0.1 count() by bin_auto(timestamp)"
    ) == [
        ("timestamp", "datetime"),
        ("count_", "long"),
    ]
    assert schema("default | extend h = log_template_hash(body) | project h") == [("h", "long")]
    assert schema(
        "default | annotate attributes.code:long, severity_number:long | project severity_number"
    ) == [("severity_number", "long")]
    assert schema("search 'timeout'")[0] == ("$table", "string")
    assert schema("default | fieldstats attributes with limit=10 depth=2")[0] == (
        "AttributePath",
        "string",
    )
    assert schema(
        "default | trace-find { body has 'x' } >> { duration > 1s } summarize n = count()"
    ) == [
        ("trace_id", "string"),
        ("n", "long"),
    ]


def test_make_series_in_range_and_plugin_aggregates() -> None:
    assert schema(
        "default | make-series n = count() default=0 on timestamp in range(ago(1d), now(), 1h) by body"
    ) == [
        ("body", "string"),
        ("n", "dynamic"),
        ("timestamp", "dynamic"),
    ]
    analyze("T | evaluate pivot(b, count(), a)", G)


def test_graph_operators() -> None:
    edges = "datatable(src:string, dst:string, kind:string)['a','b','x']"
    nodes = "datatable(name:string, age:long)['a', 1]"
    assert schema(
        f"let N = {nodes}; {edges} | make-graph src --> dst with N on name"
        " | graph-match (p)-[e*1..3]->(q) where p.age > 0 project who = p.name, age = q.age, kinds = e.kind"
    ) == [("who", "string"), ("age", "long"), ("kinds", "dynamic")]
    # An item named like a node variable does not hide it from the items after it (ADX).
    assert schema(
        f"let N = {nodes}; {edges} | make-graph src --> dst with N on name"
        " | graph-match (p)-->(q) project q = q.name, age = q.age"
    ) == [("q", "string"), ("age", "long")]
    assert schema(
        f"{edges} | make-graph src --> dst with_node_id=name | graph-mark-components with_component_id=c"
        " | graph-to-table nodes with_node_id=Id"
    ) == [("Id", "long"), ("name", "string"), ("c", "long")]


def test_semantic_errors_are_collected_without_cascades() -> None:
    with pytest.raises(KqlError) as info:
        analyze("let a = nosuch(1); let b = a + 1; print b; print zz", G)
    codes = [(e.code, e.snippet) for e in info.value.errors]
    assert codes == [("UnknownFunction", "nosuch(1)"), ("UnknownName", "zz")]


def test_pattern_statement_and_inline_external_table() -> None:
    assert schema(
        "declare pattern country = (name:string)[state:string]\n"
        '{ ("USA").["New York"] = { print Capital = "Albany" }; ("Canada").["Alberta"] = { print Capital = 1 }; };\n'
        'country("Canada").Alberta'
    ) == [("Capital", "long")]
    assert schema(
        "inline_external_table(Timestamp:datetime, Value:real) kind=storage dataformat=parquet"
        ' (h@"https://x/y.parquet") | summarize avg(Value)'
    ) == [("avg_Value", "real")]


def test_semantic_search_top_adds_score() -> None:
    assert schema("default | project body | top 5 by body similarto 'disk full'") == [
        ("body", "string"),
        ("_score", "real"),
    ]


def test_project_by_names() -> None:
    src = "datatable(Name:string, Age:int, City:string, Country:string)['P', 1, 'NY', 'US']"
    assert schema(f'{src} | project-by-names "C*", dynamic(["Name"])') == [
        ("City", "string"),
        ("Country", "string"),
        ("Name", "string"),
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # an item sees the ones before it in the same extend / project / print
        (
            "T | extend c = a, d = c + 1",
            [("a", "long"), ("b", "string"), ("c", "long"), ("d", "long")],
        ),
        ("T | project c = a * 2, d = c + 1", [("c", "long"), ("d", "long")]),
        ("print a = 1, b = a + 0.5", [("a", "long"), ("b", "real")]),
        # ... except where it shadows an input column: the input's column is read
        ("T | project b = 1, n = strlen(b)", [("b", "long"), ("n", "long")]),
        # ints and reals are one family in an in-list
        ("T | where a in (1, 2.5) | count", [("Count", "long")]),
        # bin_auto over numbers and timespans keeps the argument's type (ADX)
        ("T | summarize count() by bin_auto(a)", [("a", "long"), ("count_", "long")]),
    ],
)
def test_items_see_earlier_items_and_numeric_bin_auto(
    query: str, expected: list[tuple[str, str]]
) -> None:
    assert schema(query, G.with_permissive(False)) == expected


def test_pattern_bodies_see_their_parameters() -> None:
    text = """declare pattern country = (name:string)[state:string]
    { ("USA").["Washington"] = { print Capital = "Olympia", Country = name }; };
    country("USA").Washington"""
    assert schema(text, G.with_permissive(False)) == [("Capital", "string"), ("Country", "string")]


def test_union_wildcards_match_the_querys_own_views() -> None:
    text = """let V_1 = view () { print x = 1 };
    let V_2 = view () { print x = 2 };
    union isfuzzy=true V*, (Missing | where x > 0) | order by x asc"""
    assert schema(text, G.with_permissive(False)) == [("x", "long")]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "T | where b > 5",
            "The operator '>' is not defined for the operand types string and long.",
        ),
        ("print datetime(2020-01-01) > 1", "operand types datetime and long"),
        ("default | where duration < 2", "operand types timespan and long"),
        (
            "T | where a and true",
            "The operator 'and' is not defined for the operand types long and bool.",
        ),
        ("T | where isnull(a) or b", "operand types bool and string"),
        (
            "print strlen(1)",
            "Argument 'string' of strlen(): expected a string or dynamic, found long.",
        ),
        ("print array_length('a')", "expected a dynamic array, found string"),
        ("T | summarize sum(b)", "expected a number, timespan or datetime, found string"),
        # `==`/`!=`: Kusto.Language takes any scalars, the ADX engine refuses ("Cannot compare
        # values of types string and long. Try adding explicit casts")
        (
            "T | where b == 1",
            "The operator '==' is not defined for the operand types string and long.",
        ),
        ("print now() != '2020-01-01'", "operand types datetime and string"),
        ("default | where duration == 5", "operand types timespan and long"),
        (
            "T | where a in ('x', 'y')",
            "The operator 'in' is not defined for the operand types long",
        ),
        (
            "T | where b !in (1, 2)",
            "The operator '!in' is not defined for the operand types string",
        ),
        ('let f = (a:int) { a }; print f("x")', "Argument 'a' of f(): expected int, found string"),
        ('datatable(a:int)["x"]', "A value of column 'a': expected int, found string"),
        ("datatable(a:string, t:datetime)['x', 1]", "column 't': expected datetime, found long"),
        ("T | summarize avg(b)", "The function 'avg' is not compatible with arguments (string)."),
        ("print coalesce(1, 'a')", "No common type can be determined from the arguments"),
        ("print max_of(1, true)", "No common type can be determined from the arguments"),
        ("print min_of(now(), 1d)", "No common type can be determined from the arguments"),
    ],
)
def test_operands_kusto_rejects_are_type_errors(query: str, message: str) -> None:
    # Kusto.Language's signatures (the oracle answers KS106/KS141/KS234/KS138/KS127 for each).
    with pytest.raises(KqlError) as info:
        analyze(query, G)
    assert info.value.code == "TypeMismatch"
    assert message in info.value.message
    assert info.value.location is not None


def test_an_equality_of_two_types_says_to_cast() -> None:
    with pytest.raises(KqlError) as info:
        analyze("T | where b == 1", G)
    assert "Try adding explicit casts" in info.value.message


@pytest.mark.parametrize(
    "query",
    [
        "default | where attributes.status > 499 and attributes.ok",  # dynamic with anything
        "default | where attributes.started > ago(1h)",  # lenient where Kusto.Language is not
        "default | where timestamp > ago(1h) and duration >= 1s and severity_number >= 17",
        "print true > 0, 1.5 < 2, decimal(1) <= 2",  # numbers and bools order together
        "T | where a == 1.5 and b != 'x' and a != decimal(2)",  # numbers with each other
        "default | where attributes.code == 500 and resource.ok != true",  # dynamic: any
        "T | where a in (1, 2.5) and b in ('x') and attributes.code in (500, 501)",
        "datatable(r:real, n:int, d:dynamic, s:string)[1, long(2), 'x', 's', 2.5, 3, 4, '']",
        "T | summarize count(a), countif(a > 0), max(b), make_list(b)",
        "print toupper(1), split(1, ',')",  # Kusto converts these arguments
        'default | search "error" and ("payment" or "timeout")',  # search terms are conditions
        'search "denied" or body has "x"',
        "print coalesce(int(null), 1, 2.5, decimal(1)), max_of(true, false), min_of('a', 'b')",
        "default | extend code = coalesce(attributes.code, 0)",  # dynamic with anything
        "print iff(true, 1, 'a')",  # iff's branches are CommonScalarOrDynamic: Kusto takes it
        "print iff(true, 1, 2.5), case(false, 1, true, decimal(2), int(3))",  # numbers mix
    ],
)
def test_operands_kusto_accepts_still_bind(query: str) -> None:
    analyze(query, G)


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("T | summarize r = a + 1", "a"),
        ("T | summarize n = count(), r = b by a", "b"),
        # a name resolved into $raw is a row value too (permissive mode)
        ("default | summarize n = count(), s = http.status", "http"),
        (
            "default | make-series s = sum(severity_number) * severity_number on timestamp step 1h",
            "severity_number",
        ),
    ],
)
def test_a_row_value_outside_an_aggregate_is_refused_where_it_is(query: str, name: str) -> None:
    """`summarize r = a + 1` is Kusto's KS236, located at `a` (the engine used to refuse it
    after binding, at compile time)."""
    with pytest.raises(KqlError) as info:
        analyze(query, G)
    err = info.value
    assert err.kusto_code == "KS236" and f"'{name}'" in err.message
    assert err.location is not None
    assert query[err.location.start_byte : err.location.end_byte] == name


@pytest.mark.parametrize(
    "query",
    [
        "T | summarize n = count(), k = a by a",  # a group key
        "let k = 3; T | summarize r = k + count(), t = now(), c = 1h % 7",  # constants
        "T | summarize r = sum(a) / count(), m = max(a) - min(a), l = make_list_if(b, a > 1)",
        "T | summarize r = toscalar(T | count)",
        "T | top-nested 2 of b by sum(a)",
    ],
)
def test_aggregate_items_made_of_aggregates_keys_and_constants_bind(query: str) -> None:
    analyze(query, G)


def test_a_decimal_with_a_real_is_computed_in_real() -> None:
    """As the engine computes it (and the compiler does), where Kusto.Language says decimal."""
    text = "print a = decimal(1) * 2.5, b = 2.5 - decimal(1), c = decimal(2) * 3, d = dynamic(2) / decimal(1)"
    assert schema(text) == [("a", "real"), ("b", "real"), ("c", "decimal"), ("d", "real")]


def test_datetime_diff_in_weeks_is_a_real() -> None:
    """The real engine answers `datetime_diff('week', …)` as a real (5.0; docs-emulator
    datetime-diff-function-00), the other parts as a long; the compiler computes it so."""
    text = (
        "print w = datetime_diff('Week', now(), ago(30d)), d = datetime_diff('day', now(), ago(1d))"
    )
    assert schema(text) == [("w", "real"), ("d", "long")]
