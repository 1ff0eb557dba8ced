"""series_periods_detect and series_periods_validate: period scores by autocorrelation.

A period's score is the Pearson correlation of the series with itself shifted by the period
(clamped to [0, 1]; fractional periods use the nearest whole lag). Detection keeps the local
maxima of the score over [min_period, max_period] (at most n/2 and MAX_LAG), drops a
candidate that is a multiple of a better one (a harmonic), and returns the best
`num_periods`, padded with zeros. Kusto's own scoring is not documented: periods agree with
its output on clear seasonal series, scores are bzrk's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.functions.series.core import numbers
from bzrk.engine.compile.functions.series.decompose import let
from bzrk.engine.compile.typed import T, Typed, cast_to

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

MAX_LAG = 400


def _score(lag: str) -> str:
    """Autocorrelation of __pd_y at the whole lag `lag` (0 when undefined)."""
    a = f"arraySlice(__pd_y, 1, length(__pd_y) - {lag})"
    b = f"arraySlice(__pd_y, {lag} + 1)"
    body = (
        "arraySum(arrayMap((__pd_u, __pd_w) -> (__pd_u - arrayAvg(__pd_a)) * (__pd_w - arrayAvg(__pd_b)), __pd_a, __pd_b))"
        " / sqrt(arraySum(arrayMap(__pd_u -> pow(__pd_u - arrayAvg(__pd_a), 2), __pd_a))"
        " * arraySum(arrayMap(__pd_w -> pow(__pd_w - arrayAvg(__pd_b), 2), __pd_b)))"
    )
    valid = f"{lag} >= 1 AND {lag} * 2 <= length(__pd_y)"
    return (
        f"if({valid}, "
        + let(
            "__pd_a",
            a,
            let("__pd_b", b, let("__pd_r", body, "if(isFinite(__pd_r), greatest(__pd_r, 0), 0)")),
        )
        + ", toFloat64(0))"
    )


def _values(a: list[Typed]) -> S.Expr:

    return T("arrayMap(v -> toFloat64(ifNull(v, 0)), {0})", numbers(a[0]))


def _bag(periods: str, scores: str) -> str:
    return (
        "concat('{{\"periods\":', toJSONString("
        + periods
        + "), ',\"scores\":', toJSONString("
        + scores
        + "), '}}')"
    )


def series_periods_detect_dynamic(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    if len(a) < 4:
        raise unsupported(
            n,
            "series_periods_detect(series, min_period, max_period, num_periods)",
            code="WrongArgumentCount",
        )
    lo, hi = cast_to(a[1], "real").sql, cast_to(a[2], "real").sql
    count = cast_to(a[3], "long").sql
    lags = (
        "arrayMap(__pd_c -> toInt64(__pd_c), range(toUInt64(greatest(toInt64(ceil({1})), 2)), "
        "toUInt64(greatest(least(toInt64(floor({2})), toInt64(intDiv(length(__pd_y), 2)), "
        f"toInt64({MAX_LAG})), 1)) + 1))"
    )
    scores = "arrayMap(__pd_l -> " + _score("__pd_l") + ", __pd_lags)"
    # Local maxima (ends count when higher than their one neighbour), best first.
    peaks = (
        "arrayReverseSort(__pd_x -> __pd_x.2, arrayFilter((__pd_x, __pd_i) -> __pd_x.2 > 0 "
        "AND (__pd_i = 1 OR __pd_x.2 >= __pd_s[__pd_i - 1]) AND (__pd_i = length(__pd_s) OR __pd_x.2 > __pd_s[__pd_i + 1]), "
        "arrayZip(__pd_lags, __pd_s), arrayEnumerate(__pd_s)))"
    )
    # A multiple of a period is its harmonic, not a period of its own: it goes when a better
    # period divides it, or a divisor scores at least 90 % as well.
    distinct = (
        "arrayFilter((__pd_x, __pd_i) -> NOT arrayExists(__pd_z -> __pd_x.1 % __pd_z.1 = 0, "
        "arraySlice(__pd_p, 1, __pd_i - 1)) AND NOT arrayExists(__pd_z -> __pd_z.1 < __pd_x.1 "
        "AND __pd_x.1 % __pd_z.1 = 0 AND __pd_z.2 >= 0.9 * __pd_x.2, __pd_p), __pd_p, arrayEnumerate(__pd_p))"
    )
    best = f"arraySlice({distinct}, 1, greatest({{3}}, 0))"
    padded = "arrayResize(__pd_best, toUInt64(greatest({3}, 0)), tuple(toInt64(0), toFloat64(0)))"
    bag = _bag(
        "arrayMap(__pd_x -> toFloat64(__pd_x.1), __pd_out)",
        "arrayMap(__pd_x -> __pd_x.2, __pd_out)",
    )
    text = let(
        "__pd_y",
        "{0}",
        let(
            "__pd_lags",
            lags,
            let(
                "__pd_s",
                scores,
                let("__pd_p", peaks, let("__pd_best", best, let("__pd_out", padded, bag))),
            ),
        ),
    )
    return Typed(S.Template(text, [_values(a), lo, hi, count]), "dynamic")


def series_periods_validate_dynamic(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    if len(a) < 2:
        raise unsupported(
            n, "series_periods_validate(series, period1 [, period2 ...])", code="WrongArgumentCount"
        )
    periods = [cast_to(p, "real").sql for p in a[1:]]
    slots = ", ".join("{" + str(i + 1) + "}" for i in range(len(periods)))
    score = _score("toInt64(round(__pd_q))")
    bag = _bag("__pd_periods", f"arrayMap(__pd_q -> {score}, __pd_periods)")
    text = let("__pd_y", "{0}", let("__pd_periods", f"[{slots}]", bag))
    return Typed(S.Template(text, [_values(a), *periods]), "dynamic")


PERIOD_FUNCTIONS = {
    "series_periods_detect_dynamic": series_periods_detect_dynamic,
    "series_periods_validate_dynamic": series_periods_validate_dynamic,
}
_FIELDS = (("periods", "dynamic"), ("scores", "dynamic"))
PERIOD_MULTI_COLUMN = {
    "series_periods_detect": ("series_periods_detect_dynamic", _FIELDS),
    "series_periods_validate": ("series_periods_validate_dynamic", _FIELDS),
}
