"""The last step of a result table: the CTE chain fused and pruned, a row-cap slot; a plan tree.

Nothing here renders SQL: the query service renders the tree once per run, with that run's
time window and row cap (``CompiledTable.render``).
"""

from __future__ import annotations

import dataclasses

from bzrk.engine import sql as S
from bzrk.engine.compile.passes.fuse import fuse_chain
from bzrk.engine.compile.passes.materialize import materialize_unstable
from bzrk.engine.compile.passes.prune import prune_columns
from bzrk.engine.compile.relation import CompiledTable, Relation
from bzrk.engine.events import Column


def result_table(
    name: str,
    relation: Relation,
    ctes: list[tuple[str, S.Query]],
    stored_columns: dict[tuple[str, str], frozenset[str]],
) -> CompiledTable:
    """``relation`` (the last of ``ctes`` it reads) as the result table ``name``.

    Args:
        name: the result table's name (``PrimaryResult``, a fork branch, an ``as`` name).
        relation: the relation whose columns the table returns.
        ctes: every CTE compiled so far (those the table does not read are pruned).
        stored_columns: the columns of each stored table read, for :func:`fuse_chain`.

    Returns:
        The table: its plan tree, stored reads bounded by ``S.ScanBounds`` and, when it has no
        LIMIT of its own, an ``S.RowCap``.
    """
    select = S.Select(columns=[(S.Col(n), n) for n, _ in relation.columns], from_=relation.source())
    fused_ctes, select = fuse_chain(list(ctes), select, stored_columns)
    # A copy: after fusion `select` may be a CTE that other results still render.
    cappable = select.limit is None
    select = materialize_unstable(
        dataclasses.replace(
            select,
            ctes=prune_columns(fused_ctes, select),
            limit=S.RowCap() if cappable else select.limit,
        )
    )
    return CompiledTable(
        name,
        select,
        tuple(Column(n, t) for n, t in relation.columns),  # type: ignore[arg-type]
        cappable,
    )
