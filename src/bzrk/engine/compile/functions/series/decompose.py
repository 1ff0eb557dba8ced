"""Seasonal decomposition series functions, as ClickHouse array expressions.

series_seasonal, series_decompose, series_decompose_anomalies, series_decompose_forecast and
series_outliers share one model (the documented one):

- the period is given, or detected as the lag in [4, n/4] with the highest autocorrelation
  when that correlation reaches the seasonality threshold (none otherwise);
- the seasonal component is the median of the training values at the same phase;
- the trend is fitted to the de-seasonalised training values: `avg` (their mean), `linefit`
  (least squares line, extrapolated) or `none`;
- baseline = seasonal + trend; residual = value - baseline;
- anomaly scores use Tukey's fences on the residuals (10th/90th percentile for `ctukey`); a zero
  fence range falls back to the mean absolute distance from the fence (see `_scores`).

The training part is the series without its last `test_points` values (forecasting extends
the baseline over them). A value is bound once with `arrayMap(name -> body, [value])[1]`,
which keeps the generated SQL linear in size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.functions.series.core import numbers
from bzrk.engine.compile.typed import T, Typed, cast_to, lit

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K


def let(name: str, value: str, body: str) -> str:
    return f"arrayMap({name} -> {body}, [{value}])[1]"


def _json(text: str) -> str:
    return f"toJSONString({text})"


def _arg(a: list[Typed], index: int, kql_type: str, default: object) -> S.Expr:
    if len(a) > index:
        sql = a[index].sql
        if not (isinstance(sql, S.Lit) and sql.value is None):
            return cast_to(a[index], kql_type).sql
    return lit(default)


def _literal_text(n: K.Call, index: int, default: str, allowed: tuple[str, ...]) -> str:
    from bzrk.kql import syntax as K

    if len(n.args) <= index:
        return default
    node = n.args[index]
    if isinstance(node, K.Literal) and node.value is None:
        return default
    if not isinstance(node, K.Literal) or not isinstance(node.value, str):
        raise unsupported(node, f"{n.name}: expected a string literal", code="InvalidArgument")
    value = node.value.lower()
    if value not in allowed:
        raise unsupported(
            node, f"{n.name}: expected one of {', '.join(allowed)}", code="InvalidArgument"
        )
    return value


MAX_DETECTED_PERIOD = 400

# SQL over the bound names: __sd_y (Array(Float64)), __sd_n (training length).
_PEARSON = "if(isFinite(__sd_r), __sd_r, 0)"  # a constant stretch has no correlation


def _acf(lag: str) -> str:
    a = "arraySlice(__sd_t, 1, length(__sd_t) - " + lag + ")"
    b = "arraySlice(__sd_t, " + lag + " + 1)"
    body = (
        "arraySum(arrayMap((__sd_u, __sd_w) -> (__sd_u - arrayAvg(__sd_a)) * (__sd_w - arrayAvg(__sd_b)), __sd_a, __sd_b))"
        " / sqrt(arraySum(arrayMap(__sd_u -> pow(__sd_u - arrayAvg(__sd_a), 2), __sd_a))"
        " * arraySum(arrayMap(__sd_w -> pow(__sd_w - arrayAvg(__sd_b), 2), __sd_b)))"
    )
    return let("__sd_a", a, let("__sd_b", b, let("__sd_r", body, _PEARSON)))


def _period(period: str, threshold: str) -> str:
    """The period to use: the given one, or (for -1) the detected one; 0 means none."""
    # Periods from 4 to n/4 (at most MAX_DETECTED_PERIOD: every candidate costs a pass).
    candidates = (
        "arrayMap(__sd_c -> toInt64(__sd_c), range(4, toUInt64(greatest(least(intDiv(length(__sd_t), 4), "
        f"{MAX_DETECTED_PERIOD}), 3)) + 1))"
    )
    scores = "arrayMap(__sd_p -> " + _acf("__sd_p") + ", __sd_cands)"
    detected = let(
        "__sd_cands",
        candidates,
        let(
            "__sd_sc",
            scores,
            "if(length(__sd_cands) = 0 OR arrayMax(__sd_sc) < "
            + threshold
            + ", toInt64(0), __sd_cands[indexOf(__sd_sc, arrayMax(__sd_sc))])",
        ),
    )
    return f"if({period} < 0, {detected}, toInt64({period}))"


def _seasonal() -> str:
    """Per-phase medians of the training values (__sd_t), over the whole length __sd_len.

    The (phase, value) pairs are sorted by phase and split into one group per phase, so the
    cost is O(n log n) whatever the period.
    """
    pairs = (
        "arraySort(__sd_x -> __sd_x.1, arrayMap((__sd_v, __sd_j) -> tuple(toInt64(__sd_j - 1) % __sd_per, __sd_v), "
        "__sd_t, range(1, length(__sd_t) + 1)))"
    )
    groups = (
        "arraySplit((__sd_x, __sd_k) -> __sd_k > 1 AND __sd_x.1 != __sd_pairs[__sd_k - 1].1, "
        "__sd_pairs, arrayEnumerate(__sd_pairs))"
    )
    medians = (
        "arrayMap(__sd_g -> arrayReduce('quantileExactInclusive(0.5)', arrayMap(__sd_x -> __sd_x.2, __sd_g)), "
        + groups
        + ")"
    )
    per_phase = let(
        "__sd_pairs",
        pairs,
        let(
            "__sd_med",
            medians,
            "arrayMap(__sd_i -> __sd_med[toInt64(__sd_i - 1) % __sd_per + 1], range(1, __sd_len + 1))",
        ),
    )
    # A period longer than the training part leaves phases without values: no seasonality.
    return (
        "if(__sd_per <= 1 OR __sd_per > length(__sd_t), "
        "arrayMap(__sd_i -> toFloat64(0), range(1, __sd_len + 1)), " + per_phase + ")"
    )


def _trend(kind: str) -> str:
    """The trend over the whole length, fitted to the de-seasonalised training values __sd_d."""
    if kind == "none":
        return "arrayMap(__sd_i -> toFloat64(0), range(1, __sd_len + 1))"
    if kind == "avg":
        return "arrayMap(__sd_i -> arrayAvg(__sd_d), range(1, __sd_len + 1))"
    xs = "range(1, length(__sd_d) + 1)"
    slope = (
        f"(length(__sd_d) * arraySum(arrayMap((__sd_v, __sd_i) -> __sd_v * __sd_i, __sd_d, {xs})) "
        f"- arraySum(__sd_d) * arraySum({xs})) / (length(__sd_d) * arraySum(arrayMap(__sd_i -> __sd_i * __sd_i, {xs})) "
        f"- pow(arraySum({xs}), 2))"
    )
    slope = f"if(length(__sd_d) < 2, 0, {slope})"
    intercept = f"(arraySum(__sd_d) - __sd_s * arraySum({xs})) / length(__sd_d)"
    return let(
        "__sd_s",
        slope,
        let(
            "__sd_b",
            intercept,
            "arrayMap(__sd_i -> __sd_s * __sd_i + __sd_b, range(1, __sd_len + 1))",
        ),
    )


def _components(kind: str, body: str) -> str:
    """Binds __sd_seas, __sd_trend, __sd_base (whole length) around `body`.

    Needs __sd_y (values), __sd_len, __sd_t (training values), __sd_per (period). A first
    trend fit on the raw values lets the phase medians see a flat series; the trend is then
    fitted again on the de-seasonalised values.
    """
    deseasoned = "arrayMap((__sd_v, __sd_s) -> __sd_v - __sd_s, __sd_t, arraySlice(__sd_seas, 1, length(__sd_t)))"
    detrended = "arrayMap((__sd_v, __sd_s) -> __sd_v - __sd_s, __sd_t, arraySlice(__sd_trend0, 1, length(__sd_t)))"
    seasonal = let("__sd_t", detrended, _seasonal())
    return let(
        "__sd_d",
        "__sd_t",
        let(
            "__sd_trend0",
            _trend(kind),
            let(
                "__sd_seas",
                seasonal,
                let(
                    "__sd_d",
                    deseasoned,
                    let(
                        "__sd_trend",
                        _trend(kind),
                        let(
                            "__sd_base",
                            "arrayMap((__sd_a, __sd_b) -> __sd_a + __sd_b, __sd_seas, __sd_trend)",
                            body,
                        ),
                    ),
                ),
            ),
        ),
    )


def _model(values: str, period: str, threshold: str, test_points: str, kind: str, body: str) -> str:
    training = (
        "arraySlice(__sd_y, 1, greatest(toInt64(length(__sd_y)) - toInt64(" + test_points + "), 1))"
    )
    return let(
        "__sd_y",
        values,
        let(
            "__sd_len",
            "length(__sd_y)",
            let(
                "__sd_t",
                training,
                let("__sd_per", _period(period, threshold), _components(kind, body)),
            ),
        ),
    )


def _values(a: list[Typed]) -> S.Expr:

    return T("arrayMap(v -> toFloat64(ifNull(v, 0)), {0})", numbers(a[0]))


def _scores(residual: str, low_pct: str, high_pct: str) -> str:
    """Tukey-fence scores of `residual` (percentiles over the training part).

    Where the percentile range is zero (most points equal: a flat series with a spike), a
    distance is measured in the mean absolute distance of the training points from the fence
    instead, so the spike scores high rather than 0 (ADX documents no rule for this case); a
    series with no spread at all scores 0 everywhere."""
    return let(
        "__sd_res",
        residual,
        let(
            "__sd_lo",
            f"arrayReduce(concat('quantileExactInclusive(', toString({low_pct}), ')'), "
            "arraySlice(__sd_res, 1, length(__sd_t)))",
            let(
                "__sd_hi",
                f"arrayReduce(concat('quantileExactInclusive(', toString({high_pct}), ')'), arraySlice(__sd_res, 1, length(__sd_t)))",
                let(
                    "__sd_eps",
                    "1e-9 * greatest(1, arrayMax(arrayMap(__sd_v -> abs(__sd_v), __sd_res)))",
                    let(
                        "__sd_rng",
                        "if(__sd_hi - __sd_lo > __sd_eps, __sd_hi - __sd_lo, "
                        "arrayAvg(arrayMap(__sd_v -> abs(__sd_v - __sd_hi), arraySlice(__sd_res, 1, length(__sd_t)))))",
                        "arrayMap(__sd_v -> multiIf(__sd_rng <= __sd_eps, toFloat64(0), __sd_v > __sd_hi, "
                        "(__sd_v - __sd_hi) / __sd_rng, __sd_v < __sd_lo, (__sd_v - __sd_lo) / __sd_rng, "
                        "toFloat64(0)), __sd_res)",
                    ),
                ),
            ),
        ),
    )


def series_seasonal(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    text = _model("{0}", "{1}", "0.6", "0", "none", _json("__sd_seas"))
    return Typed(S.Template(text, [_values(a), _arg(a, 1, "long", -1)]), "dynamic")


def series_decompose(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    kind = _literal_text(n, 2, "avg", ("avg", "linefit", "none"))
    bag = (
        "concat('{{\"baseline\":', "
        + _json("__sd_base")
        + ", ',\"seasonal\":', "
        + _json("__sd_seas")
        + ", ',\"trend\":', "
        + _json("__sd_trend")
        + ", ',\"residual\":', "
        + _json("arrayMap((__sd_v, __sd_b) -> __sd_v - __sd_b, __sd_y, __sd_base)")
        + ", '}}')"
    )
    text = _model("{0}", "{1}", "{3}", "{2}", kind, bag)
    args = [_values(a), _arg(a, 1, "long", -1), _arg(a, 3, "long", 0), _arg(a, 4, "real", 0.6)]
    return Typed(S.Template(text, args), "dynamic")


def series_decompose_anomalies(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    kind = _literal_text(n, 3, "linefit", ("avg", "linefit", "none"))
    method = _literal_text(n, 5, "ctukey", ("ctukey", "tukey"))
    low, high = ("0.1", "0.9") if method == "ctukey" else ("0.25", "0.75")
    residual = "arrayMap((__sd_v, __sd_b) -> __sd_v - __sd_b, __sd_y, __sd_base)"
    flags = "arrayMap(__sd_x -> multiIf(__sd_x > {1}, 1, __sd_x < -{1}, -1, 0), __sd_score)"
    bag = (
        "concat('{{\"ad_flag\":', "
        + _json(flags)
        + ", ',\"ad_score\":', "
        + _json("__sd_score")
        + ", ',\"baseline\":', "
        + _json("__sd_base")
        + ", '}}')"
    )
    body = let("__sd_score", _scores(residual, low, high), bag)
    text = _model("{0}", "{2}", "{4}", "{3}", kind, body)
    args = [
        _values(a),
        _arg(a, 1, "real", 1.5),
        _arg(a, 2, "long", -1),
        _arg(a, 4, "long", 0),
        _arg(a, 6, "real", 0.6),
    ]
    return Typed(S.Template(text, args), "dynamic")


def series_decompose_forecast(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    if len(a) < 2:
        raise unsupported(
            n, "series_decompose_forecast(series, points, ...)", code="WrongArgumentCount"
        )
    kind = _literal_text(n, 3, "linefit", ("avg", "linefit", "none"))
    text = _model("{0}", "{2}", "{3}", "{1}", kind, _json("__sd_base"))
    args = [_values(a), _arg(a, 1, "long", 0), _arg(a, 2, "long", -1), _arg(a, 4, "real", 0.6)]
    return Typed(S.Template(text, args), "dynamic")


def series_outliers(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    method = _literal_text(n, 1, "ctukey", ("ctukey", "tukey"))
    default_low, default_high = (10.0, 90.0) if method == "ctukey" else (25.0, 75.0)
    low = _arg(a, 3, "real", default_low) if method == "ctukey" else lit(default_low)
    high = _arg(a, 4, "real", default_high) if method == "ctukey" else lit(default_high)
    text = let(
        "__sd_y",
        "{0}",
        let("__sd_t", "__sd_y", _json(_scores("__sd_y", "({1} / 100)", "({2} / 100)"))),
    )
    return Typed(S.Template(text, [_values(a), low, high]), "dynamic")


DECOMPOSE_FUNCTIONS = {
    "series_seasonal": series_seasonal,
    "series_decompose_dynamic": series_decompose,
    "series_decompose_anomalies_dynamic": series_decompose_anomalies,
    "series_decompose_forecast": series_decompose_forecast,
    "series_outliers": series_outliers,
}

DECOMPOSE_MULTI_COLUMN = {
    "series_decompose": (
        "series_decompose_dynamic",
        (
            ("baseline", "dynamic"),
            ("seasonal", "dynamic"),
            ("trend", "dynamic"),
            ("residual", "dynamic"),
        ),
    ),
    "series_decompose_anomalies": (
        "series_decompose_anomalies_dynamic",
        (("ad_flag", "dynamic"), ("ad_score", "dynamic"), ("baseline", "dynamic")),
    ),
}
