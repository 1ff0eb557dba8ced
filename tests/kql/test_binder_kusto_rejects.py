"""Queries Kusto refuses at analysis are refused by the binder, with Kusto.Language's code.

Each refused query below was put to Kusto.Language (npm `@kusto/language-service-next`, through
`scripts/kql_oracle_diagnostics.js`), which answered the code given; each accepted one it
accepted, or ADX's own answer in the shared corpus shows that the engine runs it where
Kusto.Language does not (`make_timespan` with a real, `count(x)` of a non-bool).
"""

from __future__ import annotations

import pytest

from bzrk.kql import KqlError, analyze

# one row of each kind a query over OTel data meets: a datetime, a long, a string, a bag
T = "datatable(t:datetime, v:long, s:string, d:dynamic)[datetime(2020-01-01), 1, 'a', dynamic({})]"


@pytest.mark.parametrize(
    ("query", "kusto_code"),
    [
        # an element index is an int, a long or a string
        ("print x = dynamic([1,2])[1.5]", "KS141"),
        ("print x = dynamic([1,2])[1h]", "KS141"),
        # case is predicate/value pairs and one else; bag_pack is key/value pairs, keys strings
        ("print x = case(true, 1, false, 2)", "KS121"),
        ('print x = bag_pack("a", 1, "b")', "KS121"),
        ("print x = bag_pack(1, 1)", "KS107"),
        ("print a = 1 | extend x = bag_pack_columns(a, 1)", "KS109"),
        # row counts and limits are integers
        ("range x from 1 to 3 step 1 | take 1.5", "KS134"),
        ("range x from 1 to 3 step 1 | take '1'", "KS134"),
        ("range x from 1 to 3 step 1 | top 1.5 by x", "KS134"),
        ("range x from 1 to 3 step 1 | sample-distinct 1.5 of x", "KS134"),
        # an integer parameter takes no real (a dynamic value is left to the engine)
        ('print x = substring("abc", 1.5)', "KS134"),
        ('print x = substring("abc", todouble(1))', "KS134"),
        ("print x = array_slice(dynamic([1, 2]), 0, 1.5)", "KS134"),
        ("print x = hash(1, 1.5)", "KS134"),
        # range bounds are summable, and the step adds to them
        ("range x from 'a' to 'b' step 1", "KS138"),
        ("range x from 1h to 2h step 1", "KS106"),
        # datatable values fill whole rows
        ("datatable(a:long, b:long)[1, 2, 3]", "KS173"),
        # a repeatable parameter has a bound too: jaccard_index takes two sets
        ("print x = jaccard_index(dynamic([1]), dynamic([2]), dynamic([3]))", "KS119"),
        # a bool is not a number
        ("print x = sqrt(true)", "KS137"),
        ("print x = round(1.5, true)", "KS107"),
        # text operators take strings
        (f"{T} | where v has 'a'", "KS106"),
        (f"{T} | where v !contains 'a'", "KS106"),
        (f"{T} | where t matches regex 'a'", "KS106"),
        (f"{T} | where v =~ 'a'", "KS106"),
        (f"{T} | where s startswith 1", "KS106"),
        (f"{T} | where v has_any ('a', 'b')", "KS107"),
        # between: numbers with numbers, datetimes with a datetime and a datetime or timespan
        (f"{T} | where v between ('a' .. 'b')", "KS106"),
        (f"{T} | where t between (1 .. 2)", "KS106"),
        (f"{T} | where s !between (1 .. 2)", "KS106"),
        # join keys have one type
        (f"{T} | join kind=inner (datatable(v:string)['1']) on v", "KS227"),
        (f"{T} | lookup (datatable(v:real)[1.0]) on v", "KS227"),
        (f"{T} | join (datatable(w:string)['1']) on $left.v == $right.w", "KS242"),
        # expanding and element access need a dynamic value
        (f"{T} | mv-expand v", "KS141"),
        (f"{T} | mv-apply v on (take 1)", "KS141"),
        (f"{T} | extend x = s[0]", "KS147"),
        (f"{T} | extend x = v['a']", "KS147"),
        (f"{T} | extend x = v.a", "KS147"),
        (f"{T} | extend x = s.level", "KS147"),  # JSON text in a string: parse_json(s).level
        # a name declared twice
        (f"{T} | extend x = 1, x = 2", "KS171"),
        (f"{T} | summarize count() by x = v, x = s", "KS171"),
        (f"{T} | project-rename v = t", "KS171"),
        # render's visualization and the columns its properties name; reduce's text; union kind
        (f"{T} | render foo", "KS005"),
        (f"{T} | render timechart with (xcolumn=nope)", "KS142"),
        (f"{T} | reduce by v", "KS141"),
        (f"{T} | union kind=foo ({T})", "KS005"),
        (f"{T} | extend d = dynamic([1]) | mv-expand bagexpansion=foo d", "KS005"),
        (f"{T} | summarize hint.strategy=foo count() by v", "KS005"),
        (f"{T} | join hint.strategy=foo ({T}) on v", "KS005"),
        (f"{T} | distinct v, v", "KS171"),
        (f"{T} | summarize y = count(), y = sum(v)", "KS171"),
        (f"{T} | summarize v = count() by v", "KS171"),
        ("range x from 1 to 10 step 0", "KS140"),
        (f"{T} | lookup kind=foo ({T}) on v", "KS005"),
        # a literal dynamic array or bag is neither a number, a string nor the other shape
        ("print x = atan2(dynamic([1]), 1)", "KS107"),
        ("print x = round(dynamic({'a': 1}))", "KS107"),
        ("print x = base64_decode_tostring(dynamic(['a']))", "KS107"),
        ("print x = array_length(dynamic({}))", "KS107"),
        ("print x = bag_merge(dynamic([1]), dynamic({}))", "KS107"),
        ("print x = hash_md5(dynamic([1]))", "KS107"),  # Kusto's KS116: no dynamic here
        ("print x = min_of(dynamic([1]), 2)", "KS107"),  # KS206: orderable values
        # a string or array of strings; an integer or array of integers
        ("print x = geo_from_wkt(true)", "KS107"),
        ("print x = unicode_codepoints_to_string(1h)", "KS107"),
        # countof's kind is normal or regex
        ("print x = countof('abc', 'a', 'foo')", "KS140"),
        ("print x = countof('abc', 'a', 'Regex')", "KS140"),  # its kind's case matters
        # datetime parts are Kusto's words (in any case); datetime_part's week is week_of_year
        ("print x = datetime_part('week', now())", "KS140"),
        ("print x = datetime_add('fortnight', 1, now())", "KS140"),
        ("print x = datetime_diff('days', now(), now())", "KS140"),
        # a make-series axis: bounds of its kind, a step that is its interval
        (f"{T} | make-series c = count() on t from 1h to datetime(2020-01-02) step 1h", "KS141"),
        (f"{T} | make-series c = count() on t step 1", "KS178"),
        (f"{T} | make-series c = count() on v from 1 to 10 step 1h", "KS178"),
        (f"{T} | make-series c = count() on v from datetime(2020-01-01) to 9 step 1", "KS141"),
    ],
)
def test_kusto_rejects_and_so_does_the_binder(query: str, kusto_code: str) -> None:
    with pytest.raises(KqlError) as info:
        analyze(query)
    assert info.value.kusto_code == kusto_code
    assert info.value.location is not None


@pytest.mark.parametrize(
    "query",
    [
        # JSON inside dynamic(): no `+1`, no int(...) or decimal(...) elements
        "print x = dynamic(+1)",
        "print x = dynamic([int(1)])",
        "print x = dynamic([decimal(1)])",
    ],
)
def test_literals_kusto_cannot_read_inside_dynamic_are_parse_errors(query: str) -> None:
    with pytest.raises(KqlError) as info:
        analyze(query)
    assert info.value.code == "ParseError"
    assert info.value.location is not None


def test_graph_functions_exist_only_inside_graph_match() -> None:
    with pytest.raises(KqlError) as info:
        analyze("print x = labels(1)")
    assert info.value.code == "UnknownFunction"
    with pytest.raises(KqlError) as info:
        analyze("print x = any(1)")  # the aggregate, out of place
    assert info.value.code == "TypeMismatch"
    analyze(
        "let e = datatable(a:string, b:string)['x', 'y']; let n = datatable(id:string)['x', 'y'];"
        " e | make-graph a --> b with n on id"
        " | graph-match (p)-[r]->(q) where labels(p) has 'x' project q.id"
    )


@pytest.mark.parametrize(
    "query",
    [
        "print x = dynamic([1,2])[1], y = dynamic({'a': 1})['a']",
        "print x = case(true, 1, 2), y = bag_pack('a', 1)",
        "print a = 1 | extend x = bag_pack_columns(a)",
        "range x from 1 to 3 step 1 | take 1",
        "range x from datetime(2020-01-01) to 10 step 1",  # Kusto checks the step only then
        "range x from 1h to 2h step 10m",
        "print x = dynamic([long(1), real(1.5), datetime(2020-01-01), timespan(1h), bool(true)])",
        "print x = tolong(true), y = toreal(true), z = strcat(true)",
        # ADX runs these where Kusto.Language objects (docs-emulator make-timespan-function-00,
        # summarize-operator-05)
        "print x = make_timespan(1, 12, 30, 55.123)",
        "range x from 1 to 3 step 1 | summarize count(x)",
        f"{T} | where s has 'a' and s !contains 'b' and s =~ 'A' and d has 'x' and d.k =~ 'y'",
        f"{T} | where s has_any ('a', 1) and d has_all ('a') and s in~ ('a') and v in (1, 2)",
        f"{T} | where v between (1 .. 2.5) and t between (datetime(2020-01-01) .. 1d)",
        f"{T} | where d.n between (1 .. 2) and d.t between (ago(1h) .. now())",  # dynamic
        f"{T} | join kind=inner (datatable(v:int)[1]) on v",  # an int and a long key
        f"{T} | join (datatable(w:long, d:dynamic)[1, dynamic(1)]) on $left.v == $right.w, d",
        f"{T} | mv-expand d | mv-apply e = d on (take 1) | extend x = d[0], y = d['a'], z = d.a",
        f"{T} | extend v = 2, w = v | summarize count() by v, s | project-rename u = v",
        f"{T} | project-rename a = s, s = v",
        f"{T} | render timechart with (xcolumn=t, ycolumns=v, series=s, title='x')",
        f"{T} | render Sankey",
        f"{T} | extend x = parse_json(s).level, y = todynamic(s)[0]",
        f"{T} | reduce by s | union kind=inner ({T})",
        # a dynamic path feeds a typed function (the vendor's permissive mode); literals of
        # the shape asked for, and arrays in a variadic function's repeated place, bind
        f"{T} | extend x = atan2(d.a, 1), y = substring(d.p, 0, 2), z = round(d.n, 1)",
        f"{T} | extend h = hash_md5(d.a), m = min_of(d.n, 2), k = hash(s)",
        "print x = array_length(dynamic([1])), y = bag_keys(dynamic({'a': 1}))",
        "print x = array_sort_asc(dynamic([2, 1]), dynamic(['b', 'a']))",
        "print x = geo_from_wkt(dynamic(['POINT(1 2)'])), y = unicode_codepoints_to_string(65, 66)",
        "print x = countof('abc', 'a', 'regex'), y = countof('abc', 'a', 'normal')",
        "print x = datetime_part('Year', now()), y = datetime_part('dayOfYear', now())",
        "print x = datetime_add('Week', 1, now()), y = datetime_diff('DAY', now(), now())",
        f"{T} | make-series c = count() on t from datetime(2020-01-01) to now() step 1h by s",
        f"{T} | make-series c = count() on v from 0 to 10 step 2.5",  # the engine runs it
        f"{T} | extend u = 1h | make-series c = count() on u step 1",  # a step in ticks
        f"{T} | make-series c = count() on t in range(ago(1d), now(), 1h)",
    ],
)
def test_what_kusto_runs_still_binds(query: str) -> None:
    analyze(query)
