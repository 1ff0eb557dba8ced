"""series_fit_poly: least-squares polynomial regression as a ClickHouse array expression.

The normal equations (Σx^(i+j)) c = Σy·x^i are solved by Gauss-Jordan elimination with
partial pivoting, folded over the pivot columns. Coefficients are returned from the highest
power down, as Kusto documents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.functions.series.core import numbers
from bzrk.engine.compile.functions.series.decompose import let
from bzrk.engine.compile.typed import T, Typed

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

MAX_DEGREE = 6

_FIELDS = (
    ("rsquare", "real"),
    ("coefficients", "dynamic"),
    ("variance", "real"),
    ("rvariance", "real"),
    ("poly_fit", "dynamic"),
)


def _solve(m: int) -> str:
    """Gauss-Jordan over __fp_m (an m × (m+1) augmented matrix) → the solution vector."""
    pivot = (
        # Swap the row with the largest |value| in column k (at or below k) into place k.
        "arrayMap(__fp_p -> arrayMap(__fp_i -> if(__fp_i = __fp_k, __fp_a[__fp_p], if(__fp_i = __fp_p, __fp_a[__fp_k], __fp_a[__fp_i])), "
        "arrayEnumerate(__fp_a)), [__fp_k - 1 + arrayFirstIndex(__fp_v -> abs(__fp_v) = arrayMax(arrayMap(__fp_w -> abs(__fp_w), "
        "arrayMap(__fp_r -> __fp_r[__fp_k], arraySlice(__fp_a, __fp_k)))), arrayMap(__fp_r -> __fp_r[__fp_k], arraySlice(__fp_a, __fp_k)))])[1]"
    )
    eliminate = (
        "arrayMap((__fp_row, __fp_i) -> if(__fp_i = __fp_k, arrayMap(__fp_v -> __fp_v / __fp_b[__fp_k][__fp_k], __fp_b[__fp_k]), "
        "arrayMap((__fp_v, __fp_j) -> __fp_v - __fp_row[__fp_k] / __fp_b[__fp_k][__fp_k] * __fp_b[__fp_k][__fp_j], __fp_row, arrayEnumerate(__fp_row))), "
        "__fp_b, arrayEnumerate(__fp_b))"
    )
    step = "arrayMap(__fp_b -> " + eliminate + ", [" + pivot + "])[1]"
    fold = f"arrayFold((__fp_a, __fp_k) -> {step}, range(1, {m + 1}), __fp_m)"
    return f"arrayMap(__fp_r -> __fp_r[{m + 1}], {fold})"


def series_fit_poly_dynamic(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:

    degree = 1
    if len(n.args) > 2:
        node = n.args[2]
        value = getattr(node, "value", None)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_DEGREE:
            raise unsupported(
                node,
                f"series_fit_poly: degree must be an integer in 1..{MAX_DEGREE}",
                code="InvalidArgument",
            )
        degree = value
    m = degree + 1
    y = T("arrayMap(v -> toFloat64(ifNull(v, 0)), {0})", numbers(a[0]))
    has_x = len(a) > 1 and not (isinstance(a[1].sql, S.Lit) and a[1].sql.value is None)
    x = T("arrayMap(v -> toFloat64(ifNull(v, 0)), {0})", numbers(a[1])) if has_x else None
    xs = (
        "__fp_x"
        if x is not None
        else "arrayMap(__fp_i -> toFloat64(__fp_i), range(1, length(__fp_y) + 1))"
    )
    matrix = (
        f"arrayMap(__fp_i -> arrayPushBack(arrayMap(__fp_j -> arraySum(arrayMap(__fp_v -> pow(__fp_v, __fp_i + __fp_j), __fp_xs)), range({m})), "
        f"arraySum(arrayMap((__fp_v, __fp_w) -> __fp_w * pow(__fp_v, __fp_i), __fp_xs, __fp_y))), range({m}))"
    )
    fit = "arrayMap(__fp_v -> arraySum(arrayMap((__fp_c, __fp_p) -> __fp_c * pow(__fp_v, __fp_p - 1), __fp_c, arrayEnumerate(__fp_c))), __fp_xs)"
    variance = "(arraySum(arrayMap(__fp_v -> pow(__fp_v - arrayAvg(__fp_y), 2), __fp_y)) / (length(__fp_y) - 1))"
    rvariance = "(arraySum(arrayMap((__fp_v, __fp_f) -> pow(__fp_v - __fp_f, 2), __fp_y, __fp_f)) / (length(__fp_y) - 1))"
    bag = (
        "concat('{{\"rsquare\":', toJSONString(1 - " + rvariance + " / " + variance + "), "
        "',\"coefficients\":', toJSONString(arrayReverse(__fp_c)), "
        "',\"variance\":', toJSONString("
        + variance
        + "), ',\"rvariance\":', toJSONString("
        + rvariance
        + "), "
        "',\"poly_fit\":', toJSONString(__fp_f), '}}')"
    )
    body = let("__fp_m", matrix, let("__fp_c", _solve(m), let("__fp_f", fit, bag)))
    text = let(
        "__fp_y",
        "{0}",
        let("__fp_x", "{1}" if x is not None else "[0.]", let("__fp_xs", xs, body)),
    )
    args: list[S.Expr] = [y, x if x is not None else T("[0.]")]
    return Typed(S.Template(text, args), "dynamic")


POLY_FUNCTIONS = {"series_fit_poly_dynamic": series_fit_poly_dynamic}
POLY_MULTI_COLUMN = {"series_fit_poly": ("series_fit_poly_dynamic", _FIELDS)}
