"""The `partition by Col ( subquery )` operator: the subquery runs once per key value.

It reuses the per-group mode mv-apply introduced: every row carries a group id column and
the operators that care (take/top/summarize/scan, window functions) work per group id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.typed import T
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.query import QueryCompiler, Relation


def op_partition(qc: QueryCompiler, op: K.Partition, relation: Relation) -> Relation:
    from bzrk.engine.compile.row_order import _strip_rn

    if not isinstance(op.by, K.NameRef) or op.by.name not in dict(relation.columns):
        raise unsupported(op.by, "partition needs a column of its input", code="UnknownName")
    if not isinstance(op.subquery, K.Pipeline) or not isinstance(op.subquery.source, K.Star):
        return _per_key_queries(qc, op, relation)
    relation = _strip_rn(qc, relation)
    pid = f"__pid{next(qc._counter)}"
    key = S.Col(op.by.name)
    base = qc._select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns]
        + [(T("toInt64(dense_rank() OVER (ORDER BY {0}))", key), pid)],
        [*relation.columns, (pid, "long")],
    )
    sub = qc.tabular_per_partition(op.subquery, base, pid)
    sub = _strip_rn(qc, sub)
    keep = [(n, t) for n, t in sub.columns if n != pid]
    return qc._select(sub, [(S.Col(n), n) for n, _ in keep], keep)


# The legacy partition strategy's limit on distinct keys for the `{ query }` form.
MAX_PARTITIONS = 64


def _per_key_queries(qc: QueryCompiler, op: K.Partition, relation: Relation) -> Relation:
    """`partition by Col { query }`: the query runs once per key value; inside it, the key
    column's name stands for that partition's rows (so `toscalar(Col)` is the key)."""
    from bzrk.engine.compile.query import op_union
    from bzrk.engine.compile.row_order import _strip_rn

    assert isinstance(op.by, K.NameRef)
    key = op.by.name
    if qc.probe is None:
        raise unsupported(
            op, "partition with a '{ query }' needs a discovery query, not available here"
        )
    relation = _strip_rn(qc, relation)
    discovery = S.Select(
        columns=[(S.Col(key), "k")],
        from_=relation.source(),
        distinct=True,
        order_by=[(S.Col("k"), False, False)],
        limit=S.Lit(MAX_PARTITIONS + 1),
        ctes=list(qc.ctes),
    )
    values = [row["k"] for row in qc.probe(S.render(discovery))]
    if len(values) > MAX_PARTITIONS:
        raise unsupported(op, f"partition with a '{{ query }}' takes at most {MAX_PARTITIONS} keys")
    if not values:
        raise unsupported(op, "partition over no rows")
    saved = qc.lets
    results: dict[str, Relation] = {}
    try:
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
            rows = qc._select(
                relation, [(S.Col(n), n) for n, _ in relation.columns], relation.columns, where=cond
            )
            qc.lets = {**saved, key: rows}
            results[f"__partition{index}"] = _run_block(qc, op.subquery)
        qc.lets = {**saved, **results}
        refs = tuple(K.NameRef(op.span, name) for name in results)
        return op_union(qc, K.Union(op.span, (), refs), None)
    finally:
        qc.lets = saved


def _run_block(qc: QueryCompiler, body: K.Expr) -> Relation:
    if isinstance(body, K.Lambda):
        return qc.run_block(body.body, body, "the partition query has no result")
    return qc.tabular(body)
