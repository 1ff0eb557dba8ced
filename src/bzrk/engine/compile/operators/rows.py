"""Operators that order, cut or count rows: `sort`, `take`, `tail`, `top`, `count`, `distinct`,
`sample`, `sample-distinct`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.naming import expr_name
from bzrk.engine.compile.relation import (
    Relation,
)
from bzrk.engine.compile.row_order import count_value, partition_column, strip_rn
from bzrk.engine.compile.semantics import dynamic_order
from bzrk.engine.compile.typed import T
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext


def _order_items(
    ctx: CompileContext, relation: Relation, keys: Sequence[K.OrderKey]
) -> list[tuple[S.Expr, bool, bool]]:
    items = []
    for key in keys:
        value = ctx.expr(relation, key.expr)
        nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
        if value.type == "dynamic":
            number, text = dynamic_order(value)
            items += [(number, key.descending, nulls_first), (text, key.descending, nulls_first)]
            continue
        items.append((value.sql, key.descending, nulls_first))
    return items


def op_sort(ctx: CompileContext, op: K.Sort, relation: Relation) -> Relation:
    relation = strip_rn(ctx, relation)
    order = _order_items(ctx, relation, op.keys)
    result = ctx.select(
        relation, [(S.Col(n), n) for n, _ in relation.columns], relation.columns, order_by=order
    )
    result.ordered = True
    return result


def _limit_kwargs(ctx: CompileContext, relation: Relation, count: S.Expr) -> dict[str, Any]:
    part = partition_column(ctx, relation)
    if part:
        return {"limit_by": (count, [S.Col(part)])}
    return {"limit": count}


def op_take(ctx: CompileContext, op: K.Take, relation: Relation) -> Relation:
    relation = strip_rn(ctx, relation)
    return ctx.select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        **_limit_kwargs(ctx, relation, count_value(ctx, op.count)),
    )


def op_tail(ctx: CompileContext, op: K.Tail, relation: Relation) -> Relation:
    """Berserk's ``tail N``: the N newest rows, newest first.

    Newest by ``timestamp`` (the OTel record time), else by the first datetime column; a
    relation without one has no newest rows, which is a located error. Like ``top``, it reads
    ClickHouse's ``ORDER BY … LIMIT`` (read-in-order on the sorting key's time).
    """
    relation = strip_rn(ctx, relation)
    types = dict(relation.columns)
    time = "timestamp" if types.get("timestamp") == "datetime" else None
    time = time or next((n for n, t in relation.columns if t == "datetime"), None)
    if time is None:
        raise unsupported(
            op, "tail needs a datetime column (timestamp) to find the newest rows",
            code="InvalidArgument",
        )  # fmt: skip
    result = ctx.select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        order_by=[(S.Col(time), True, False)],
        **_limit_kwargs(ctx, relation, count_value(ctx, op.count)),
    )
    result.ordered = True
    return result


def op_top(ctx: CompileContext, op: K.Top, relation: Relation) -> Relation:
    relation = strip_rn(ctx, relation)
    order = _order_items(ctx, relation, [op.key])
    result = ctx.select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        order_by=order,
        **_limit_kwargs(ctx, relation, count_value(ctx, op.count)),
    )
    result.ordered = True
    return result


def op_count(ctx: CompileContext, op: K.Count, relation: Relation) -> Relation:
    name = op.name or "Count"
    part = partition_column(ctx, relation)
    if part:
        return ctx.select(
            relation,
            [(T("toInt64(count())"), name), (S.Col(part), part)],
            [(name, "long"), (part, "long")],
            group_by=[S.Col(part)],
        )
    if relation.stored is not None:
        # A whole table's count reads the table itself: ClickHouse then answers from part
        # metadata (the request window is a partition-key range), not by reading a column.
        query = S.Select(
            columns=[(T("toInt64(count())"), name)], from_=relation.stored, where=S.ScanBounds()
        )
        return ctx.new_cte(query, [(name, "long")])
    return ctx.select(relation, [(T("toInt64(count())"), name)], [(name, "long")], group_by=[])


def op_distinct(ctx: CompileContext, op: K.Distinct, relation: Relation) -> Relation:
    if len(op.items) == 1 and isinstance(op.items[0], K.Star):
        return ctx.select(
            relation, [(S.Col(n), n) for n, _ in relation.columns], relation.columns, distinct=True
        )
    scope = ctx.scope(relation)
    columns, out = [], []
    for i, item in enumerate(op.items):
        value = ExprCompiler(scope).compile(item)
        bound = ctx.bound_names(item)  # KQL's naming: `distinct tostring(a.b)` is a_b
        name = bound[0] if bound else expr_name(item) or f"Column{i + 1}"
        columns.append((value.sql, name))
        out.append((name, value.type))
    return ctx.select(relation, columns, out, distinct=True)


def op_sample(ctx: CompileContext, op: K.Sample, relation: Relation) -> Relation:
    relation = strip_rn(ctx, relation)
    return ctx.select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        order_by=[(T("rand()"), False, False)],
        limit=count_value(ctx, op.count),
    )


def op_sample_distinct(ctx: CompileContext, op: K.SampleDistinct, relation: Relation) -> Relation:
    """`sample-distinct N of c`: at most N distinct values of ``c`` (which ones is arbitrary, as
    in ADX), in a column named as ``c``."""
    relation = strip_rn(ctx, relation)
    value = ctx.expr(relation, op.of)
    name = expr_name(op.of) or "Column1"
    return ctx.select(
        relation,
        [(value.sql, name)],
        [(name, value.type)],
        distinct=True,
        limit=count_value(ctx, op.count),
    )
