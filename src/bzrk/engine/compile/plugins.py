"""`evaluate` plugins: the registry that dispatches them, and the analytics plugins.

Most analytics plugins (rolling_percentile, sliding_window_counts, activity_*, session_count,
active_users_count) are compiled as a KQL template: their column arguments become hidden
columns of the input (`__id`, `__ts`, ...), their scalar arguments `let` values, and the
template is a plain KQL query over `__in` that the compiler translates like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.expressions import ExprCompiler
from bzrk.engine.compile.typed import T, lit
from bzrk.engine.types import clickhouse_type
from bzrk.kql import syntax as K
from bzrk.kql.parser import parse

if TYPE_CHECKING:
    from bzrk.engine.compile.query import QueryCompiler, Relation

Plugin = Callable[["QueryCompiler", K.Evaluate, "Relation"], "Relation"]


def _args(op: K.Evaluate) -> tuple[list[K.Expr], dict[str, K.Expr]]:
    positional = [a for a in op.plugin.args if not isinstance(a, K.NamedArg)]
    named = {a.name.lower(): a.value for a in op.plugin.args if isinstance(a, K.NamedArg)}
    return positional, named


def _need(op: K.Evaluate, args: list[K.Expr], count: int, usage: str) -> None:
    if len(args) < count:
        raise unsupported(op.plugin, f"usage: {usage}", code="WrongArgumentCount")


def _column_name(node: K.Expr) -> str | None:
    from bzrk.engine.compile.naming import _expr_name

    return _expr_name(node)


def _dims(op: K.Evaluate, nodes: list[K.Expr], relation: Relation) -> list[str]:
    names = []
    for node in nodes:
        name = _column_name(node)
        if name is None or name not in dict(relation.columns):
            raise unsupported(node, "a dimension must be a column of the input", code="UnknownName")
        names.append(name)
    return names


def _template(
    qc: QueryCompiler,
    op: K.Evaluate,
    relation: Relation,
    columns: dict[str, K.Expr],
    scalars: dict[str, K.Expr],
    text: str,
    tables: dict[str, K.Expr] | None = None,
) -> Relation:
    """Run the KQL `text` over `__in` (the input plus `columns`), with `scalars` (and
    `tables`) as lets."""
    from bzrk.engine.compile.query import op_extend
    from bzrk.engine.compile.row_order import _strip_rn

    relation = _strip_rn(qc, relation)
    if columns:
        items = tuple(K.NamedExpr(node.span, (name,), node) for name, node in columns.items())
        relation = op_extend(qc, K.Extend(op.span, items), relation)
    bindings: dict[str, object] = {"__in": relation}
    for name, node in scalars.items():
        bindings[name] = ExprCompiler(relation.scope(qc.lets)).compile(node)
    for name, node in (tables or {}).items():
        bindings[name] = qc.tabular(node)
    saved = qc.lets
    qc.lets = {**saved, **bindings}
    try:
        result: Relation | None = None
        for statement in parse(text).statements:
            if isinstance(statement, K.LetStatement):
                qc.lets[statement.name] = qc._let_value(statement.value)
            elif isinstance(statement, K.ExprStatement):
                result = qc.tabular(statement.expr)
        assert result is not None
        return result
    except CompileError as error:
        # The template is ours: report the failure at the plugin call.
        raise unsupported(op.plugin, f"{op.plugin.name}: {error}", code=error.code) from None
    finally:
        qc.lets = saved


def _by(dims: list[str]) -> str:
    return "".join(f", {d}" for d in dims)


def _join_on(keys: list[str]) -> str:
    return ", ".join(keys)


# --- windowed counts -----------------------------------------------------------------------


def rolling_percentile(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = _args(op)
    _need(
        op,
        args,
        5,
        "rolling_percentile(ValueColumn, Percentile, IndexColumn, BinSize, BinsToLookBack [, dim ...])",
    )
    value, pct, index = args[0], args[1], args[2]
    if not isinstance(pct, K.Literal) or not isinstance(pct.value, int | float):
        raise unsupported(
            pct, "rolling_percentile: the percentile must be a number", code="InvalidArgument"
        )
    if not isinstance(args[4], K.Literal) or not isinstance(args[4].value, int):
        raise unsupported(
            args[4], "rolling_percentile: BinsToLookBack must be an integer", code="InvalidArgument"
        )
    dims = _dims(op, args[5:], relation)
    ts_name = _column_name(index) or "Timestamp"
    value_name = _column_name(value) or "value"
    out = f"rolling_{args[4].value}_percentile_{value_name}_{pct.text}"
    keys = ["$left.__t == $right.__bin"] + [f"$left.{d} == $right.{d}" for d in dims]
    text = f"""
let __b = __in | extend __bin = bin(__ts, __size);
__b
| extend __k = range(0, {args[4].value} - 1, 1)
| mv-expand __k to typeof(long)
| extend __t = __bin + __k * __size
| summarize __p = percentile(__val, {pct.text}) by __t{_by(dims)}
| join kind=inner (__b | distinct __bin{_by(dims)}) on {_join_on(keys)}
| project ['{ts_name}'] = __t{_by(dims)}, ['{out}'] = __p
"""
    return _template(qc, op, relation, {"__val": value, "__ts": index}, {"__size": args[3]}, text)


def sliding_window_counts(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = _args(op)
    _need(
        op,
        args,
        6,
        "sliding_window_counts(IdColumn, TimelineColumn, Start, End, LookbackWindow, Bin [, dim ...])",
    )
    dims = _dims(op, args[6:], relation)
    ts_name = _column_name(args[1]) or "Timestamp"
    text = f"""
__in
| where __ts >= __start and __ts < __end + __bin
| extend __b0 = bin_at(__ts, __bin, __start)
| extend __k = range(0, tolong(__lookback / __bin) - 1, 1)
| mv-expand __k to typeof(long)
| extend __t = __b0 + __k * __bin
| where __t <= __end
| summarize Count = count(), Dcount = dcount(__id) by __t{_by(dims)}
| project ['{ts_name}'] = __t{_by(dims)}, Count, Dcount
| order by ['{ts_name}'] asc
"""
    return _template(
        qc,
        op,
        relation,
        {"__id": args[0], "__ts": args[1]},
        {"__start": args[2], "__end": args[3], "__lookback": args[4], "__bin": args[5]},
        text,
    )


# The activity plugins' input: each row's window (`bin_at` from Start), rows outside Start..End
# dropped.
_WINDOWED_INPUT = """let __b = __in
    | extend __bin = bin_at(__ts, __window, __start)
    | where __bin >= __start and __bin <= __end"""


def activity_counts_metrics(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = _args(op)
    _need(
        op,
        args,
        5,
        "activity_counts_metrics(IdColumn, TimelineColumn, Start, End, Window [, dim ...])",
    )
    dims = _dims(op, args[5:], relation)
    ts_name = _column_name(args[1]) or "Timestamp"
    keys = _join_on(["__bin", *dims])
    text = f"""
{_WINDOWED_INPUT}
    | extend __one = 1;
let __first = __b | summarize __from = min(__bin) by __id{_by(dims)}, __one;
let __new = __first | summarize new_dcount = count() by __bin = __from{_by(dims)};
let __agg = __b
    | distinct __bin{_by(dims)}, __one
    | join kind=inner (__first) on __one{_by(dims)}
    | where __from <= __bin
    | summarize aggregated_dcount = count() by __bin{_by(dims)};
__b
| summarize ['count'] = count(), dcount = dcount(__id) by __bin{_by(dims)}
| join kind=leftouter (__new) on {keys}
| join kind=leftouter (__agg) on {keys}
| project ['{ts_name}'] = __bin{_by(dims)}, ['count'], dcount,
    new_dcount = coalesce(new_dcount, 0), aggregated_dcount = coalesce(aggregated_dcount, 0)
| order by ['{ts_name}'] asc
"""
    return _template(
        qc,
        op,
        relation,
        {"__id": args[0], "__ts": args[1]},
        {"__start": args[2], "__end": args[3], "__window": args[4]},
        text,
    )


def active_users_count(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = _args(op)
    _need(
        op,
        args,
        8,
        "active_users_count(IdColumn, TimelineColumn, Start, End, LookbackWindow, Period, "
        "ActivePeriodsCount, Bin [, dim ...])",
    )
    dims = _dims(op, args[8:], relation)
    ts_name = _column_name(args[1]) or "Timestamp"
    # A user counts in a bin when one of its appearances there has, within the lookback
    # window ending at that appearance, appearances in at least ActivePeriodsCount periods.
    text = f"""
__in
| where __ts >= __start and __ts <= __end
| extend __bin = bin_at(__ts, __binsize, __start)
| join kind=inner (__in | project __id2 = __id, __ts2 = __ts) on $left.__id == $right.__id2
| where __ts2 > __ts - __lookback and __ts2 <= __ts
| summarize __periods = dcount(bin(__ts2, __period)) by __id, __ts, __bin{_by(dims)}
| where __periods >= __active
| summarize dcount = dcount(__id) by __bin{_by(dims)}
| project ['{ts_name}'] = __bin{_by(dims)}, dcount
| order by ['{ts_name}'] asc
"""
    return _template(
        qc,
        op,
        relation,
        {"__id": args[0], "__ts": args[1]},
        {
            "__start": args[2],
            "__end": args[3],
            "__lookback": args[4],
            "__period": args[5],
            "__active": args[6],
            "__binsize": args[7],
        },
        text,
    )


def session_count(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = _args(op)
    _need(
        op,
        args,
        6,
        "session_count(IdColumn, TimelineColumn, Start, End, Bin, LookBackWindow [, dim ...])",
    )
    dims = _dims(op, args[6:], relation)
    ts_name = _column_name(args[1]) or "Timeline"
    # A session starts at an id's first appearance and at every appearance that follows the
    # previous one by at least LookBackWindow; each bin counts the sessions starting in it.
    text = f"""
__in
| where __ts >= __start and __ts <= __end
| sort by __id asc{"".join(f", {d} asc" for d in dims)}, __ts asc
| extend __prev = prev(__ts), __pid = prev(__id)
| where isnull(__pid) or __pid != __id or __ts - __prev >= __lookback
| summarize count_sessions = count() by __bin = bin(__ts, __binsize){_by(dims)}
| project ['{ts_name}'] = __bin{_by(dims)}, count_sessions
| order by ['{ts_name}'] asc
"""
    return _template(
        qc,
        op,
        relation,
        {"__id": args[0], "__ts": args[1]},
        {"__start": args[2], "__end": args[3], "__binsize": args[4], "__lookback": args[5]},
        text,
    )


def activity_engagement(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = _args(op)
    _need(
        op,
        args,
        6,
        "activity_engagement(IdColumn, TimelineColumn, [Start, End,] InnerActivityWindow, "
        "OuterActivityWindow [, dim ...])",
    )
    dims = _dims(op, args[6:], relation)
    ts_name = _column_name(args[1]) or "Timestamp"
    keys = _join_on(["__t", *dims])
    text = f"""
let __b = __in
    | extend __bin = bin_at(__ts, __inner, __start)
    | where __bin >= __start and __bin <= __end;
let __inside = __b | summarize dcount_activities_inner = dcount(__id) by __t = __bin{_by(dims)};
let __outside = __b
    | extend __k = range(0, tolong(__outer / __inner) - 1, 1)
    | mv-expand __k to typeof(long)
    | extend __t = __bin + __k * __inner
    | where __t <= __end
    | summarize dcount_activities_outer = dcount(__id) by __t{_by(dims)};
__inside
| join kind=inner (__outside) on {keys}
| project ['{ts_name}'] = __t{_by(dims)}, dcount_activities_inner, dcount_activities_outer,
    activity_ratio = todouble(dcount_activities_inner) / dcount_activities_outer
| order by ['{ts_name}'] asc
"""
    return _template(
        qc,
        op,
        relation,
        {"__id": args[0], "__ts": args[1]},
        {"__start": args[2], "__end": args[3], "__inner": args[4], "__outer": args[5]},
        text,
    )


def activity_metrics(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = _args(op)
    _need(op, args, 5, "activity_metrics(IdColumn, TimelineColumn, Start, End, Window [, dim ...])")
    dims = _dims(op, args[5:], relation)
    ts_name = _column_name(args[1]) or "Timestamp"
    keys = _join_on(["__bin", *dims])
    # Retention: the share of the previous window's values seen again in this window.
    text = f"""
{_WINDOWED_INPUT};
let __seen = __b | distinct __id, __bin{_by(dims)};
let __first = __seen | summarize __from = min(__bin) by __id{_by(dims)};
let __new = __first | summarize dcount_newvalues = count() by __bin = __from{_by(dims)};
let __prev = __seen | extend __bin = __bin + __window | summarize __prevn = count() by __bin{_by(dims)};
let __kept = __seen
    | join kind=inner (__seen | extend __bin = __bin + __window) on __id, __bin{_by(dims)}
    | summarize __keptn = count() by __bin{_by(dims)};
__seen
| summarize dcount_values = count() by __bin{_by(dims)}
| join kind=leftouter (__new) on {keys}
| join kind=leftouter (__prev) on {keys}
| join kind=leftouter (__kept) on {keys}
| extend __rate = iff(isnull(__prevn) or __prevn == 0, real(null), todouble(coalesce(__keptn, 0)) / __prevn)
| project ['{ts_name}'] = __bin{_by(dims)}, dcount_values, dcount_newvalues = coalesce(dcount_newvalues, 0),
    retention_rate = __rate, churn_rate = 1.0 - __rate
| order by ['{ts_name}'] asc
"""
    return _template(
        qc,
        op,
        relation,
        {"__id": args[0], "__ts": args[1]},
        {"__start": args[2], "__end": args[3], "__window": args[4]},
        text,
    )


def new_activity_metrics(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = _args(op)
    _need(
        op,
        args,
        5,
        "new_activity_metrics(IdColumn, TimelineColumn, Start, End, Window [, Cohort [, Lookback]] "
        "[, dim ...])",
    )
    ts_name = _column_name(args[1]) or "Timestamp"
    scalars = {"__start": args[2], "__end": args[3], "__window": args[4]}
    cohort_filter = ""
    if len(args) > 5:
        scalars["__cohort"] = args[5]
        cohort_filter = "| where __from == bin_at(__cohort, __window, __start)"
    lookback = ""
    tables: dict[str, K.Expr] = {}
    if len(args) > 6:
        # Values the lookback table already holds (in its IdColumn) are not new.
        tables["__lookback"] = args[6]
        id_name = _column_name(args[0]) or ""
        lookback = f"| join kind=leftanti (__lookback | project __id = ['{id_name}']) on __id"
    if len(args) > 7:
        raise unsupported(args[7], "new_activity_metrics with dimensions is not supported")
    text = f"""
{_WINDOWED_INPUT}
    | extend __one = 1;
let __first = __b | summarize __from = min(__bin) by __id {lookback} {cohort_filter};
let __cohorts = __first | summarize dcount_new_values = count() by __from | extend __one = 1;
let __bins = __b | project __to = __bin, __one | distinct __to, __one;
let __kept = __first
    | join kind=inner (__b | project __id, __to = __bin | distinct __id, __to) on __id
    | where __to >= __from
    | summarize dcount_retained_values = count() by __from, __to;
__cohorts
| join kind=inner (__bins) on __one
| where __to >= __from
| join kind=leftouter (__kept) on __from, __to
| extend dcount_retained_values = coalesce(dcount_retained_values, 0)
| project ['from_{ts_name}'] = __from, ['to_{ts_name}'] = __to, dcount_new_values, dcount_retained_values,
    dcount_churn_values = dcount_new_values - dcount_retained_values,
    retention_rate = todouble(dcount_retained_values) / dcount_new_values,
    churn_rate = 1.0 - todouble(dcount_retained_values) / dcount_new_values
| order by ['from_{ts_name}'] asc, ['to_{ts_name}'] asc
"""
    return _template(qc, op, relation, {"__id": args[0], "__ts": args[1]}, scalars, text, tables)


# --- row plugins ---------------------------------------------------------------------------


def rows_near(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    """Rows within NumRows before (RowsAfter after) any row meeting the condition, in order."""
    from bzrk.engine.compile.row_order import _numbered

    args, _ = _args(op)
    _need(op, args, 2, "rows_near(Condition, NumRows [, RowsAfter])")
    counts = []
    for node in args[1:3]:
        if not isinstance(node, K.Literal) or not isinstance(node.value, int) or node.value < 0:
            raise unsupported(
                node, "rows_near: row counts are non-negative integers", code="InvalidArgument"
            )
        counts.append(node.value)
    before = counts[0]
    after = counts[1] if len(counts) > 1 else counts[0]
    relation = _numbered(qc, relation)
    compiler = ExprCompiler(relation.scope(qc.lets))
    cond = compiler.as_bool(compiler.compile(args[0]))
    keep = [(n, t) for n, t in relation.columns if n != "__rn"]
    marked = qc._select(
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
    return qc._new_cte(
        S.Select(
            columns=[(S.Col(n), n) for n, _ in keep],
            from_=marked.source(),
            where=T("`__near` = 1"),
            order_by=[(S.Col("__rn"), False, False)],
        ),
        keep,
        ordered=True,
    )


def dcount_intersect(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    """s0 … sN-1: the distinct count of the intersection of the first k+1 hll sketches."""
    from bzrk.engine.compile.row_order import _strip_rn

    args, _ = _args(op)
    _need(op, args, 2, "dcount_intersect(hll_1, hll_2 [, hll_3 ...])")
    relation = _strip_rn(qc, relation)
    compiler = ExprCompiler(relation.scope(qc.lets))
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
    return qc._select(relation, columns, out)


def ipv6_lookup(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    """`evaluate ipv6_lookup(Lookup, ip_column, range_column [, return_unmatched])`: the
    lookup columns, then the input's, for each (row, range holding its address)."""
    from bzrk.engine.compile.row_order import _strip_rn

    relation = _strip_rn(qc, relation)
    args, named = _args(op)
    _need(
        op, args, 3, "ipv6_lookup(LookupTable, SourceIPv6Key, IPv6LookupRange [, return_unmatched])"
    )
    lookup = _strip_rn(qc, qc.tabular(args[0]))
    ip_col, range_col = _column_name(args[1]), _column_name(args[2])
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
    matched = qc._new_cte(
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
    return qc._new_cte(
        S.UnionAll(
            [S.Select(columns=[(S.Col(n), n) for n, _ in out], from_=matched.source()), rest]
        ),
        out,
    )


# --- dispatch ------------------------------------------------------------------------------


def _registry() -> dict[str, Plugin]:
    from bzrk.engine.compile.geo_lookup import geo_lookup
    from bzrk.engine.compile.query import _bag_unpack, _ipv4_lookup

    return {
        "geo_polygon_lookup": lambda qc, op, rel: geo_lookup(qc, op, rel, "polygon"),
        "geo_line_lookup": lambda qc, op, rel: geo_lookup(qc, op, rel, "line"),
        "bag_unpack": _bag_unpack,
        "ipv4_lookup": _ipv4_lookup,
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


def op_evaluate(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    handler = _registry().get(op.plugin.name.lower())
    if handler is None:
        raise unsupported(op.plugin, f"plugin '{op.plugin.name}' is not supported")
    return handler(qc, op, relation)


# --- schema_merge --------------------------------------------------------------------------

_NUMERIC_RANK_SQL = (
    "multiIf({0} = 'int', 1, {0} = 'long', 2, {0} = 'decimal', 3, {0} = 'real', 4, 0)"
)


def schema_merge(qc: QueryCompiler, op: K.Evaluate, relation: Relation) -> Relation:
    """Merge getschema outputs into one schema.

    Rows are read in order. A new column is inserted at its ordinal (or appended); with
    PreserveOrder (the default) a column met again at another ordinal than where it first
    appeared is an error, as are types that do not reduce to one (numeric types widen).
    Error columns get ordinal -1; the others are numbered in merged order.
    """
    from bzrk.engine.compile.row_order import _numbered

    args, named = _args(op)
    preserve_node = named.get("preserveorder", args[0] if args else None)
    preserve = not (isinstance(preserve_node, K.Literal) and preserve_node.value is False)
    needed = {"ColumnName", "ColumnOrdinal", "DataType", "ColumnType"}
    if not needed <= set(dict(relation.columns)):
        raise unsupported(op.plugin, "schema_merge needs getschema output", code="InvalidArgument")
    relation = _numbered(qc, relation)
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
    merged = qc._new_cte(
        S.Select(columns=[(S.Template(fold), "__sm_cols")], from_=relation.source()), []
    )
    position = (
        "if(tupleElement(`__sm_c`, 5) != '', toInt64(-1), toInt64(arrayCount(__sm_e -> tupleElement(__sm_e, 5) = '', "
        "arraySlice(`__sm_cols`, 1, `__sm_n`)) - 1))"
    )
    error_type = "concat('ERROR(unknown CSL type:ERROR(', tupleElement(`__sm_c`, 5), '))')"
    return qc._new_cte(
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
