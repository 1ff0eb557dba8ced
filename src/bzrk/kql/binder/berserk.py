"""Schemas of Berserk's operators: annotate, fieldstats, otel-log-stats, trace-find."""

from __future__ import annotations

from collections.abc import Callable

from bzrk.kql import syntax as s
from bzrk.kql.binder.core import Binder, Ctx
from bzrk.kql.binder.operators import _summarize, bind_operator
from bzrk.kql.symbols import (
    DYNAMIC,
    LONG,
    REAL,
    STRING,
    Column,
    TableSchema,
)


def _annotate(b: Binder, op: s.Annotate, input: TableSchema) -> TableSchema:
    cols = list(input.columns)
    for item in op.items:
        b.scalar(item.path, Ctx(row=input))
        if isinstance(item.path, s.NameRef) and not item.type.startswith(("[", "{")):
            for i, c in enumerate(cols):
                if c.name == item.path.name:
                    cols[i] = Column(c.name, item.type)
                    break
            else:
                cols.append(Column(item.path.name, item.type))
    return TableSchema(tuple(cols), input.raw, input.opaque)


def _fieldstats(b: Binder, op: s.FieldStats, input: TableSchema) -> TableSchema:
    for c in op.columns:
        b.scalar(c, Ctx(row=input))
    return TableSchema(
        (
            Column("AttributePath", STRING),
            Column("Type", STRING),
            Column("Cardinality", LONG),
            Column("Frequency", REAL),
            Column("Hint", DYNAMIC),
        )
    )


def _otel_log_stats(b: Binder, op: s.OtelLogStats, input: TableSchema) -> TableSchema:
    for c in op.columns:
        b.scalar(c, Ctx(row=input))
    for p in op.params:
        if p.name == "severity":
            b.scalar(p.value, Ctx(row=input))
    return _fieldstats(b, s.FieldStats(op.span, (), ()), input)


def _trace_pattern(b: Binder, pattern: s.TracePattern, row: TableSchema) -> None:
    if pattern.predicate is not None:
        if isinstance(pattern.predicate, s.Pipeline):
            b.tabular(pattern.predicate, Ctx(row=row))
        else:
            b.scalar(pattern.predicate, Ctx(row=row))
    for side in (pattern.left, pattern.right):
        if side is not None:
            _trace_pattern(b, side, row)


def _trace_find(b: Binder, op: s.TraceFind, input: TableSchema) -> TableSchema:
    row = input if input.columns or input.raw else TableSchema((), raw=True)
    _trace_pattern(b, op.pattern, row)
    schema = TableSchema((Column("trace_id", STRING),))
    per_trace = False  # a `where` before any summarize filters the trace's rows
    for out in op.output:
        b.bound.inputs[out] = row
        if isinstance(out, s.Summarize):
            summarized = _summarize(b, out, row)
            schema = TableSchema(
                (
                    Column("trace_id", STRING),
                    *[c for c in summarized.columns if c.name != "trace_id"],
                )
            )
            per_trace = True
        elif isinstance(out, s.Where) and not per_trace:
            bind_operator(b, out, row)
        else:
            schema = bind_operator(b, out, schema)
            per_trace = True
        b.bound.schemas[out] = schema
    return schema


HANDLERS: dict[type, Callable[..., TableSchema]] = {
    s.Annotate: _annotate,
    s.FieldStats: _fieldstats,
    s.OtelLogStats: _otel_log_stats,
    s.TraceFind: _trace_find,
}
