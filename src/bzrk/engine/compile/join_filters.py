"""Which filters after a join run before it: Kusto's push-down through ``innerunique``.

An ``innerunique`` join (the default flavour) keeps one left row per key before it matches. Kusto
pushes a ``where`` that follows the join, and reads only left columns, to the left side — so the
filter runs *before* that de-duplication and picks which left row survives (the documented
``t1 | join kind=innerunique t2 on key | where value == "val1.2"`` answers with ``val1.2`` rows,
where filtering after the join would leave none). Other flavours keep every left row, so the
order does not change their answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bzrk.kql import syntax as K


def join_kind(op: K.Join | K.Lookup) -> str:
    """The join flavour ``op`` asks for (``innerunique`` when a join names none, ``leftouter``
    for a lookup), lower-cased."""
    kind = next((p.value for p in op.params if p.name == "kind"), None)
    if isinstance(kind, K.NameRef):
        return kind.name.lower()
    return "leftouter" if isinstance(op, K.Lookup) else "innerunique"


def filters_before_join(
    op: K.QueryOperator, following: Sequence[K.QueryOperator], left_columns: Iterable[str]
) -> int:
    """How many of the ``where``s right after ``op`` run on its left side first: none unless
    ``op`` is an ``innerunique`` join; then each in turn while it reads only ``left_columns``
    (read only then: a pipeline of a thousand ``extend``s asks at every operator)."""
    if not isinstance(op, K.Join) or join_kind(op) != "innerunique":
        return 0
    if not following or not isinstance(following[0], K.Where):
        return 0
    columns = set(left_columns)
    count = 0
    for after in following:
        if not isinstance(after, K.Where) or not _reads_only(after.predicate, columns):
            break
        count += 1
    return count


def _reads_only(predicate: K.Expr, columns: set[str]) -> bool:
    """Whether every name ``predicate`` reads is one of ``columns`` (no sub-query, no ``$left``
    or ``$right``): a left column keeps its name after the join, a right one may not. The walk
    is iterative: a predicate of thousands of terms is fine."""
    names = []
    for node in predicate.walk():
        if isinstance(node, K.Pipeline | K.QueryOperator):
            return False
        if isinstance(node, K.NameRef):
            names.append(node.name)
    return bool(names) and all(name in columns for name in names)
