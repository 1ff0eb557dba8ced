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
    from bzrk.engine.compile.query import _strip_rn

    if not isinstance(op.subquery, K.Pipeline) or not isinstance(op.subquery.source, K.Star):
        raise unsupported(op.subquery, "partition with a '{ query }' subquery is not supported")
    if not isinstance(op.by, K.NameRef) or op.by.name not in dict(relation.columns):
        raise unsupported(op.by, "partition needs a column of its input", code="UnknownName")
    relation = _strip_rn(qc, relation)
    pid = f"__pid{next(qc._counter)}"
    key = S.Col(op.by.name)
    base = qc._select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns]
        + [(T("toInt64(dense_rank() OVER (ORDER BY {0}))", key), pid)],
        [*relation.columns, (pid, "long")],
    )
    saved = qc.partition
    qc.partition = pid
    try:
        sub = qc.tabular(op.subquery, base)
    finally:
        qc.partition = saved
    sub = _strip_rn(qc, sub)
    keep = [(n, t) for n, t in sub.columns if n != pid]
    return qc._select(sub, [(S.Col(n), n) for n, _ in keep], keep)
