"""The `top-hitters` operator: the most frequent values of an expression, or those with the
largest sum of another one.

ADX approximates with a Count-Min sketch; an exact answer is a valid approximation, so bzrk
computes ADX's documented equivalent exactly:

* `T | top-hitters N of v` is `summarize approximate_count_v = count() by v | top N by it desc`;
* `T | top-hitters N of v by s` is `summarize approximate_sum_s = sum(s) by v | top N by it desc`.

Equal counts (sums) are ordered by the value, ascending, so the answer is deterministic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.operators.summarize import op_summarize
from bzrk.engine.compile.row_order import count_value, partition_column
from bzrk.engine.compile.typed import Typed, to_string
from bzrk.kql import syntax as K
from bzrk.kql.binder.naming import expression_name

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation

_NUMERIC = ("int", "long", "real", "decimal")


def hitter_names(op: K.TopHitters) -> tuple[str, str]:
    """The value column's name and the count (sum) column's name, as ADX names them."""
    value = expression_name(op.of) or "Column1"
    if op.by is None:
        return value, f"approximate_count_{value}"
    return value, f"approximate_sum_{expression_name(op.by) or 'Column1'}"


def op_top_hitters(ctx: CompileContext, op: K.TopHitters, relation: Relation) -> Relation:
    value, weight = hitter_names(op)
    if value == weight:
        raise unsupported(op, "top-hitters: the value and its count share a name")
    if op.by is not None:
        summed = ctx.expr(relation, op.by)
        if summed.type not in _NUMERIC:
            raise unsupported(
                op.by,
                f"top-hitters sums a number (this expression is {summed.type})",
                code="TypeMismatch",
            )
        aggregate: K.Expr = K.Call(op.by.span, "sum", (op.by,))
    else:
        aggregate = K.Call(op.span, "count", ())
    count = count_value(ctx, K.Call(op.count.span, "tolong", (op.count,)))
    summary = op_summarize(
        ctx,
        K.Summarize(
            op.span,
            (),
            (K.NamedExpr(op.span, (weight,), aggregate),),
            (K.NamedExpr(op.of.span, (value,), op.of),),
        ),
        relation,
    )
    value_type = dict(summary.columns)[value]
    value_key: S.Expr = S.Col(value)
    if value_type == "dynamic":
        value_key = to_string(Typed(value_key, "dynamic"))
    part = partition_column(ctx, summary)
    limit = {"limit_by": (count, [S.Col(part)])} if part else {"limit": count}
    result = ctx.select(
        summary,
        [(S.Col(n), n) for n, _ in summary.columns],
        summary.columns,
        order_by=[(S.Col(weight), True, False), (value_key, False, True)],
        **limit,
    )
    result.ordered = True
    return result
