"""Conversions (`tolong`, `todatetime`, `parse_json`, `tohex`, `toguid`, …), null and emptiness
tests, and the conditional functions (`iff`, `case`, `coalesce`, `max_of`, `min_of`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile import bag_paths
from bzrk.engine.compile.functions.builders import (
    Builder,
    registrar,
    unify,
)
from bzrk.engine.compile.literals import literal
from bzrk.engine.compile.typed import (
    T,
    Typed,
    cast_to,
    datetime_from_text,
    decimal_from_text,
    extract_as,
    from_dynamic,
    from_ticks,
    lit,
    parse_timespan,
    ticks,
    to_json,
    to_string,
    typed_null,
)
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler

CONVERSION_FUNCTIONS: dict[str, Builder] = {}
reg = registrar(CONVERSION_FUNCTIONS)


def parse_json(value: Typed) -> Typed:
    if value.type == "dynamic":
        return value
    if value.type == "string":
        if isinstance(value.sql, S.Lit) and isinstance(value.sql.value, str):
            if not value.sql.value.strip():
                return literal("dynamic", None)
            try:
                parsed = json.loads(value.sql.value)
            except ValueError:
                return Typed(T("toJSONString({0})", value.sql), "dynamic")
            return literal("dynamic", parsed)
        # Empty text is null; text that is not JSON stays a string value.
        return Typed(
            T(
                "if(trimBoth({0}) = '', NULL, if(isValidJSON({0}), {0}, toJSONString({0})))",
                value.sql,
            ),
            "dynamic",
        )
    return Typed(to_json(value), "dynamic")


# --- type conversions ------------------------------------------------------------------------

# A datetime as a number is .NET ticks: 100 ns since 0001-01-01 (Berserk's skill file, and
# Kusto's tolong(datetime)). Stored datetimes count from the Unix epoch, this many ticks later.
DOTNET_EPOCH_TICKS = 621_355_968_000_000_000
# The ticks (since the Unix epoch) ClickHouse's DateTime64 can hold: 1900-01-01 to 2299-12-31.
_MIN_TICKS = -22_089_888_000_000_000
_MAX_TICKS = 104_137_919_999_999_999


def dotnet_ticks(value: Typed) -> Typed:
    """A datetime's .NET ticks (`tolong(datetime(2024-01-15 10:30))` is 638409402000000000)."""
    return Typed(T("({0} + " + str(DOTNET_EPOCH_TICKS) + ")", ticks(value.sql)), "long")


def from_dotnet_ticks(number: S.Expr) -> Typed:
    """The datetime of a number of .NET ticks; null outside what a datetime column can hold."""
    unix = T("(toInt64({0}) - " + str(DOTNET_EPOCH_TICKS) + ")", number)
    return Typed(
        T(
            "if({0} BETWEEN " + str(_MIN_TICKS) + " AND " + str(_MAX_TICKS) + ", {1}, NULL)",
            unix,
            from_ticks(unix),
        ),
        "datetime",
    )


def _to(kql_type: str) -> Builder:
    def build(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
        value = args[0]
        if value.type == kql_type:
            return value
        if value.type == "dynamic":
            return from_dynamic(value.sql, kql_type)
        if value.type == "guid" and kql_type in ("long", "int", "real", "decimal", "bool"):
            return typed_null(kql_type)  # a guid is no number (ClickHouse refuses the cast)
        if value.type == "string":
            text = value.sql
            # `0x` hex text converts as a hex literal does (tolong('0xa0') is 160).
            hex_or_decimal = (
                "if(match(trimBoth({0}), '^0[xX][0-9a-fA-F]{{1,16}}$'), "
                "toString(reinterpretAsInt64(reverse(unhex(leftPad(substring(trimBoth({0}), 3), 16, '0'))))), "
                "toString(toDecimal128OrNull(trimBoth({0}), 0)))"
            )
            if kql_type == "long":
                return Typed(T(f"toInt64OrNull({hex_or_decimal})", text), "long")
            if kql_type == "int":
                return Typed(T(f"toInt32OrNull({hex_or_decimal})", text), "int")
            if kql_type == "real":
                return Typed(T("toFloat64OrNull(trimBoth({0}))", text), "real")
            if kql_type == "decimal":
                return decimal_from_text(T("trimBoth({0})", text))
            if kql_type == "bool":
                return from_dynamic(T("toJSONString({0})", text), "bool")
            if kql_type == "datetime":
                return datetime_from_text(text)
            if kql_type == "timespan":
                return parse_timespan(text)
            if kql_type == "guid":
                return Typed(T("toUUIDOrNull({0})", text), "guid")
        if kql_type in ("long", "int", "real", "decimal"):
            if value.type == "datetime":
                return cast_to(dotnet_ticks(value), kql_type)
            if value.type == "timespan":
                return cast_to(Typed(value.sql, "long"), kql_type)
            if value.type == "bool":
                return cast_to(Typed(T("toInt64({0})", value.sql), "long"), kql_type)
            if kql_type in ("long", "int") and value.type in ("real", "decimal"):
                fname = "toInt64OrNull" if kql_type == "long" else "toInt32OrNull"
                return Typed(
                    T(
                        f"if(isFinite(toFloat64({{0}})), {fname}(toString(trunc({{0}}))), NULL)",
                        value.sql,
                    ),
                    kql_type,
                )
            return cast_to(value, kql_type)
        if kql_type == "bool" and value.type in ("int", "long", "real", "decimal"):
            return Typed(T("({0} != 0)", value.sql), "bool")
        if kql_type == "datetime" and value.type in ("long", "int", "real", "decimal"):
            number = value.sql
            if value.type in ("real", "decimal"):
                # (a double past the Int64 range has no tick count to convert)
                number = T("if(abs(toFloat64({0})) < 9e18, trunc({0}), NULL)", value.sql)
            return from_dotnet_ticks(number)
        if kql_type == "timespan" and value.type in ("long", "int", "real"):
            return Typed(T("toInt64({0})", value.sql), "timespan")
        if kql_type == "string":
            return Typed(to_string(value), "string")
        if kql_type == "dynamic":
            return Typed(to_json(value), "dynamic")
        return typed_null(kql_type)

    return build


reg("toint", _to("int"))
reg("tolong toint64", _to("long"))
reg("todouble toreal", _to("real"))
reg("todecimal", _to("decimal"))
reg("tobool toboolean", _to("bool"))
reg("todatetime", _to("datetime"))
reg("totimespan totime", _to("timespan"))
reg("tostring", lambda c, a, n: Typed(to_string(a[0]), "string"))


def _as(kql_type: str) -> Builder:
    """Berserk's extract-or-null `asXXX` (`typed.extract_as`)."""
    return lambda c, a, n: extract_as(a[0], kql_type)


reg("asstring", _as("string"))
reg("aslong", _as("long"))
reg("asint", _as("int"))
reg("asdouble asreal", _as("real"))
reg("asbool", _as("bool"))
reg("asdatetime", _as("datetime"))
reg("astimespan", _as("timespan"))
reg("todynamic parse_json toobject parsejson", lambda c, a, n: parse_json(a[0]))

# --- null / emptiness / logic ----------------------------------------------------------------


def _isnull(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    v = args[0]
    if v.type == "string" and isinstance(v.sql, S.Lit):
        return Typed(lit(False), "bool")
    if isinstance(v.sql, bag_paths.NativeBag):
        return Typed(bag_paths.absent_test(v.sql), "bool")
    if v.type == "dynamic":
        return Typed(T("(isNull({0}) OR {0} = 'null')", v.sql), "bool")
    # A string is null only when it is an absent stored field (issue 20): ClickHouse folds
    # the test to false for every expression that cannot be NULL.
    return Typed(S.IsNull(v.sql), "bool")


def _isempty(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    v = args[0]
    if isinstance(v.sql, bag_paths.NativeBag):
        return Typed(bag_paths.absent_test(v.sql), "bool")  # an object is never "" or a JSON null
    if v.type == "string":
        # `IS NULL OR = ''`, not `ifNull(x, '') = ''`: the same answer, and ClickHouse's key
        # and skip-index analysis reads this form. `isnotempty(span_name)` then reads the
        # spans' granules only (span_name is in the sorting key; a week of the bench: 635 of
        # 3,186 granules, against every granule with `ifNull`).
        empty = S.BinOp("=", v.sql, S.Lit(""))
        return Typed(S.BinOp("OR", S.IsNull(v.sql), empty), "bool")
    if v.type == "dynamic":
        return Typed(T("(isNull({0}) OR {0} IN ('null', '\"\"'))", v.sql), "bool")
    return Typed(S.IsNull(v.sql), "bool")


reg("isnull", _isnull)
reg("isnotnull notnull", lambda c, a, n: Typed(S.Not(_isnull(c, a, n).sql), "bool"))
reg("isempty", _isempty)
reg("isnotempty notempty", lambda c, a, n: Typed(S.Not(_isempty(c, a, n).sql), "bool"))
reg("not", lambda c, a, n: Typed(S.Not(c.as_bool(a[0])), "bool"))


def _iff(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    a, b = unify([args[1], args[2]])
    return Typed(T("if(ifNull({0}, false), {1}, {2})", c.as_bool(args[0]), a.sql, b.sql), a.type)


def _case(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    values = unify([args[i] for i in range(1, len(args), 2)] + [args[-1]])
    parts: list[S.Expr] = []
    for i in range(0, len(args) - 1, 2):
        parts.append(T("ifNull({0}, false)", c.as_bool(args[i])))
        parts.append(values[i // 2].sql)
    parts.append(values[-1].sql)
    return Typed(S.Func("multiIf", parts), values[-1].type)


def _coalesce(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    values = unify(args)
    if values[0].type == "string":
        expr: S.Expr = values[-1].sql
        for v in reversed(values[:-1]):
            expr = T("if({0} != '', {0}, {1})", v.sql, expr)
        return Typed(expr, "string")
    if values[0].type == "dynamic":
        return Typed(
            S.Func("coalesce", [T("nullIf({0}, 'null')", v.sql) for v in values]), "dynamic"
        )
    return Typed(S.Func("coalesce", [v.sql for v in values]), values[0].type)


reg("iff iif", _iff)
reg("case", _case)
reg("coalesce", _coalesce)


def _minmax_of(name: str) -> Builder:
    def build(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
        values = unify(args)
        # KQL ignores nulls here; ClickHouse least/greatest of a NULL is NULL.
        expr: S.Expr = values[0].sql
        for v in values[1:]:
            expr = T(
                f"if(isNull({{0}}), {{1}}, if(isNull({{1}}), {{0}}, {name}({{0}}, {{1}})))",
                expr,
                v.sql,
            )
        return Typed(expr, values[0].type)

    return build


reg("max_of", _minmax_of("greatest"))
reg("min_of", _minmax_of("least"))


def _tohex(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    x = args[0]
    digits = "lower(hex(toInt64({0})))" if x.type != "int" else "lower(hex(toInt32({0})))"
    text = T("if(isNull({0}), '', replaceRegexpOne(" + digits + ", '^0+(.)', '\\\\1'))", x.sql)
    if len(args) > 1:
        return Typed(
            T(
                "leftPad({0}, toUInt64(greatest(length({0}), {1})), '0')",
                text,
                cast_to(args[1], "long").sql,
            ),
            "string",
        )
    return Typed(text, "string")


reg("tohex", _tohex)


def _toguid(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    x = args[0]
    if x.type == "guid":
        return x
    text = to_string(x)
    hexed = T("replaceAll(trimBoth({0}), '-', '')", text)
    return Typed(
        T(
            "if(match({0}, '^[0-9a-fA-F]{{32}}$'), toUUIDOrNull(concat(substring({0}, 1, 8), '-', substring({0}, 9, 4), '-', "
            "substring({0}, 13, 4), '-', substring({0}, 17, 4), '-', substring({0}, 21, 12))), NULL)",
            hexed,
        ),
        "guid",
    )


reg("toguid", _toguid)
