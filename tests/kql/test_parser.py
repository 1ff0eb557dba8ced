"""Parser: shapes, spans and located errors."""

from __future__ import annotations

import pytest

from bzrk.kql import KqlError, parse
from bzrk.kql import syntax as s
from bzrk.kql.tokens import Kind, tokenize


def _pipeline(text: str) -> s.Pipeline:
    stmt = parse(text).statements[-1]
    assert isinstance(stmt, s.ExprStatement)
    assert isinstance(stmt.expr, s.Pipeline)
    return stmt.expr


def test_tokens_keep_character_spans() -> None:
    toks = tokenize("T | project-away x, y  // c\n| where a !contains_cs 'b'")
    assert [(t.kind, t.text) for t in toks[:4]] == [
        (Kind.IDENT, "T"),
        (Kind.OP, "|"),
        (Kind.IDENT, "project-away"),
        (Kind.IDENT, "x"),
    ]
    bang = next(t for t in toks if t.kind == Kind.BANG_WORD)
    assert (bang.text, bang.start, bang.end) == ("!contains_cs", 38, 50)


def test_where_spans_and_precedence() -> None:
    text = "T | where a > 1 and b == 2 or c"
    p = _pipeline(text)
    where = p.operators[0]
    assert isinstance(where, s.Where)
    assert text[where.span.start : where.span.end] == "where a > 1 and b == 2 or c"
    pred = where.predicate
    assert isinstance(pred, s.Binary) and pred.op == "or"
    assert isinstance(pred.left, s.Binary) and pred.left.op == "and"
    assert text[pred.left.span.start : pred.left.span.end] == "a > 1 and b == 2"


@pytest.mark.parametrize(
    ("literal", "type_", "value"),
    [
        ("1", "long", 1),
        ("1.5", "real", 1.5),
        ("0x10", "long", 16),
        ("1d", "timespan", 864_000_000_000),
        ("1.5h", "timespan", 54_000_000_000),
        ("10ms", "timespan", 100_000),
        ("100tick", "timespan", 100),
        ("time(00:01:00)", "timespan", 600_000_000),
        ("datetime(1970-01-02)", "datetime", 864_000_000_000),
        ("datetime(2015-12-31 23:59:59.9)", "datetime", 14_516_063_999_000_000),
        ("datetime(null)", "datetime", None),
        ("int(null)", "int", None),
        ("real(nan)", "real", float("nan")),
        ("bool(true)", "bool", True),
        ('@"c:\\x"', "string", "c:\\x"),
        ("'a\\tb'", "string", "a\tb"),
        ('h"secret"', "string", "secret"),
        ("```multi\nline```", "string", "multi\nline"),
        (
            "guid(74be27de-1e4e-49d9-b579-fe0b331d3642)",
            "guid",
            "74be27de-1e4e-49d9-b579-fe0b331d3642",
        ),
        ('dynamic({"a": [1, 2.5, "x", null, true]})', "dynamic", {"a": [1, 2.5, "x", None, True]}),
        ("-5", "long", -5),
    ],
)
def test_literals(literal: str, type_: str, value: object) -> None:
    p = _pipeline(f"print {literal}")
    assert isinstance(p.source, s.Print)
    lit = p.source.items[0].expr
    assert isinstance(lit, s.Literal)
    assert lit.type == type_
    if isinstance(value, float) and value != value:
        assert lit.value != lit.value
    else:
        assert lit.value == value


def test_statements_lambdas_and_operators() -> None:
    q = parse(
        "let n = 5; let f = (x: long, y: string = 'd') { x + 1 };\n"
        "declare query_parameters(p: string = 'v');\n"
        "T | summarize hint.budget=100 c = count() by bin(ts, 1h) | top n by c desc nulls last"
    )
    kinds = [type(st).__name__ for st in q.statements]
    assert kinds == ["LetStatement", "LetStatement", "DeclareParameters", "ExprStatement"]
    lam = q.statements[1].value  # type: ignore[attr-defined]
    assert isinstance(lam, s.Lambda) and [p.name for p in lam.params] == ["x", "y"]
    pipe = q.statements[3].expr  # type: ignore[attr-defined]
    summ, top = pipe.operators
    assert isinstance(summ, s.Summarize) and summ.params[0].name == "hint.budget"
    assert summ.aggregates[0].names == ("c",)
    assert isinstance(top, s.Top) and top.key.descending and top.key.nulls_first is False


def test_join_union_mv_expand_parse_make_series() -> None:
    p = _pipeline(
        "T | join kind=leftouter (U | where a > 0) on $left.k == $right.k2, k3"
        " | union withsource=Src V, (W)"
        " | mv-expand with_itemindex=i arr to typeof(long) limit 5"
        " | parse kind=regex msg with 'a' x:long '(.*)' *"
        " | make-series avg(v) default=0 on ts from datetime(2020-01-01) to now() step 1h by g"
        " | render timechart with (title='t')"
    )
    join, union, mv, prs, ms, render = p.operators
    assert isinstance(join, s.Join) and join.params[0].name == "kind" and len(join.on) == 2
    assert isinstance(union, s.Union) and len(union.tables) == 2
    assert isinstance(mv, s.MvExpand) and mv.items[0].to_type == "long" and mv.limit is not None
    assert isinstance(prs, s.Parse) and [pp.column.name for pp in prs.parts if pp.column] == ["x"]
    assert isinstance(ms, s.MakeSeries) and ms.defaults[0] is not None and ms.by
    assert (
        isinstance(render, s.Render)
        and render.chart == "timechart"
        and render.properties[0].name == "title"
    )


def test_berserk_operators_parse() -> None:
    p = _pipeline(
        "default | annotate attributes.status:long, tags:[string]"
        " | trace-find { span_name == 'a' } >> { status_code == 'ERROR' } :: { body has 'x' }"
    )
    ann, tf = p.operators
    assert isinstance(ann, s.Annotate) and [i.type for i in ann.items] == ["long", "[string]"]
    assert isinstance(tf, s.TraceFind)
    assert tf.pattern.relation == ">>" and tf.pattern.right is not None
    assert tf.pattern.right.relation == "::"  # `::` binds tighter than structural relations


@pytest.mark.parametrize(
    ("text", "code", "line", "column", "snippet"),
    [
        ("T | where", "ParseError", 1, 10, ""),
        ("T\n| where x >", "ParseError", 2, 12, ""),
        ("print 'unterminated", "ParseError", 1, 7, "'unterminated"),
        ("T | frobnicate x", "ParseError", 1, 5, "frobnicate"),
        ("print datetime(2020-13-01)", "ParseError", 1, 7, "datetime(2020-13-01)"),
        ("print a ^ b", "ParseError", 1, 9, "^"),
        ("T | where x between 1", "ParseError", 1, 21, "1"),
        ("T | where x between [1 .. 2]", "ParseError", 1, 24, ".."),
    ],
)
def test_errors_are_located(text: str, code: str, line: int, column: int, snippet: str) -> None:
    with pytest.raises(KqlError) as info:
        parse(text)
    err = info.value
    assert err.code == code
    assert err.location is not None
    assert (err.location.start_line, err.location.start_column) == (line, column)
    assert err.snippet == snippet


def test_location_counts_bytes_of_utf8() -> None:
    with pytest.raises(KqlError) as info:
        parse("print 'é' ^")
    loc = info.value.location
    assert loc is not None
    assert (loc.start_column, loc.start_byte) == (11, 11)  # 'é' is 2 bytes, 1 column


def test_every_statement_error_is_reported() -> None:
    with pytest.raises(KqlError) as info:
        parse("let a = ; let b = 1 +; print a | where")
    errs = info.value.errors
    assert [e.location.start_column for e in errs if e.location] == [9, 22, 39]


def test_a_bare_time_of_day_is_on_the_current_utc_day() -> None:
    # Kusto reads datetime(8:05) as today at 08:05 (the docs' rolling-average example)
    from datetime import UTC, datetime, timedelta

    from bzrk.kql.literals import parse_datetime

    ticks = parse_datetime("8:05")
    assert ticks is not None
    read = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ticks // 10)
    now = datetime.now(UTC)
    assert (read.hour, read.minute) == (8, 5)
    assert read.date() in (now.date(), (now - timedelta(minutes=1)).date())


@pytest.mark.parametrize(
    "text",
    ["08-Nov-14 15:05:02 GMT", "Saturday, 08-Nov-14 15:05:02 GMT", "Sat, 8 Nov 14 15:05:02 GMT"],
)
def test_rfc_850_and_822_datetime_literals_with_a_two_digit_year(text: str) -> None:
    from datetime import UTC, datetime

    from bzrk.kql.literals import parse_datetime

    expected = (
        int(
            (
                datetime(2014, 11, 8, 15, 5, 2, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
            ).total_seconds()
        )
        * 10**7
    )
    assert parse_datetime(text) == expected


def test_a_column_named_range_is_no_range_source() -> None:
    # the aggregation tutorial's sliding window: `mv-expand range to typeof(long)`
    from bzrk.kql import parse

    query = parse("print range = dynamic([1, 2]) | mv-expand range to typeof(long)")
    assert type(query.statements[-1].expr.operators[-1]).__name__ == "MvExpand"
    assert parse("range x from 1 to 3 step 1") is not None
