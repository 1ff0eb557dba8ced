"""The analytics plugins written as KQL templates over their input (`rolling_percentile`,
`sliding_window_counts`, `activity_*`, `active_users_count`, `session_count`), and the argument
helpers every plugin shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.naming import expr_name
from bzrk.engine.compile.operators.extend import op_extend
from bzrk.engine.compile.row_order import strip_rn
from bzrk.kql import syntax as K
from bzrk.kql.parser import parse

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation

Plugin = Callable[["CompileContext", K.Evaluate, "Relation"], "Relation"]


def plugin_args(op: K.Evaluate) -> tuple[list[K.Expr], dict[str, K.Expr]]:
    positional = [a for a in op.plugin.args if not isinstance(a, K.NamedArg)]
    named = {a.name.lower(): a.value for a in op.plugin.args if isinstance(a, K.NamedArg)}
    return positional, named


def need(op: K.Evaluate, args: list[K.Expr], count: int, usage: str) -> None:
    if len(args) < count:
        raise unsupported(op.plugin, f"usage: {usage}", code="WrongArgumentCount")


def column_name(node: K.Expr) -> str | None:

    return expr_name(node)


def _dims(op: K.Evaluate, nodes: list[K.Expr], relation: Relation) -> list[str]:
    names = []
    for node in nodes:
        name = column_name(node)
        if name is None or name not in dict(relation.columns):
            raise unsupported(node, "a dimension must be a column of the input", code="UnknownName")
        names.append(name)
    return names


def _template(
    ctx: CompileContext,
    op: K.Evaluate,
    relation: Relation,
    columns: dict[str, K.Expr],
    scalars: dict[str, K.Expr],
    text: str,
    tables: dict[str, K.Expr] | None = None,
) -> Relation:
    """Run the KQL `text` over `__in` (the input plus `columns`), with `scalars` (and
    `tables`) as lets."""

    relation = strip_rn(ctx, relation)
    if columns:
        items = tuple(K.NamedExpr(node.span, (name,), node) for name, node in columns.items())
        relation = op_extend(ctx, K.Extend(op.span, items), relation)
    bindings: dict[str, object] = {"__in": relation}
    for name, node in scalars.items():
        bindings[name] = ExprCompiler(ctx.scope(relation)).compile(node)
    for name, node in (tables or {}).items():
        bindings[name] = ctx.tabular(node)
    try:
        with ctx.bound(bindings):
            return ctx.run_block(parse(text).statements, op, "the template has no result")
    except CompileError as error:
        # The template is ours: report the failure at the plugin call.
        raise unsupported(op.plugin, f"{op.plugin.name}: {error}", code=error.code) from None


def _activity(
    ctx: CompileContext,
    op: K.Evaluate,
    relation: Relation,
    args: list[K.Expr],
    text: str,
    *scalars: str,
) -> Relation:
    """An activity plugin's `text` over (IdColumn, TimelineColumn, Start, End, ...): the id and
    time columns as `__id`/`__ts`, Start/End as `__start`/`__end`, the next arguments as
    `scalars` in order."""
    names = ("__start", "__end", *scalars)
    values = {name: args[2 + i] for i, name in enumerate(names)}
    return _template(ctx, op, relation, {"__id": args[0], "__ts": args[1]}, values, text)


def _by(dims: list[str]) -> str:
    return "".join(f", {d}" for d in dims)


def _join_on(keys: list[str]) -> str:
    return ", ".join(keys)


# --- windowed counts -----------------------------------------------------------------------


def rolling_percentile(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = plugin_args(op)
    need(
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
    ts_name = column_name(index) or "Timestamp"
    value_name = column_name(value) or "value"
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
    return _template(ctx, op, relation, {"__val": value, "__ts": index}, {"__size": args[3]}, text)


def sliding_window_counts(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = plugin_args(op)
    need(
        op,
        args,
        6,
        "sliding_window_counts(IdColumn, TimelineColumn, Start, End, LookbackWindow, Bin [, dim ...])",
    )
    dims = _dims(op, args[6:], relation)
    ts_name = column_name(args[1]) or "Timestamp"
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
    return _activity(ctx, op, relation, args, text, "__lookback", "__bin")


# The activity plugins' input: each row's window (`bin_at` from Start), rows outside Start..End
# dropped.
_WINDOWED_INPUT = """let __b = __in
    | extend __bin = bin_at(__ts, __window, __start)
    | where __bin >= __start and __bin <= __end"""


def activity_counts_metrics(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = plugin_args(op)
    need(
        op,
        args,
        5,
        "activity_counts_metrics(IdColumn, TimelineColumn, Start, End, Window [, dim ...])",
    )
    dims = _dims(op, args[5:], relation)
    ts_name = column_name(args[1]) or "Timestamp"
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
    return _activity(ctx, op, relation, args, text, "__window")


def active_users_count(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = plugin_args(op)
    need(
        op,
        args,
        8,
        "active_users_count(IdColumn, TimelineColumn, Start, End, LookbackWindow, Period, "
        "ActivePeriodsCount, Bin [, dim ...])",
    )
    dims = _dims(op, args[8:], relation)
    ts_name = column_name(args[1]) or "Timestamp"
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
    return _activity(
        ctx, op, relation, args, text, "__lookback", "__period", "__active", "__binsize"
    )


def session_count(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = plugin_args(op)
    need(
        op,
        args,
        6,
        "session_count(IdColumn, TimelineColumn, Start, End, Bin, LookBackWindow [, dim ...])",
    )
    dims = _dims(op, args[6:], relation)
    ts_name = column_name(args[1]) or "Timeline"
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
    return _activity(ctx, op, relation, args, text, "__binsize", "__lookback")


def activity_engagement(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = plugin_args(op)
    need(
        op,
        args,
        6,
        "activity_engagement(IdColumn, TimelineColumn, [Start, End,] InnerActivityWindow, "
        "OuterActivityWindow [, dim ...])",
    )
    dims = _dims(op, args[6:], relation)
    ts_name = column_name(args[1]) or "Timestamp"
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
    return _activity(ctx, op, relation, args, text, "__inner", "__outer")


def activity_metrics(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = plugin_args(op)
    need(op, args, 5, "activity_metrics(IdColumn, TimelineColumn, Start, End, Window [, dim ...])")
    dims = _dims(op, args[5:], relation)
    ts_name = column_name(args[1]) or "Timestamp"
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
    return _activity(ctx, op, relation, args, text, "__window")


def new_activity_metrics(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    args, _ = plugin_args(op)
    need(
        op,
        args,
        5,
        "new_activity_metrics(IdColumn, TimelineColumn, Start, End, Window [, Cohort [, Lookback]] "
        "[, dim ...])",
    )
    ts_name = column_name(args[1]) or "Timestamp"
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
        id_name = column_name(args[0]) or ""
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
    return _template(ctx, op, relation, {"__id": args[0], "__ts": args[1]}, scalars, text, tables)
