"""Tabular sources written inline: `print`, `datatable` and `range`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.literals import literal
from bzrk.engine.compile.naming import unique_name
from bzrk.engine.compile.operators.project import multi_column
from bzrk.engine.compile.relation import (
    Relation,
)
from bzrk.engine.compile.typed import T, Typed, cast_to, from_ticks, lit, ticks
from bzrk.engine.types import clickhouse_type, normalize_kql_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext


def values_relation(
    ctx: CompileContext, out: list[tuple[str, str]], rows: list[list[Typed]]
) -> Relation:
    if not rows:
        query = S.Select(
            columns=[
                (S.Cast(lit(None), clickhouse_type(t)) if t != "string" else lit(""), n)
                for n, t in out
            ],
            limit=lit(0),
        )
        return ctx.new_cte(query, out)
    structure = ", ".join(f"{S.quote_identifier(n)} {clickhouse_type(t)}" for n, t in out)
    tuples = [
        T(
            "(" + ", ".join(f"{{{i}}}" for i in range(len(row))) + ")",
            *[v.sql for v in row],
        )
        for row in rows
    ]
    source = S.TableFunction("values", [lit(structure), *tuples])
    query = S.Select(columns=[(S.Col(n), n) for n, _ in out], from_=source)
    return ctx.new_cte(query, out, ordered=True)


def src_print(ctx: CompileContext, op: K.Print) -> Relation:
    scope = ctx.scope()
    columns, out = [], []
    used: set[str] = set()
    for i, item in enumerate(op.items):
        multi = multi_column(ExprCompiler(scope), item)
        if multi is not None:
            for name, value in multi:
                columns.append((value.sql, unique_name(name, used)))
                used.add(columns[-1][1])
                out.append((columns[-1][1], value.type))
            continue
        value = ExprCompiler(scope).compile(item.expr)
        name = item.names[0] if item.names else f"print_{i}"
        name = unique_name(name, used)
        used.add(name)
        columns.append((value.sql, name))
        out.append((name, value.type))
    return ctx.new_cte(S.Select(columns=columns), out)


def src_datatable(ctx: CompileContext, op: K.DataTable) -> Relation:
    out: list[tuple[str, str]] = [(c.name, normalize_kql_type(c.type)) for c in op.columns]
    width = len(out)
    if width == 0:
        raise unsupported(op, "datatable needs columns")
    if len(op.values) % width:
        raise unsupported(op, "datatable values do not fill whole rows", code="InvalidArgument")
    scope = ctx.scope()
    rows: list[list[Typed]] = []
    for r in range(0, len(op.values), width):
        row = []
        for (_name, kql_type), node in zip(out, op.values[r : r + width], strict=True):
            value = ExprCompiler(scope).compile(node)
            if value.type != kql_type:
                if isinstance(node, K.Literal) and node.value is None:
                    value = literal(kql_type, None)
                else:
                    value = cast_to(value, kql_type)
            row.append(value)
        rows.append(row)
    return values_relation(ctx, out, rows)


def src_range(ctx: CompileContext, op: K.Range) -> Relation:
    start, end, step = ctx.expr(None, op.start), ctx.expr(None, op.end), ctx.expr(None, op.step)
    if start.type == "datetime":
        s, e = ticks(start.sql), ticks(end.sql)
        count = T("toUInt64(greatest(0, intDiv({1} - {0}, {2}) + 1))", s, e, step.sql)
        value = Typed(from_ticks(T("{0} + toInt64(number) * {1}", s, step.sql)), "datetime")
    elif (
        start.type in ("int", "long")
        and end.type in ("int", "long")
        and step.type in ("int", "long")
    ):
        count = T("toUInt64(greatest(0, intDiv({1} - {0}, {2}) + 1))", start.sql, end.sql, step.sql)
        value = Typed(T("toInt64({0} + toInt64(number) * {1})", start.sql, step.sql), "long")
        if start.type == end.type == step.type == "int":
            value = Typed(T("toInt32({0})", value.sql), "int")
    elif start.type == "timespan":
        count = T("toUInt64(greatest(0, intDiv({1} - {0}, {2}) + 1))", start.sql, end.sql, step.sql)
        value = Typed(T("toInt64({0} + toInt64(number) * {1})", start.sql, step.sql), "timespan")
    else:
        s, e, st = (cast_to(v, "real").sql for v in (start, end, step))
        count = T("toUInt64(greatest(0, floor(({1} - {0}) / {2} + 1e-9) + 1))", s, e, st)
        value = Typed(T("({0} + number * {1})", s, st), "real")
    # Bounds from toscalar() are Nullable; numbers() needs a plain count (null bounds: no rows).
    count = T("assumeNotNull(ifNull({0}, toUInt64(0)))", count)
    query = S.Select(columns=[(value.sql, op.name)], from_=S.TableFunction("numbers", [count]))
    return ctx.new_cte(query, [(op.name, value.type)], ordered=True)
