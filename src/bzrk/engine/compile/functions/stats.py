"""Statistical scalar functions: the beta distribution and Welch's t-test.

The regularized incomplete beta function is the classic continued fraction (modified Lentz,
as in Numerical Recipes' ``betacf``) unrolled into an ``arrayFold``; beta_inv bisects it.
``ln Γ`` at its poles (0, -1, …) is +∞ here, so the density prefactor vanishes there, which
is what Kusto answers for such parameters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine.compile.typed import T, Typed, cast_to

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

_ITERATIONS = 200
_FPMIN = "1e-300"


def _lgamma(v: str) -> str:
    return f"if(isNaN(lgamma({v})), inf, lgamma({v}))"


def _guard(v: str) -> str:
    return f"if(abs({v}) < {_FPMIN}, {_FPMIN}, {v})"


def _continued_fraction(x: str, a: str, b: str) -> str:
    """Lentz's evaluation of the incomplete beta continued fraction (state: c, d, h)."""
    m = "toFloat64(__m)"
    even = f"({m} * ({b} - {m}) * {x} / (({a} - 1 + 2 * {m}) * ({a} + 2 * {m})))"
    odd = f"(-({a} + {m}) * ({a} + {b} + {m}) * {x} / (({a} + 2 * {m}) * ({a} + 1 + 2 * {m})))"
    d1 = "(1 / " + _guard(f"1 + {even} * __cf.2") + ")"
    c1 = _guard(f"1 + {even} / __cf.1")
    step = (
        "arrayMap(__e -> arrayMap(__o -> tuple(__o.1, __o.2, __e.3 * __o.1 * __o.2), [tuple("
        + _guard(f"1 + {odd} / __e.1")
        + ", 1 / "
        + _guard(f"1 + {odd} * __e.2")
        + ")])[1], [tuple("
        + c1
        + ", "
        + d1
        + ", __cf.3 * "
        + c1
        + " * "
        + d1
        + ")])[1]"
    )
    d0 = "(1 / " + _guard(f"1 - ({a} + {b}) * {x} / ({a} + 1)") + ")"
    return (
        f"arrayFold((__cf, __m) -> {step}, range(1, {_ITERATIONS + 1}), "
        f"tuple(toFloat64(1), toFloat64({d0}), toFloat64({d0}))).3"
    )


def _incomplete_beta(x: str, a: str, b: str) -> str:
    """I_x(a, b) for 0 <= x <= 1 (the fraction converges fast on the side chosen)."""
    front = (
        f"exp({_lgamma(f'{a} + {b}')} - {_lgamma(a)} - {_lgamma(b)} "
        f"+ {a} * log({x}) + {b} * log(1 - {x}))"
    )
    direct = f"if({front} = 0, 0, {front} * {_continued_fraction(x, a, b)} / {a})"
    swapped = f"1 - if({front} = 0, 0, {front} * {_continued_fraction(f'(1 - {x})', b, a)} / {b})"
    return (
        f"multiIf({x} <= 0, 0., {x} >= 1, 1., "
        f"{x} < ({a} + 1) / ({a} + {b} + 2), {direct}, {swapped})"
    )


def _reals(args: list[Typed]) -> list[Typed]:
    return [cast_to(v, "real") for v in args[:3]]


def beta_cdf(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    x, a, b = _reals(args)
    return Typed(
        T(
            "arrayMap(__x -> arrayMap(__a -> arrayMap(__b -> if(__x < 0 OR __x > 1, nan, "
            + _incomplete_beta("__x", "__a", "__b")
            + "), [ifNull({2}, nan)])[1], [ifNull({1}, nan)])[1], [ifNull({0}, nan)])[1]",
            x.sql,
            a.sql,
            b.sql,
        ),
        "real",
    )


def beta_pdf(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    x, a, b = _reals(args)
    return Typed(
        T(
            "if({0} < 0 OR {0} > 1 OR {1} <= 0 OR {2} <= 0, nan, exp(lgamma({1} + {2}) - lgamma({1}) "
            "- lgamma({2}) + ({1} - 1) * log({0}) + ({2} - 1) * log(1 - {0})))",
            x.sql,
            a.sql,
            b.sql,
        ),
        "real",
    )


def beta_inv(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """Bisection on beta_cdf; null for p outside [0, 1], NaN for non-positive shapes."""
    p, a, b = _reals(args)
    mid = "((__s.1 + __s.2) / 2)"
    search = (
        "arrayFold((__s, __i) -> if("
        + _incomplete_beta(mid, "__a", "__b")
        + " < __p, tuple("
        + mid
        + ", __s.2), tuple(__s.1, "
        + mid
        + ")), range(60), tuple(toFloat64(0), toFloat64(1)))"
    )
    return Typed(
        T(
            "arrayMap(__p -> arrayMap(__a -> arrayMap(__b -> if(__p < 0 OR __p > 1, NULL, "
            "if(__a <= 0 OR __b <= 0, nan, arrayMap(__s -> (__s.1 + __s.2) / 2, ["
            + search
            + "])[1])), [ifNull({2}, nan)])[1], [ifNull({1}, nan)])[1], [ifNull({0}, nan)])[1]",
            p.sql,
            a.sql,
            b.sql,
        ),
        "real",
    )


def welch_test(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """Two-sided p-value of Welch's t-test from two samples' mean, variance and count."""
    m1, v1, n1, m2, v2, n2 = (cast_to(v, "real").sql for v in args[:6])
    # Student's t tail: P(|T| > t) = I_{df / (df + t²)}(df / 2, 1 / 2).
    p_value = _incomplete_beta("(__w.2 / (__w.2 + __w.1 * __w.1))", "(__w.2 / 2)", "0.5")
    return Typed(
        T(
            "arrayMap(__w -> " + p_value + ", [tuple("
            "toFloat64(ifNull(({0} - {3}) / sqrt({1} / {2} + {4} / {5}), nan)), "
            "toFloat64(ifNull(pow({1} / {2} + {4} / {5}, 2) / (pow({1} / {2}, 2) / ({2} - 1) "
            "+ pow({4} / {5}, 2) / ({5} - 1)), nan)))])[1]",
            m1,
            v1,
            n1,
            m2,
            v2,
            n2,
        ),
        "real",
    )


STATS_FUNCTIONS = {
    "welch_test": welch_test,
    "beta_cdf": beta_cdf,
    "beta_pdf": beta_pdf,
    "beta_inv": beta_inv,
}
