"""Berserk's counter and gauge aggregates: otel_rate, otel_increase, otel_delta, rate, deriv.

The vendor names them and says what they are for (otel_rate: the per-second rate of a monotonic
counter; otel_increase: how much it grew; otel_delta: the signed change; temporality and resets
handled) but gives no formula, so bzrk follows Prometheus' ``increase``/``rate``/``deriv`` without
extrapolation, per time series (``metric_hash`` and the resource, see ``series_key``) and then added up over the series in a group:

* a cumulative point adds its step from the previous point of its series; a drop, or a new
  ``start_time``, is a reset and the counter counts from zero again (the step is the value);
  the series' first point is the baseline;
* a delta point covers ``[start_time, time]`` and adds its value;
* the rate is the increase over the seconds from the first point's time (cumulative) or
  ``start_time`` (delta) to the last point's time; a series of one cumulative point has no rate;
* otel_delta is last − first for cumulative points and gauges, the sum for delta points;
* ``rate(value[, time])`` is the reset-aware increase of plain numbers over their time span and
  ``deriv(value[, time])`` the least-squares slope per second (Prometheus ``deriv``).

Each runs as one ClickHouse aggregate (``groupArray`` of the points, then array functions), so
it works under summarize and make-series alike. The otel_* forms read the metric point's own
columns and so take ``$raw`` of a stored OTel table; log and span rows (no ``value``), and
histogram and summary points, are skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.typed import T, Typed, cast_to

if TYPE_CHECKING:
    from collections.abc import Callable

    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

RAW = "$raw"


def point_column(c: ExprCompiler, node: K.Call, name: str) -> Typed:
    """A column of the metric point ``$raw`` stands for (the otel_* aggregates read these)."""
    from bzrk.kql import syntax as K

    first = node.args[0] if node.args else None
    column = c.scope.columns.get(name)
    if not (isinstance(first, K.NameRef) and first.name == RAW) or column is None:
        raise unsupported(
            first or node,
            f"{node.name} reads OTel metric points: pass $raw of a stored OTel table "
            f"(its rows need the '{name}' column)",
            code="InvalidArgument",
        )
    return column


def series_key(c: ExprCompiler, node: K.Call) -> S.Expr:
    """The time series a point belongs to inside these aggregates: its ``metric_hash`` and its
    whole resource. ``metric_hash`` leaves out what changes per pod or process (so a series
    keeps its id over restarts), but two pods reporting at once each keep a counter of their
    own, and their points must not be read as one series that keeps resetting."""
    return T(
        "cityHash64(ifNull({0}, toUInt64(0)), toString({1}))",
        point_column(c, node, "metric_hash").sql,
        point_column(c, node, "resource").sql,
    )


def time_ticks(value: S.Expr) -> S.Expr:
    """A nullable datetime's ticks, 0 for null."""
    return T("if(isNull({0}), toInt64(0), reinterpretAsInt64(assumeNotNull({0})))", value)


# One tuple per point: (series, time, start time, value, cumulative), sorted by series and time,
# split into one array per series.
# (``arrayMap(v -> …, [x])[1]`` names a value without an alias: aliases are global in a query.)
_SERIES = (
    "arrayMap(pts -> arraySplit((x, h) -> x.1 != h, pts, "
    "arrayPushFront(arrayPopBack(arrayMap(x -> x.1, pts)), toUInt64(0))), "
    "[arraySort(x -> (x.1, x.2), groupArrayIf(tuple({0}, {1}, {2}, {3}, {4}), {5}))])[1]"
)
# A series' increase: the steps of its cumulative points (a drop or a new start is a reset),
# the values of its delta points.
_INCREASE = (
    "(arraySum(arrayMap((x, p) -> if(x.5, if(x.3 != p.3 OR x.4 < p.4, x.4, x.4 - p.4), x.4), "
    "arrayPopFront(s), arrayPopBack(s))) + if(s[1].5, 0, s[1].4))"
)
_SECONDS = "((s[-1].2 - if(s[1].5, s[1].2, s[1].3)) / 1e7)"
_PER_SERIES = {
    "otel_increase": _INCREASE,
    "otel_rate": f"if({_SECONDS} > 0, {_INCREASE} / {_SECONDS}, NULL)",
    "otel_delta": "if(s[1].5, s[-1].4 - s[1].4, arraySum(arrayMap(x -> x.4, s)))",
}


def _counter(name: str) -> Callable[[ExprCompiler, list[Typed], K.Call], Typed]:
    per_series = _PER_SERIES[name]

    def build(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
        def col(n: str) -> S.Expr:
            return point_column(c, node, n).sql

        points = T(
            _SERIES,
            series_key(c, node),
            time_ticks(col("timestamp")),
            time_ticks(col("start_time")),
            T("toFloat64(assumeNotNull({0}))", col("value")),
            T("ifNull({0}, '') != 'DELTA'", col("aggregation_temporality")),
            T(
                "isNotNull({0}) AND ifNull({1}, '') IN ('sum', 'gauge')",
                col("value"),
                col("metric_type"),
            ),
        )
        values = T(
            "arrayMap(v -> assumeNotNull(v), arrayFilter(v -> isNotNull(v), "
            f"arrayMap(s -> {per_series}, {{0}})))",
            points,
        )
        return Typed(T("if(empty({0}), NULL, arraySum({0}))", values), "real")

    return build


def _time_arg(c: ExprCompiler, args: list[Typed], node: K.Call) -> S.Expr:
    if len(args) > 1:
        if args[1].type != "datetime":
            raise unsupported(
                node.args[1], f"{node.name}'s second argument is a datetime", code="TypeMismatch"
            )
        return time_ticks(args[1].sql)
    column = c.scope.columns.get("timestamp")
    if column is None or column.type != "datetime":
        raise unsupported(
            node,
            f"{node.name}(value) needs a timestamp column: pass the time as its second argument",
        )
    return time_ticks(column.sql)


def _rate(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """Prometheus rate without extrapolation: the reset-aware increase per second."""
    t = _time_arg(c, args, node)
    value = cast_to(args[0], "real").sql
    sql = T(
        "arrayMap(pts -> if(length(pts) < 2 OR pts[-1].1 = pts[1].1, NULL, "
        "arraySum(arrayMap((x, p) -> if(x.2 < p.2, x.2, x.2 - p.2), arrayPopFront(pts), arrayPopBack(pts))) "
        "/ ((pts[-1].1 - pts[1].1) / 1e7)), "
        "[arraySort(x -> x.1, groupArrayIf(tuple({0}, toFloat64(assumeNotNull({1}))), isNotNull({1})))])[1]",
        t,
        value,
    )
    return Typed(sql, "real")


def _deriv(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """Least-squares slope per second (Prometheus deriv), numerically stable."""
    t = _time_arg(c, args, node)
    value = cast_to(args[0], "real").sql
    seconds = T("({0} / 1e7)", t)
    sql = T(
        "if(countIf(isNotNull({1})) < 2, NULL, "
        "covarPopStableIf({0}, toFloat64(assumeNotNull({1})), isNotNull({1})) "
        "/ nullIf(varPopStableIf({0}, isNotNull({1})), 0))",
        seconds,
        value,
    )
    return Typed(sql, "real")


METRIC_AGGREGATES = {
    "otel_rate": _counter("otel_rate"),
    "otel_increase": _counter("otel_increase"),
    "otel_delta": _counter("otel_delta"),
    "rate": _rate,
    "deriv": _deriv,
}
