"""KQL literals as typed SQL: values in the engine's Python forms (ticks, JSON values)."""

from __future__ import annotations

import json
from typing import Any

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T, Typed, from_ticks, lit, typed_null
from bzrk.engine.types import DECIMAL_SCALE, clickhouse_type, normalize_kql_type


def literal(kql_type: str, value: Any) -> Typed:
    """A KQL literal as typed SQL (values in the engine's Python forms)."""
    kql_type = normalize_kql_type(kql_type)
    if value is None and kql_type != "dynamic":
        if kql_type == "string":
            return Typed(lit(""), "string")
        return typed_null(kql_type)
    if kql_type == "long":
        return Typed(T("toInt64({0})", lit(int(value))), "long")
    if kql_type == "int":
        return Typed(T("toInt32({0})", lit(int(value))), "int")
    if kql_type == "real":
        return Typed(T("toFloat64({0})", lit(float(value))), "real")
    if kql_type == "decimal":
        # The parser refuses a literal past .NET's range; digits past the 28th after the
        # point are cut, as the type holds no more.
        return Typed(T(f"toDecimal256({{0}}, {DECIMAL_SCALE})", lit(str(value))), "decimal")
    if kql_type == "bool":
        return Typed(lit(bool(value)), "bool")
    if kql_type == "string":
        return Typed(lit(str(value)), "string")
    if kql_type == "datetime":
        return Typed(from_ticks(lit(int(value))), "datetime")
    if kql_type == "timespan":
        return Typed(T("toInt64({0})", lit(int(value))), "timespan")
    if kql_type == "guid":
        return Typed(T("toUUID({0})", lit(str(value))), "guid")
    if kql_type == "dynamic":
        if value is None:
            return Typed(S.Cast(lit(None), clickhouse_type("dynamic")), "dynamic")
        return Typed(lit(json.dumps(value, separators=(",", ":"), ensure_ascii=False)), "dynamic")
    raise ValueError(kql_type)


def literal_from_json(value: Any) -> Typed:
    if isinstance(value, bool):
        return literal("bool", value)
    if isinstance(value, int):
        return literal("long", value)
    if isinstance(value, float):
        return literal("real", value)
    if isinstance(value, str):
        return literal("string", value)
    return literal("dynamic", value)
