"""Row-window functions (`prev`, `next`, `row_number`, `row_cumsum`, `row_rank_*`, sessions).

They run over the row number `__rn` taken where the rows were serialized. Inside mv-apply or
partition (``partition``) prev and next stay within a row's group; calls with a restart or a
rank read the row-group column the extend operator numbered for them (``groups``: the call's
``id`` -> column name, see ``operators/extend.py``).
"""

from __future__ import annotations

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.functions.window_session import session_start
from bzrk.engine.compile.typed import T, Typed, cast_to, lit
from bzrk.engine.types import clickhouse_type
from bzrk.kql import syntax as K

# The row-window functions: they need a serialized input (a `__rn` order).
WINDOW_FUNCTIONS = frozenset(
    {
        "prev",
        "next",
        "row_number",
        "row_cumsum",
        "row_rank_dense",
        "row_rank_min",
        "row_window_session",
    }
)


def row_window(
    name: str, args: list[Typed], node: K.Call, *, partition: str | None, groups: dict[int, str]
) -> Typed:
    """The SQL of the row-window call ``node`` (``name`` with compiled ``args``)."""
    frame = (
        " OVER ("
        # Inside mv-apply/partition, prev() and next() stay within the row's group.
        + (f"PARTITION BY {S.quote_identifier(partition)} " if partition else "")
        + "ORDER BY `__rn` ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
    )
    if name in ("prev", "next"):
        value = args[0]
        offset = cast_to(args[1], "long").sql if len(args) > 1 else lit(1)
        fname = "lagInFrame" if name == "prev" else "leadInFrame"
        if len(args) > 2:
            default = cast_to(args[2], value.type).sql
        elif value.type == "string":
            default = lit("")  # there is no null string
        else:
            default = S.Cast(lit(None), clickhouse_type(value.type))
        return Typed(
            T(
                fname
                + "(CAST({0}, "
                + S.quote_string(clickhouse_type(value.type))
                + "), toUInt64({1}), {2})"
                + frame,
                value.sql,
                offset,
                default,
            ),
            value.type,
        )
    group = groups.get(id(node))
    if name == "row_window_session" and group is not None:
        return session_start(args, group)
    if name in ("row_rank_dense", "row_rank_min") and group is None:
        raise unsupported(node, f"'{name}' is not supported here")
    if name in ("row_rank_dense", "row_rank_min") and group is not None:
        grp = S.quote_identifier(group)
        # With a restart condition ranks count inside its segments (see operators/extend.py).
        segment = f"(PARTITION BY {S.quote_identifier(group + 'r')})" if len(args) > 1 else "()"
        if name == "row_rank_dense":
            return Typed(T(f"toInt64({grp} - min({grp}) OVER {segment} + 1)"), "long")
        return Typed(
            T(
                "toInt64(min(`__rn`) OVER (PARTITION BY "
                + grp
                + f") - min(`__rn`) OVER {segment} + 1)"
            ),
            "long",
        )
    partition = f"PARTITION BY {S.quote_identifier(group)} " if group else ""
    if name == "row_number":
        start = cast_to(args[0], "long").sql if args else lit(1)
        return Typed(
            T("toInt64(row_number() OVER (" + partition + "ORDER BY `__rn`) - 1 + {0})", start),
            "long",
        )
    if name == "row_cumsum":
        value = args[0]
        if group is not None:
            return Typed(
                T(
                    "sum({0}) OVER ("
                    + partition
                    + "ORDER BY `__rn` ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
                    value.sql,
                ),
                value.type,
            )
        if len(args) > 1 and not (isinstance(args[1].sql, S.Lit) and args[1].sql.value is False):
            raise unsupported(node, "row_cumsum with a restart condition is not supported")
        return Typed(
            T(
                "sum({0}) OVER (ORDER BY `__rn` ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
                value.sql,
            ),
            value.type,
        )
    raise unsupported(node, f"'{name}' is not supported")
