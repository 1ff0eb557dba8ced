"""The `project-*` family: away, keep, rename, reorder and by-names, with wildcard column matching."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.functions.arrays import SORTS, sorted_array_columns
from bzrk.engine.compile.functions.series.table import MULTI_COLUMN_FUNCTIONS
from bzrk.engine.compile.functions.table import FUNCTIONS
from bzrk.engine.compile.naming import expr_name
from bzrk.engine.compile.relation import (
    Relation,
)
from bzrk.engine.compile.typed import T, Typed, cast_to, lit
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext


def _match(patterns: Sequence[str], columns: list[tuple[str, str]], node: K.Node) -> list[str]:
    names = [n for n, _ in columns]
    out: list[str] = []
    for pattern in patterns:
        hits = (
            [n for n in names if fnmatch.fnmatchcase(n, pattern)]
            if "*" in pattern
            else ([pattern] if pattern in names else [])
        )
        if not hits and "*" not in pattern:
            raise unsupported(node, f"unknown column '{pattern}'", code="UnknownName")
        out.extend(h for h in hits if h not in out)
    return out


def op_project_away(ctx: CompileContext, op: K.ProjectAway, relation: Relation) -> Relation:
    drop = set(_match(op.patterns, relation.columns, op))
    keep = [(n, t) for n, t in relation.columns if n not in drop]
    return ctx.select(relation, [(S.Col(n), n) for n, _ in keep], keep)


def op_project_keep(ctx: CompileContext, op: K.ProjectKeep, relation: Relation) -> Relation:
    wanted = set(_match(op.patterns, relation.columns, op))
    keep = [(n, t) for n, t in relation.columns if n in wanted]
    return ctx.select(relation, [(S.Col(n), n) for n, _ in keep], keep)


def op_project_rename(ctx: CompileContext, op: K.ProjectRename, relation: Relation) -> Relation:
    mapping = {old: new for new, old in op.renames}
    names = [n for n, _ in relation.columns]
    for old in mapping:
        if old not in names:
            raise unsupported(op, f"unknown column '{old}'", code="UnknownName")
    out = [(mapping.get(n, n), t) for n, t in relation.columns]
    return ctx.select(relation, [(S.Col(n), mapping.get(n, n)) for n, _ in relation.columns], out)


def op_project_reorder(ctx: CompileContext, op: K.ProjectReorder, relation: Relation) -> Relation:
    first: list[str] = []
    for pattern, direction in op.patterns:
        hits = _match([pattern], relation.columns, op)
        if direction in ("asc", "granny-asc"):
            hits = sorted(hits)
        elif direction in ("desc", "granny-desc"):
            hits = sorted(hits, reverse=True)
        first.extend(h for h in hits if h not in first)
    types = dict(relation.columns)
    order = first + [n for n, _ in relation.columns if n not in first]
    return ctx.select(relation, [(S.Col(n), n) for n in order], [(n, types[n]) for n in order])


def multi_column(compiler: ExprCompiler, item: K.NamedExpr) -> list[tuple[str, Typed]] | None:
    """`series_stats(x)`, `series_fit_line(y)`: one column per field of the function's result."""

    expr = item.expr
    if isinstance(expr, K.Call) and expr.name in SORTS and len(item.names) <= 1:
        return sorted_array_columns(compiler, expr, expr_name)
    if not isinstance(expr, K.Call) or expr.name not in MULTI_COLUMN_FUNCTIONS:
        return None
    builder_name, fields = MULTI_COLUMN_FUNCTIONS[expr.name]
    args = [compiler.compile(a) for a in expr.args]
    bag = FUNCTIONS[builder_name](compiler, args, expr)
    # A first argument with no name of its own (a literal) leaves it empty: series_stats__min.
    arg_name = (expr_name(expr.args[0]) if expr.args else None) or ""
    if len(item.names) == 1:
        # `a = series_decompose_anomalies(y)`: one column, the function's first result (the
        # flags; the binder's schema, and what Berserk's agents read), as for a one-name tuple.
        fields = fields[:1]
    out = []
    for i, (field_name, kql_type) in enumerate(fields):
        if item.names:
            if i >= len(item.names):
                break
            name = item.names[i]
        else:
            name = f"{expr.name}_{arg_name}_{field_name}"
        raw = Typed(T("nullIf(JSONExtractRaw({0}, {1}), '')", bag.sql, lit(field_name)), "dynamic")
        out.append((name, cast_to(raw, kql_type)))
    return out


def op_project_by_names(ctx: CompileContext, op: K.ProjectByNames, relation: Relation) -> Relation:
    patterns: list[str] = []
    compiler = ExprCompiler(ctx.scope())
    for item in op.items:
        value = compiler.compile(item)
        if not isinstance(value.sql, S.Lit) or not isinstance(value.sql.value, str):
            raise unsupported(item, "project-by-names needs constant names")
        if value.type == "dynamic":
            import json

            names = json.loads(value.sql.value)
            patterns.extend(str(n) for n in (names if isinstance(names, list) else [names]))
        else:
            patterns.append(value.sql.value)
    chosen: list[str] = []
    available = [n for n, _ in relation.columns]
    for pattern in patterns:
        for name in available:
            if fnmatch.fnmatchcase(name, pattern) and name not in chosen:
                chosen.append(name)
    types = dict(relation.columns)
    return ctx.select(relation, [(S.Col(n), n) for n in chosen], [(n, types[n]) for n in chosen])
