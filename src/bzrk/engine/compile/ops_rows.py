"""Operators that order, cut or count rows: `sort`, `take`, `top`, `count`, `distinct`, `sample`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bzrk.engine import sql as S
from bzrk.engine.compile.expressions import ExprCompiler
from bzrk.engine.compile.naming import _expr_name
from bzrk.engine.compile.relation import (
    Relation,
)
from bzrk.engine.compile.row_order import _count_value, _partition, _strip_rn
from bzrk.engine.compile.typed import T, to_string
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.query import QueryCompiler


def _order_items(
    qc: QueryCompiler, relation: Relation, keys: Sequence[K.OrderKey]
) -> list[tuple[S.Expr, bool, bool]]:
    items = []
    for key in keys:
        value = qc.expr(relation, key.expr)
        nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
        expr = value.sql
        if value.type == "dynamic":
            expr = to_string(value)
        items.append((expr, key.descending, nulls_first))
    return items


def op_sort(qc: QueryCompiler, op: K.Sort, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    order = _order_items(qc, relation, op.keys)
    result = qc._select(
        relation, [(S.Col(n), n) for n, _ in relation.columns], relation.columns, order_by=order
    )
    result.ordered = True
    return result


def _limit_kwargs(qc: QueryCompiler, relation: Relation, count: S.Expr) -> dict[str, Any]:
    part = _partition(qc, relation)
    if part:
        return {"limit_by": (count, [S.Col(part)])}
    return {"limit": count}


def op_take(qc: QueryCompiler, op: K.Take, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    return qc._select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        **_limit_kwargs(qc, relation, _count_value(qc, op.count)),
    )


def op_top(qc: QueryCompiler, op: K.Top, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    order = _order_items(qc, relation, [op.key])
    result = qc._select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        order_by=order,
        **_limit_kwargs(qc, relation, _count_value(qc, op.count)),
    )
    result.ordered = True
    return result


def op_count(qc: QueryCompiler, op: K.Count, relation: Relation) -> Relation:
    name = op.name or "Count"
    part = _partition(qc, relation)
    if part:
        return qc._select(
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
        return qc._new_cte(query, [(name, "long")])
    return qc._select(relation, [(T("toInt64(count())"), name)], [(name, "long")], group_by=[])


def op_distinct(qc: QueryCompiler, op: K.Distinct, relation: Relation) -> Relation:
    if len(op.items) == 1 and isinstance(op.items[0], K.Star):
        return qc._select(
            relation, [(S.Col(n), n) for n, _ in relation.columns], relation.columns, distinct=True
        )
    scope = relation.scope(qc.lets)
    columns, out = [], []
    for i, item in enumerate(op.items):
        value = ExprCompiler(scope).compile(item)
        name = _expr_name(item) or f"Column{i + 1}"
        columns.append((value.sql, name))
        out.append((name, value.type))
    return qc._select(relation, columns, out, distinct=True)


def op_sample(qc: QueryCompiler, op: K.Sample, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    return qc._select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns],
        relation.columns,
        order_by=[(T("rand()"), False, False)],
        limit=_count_value(qc, op.count),
    )
