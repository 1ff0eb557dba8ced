"""Series functions: element-wise math and statistics over dynamic numeric arrays.

A series is dynamic JSON text; it is read as ``Array(Nullable(Float64))`` (non-numbers become
null), computed with ClickHouse array functions, and written back as JSON.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T, Typed, cast_to, json_or_null_literal, lit

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
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
        # A scalar operand stands for a series of that value, as long as the other one.
        if a[1].type != "dynamic" and a[0].type == "dynamic":
            right = T("arrayResize({1}, length({0}), {1}[1])", left, right)
        elif a[0].type != "dynamic" and a[1].type == "dynamic":
            left = T("arrayResize({0}, length({1}), {0}[1])", left, right)
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


CORE_FUNCTIONS: dict[str, object] = {
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
    # The longer series is cut to the shorter one (zero padding adds nothing); an empty one
    # gives null.
    "series_dot_product": _pair(
        "if(length({0}) = 0 OR length({1}) = 0, NULL, "
        "arraySum(arrayMap((x, y) -> x * y, {0}, arrayResize({1}, length({0})))))"
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


def _fir(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:

    x = T("arrayMap(v -> ifNull(v, 0), {0})", numbers(a[0]))
    taps = T("arrayMap(v -> ifNull(v, 0), {0})", numbers(a[1]))
    normalize = c.as_bool(a[2]) if len(a) > 2 else lit(True)
    center = c.as_bool(a[3]) if len(a) > 3 else lit(False)
    # y[i] = sum_j f[j] * x[i - j + shift]; shift centres the window when asked.
    value = T(
        "arrayMap(i -> arraySum(arrayMap(j -> {1}[j] * if(toInt64(i) - toInt64(j) + 1 + if({3}, intDiv(length({1}), 2), 0) BETWEEN 1 AND length({0}), "
        "{0}[toInt64(i) - toInt64(j) + 1 + if({3}, intDiv(length({1}), 2), 0)], 0), range(1, length({1}) + 1))) / if({2}, arraySum({1}), 1), "
        "range(1, length({0}) + 1))",
        x,
        taps,
        normalize,
        center,
    )
    return Typed(_json(value), "dynamic")


def _iir(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    x = T("arrayMap(v -> ifNull(v, 0), {0})", numbers(a[0]))
    b = T("arrayMap(v -> ifNull(v, 0), {0})", numbers(a[1]))
    den = T("arrayMap(v -> ifNull(v, 0), {0})", numbers(a[2]))
    # y[i] = (sum_j b[j] x[i-j] - sum_{k>=1} a[k] y[i-k]) / a[0], accumulated left to right.
    value = T(
        "arrayFold((acc, i) -> arrayPushBack(acc, (arraySum(arrayMap(j -> {1}[j] * if(toInt64(i) - toInt64(j) + 1 >= 1, {0}[toInt64(i) - toInt64(j) + 1], 0), "
        "range(1, length({1}) + 1))) - arraySum(arrayMap(k -> {2}[k] * if(toInt64(i) - toInt64(k) + 1 >= 1, acc[toInt64(i) - toInt64(k) + 1], 0), "
        "range(2, length({2}) + 1)))) / {2}[1]), range(1, length({0}) + 1), CAST([], 'Array(Float64)'))",
        x,
        b,
        den,
    )
    return Typed(_json(value), "dynamic")


def _fill_linear(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:

    arr = numbers(a[0])
    if len(a) > 1 and not (isinstance(a[1].sql, S.Lit) and a[1].sql.value is None):
        # A placeholder value marks missing elements as null does.
        arr = T("arrayMap(x -> if(x = {1}, NULL, x), {0})", arr, cast_to(a[1], "real").sql)
    edges = c.as_bool(a[2]) if len(a) > 2 else lit(True)
    # A series with no value at all becomes the constant (0 unless given).
    has_constant = len(a) > 3 and not (isinstance(a[3].sql, S.Lit) and a[3].sql.value is None)
    constant = cast_to(a[3], "real").sql if has_constant else lit(0.0)
    prev_idx = T(
        "arrayFill(i -> {0}[i] IS NOT NULL, arrayMap(i -> if({0}[i] IS NULL, 0, i), range(1, length({0}) + 1)))",
        arr,
    )
    next_idx = T(
        "arrayReverseFill(i -> {0}[i] IS NOT NULL, arrayMap(i -> if({0}[i] IS NULL, 0, i), range(1, length({0}) + 1)))",
        arr,
    )
    value = T(
        "if(arrayAll(v -> v IS NULL, {0}), arrayMap(v -> {4}, {0}), arrayMap(i -> multiIf("
        "{0}[i] IS NOT NULL, {0}[i], "
        "{1}[i] > 0 AND {0}[{1}[i]] IS NOT NULL AND {2}[i] > 0 AND {0}[{2}[i]] IS NOT NULL, "
        "{0}[{1}[i]] + ({0}[{2}[i]] - {0}[{1}[i]]) * (i - {1}[i]) / ({2}[i] - {1}[i]), "
        "NOT {3}, NULL, "
        "{2}[i] > 0 AND {0}[{2}[i]] IS NOT NULL, {0}[{2}[i]], "
        "{1}[i] > 0 AND {0}[{1}[i]] IS NOT NULL, {0}[{1}[i]], NULL), range(1, length({0}) + 1)))",
        arr,
        prev_idx,
        next_idx,
        edges,
        constant,
    )
    if a[0].type == "dynamic":
        # A series of integers stays integral (interpolated values truncated), as in Kusto.
        # (Read from the JSON text: ClickHouse's raw array elements lose the `.0` of `111.0`.)
        value = T(
            "if(match(ifNull({0}, ''), '[0-9]') AND NOT match(ifNull({0}, ''), '[0-9][.eE]'), "
            "toJSONString(arrayMap(v -> toInt64(trunc(v)), {1})), toJSONString({1}))",
            a[0].sql,
            value,
        )
        return Typed(value, "dynamic")
    return Typed(_json(value), "dynamic")


_FIT_LINE_FIELDS = (
    ("rsquare", "real"),
    ("slope", "real"),
    ("variance", "real"),
    ("rvariance", "real"),
    ("interception", "real"),
    ("line_fit", "dynamic"),
)


def _fit_line_dynamic(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    # Least squares over x = 1..n. `arrayMap(v -> ..., [value])[1]` binds a value once, so the
    # SQL stays linear in size.
    xs = "range(1, length(__y) + 1)"
    slope = (
        f"(length(__y) * arraySum(arrayMap((v, i) -> v * i, __y, {xs})) - arraySum(__y) * arraySum({xs})) "
        f"/ (length(__y) * arraySum(arrayMap(i -> i * i, {xs})) - pow(arraySum({xs}), 2))"
    )
    intercept = f"(arraySum(__y) - __s * arraySum({xs})) / length(__y)"
    fit = f"arrayMap(i -> __s * i + __b, {xs})"
    variance = "(arraySum(arrayMap(v -> pow(v - arrayAvg(__y), 2), __y)) / (length(__y) - 1))"
    rvariance = "(arraySum(arrayMap((v, f) -> pow(v - f, 2), __y, __f)) / (length(__y) - 1))"
    bag = (
        "concat('{{\"rsquare\":', toJSONString(1 - " + rvariance + " / " + variance + "), "
        "',\"slope\":', toJSONString(__s), ',\"variance\":', toJSONString(" + variance + "), "
        "',\"rvariance\":', toJSONString("
        + rvariance
        + "), ',\"interception\":', toJSONString(__b), "
        "',\"line_fit\":', toJSONString(__f), '}}')"
    )
    text = (
        "arrayMap(__y -> arrayMap(__s -> arrayMap(__b -> arrayMap(__f -> "
        + bag
        + ", ["
        + fit
        + "])[1], "
        "[" + intercept + "])[1], [" + slope + "])[1], [{0}])[1]"
    )
    y = T("arrayMap(v -> ifNull(v, 0), {0})", numbers(a[0]))
    return Typed(T(text, y), "dynamic")


# Functions that return several columns: their dynamic builder and the (field, type) list.
CORE_MULTI_COLUMN: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "series_stats": ("series_stats_dynamic", tuple((name, t) for name, _, t in STATS_FIELDS)),
    "series_fit_line": ("series_fit_line_dynamic", _FIT_LINE_FIELDS),
    "series_fit_2lines": (
        "series_fit_line_dynamic",
        (
            ("rsquare", "real"),
            ("split_idx", "long"),
            ("variance", "real"),
            ("rvariance", "real"),
            ("line_fit", "dynamic"),
        ),
    ),
}

CORE_FUNCTIONS.update(
    {
        "series_fir": _fir,
        "series_iir": _iir,
        "series_fill_linear": _fill_linear,
        "series_fit_line_dynamic": _fit_line_dynamic,
        "series_fit_2lines_dynamic": _fit_line_dynamic,
    }
)
