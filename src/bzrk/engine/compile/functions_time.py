"""Time-zone conversions whose zone may differ per row, and bin_auto.

ClickHouse wants a constant zone in ``toTimeZone``/``toDateTime64``; ``formatDateTime`` is the
one function that takes the zone per row, so a zone held in a column goes through the wall-clock
text it formats (second resolution; the sub-second part carries over unchanged).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T, Typed, to_string

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions import ExprCompiler
    from bzrk.kql import syntax as K


def _offset_seconds(instant: S.Expr, zone: S.Expr) -> S.Expr:
    """The zone's UTC offset (seconds) at ``instant`` (a UTC DateTime64)."""
    return T(
        "(toInt64(toDateTime(formatDateTime({0}, '%Y-%m-%d %H:%i:%S', {1}), 'UTC')) "
        "- toInt64(toDateTime({0})))",
        instant,
        zone,
    )


def _constant(zone: S.Expr) -> bool:
    return isinstance(zone, S.Lit) and isinstance(zone.value, str)


def datetime_utc_to_local(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    zone = to_string(args[1])
    if _constant(zone):
        sql = T(
            "toDateTime64(toTimeZone({0}, {1}), 7, 'UTC') "
            "+ toIntervalSecond(timeZoneOffset(toTimeZone({0}, {1})))",
            args[0].sql,
            zone,
        )
    else:
        sql = T("{0} + toIntervalSecond({1})", args[0].sql, _offset_seconds(args[0].sql, zone))
    return Typed(sql, "datetime")


def datetime_local_to_utc(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    zone = to_string(args[1])
    if _constant(zone):
        # The wall-clock text read in the zone is the instant; a time inside a DST gap reads
        # as the matching time before the gap, as Kusto answers.
        sql = T("toTimeZone(toDateTime64(toString({0}), 7, {1}), 'UTC')", args[0].sql, zone)
    else:
        # Guess with the offset at the wall-clock time taken as UTC, then use the offset at
        # the guess.
        guess = T("{0} - toIntervalSecond({1})", args[0].sql, _offset_seconds(args[0].sql, zone))
        sql = T("{0} - toIntervalSecond({1})", args[0].sql, _offset_seconds(guess, zone))
    return Typed(sql, "datetime")


def bin_auto(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """bin_at with the size and origin from `set query_bin_auto_size` / `query_bin_auto_at`."""
    from bzrk.engine.compile.errors import unsupported
    from bzrk.engine.compile.functions import bin_value

    size_node = c.scope.lets.get("$set:query_bin_auto_size")
    if size_node is None:
        raise unsupported(
            node, "bin_auto needs `set query_bin_auto_size=...`", code="InvalidArgument"
        )
    at_node = c.scope.lets.get("$set:query_bin_auto_at")
    size = c.compile(size_node)
    at = c.compile(at_node) if at_node is not None else None
    if at is None:
        return bin_value(c, args[0], size)
    return bin_value(c, args[0], size, at)


TIME_FUNCTIONS = {
    "bin_auto": bin_auto,
    "datetime_utc_to_local": datetime_utc_to_local,
    "datetime_local_to_utc": datetime_local_to_utc,
}
