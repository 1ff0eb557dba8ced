"""Parse methods for the graph operators: make-graph, graph-match, graph-shortest-paths,
graph-to-table, graph-mark-components."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.kql import syntax as s
from bzrk.kql.diagnostics import unexpected
from bzrk.kql.tokens import Kind

if TYPE_CHECKING:
    from bzrk.kql.parser import Parser


def _accept_ops(p: Parser, *ops: str) -> bool:
    """Accept a sequence of adjacent operator tokens (`-`, `-`, `>` for `-->`)."""
    for k, op in enumerate(ops):
        t = p.peek(k) if k else p.tok
        if t.kind != Kind.OP or t.text != op:
            return False
    for _ in ops:
        p.advance()
    return True


def _graph_params(p: Parser) -> tuple[s.OperatorParam, ...]:
    params: list[s.OperatorParam] = []
    while p.tok.kind == Kind.IDENT and p.peek().kind == Kind.OP and p.peek().text == "=":
        pstart = p.tok.start
        name = p.advance().text.lower()
        p.advance()
        params.append(s.OperatorParam(p.span_from(pstart), name, p.parse_param_value()))
        p.accept_op(",")
    return tuple(params)


def parse_make_graph(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    params = list(_graph_params(p))
    source = p.parse_name()
    if not _accept_ops(p, "-", "-", ">"):
        raise unexpected(p.tok.text, "'-->'").at(p.tok.span)
    target = p.parse_name()
    tables: list[s.GraphNodeTable] = []
    if p.at_word("with") and not p.peek().text.startswith("with_"):
        p.advance()
        while True:
            tstart = p.tok.start
            table = p.parse_postfix()
            p.expect_word("on")
            key = p.parse_name()
            tables.append(s.GraphNodeTable(p.span_from(tstart), table, key))
            if not p.accept_op(","):
                break
    params.extend(_graph_params(p))
    partitioned_by = None
    partition_query = None
    if p.at_word("partitioned") and p.peek().text == "-" and p.peek(2).text == "by":
        p.advance()
        p.advance()
        p.advance()
        partitioned_by = p.parse_name()
        partition_query = p.parse_sub_pipeline()
    return s.MakeGraph(
        p.span_from(start),
        tuple(params),
        source,
        target,
        tuple(tables),
        partitioned_by,
        partition_query,
    )


def _parse_graph_element(p: Parser) -> s.GraphPatternElement | None:
    start = p.tok.start
    if p.at_op("("):
        p.advance()
        name = p.parse_name() if not p.at_op(")") else None
        p.expect_op(")")
        return s.GraphPatternElement(p.span_from(start), name, False, "", None, None)
    direction = None
    if _accept_ops(p, "<", "-"):
        direction = "<-"
    elif _accept_ops(p, "-"):
        direction = "--"
    else:
        return None
    name = None
    lo = hi = None
    if p.accept_op("["):
        if not p.at_op("*") and not p.at_op("]"):
            name = p.parse_name()
        if p.accept_op("*"):
            lo = int(p.advance().text) if p.tok.kind == Kind.INT else 1
            hi = lo
            if p.accept_op(".."):
                hi = int(p.advance().text) if p.tok.kind == Kind.INT else lo
        p.expect_op("]")
    if direction == "--":
        if _accept_ops(p, "-", ">"):
            direction = "->"
        else:
            p.expect_op("-")
    else:
        p.expect_op("-")
    if direction == "--" and _accept_ops(p, ">"):
        direction = "->"
    return s.GraphPatternElement(p.span_from(start), name, True, direction, lo, hi)


def parse_graph_match(p: Parser) -> s.QueryOperator:
    t = p.advance()
    params = _graph_params(p)
    patterns: list[tuple[s.GraphPatternElement, ...]] = []
    while True:
        elements: list[s.GraphPatternElement] = []
        while True:
            el = _parse_graph_element(p)
            if el is None:
                break
            elements.append(el)
        if not elements:
            raise unexpected(p.tok.text, "a graph pattern").at(p.tok.span)
        patterns.append(tuple(elements))
        if not p.accept_op(","):
            break
    where = p.parse_expr() if p.accept_word("where") else None
    project: tuple[s.NamedExpr, ...] = ()
    if p.accept_word("project"):
        project = p.parse_named_list()
    return s.GraphMatch(
        p.span_from(t.start),
        params,
        tuple(patterns),
        where,
        project,
        t.text == "graph-shortest-paths",
    )


def parse_graph_to_table(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    what = p.expect_word("nodes", "edges").text
    name = p.parse_name() if p.accept_word("as") else None
    params = _graph_params(p)
    if p.accept_op(","):  # `nodes as N, edges as E`: the second table is not modelled
        p.skip_balanced()
    return s.GraphToTable(p.span_from(start), what, name, params)


def parse_graph_mark_components(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    return s.GraphMarkComponents(p.span_from(start), _graph_params(p))
