"""Row order and row identity across CTEs: the `__rn` column, and the enclosing mv-apply's row id.

ClickHouse keeps no row order between subqueries, so an ordered relation carries a row number
(`__rn`) that later operators sort by; operators that make their own order drop it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T, cast_to

if TYPE_CHECKING:
    from bzrk.engine.compile.query import QueryCompiler
    from bzrk.engine.compile.relation import Relation
    from bzrk.kql import syntax as K


def _numbered(qc: QueryCompiler, relation: Relation) -> Relation:
    if any(n == "__rn" for n, _ in relation.columns):
        return relation
    columns = [(S.Col(n), n) for n, _ in relation.columns] + [(T("rowNumberInAllBlocks()"), "__rn")]
    return qc._select(relation, columns, [*relation.columns, ("__rn", "long")])


def _strip_rn(qc: QueryCompiler, relation: Relation) -> Relation:
    if not any(n == "__rn" for n, _ in relation.columns):
        return relation
    keep = [(n, t) for n, t in relation.columns if n != "__rn"]
    return qc._select(
        relation, [(S.Col(n), n) for n, _ in keep], keep, order_by=[(S.Col("__rn"), False, False)]
    )


def _partition(qc: QueryCompiler, relation: Relation) -> str | None:
    """The row-id column of an enclosing mv-apply, when this relation still carries it."""
    part = qc.partition
    return part if part and any(n == part for n, _ in relation.columns) else None


def _count_value(qc: QueryCompiler, node: K.Expr) -> S.Expr:
    value = qc.expr(None, node)
    return T("toUInt64(greatest({0}, 0))", cast_to(value, "long").sql)
