"""Engine fixes found by the conformance corpora (issue #4), checked on inline data."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from bzrk.engine.oneshot import execute_text

CASES = [
    # integer series stay integers (interpolated values truncated); real series interpolate
    (
        "print a=dynamic([null, 111, null, 36, 41, null, null, 16, 61, 33, null, null]) "
        "| project f = series_fill_linear(a), e = series_fill_linear(a, double(null), false)",
        [
            [
                [111, 111, 73, 36, 41, 32, 24, 16, 61, 33, 33, 33],
                [None, 111, 73, 36, 41, 32, 24, 16, 61, 33, None, None],
            ]
        ],
    ),
    (
        "print f = series_fill_linear(dynamic([1.0, null, 2])), "
        "c = series_fill_linear(dynamic([null, null]), double(null), true, 3.5), "
        "z = series_fill_linear(dynamic([null, null])), "
        "p = series_fill_linear(dynamic([1, 0, 0, 4]), 0)",
        [[[1, 1.5, 2], [3.5, 3.5], [0, 0], [1, 2, 3, 4]]],
    ),
    # a scalar side is broadcast, the longer series is cut, non-numbers are skipped
    (
        "print a = series_dot_product(dynamic([1, 2, 4]), 2), "
        "b = series_dot_product(3, dynamic([1, 2])), "
        "c = series_dot_product(dynamic([1, 2, 3]), dynamic([10, 'x'])), "
        "d = series_dot_product(dynamic([]), dynamic([1]))",
        [[14.0, 9.0, 10.0, None]],
    ),
    # bag_unpack with an output schema: `*` keeps the input columns, unlisted keys are dropped
    (
        "datatable(d: dynamic, Description: string, x: long) "
        '[dynamic({"Name": "John", "Age": 20, "height": 180}), "Student", 1] '
        "| evaluate bag_unpack(d) : (*, Name: string, Age: long)",
        [["Student", 1, "John", 20]],
    ),
    # without `*` the schema is the whole output, in its order
    (
        "datatable(d: dynamic, Description: string, x: long) "
        '[dynamic({"Name": "John", "Age": 20, "height": 180}), "Student", 1] '
        "| evaluate bag_unpack(d) : (Age: long, Description: string, Name: string)",
        [[20, "Student", "John"]],
    ),
    # real → decimal keeps 15 significant digits (as .NET does), not the binary expansion
    (
        "datatable(a: decimal) [1.1, 2.2, 3.3] | summarize total = sum(a)",
        [[Decimal("6.6")]],
    ),
    ("print todecimal(0.1 + 0.2), todecimal(-2.5e-3)", [[Decimal("0.3"), Decimal("-0.0025")]]),
    # round() of a decimal is a decimal, half away from zero
    (
        "print round(decimal(3.14159), 2), round(decimal(-2.345), 2), round(decimal(2.5))",
        [[Decimal("3.14"), Decimal("-2.35"), Decimal("3")]],
    ),
    # `0x` text converts like a hex literal; anything else that is no number is null
    (
        "print tolong('0xa0'), toint(' 0x10 '), tolong('0xzz'), tolong('12'), tolong('-5')",
        [[160, 16, None, 12, -5]],
    ),
    # project with a window function keeps the serialized order of its input
    (
        "let t = datatable(v: long) [1, 2, 3]; union t, t | serialize "
        "| project cs = row_cumsum(v, false)",
        [[1], [3], [6], [7], [9], [12]],
    ),
    (
        "range x from 1 to 5 step 1 | sort by x desc | project x, p = prev(x)",
        [[5, None], [4, 5], [3, 4], [2, 3], [1, 2]],
    ),
]


@pytest.mark.parametrize("kql,want", CASES)
def test_engine_fix(chdb_backend: Any, kql: str, want: list[list[Any]]) -> None:
    assert execute_text(chdb_backend, kql).tables[0].rows == want
