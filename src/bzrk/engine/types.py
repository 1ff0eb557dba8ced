"""How each KQL scalar type is held in ClickHouse SQL, and how to read it back from Arrow.

=========  ================================  ===============================================
KQL type   ClickHouse type in SQL            why
=========  ================================  ===============================================
bool       Nullable(Bool)                    KQL bools can be null
int        Nullable(Int32)
long       Nullable(Int64)
real       Nullable(Float64)
decimal    Nullable(Decimal(76, 28))         KQL's decimal is .NET's: 28 digits after the point,
                                             29 before (values past ±DECIMAL_MAX are null)
string     String                            KQL has no null string: null is ""
datetime   Nullable(DateTime64(7, 'UTC'))    100 ns ticks, exactly KQL's precision
timespan   Nullable(Int64)                   100 ns ticks
guid       Nullable(UUID)
dynamic    Nullable(String)                  compact JSON text; functions parse it with
                                             ClickHouse's JSON* functions
=========  ================================  ===============================================

bzrk tables may store bags in the ``JSON`` type; the compiler turns such columns into JSON
text (``toJSONString``) when it reads them as ``dynamic``.
"""

from __future__ import annotations

from bzrk.engine.events import KqlTypeName
from bzrk.kql.facts import TYPE_ALIASES

CLICKHOUSE_TYPES: dict[str, str] = {
    "bool": "Nullable(Bool)",
    "int": "Nullable(Int32)",
    "long": "Nullable(Int64)",
    "real": "Nullable(Float64)",
    "decimal": "Nullable(Decimal(76, 28))",
    "string": "String",
    "datetime": "Nullable(DateTime64(7, 'UTC'))",
    "timespan": "Nullable(Int64)",
    "guid": "Nullable(UUID)",
    "dynamic": "Nullable(String)",
}

# Spellings that KQL accepts for its types (datatable schemas, casts, to* functions): the
# language's own table, so the engine and the binder agree on every alias.
KQL_TYPE_ALIASES: dict[str, KqlTypeName] = TYPE_ALIASES  # type: ignore[assignment]

NUMERIC_TYPES = frozenset({"int", "long", "real", "decimal"})

# KQL's decimal is .NET's System.Decimal: 96 bits of digits scaled by 10^-0..10^-28, so at most
# 28 digits after the point and a magnitude of at most kql.facts.DECIMAL_MAX. bzrk holds it in a
# Decimal256 with scale 28 (76 digits, so sums and products are exact before the range check).
DECIMAL_SCALE = 28


def clickhouse_type(kql_type: str) -> str:
    """The ClickHouse column type that holds a KQL type in bzrk's SQL.

    >>> clickhouse_type("timespan")
    'Nullable(Int64)'
    """
    return CLICKHOUSE_TYPES[normalize_kql_type(kql_type)]


def normalize_kql_type(name: str) -> KqlTypeName:
    """Map a KQL type spelling (``double``, ``int64``, ``System.String``…) to its canonical name."""
    key = name.strip().lower()
    if key.startswith("system."):
        key = key[len("system.") :]
    if key in KQL_TYPE_ALIASES:
        return KQL_TYPE_ALIASES[key]
    dotnet = {
        "sbyte": "bool",
        "object": "dynamic",
        "timespan": "timespan",
        "datetime": "datetime",
        "single": "real",
        "sqldecimal": "decimal",
    }
    if key in dotnet:
        return dotnet[key]  # type: ignore[return-value]
    raise KeyError(name)


def kql_type_of_clickhouse(ch_type: str) -> KqlTypeName:
    """The KQL type that shows a ClickHouse column of a bzrk table (for table schemas).

    >>> kql_type_of_clickhouse("LowCardinality(String)")
    'string'
    """
    t = ch_type.strip()
    for wrapper in ("Nullable(", "LowCardinality("):
        while t.startswith(wrapper) and t.endswith(")"):
            t = t[len(wrapper) : -1]
    if t in ("Bool", "Boolean"):
        return "bool"
    if t in ("Int8", "Int16", "Int32", "UInt8", "UInt16"):
        return "int"
    if t in ("Int64", "UInt32", "UInt64", "Int128", "UInt128"):
        return "long"
    if t.startswith(("Float", "BFloat")):
        return "real"
    if t.startswith("Decimal"):
        return "decimal"
    if t.startswith(("String", "FixedString", "Enum")):
        return "string"
    if t.startswith(("DateTime", "Date")):
        return "datetime"
    if t == "UUID":
        return "guid"
    return "dynamic"
