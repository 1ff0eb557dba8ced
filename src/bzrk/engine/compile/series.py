"""Series functions: element-wise math and statistics over dynamic numeric arrays.

A series is dynamic JSON text; it is read as ``Array(Nullable(Float64))`` (non-numbers become
null), computed with ClickHouse array functions, and written back as JSON.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T, Typed, cast_to, json_or_null_literal

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions import ExprCompiler
    from bzrk.kql import syntax as K


def numbers(value: Typed) -> S.Expr:
    """A series as Array(Nullable(Float64)); a scalar becomes a one-element broadcast marker."""
    if value.type == "dynamic":
        return T("arrayMap(x -> toFloat64OrNull(x), JSONExtractArrayRaw({0}))", value.sql)
    return T("[toFloat64({0})]", cast_to(value, "real").sql)


def _json(arr: S.Expr) -> S.Expr:
    return T("toJSONString({0})", arr)


_UNARY = {
    "series_abs": "abs(x)",
    "series_acos": "acos(x)",
    "series_asin": "asin(x)",
    "series_atan": "atan(x)",
    "series_ceiling": "ceil(x)",
    "series_cos": "cos(x)",
    "series_exp": "exp(x)",
    "series_floor": "floor(x)",
    "series_log": "log(x)",
    "series_sign": "sign(x)",
    "series_sin": "sin(x)",
    "series_tan": "tan(x)",
}
_BINARY = {
    "series_add": "a + b",
    "series_subtract": "a - b",
    "series_multiply": "a * b",
    "series_divide": "a / b",
    "series_pow": "pow(a, b)",
    "series_greater": "a > b",
    "series_greater_equals": "a >= b",
    "series_less": "a < b",
    "series_less_equals": "a <= b",
    "series_equals": "a = b",
    "series_not_equals": "a != b",
}
_COMPARISONS = {
    "series_greater",
    "series_greater_equals",
    "series_less",
    "series_less_equals",
    "series_equals",
    "series_not_equals",
}


def _unary(expr: str):  # type: ignore[no-untyped-def]
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        return Typed(_json(T("arrayMap(x -> " + expr + ", {0})", numbers(a[0]))), "dynamic")

    return build


def _binary(name: str, expr: str):  # type: ignore[no-untyped-def]
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        left, right = numbers(a[0]), numbers(a[1])
        # A scalar side is broadcast; arrays of different lengths pad with null.
        size = T(
            "greatest(if({2}, 0, length({0})), if({3}, 0, length({1})))",
            left,
            right,
            S.Lit(a[0].type != "dynamic"),
            S.Lit(a[1].type != "dynamic"),
        )
        pick_a = "if({2}, {0}[1], arrayElementOrNull({0}, i))"
        pick_b = "if({3}, {1}[1], arrayElementOrNull({1}, i))"
        value = (
            "arrayMap(i -> "
            + expr.replace("a", "(" + pick_a + ")").replace("b", "(" + pick_b + ")")
            + ", range(1, toUInt64({4}) + 1))"
        )
        return Typed(
            _json(
                T(
                    value,
                    left,
                    right,
                    S.Lit(a[0].type != "dynamic"),
                    S.Lit(a[1].type != "dynamic"),
                    size,
                )
            ),
            "dynamic",
        )

    return build


def _aggregate(template: str):  # type: ignore[no-untyped-def]
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        return Typed(T(template, numbers(a[0])), "real")

    return build


def _pair(template: str):  # type: ignore[no-untyped-def]
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        left = T("arrayMap(x -> ifNull(x, 0), {0})", numbers(a[0]))
        right = T("arrayMap(x -> ifNull(x, 0), {0})", numbers(a[1]))
        return Typed(T(template, left, right), "real")

    return build


def _fill_const(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    fill = json_or_null_literal(a[1]) if len(a) > 1 else S.Lit("0")
    return Typed(
        T(
            "concat('[', arrayStringConcat(arrayMap(x -> if(x = 'null', {1}, x), JSONExtractArrayRaw({0})), ','), ']')",
            a[0].sql,
            fill,
        ),
        "dynamic",
    )


def _fill_forward(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    raw = T("JSONExtractArrayRaw({0})", a[0].sql)
    return Typed(
        T("concat('[', arrayStringConcat(arrayFill(x -> x != 'null', {0}), ','), ']')", raw),
        "dynamic",
    )


def _fill_backward(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    raw = T("JSONExtractArrayRaw({0})", a[0].sql)
    return Typed(
        T("concat('[', arrayStringConcat(arrayReverseFill(x -> x != 'null', {0}), ','), ']')", raw),
        "dynamic",
    )


_STATS_FIELDS = (
    (
        "min",
        "arrayMin(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0})))",
        "real",
    ),
    (
        "min_idx",
        "toInt64(indexOf({0}, arrayMin(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0})))) - 1)",
        "long",
    ),
    (
        "max",
        "arrayMax(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0})))",
        "real",
    ),
    (
        "max_idx",
        "toInt64(indexOf({0}, arrayMax(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0})))) - 1)",
        "long",
    ),
    (
        "avg",
        "arrayAvg(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0})))",
        "real",
    ),
    (
        "stdev",
        "sqrt(arraySum(arrayMap(x -> pow(x - arrayAvg(arrayMap(y -> assumeNotNull(y), arrayFilter(y -> y IS NOT NULL, {0}))), 2), arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0})))) / (length(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0}))) - 1))",
        "real",
    ),
    (
        "variance",
        "arraySum(arrayMap(x -> pow(x - arrayAvg(arrayMap(y -> assumeNotNull(y), arrayFilter(y -> y IS NOT NULL, {0}))), 2), arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0})))) / (length(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0}))) - 1)",
        "real",
    ),
)


def _stats_dynamic(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    arr = numbers(a[0])
    parts = []
    for name, template, _ in _STATS_FIELDS:
        parts.append(T("concat('\"" + name + "\":', toJSONString(" + template + "))", arr))
    parts.append(
        T(
            "concat('\"sum\":', toJSONString(arraySum(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0})))))",
            arr,
        )
    )
    parts.append(T("concat('\"len\":', toString(length({0})))", arr))
    return Typed(
        T("concat('{{', arrayStringConcat({0}, ','), '}}')", S.Func("array", parts)), "dynamic"
    )


SERIES_FUNCTIONS: dict[str, object] = {
    **{name: _unary(expr) for name, expr in _UNARY.items()},
    **{
        name: _binary(name, f"toBool({expr})" if name in _COMPARISONS else expr)
        for name, expr in _BINARY.items()
    },
    "series_sum": _aggregate(
        "arraySum(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0})))"
    ),
    "series_product": _aggregate(
        "arrayProduct(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0})))"
    ),
    "series_magnitude": _aggregate(
        "sqrt(arraySum(arrayMap(x -> x * x, arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, {0})))))"
    ),
    "series_dot_product": _pair(
        "arraySum(arrayMap((x, y) -> x * y, {0}, arrayResize({1}, length({0}))))"
    ),
    "series_cosine_similarity": _pair(
        "arraySum(arrayMap((x, y) -> x * y, {0}, {1})) / (sqrt(arraySum(arrayMap(x -> x * x, {0}))) * sqrt(arraySum(arrayMap(x -> x * x, {1}))))"
    ),
    "series_pearson_correlation": _pair(
        "(arraySum(arrayMap((x, y) -> (x - arrayAvg({0})) * (y - arrayAvg({1})), {0}, {1}))) / "
        "sqrt(arraySum(arrayMap(x -> pow(x - arrayAvg({0}), 2), {0})) * arraySum(arrayMap(y -> pow(y - arrayAvg({1}), 2), {1})))"
    ),
    "series_fill_const": _fill_const,
    "series_fill_forward": _fill_forward,
    "series_fill_backward": _fill_backward,
    "series_stats_dynamic": _stats_dynamic,
}
STATS_FIELDS = _STATS_FIELDS
