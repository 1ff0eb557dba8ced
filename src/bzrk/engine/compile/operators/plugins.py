"""`evaluate` plugins: the registry that dispatches them, and the row plugins (`rows_near`,
`dcount_intersect`, `ipv6_lookup`, `schema_merge`).

The analytics plugins compiled as KQL templates are in ``analytics.py``; `ipv4_lookup` and
`bag_unpack` in ``lookups.py``, the `geo_*_lookup` plugins in ``geo_lookup.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.operators.analytics import (
    Plugin,
    active_users_count,
    activity_counts_metrics,
    activity_engagement,
    activity_metrics,
    column_name,
    need,
    new_activity_metrics,
    plugin_args,
    rolling_percentile,
    session_count,
    sliding_window_counts,
)
from bzrk.engine.compile.operators.geo_lookup import geo_lookup
from bzrk.engine.compile.operators.lookups import bag_unpack, ipv4_lookup
from bzrk.engine.compile.operators.narrow import narrow
from bzrk.engine.compile.operators.pivot import pivot
from bzrk.engine.compile.operators.results import preview
from bzrk.engine.compile.row_order import numbered, strip_rn
from bzrk.engine.compile.typed import T, lit
from bzrk.engine.types import clickhouse_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation


# --- row plugins ---------------------------------------------------------------------------


def rows_near(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    """Rows within NumRows before (RowsAfter after) any row meeting the condition, in order."""

    args, _ = plugin_args(op)
    need(op, args, 2, "rows_near(Condition, NumRows [, RowsAfter])")
    counts = []
    for node in args[1:3]:
        if not isinstance(node, K.Literal) or not isinstance(node.value, int) or node.value < 0:
            raise unsupported(
                node, "rows_near: row counts are non-negative integers", code="InvalidArgument"
            )
        counts.append(node.value)
    before = counts[0]
    after = counts[1] if len(counts) > 1 else counts[0]
    relation = numbered(ctx, relation)
    compiler = ExprCompiler(ctx.scope(relation))
    cond = compiler.as_bool(compiler.compile(args[0]))
    keep = [(n, t) for n, t in relation.columns if n != "__rn"]
    marked = ctx.select(
        relation,
        [(S.Col(n), n) for n, _ in relation.columns]
        + [
            (
                T(
                    f"max(toUInt8(ifNull({{0}}, false))) OVER (ORDER BY `__rn` "
                    f"ROWS BETWEEN {after} PRECEDING AND {before} FOLLOWING)",
                    cond,
                ),
                "__near",
            )
        ],
        [*relation.columns, ("__near", "long")],
    )
    return ctx.new_cte(
        S.Select(
            columns=[(S.Col(n), n) for n, _ in keep],
            from_=marked.source(),
            where=T("`__near` = 1"),
            order_by=[(S.Col("__rn"), False, False)],
        ),
        keep,
        ordered=True,
    )


def dcount_intersect(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    """s0 … sN-1: the distinct count of the intersection of the first k+1 hll sketches."""

    args, _ = plugin_args(op)
    need(op, args, 2, "dcount_intersect(hll_1, hll_2 [, hll_3 ...])")
    relation = strip_rn(ctx, relation)
    compiler = ExprCompiler(ctx.scope(relation))
    sketches = [compiler.compile(a) for a in args]
    columns: list[tuple[S.Expr, str]] = [(S.Col(n), n) for n, _ in relation.columns]
    out = list(relation.columns)
    for k in range(len(sketches)):
        sets = ", ".join(f"JSONExtractArrayRaw(ifNull({{{i}}}, '[]'))" for i in range(k + 1))
        columns.append(
            (
                T(f"toInt64(length(arrayIntersect({sets})))", *[s.sql for s in sketches[: k + 1]]),
                f"s{k}",
            )
        )
        out.append((f"s{k}", "long"))
    return ctx.select(relation, columns, out)


def ipv6_lookup(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    """`evaluate ipv6_lookup(Lookup, ip_column, range_column [, return_unmatched])`: the
    lookup columns, then the input's, for each (row, range holding its address)."""

    relation = strip_rn(ctx, relation)
    args, named = plugin_args(op)
    need(
        op, args, 3, "ipv6_lookup(LookupTable, SourceIPv6Key, IPv6LookupRange [, return_unmatched])"
    )
    lookup = strip_rn(ctx, ctx.tabular(args[0]))
    ip_col, range_col = column_name(args[1]), column_name(args[2])
    if ip_col not in dict(relation.columns) or range_col not in dict(lookup.columns):
        raise unsupported(op.plugin, "ipv6_lookup columns must exist", code="UnknownName")
    unmatched = named.get("return_unmatched", args[3] if len(args) > 3 else None)
    keep_unmatched = isinstance(unmatched, K.Literal) and unmatched.value is True
    left = list(relation.columns)
    right = [(n, t) for n, t in lookup.columns if n not in dict(left)]
    out = right + left
    address = "splitByChar('/', {0})[1]"
    cond = T(
        f"(isIPv6String({address}) OR isIPv4String({address})) AND "
        f"isIPAddressInRange({address}, if(position({{1}}, '/') > 0, {{1}}, concat({{1}}, '/128')))",
        S.Col(ip_col, "L"),
        S.Col(range_col, "R"),
    )
    matched = ctx.new_cte(
        S.Select(
            columns=[(S.Col(n, "R"), n) for n, _ in right] + [(S.Col(n, "L"), n) for n, _ in left],
            from_=relation.source("L"),
            joins=[S.Join("CROSS", lookup.source("R"))],
            where=cond,
        ),
        out,
    )
    if not keep_unmatched:
        return matched
    rest = S.Select(
        columns=[
            (lit("") if t == "string" else S.Cast(lit(None), clickhouse_type(t)), n)
            for n, t in right
        ]
        + [(S.Col(n), n) for n, _ in left],
        from_=relation.source(),
        where=S.InList(
            S.Col(ip_col),
            S.Select(columns=[(S.Col(ip_col), None)], from_=matched.source()),
            negated=True,
        ),
    )
    return ctx.new_cte(
        S.UnionAll(
            [S.Select(columns=[(S.Col(n), n) for n, _ in out], from_=matched.source()), rest]
        ),
        out,
    )


# --- dispatch ------------------------------------------------------------------------------


def _registry() -> dict[str, Plugin]:

    return {
        "geo_polygon_lookup": lambda ctx, op, rel: geo_lookup(ctx, op, rel, "polygon"),
        "geo_line_lookup": lambda ctx, op, rel: geo_lookup(ctx, op, rel, "line"),
        "bag_unpack": bag_unpack,
        "pivot": pivot,
        "narrow": narrow,
        "preview": preview,
        "ipv4_lookup": ipv4_lookup,
        "ipv6_lookup": ipv6_lookup,
        "rows_near": rows_near,
        "dcount_intersect": dcount_intersect,
        "rolling_percentile": rolling_percentile,
        "sliding_window_counts": sliding_window_counts,
        "activity_counts_metrics": activity_counts_metrics,
        "active_users_count": active_users_count,
        "session_count": session_count,
        "activity_engagement": activity_engagement,
        "activity_metrics": activity_metrics,
        "new_activity_metrics": new_activity_metrics,
        "schema_merge": schema_merge,
    }


def op_evaluate(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    handler = _registry().get(op.plugin.name.lower())
    if handler is None:
        raise unsupported(op.plugin, f"plugin '{op.plugin.name}' is not supported")
    return handler(ctx, op, relation)


# --- schema_merge --------------------------------------------------------------------------

_NUMERIC_RANK_SQL = (
    "multiIf({0} = 'int', 1, {0} = 'long', 2, {0} = 'decimal', 3, {0} = 'real', 4, 0)"
)


def schema_merge(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    """Merge getschema outputs into one schema.

    Rows are read in order. A new column is inserted at its ordinal (or appended); with
    PreserveOrder (the default) a column met again at another ordinal than where it first
    appeared is an error, as are types that do not reduce to one (numeric types widen).
    Error columns get ordinal -1; the others are numbered in merged order.
    """

    args, named = plugin_args(op)
    preserve_node = named.get("preserveorder", args[0] if args else None)
    preserve = not (isinstance(preserve_node, K.Literal) and preserve_node.value is False)
    needed = {"ColumnName", "ColumnOrdinal", "DataType", "ColumnType"}
    if not needed <= set(dict(relation.columns)):
        raise unsupported(op.plugin, "schema_merge needs getschema output", code="InvalidArgument")
    relation = numbered(ctx, relation)
    entry = "Tuple(String, Int64, String, String, String)"
    rank_new = _NUMERIC_RANK_SQL.format("tupleElement(__sm_r, 4)")
    rank_old = _NUMERIC_RANK_SQL.format("tupleElement(__sm_acc[__sm_i], 4)")
    merge_existing = (
        "arrayMap((__sm_e, __sm_k) -> if(__sm_k != __sm_i OR tupleElement(__sm_e, 5) != '', __sm_e, "
        "multiIf("
        f"{'tupleElement(__sm_e, 2) != tupleElement(__sm_r, 2)' if preserve else 'false'}, "
        "tuple(tupleElement(__sm_e, 1), tupleElement(__sm_e, 2), tupleElement(__sm_e, 3), "
        "tupleElement(__sm_e, 4), 'columns are out of order'), "
        "tupleElement(__sm_e, 4) = tupleElement(__sm_r, 4), __sm_e, "
        f"{rank_new} > 0 AND {rank_old} > 0, if({rank_new} > {rank_old}, "
        "tuple(tupleElement(__sm_e, 1), tupleElement(__sm_e, 2), tupleElement(__sm_r, 3), tupleElement(__sm_r, 4), ''), __sm_e), "
        "tuple(tupleElement(__sm_e, 1), tupleElement(__sm_e, 2), tupleElement(__sm_e, 3), "
        "tupleElement(__sm_e, 4), 'types cannot be merged'))), __sm_acc, arrayEnumerate(__sm_acc))"
    )
    insert = (
        "arrayConcat(arraySlice(__sm_acc, 1, least(greatest(tupleElement(__sm_r, 2), 0), toInt64(length(__sm_acc)))), "
        "[tuple(tupleElement(__sm_r, 1), tupleElement(__sm_r, 2), tupleElement(__sm_r, 3), tupleElement(__sm_r, 4), '')], "
        "arraySlice(__sm_acc, least(greatest(tupleElement(__sm_r, 2), 0), toInt64(length(__sm_acc))) + 1))"
    )
    fold = (
        "arrayFold((__sm_acc, __sm_r) -> CAST(arrayMap(__sm_i -> if(__sm_i = 0, "
        + insert
        + ", "
        + merge_existing
        + "), [arrayFirstIndex(__sm_e -> tupleElement(__sm_e, 1) = tupleElement(__sm_r, 1), __sm_acc)])[1], "
        f"'Array({entry})'), "
        "arrayMap(__sm_x -> tuple(__sm_x.2, toInt64(__sm_x.3), __sm_x.4, __sm_x.5), "
        "arraySort(__sm_x -> __sm_x.1, groupArray(tuple(`__rn`, `ColumnName`, `ColumnOrdinal`, `DataType`, `ColumnType`)))), "
        f"CAST([], 'Array({entry})'))"
    )
    merged = ctx.new_cte(
        S.Select(columns=[(S.Template(fold), "__sm_cols")], from_=relation.source()), []
    )
    position = (
        "if(tupleElement(`__sm_c`, 5) != '', toInt64(-1), toInt64(arrayCount(__sm_e -> tupleElement(__sm_e, 5) = '', "
        "arraySlice(`__sm_cols`, 1, `__sm_n`)) - 1))"
    )
    error_type = "concat('ERROR(unknown CSL type:ERROR(', tupleElement(`__sm_c`, 5), '))')"
    return ctx.new_cte(
        S.Select(
            columns=[
                (S.Template("tupleElement(`__sm_c`, 1)"), "ColumnName"),
                (S.Template(position), "ColumnOrdinal"),
                (
                    S.Template(
                        f"if(tupleElement(`__sm_c`, 5) != '', {error_type}, tupleElement(`__sm_c`, 3))"
                    ),
                    "DataType",
                ),
                (
                    S.Template(
                        "if(tupleElement(`__sm_c`, 5) != '', concat('ERROR(', tupleElement(`__sm_c`, 5), ')'), "
                        "tupleElement(`__sm_c`, 4))"
                    ),
                    "ColumnType",
                ),
            ],
            from_=merged.source(),
            array_join=[
                (S.Col("__sm_cols"), "__sm_c"),
                (T("arrayEnumerate(`__sm_cols`)"), "__sm_n"),
            ],
        ),
        [
            ("ColumnName", "string"),
            ("ColumnOrdinal", "long"),
            ("DataType", "string"),
            ("ColumnType", "string"),
        ],
        ordered=True,
    )
