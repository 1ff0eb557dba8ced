"""Operators that turn arrays into rows: `mv-expand`, `mv-apply` (`make-series` is in make_series.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.naming import expr_name
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.row_order import count_value, strip_rn
from bzrk.engine.compile.typed import T, Typed, cast_to, to_json
from bzrk.engine.types import normalize_kql_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext


def op_mv_expand(
    ctx: CompileContext, op: K.MvExpand, relation: Relation, *, keep_null: bool = True
) -> Relation:
    relation = strip_rn(ctx, relation)
    scope = ctx.scope(relation)
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
            else (expr_name(item.item.expr) or f"Column{i + 1}")
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
    limit = count_value(ctx, op.limit) if op.limit is not None else None
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
    result = ctx.new_cte(query, out)
    if limit is not None:
        result = ctx.select(result, [(S.Col(n), n) for n, _ in out], out, limit=limit)
    return result


def op_mv_apply(ctx: CompileContext, op: K.MvApply, relation: Relation) -> Relation:
    relation = strip_rn(ctx, relation)
    rid = f"__rid{ctx.next_id()}"
    base_cols = [(S.Col(n), n) for n, _ in relation.columns] + [(T("rowNumberInAllBlocks()"), rid)]
    base = ctx.select(relation, base_cols, [*relation.columns, (rid, "long")])
    expand = K.MvExpand(op.span, op.params, op.items, op.limit)
    # mv-expand keeps a row for a null array; mv-apply gives such a row no subtable at all.
    expanded = op_mv_expand(ctx, expand, base, keep_null=False)
    sub = ctx.tabular_per_partition(op.subquery, expanded, rid)
    sub_types = dict(sub.columns)
    if rid not in sub_types:
        raise unsupported(op.subquery, "this mv-apply subquery is not supported")
    # Columns expanded in place belong to the subquery; the other input columns carry over.
    in_place = {
        expr_name(i.item.expr) for i in op.items if not i.item.names and expr_name(i.item.expr)
    }
    original = [n for n, _ in relation.columns if n not in in_place]
    expanded_names = [n for n, _ in expanded.columns]
    out_names = original + [n for n, _ in sub.columns if n not in original and n != rid]
    if all(n in sub_types for n in original):
        out = [(n, sub_types[n]) for n in out_names]
        return ctx.select(sub, [(S.Col(n), n) for n in out_names], out)
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
    return ctx.new_cte(query, out)
