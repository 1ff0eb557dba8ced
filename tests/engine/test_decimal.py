"""KQL's decimal as Kusto's: .NET's System.Decimal (±79,228,162,514,264,337,593,543,950,335, 28
digits after the point), exact arithmetic, and null where a result leaves that range (ADX
documents no overflow answer; null, as its conversions that fail and divisions by zero give).

The answers are .NET's (`decimal.Multiply`, `decimal.Divide`, …) for the same operands."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text

MAX = "79228162514264337593543950335"


def one_row(backend: Any, query: str) -> tuple[list[str], list[Any]]:
    table = execute_text(backend, query).tables[0]
    assert len(table.rows) == 1, table.rows
    return [c.type for c in table.columns], table.rows[0]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # Was -20.847100762815390390: Decimal128(18) * Decimal128(18) has 2 integer digits left.
        ("decimal(100) * decimal(10)", Decimal("1000")),
        ("decimal(1.5) * decimal(2.0)", Decimal("3")),
        ("decimal(1.1) + decimal(2.2)", Decimal("3.3")),
        ("decimal(5.5) - decimal(2.2)", Decimal("3.3")),
        ("decimal(7.5) / decimal(2.5)", Decimal("3")),
        # 28 digits after the point, the last one rounded, as .NET divides.
        ("decimal(1) / decimal(3)", Decimal("0.3333333333333333333333333333")),
        ("decimal(2) / decimal(3)", Decimal("0.6666666666666666666666666667")),
        # 28 and 29 digits before the point (Decimal128(18) held 20).
        ("decimal(9999999999999999999999999999) + decimal(1)", Decimal("1" + "0" * 28)),
        (f"decimal({MAX}) - decimal(1)", Decimal("79228162514264337593543950334")),
        ("decimal(1e28) * decimal(7)", Decimal("7e28")),
        # decimal with long or int stays decimal
        ("decimal(1.5) * 3", Decimal("4.5")),
        ("decimal(2.5) * int(4)", Decimal("10")),
        ("todecimal(9223372036854775807) * decimal(2)", Decimal(2 * (2**63 - 1))),
        ("decimal(-5) % decimal(1.5)", Decimal("1")),
        ("decimal(0.1) + decimal(0.2) == decimal(0.3)", True),
    ],
)
def test_decimal_arithmetic_is_exact_over_dotnets_range(
    chdb_backend, expr: str, expected: Any
) -> None:  # type: ignore[no-untyped-def]
    _, row = one_row(chdb_backend, f"print r = {expr}")
    assert row == [expected]


@pytest.mark.parametrize(
    "expr",
    [
        # Past 7.9e28 (.NET's OverflowException): were ClickHouse's "Decimal value is too big".
        "decimal(9999999999999999999999999999) * decimal(10)",
        "decimal(1e20) * decimal(1e20)",
        "decimal(1e28) * decimal(1e28)",
        f"decimal({MAX}) + decimal(1)",
        f"decimal(-{MAX}) - decimal(0.5)",
        f"decimal({MAX}) / decimal(0.0000000000000000000000000001)",
        # division and modulo by zero, as for long and real
        "decimal(1) / decimal(0)",
        "decimal(2) % decimal(0)",
    ],
)
def test_a_decimal_result_past_the_range_is_null(chdb_backend, expr: str) -> None:  # type: ignore[no-untyped-def]
    types, row = one_row(chdb_backend, f"print r = {expr}")
    assert (types, row) == (["decimal"], [None])


def test_decimal_with_real_is_real(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # ADX's numerical operators: "if one of the operands is of type real, the result is real".
    types, row = one_row(chdb_backend, "print decimal(1.5) + 1.5, decimal(1e28) * 1e10")
    assert types == ["real", "real"] and row == [3.0, pytest.approx(1e38)]


def test_conversions_to_decimal_past_the_range_are_null(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    query = (
        f"print todecimal('1e40'), todecimal(1e40), todecimal(real(inf)), todecimal('{MAX}'),"
        " todecimal(' 7.25 '), todecimal('abc'), todecimal(parse_json('1e40')), todecimal(3)"
    )
    _, row = one_row(chdb_backend, query)
    assert row == [None, None, None, Decimal(MAX), Decimal("7.25"), None, None, Decimal("3")]


def test_a_decimal_literal_past_the_range_is_a_located_syntax_error(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    for literal in ("1e40", "79228162514264337593543950336"):
        with pytest.raises(QueryError) as caught:
            execute_text(chdb_backend, f"print d = decimal({literal})")
        assert caught.value.code == "ParseError" and "decimal literal" in caught.value.message
        assert caught.value.location is not None and caught.value.location.start_byte == 18
    _, row = one_row(chdb_backend, f"print decimal({MAX}), decimal(-{MAX})")
    assert row == [Decimal(MAX), -Decimal(MAX)]


def test_decimal_columns_with_nulls_and_zeros_compute_without_engine_errors(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # ClickHouse computes under a null's mask too: a null divisor must not divide by its 0.
    query = (
        "datatable(a:decimal, b:decimal)[1, 0, 2, 3, decimal(null), 1, 5, decimal(null)]"
        " | extend q = a / b, r = a % b, p = a * b, s = a - b"
    )
    table = execute_text(chdb_backend, query).tables[0]
    assert table.rows == [
        [Decimal(1), Decimal(0), None, None, Decimal(0), Decimal(1)],
        [Decimal(2), Decimal(3), Decimal("0.6666666666666666666666666667"), 2, 6, -1],
        [None, Decimal(1), None, None, None, None],
        [Decimal(5), None, None, None, None, None],
    ]


def test_decimal_text_and_aggregates(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, row = one_row(
        chdb_backend,
        "print tostring(decimal(1.50)), tostring(decimal(100) * decimal(10)), strcat(decimal(2.5), 'x')",
    )
    assert row == ["1.5", "1000", "2.5x"]
    query = (
        "range i from 1 to 10 step 1 | extend d = decimal(0.1)"
        " | summarize s = sum(d), a = avg(d), lo = min(d), hi = max(d)"
    )
    types, row = one_row(chdb_backend, query)
    # sum of decimals is an exact decimal (ten 0.1 are 1, not 0.9999999999999999)
    tenth = Decimal("0.1")
    assert (types, row) == (["decimal", "real", "decimal", "decimal"], [1, 0.1, tenth, tenth])
    assert isinstance(row[0], Decimal) and row[0] == Decimal(1)
