"""`extend` and `project`: computed columns, and the row windows (prev/next, row_number, …).

Window calls need the serialized order: the input is numbered (`__rn`) first, and calls that
restart (or rank) get their row groups numbered in two extra CTEs, since ClickHouse window
functions cannot nest.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.functions.window import WINDOW_FUNCTIONS
from bzrk.engine.compile.functions.window_session import group_start_condition
from bzrk.engine.compile.naming import expr_name
from bzrk.engine.compile.operators.project import multi_column
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.row_order import numbered, partition_column, strip_rn
from bzrk.engine.compile.typed import T, Typed, to_json
from bzrk.kql import syntax as K
from bzrk.kql.binder.naming import expression_name as kql_expression_name
from bzrk.kql.binder.naming import unique_name

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext


def projection(
    ctx: CompileContext, relation: Relation, items: Sequence[K.NamedExpr], *, extend: bool
) -> Relation:
    scope = ctx.scope(relation)
    scope.row_window = ctx.row_window
    window = any(uses_window(item.expr) for item in items)
    if window:
        relation = numbered(ctx, relation)
        relation = number_window_groups(ctx, relation, items)
        scope = ctx.scope(relation)
        scope.row_window = ctx.row_window
    input_names = {n for n, _ in relation.columns}
    scope.input_columns = {n: scope.columns[n] for n, _ in relation.columns}
    order: list[str] = [n for n, _ in relation.columns] if extend else []
    values: dict[str, Typed] = {n: scope.columns[n] for n, _ in relation.columns} if extend else {}
    column_counter = itertools.count(1)
    for item in items:
        compiler = ExprCompiler(scope)
        multi = multi_column(compiler, item)
        if multi is not None:
            for name, value in multi:
                if name not in order:
                    order.append(name)
                values[name] = value
                scope.columns[name] = value
            continue
        if len(item.names) > 1:
            value = compiler.compile(item.expr)
            for i, name in enumerate(item.names):
                element = Typed(
                    T(
                        "nullIf(JSONExtractRaw({0}, toInt64(" + str(i + 1) + ")), '')",
                        to_json(value),
                    ),
                    "dynamic",
                )
                if name not in order:
                    order.append(name)
                values[name] = element
                scope.columns[name] = element
            continue
        value = compiler.compile(item.expr)
        bound = None if extend else ctx.bound_names(item)
        if bound is not None and len(bound) == 1:
            name = bound[0]  # the binder's name, suffixed where it repeats (`project a.n, a.n`)
        elif item.names:
            name = item.names[0]
        else:
            dotted = K.dotted_name(item.expr)
            if dotted is not None and dotted in input_names:
                name = dotted  # the input column `a_b.c` keeps its name
            else:
                name = kql_expression_name(item.expr) or expr_name(item.expr) or ""
            if not name:
                name = f"Column{next(column_counter)}"
                while name in values:
                    name = f"Column{next(column_counter)}"
            elif not extend and dotted is None and name in values:
                # a derived name repeated in project gets a suffix, as the binder names it
                # (`project tostring(a), tostring(a)`: a, a1)
                name = unique_name(name, set(values))
        if name not in order:
            order.append(name)
        values[name] = value
        # project items see the input row (`project v = f(v), w = g(v)` reads the input v);
        # extend items see the items before them.
        if extend or name not in input_names:
            scope.columns[name] = value
    if window:
        order = [n for n in order if n != "__rn" and not n.startswith("__grp")]
        # project keeps the row number too, so that its output stays in serialized order.
        order += ["__rn"]
        values.setdefault("__rn", Typed(S.Col("__rn"), "long"))
    part = partition_column(ctx, relation)
    if part and part not in order:
        order.append(part)
        values[part] = Typed(S.Col(part), "long")
    out = [(n, values[n].type) for n in order]
    columns = [(values[n].sql, n) for n in order]
    result = ctx.select(relation, columns, out)
    result.ordered = relation.ordered or window
    if window and not extend:
        result = strip_rn(ctx, result)
        result.ordered = True
    return result


def uses_window(node: K.Node) -> bool:
    return any(isinstance(n, K.Call) and n.name in WINDOW_FUNCTIONS for n in node.walk())


def number_window_groups(
    ctx: CompileContext, relation: Relation, items: Sequence[K.NamedExpr]
) -> Relation:
    """Number the row groups of restarting window calls in two CTEs (windows cannot nest).

    `row_number(1, restart)` and `row_cumsum(x, restart)` restart where the condition holds;
    `row_rank_dense(x)` / `row_rank_min(x)` start a new group where x changes.
    """
    calls = []
    for item in items:
        for node in item.expr.walk():
            if not isinstance(node, K.Call):
                continue
            restarts = node.name in ("row_number", "row_cumsum") and len(node.args) > 1
            if restarts and isinstance(node.args[1], K.Literal) and node.args[1].value is False:
                restarts = False
            if restarts or node.name in ("row_rank_dense", "row_rank_min", "row_window_session"):
                calls.append(node)
    if not calls:
        return relation
    scope = ctx.scope(relation)
    scope.row_window = ctx.row_window
    conditions: list[tuple[S.Expr, str]] = []
    for call in calls:
        k = ctx.next_id()
        compiler = ExprCompiler(scope)
        if call.name in ("row_number", "row_cumsum"):
            cond = compiler.as_bool(compiler.compile(call.args[1]))
        elif call.name == "row_window_session":
            cond = group_start_condition(
                compiler,
                call,
                lambda v, c=call: ctx.row_window("prev", [v], c),  # type: ignore[misc]
            )
        else:
            value = compiler.compile(call.args[0])
            previous = ctx.row_window("prev", [value], call)
            cond = T("ifNull({0} != {1}, false)", value.sql, previous.sql)
            if len(call.args) > 1:
                # A rank restarts where its condition holds: `__grp{k}r` numbers those segments.
                restart = T("ifNull({0}, false)", compiler.as_bool(compiler.compile(call.args[1])))
                conditions.append((T("toInt64({0})", restart), f"__rc{k}r"))
                cond = T("({0} OR {1})", cond, restart)
        conditions.append((T("toInt64(ifNull({0}, false))", cond), f"__rc{k}"))
        ctx.window_groups[id(call)] = f"__grp{k}"
    base = [(S.Col(n), n) for n, _ in relation.columns]
    flagged = ctx.select(
        relation, base + conditions, [*relation.columns, *[(n, "long") for _, n in conditions]]
    )
    grouped_cols = [(S.Col(n), n) for n, _ in relation.columns] + [
        (
            T(
                "sum("
                + S.quote_identifier(rc)
                + ") OVER (ORDER BY `__rn` ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
            ),
            "__grp" + rc[4:],
        )
        for _, rc in conditions
    ]
    return ctx.select(
        flagged,
        grouped_cols,
        [*relation.columns, *[("__grp" + rc[4:], "long") for _, rc in conditions]],
    )


def op_extend(ctx: CompileContext, op: K.Extend, relation: Relation) -> Relation:
    result = projection(ctx, relation, op.items, extend=True)
    return strip_rn(ctx, result)


def op_project(ctx: CompileContext, op: K.Project, relation: Relation) -> Relation:
    result = projection(ctx, relation, op.items, extend=False)
    return result
