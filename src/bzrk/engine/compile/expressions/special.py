"""Calls the expression compiler handles itself because they need more than their arguments'
values: the row (`pack_all`, `column_ifexists`, `estimate_data_size(*)`) or a tabular argument
(`toscalar`, `column_names_of`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.functions.dynamic import bag_pack
from bzrk.engine.compile.functions.misc import estimate_data_size
from bzrk.engine.compile.typed import T, Typed, lit, typed_null
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler


def _named_column(c: ExprCompiler, node: K.Call) -> Typed | None:
    """The row's column named by the call's first argument (a constant string), if any."""
    name_value = c.compile(node.args[0])
    name = name_value.sql.value if isinstance(name_value.sql, S.Lit) else None
    return c.scope.columns.get(name) if isinstance(name, str) else None


def _column_ifexists(c: ExprCompiler, node: K.Call) -> Typed:
    column = _named_column(c, node)
    return column if column is not None else c.compile(node.args[1])


def _iscolumnexists(c: ExprCompiler, node: K.Call) -> Typed:
    """The deprecated ``iscolumnexists(name)``: whether the row has a column of that name."""
    return Typed(S.Lit(_named_column(c, node) is not None), "bool")


def _ingestion_time(c: ExprCompiler, node: K.Call) -> Typed:
    """When the row arrived: an OTel table's ``ingest_time``, else null, as ADX answers for a
    table without an ingestion-time policy (a datatable, a computed row)."""
    column = c.scope.columns.get("ingest_time")
    if column is not None and column.type == "datetime":
        return column
    return typed_null("datetime")


def reads_columns(expr: Any) -> bool:
    """Whether an SQL tree reads a column of the current row (subqueries aside)."""
    if isinstance(expr, S.Col):
        return True
    if isinstance(expr, S.ScalarSubquery) or not dataclasses.is_dataclass(expr):
        return False
    for f in dataclasses.fields(expr):
        value = getattr(expr, f.name)
        items = value if isinstance(value, list | tuple) else [value]
        if any(reads_columns(v) for v in items):
            return True
    return False


def _toscalar(c: ExprCompiler, node: K.Call) -> Typed:
    host = c.scope.host
    if host is None or not node.args:
        raise unsupported(node, "toscalar needs a tabular argument")
    # toscalar() is evaluated once per query: it cannot use a value of the current row (a
    # function parameter bound to a column, say).
    for ref in node.args[0].walk():
        if isinstance(ref, K.NameRef):
            bound = c.scope.lets.get(ref.name)
            if isinstance(bound, Typed) and reads_columns(bound.sql):
                raise unsupported(
                    ref,
                    f"toscalar() cannot depend on the row value '{ref.name}'",
                    code="InvalidArgument",
                )
    if isinstance(node.args[0], K.Pipeline):
        relation = host.tabular(node.args[0])
    else:
        try:
            relation = host.tabular(node.args[0])
        except CompileError:
            return c.compile(node.args[0])
    name, kql_type = relation.columns[0]
    value: S.Expr = S.Col(name)
    if kql_type == "string":
        # A stored string column is LowCardinality(Nullable(String)), which ClickHouse cannot
        # make the Nullable a scalar sub-query over no rows gives (code 125, a partition's
        # window without that key's rows): KQL's string, plain.
        value = T("ifNull(CAST({0} AS Nullable(String)), '')", value)
    query = S.Select(columns=[(value, None)], from_=relation.source(), limit=lit(1))
    return Typed(S.ScalarSubquery(query), kql_type)


def _pack_all(c: ExprCompiler, node: K.Call) -> Typed:
    skip_nulls = (
        bool(node.args) and isinstance(node.args[0], K.Literal) and node.args[0].value is True
    )
    args: list[Typed] = []
    pairs = []
    row = c.scope.input_columns if c.scope.input_columns is not None else c.scope.columns
    for name, value in row.items():
        if name.startswith("__"):
            continue
        pairs.append((name, value))
    for name, value in pairs:
        args += [Typed(lit(name), "string"), value]
    bag = bag_pack(c, args, node)
    if skip_nulls:
        return Typed(
            T(
                "concat('{{', arrayStringConcat(arrayMap(kv -> concat(toJSONString(kv.1), ':', kv.2), "
                "arrayFilter(kv -> kv.2 NOT IN ('null', '\"\"', '{{}}', '[]'), JSONExtractKeysAndValuesRaw({0}))), ','), '}}')",
                bag.sql,
            ),
            "dynamic",
        )
    return bag


def column_names_of(c: ExprCompiler, node: K.Call) -> Typed:
    host = c.scope.host
    if host is None or not node.args:
        raise unsupported(node, "column_names_of needs a tabular argument")
    relation = host.tabular(node.args[0])
    names = [n for n, _ in relation.columns if not n.startswith("__")]
    return Typed(S.Lit(json.dumps(names, separators=(",", ":"))), "dynamic")


# Calls compiled from their syntax node (the row or a tabular argument), not their values.
SPECIAL: dict[str, Callable[[ExprCompiler, K.Call], Typed]] = {
    "column_ifexists": _column_ifexists,
    "columnifexists": _column_ifexists,
    "iscolumnexists": _iscolumnexists,
    "ingestion_time": _ingestion_time,
    "estimate_data_size": estimate_data_size,
    "toscalar": _toscalar,
    "pack_all": _pack_all,
    "column_names_of": column_names_of,
}
