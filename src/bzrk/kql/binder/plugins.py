"""Result schemas of `evaluate` plugins.

Most plugin schemas depend on data (`bag_unpack`, `pivot`); those bind as the input plus an
opaque marker unless the query declares `: (col:type, ...)`. Plugins with fixed shapes are
listed in `_FIXED`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.kql import syntax as s
from bzrk.kql.binder.bound import CallInfo
from bzrk.kql.catalog import FunctionSymbol
from bzrk.kql.symbols import DATETIME, LONG, STRING, Column, TableSchema

if TYPE_CHECKING:
    from bzrk.kql.binder.core import Binder

_FIXED: dict[str, tuple[tuple[str, str], ...]] = {
    "sequence_detect": (),
    "sql_request": (),
}


def bind_plugin(
    b: Binder, op: s.Evaluate, plugin: FunctionSymbol, input: TableSchema
) -> TableSchema:
    from bzrk.kql.binder.core import Ctx

    ctx = Ctx(row=input)
    arg_types: list[str] = []
    for a in op.plugin.args:
        v = b.bind(a, ctx)
        arg_types.append(v if isinstance(v, str) else "table")
    b.bound.calls[op.plugin] = CallInfo(
        "plugin", plugin, plugin.signatures[0] if plugin.signatures else None, "table"
    )
    if op.schema:
        cols = [Column(c.name, c.type) for c in op.schema]
        return TableSchema(tuple(cols))
    name = plugin.name
    args = op.plugin.args
    if name == "bag_unpack":
        drop = args[0].name if args and isinstance(args[0], s.NameRef) else None
        return TableSchema(tuple(c for c in input.columns if c.name != drop), opaque=True)
    if name in ("narrow",):
        return TableSchema((Column("Row", LONG), Column("Column", STRING), Column("Value", STRING)))
    if name == "active_users_count" and len(args) >= 2:
        t = _col_name(args[1])
        return TableSchema((Column(t or "Timestamp", DATETIME), Column("dcount", LONG)))
    if name == "series_fit_poly":
        return TableSchema(input.columns, opaque=True)
    if name in ("preview",):
        return input
    if name == "schema_merge":
        return TableSchema(
            (
                Column("ColumnName", STRING),
                Column("ColumnOrdinal", LONG),
                Column("DataType", STRING),
                Column("ColumnType", STRING),
            )
        )
    if name == "funnel_sequence_completion":
        return TableSchema((), opaque=True)
    return TableSchema((), opaque=True)


def _col_name(e: s.Expr) -> str | None:
    return e.name if isinstance(e, s.NameRef) else None
