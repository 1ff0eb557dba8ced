"""The `partition by Col ( subquery )` operator: the subquery runs once per key value.

It reuses the per-group mode mv-apply introduced: every row carries a group id column and
the operators that care (take/top/summarize/scan, window functions) work per group id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.operators.combine import op_union
from bzrk.engine.compile.row_order import strip_rn
from bzrk.engine.compile.typed import T
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation


def op_partition(ctx: CompileContext, op: K.Partition, relation: Relation) -> Relation:

    if not isinstance(op.by, K.NameRef) or op.by.name not in dict(relation.columns):
        raise unsupported(op.by, "partition needs a column of its input", code="UnknownName")
    if not isinstance(op.subquery, K.Pipeline) or not isinstance(op.subquery.source, K.Star):
        return _per_key_queries(ctx, op, relation)
    relation = strip_rn(ctx, relation)
    pid = f"__pid{ctx.next_id()}"
    key = S.Col(op.by.name)
    base = ctx.select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns]
        + [(T("toInt64(dense_rank() OVER (ORDER BY {0}))", key), pid)],
        [*relation.columns, (pid, "long")],
    )
    sub = ctx.tabular_per_partition(op.subquery, base, pid)
    sub = strip_rn(ctx, sub)
    keep = [(n, t) for n, t in sub.columns if n != pid]
    return ctx.select(sub, [(S.Col(n), n) for n, _ in keep], keep)


# The legacy partition strategy's limit on distinct keys for the `{ query }` form.
MAX_PARTITIONS = 64


def _per_key_queries(ctx: CompileContext, op: K.Partition, relation: Relation) -> Relation:
    """`partition by Col { query }`: the query runs once per key value; inside it, the key
    column's name stands for that partition's rows (so `toscalar(Col)` is the key)."""

    assert isinstance(op.by, K.NameRef)
    key = op.by.name
    if ctx.probe is None:
        raise unsupported(
            op, "partition with a '{ query }' needs a discovery query, not available here"
        )
    relation = strip_rn(ctx, relation)
    discovery = S.Select(
        columns=[(S.Col(key), "k")],
        from_=relation.source(),
        distinct=True,
        order_by=[(S.Col("k"), False, False)],
        limit=S.Lit(MAX_PARTITIONS + 1),
    )
    values = [row["k"] for row in ctx.discover(discovery)]
    if len(values) > MAX_PARTITIONS:
        raise unsupported(op, f"partition with a '{{ query }}' takes at most {MAX_PARTITIONS} keys")
    if not values:
        raise unsupported(op, "partition over no rows")
    results: dict[str, Relation] = {}
    for index, value in enumerate(values):
        if value is not None and not isinstance(value, str | int | float | bool):
            raise unsupported(
                op.by, "partition keys of this type are not supported with '{ query }'"
            )
        cond = (
            T("{0} IS NULL", S.Col(key))
            if value is None
            else T("{0} = {1}", S.Col(key), S.Lit(value))
        )
        rows = ctx.select(
            relation, [(S.Col(n), n) for n, _ in relation.columns], relation.columns, where=cond
        )
        with ctx.bound({key: rows}):
            results[f"__partition{index}"] = _run_block(ctx, op.subquery)
    with ctx.bound(results):
        refs = tuple(K.NameRef(op.span, name) for name in results)
        return op_union(ctx, K.Union(op.span, (), refs), None)


def _run_block(ctx: CompileContext, body: K.Expr) -> Relation:
    if isinstance(body, K.Lambda):
        return ctx.run_block(body.body, body, "the partition query has no result")
    return ctx.tabular(body)
