"""CTEs that must be evaluated once: those holding a value that differs between evaluations.

ClickHouse inlines a CTE at every reference, so a CTE read twice is computed twice. A row id
from ``rowNumberInAllBlocks()`` is then not the same id in the two computations: over a stored
table read by several threads, blocks arrive in another order each time. mv-apply numbers its
input rows and joins the subquery's answer back by that number, make-graph numbers its edges,
fieldstats its rows; joined across two evaluations, rows meet the wrong partners (an mv-apply
over 800,000 stored rows paired 50 to 75 % of them wrongly, differently on every run).

:func:`materialize_unstable` marks each CTE that computes such a value and is evaluated more
than once as ``MATERIALIZED``: ClickHouse computes it once (setting ``enable_materialized_cte``,
in ``SEMANTIC_SETTINGS``) and every reader sees the same rows.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterator

from bzrk.engine import sql as S

# Functions whose value differs between two evaluations of the same rows.
UNSTABLE_FUNCTIONS = frozenset(
    {
        "rowNumberInAllBlocks",
        "rowNumberInBlock",
        "blockNumber",
        "rand",
        "rand32",
        "rand64",
        "randCanonical",
        "generateUUIDv4",
    }
)
_UNSTABLE_CALL = re.compile(r"\b(" + "|".join(sorted(UNSTABLE_FUNCTIONS)) + r")\s*\(")


def materialize_unstable(select: S.Select) -> S.Select:
    """``select`` with every CTE that computes an unstable value and is evaluated twice or more
    marked ``MATERIALIZED`` (its CTE list is read, not changed)."""
    if not select.ctes:
        return select
    ctes = {id(query) for _, query in select.ctes}
    readers: dict[str, Counter[str]] = {name: Counter() for name, _ in select.ctes}
    for reader, query in [*select.ctes, ("", select)]:
        for table in _table_refs(query, skip=ctes - {id(query)}):
            if table in readers and table != reader:
                readers[table][reader] += 1
    evaluations: dict[str, int] = {"": 1}
    materialized: set[str] = set(select.materialized)
    # CTEs come in dependency order (a CTE reads earlier ones only): count from the end.
    for name, query in reversed(select.ctes):
        count = sum(
            n * (1 if reader in materialized else evaluations.get(reader, 0))
            for reader, n in readers[name].items()
        )
        if count > 1 and _unstable(query, ctes - {id(query)}):
            materialized.add(name)
        evaluations[name] = count
    if materialized == set(select.materialized):
        return select
    return dataclasses.replace(select, materialized=frozenset(materialized))


def _walk(query: S.Query, skip: set[int]) -> Iterator[S.Expr | S.Query | S.Source]:
    """Every node under ``query`` (sources included), each query once, skipping the queries
    whose ids are in ``skip`` (the CTEs, walked on their own)."""
    seen: set[int] = set()
    stack: list[S.Expr | S.Query | S.Source] = [query]
    while stack:
        node = stack.pop()
        if isinstance(node, S.Select | S.UnionAll):
            if id(node) in skip or id(node) in seen:
                continue
            seen.add(id(node))
        yield node
        if isinstance(node, S.Subquery):
            stack.append(node.query)
        elif isinstance(node, S.TableFunction):
            stack.extend(node.args)
        elif isinstance(node, S.Expr | S.Select | S.UnionAll):
            if isinstance(node, S.Select):
                if node.from_ is not None:
                    stack.append(node.from_)
                stack.extend(j.source for j in node.joins)
            stack.extend(S.children(node))


def _unstable(query: S.Query, skip: set[int]) -> bool:
    """Whether ``query`` itself (not a CTE it reads) calls an unstable function."""
    for node in _walk(query, skip):
        if isinstance(node, S.Func) and node.name in UNSTABLE_FUNCTIONS:
            return True
        if isinstance(node, S.Template) and _UNSTABLE_CALL.search(node.text):
            return True
    return False


def _table_refs(query: S.Query, skip: set[int]) -> Iterator[str]:
    """The names of the tables and CTEs ``query`` reads, once per reference."""
    for node in _walk(query, skip):
        if isinstance(node, S.TableRef) and node.database is None:
            yield node.table
