"""Berserk's OTel histogram functions: otel_histogram_merge and otel_histogram_percentile.

``otel_histogram_merge($raw)`` (an aggregate) merges histogram points into one dynamic value as
the vendor documents it (docs.bzrk.dev, "otel_histogram_merge"):
``{"bucket_counts":[…],"count":…,"explicit_bounds":[…],"max":…,"min":…,"sum":…,"type":"histogram"}``.
Explicit histograms merge only when every point has the same bounds (else null); exponential
ones (``"type":"exp_histogram"``, with ``scale``, ``zero_count``, ``positive_offset``,
``positive_bucket_counts``, ``negative_offset``, ``negative_bucket_counts``) are brought down
to the coarsest scale first; explicit and exponential points together give null; rows that are
not histogram points are skipped. Delta points add up; cumulative points merge as their change
over the group, per series (``metric_hash`` and resource): the first point of a series is the baseline, a
drop in count or a new ``start_time`` a reset (so one cumulative snapshot alone merges to
nothing, and its percentile is NaN, as the vendor's skill file says of a single-snapshot bin).

``otel_histogram_percentile(h, p)`` reads a merged value (a scalar) or, as an aggregate,
``$raw`` directly (the merge then the percentile in one step). The rank is ``ceil(p/100·count)``;
in an explicit histogram the value is interpolated linearly inside the bucket that holds the
rank (the first bucket starting at ``min``, the last ending at ``max``, every bucket clipped to
``[min, max]`` when they are known), which gives the vendor's p99 = 948.8 of its example; in an
exponential histogram it is the bucket's geometric midpoint. ``p`` outside 0–100 and an empty
histogram give NaN; a null value gives null.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.metrics import point_column, series_key, time_ticks
from bzrk.engine.compile.typed import T, Typed, cast_to, to_string

if TYPE_CHECKING:
    from collections.abc import Callable

    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K


# Points sorted by series and time, each ``(series, time, start time, cumulative, fields…)``.
def _points(c: ExprCompiler, node: K.Call, fields: list[S.Expr], where: S.Expr) -> S.Expr:
    def col(n: str) -> S.Expr:
        return point_column(c, node, n).sql

    slots = ", ".join(f"{{{i}}}" for i in range(4 + len(fields)))
    return T(
        f"arraySort(x -> (x.1, x.2), groupArrayIf(tuple({slots}), {{{4 + len(fields)}}}))",
        series_key(c, node),
        time_ticks(col("timestamp")),
        time_ticks(col("start_time")),
        T("ifNull({0}, '') != 'DELTA'", col("aggregation_temporality")),
        *fields,
        where,
    )


def _signed(points: S.Expr, width: int, count_at: int, body: str) -> S.Expr:
    """``body`` over ``items``, each ``(sign, fields…)``: a point with sign 1 adds, -1 takes off.

    A delta point adds itself; a cumulative point adds its change from the previous point of its
    series (itself and, taken off, that point) or, after a reset (a new start time or a lower
    count), itself; the first point of a cumulative series is the baseline.
    """
    first = "(i = 1 OR x.1 != pts[i - 1].1)"
    reset = f"(x.3 != pts[i - 1].3 OR x.{count_at} < pts[i - 1].{count_at})"
    plus = f"if(x.4 AND {first}, 0, 1)"
    minus = f"if(x.4 AND NOT {first} AND NOT {reset}, -1, 0)"
    this = ", ".join(f"x.{f}" for f in range(5, 5 + width))
    prev = ", ".join(f"pts[i - 1].{f}" for f in range(5, 5 + width))
    return T(
        "arrayMap(pts -> arrayMap(items -> " + S.escape_braces(body) + ", "
        f"[arrayFilter(y -> y.1 != 0, arrayFlatten(arrayMap((x, i) -> [({plus}, {this}), "
        f"({minus}, {prev})], pts, arrayEnumerate(pts))))])[1], [{{0}}])[1]",
        points,
    )


def _array(dynamic: S.Expr, element: str) -> S.Expr:
    """An array column as the scope reads it (dynamic JSON text) back as a ClickHouse array."""
    return T(f"JSONExtract(ifNull({{0}}, '[]'), 'Array({element})')", dynamic)


def _lowest(values: str) -> str:
    return f"arrayMap(v -> if(empty(v), NULL, arrayMin(v)), [{values}])[1]"


def _highest(values: str) -> str:
    return f"arrayMap(v -> if(empty(v), NULL, arrayMax(v)), [{values}])[1]"


def _present(field: int) -> str:
    """The known values of an item field on points that add (min, max)."""
    return f"arrayMap(y -> assumeNotNull(y.{field}), arrayFilter(y -> y.1 = 1 AND isNotNull(y.{field}), items))"


_EXPLICIT_TYPE = (
    "Tuple(bucket_counts Array(Int64), count Int64, explicit_bounds Array(Float64), "
    "max Nullable(Float64), min Nullable(Float64), sum Float64, type String)"
)
_EXP_TYPE = (
    "Tuple(count Int64, max Nullable(Float64), min Nullable(Float64), "
    "negative_bucket_counts Array(Int64), negative_offset Int64, positive_bucket_counts "
    "Array(Int64), positive_offset Int64, scale Int64, sum Float64, type String, zero_count Int64)"
)


def _explicit(c: ExprCompiler, node: K.Call, is_hist: S.Expr) -> S.Expr:
    def col(n: str) -> S.Expr:
        return point_column(c, node, n).sql

    fields = [
        _array(col("bucket_counts"), "Int64"),
        T("toInt64(ifNull({0}, 0))", col("count")),
        T("toFloat64(ifNull({0}, 0))", col("sum")),
        col("min"),
        col("max"),
    ]
    # items: (sign, counts, count, sum, min, max); ``b``, the common bounds, sizes an empty merge
    json = _signed(
        _points(c, node, fields, is_hist),
        5,
        6,
        "toJSONString(CAST(tuple(arrayMap(cs -> if(empty(cs), arrayResize([toInt64(0)], "
        "length(b) + 1), cs), [arrayReduce('sumForEach', arrayMap(y -> arrayMap(v -> v * y.1, "
        "y.2), items))])[1], arraySum(arrayMap(y -> y.1 * y.3, items)), b, "
        f"{_highest(_present(6))}, {_lowest(_present(5))}, "
        f"arraySum(arrayMap(y -> y.1 * y.4, items)), 'histogram'), '{_EXPLICIT_TYPE}'))",
    )
    return T(
        "if(length(groupUniqArrayIf({0}, {1})) = 1, arrayMap(b -> {2}, [anyIf({0}, {1})])[1], NULL)",
        _array(col("explicit_bounds"), "Float64"),
        is_hist,
        json,
    )


def _buckets(keys: str, counts: str) -> str:
    """One side of an exponential histogram at scale ``sc``: (offset, dense counts)."""
    merged = (
        f"arrayReduce('sumMap', arrayMap(y -> arrayMap(j -> toInt64(floor(({keys} + j - 1) / "
        f"pow(2, y.2 - sc))), arrayEnumerate({counts})), items), arrayMap(y -> arrayMap(v -> "
        f"v * y.1, {counts}), items))"
    )
    return (
        "arrayMap(pm -> tuple(if(empty(pm.1), toInt64(0), pm.1[1]), arrayMap(k -> pm.2[indexOf(pm.1, "
        "k + pm.1[1])], range(toUInt64(if(empty(pm.1), 0, pm.1[-1] - pm.1[1] + 1))))), "
        f"[{merged}])[1]"
    )


def _exponential(c: ExprCompiler, node: K.Call, is_exp: S.Expr) -> S.Expr:
    def col(n: str) -> S.Expr:
        return point_column(c, node, n).sql

    def counts(n: str) -> S.Expr:
        return _array(col(n), "Int64")

    fields = [
        T("toInt64(ifNull({0}, 0))", col("scale")),
        T("toInt64(ifNull({0}, 0))", col("zero_count")),
        T("toInt64(ifNull({0}, 0))", col("positive_offset")),
        counts("positive_bucket_counts"),
        T("toInt64(ifNull({0}, 0))", col("negative_offset")),
        counts("negative_bucket_counts"),
        T("toInt64(ifNull({0}, 0))", col("count")),
        T("toFloat64(ifNull({0}, 0))", col("sum")),
        col("min"),
        col("max"),
    ]
    # items: (sign, scale, zero, +offset, +counts, -offset, -counts, count, sum, min, max);
    # ``sc`` is the coarsest scale, ``pos``/``neg`` the merged sides.
    sides = (
        f"arrayMap(pos -> arrayMap(neg -> toJSONString(CAST(tuple("
        "arraySum(arrayMap(y -> y.1 * y.8, items)), "
        f"{_highest(_present(11))}, {_lowest(_present(10))}, neg.2, neg.1, pos.2, pos.1, sc, "
        "arraySum(arrayMap(y -> y.1 * y.9, items)), 'exp_histogram', "
        f"arraySum(arrayMap(y -> y.1 * y.3, items))), '{_EXP_TYPE}')), "
        f"[{_buckets('y.6', 'y.7')}])[1], [{_buckets('y.4', 'y.5')}])[1]"
    )
    body = f"arrayMap(sc -> {sides}, [if(empty(items), toInt64(0), arrayMin(arrayMap(y -> y.2, items)))])[1]"
    return _signed(_points(c, node, fields, is_exp), 10, 11, body)


def merge_sql(c: ExprCompiler, node: K.Call) -> S.Expr:
    """The merge of the group's histogram points as dynamic JSON text (null when none merge)."""
    metric_type = T("ifNull({0}, '')", point_column(c, node, "metric_type").sql)
    is_hist = T("{0} = 'histogram'", metric_type)
    is_exp = T("{0} = 'exp_histogram'", metric_type)
    return T(
        "multiIf(countIf({0}) > 0 AND countIf({1}) > 0, NULL, countIf({0}) > 0, {2}, "
        "countIf({1}) > 0, {3}, NULL)",
        is_hist,
        is_exp,
        _explicit(c, node, is_hist),
        _exponential(c, node, is_exp),
    )


# The percentile of a merged value ``m`` (JSON text) at rank ``r`` (>= 1); ``@…@`` are filled in
# below. Explicit: ``h`` = (bucket counts, bounds, min, max), ``i`` the bucket holding the rank,
# ``lohi`` its range clipped to [min, max]. Exponential: the bucket midpoints, lowest first.
_EXPLICIT_PERCENTILE = (
    "arrayMap(h -> arrayMap(i -> arrayMap(lohi -> lohi.1 + (r - if(i <= 1, 0, "
    "arrayCumSum(h.1)[i - 1])) / h.1[i] * (lohi.2 - lohi.1), "
    "[tuple(if(isNull(h.3), @LO@, greatest(@LO@, assumeNotNull(h.3))), "
    "if(isNull(h.4), @HI@, least(@HI@, assumeNotNull(h.4))))])[1], "
    "[arrayFirstIndex(s -> s >= r, arrayCumSum(h.1))])[1], "
    "[tuple(JSONExtract(m, 'bucket_counts', 'Array(Float64)'), "
    "JSONExtract(m, 'explicit_bounds', 'Array(Float64)'), "
    "JSONExtract(m, 'min', 'Nullable(Float64)'), JSONExtract(m, 'max', 'Nullable(Float64)'))])[1]"
)
_LO = "if(i = 1, ifNull(h.3, if(length(h.2) > 0 AND h.2[1] > 0, 0, h.2[1])), h.2[i - 1])"
_HI = "if(i = length(h.2) + 1, ifNull(h.4, h.2[-1]), h.2[i])"
_EXP_PERCENTILE = (
    "arrayMap(base -> arrayMap(lst -> arrayFirst(x -> x.3 >= r, arrayMap((x, s) -> (x.1, x.2, s), "
    "lst, arrayCumSum(arrayMap(x -> x.2, lst)))).1, [arrayConcat("
    "arrayReverse(arrayMap((v, j) -> (-pow(base, JSONExtract(m, 'negative_offset', 'Int64') + j - 0.5), v), "
    "JSONExtract(m, 'negative_bucket_counts', 'Array(Float64)'), "
    "arrayEnumerate(JSONExtract(m, 'negative_bucket_counts', 'Array(Float64)')))), "
    "[(0., JSONExtract(m, 'zero_count', 'Float64'))], "
    "arrayMap((v, j) -> (pow(base, JSONExtract(m, 'positive_offset', 'Int64') + j - 0.5), v), "
    "JSONExtract(m, 'positive_bucket_counts', 'Array(Float64)'), "
    "arrayEnumerate(JSONExtract(m, 'positive_bucket_counts', 'Array(Float64)'))))])[1], "
    "[pow(2, pow(2, -JSONExtract(m, 'scale', 'Int64')))])[1]"
)
_PERCENTILE = (
    "arrayMap(mm -> if(isNull(mm), NULL, arrayMap(m -> arrayMap(r -> if(@P@ < 0 OR @P@ > 100 "
    "OR NOT (JSONExtract(m, 'count', 'Float64') > 0), nan, if(JSONExtractString(m, 'type') = "
    "'exp_histogram', @EXP@, @EXPLICIT@)), "
    "[greatest(1, ceil(@P@ / 100 * JSONExtract(m, 'count', 'Float64')))])[1], "
    "[assumeNotNull(mm)])[1]), [{0}])[1]"
)


def percentile_sql(merged: S.Expr, percent: S.Expr) -> S.Expr:
    """The ``percent`` percentile of a merged histogram (JSON text)."""
    explicit = _EXPLICIT_PERCENTILE.replace("@LO@", _LO).replace("@HI@", _HI)
    text = (
        _PERCENTILE.replace("@EXP@", _EXP_PERCENTILE)
        .replace("@EXPLICIT@", explicit)
        .replace("@P@", "{1}")
    )
    return T(text, merged, percent)


def _merge(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    return Typed(merge_sql(c, node), "dynamic")


def _percentile_of_raw(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    return Typed(percentile_sql(merge_sql(c, node), cast_to(args[1], "real").sql), "real")


def _percentile(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    value = args[0].sql if args[0].type == "dynamic" else to_string(args[0])
    return Typed(percentile_sql(value, cast_to(args[1], "real").sql), "real")


HISTOGRAM_AGGREGATES: dict[str, Callable[[ExprCompiler, list[Typed], K.Call], Typed]] = {
    "otel_histogram_merge": _merge,
    "otel_histogram_percentile": _percentile_of_raw,
}
HISTOGRAM_FUNCTIONS: dict[str, Callable[[ExprCompiler, list[Typed], K.Call], Typed]] = {
    "otel_histogram_percentile": _percentile,
}
