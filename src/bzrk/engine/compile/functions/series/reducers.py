"""Berserk's series reducers: one number from a series (`series_max(s)`, `series_min`, …).

The vendor's canonical metric query ranks series with ``top 1000 by series_max(value) desc``.
Null and non-numeric elements are skipped; a series with no number in it gives null (so a
series of nulls sorts last), and so does a value that is not an array.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine.compile.functions.builders import Builder
from bzrk.engine.compile.functions.series.core import numbers
from bzrk.engine.compile.typed import T, Typed

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

# The reduction of the series' numbers ``p``, an Array(Float64) with at least one element.
_REDUCERS = {
    "series_max": "arrayMax(p)",
    "series_min": "arrayMin(p)",
    "series_sum": "arraySum(p)",
    "series_avg": "arrayAvg(p)",
}


def _reducer(template: str) -> Builder:
    def build(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
        present = T(
            "arrayMap(x -> assumeNotNull(x), arrayFilter(x -> isNotNull(x), {0}))",
            numbers(a[0]) if a[0].type == "dynamic" else T("emptyArrayFloat64()"),
        )
        # The numbers are bound once (a lambda over a one-element array), then reduced.
        return Typed(
            T("arrayMap(p -> if(empty(p), NULL, " + template + "), [{0}])[1]", present), "real"
        )

    return build


REDUCER_FUNCTIONS: dict[str, Builder] = {name: _reducer(t) for name, t in _REDUCERS.items()}
