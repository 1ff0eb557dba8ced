"""Numeric functions: arithmetic and trigonometry, rounding, `bin`, bit operations, hashes,
`format_bytes`."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.builders import (
    Builder,
    fn,
    registrar,
)
from bzrk.engine.compile.typed import (
    BIN_ORIGIN_TICKS,
    T,
    Typed,
    bin_floor_ticks,
    cast_to,
    from_ticks,
    lit,
    ticks,
    to_string,
)
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler

MATH_FUNCTIONS: dict[str, Builder] = {}
reg = registrar(MATH_FUNCTIONS)


# --- math ------------------------------------------------------------------------------------
reg("abs", fn("abs({0})", lambda a: "long" if a[0].type == "int" else a[0].type))
reg("sqrt", fn("if({0} < 0, nan, sqrt({0}))", conv="r"))
reg("exp", fn("exp({0})", conv="r"))
reg("exp2", fn("exp2({0})", conv="r"))
reg("exp10", fn("exp10({0})", conv="r"))
reg("log", fn("if({0} < 0, nan, log({0}))", conv="r"))
reg("log2", fn("if({0} < 0, nan, log2({0}))", conv="r"))
reg("log10", fn("if({0} < 0, nan, log10({0}))", conv="r"))
reg("log1p", fn("log1p({0})", conv="r"))
reg("pow", fn("pow({0}, {1})", conv="r"))
reg("pi", fn("pi()"))
reg("sin", fn("sin({0})", conv="r"))
reg("cos", fn("cos({0})", conv="r"))
reg("tan", fn("tan({0})", conv="r"))
reg("asin", fn("asin({0})", conv="r"))
reg("acos", fn("acos({0})", conv="r"))
reg("atan", fn("atan({0})", conv="r"))
reg("atan2", fn("atan2({0}, {1})", conv="r"))
reg("cot", fn("1 / tan({0})", conv="r"))
reg("degrees", fn("degrees({0})", conv="r"))
reg("radians", fn("radians({0})", conv="r"))
reg("sign", fn("toFloat64(sign({0}))", conv="r"))
reg("isnan", fn("isNaN({0})", conv="r"))
reg("isinf", fn("isInfinite({0})", conv="r"))
reg("isfinite", fn("isFinite({0})", conv="r"))
reg("gamma", fn("tgamma({0})", conv="r"))
reg("loggamma", fn("lgamma({0})", conv="r"))
# Each call of rand() or new_guid() draws its own value: ClickHouse computes identical
# expressions of a row once, so every call gets an argument of its own (ignored by the function).
_DRAWS = itertools.count(1)


def _rand(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    draw = T(f"randCanonical({next(_DRAWS)})")
    if not a:
        return Typed(draw, "real")
    # rand(N): a whole number in [0, N), typed real as Kusto types it.
    return Typed(T("floor({0} * {1})", draw, cast_to(a[0], "real").sql), "real")


reg("rand", _rand)


def _round(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    x = args[0]
    digits = cast_to(args[1], "long").sql if len(args) > 1 else lit(0)
    if x.type in ("int", "long"):
        return Typed(T("toInt64(round(toFloat64({0}), {1}))", x.sql, digits), x.type)
    from bzrk.kql.syntax import Literal

    # ClickHouse needs a constant precision to round a decimal.
    if x.type == "decimal" and (len(args) < 2 or isinstance(node.args[1], Literal)):
        # Decimals stay decimal; ClickHouse rounds them half away from zero, as KQL does.
        return Typed(T("round({0}, {1})", x.sql, digits), "decimal")
    # KQL rounds half away from zero.
    return Typed(T("round({0}, {1})", cast_to(x, "real").sql, digits), "real")


reg("round", _round)


def _ceiling(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    return Typed(T("ceil({0})", cast_to(args[0], "real").sql), "real")


reg("ceiling", _ceiling)


def _positive_literal(node: S.Expr) -> int | None:
    """The value of an integer literal (``toInt64(…)``-wrapped, as literals compile) above 0."""
    while isinstance(node, S.Template) and node.text == "toInt64({0})" and len(node.args) == 1:
        node = node.args[0]
    if isinstance(node, S.Lit) and type(node.value) is int and node.value > 0:
        return node.value
    return None


def bin_value(c: ExprCompiler, value: Typed, size: Typed, at: Typed | None = None) -> Typed:
    """KQL ``bin``/``floor``/``bin_at``: epoch-based buckets for datetimes, floor for numbers.

    A zero or negative bin size gives null, as the reference says.
    """
    bucket = (
        "if(toInt64({2}) <= 0, NULL, {1} + ({0} - {1}) - positiveModulo({0} - {1}, toInt64({2})))"
    )
    if value.type == "datetime":
        step = size.sql if size.type == "timespan" else cast_to(size, "long").sql
        constant = _positive_literal(step)
        if constant is not None and at is None:
            # A constant step: no zero check, so the bucket is not Nullable (cheaper to group).
            return Typed(from_ticks(bin_floor_ticks(ticks(value.sql), lit(constant))), "datetime")
        origin = (
            ticks(at.sql) if at is not None and at.type == "datetime" else lit(BIN_ORIGIN_TICKS)
        )
        return Typed(from_ticks(T(bucket, ticks(value.sql), origin, step)), "datetime")
    if value.type == "timespan":
        origin = at.sql if at is not None else lit(0)
        return Typed(T(bucket, value.sql, origin, size.sql), "timespan")
    if value.type in ("int", "long") and size.type in ("int", "long"):
        origin = at.sql if at is not None else lit(0)
        return Typed(T("toInt64(" + bucket + ")", value.sql, origin, size.sql), "long")
    x = cast_to(value, "real").sql
    origin = cast_to(at, "real").sql if at is not None else lit(0.0)
    step = cast_to(size, "real").sql
    return Typed(
        T("if({2} <= 0, NULL, {1} + floor(({0} - {1}) / {2}) * {2})", x, origin, step), "real"
    )


reg(
    "bin floor",
    lambda c, a, n: (
        bin_value(c, a[0], a[1])
        if len(a) > 1
        else Typed(T("floor({0})", cast_to(a[0], "real").sql), "real")
    ),
)
reg("bin_at", lambda c, a, n: bin_value(c, a[0], a[1], a[2]))

# --- hashes, guids, misc ---------------------------------------------------------------------
reg("new_guid", lambda c, a, n: Typed(T(f"generateUUIDv4({next(_DRAWS)})"), "guid"))
reg("binary_and", fn("bitAnd(toInt64({0}), toInt64({1}))"))
reg("binary_or", fn("bitOr(toInt64({0}), toInt64({1}))"))
reg("binary_xor", fn("bitXor(toInt64({0}), toInt64({1}))"))
reg("binary_not", fn("bitNot(toInt64({0}))"))
# value << (shift % 64), as the reference says; a negative shift is null
reg(
    "binary_shift_left",
    fn("if({1} < 0, NULL, bitShiftLeft(toInt64({0}), positiveModulo(toInt64({1}), 64)))"),
)
reg(
    "binary_shift_right",
    fn("if({1} < 0, NULL, bitShiftRight(toInt64({0}), positiveModulo(toInt64({1}), 64)))"),
)
reg("bitset_count_ones", fn("toInt64(bitCount(toInt64({0})))"))


def _hash(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    x = args[0]
    value = to_string(x) if x.type in ("string", "dynamic") else x.sql
    if x.type == "datetime":
        # .NET hashes the ticks since 0001-01-01.
        value = T("toInt64(reinterpretAsInt64({0}) + 621355968000000000)", x.sql)
    hashed = T("reinterpretAsInt64(xxHash64({0}))", value)
    if len(args) > 1:
        return Typed(
            T("positiveModulo({0}, toInt64({1}))", hashed, cast_to(args[1], "long").sql), "long"
        )
    return Typed(hashed, "long")


reg("hash hash_xxhash64", _hash)
reg("hash_combine", fn("reinterpretAsInt64(xxHash64(toInt64({0}), toInt64({1})))"))


def _around(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    if a[0].type == "datetime":
        return Typed(
            T("(abs({0} - {1}) <= {2})", ticks(a[0].sql), ticks(a[1].sql), a[2].sql), "bool"
        )
    values = [cast_to(x, "real").sql for x in a[:3]]
    return Typed(T("(abs({0} - {1}) <= {2})", *values), "bool")


reg("around", _around)
reg("erf", fn("erf({0})", conv="r"))
reg("erfc", fn("erfc({0})", conv="r"))


def _format_bytes(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    size = cast_to(args[0], "real").sql
    digits = cast_to(args[1], "long").sql if len(args) > 1 else lit(0)
    units = "['Bytes', 'KB', 'MB', 'GB', 'TB', 'PB', 'EB']"
    exponent = T("toUInt8(if({0} < 1024, 0, least(6, floor(log({0}) / log(1024)))))", size)
    if len(args) > 2 and isinstance(args[2].sql, S.Lit) and isinstance(args[2].sql.value, str):
        wanted = {"bytes": 0, "kb": 1, "mb": 2, "gb": 3, "tb": 4, "pb": 5, "eb": 6}.get(
            args[2].sql.value.lower()
        )
        if wanted is not None:
            exponent = T("toUInt8({0})", lit(wanted))
    return Typed(
        T(
            "concat(toString(round({0} / pow(1024, {2}), {1})), ' ', " + units + "[{2} + 1])",
            size,
            digits,
            exponent,
        ),
        "string",
    )


reg("format_bytes", _format_bytes)
