"""`where`: a filter on the rows, in the form ClickHouse's index analysis can read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.operators.extend import op_extend, uses_window
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.typed import Filtered, T, Typed
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext


def op_where(ctx: CompileContext, op: K.Where, relation: Relation) -> Relation:
    if uses_window(op.predicate):
        # prev()/next() need the row order: compute the predicate as a column first.
        flag = f"__where{ctx.next_id()}"
        item = K.NamedExpr(op.span, (flag,), op.predicate)
        marked = op_extend(ctx, K.Extend(op.span, (item,)), relation)
        keep = [(n, t) for n, t in marked.columns if n != flag]
        flag_value = ExprCompiler(ctx.scope(marked)).as_bool(
            Typed(S.Col(flag), dict(marked.columns)[flag])
        )
        return ctx.select(
            marked,
            [(S.Col(n), n) for n, _ in keep],
            keep,
            where=T("ifNull({0}, false)", flag_value),
        )
    cond = ctx.expr(relation, op.predicate)
    compiler = ExprCompiler(ctx.scope(relation))
    return ctx.select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        # A NULL condition drops the row in WHERE already; wrapping it in ifNull() would hide
        # the predicate from ClickHouse's primary-key and skip-index analysis.
        where=filter_form(compiler.as_bool(cond)),
    )


def filter_form(condition: S.Expr) -> S.Expr:
    """``condition`` as a WHERE clause may read it, where NULL drops a row as false does.

    Through AND and OR only (never NOT), a :class:`Filtered` predicate reads its filter form:
    ``ifNull(s, '') = 'text'`` with non-empty text becomes ``s = 'text'``, ``has`` on a stored
    string ``hasToken(lower(body), 'term')``. On an absent (NULL) field that form gives NULL
    instead of false, which drops the row all the same, and ClickHouse's primary-key and
    skip-index analysis reads it (the text index on ``lower(body)``, the sorting key's
    ``resource.service.name``, bloom filters on ids); a LowCardinality column is compared
    through its dictionary instead of first building ifNull's full column.
    """
    if isinstance(condition, Filtered) and condition.in_filter is not None:
        return condition.in_filter
    if not isinstance(condition, S.BinOp):
        return condition
    if condition.op in ("AND", "OR"):
        return S.BinOp(condition.op, filter_form(condition.left), filter_form(condition.right))
    return condition
