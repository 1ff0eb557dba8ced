"""Typed SQL expressions and the conversions between KQL types that every translation shares.

A :class:`Typed` is a SQL node plus the KQL type of its value. The helpers here turn any typed
value into KQL's string form (``tostring``), into dynamic JSON text, or out of dynamic JSON
into a scalar type, with KQL's rules (no null string, .NET spellings, ticks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bzrk.engine import sql as S
from bzrk.engine.compile.bag_paths import EMPTY_WHEN_NULL, NativeBag, PathText
from bzrk.engine.kql_text import DATETIME_TEXT, TIMESPAN_TEXT
from bzrk.engine.types import DECIMAL_SCALE, clickhouse_type
from bzrk.kql.facts import DECIMAL_MAX

DT = "DateTime64(7, 'UTC')"
NUMERIC_RANK = {"int": 1, "long": 2, "decimal": 3, "real": 4}


@dataclass(frozen=True, slots=True)
class Typed:
    sql: S.Expr
    type: str


_NULLABLE_JSON_ARG = re.compile(r"(JSONExtract(?:ArrayRaw|KeysAndValuesRaw|Keys))\((\{\d+\})\)")


# Lambda parameters of bzrk's templates; renamed so that they never capture a user column
# with the same name (`print x = ... | extend series_abs(x)`).
_LAMBDA_VARS = re.compile(r"(?<![\w.`$])(acc|kv|ch|poly|ring|x|y|i|k|l|p|b|d|g|h|n|r|t)(?![\w(])")
_QUOTED = re.compile(r"('(?:[^'\\]|\\.)*')")


def _hygienic(text: str) -> str:
    parts = _QUOTED.split(text)
    return "".join(
        part if index % 2 else _LAMBDA_VARS.sub(r"__\1", part) for index, part in enumerate(parts)
    )


def T(text: str, *args: S.Expr) -> S.Template:
    """A template node (SQL text written in bzrk, with ``{n}`` slots for child nodes).

    JSON array extractors get a non-null argument (arrays cannot be null), and lambda
    parameters are renamed so that they cannot capture user columns.
    """
    text = _NULLABLE_JSON_ARG.sub(r"\1(ifNull(\2, ''))", text)
    if "->" in text:
        text = _hygienic(text)
    return S.Template(text, list(args))


def lit(value: object) -> S.Lit:
    return S.Lit(value)


def typed_null(kql_type: str) -> Typed:
    """A null of ``kql_type`` (a string's column type is not Nullable: its null is cast to one,
    as an absent stored string reads)."""
    ch_type = clickhouse_type(kql_type)
    if not ch_type.startswith("Nullable("):
        ch_type = f"Nullable({ch_type})"
    return Typed(S.Cast(S.Lit(None), ch_type), kql_type)


def ticks(dt: S.Expr) -> S.Expr:
    """A datetime's 100 ns ticks since the Unix epoch (DateTime64(7) stores exactly that)."""
    return T("reinterpretAsInt64({0})", dt)


# Datetime bins count from 0001-01-01, as .NET's ticks do (bin(d, 7d) starts on Mondays:
# the reference's weekly bins are 2007-01-01, 01-08, …); in Unix ticks that is this value. A bin
# size that divides a day gives the same bins from either origin.
BIN_ORIGIN_TICKS = -621_355_968_000_000_000


def bin_floor_ticks(t: S.Expr, step: S.Expr) -> S.Expr:
    """The start of the datetime bin holding ``t`` (both in ticks), counted from 0001-01-01."""
    return T("({0} - positiveModulo({0} + {1}, {2}))", t, S.Lit(-BIN_ORIGIN_TICKS), step)


def from_ticks(t: S.Expr) -> S.Expr:
    return T("reinterpret(toInt64({0}), 'DateTime64(7, \\'UTC\\')')", t)


def decimal_checked(x: S.Expr) -> Typed:
    """A Decimal256 value as KQL's decimal: null past .NET's range (Kusto's decimal overflows
    there; bzrk answers null, as its conversions do for what does not convert)."""
    limit = T(f"toDecimal256({{0}}, {DECIMAL_SCALE})", lit(DECIMAL_MAX))
    value = S.Cast(x, clickhouse_type("decimal"))
    return Typed(T("if(abs({0}) <= {1}, {2}, NULL)", x, limit, value), "decimal")


def decimal_from_text(text: S.Expr) -> Typed:
    """Text (``1.5``, ``-2e3``) as a decimal; null when it is no number or out of range."""
    return decimal_checked(T(f"toDecimal256OrNull({{0}}, {DECIMAL_SCALE})", text))


def widest(*types: str) -> str:
    best = "int"
    for t in types:
        if t not in NUMERIC_RANK:
            return t
        if NUMERIC_RANK[t] > NUMERIC_RANK[best]:
            best = t
    return best


def cast_to(value: Typed, kql_type: str) -> Typed:
    """Convert between numeric types (and to the same type: unchanged)."""
    if value.type == kql_type:
        return value
    if kql_type == "dynamic":
        return Typed(to_json(value), "dynamic")
    if value.type == "dynamic":
        return from_dynamic(value.sql, kql_type)
    if kql_type == "string":
        return Typed(to_string(value), "string")
    if kql_type == "real":
        return Typed(T("toFloat64({0})", value.sql), "real")
    if kql_type == "long":
        return Typed(T("toInt64({0})", value.sql), "long")
    if kql_type == "int":
        return Typed(T("toInt32({0})", value.sql), "int")
    if kql_type == "decimal" and value.type == "real":
        # As .NET converts double to decimal: at most 15 significant digits, so 1.1 is 1.1
        # and not the binary 1.100000000000000088.
        # A real past the decimal range (1e40, inf) is null, as todecimal() gives.
        return decimal_from_text(T("printf('%.15g', toFloat64({0}))", value.sql))
    if kql_type == "decimal":  # int, long, bool: always in range
        return Typed(T(f"toDecimal256({{0}}, {DECIMAL_SCALE})", value.sql), "decimal")
    return Typed(S.Cast(value.sql, clickhouse_type(kql_type)), kql_type)


# --- KQL's string form -----------------------------------------------------------------------

# KQL's text of a datetime / timespan; a null one reads as "" (KQL strings are never null).
_DATETIME_TEXT = "if(isNull({0}), '', " + DATETIME_TEXT + ")"
_TIMESPAN_TEXT = "if(isNull({0}), '', " + TIMESPAN_TEXT + ")"
_DYNAMIC_TEXT = (
    "if(isNull({0}) OR {0} = 'null', '', if(JSONType({0}) = 'String', JSONExtractString({0}), {0}))"
)


def string_text(x: S.Expr) -> S.Expr:
    """A string's text for a KQL string function: an absent (NULL) string reads as ``''``.

    Only stored fields are ever absent (issue 20); ``ifNull`` of a column that cannot be NULL
    costs nothing (ClickHouse returns the column as it is).
    """
    if isinstance(x, S.Lit) or (isinstance(x, S.Template) and x.text == EMPTY_WHEN_NULL):
        return x
    return S.Template(EMPTY_WHEN_NULL, [x])


def unwrap_text(x: S.Expr) -> S.Expr:
    """``x`` without the ``ifNull(…, '')`` :func:`string_text` put around it."""
    while isinstance(x, S.Template) and x.text == EMPTY_WHEN_NULL:
        x = x.args[0]
    return x


@dataclass(frozen=True, slots=True)
class Filtered(S.Template):
    """A predicate with a second form for ``WHERE`` (see ``operators/where.py``, filter_form).

    Renders as its value (``args[0]``). ``in_filter`` is the same test on the stored column as
    it is, for a predicate that is false on ``''``: on an absent (NULL) field it gives NULL
    where the value gives false, which drops the row all the same in a filter, and ClickHouse's
    primary-key and skip-index analysis can read it (``hasToken(lower(body), 'x')`` is what the
    text index answers; ``hasToken(lower(ifNull(body, '')), 'x')`` is not).
    """

    in_filter: S.Expr | None = None

    @classmethod
    def of(cls, value: S.Expr, in_filter: S.Expr) -> S.Expr:
        return value if in_filter == value else cls("{0}", [value], in_filter)


def to_string(value: Typed) -> S.Expr:
    """KQL ``tostring``: never null, .NET spellings."""
    t, x = value.type, value.sql
    if t == "string":
        return string_text(x)
    if t == "datetime":
        return T(_DATETIME_TEXT, x)
    if t == "timespan":
        return T(_TIMESPAN_TEXT, x)
    if t == "bool":
        return T("if(isNull({0}), '', if({0}, 'true', 'false'))", x)
    if t == "dynamic":
        return dynamic_string(x)
    if t == "real":
        return T(
            "ifNull(replaceOne(replaceOne(toString({0}), 'inf', 'Infinity'), 'nan', 'NaN'), '')", x
        )
    return T("ifNull(toString({0}), '')", x)


# --- dynamic (JSON text) ---------------------------------------------------------------------


def to_json(value: Typed) -> S.Expr:
    """JSON text of a value for a dynamic; NULL when the value is null."""
    t, x = value.type, value.sql
    if t == "dynamic":
        return x
    if t == "string":
        return T("toJSONString({0})", x)
    if t in ("int", "long", "real"):
        return T("toJSONString({0})", x)
    if t == "decimal":
        return T("toString({0})", x)
    if t == "bool":
        return T("if(isNull({0}), NULL, if({0}, 'true', 'false'))", x)
    if t in ("datetime", "timespan", "guid"):
        return T("if(isNull({0}), NULL, toJSONString({1}))", x, to_string(value))
    return T("toJSONString({0})", x)


def json_or_null_literal(value: Typed) -> S.Expr:
    """JSON text with null spelled ``null`` (inside arrays and bags)."""
    return T("ifNull({0}, 'null')", to_json(value))


def dynamic_string(x: S.Expr) -> S.Expr:
    """The text of a dynamic: a JSON string's content, else its JSON text ('' for null)."""
    if isinstance(x, NativeBag):
        # a stored bag read from its table: an object's JSON text or null, never a JSON string
        # (the general form spells its costly serialization five times)
        return T(EMPTY_WHEN_NULL, x)
    native = x.as_string() if isinstance(x, PathText) else None
    return native if native is not None else T(_DYNAMIC_TEXT, x)


def from_dynamic(x: S.Expr, kql_type: str) -> Typed:
    """Convert dynamic JSON text to a scalar KQL type (null when it does not convert)."""
    if kql_type not in _SCALAR_FROM_TEXT:
        return Typed(x, "dynamic")
    if isinstance(x, PathText) and kql_type != "string":
        native = x.as_scalar(kql_type, lambda text: _from_text(text, kql_type).sql)
        if native is not None:
            return Typed(native, kql_type)
    return _from_text(dynamic_string(x), kql_type)


def stored_value(x: S.Expr, kind: str) -> S.Expr:
    """A dynamic's value when it is stored as ``kind`` (``string``, ``real``, ``long``, ``bool``),
    else NULL: no conversion, as Berserk compares dynamic values (``attributes.code == 500``
    matches the number 500, not the string "500"; ``dynamic(2.5) == long(2)`` is false).

    ``long`` is the value of an integer only (compare it exactly, and the ``real`` form for
    the rest); ``real`` is every number as a double.
    """
    if isinstance(x, PathText):
        native = x.as_stored(kind)
        if native is not None:
            return native
    return T(_STORED_TEXT[kind], x)


def extract_as(value: Typed, kql_type: str) -> Typed:
    """Berserk's ``asXXX`` (the extractor its binder puts where a typed parameter takes a
    dynamic, and the functions of that name): a dynamic's value when it is stored as
    ``kql_type``, else null; never converted across types. ``asstring(dynamic(5))`` and
    ``asdouble(dynamic("5"))`` are null; an integer widens to a real (``asdouble(dynamic(5))``
    is 5.0), as number comparisons widen. A value of ``kql_type`` is itself, another scalar
    null (``asstring(5)``).

    A datetime or timespan inside a dynamic is stored as its text, which cannot be told from a
    string that holds one, so those (and the rarer kinds) still convert (:func:`cast_to`).
    """
    if value.type == kql_type:
        return value
    if value.type != "dynamic":
        widens = (kql_type == "real" and value.type in ("int", "long")) or (
            kql_type == "long" and value.type == "int"
        )
        return cast_to(value, kql_type) if widens else typed_null(kql_type)
    kind = _EXTRACTED.get(kql_type)
    if kind is None:
        return cast_to(value, kql_type)
    extracted = Typed(stored_value(value.sql, kind), kind)
    return extracted if kind == kql_type else cast_to(extracted, kql_type)


# The stored kind each extracted type reads (see stored_value).
_EXTRACTED = {"string": "string", "real": "real", "long": "long", "int": "long", "bool": "bool"}


# JSON text of a value → the value when its JSON type is the kind's (JSONType is NULL for NULL).
_STORED_TEXT = {
    "string": "if(JSONType({0}) = 'String', JSONExtractString({0}), NULL)",
    "real": "if(JSONType({0}) IN ('Int64', 'UInt64', 'Double'), JSONExtractFloat({0}), NULL)",
    "long": "if(JSONType({0}) = 'Int64', JSONExtractInt({0}), NULL)",
    "bool": "if(JSONType({0}) = 'Bool', {0} = 'true', NULL)",
}


_SCALAR_FROM_TEXT = frozenset(
    {"string", "long", "int", "real", "decimal", "bool", "datetime", "timespan", "guid"}
)


def _from_text(text: S.Expr, kql_type: str) -> Typed:
    """KQL's string form of a dynamic value converted to a scalar type."""
    if kql_type == "string":
        return Typed(text, "string")
    if kql_type == "long":
        return Typed(T("toInt64OrNull(toString(toDecimal128OrNull({0}, 0)))", text), "long")
    if kql_type == "int":
        return Typed(T("toInt32OrNull(toString(toDecimal128OrNull({0}, 0)))", text), "int")
    if kql_type == "real":
        return Typed(T("toFloat64OrNull({0})", text), "real")
    if kql_type == "decimal":
        return decimal_from_text(text)
    if kql_type == "bool":
        return Typed(
            T(
                "multiIf(lower({0}) = 'true', true, lower({0}) = 'false', false, "
                "toFloat64OrNull({0}) IS NOT NULL, toFloat64OrNull({0}) != 0, NULL)",
                text,
            ),
            "bool",
        )
    if kql_type == "datetime":
        return datetime_from_text(text)
    if kql_type == "timespan":
        # a number is ticks; a string its clock form (dynamic("00:01:00") is one minute)
        return Typed(
            T("coalesce(toInt64OrNull({0}), {1})", text, parse_timespan(text).sql), "timespan"
        )
    if kql_type == "guid":
        return Typed(T("toUUIDOrNull({0})", text), "guid")
    raise ValueError(f"no conversion from dynamic to {kql_type}")


# RFC 822 / RFC 850 dates with a two-digit year ("Sat, 8 Nov 14 15:05:02 GMT",
# "Saturday, 08-Nov-14 15:05:02 GMT", "08-Nov-14 15:05") get their century (00-49: 20xx,
# 50-99: 19xx, as .NET reads them) before ClickHouse's parser, which takes "14" for a day.
_TWO_DIGIT_YEAR = r"^(?:[A-Za-z]+,\s*)?(\d{{1,2}})[- ]([A-Za-z]{{3}})[- ]({digits}\d)(\s.*)?$"


def datetime_from_text(text: S.Expr) -> Typed:
    """KQL ``todatetime`` of a string: the formats Kusto documents (ISO 8601, RFC 822, RFC 850,
    US dates); a bare number is no date (null), where ClickHouse would read a day of this month."""
    trimmed = T("trimBoth({0}, ' \t\r\n')", text)
    century = T(
        "replaceRegexpOne(replaceRegexpOne({0}, {1}, '\\1 \\2 20\\3\\4'), {2}, '\\1 \\2 19\\3\\4')",
        trimmed,
        S.Lit(_TWO_DIGIT_YEAR.format(digits="[0-4]")),
        S.Lit(_TWO_DIGIT_YEAR.format(digits="[5-9]")),
    )
    return Typed(
        T(
            "if(match({0}, '^[0-9]+$'), NULL, parseDateTime64BestEffortUSOrNull({1}, 7, 'UTC'))",
            trimmed,
            century,
        ),
        "datetime",
    )


def parse_timespan(text: S.Expr) -> Typed:
    """KQL ``totimespan`` of a string: the clock form ``[-][d.]hh:mm[:ss[.fffffff]]``."""
    return Typed(
        T(
            "if(match({0}, '^\\\\s*-?(\\\\d+\\\\.)?\\\\d{{1,2}}:\\\\d{{1,2}}(:\\\\d{{1,2}}(\\\\.\\\\d{{1,7}})?)?\\\\s*$'), "
            "(if(startsWith(trimBoth({0}), '-'), -1, 1) * ("
            "toInt64OrZero(extract({0}, '(\\\\d+)\\\\.\\\\d{{1,2}}:')) * 864000000000 + "
            "toInt64OrZero(extract({0}, '(\\\\d{{1,2}}):\\\\d{{1,2}}')) * 36000000000 + "
            "toInt64OrZero(extract({0}, '\\\\d{{1,2}}:(\\\\d{{1,2}})')) * 600000000 + "
            "toInt64OrZero(extract({0}, '\\\\d{{1,2}}:\\\\d{{1,2}}:(\\\\d{{1,2}})')) * 10000000 + "
            "toInt64OrZero(rightPad(extract({0}, ':\\\\d{{1,2}}\\\\.(\\\\d{{1,7}})'), 7, '0')))), NULL)",
            text,
        ),
        "timespan",
    )
