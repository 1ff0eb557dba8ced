"""The span relations of trace-find as SQL over one trace's nodes gathered in arrays.

Each matching candidate trace is one row: its nodes (spans, and the logs that match a block) in
parallel arrays, ``__up`` holding each node's parent as a 1-based position in them (0: none, the
root or a parent outside the window). A log's parent is the span it carries the ``span_id`` of;
no node has a log as its parent, so logs are leaves. ``__a<i>`` holds, per node, whether block
``i`` matches it (UInt8).

Ancestry is read through pointer jumping: ``__s<i>`` (block ``i`` matches the node or one of
its ancestors) is widened level by level while a jump array doubles the distance it reaches,
so :data:`JUMP_LEVELS` levels cover any tree up to ``2 ** JUMP_LEVELS - 1`` levels deep, each
level one pass over the arrays (a cycle in malformed data only repeats nodes; it cannot loop).
"""

from __future__ import annotations

from collections.abc import Iterable

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T

# Ancestors up to 2**10 - 1 = 1023 levels above a node are seen; OTel traces are far shallower.
JUMP_LEVELS = 10

UP = "__up"
LOGS = "__logs"


def flags(leaf: int) -> str:
    """The array column holding whether block ``leaf`` matches each node."""
    return f"__a{leaf}"


def closure_name(leaf: int) -> str:
    """The array column holding whether block ``leaf`` matches each node or an ancestor of it."""
    return f"__s{leaf}_{JUMP_LEVELS - 1}"


def closure_levels(passthrough: list[str], leaves: Iterable[int]) -> list[list[tuple[S.Expr, str]]]:
    """The select lists of the pointer-jumping levels, one CTE each, over the tree CTE.

    Args:
        passthrough: the columns every level carries on unchanged.
        leaves: the blocks whose ancestor-or-self closure is needed.

    Returns:
        One select list per level; the last level's ``closure_name(i)`` are the closures.
    """
    wanted = sorted(set(leaves))
    levels: list[list[tuple[S.Expr, str]]] = []
    closure = {i: flags(i) for i in wanted}
    jump = UP
    for level in range(JUMP_LEVELS):
        columns: list[tuple[S.Expr, str]] = [(S.Col(name), name) for name in passthrough]
        for i in wanted:
            name = f"__s{i}_{level}"
            columns.append(
                (
                    T(
                        "arrayMap(i -> {0}[i] OR {0}[{1}[i]], arrayEnumerate({1}))",
                        S.Col(closure[i]),
                        S.Col(jump),
                    ),
                    name,
                )
            )
            closure[i] = name
        if level < JUMP_LEVELS - 1:
            name = f"__j{level}"
            columns.append(
                (T("arrayMap(i -> {0}[{0}[i]], arrayEnumerate({0}))", S.Col(jump)), name)
            )
            jump = name
        levels.append(columns)
    return levels


def has_match(leaf: int) -> S.Expr:
    """Some node of the trace matches block ``leaf``."""
    return T("has({0}, 1)", S.Col(flags(leaf)))


def related(relation: str, left: int, right: int) -> S.Expr:
    """A node matching block ``left`` stands in ``relation`` to one matching block ``right``.

    ``{A} > {B}``: a B node's parent matches A; ``{A} < {B}``: an A node's parent matches B;
    ``>>``/``<<`` the same through any ancestor; ``~`` an A node and another B node share a
    parent; ``::`` a B log's span matches A.
    """
    up = S.Col(UP)
    a, b = S.Col(flags(left)), S.Col(flags(right))
    if relation == ">":
        return T("arrayExists((x, p) -> x AND {1}[p], {0}, {2})", b, a, up)
    if relation == "<":
        return T("arrayExists((x, p) -> x AND {1}[p], {0}, {2})", a, b, up)
    if relation == ">>":
        return T("arrayExists((x, p) -> x AND {1}[p], {0}, {2})", b, S.Col(closure_name(left)), up)
    if relation == "<<":
        return T("arrayExists((x, p) -> x AND {1}[p], {0}, {2})", a, S.Col(closure_name(right)), up)
    if relation == "::":
        return T(
            "arrayExists((x, l, p) -> x AND l AND {2}[p], {0}, {1}, {3})", b, S.Col(LOGS), a, up
        )
    if relation == "~":
        return T(
            "arrayExists((x, p, i) -> x AND p != 0 AND arrayExists((y, d, k) -> y AND d = p"
            " AND k != i, {1}, {2}, arrayEnumerate({2})), {0}, {2}, arrayEnumerate({2}))",
            a,
            b,
            up,
        )
    raise ValueError(relation)


def needs_closure(relation: str, left: int, right: int) -> int | None:
    """The block whose ancestor closure ``relation`` reads (None: it reads parents only)."""
    if relation == ">>":
        return left
    if relation == "<<":
        return right
    return None
