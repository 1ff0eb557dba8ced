"""Parse methods for KQL tabular operators, one `_parse_<operator>` per keyword.

Registered in `PIPE_OPERATORS` (after `|`) and `SOURCE_PARSERS` (operators that may start a
pipeline); `parser.Parser` dispatches through those tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bzrk.kql import syntax as s
from bzrk.kql.diagnostics import unexpected
from bzrk.kql.parser_berserk import (
    parse_annotate,
    parse_fieldstats,
    parse_otel_log_stats,
    parse_trace_find,
)
from bzrk.kql.parser_graph import (
    parse_graph_mark_components,
    parse_graph_match,
    parse_graph_to_table,
    parse_make_graph,
)
from bzrk.kql.tokens import Kind

if TYPE_CHECKING:
    from bzrk.kql.parser import Parser


def _parse_where(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    predicate = p.parse_expr()
    return s.Where(p.span_from(start), predicate)


def _parse_project(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    items = p.parse_named_list() if not p.at_end_of_operator() else ()
    return s.Project(p.span_from(start), items)


def _parse_extend(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    items = p.parse_named_list()
    return s.Extend(p.span_from(start), items)


def _parse_project_away(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    return s.ProjectAway(p.span_from(start), p.parse_pattern_list())


def _parse_project_keep(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    return s.ProjectKeep(p.span_from(start), p.parse_pattern_list())


def _parse_project_rename(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    pairs: list[tuple[str, str]] = []
    while True:
        new = p.parse_name()
        p.expect_op("=")
        old = p.parse_name()
        pairs.append((new, old))
        if not p.accept_op(","):
            break
    return s.ProjectRename(p.span_from(start), tuple(pairs))


def _parse_project_reorder(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    items: list[tuple[str, str]] = []
    while True:
        pattern = p.parse_pattern()
        direction = ""
        if p.at_word("asc", "desc", "granny-asc", "granny-desc"):
            direction = p.advance().text
        elif p.at_word("granny") and p.peek().text == "-":
            p.advance()
            p.advance()
            direction = "granny-" + p.expect_word("asc", "desc").text
        items.append((pattern, direction))
        if not p.accept_op(","):
            break
    return s.ProjectReorder(p.span_from(start), tuple(items))


def _parse_summarize(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("summarize")
    aggregates: tuple[s.NamedExpr, ...] = ()
    if not p.at_word("by") and not p.at_end_of_operator():
        aggregates = p.parse_named_list()
    by: tuple[s.NamedExpr, ...] = ()
    if p.accept_word("by"):
        by = p.parse_named_list()
    return s.Summarize(p.span_from(start), params, aggregates, by)


def _parse_count(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    name = None
    if p.accept_word("as"):
        name = p.parse_name()
    return s.Count(p.span_from(start), name)


def _parse_take(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    return s.Take(p.span_from(start), p.parse_expr())


def _parse_tail(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    return s.Tail(p.span_from(start), p.parse_expr())


def _parse_top(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    count = p.parse_expr()
    p.expect_word("by")
    key = p.parse_order_key()
    return s.Top(p.span_from(start), count, key)


def _parse_sort(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    p.parse_params("sort")
    p.expect_word("by")
    keys = [p.parse_order_key()]
    while p.accept_op(","):
        keys.append(p.parse_order_key())
    return s.Sort(p.span_from(start), tuple(keys))


def _parse_distinct(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    p.parse_params("distinct")
    items: list[s.Expr] = []
    if p.at_op("*"):
        items.append(s.Star(p.advance().span))
    else:
        items.append(p.parse_expr())
        while p.accept_op(","):
            items.append(p.parse_expr())
    return s.Distinct(p.span_from(start), tuple(items))


def _parse_join_right(p: Parser) -> s.Expr:
    if p.at_op("("):
        return p.parse_paren()
    return p.parse_postfix()


def _parse_on_list(p: Parser) -> tuple[s.Expr, ...]:
    items = [p.parse_expr()]
    while p.accept_op(","):
        items.append(p.parse_expr())
    return tuple(items)


def _parse_join(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("join")
    right = _parse_join_right(p)
    on: tuple[s.Expr, ...] = ()
    if p.accept_word("on"):
        on = _parse_on_list(p)
    return s.Join(p.span_from(start), params, right, on, None)


def _parse_lookup(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("lookup")
    right = _parse_join_right(p)
    p.expect_word("on")
    return s.Lookup(p.span_from(start), params, right, _parse_on_list(p))


def _parse_union(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("union")
    tables: list[s.Expr] = []
    while True:
        tstart = p.tok.start
        if p.at_op("("):
            tables.append(p.parse_paren())
        elif p.at_name():
            name = p.parse_pattern()
            expr: s.Expr = s.NameRef(p.span_from(tstart), name)
            while p.at_op(".") or (p.at_op("(") and "*" not in name):
                # database("x").T, cluster(...).database(...).T
                p.pos -= 1
                p.pos = _rewind_to(p, tstart)
                expr = p.parse_postfix()
                break
            tables.append(expr)
        else:
            raise unexpected(p.tok.text, "a table").at(p.tok.span)
        if not p.accept_op(","):
            break
    return s.Union(p.span_from(start), params, tuple(tables))


def _rewind_to(p: Parser, start: int) -> int:
    i = p.pos
    while i > 0 and p.tokens[i].start > start:
        i -= 1
    return i


def _parse_mv_items(p: Parser) -> tuple[s.MvExpandItem, ...]:
    items: list[s.MvExpandItem] = []
    while True:
        istart = p.tok.start
        item = p.parse_named_expr()
        to_type = None
        if p.at_word("to") and p.peek().text == "typeof":
            p.advance()
            p.advance()
            p.expect_op("(")
            to_type = p.parse_type_name()
            p.expect_op(")")
        items.append(s.MvExpandItem(p.span_from(istart), item, to_type))
        if not p.accept_op(","):
            break
    return tuple(items)


def _parse_mv_expand(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("mv-expand")
    items = _parse_mv_items(p)
    limit = None
    if p.accept_word("limit"):
        limit = p.parse_expr()
    return s.MvExpand(p.span_from(start), params, items, limit)


def _parse_mv_apply(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("mv-apply")
    items = _parse_mv_items(p)
    limit = None
    if p.accept_word("limit"):
        limit = p.parse_expr()
    more = p.parse_params("mv-apply")
    p.expect_word("on")
    subquery = p.parse_sub_pipeline()
    return s.MvApply(p.span_from(start), params + more, items, limit, None, subquery)


def _parse_parse(p: Parser, where_only: bool = False) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("parse")
    source = p.parse_expr()
    p.expect_word("with")
    parts: list[s.ParsePart] = []
    while not p.at_end_of_operator():
        t = p.tok
        if t.kind == Kind.STRING:
            lit = p.parse_primary()
            assert isinstance(lit, s.Literal)
            parts.append(s.ParsePart(lit.span, str(lit.value), None))
        elif p.at_op("*"):
            parts.append(s.ParsePart(p.advance().span, None, None))
        elif p.at_name():
            cstart = p.tok.start
            name = p.parse_name()
            ctype = "string"
            if p.accept_op(":"):
                ctype = p.parse_type_name()
            decl = s.ColumnDecl(p.span_from(cstart), name, ctype)
            parts.append(s.ParsePart(decl.span, None, decl))
        else:
            raise unexpected(t.text, "a parse pattern element").at(t.span)
    return s.Parse(p.span_from(start), params, source, tuple(parts), where_only)


def _parse_parse_where(p: Parser) -> s.QueryOperator:
    return _parse_parse(p, where_only=True)


def _parse_parse_kv(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    source = p.parse_expr()
    p.expect_word("as")
    p.expect_op("(")
    cols: list[s.ColumnDecl] = []
    while not p.at_op(")"):
        cols.append(p.parse_column_decl())
        if not p.accept_op(","):
            break
    p.expect_op(")")
    with_params: list[s.OperatorParam] = []
    if p.accept_word("with"):
        p.expect_op("(")
        while not p.at_op(")"):
            pstart = p.tok.start
            name = p.expect_ident("a parameter name").text
            p.expect_op("=")
            with_params.append(s.OperatorParam(p.span_from(pstart), name, p.parse_unary()))
            if not p.accept_op(","):
                break
        p.expect_op(")")
    return s.ParseKv(p.span_from(start), source, tuple(cols), tuple(with_params))


def _parse_make_series(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("make-series")
    aggs: list[s.NamedExpr] = []
    defaults: list[s.Expr | None] = []
    while True:
        aggs.append(p.parse_named_expr())
        default = None
        if p.at_word("default") and p.peek().text == "=":
            p.advance()
            p.advance()
            default = p.parse_unary()
        defaults.append(default)
        if not p.accept_op(","):
            break
    p.expect_word("on")
    on = p.parse_expr(4)  # stop before `in range(...)`: `in` would read as the list operator
    start_e = end_e = None
    in_range = False
    if p.accept_word("in"):
        p.expect_word("range")
        p.expect_op("(")
        start_e = p.parse_expr()
        p.expect_op(",")
        end_e = p.parse_expr()
        p.expect_op(",")
        step = p.parse_expr()
        p.expect_op(")")
        in_range = True
    else:
        if p.accept_word("from"):
            start_e = p.parse_expr()
        if p.accept_word("to"):
            end_e = p.parse_expr()
        p.expect_word("step")
        step = p.parse_expr()
    by: tuple[s.NamedExpr, ...] = ()
    if p.accept_word("by"):
        by = p.parse_named_list()
    return s.MakeSeries(
        p.span_from(start),
        params,
        tuple(aggs),
        tuple(defaults),
        on,
        start_e,
        end_e,
        step,
        in_range,
        by,
    )


def _parse_render(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    chart = p.expect_ident("a visualization").text
    props: list[s.OperatorParam] = []
    if p.accept_word("with"):
        p.expect_op("(")
        while not p.at_op(")"):
            pstart = p.tok.start
            name = p.expect_ident("a property").text
            p.expect_op("=")
            value = _parse_render_value(p)
            props.append(s.OperatorParam(p.span_from(pstart), name, value))
            if not p.accept_op(","):
                break
        p.expect_op(")")
    while p.tok.kind == Kind.IDENT and p.peek().text == "=":  # legacy `render x kind=stacked`
        pstart = p.tok.start
        name = p.advance().text
        p.advance()
        props.append(s.OperatorParam(p.span_from(pstart), name, _parse_render_value(p)))
    return s.Render(p.span_from(start), chart, tuple(props))


def _parse_render_value(p: Parser) -> s.Expr:
    if p.at_op("("):
        return p.parse_paren()
    return p.parse_param_value()


def _parse_as(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("as")
    return s.As(p.span_from(start), params, p.parse_name())


def _parse_serialize(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    items = p.parse_named_list() if not p.at_end_of_operator() else ()
    return s.Serialize(p.span_from(start), items)


def _parse_getschema(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    return s.GetSchema(p.span_from(start))


def _parse_evaluate(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("evaluate")
    cstart = p.tok.start
    name = p.expect_ident("a plugin name").text
    args = p.parse_call_args()
    call = s.Call(p.span_from(cstart), name, args)
    schema: list[s.ColumnDecl] = []
    if p.accept_op(":"):
        p.expect_op("(")
        while not p.at_op(")"):
            if p.at_op("*"):
                star = p.advance()
                schema.append(s.ColumnDecl(star.span, "*", ""))
            else:
                schema.append(p.parse_column_decl())
            if not p.accept_op(","):
                break
        p.expect_op(")")
    return s.Evaluate(p.span_from(start), params, call, tuple(schema))


def _parse_sample(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    return s.Sample(p.span_from(start), p.parse_expr())


def _parse_sample_distinct(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    count = p.parse_expr()
    p.expect_word("of")
    return s.SampleDistinct(p.span_from(start), count, p.parse_expr())


def _parse_table_list(p: Parser) -> tuple[s.Expr, ...]:
    p.expect_op("(")
    tables: list[s.Expr] = []
    while not p.at_op(")"):
        tstart = p.tok.start
        if p.at_name() and p.peek(p.at_name()).text not in (".", "("):
            tables.append(s.NameRef(p.span_from(tstart), p.parse_pattern()))
        else:
            tables.append(p.parse_postfix())
        if not p.accept_op(","):
            break
    p.expect_op(")")
    return tuple(tables)


def _parse_search(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("search")
    tables: tuple[s.Expr, ...] = ()
    if p.at_word("in") and p.peek().text == "(":
        p.advance()
        tables = _parse_table_list(p)
    p.in_search = True
    try:
        predicate = p.parse_expr()
    finally:
        p.in_search = False
    return s.Search(p.span_from(start), params, tables, predicate)


def _parse_find(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("find")
    tables: tuple[s.Expr, ...] = ()
    if p.accept_word("in"):
        tables = _parse_table_list(p)
        p.expect_word("where")
    else:
        p.accept_word("where")  # `find Predicate` is the short form of `find where Predicate`
    predicate = p.parse_expr()
    project = None
    smart = False
    if p.accept_word("project-smart"):
        smart = True
    elif p.accept_word("project"):
        project = _parse_on_list(p)
    return s.Find(p.span_from(start), params, tables, predicate, project, smart)


def _parse_invoke(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    call = p.parse_postfix()
    if not isinstance(call, s.Call):
        raise unexpected(p.text[call.span.start : call.span.end], "a function call").at(call.span)
    return s.Invoke(p.span_from(start), call)


def _parse_consume(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    return s.Consume(p.span_from(start), p.parse_params("consume"))


def _parse_facet(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    p.expect_word("by")
    cols = p.parse_pattern_list()
    sub = None
    if p.accept_word("with"):
        sub = p.parse_sub_pipeline() if p.at_op("(") else p.parse_operator_chain(p.tok.start)
    return s.Facet(p.span_from(start), cols, sub)


def _parse_fork(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    branches: list[s.Expr] = []
    names: list[str | None] = []
    while p.at_op("(") or (p.at_name() and p.peek(p.at_name()).text == "="):
        name = None
        if not p.at_op("("):
            name = p.parse_name()
            p.expect_op("=")
        branches.append(p.parse_sub_pipeline())
        names.append(name)
    if not branches:
        raise unexpected(p.tok.text, "'(' starting a fork branch").at(p.tok.span)
    return s.Fork(p.span_from(start), tuple(branches), tuple(names))


def _parse_partition(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("partition")
    p.expect_word("by")
    bstart = p.tok.start
    by: s.Expr = s.NameRef(p.span_from(bstart), p.parse_name())
    more = p.parse_params("partition")
    sub = p.parse_sub_pipeline()
    return s.Partition(p.span_from(start), params + more, by, sub)


def _parse_scan(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = p.parse_params("scan")
    declares: tuple[s.Param, ...] = ()
    if p.accept_word("declare"):
        p.expect_op("(")
        declares = tuple(p.parse_params_decl(")"))
        p.expect_op(")")
    p.expect_word("with")
    p.expect_op("(")
    steps: list[s.ScanStep] = []
    while p.at_word("step"):
        sstart = p.advance().start
        name = p.parse_name()
        optional = bool(p.accept_word("optional"))
        output = "all"
        if p.at_word("output") and p.peek().text == "=":
            p.advance()
            p.advance()
            output = p.tok.text.lower()
            p.expect_word("all", "last", "none")
        p.expect_op(":")
        cond = p.parse_expr()
        assigns: list[s.NamedExpr] = []
        if p.accept_op("=>"):
            while not p.at_op(";"):
                astart = p.tok.start
                target = p.parse_name()
                p.expect_op("=")
                assigns.append(s.NamedExpr(p.span_from(astart), (target,), p.parse_expr()))
                if not p.accept_op(","):
                    break
        p.expect_op(";")
        steps.append(s.ScanStep(p.span_from(sstart), name, optional, cond, tuple(assigns), output))
    p.expect_op(")")
    return s.Scan(p.span_from(start), params, declares, tuple(steps))


def _parse_reduce(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    p.parse_params("reduce")
    params: list[s.OperatorParam] = []
    if p.at_word("kind"):
        kstart = p.advance().start
        p.expect_op("=")
        kind = p.advance()
        value = s.NameRef(kind.span, kind.text)
        params.append(s.OperatorParam(p.span_from(kstart), "kind", value))
    p.expect_word("by")
    by = p.parse_expr()
    if p.accept_word("with"):
        while p.tok.kind == Kind.IDENT and p.peek().text == "=":
            pstart = p.tok.start
            name = p.advance().text
            p.advance()
            params.append(s.OperatorParam(p.span_from(pstart), name, p.parse_unary()))
            if not p.accept_op(","):
                break
    return s.Reduce(p.span_from(start), by, tuple(params))


def _parse_top_nested(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    levels: list[s.TopNestedLevel] = []
    while True:
        lstart = p.tok.start
        count = None
        if not p.at_word("of"):
            count = p.parse_expr()
        p.expect_word("of")
        of = p.parse_named_expr()
        others = None
        if p.accept_word("with"):
            p.expect_word("others")
            p.expect_op("=")
            others = p.parse_expr()
        p.expect_word("by")
        by = p.parse_named_expr()
        descending = True
        if p.accept_word("asc"):
            descending = False
        else:
            p.accept_word("desc")
        levels.append(s.TopNestedLevel(p.span_from(lstart), count, of, others, by, descending))
        if not p.accept_op(","):
            break
        p.accept_word("top-nested")
    return s.TopNested(p.span_from(start), tuple(levels))


def _parse_top_hitters(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    count = p.parse_expr()
    p.expect_word("of")
    of = p.parse_expr()
    by = p.parse_expr() if p.accept_word("by") else None
    return s.TopHitters(p.span_from(start), count, of, by)


def _parse_print(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    items = p.parse_named_list() if not p.at_end_of_operator() else ()
    return s.Print(p.span_from(start), items)


def _parse_range(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    name = p.parse_name()
    p.expect_word("from")
    lo = p.parse_expr()
    p.expect_word("to")
    hi = p.parse_expr()
    p.expect_word("step")
    step = p.parse_expr()
    return s.Range(p.span_from(start), name, lo, hi, step)


def _parse_schema_decl(p: Parser) -> tuple[s.ColumnDecl, ...]:
    p.expect_op("(")
    cols: list[s.ColumnDecl] = []
    while not p.at_op(")"):
        cols.append(p.parse_column_decl())
        if not p.accept_op(","):
            break
    p.expect_op(")")
    return tuple(cols)


def _parse_datatable(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    p.parse_params("datatable")
    cols = _parse_schema_decl(p)
    p.expect_op("[")
    values: list[s.Expr] = []
    while not p.at_op("]"):
        values.append(p.parse_expr())
        if not p.accept_op(","):
            break
    p.expect_op("]")
    return s.DataTable(p.span_from(start), cols, tuple(values))


def _parse_externaldata(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    cols = _parse_schema_decl(p)
    p.expect_op("[")
    uris: list[s.Expr] = []
    while not p.at_op("]"):
        uris.append(p.parse_expr())
        if not p.accept_op(","):
            break
    p.expect_op("]")
    if p.accept_word("with"):
        p.expect_op("(")
        p.skip_balanced()
        p.expect_op(")")
    return s.ExternalData(p.span_from(start), cols, tuple(uris))


def _parse_inline_external_table(p: Parser) -> s.QueryOperator:
    """`inline_external_table(schema) kind=storage dataformat=parquet (uris) [with (...)]`."""
    start = p.advance().start
    cols = _parse_schema_decl(p)
    while p.tok.kind == Kind.IDENT and p.peek().text == "=":
        p.advance()
        p.advance()
        p.parse_param_value()
    if p.at_word("partition"):  # `partition by (...)` clauses: not modelled
        p.advance()
        p.expect_word("by")
        p.expect_op("(")
        p.skip_balanced()
        p.expect_op(")")
    p.expect_op("(")
    uris: list[s.Expr] = []
    while not p.at_op(")"):
        uris.append(p.parse_expr())
        if not p.accept_op(","):
            break
    p.expect_op(")")
    if p.accept_word("with"):
        p.expect_op("(")
        p.skip_balanced()
        p.expect_op(")")
    return s.ExternalData(p.span_from(start), cols, tuple(uris))


def _parse_project_by_names(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    return s.ProjectByNames(p.span_from(start), _parse_on_list(p))


def _parse_generic(p: Parser) -> s.QueryOperator:
    t = p.advance()
    p.skip_balanced()
    span = p.span_from(t.start)
    return s.GenericOperator(span, t.text, p.text[span.start : span.end])


PIPE_OPERATORS: dict[str, Callable[[Parser], s.QueryOperator]] = {
    "where": _parse_where,
    "filter": _parse_where,
    "project": _parse_project,
    "extend": _parse_extend,
    "project-away": _parse_project_away,
    "project-keep": _parse_project_keep,
    "project-rename": _parse_project_rename,
    "project-reorder": _parse_project_reorder,
    "summarize": _parse_summarize,
    "count": _parse_count,
    "take": _parse_take,
    "limit": _parse_take,
    "tail": _parse_tail,
    "top": _parse_top,
    "top-nested": _parse_top_nested,
    "top-hitters": _parse_top_hitters,
    "sort": _parse_sort,
    "order": _parse_sort,
    "distinct": _parse_distinct,
    "join": _parse_join,
    "lookup": _parse_lookup,
    "union": _parse_union,
    "mv-expand": _parse_mv_expand,
    "mvexpand": _parse_mv_expand,
    "mv-apply": _parse_mv_apply,
    "mvapply": _parse_mv_apply,
    "parse": _parse_parse,
    "parse-where": _parse_parse_where,
    "parse-kv": _parse_parse_kv,
    "make-series": _parse_make_series,
    "render": _parse_render,
    "as": _parse_as,
    "serialize": _parse_serialize,
    "getschema": _parse_getschema,
    "evaluate": _parse_evaluate,
    "sample": _parse_sample,
    "sample-distinct": _parse_sample_distinct,
    "search": _parse_search,
    "find": _parse_find,
    "invoke": _parse_invoke,
    "consume": _parse_consume,
    "facet": _parse_facet,
    "fork": _parse_fork,
    "partition": _parse_partition,
    "scan": _parse_scan,
    "reduce": _parse_reduce,
    "make-graph": parse_make_graph,
    "graph-match": parse_graph_match,
    "graph-shortest-paths": parse_graph_match,
    "graph-to-table": parse_graph_to_table,
    "graph-mark-components": parse_graph_mark_components,
    "graph-merge": _parse_generic,
    "execute-and-cache": _parse_generic,
    "assert-schema": _parse_generic,
    "project-smart": _parse_generic,
    "project-by-names": _parse_project_by_names,
    "annotate": parse_annotate,
    "fieldstats": parse_fieldstats,
    "otel-log-stats": parse_otel_log_stats,
    "trace-find": parse_trace_find,
}

SOURCE_PARSERS: dict[str, Callable[[Parser], s.QueryOperator]] = {
    "print": _parse_print,
    "range": _parse_range,
    "datatable": _parse_datatable,
    "union": _parse_union,
    "search": _parse_search,
    "find": _parse_find,
    "evaluate": _parse_evaluate,
    "externaldata": _parse_externaldata,
    "external_data": _parse_externaldata,
    "inline_external_table": _parse_inline_external_table,
    "trace-find": parse_trace_find,
    "fieldstats": parse_fieldstats,
    "otel-log-stats": parse_otel_log_stats,
}
