"""Parse methods for Berserk's own operators: annotate, fieldstats, otel-log-stats, trace-find."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.kql import syntax as s
from bzrk.kql.diagnostics import unexpected
from bzrk.kql.facts import TYPE_ALIASES
from bzrk.kql.tokens import Kind

if TYPE_CHECKING:
    from bzrk.kql.parser import Parser


def parse_annotate(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    items: list[s.AnnotateItem] = []
    while True:
        istart = p.tok.start
        path = p.parse_postfix()
        p.expect_op(":")
        items.append(s.AnnotateItem(p.span_from(istart), path, _parse_annotation_type(p)))
        if not p.accept_op(","):
            break
    return s.Annotate(p.span_from(start), tuple(items))


def _parse_annotation_type(p: Parser) -> str:
    if p.accept_op("["):
        inner = _parse_annotation_type(p)
        p.expect_op("]")
        return f"[{inner}]"
    if p.accept_op("{"):
        fields: list[str] = []
        while not p.at_op("}"):
            name = p.parse_name()
            p.expect_op(":")
            fields.append(f"{name}:{_parse_annotation_type(p)}")
            if not p.accept_op(","):
                break
        p.expect_op("}")
        return "{" + ",".join(fields) + "}"
    t = p.expect_ident("a type name")
    canonical = TYPE_ALIASES.get(t.text.lower())
    if canonical is None:
        raise unexpected(t.text, "a type name").at(t.span)
    return canonical


def _parse_stats_columns(p: Parser) -> tuple[s.Expr, ...]:
    cols: list[s.Expr] = []
    while (
        not p.at_end_of_operator()
        and not p.at_word("with")
        and not (p.tok.kind == Kind.IDENT and p.peek().text == "=")
    ):
        cols.append(p.parse_postfix())
        if not p.accept_op(","):
            break
    return tuple(cols)


def _parse_kv_params(p: Parser) -> tuple[s.OperatorParam, ...]:
    params: list[s.OperatorParam] = []
    while p.tok.kind == Kind.IDENT and p.peek().kind == Kind.OP and p.peek().text == "=":
        pstart = p.tok.start
        name = p.advance().text.lower()
        p.advance()
        params.append(s.OperatorParam(p.span_from(pstart), name, p.parse_param_value()))
        p.accept_op(",")
    return tuple(params)


def parse_fieldstats(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    cols = _parse_stats_columns(p)
    params: tuple[s.OperatorParam, ...] = ()
    if p.accept_word("with"):
        params = _parse_kv_params(p)
    return s.FieldStats(p.span_from(start), cols, params)


def parse_otel_log_stats(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    cols = _parse_stats_columns(p)
    p.accept_word("with")
    return s.OtelLogStats(p.span_from(start), cols, _parse_kv_params(p))


TRACE_RELATIONS = {"::": 4, ">>": 3, ">": 3, "<<": 3, "<": 3, "~": 3, "and": 2, "or": 1}


def parse_trace_find(p: Parser) -> s.QueryOperator:
    start = p.advance().start
    pattern = _parse_trace_pattern(p, 1)
    params = _parse_kv_params(p)
    output: list[s.QueryOperator] = []
    while p.at_word("summarize", "where", "project"):
        from bzrk.kql.parser_operators import PIPE_OPERATORS  # circular: operators import us

        output.append(PIPE_OPERATORS[p.tok.text](p))
    return s.TraceFind(p.span_from(start), pattern, params, tuple(output))


def _parse_trace_pattern(p: Parser, min_prec: int) -> s.TracePattern:
    p.enter()
    start = p.tok.start
    if p.accept_op("("):
        left = _parse_trace_pattern(p, 1)
        p.expect_op(")")
    else:
        p.expect_op("{")
        predicate = None if p.at_op("}") else p.parse_pipe_expr()
        p.expect_op("}")
        left = s.TracePattern(p.span_from(start), predicate, None, None, None)
    while True:
        t = p.tok
        rel = t.text.lower() if t.kind in (Kind.OP, Kind.IDENT) else ""
        prec = TRACE_RELATIONS.get(rel)
        if prec is None or prec < min_prec:
            break
        p.advance()
        right = _parse_trace_pattern(p, prec + 1)
        left = s.TracePattern(p.span_from(start), None, rel, left, right)
    p.leave()
    return left
