"""row_window_session: the start of each row's session in a serialized row set.

A session restarts where the restart condition holds or the gap to the previous row exceeds
the neighbour distance: those rows start the groups numbered by `operators/extend.number_window_groups`. Inside a group
a new session starts once a value is further than the first-value distance from the session's
first value; that chain is sequential, so each group's values are folded once in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T, Typed, cast_to, from_ticks, ticks

if TYPE_CHECKING:
    from collections.abc import Callable

    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K


def _number(value: Typed) -> S.Expr:
    """Values measured on one axis: datetimes as ticks, timespans and numbers as they are."""
    if value.type == "datetime":
        return ticks(value.sql)
    return cast_to(value, "real").sql if value.type == "real" else value.sql


def group_start_condition(
    compiler: ExprCompiler, call: K.Call, previous: Callable[[Typed], Typed]
) -> S.Expr:
    """True where a row cannot continue the previous row's session (gap or restart)."""
    value = compiler.compile(call.args[0])
    between = compiler.compile(call.args[2])
    prior = previous(value)
    gap = T("ifNull({0} - {1} > {2}, false)", _number(value), _number(prior), _number(between))
    if len(call.args) > 3:
        restart = T("ifNull({0}, false)", compiler.as_bool(compiler.compile(call.args[3])))
        return T("({0} OR {1})", gap, restart)
    return gap


def session_start(args: list[Typed], group: str) -> Typed:
    value, first = args[0], args[1]
    grp = S.quote_identifier(group)
    # Ticks need all 64 bits (a double would round them); reals stay doubles.
    kind = "Float64" if value.type == "real" else "Int64"
    values = T(
        "groupArray({0}) OVER (PARTITION BY " + grp + " ORDER BY `__rn` "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)",
        T(f"to{kind}({{0}})", _number(value)),
    )
    starts = T(
        "arrayFold((__acc, __v) -> arrayPushBack(__acc, if(empty(__acc) OR __v - __acc[-1] > {1}, "
        f"__v, __acc[-1])), {{0}}, CAST([], 'Array({kind})'))",
        values,
        T(f"to{kind}({{0}})", _number(first)),
    )
    position = T("row_number() OVER (PARTITION BY " + grp + " ORDER BY `__rn`)")
    start = T("{0}[{1}]", starts, position)
    if value.type == "datetime":
        return Typed(from_ticks(T("toInt64({0})", start)), "datetime")
    if value.type in ("long", "int", "timespan"):
        return Typed(T("toInt64({0})", start), "long" if value.type == "int" else value.type)
    return Typed(start, "real")
