"""series_fft and series_ifft: the discrete Fourier transform of a complex series.

Both return two series, the real and the imaginary parts (``extend (re, im) = series_fft(y)``;
unnamed, ``series_fft_y_real`` and ``series_fft_y_imag``, as Kusto.Language names them). The
transform is computed directly, X_k = Σ_j x_j·e^(∓2πi·jk/n), as one ClickHouse array expression:
any length (not only powers of two), O(n²) per series: about 0.5 s for a 2,000-point series
on this 2-core machine.
The inverse divides by n, so ``series_ifft(series_fft(y))`` gives ``y`` back, as the ADX
reference's second example shows. The angle is taken from ``(j·k) mod n`` so that it stays in
[0, 2π) and loses no precision on long series. A null or non-numeric element counts as 0; an
imaginary part shorter than the real one is padded with zeros. A series of more than
``MAX_POINTS`` points gives null.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.builders import Builder
from bzrk.engine.compile.functions.series.core import numbers
from bzrk.engine.compile.functions.series.decompose import let
from bzrk.engine.compile.typed import T, Typed

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

_FIELDS = (("real", "dynamic"), ("imag", "dynamic"))
# The longest series transformed: n² terms, held in memory per row (4,096 points take ~2 s
# here; 16,384 passed ClickHouse's 4 GiB query limit).
MAX_POINTS = 4_096


def _transform(inverse: bool) -> str:
    """The bag {"real": [...], "imag": [...]} of __ft_r, __ft_i (Array(Float64), length __ft_n)."""
    sign = "-" if inverse else "+"
    angle = "(2 * pi() * ((__ft_j * __ft_k) % __ft_n) / __ft_n)"
    # (r + i·im)(cos θ ∓ i·sin θ): forward uses e^(-iθ), inverse e^(+iθ).
    real = (
        f"arraySum(arrayMap((__ft_a, __ft_b, __ft_j) -> __ft_a * cos({angle}) {sign} __ft_b * sin({angle}), "
        "__ft_r, __ft_i, range(__ft_n)))"
    )
    imag_sign = "+" if inverse else "-"
    imag = (
        f"arraySum(arrayMap((__ft_a, __ft_b, __ft_j) -> __ft_b * cos({angle}) {imag_sign} __ft_a * sin({angle}), "
        "__ft_r, __ft_i, range(__ft_n)))"
    )
    scale = " / __ft_n" if inverse else ""
    spectrum = f"arrayMap(__ft_k -> ({real}{scale}, {imag}{scale}), range(__ft_n))"
    return let(
        "__ft_s",
        spectrum,
        "concat('{{\"real\":', toJSONString(arrayMap(__ft_p -> __ft_p.1, __ft_s)), "
        "',\"imag\":', toJSONString(arrayMap(__ft_p -> __ft_p.2, __ft_s)), '}}')",
    )


def _builder(inverse: bool) -> Builder:
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        real = T("arrayMap(v -> ifNull(v, 0.), {0})", numbers(a[0]))
        has_imag = len(a) > 1 and not (isinstance(a[1].sql, S.Lit) and a[1].sql.value is None)
        imag = T("arrayMap(v -> ifNull(v, 0.), {0})", numbers(a[1])) if has_imag else T("[0.]")
        padded = (
            "arrayMap(__ft_j -> if(__ft_j <= length(__ft_i0), __ft_i0[__ft_j], 0.), "
            "range(1, __ft_n + 1))"
        )
        # A series past MAX_POINTS is null, computed over nothing: O(n²) in time and memory.
        text = let(
            "__ft_r0",
            "{0}",
            let(
                "__ft_r",
                f"if(length(__ft_r0) > {MAX_POINTS}, CAST([], 'Array(Float64)'), __ft_r0)",
                let(
                    "__ft_n",
                    "toUInt64(length(__ft_r))",
                    let(
                        "__ft_i0",
                        "{1}" if has_imag else "CAST([], 'Array(Float64)')",
                        let(
                            "__ft_i",
                            padded,
                            f"if(length(__ft_r0) > {MAX_POINTS}, NULL, {_transform(inverse)})",
                        ),
                    ),
                ),
            ),
        )
        return Typed(S.Template(text, [real, imag]), "dynamic")

    return build


FOURIER_FUNCTIONS = {
    "series_fft_dynamic": _builder(inverse=False),
    "series_ifft_dynamic": _builder(inverse=True),
}
FOURIER_MULTI_COLUMN = {
    "series_fft": ("series_fft_dynamic", _FIELDS),
    "series_ifft": ("series_ifft_dynamic", _FIELDS),
}
