"""Operators that turn arrays into rows and rows into series: `mv-expand`, `mv-apply`, `make-series`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.aggregates import (
    AggregateContext,
    default_name,
)
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions import ExprCompiler
from bzrk.engine.compile.naming import _expr_name, _unique
from bzrk.engine.compile.ops_summarize import _by_name
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.row_order import _count_value, _strip_rn
from bzrk.engine.compile.typed import T, Typed, cast_to, lit, ticks, to_json
from bzrk.engine.types import normalize_kql_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.query import QueryCompiler


def op_mv_expand(
    qc: QueryCompiler, op: K.MvExpand, relation: Relation, *, keep_null: bool = True
) -> Relation:
    relation = _strip_rn(qc, relation)
    scope = relation.scope(qc.lets)
    params = {p.name: p.value for p in op.params}
    kind_node = params.get("kind")
    bag_array = isinstance(kind_node, K.NameRef) and kind_node.name == "array"
    if "bagexpansion" in params:
        bag_array = (
            isinstance(params["bagexpansion"], K.NameRef) and params["bagexpansion"].name == "array"
        )
    index_name = None
    if "with_itemindex" in params and isinstance(params["with_itemindex"], K.NameRef):
        index_name = params["with_itemindex"].name
    names: list[str] = []
    arrays: list[S.Expr] = []
    target_types: list[str] = []
    for i, item in enumerate(op.items):
        value = ExprCompiler(scope).compile(item.item.expr)
        name = (
            item.item.names[0]
            if item.item.names
            else (_expr_name(item.item.expr) or f"Column{i + 1}")
        )
        json_value = value.sql if value.type == "dynamic" else to_json(value)
        bag = (
            "arrayMap(kv -> concat('[', toJSONString(kv.1), ',', kv.2, ']'), JSONExtractKeysAndValuesRaw({0}))"
            if bag_array
            else "arrayMap(kv -> concat('{{', toJSONString(kv.1), ':', kv.2, '}}'), JSONExtractKeysAndValuesRaw({0}))"
        )
        arrays.append(
            T(
                "multiIf(isNull({0}), "
                + ("['null']" if keep_null else "emptyArrayString()")
                + ", JSONType({0}) = 'Array', JSONExtractArrayRaw({0}), JSONType({0}) = 'Object', "
                + bag
                + ", [{0}])",
                json_value,
            )
        )
        names.append(name)
        target_types.append(normalize_kql_type(item.to_type) if item.to_type else "dynamic")
    limit = _count_value(qc, op.limit) if op.limit is not None else None
    existing = [n for n, _ in relation.columns]
    aliases = [f"__mv{i}" for i in range(len(names))]
    select_cols: list[tuple[S.Expr, str]] = []
    out: list[tuple[str, str]] = []
    for n, t in relation.columns:
        if n in names:
            k = names.index(n)
            conv = cast_to(
                Typed(T("nullIf({0}, '')", S.Col(aliases[k])), "dynamic"), target_types[k]
            )
            select_cols.append((conv.sql, n))
            out.append((n, target_types[k]))
        else:
            select_cols.append((S.Col(n), n))
            out.append((n, t))
    for k, n in enumerate(names):
        if n not in existing:
            conv = cast_to(
                Typed(T("nullIf({0}, '')", S.Col(aliases[k])), "dynamic"), target_types[k]
            )
            select_cols.append((conv.sql, n))
            out.append((n, target_types[k]))
    array_join = [(a, alias) for a, alias in zip(arrays, aliases, strict=True)]
    if index_name:
        array_join.append(
            (
                T("arrayEnumerate({0})", arrays[0])
                if len(arrays) == 1
                else T(
                    "range(1, greatest("
                    + ", ".join(f"length({{{i}}})" for i in range(len(arrays)))
                    + ") + 1)",
                    *arrays,
                ),
                "__mvi",
            )
        )
        select_cols.append((T("toInt64({0} - 1)", S.Col("__mvi")), index_name))
        out.append((index_name, "long"))
    query = S.Select(columns=select_cols, from_=relation.source(), array_join=array_join)
    result = qc._new_cte(query, out)
    if limit is not None:
        result = qc._select(result, [(S.Col(n), n) for n, _ in out], out, limit=limit)
    return result


def op_mv_apply(qc: QueryCompiler, op: K.MvApply, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    rid = f"__rid{next(qc._counter)}"
    base_cols = [(S.Col(n), n) for n, _ in relation.columns] + [(T("rowNumberInAllBlocks()"), rid)]
    base = qc._select(relation, base_cols, [*relation.columns, (rid, "long")])
    expand = K.MvExpand(op.span, op.params, op.items, op.limit)
    # mv-expand keeps a row for a null array; mv-apply gives such a row no subtable at all.
    expanded = op_mv_expand(qc, expand, base, keep_null=False)
    sub = qc.tabular_per_partition(op.subquery, expanded, rid)
    sub_types = dict(sub.columns)
    if rid not in sub_types:
        raise unsupported(op.subquery, "this mv-apply subquery is not supported")
    # Columns expanded in place belong to the subquery; the other input columns carry over.
    in_place = {
        _expr_name(i.item.expr) for i in op.items if not i.item.names and _expr_name(i.item.expr)
    }
    original = [n for n, _ in relation.columns if n not in in_place]
    expanded_names = [n for n, _ in expanded.columns]
    out_names = original + [n for n, _ in sub.columns if n not in original and n != rid]
    if all(n in sub_types for n in original):
        out = [(n, sub_types[n]) for n in out_names]
        return qc._select(sub, [(S.Col(n), n) for n in out_names], out)
    base_types = dict(relation.columns)
    columns: list[tuple[S.Expr, str]] = []
    out = []
    for n in out_names:
        if (
            n in sub_types and (n not in base_types or (n in expanded_names and n not in original))
        ) or (
            n in sub_types
            and n in original
            and n not in [i.item.names[0] if i.item.names else "" for i in op.items]
        ):
            columns.append((S.Col(n, "S"), n))
            out.append((n, sub_types[n]))
        else:
            columns.append((S.Col(n, "B"), n))
            out.append((n, base_types[n]))
    query = S.Select(
        columns=columns,
        from_=base.source("B"),
        joins=[S.Join("INNER", sub.source("S"), on=S.BinOp("=", S.Col(rid, "B"), S.Col(rid, "S")))],
    )
    return qc._new_cte(query, out)


def op_make_series(qc: QueryCompiler, op: K.MakeSeries, relation: Relation) -> Relation:
    relation = _strip_rn(qc, relation)
    scope = relation.scope(qc.lets)
    on = ExprCompiler(scope).compile(op.on)
    if on.type != "datetime":
        raise unsupported(op.on, "make-series is supported on datetime axes")
    step = qc.expr(None, op.step)
    step_ticks = step.sql if step.type == "timespan" else cast_to(step, "long").sql
    if op.start is None or op.end is None:
        raise unsupported(op, "make-series needs from and to")
    start = ticks(qc.expr(None, op.start).sql)
    end = ticks(qc.expr(None, op.end).sql)
    t = ticks(on.sql)
    params = {p.name: p.value for p in op.params}
    kind_node = params.get("kind")
    nonempty = isinstance(kind_node, K.NameRef) and kind_node.name == "nonempty"
    used: set[str] = set()
    by_cols: list[tuple[S.Expr, str]] = []
    by_out: list[tuple[str, str]] = []
    for i, item in enumerate(op.by):
        value = ExprCompiler(scope).compile(item.expr)
        name = _unique(
            item.names[0] if item.names else (_by_name(item.expr) or f"Column{i + 1}"), used
        )
        used.add(name)
        by_cols.append((value.sql, name))
        by_out.append((name, value.type))
    agg_ctx = AggregateContext(lambda: ExprCompiler(scope))
    agg_cols: list[tuple[S.Expr, str]] = []
    agg_names: list[tuple[str, str]] = []
    for item in op.aggregates:
        value = ExprCompiler(scope, aggregates=agg_ctx).compile(item.expr)
        if item.names:
            name = item.names[0]
        elif isinstance(item.expr, K.Call):
            name = default_name(item.expr)
        else:
            name = "Column1"
        name = _unique(name, used)
        used.add(name)
        agg_cols.append((value.sql, name))
        agg_names.append((name, value.type))
    on_name = _unique(_expr_name(op.on) or "Column1", used)
    bin_expr = T("intDiv({0} - {1}, {2})", t, start, step_ticks)
    per_bin = qc._select(
        relation,
        [*by_cols, (bin_expr, "__bin"), *agg_cols],
        [*by_out, ("__bin", "long"), *agg_names],
        where=T("ifNull({0} >= {1} AND {0} < {2}, false)", t, start, end),
        group_by=[e for e, _ in by_cols] + [bin_expr],
    )
    nbins = T("toUInt64(greatest(0, intDiv({1} - {0} + {2} - 1, {2})))", start, end, step_ticks)
    series_cols: list[tuple[S.Expr, str]] = [(S.Col(n), n) for _, n in by_cols]
    for (name, kql_type), default in zip(agg_names, op.defaults, strict=True):
        default_value = qc.expr(None, default) if default is not None else Typed(lit(0), "long")
        default_json = T("ifNull({0}, 'null')", to_json(default_value))
        series_cols.append(
            (
                T(
                    "concat('[', arrayStringConcat(arrayMap(i -> if(indexOf(groupArray(`__bin`), i) > 0, "
                    "ifNull({0}, 'null'), {1}), range(0, {2})), ','), ']')",
                    to_json(
                        Typed(
                            T(
                                "arrayElement(groupArray({0}), indexOf(groupArray(`__bin`), __i))",
                                S.Col(name),
                            ),
                            kql_type,
                        )
                    ),
                    default_json,
                    nbins,
                ),
                name,
            )
        )
    axis = T(
        "concat('[', arrayStringConcat(arrayMap(i -> concat('\"', formatDateTime(reinterpret(toInt64({0} + i * {1}), "
        "'DateTime64(7, \\'UTC\\')'), '%Y-%m-%dT%H:%i:%S'), '.', leftPad(toString(positiveModulo({0} + i * {1}, 10000000)), 7, '0'), "
        "'Z\"'), range(0, {2})), ','), ']')",
        start,
        step_ticks,
        nbins,
    )
    series_cols.append((axis, on_name))
    out = by_out + [(n, "dynamic") for n, _ in agg_names] + [(on_name, "dynamic")]
    query = S.Select(
        columns=series_cols, from_=per_bin.source(), group_by=[S.Col(n) for _, n in by_cols]
    )
    if not by_cols and not nonempty:
        query.having = T("count() > 0")
    return qc._new_cte(query, out)
