"""Which filters after a join run before it: Kusto's push-down through ``innerunique``.

An ``innerunique`` join (the default flavour) keeps one left row per key before it matches. Kusto
pushes a ``where`` that follows the join, and reads only left columns, to the left side — so the
filter runs *before* that de-duplication and picks which left row survives (the documented
``t1 | join kind=innerunique t2 on key | where value == "val1.2"`` answers with ``val1.2`` rows,
where filtering after the join would leave none). Other flavours keep every left row, so the
order does not change their answer.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from bzrk.engine.compile.rewrite import rewrite
from bzrk.kql import syntax as K


def join_kind(op: K.Join | K.Lookup) -> str:
    """The join flavour ``op`` asks for (``innerunique`` when a join names none, ``leftouter``
    for a lookup), lower-cased."""
    kind = next((p.value for p in op.params if p.name == "kind"), None)
    if isinstance(kind, K.NameRef):
        return kind.name.lower()
    return "leftouter" if isinstance(op, K.Lookup) else "innerunique"


def filters_before_join(
    op: K.QueryOperator, following: Sequence[K.QueryOperator], left_columns: Collection[str]
) -> int:
    """How many of the ``where``s right after ``op`` run on its left side first: none unless
    ``op`` is an ``innerunique`` join; then each in turn while it reads only ``left_columns``."""
    if not isinstance(op, K.Join) or join_kind(op) != "innerunique":
        return 0
    count = 0
    for after in following:
        if not isinstance(after, K.Where) or not _reads_only(after.predicate, left_columns):
            break
        count += 1
    return count


def _reads_only(predicate: K.Expr, columns: Collection[str]) -> bool:
    """Whether every name ``predicate`` reads is one of ``columns`` (no sub-query, no ``$left``
    or ``$right``): a left column keeps its name after the join, a right one may not."""
    names: list[str] = []
    tabular = False

    def visit(node: K.Node) -> K.Node | None:
        nonlocal tabular
        if isinstance(node, K.NameRef):
            names.append(node.name)
        elif isinstance(node, K.Pipeline | K.QueryOperator):
            tabular = True
        return None

    rewrite(predicate, visit)
    return not tabular and bool(names) and all(name in columns for name in names)
