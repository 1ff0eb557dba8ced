"""Result schemas of `evaluate` plugins.

Most plugin schemas depend on data (`bag_unpack`, `pivot`); those bind as the input plus an
opaque marker unless the query declares `: (col:type, ...)`. Plugins with fixed shapes are
listed in `_FIXED`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bzrk.kql import syntax as s
from bzrk.kql.binder.bound import CallInfo
from bzrk.kql.catalog import FunctionSymbol
from bzrk.kql.symbols import DATETIME, LONG, REAL, STRING, Column, TableSchema

if TYPE_CHECKING:
    from bzrk.kql.binder.core import Binder


def bind_plugin(
    b: Binder, op: s.Evaluate, plugin: FunctionSymbol, input: TableSchema
) -> TableSchema:
    from bzrk.kql.binder.core import Ctx

    # plugin arguments may name columns of other inputs (geo/ip lookups): bind them leniently
    ctx = Ctx(row=TableSchema(input.columns, input.raw, opaque=True), aggregates=True)
    arg_types: list[str] = []
    for a in op.plugin.args:
        v = b.bind(a, ctx)
        arg_types.append(v if isinstance(v, str) else "table")
    b.bound.calls[op.plugin] = CallInfo(
        "plugin", plugin, plugin.signatures[0] if plugin.signatures else None, "table"
    )
    args = op.plugin.args
    if op.schema:
        cols: list[Column] = []
        for c in op.schema:
            if c.name == "*":
                drop = _col_name(args[0]) if plugin.name == "bag_unpack" and args else None
                cols.extend(x for x in input.columns if x.name != drop)
            else:
                cols.append(Column(c.name, c.type))
        return TableSchema(tuple(_dedupe(cols)))
    rule = _RULES.get(plugin.name)
    if rule is not None:
        return rule(b, args, input)
    return TableSchema((), opaque=True)


def _dedupe(cols: list[Column]) -> list[Column]:
    seen: set[str] = set()
    out = []
    for c in cols:
        if c.name not in seen:
            seen.add(c.name)
            out.append(c)
    return out


def _col(input: TableSchema, arg: s.Expr | None, default_type: str = DATETIME) -> Column:
    name = _col_name(arg) if arg is not None else None
    found = input.find(name) if name else None
    return Column(name or "Column1", found.type if found else default_type)


def _dims(input: TableSchema, args: tuple[s.Expr, ...]) -> list[Column]:
    return [_col(input, a, STRING) for a in args if isinstance(a, s.NameRef) and input.find(a.name)]


def _lookup_table(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    right = b.bound.schemas.get(args[0]) if args else None
    cols = list(input.columns) + (list(right.columns) if right is not None else [])
    return TableSchema(tuple(_dedupe(cols)), False, right is None)


def _lookup_table_first(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    """``ipv6_lookup``: the real engine gives the lookup table's columns first, then the
    input's (docs-emulator A/ipv6-lookup-plugin-00; ``ipv4_lookup`` keeps the input first)."""
    right = b.bound.schemas.get(args[0]) if args else None
    cols = (list(right.columns) if right is not None else []) + list(input.columns)
    return TableSchema(tuple(_dedupe(cols)), False, right is None)


def _activity_counts(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    t = _col(input, args[1] if len(args) > 1 else None)
    names = ("count", "dcount", "new_dcount", "aggregated_dcount")
    return TableSchema((t, *_dims(input, args[5:]), *(Column(n, LONG) for n in names)))


def _activity_engagement(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    t = _col(input, args[1] if len(args) > 1 else None)
    dims = _dims(input, args[6:]) if len(args) > 6 else []
    return TableSchema(
        (
            t,
            *dims,
            Column("dcount_activities_inner", LONG),
            Column("dcount_activities_outer", LONG),
            Column("activity_ratio", REAL),
        )
    )


def _activity_metrics(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    t = _col(input, args[1] if len(args) > 1 else None)
    return TableSchema(
        (
            t,
            *_dims(input, args[5:]),
            Column("dcount_values", LONG),
            Column("dcount_newvalues", LONG),
            Column("retention_rate", REAL),
            Column("churn_rate", REAL),
        )
    )


def _new_activity_metrics(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    t = _col(input, args[1] if len(args) > 1 else None)
    return TableSchema(
        (
            Column(f"from_{t.name}", t.type),
            Column(f"to_{t.name}", t.type),
            *_dims(input, args[5:]),
            Column("dcount_new_values", LONG),
            Column("dcount_retained_values", LONG),
            Column("dcount_churn_values", LONG),
            Column("retention_rate", REAL),
            Column("churn_rate", REAL),
        )
    )


def _session_count(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    t = _col(input, args[1] if len(args) > 1 else None)
    return TableSchema((t, *_dims(input, args[6:]), Column("count_sessions", LONG)))


def _sliding_window_counts(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    t = _col(input, args[1] if len(args) > 1 else None)
    return TableSchema((t, *_dims(input, args[6:]), Column("Count", LONG), Column("Dcount", LONG)))


def _rolling_percentile(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    value = _col(input, args[0] if args else None, LONG)
    index = _col(input, args[2] if len(args) > 2 else None)
    window = _literal_text(args[4]) if len(args) > 4 else ""
    pct = _literal_text(args[1]) if len(args) > 1 else ""
    name = f"rolling_{window}_percentile_{value.name}_{pct}"
    return TableSchema((index, *_dims(input, args[5:]), Column(name, value.type)))


def _active_users_count(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    t = _col(input, args[1] if len(args) > 1 else None)
    return TableSchema((t, *_dims(input, args[8:]), Column("dcount", LONG)))


def _dcount_intersect(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    return TableSchema((*input.columns, *(Column(f"s{i}", LONG) for i in range(len(args)))))


def _same_rows(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    return input


def _typeof_schema(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    t = args[0] if args else None
    if not isinstance(t, s.TypeOf) or not t.type.startswith("("):
        return TableSchema((), opaque=True)
    cols: list[Column] = []
    for part in t.type[1:-1].split(","):
        if part == "*":
            cols.extend(input.columns)
        elif ":" in part:
            name, _, ctype = part.partition(":")
            cols.append(Column(name, ctype))
    return TableSchema(tuple(_dedupe(cols)))


def _fixed(
    *cols: tuple[str, str],
) -> Callable[[Binder, tuple[s.Expr, ...], TableSchema], TableSchema]:
    schema = TableSchema(tuple(Column(n, t) for n, t in cols))
    return lambda b, args, input: schema


def _bag_unpack(b: Binder, args: tuple[s.Expr, ...], input: TableSchema) -> TableSchema:
    drop = _col_name(args[0]) if args else None
    return TableSchema(tuple(c for c in input.columns if c.name != drop), opaque=True)


def _literal_text(e: s.Expr) -> str:
    return e.text.replace(".", "_") if isinstance(e, s.Literal) else ""


_RULES: dict[str, Callable[[Binder, tuple[s.Expr, ...], TableSchema], TableSchema]] = {
    "bag_unpack": _bag_unpack,
    "activity_counts_metrics": _activity_counts,
    "activity_engagement": _activity_engagement,
    "activity_metrics": _activity_metrics,
    "new_activity_metrics": _new_activity_metrics,
    "session_count": _session_count,
    "sliding_window_counts": _sliding_window_counts,
    "rolling_percentile": _rolling_percentile,
    "dcount_intersect": _dcount_intersect,
    "active_users_count": _active_users_count,
    "rows_near": _same_rows,
    "preview": _same_rows,
    "geo_line_lookup": _lookup_table,
    "geo_polygon_lookup": _lookup_table,
    "ipv4_lookup": _lookup_table,
    "ipv6_lookup": _lookup_table_first,
    "python": _typeof_schema,
    "r": _typeof_schema,
    "infer_storage_schema": _fixed(("CslSchema", STRING)),
    "narrow": _fixed(("Row", LONG), ("Column", STRING), ("Value", STRING)),
    # ColumnOrdinal is long as the real engine answers it (A/schema-merge-plugin-00).
    "schema_merge": _fixed(
        ("ColumnName", STRING),
        ("ColumnOrdinal", LONG),
        ("DataType", STRING),
        ("ColumnType", STRING),
    ),
}


def _col_name(e: s.Expr) -> str | None:
    return e.name if isinstance(e, s.NameRef) else None
