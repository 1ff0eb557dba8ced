"""The built-in row plugins kept with the compiler: `ipv4_lookup` and `bag_unpack`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.naming import expr_name
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.row_order import strip_rn
from bzrk.engine.compile.typed import T, Typed, cast_to, lit
from bzrk.engine.types import clickhouse_type, normalize_kql_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext

_JSON_TYPE_TO_KQL = {
    "Int64": "long",
    "UInt64": "long",
    "Double": "real",
    "String": "string",
    "Bool": "bool",
}


def ipv4_lookup(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    """`evaluate ipv4_lookup(Lookup, ip_column, range_column [, return_unmatched])`.

    Each row meets the lookup rows whose CIDR range holds its address (a filtered cross join:
    lookup tables are small); unmatched rows stay when asked, with empty lookup columns.
    """
    relation = strip_rn(ctx, relation)
    args = [a for a in op.plugin.args if not isinstance(a, K.NamedArg)]
    named = {a.name.lower(): a.value for a in op.plugin.args if isinstance(a, K.NamedArg)}
    if len(args) < 3:
        raise unsupported(
            op.plugin, "ipv4_lookup needs a table and two columns", code="WrongArgumentCount"
        )
    lookup = strip_rn(ctx, ctx.tabular(args[0]))
    ip_col, range_col = expr_name(args[1]), expr_name(args[2])
    if ip_col not in dict(relation.columns) or range_col not in dict(lookup.columns):
        raise unsupported(op.plugin, "ipv4_lookup columns must exist", code="UnknownName")
    unmatched_node = named.get("return_unmatched", args[3] if len(args) > 3 else None)
    keep_unmatched = isinstance(unmatched_node, K.Literal) and unmatched_node.value is True
    left_names = [n for n, _ in relation.columns]
    right = [(n, t) for n, t in lookup.columns if n not in left_names]
    out = list(relation.columns) + right
    cidr = "if(position({1}, '/') > 0, {1}, concat({1}, '/32'))"
    cond = T(
        "(isIPv4String(splitByChar('/', {0})[1]) AND isIPAddressInRange(splitByChar('/', {0})[1], "
        + cidr
        + "))",
        S.Col(ip_col, "L"),
        S.Col(range_col, "R"),
    )
    matched = matching_pairs(relation, lookup, left_names, [n for n, _ in right], cond)
    if not keep_unmatched:
        return ctx.new_cte(matched, out)
    matched_rel = ctx.new_cte(matched, out)
    rest = unmatched_rows(
        relation,
        right,
        S.InList(
            S.Col(ip_col),
            S.Select(columns=[(S.Col(ip_col), None)], from_=matched_rel.source()),
            negated=True,
        ),
    )
    return ctx.new_cte(
        S.UnionAll(
            [S.Select(columns=[(S.Col(n), n) for n, _ in out], from_=matched_rel.source()), rest]
        ),
        out,
    )


def bag_unpack(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    relation = strip_rn(ctx, relation)
    args = [a for a in op.plugin.args if not isinstance(a, K.NamedArg)]
    named = {a.name.lower(): a.value for a in op.plugin.args if isinstance(a, K.NamedArg)}
    if not args:
        raise unsupported(op.plugin, "bag_unpack needs a column", code="WrongArgumentCount")
    scope = ctx.scope(relation)
    bag = ExprCompiler(scope).compile(args[0])
    bag_name = expr_name(args[0])
    prefix = ""
    if len(args) > 1 and isinstance(args[1], K.Literal) and isinstance(args[1].value, str):
        prefix = args[1].value
    conflict_node = named.get("columnsconflict")
    conflict = conflict_node.value if isinstance(conflict_node, K.Literal) else "error"
    ignored: set[str] = set()
    ignored_node = named.get("ignoredproperties")
    if isinstance(ignored_node, K.Literal) and isinstance(ignored_node.value, list):
        ignored = {str(v) for v in ignored_node.value}
    keys: list[tuple[str, str]] = []
    # `: (*, k: type, ...)` keeps every input column; without `*` the schema is the whole output.
    keep_all = any(c.name == "*" for c in op.schema)
    listed = [c.name for c in op.schema if c.name != "*"]
    if op.schema:
        keys = [
            (c.name, normalize_kql_type(c.type))
            for c in op.schema
            if c.name != "*" and c.name not in dict(relation.columns)
        ]
    else:
        if ctx.probe is None:
            raise unsupported(op, "bag_unpack needs a discovery query, which is not available here")
        discovery = S.Select(
            columns=[(T("kv.1"), "k"), (T("groupUniqArray(toString(JSONType(kv.2)))"), "types")],
            from_=S.Subquery(
                S.Select(
                    columns=[
                        (
                            T("arrayJoin(JSONExtractKeysAndValuesRaw(ifNull({0}, '')))", bag.sql),
                            "kv",
                        )
                    ],
                    from_=relation.source(),
                )
            ),
            group_by=[T("kv.1")],
            order_by=[(S.Col("k"), False, False)],
        )
        for row in ctx.discover(discovery):
            kinds = [t for t in row["types"] if t != "Null"]
            kql_type = _JSON_TYPE_TO_KQL.get(kinds[0], "dynamic") if len(kinds) == 1 else "dynamic"
            keys.append((str(row["k"]), kql_type))
    keys = [(k, t) for k, t in keys if k not in ignored]
    existing = [(n, t) for n, t in relation.columns if n != bag_name]
    if op.schema and not keep_all:
        existing = [(n, t) for n, t in existing if n in listed]
    existing_names = {n for n, _ in existing}
    values: dict[str, Typed] = {}
    for key, kql_type in keys:
        column = prefix + key
        raw = T("nullIf(JSONExtractRaw(ifNull({0}, ''), {1}), '')", bag.sql, S.Lit(key))
        values[column] = cast_to(Typed(raw, "dynamic"), kql_type)
        if column in existing_names and conflict == "error":
            raise unsupported(
                op, f"bag_unpack: column '{column}' already exists", code="InvalidArgument"
            )
    columns: list[tuple[S.Expr, str]] = []
    out: list[tuple[str, str]] = []
    for n, t in existing:
        if n in values and conflict == "replace_source":
            columns.append((values[n].sql, n))
            out.append((n, values[n].type))
        else:
            columns.append((S.Col(n), n))
            out.append((n, t))
    for n, value in values.items():
        if n in existing_names:
            continue
        columns.append((value.sql, n))
        out.append((n, value.type))
    if op.schema and not keep_all:
        order = {name: i for i, name in enumerate(listed)}
        ranked = sorted(
            zip(columns, out, strict=True), key=lambda pair: order.get(pair[1][0], len(order))
        )
        columns, out = [c for c, _ in ranked], [o for _, o in ranked]
    return ctx.select(relation, columns, out)


def matching_pairs(
    relation: Relation, lookup: Relation, left: list[str], right: list[str], cond: S.Expr
) -> S.Select:
    """Every (row, lookup row) pair meeting ``cond`` (over ``L``/``R`` columns): a lookup plugin's
    match, for small lookup tables that no equality key can join."""
    return S.Select(
        columns=[(S.Col(n, "L"), n) for n in left] + [(S.Col(n, "R"), n) for n in right],
        from_=relation.source("L"),
        joins=[S.Join("CROSS", lookup.source("R"))],
        where=cond,
    )


def unmatched_rows(relation: Relation, right: list[tuple[str, str]], where: S.Expr) -> S.Select:
    """The rows of ``relation`` meeting ``where`` with empty ``right`` columns: the unmatched
    rows a lookup plugin returns (``""`` for strings, null otherwise, as Kusto fills them)."""
    return S.Select(
        columns=[(S.Col(n), n) for n, _ in relation.columns]
        + [
            (lit("") if t == "string" else S.Cast(lit(None), clickhouse_type(t)), n)
            for n, t in right
        ],
        from_=relation.source(),
        where=where,
    )
