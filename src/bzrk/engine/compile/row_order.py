"""Row order and row identity across CTEs: the `__rn` column, and the enclosing mv-apply's row id.

ClickHouse keeps no row order between subqueries, so an ordered relation carries a row number
(`__rn`) that later operators sort by; operators that make their own order drop it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T, cast_to

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation
    from bzrk.kql import syntax as K


def numbered(ctx: CompileContext, relation: Relation) -> Relation:
    if any(n == "__rn" for n, _ in relation.columns):
        return relation
    columns = [(S.Col(n), n) for n, _ in relation.columns] + [(T("rowNumberInAllBlocks()"), "__rn")]
    return ctx.select(relation, columns, [*relation.columns, ("__rn", "long")])


def strip_rn(ctx: CompileContext, relation: Relation) -> Relation:
    if not any(n == "__rn" for n, _ in relation.columns):
        return relation
    keep = [(n, t) for n, t in relation.columns if n != "__rn"]
    return ctx.select(
        relation, [(S.Col(n), n) for n, _ in keep], keep, order_by=[(S.Col("__rn"), False, False)]
    )


def partition_column(ctx: CompileContext, relation: Relation) -> str | None:
    """The row-id column of an enclosing mv-apply, when this relation still carries it."""
    part = ctx.partition
    return part if part and any(n == part for n, _ in relation.columns) else None


def count_value(ctx: CompileContext, node: K.Expr) -> S.Expr:
    value = ctx.expr(None, node)
    return T("toUInt64(greatest({0}, 0))", cast_to(value, "long").sql)
