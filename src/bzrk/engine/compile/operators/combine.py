"""Operators that combine relations: `union` and `join`/`lookup` with KQL's join kinds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.join_filters import join_kind
from bzrk.engine.compile.naming import expr_name, unique_name
from bzrk.engine.compile.operators.union_sources import union_inputs
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.row_order import strip_rn
from bzrk.engine.compile.semantics import comparable
from bzrk.engine.compile.typed import T, Typed, lit
from bzrk.engine.types import clickhouse_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext


def op_union(ctx: CompileContext, op: K.Union, relation: Relation | None) -> Relation:
    labelled: list[tuple[Relation, str]] = []
    if relation is not None:
        labelled.append((relation, ctx.result_names.get(relation.name, "union_arg0")))

    # An unnamed source is `union_arg<N>`, N its 0-based place among the sources the user
    # wrote, a piped input being the first (the vendor's rule, which it says is ADX's).
    first = 0 if relation is None else 1
    places = {id(table): first + place for place, table in enumerate(op.tables)}
    for rel, table in union_inputs(ctx, op):
        label = (
            ctx.result_names.get(rel.name)
            or expr_name(table)
            or f"union_arg{places.get(id(table), first + len(op.tables))}"
        )
        labelled.append((rel, label))
    params = {p.name: p.value for p in op.params}
    kind_node = params.get("kind")
    inner = isinstance(kind_node, K.NameRef) and kind_node.name == "inner"
    withsource = params.get("withsource")
    source_col = withsource.name if isinstance(withsource, K.NameRef) else None
    # A name whose type differs between inputs becomes one column per type: x_long, x_int.
    seen_types: dict[str, list[str]] = {}
    for rel, _ in labelled:
        for n, t in rel.columns:
            seen_types.setdefault(n, [])
            if t not in seen_types[n]:
                seen_types[n].append(t)
    out_names: list[tuple[str, str, str]] = []  # (output name, source name, type)
    used: set[str] = {source_col} if source_col else set()
    # Names that are real columns win over the name a split column is given (x_long1).
    reserved = {n for n, types in seen_types.items() if len(types) == 1}
    for rel, _ in labelled:
        for n, t in rel.columns:
            split = len(seen_types[n]) > 1
            if any(src == n and typ == t for _, src, typ in out_names) or (
                not split and any(src == n for _, src, _t in out_names)
            ):
                continue
            name = unique_name(f"{n}_{t}", used | reserved) if split else unique_name(n, used)
            used.add(name)
            out_names.append((name, n, t))
    if inner:
        out_names = [o for o in out_names if all(o[1] in dict(r.columns) for r, _ in labelled)]
    queries: list[S.Query] = []
    for rel, label in labelled:
        have = dict(rel.columns)
        cols: list[tuple[S.Expr, str]] = []
        if source_col:
            cols.append((lit(label), source_col))
        for name, src, typ in out_names:
            if have.get(src) == typ:
                cols.append((S.Col(src), name))
            else:
                cols.append(
                    (S.Cast(lit(None), clickhouse_type(typ)) if typ != "string" else lit(""), name)
                )
        queries.append(S.Select(columns=cols, from_=rel.source()))
    out = ([(source_col, "string")] if source_col else []) + [(n, t) for n, _, t in out_names]
    return ctx.new_cte(S.UnionAll(queries), out)


_JOIN_KINDS = {
    "innerunique": "INNER",
    "inner": "INNER",
    "leftouter": "LEFT",
    "rightouter": "RIGHT",
    "fullouter": "FULL",
    "leftanti": "LEFT ANTI",
    "anti": "LEFT ANTI",
    "leftantisemi": "LEFT ANTI",
    "rightanti": "RIGHT ANTI",
    "rightantisemi": "RIGHT ANTI",
    "leftsemi": "LEFT SEMI",
    "rightsemi": "RIGHT SEMI",
}


def _join_keys(
    ctx: CompileContext, on: Sequence[K.Expr], left: Relation, right: Relation, node: K.Node
) -> list[tuple[Typed, Typed]]:
    keys: list[tuple[Typed, Typed]] = []
    lcols, rcols = dict(left.columns), dict(right.columns)
    for item in on:
        if isinstance(item, K.NameRef):
            if item.name not in lcols or item.name not in rcols:
                raise unsupported(
                    item, f"join key '{item.name}' must exist on both sides", code="UnknownName"
                )
            keys.append(
                (
                    Typed(S.Col(item.name, "L"), lcols[item.name]),
                    Typed(S.Col(item.name, "R"), rcols[item.name]),
                )
            )
            continue
        if isinstance(item, K.Binary) and item.op == "==":
            sides = {}
            for side in (item.left, item.right):
                if (
                    isinstance(side, K.Member)
                    and isinstance(side.target, K.NameRef)
                    and side.target.name in ("$left", "$right")
                ):
                    tag = side.target.name
                    cols = lcols if tag == "$left" else rcols
                    if side.name not in cols:
                        raise unsupported(
                            side, f"unknown column {tag}.{side.name}", code="UnknownName"
                        )
                    sides[tag] = Typed(
                        S.Col(side.name, "L" if tag == "$left" else "R"), cols[side.name]
                    )
                else:
                    raise unsupported(
                        side, "join conditions compare $left.column with $right.column"
                    )
            if len(sides) != 2:
                raise unsupported(item, "join conditions compare $left.column with $right.column")
            keys.append((sides["$left"], sides["$right"]))
            continue
        raise unsupported(item, "unsupported join condition")
    return keys


def op_join(ctx: CompileContext, op: K.Join | K.Lookup, relation: Relation) -> Relation:
    relation = strip_rn(ctx, relation)
    kind = join_kind(op)
    if kind not in _JOIN_KINDS:
        raise unsupported(op, f"join kind '{kind}' is not supported")
    right = strip_rn(ctx, ctx.tabular(op.right))
    keys = _join_keys(ctx, op.on, relation, right, op)
    left_source = relation
    if kind == "innerunique":
        left_source = ctx.select(
            relation,
            [(S.Col(n), n) for n, _ in relation.columns],
            relation.columns,
            limit_by=(lit(1), [S.Col(k[0].sql.name) for k in keys if isinstance(k[0].sql, S.Col)]),
        )
    cond: S.Expr | None = None
    for lk, rk in keys:
        a, b = comparable(lk, rk)
        eq = S.BinOp("=", a.sql, b.sql)
        cond = eq if cond is None else S.BinOp("AND", cond, eq)
    sql_kind = _JOIN_KINDS[kind]
    columns: list[tuple[S.Expr, str]] = []
    out: list[tuple[str, str]] = []
    used: set[str] = set()
    left_only = sql_kind in ("LEFT ANTI", "LEFT SEMI")
    right_only = sql_kind in ("RIGHT ANTI", "RIGHT SEMI")
    same_name_keys = {item.name for item in op.on if isinstance(item, K.NameRef)}
    if not right_only:
        for n, t in relation.columns:
            expr: S.Expr = S.Col(n, "L")
            if isinstance(op, K.Lookup) or (
                sql_kind in ("RIGHT", "FULL") and n in same_name_keys and isinstance(op, K.Lookup)
            ):
                pass
            if t == "string" and sql_kind in ("RIGHT", "FULL"):
                expr = T("ifNull({0}, '')", expr)
            columns.append((expr, n))
            out.append((n, t))
            used.add(n)
    if not left_only:
        for n, t in right.columns:
            if isinstance(op, K.Lookup) and n in same_name_keys:
                continue
            name = unique_name(n, used)
            used.add(name)
            right_expr: S.Expr = S.Col(n, "R")
            if t == "string" and sql_kind in ("LEFT", "FULL"):
                right_expr = T("ifNull({0}, '')", right_expr)
            columns.append((right_expr, name))
            out.append((name, t))
    query = S.Select(
        columns=columns,
        from_=left_source.source("L"),
        joins=[S.Join(sql_kind, right.source("R"), on=cond)],
    )
    return ctx.new_cte(query, out)


def src_union(ctx: CompileContext, op: K.Union) -> Relation:
    return op_union(ctx, op, None)


def op_union_pipe(ctx: CompileContext, op: K.Union, relation: Relation) -> Relation:
    return op_union(ctx, op, relation)
