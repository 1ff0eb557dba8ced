"""`summarize`: group keys, aggregates, arg_max/arg_min and percentiles, with the memory budget hook."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.expressions.special import reads_columns
from bzrk.engine.compile.functions.aggregates import (
    AggregateContext,
    checked_percent,
    is_aggregate,
    nearest_rank_level,
)
from bzrk.engine.compile.naming import expr_name, unique_name
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.row_order import partition_column, strip_rn
from bzrk.engine.compile.scope import Scope
from bzrk.engine.compile.semantics import as_number, dynamic_rank
from bzrk.engine.compile.summarize_budget import series_filter
from bzrk.engine.compile.typed import T, Typed, cast_to, to_json, to_string
from bzrk.kql import catalog
from bzrk.kql import syntax as K
from bzrk.kql.binder.naming import aggregate_name
from bzrk.kql.binder.naming import expression_name as kql_expression_name

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext


def op_summarize(ctx: CompileContext, op: K.Summarize, relation: Relation) -> Relation:
    relation = strip_rn(ctx, relation)
    row_scope = ctx.scope(relation)
    used: set[str] = set()
    columns: list[tuple[S.Expr, str]] = []
    out: list[tuple[str, str]] = []
    group_by: list[S.Expr] = []
    column_counter = itertools.count(1)
    keys: list[tuple[str, S.Expr, str]] = []
    part = partition_column(ctx, relation)
    if part:
        used.add(part)
        group_by.append(S.Col(part))
        columns.append((S.Col(part), part))
        out.append((part, "long"))
    for item in op.by:
        value = ExprCompiler(row_scope).compile(item.expr)
        named = ctx.bound_names(item)
        if item.names:
            name = item.names[0]
        elif named is not None and len(named) == 1:
            name = named[0]  # the binder's name: one naming rule for schema and plan
        else:
            name = (
                kql_expression_name(item.expr)
                or by_name(item.expr)
                or f"Column{next(column_counter)}"
            )
        name = unique_name(name, used)
        used.add(name)
        group_by.append(value.sql)
        columns.append((value.sql, name))
        out.append((name, value.type))
        keys.append((name, value.sql, value.type))
    agg_ctx = AggregateContext(lambda: ExprCompiler(row_scope))
    for item in op.aggregates:
        expr = item.expr
        if isinstance(expr, K.Call) and expr.name in ("arg_max", "arg_min"):
            _arg_extreme(ctx, expr, item, row_scope, relation, columns, out, used)
            continue
        if isinstance(expr, K.Call) and expr.name in _PERCENTILES:
            _percentiles(ctx, expr, item, row_scope, columns, out, used)
            continue
        if (
            isinstance(expr, K.Call)
            and expr.name in ("take_any", "any")
            and (len(expr.args) > 1 or any(isinstance(a, K.Star) for a in expr.args))
        ):
            keyed = {name for name, _, _ in keys}
            names = ctx.bound_names(item)
            _take_any_row(expr, names, row_scope, relation, keyed, columns, out, used)
            continue
        value = ExprCompiler(row_scope, aggregates=agg_ctx).compile(expr)
        named = ctx.bound_names(item)
        if item.names:
            name = item.names[0]
        elif named is not None and len(named) == 1:
            name = named[0]  # the binder's name: one naming rule for schema and plan
        elif isinstance(expr, K.Call) and is_aggregate(expr.name):
            name = aggregate_name(expr)  # a tree the binder did not see (rewritten)
        else:
            name = f"Column{next(column_counter)}"
        name = unique_name(name, used)
        used.add(name)
        columns.append((value.sql, name))
        out.append((name, value.type))
    keep_series = series_filter(ctx.budget_policy, ctx.budgets, op, relation, keys)
    if not group_by and not any(
        isinstance(node, K.Call)
        and (is_aggregate(node.name) or catalog.lookup_aggregate(node.name) is not None)
        for item in op.aggregates
        for node in item.walk()
    ):
        # `summarize x = 1 + 1`: no aggregate and no key is still one row (ClickHouse would
        # give one per input row); its items are constants (the binder refuses a row value
        # outside an aggregate), so any() of each makes the query an aggregation.
        columns = [(T("any({0})", sql), name) for sql, name in columns]
    return ctx.select(relation, columns, out, group_by=group_by, where=keep_series)


def by_name(node: K.Expr) -> str | None:
    name = expr_name(node)
    if name:
        return name
    if (
        isinstance(node, K.Call)
        and node.name
        in (
            "bin",
            "floor",
            "bin_at",
            "bin_auto",
            "startofday",
            "startofweek",
            "startofmonth",
            "startofyear",
            "round",
        )
        and node.args
    ):
        return expr_name(node.args[0])
    return None


def _arg_extreme(
    ctx: CompileContext,
    call: K.Call,
    item: K.NamedExpr,
    scope: Scope,
    relation: Relation,
    columns: list[tuple[S.Expr, str]],
    out: list[tuple[str, str]],
    used: set[str],
) -> None:
    if not call.args:
        raise unsupported(call, f"{call.name} needs arguments", code="WrongArgumentCount")
    key = ExprCompiler(scope).compile(call.args[0])
    fname = "argMax" if call.name == "arg_max" else "argMin"
    key_name = (
        item.names[0]
        if item.names
        else (expr_name(call.args[0]) or ("max_" if call.name == "arg_max" else "min_"))
    )
    key_name = unique_name(key_name, used)
    used.add(key_name)
    # Rows whose key is null never win (KQL ignores them). A dynamic key ranks numbers by
    # value (9 < 10 < 100), not by their text.
    if key.type == "dynamic":
        key_sql = dynamic_rank(key, largest=fname == "argMax")
        present: S.Expr = T("{0} != ''", to_string(key))
        columns.append((T(fname + "If({0}, {1}, {2})", key.sql, key_sql, present), key_name))
    else:
        key_sql = key.sql
        present = T("isNotNull({0})", key_sql)
        columns.append((T(("max" if fname == "argMax" else "min") + "({0})", key.sql), key_name))
    out.append((key_name, key.type))
    extra: list[tuple[str, Typed]] = []
    star = any(isinstance(arg, K.Star) for arg in call.args[1:])
    computed = 0
    for arg in call.args[1:]:
        if isinstance(arg, K.Star):
            for n, _ in relation.columns:
                if n == expr_name(call.args[0]) or n in used:
                    continue
                extra.append((n, scope.columns[n]))
            continue
        name = expr_name(arg) or ""
        if star and name and any(n == name for n, _ in extra):
            continue  # `arg_max(x, *, y)`: y is among the row's columns already
        if not name:  # a computed value: max_x_arg1, max_x_arg2, … (Kusto.Language)
            computed += 1
            name = f"{call.name[4:]}_{key_name}_arg{computed}"
        value = ExprCompiler(scope).compile(arg)
        extra.append((name, value))
    bound = ctx.bound_names(item)
    if bound is not None and len(bound) == 1 + len(extra):
        # the binder's names (`(a, b) = arg_max(x, y)` is a, b): one rule for schema and plan
        extra = [(n, v) for n, (_, v) in zip(bound[1:], extra, strict=True)]
    for name, value in extra:
        name = unique_name(name, used)
        used.add(name)
        # Rows with a null key never win; when every key is null Kusto still returns a row.
        columns.append(
            (
                T(
                    "if(countIf({2}) > 0, " + fname + "If({0}, {1}, {2}), any({0}))",
                    value.sql,
                    key_sql,
                    present,
                ),
                name,
            )
        )
        out.append((name, value.type))


def _percentiles(
    ctx: CompileContext,
    call: K.Call,
    item: K.NamedExpr,
    scope: Scope,
    columns: list[tuple[S.Expr, str]],
    out: list[tuple[str, str]],
    used: set[str],
) -> None:
    value = as_number(ExprCompiler(scope).compile(call.args[0]))
    column = expr_name(call.args[0]) or ""
    weighted = call.name.startswith(("percentilesw", "percentilew"))
    points = _percentile_points(call.args[2:] if weighted else call.args[1:], scope)

    def quantile(pct: Any) -> S.Expr:
        # A percentage from a parameter or let is a constant expression, folded by ClickHouse.
        level = (
            T("greatest(0, toFloat64({0}) / 100.0 - 1e-12)", pct.sql)
            if isinstance(pct, Typed)
            else S.Lit(nearest_rank_level(float(pct)))
        )
        if not weighted:
            return S.Func("quantileExactLow", [value.sql], params=[level])
        weight = cast_to(ExprCompiler(scope).compile(call.args[1]), "long").sql
        # A row's weight counts it that many times (null or negative weights: not at all).
        return S.Func(
            "quantileExactWeighted",
            [value.sql, T("toUInt64(greatest(ifNull({0}, 0), 0))", weight)],
            params=[level],
        )

    if call.name.endswith("_array"):
        # each element as a dynamic holds its type (a datetime's ISO text, a timespan's clock)
        element_type = value.type if value.type in ("datetime", "timespan") else "real"
        sqls = [T("ifNull({0}, 'null')", to_json(Typed(quantile(p), element_type))) for p in points]
        name = item.names[0] if item.names else f"percentiles_{column}"
        name = unique_name(name, used)
        used.add(name)
        columns.append(
            (T("concat('[', arrayStringConcat({0}, ','), ']')", S.Func("array", sqls)), name)
        )
        out.append((name, "dynamic"))
        return
    # Constant points share one aggregate state (ClickHouse computes the repeated call once)
    # instead of one exact state per point.
    shared: S.Expr | None = None
    if not weighted and points and not any(isinstance(p, Typed) for p in points):
        levels = [S.Lit(nearest_rank_level(float(p))) for p in points]
        shared = S.Func("quantilesExactLow", [value.sql], params=levels)
    for i, pct in enumerate(points):
        if item.names and i < len(item.names):
            name = item.names[i]
        else:
            # A computed percentage has no digits to show.
            label = "p" if isinstance(pct, Typed) else _percent_label(pct)
            name = f"percentile_{column}_{label}"
        name = unique_name(name, used)
        used.add(name)
        if shared is None:
            columns.append((quantile(pct), name))
        else:
            # An empty group gives null, as quantileExactLow does (quantiles gives zeros).
            element = T("if(count({0}) = 0, NULL, {1}[" + str(i + 1) + "])", value.sql, shared)
            columns.append((element, name))
        # an int's percentile is a long, as percentile() and Kusto.Language type it
        out.append(
            (
                name,
                "long"
                if value.type == "int"
                else (
                    value.type if value.type in ("long", "real", "timespan", "datetime") else "real"
                ),
            )
        )


def _take_any_row(
    call: K.Call,
    names: Sequence[str] | None,
    scope: Scope,
    relation: Relation,
    keys: set[str],
    columns: list[tuple[S.Expr, str]],
    out: list[tuple[str, str]],
    used: set[str],
) -> None:
    """`take_any(a, b, …)` / `take_any(*)`: the values of one arbitrary row of the group, all
    from the same row (the reference: several expressions are "calculated over a single
    record"); `*` is every input column but the group keys. The columns are named as the
    binder names them (``names``; `any(…)` prefixes `any_`)."""
    values: list[tuple[str, Typed]] = []
    for arg in call.args:
        if isinstance(arg, K.Star):
            values += [
                (n, scope.columns[n]) for n, _ in relation.visible_columns() if n not in keys
            ]
        else:
            values.append((expr_name(arg) or "", ExprCompiler(scope).compile(arg)))
    if not values:
        return
    row = S.Func("any", [S.Func("tuple", [v.sql for _, v in values])])
    prefix = "any_" if call.name == "any" else ""
    for i, (name, value) in enumerate(values):
        name = names[i] if names and i < len(names) else prefix + (name or "Column1")
        name = unique_name(name, used)
        used.add(name)
        columns.append((T("tupleElement({0}, " + str(i + 1) + ")", row), name))
        out.append((name, value.type))


def _percent_label(pct: Any) -> str:
    """`50` → `50`, `50.0` → `50`, `99.9` → `99_9` (as Kusto names percentile columns)."""
    label = str(pct).replace(".", "_")
    return label[:-2] if label.endswith("_0") else label


_PERCENTILES = (
    "percentiles",
    "percentiles_array",
    "percentilesw",
    "percentilesw_array",
    "percentilew",
)


def _percentile_points(nodes: Sequence[K.Expr], scope: Scope) -> list[Any]:
    """Percentages: literals (one by one or one dynamic array) or constant expressions."""

    if len(nodes) == 1 and isinstance(nodes[0], K.Literal) and isinstance(nodes[0].value, list):
        return [checked_percent(nodes[0], v) for v in nodes[0].value]
    if len(nodes) == 1 and not isinstance(nodes[0], K.Literal):
        # a constant array that is no literal: `let p = dynamic([50, 90]); … percentiles_array(x, p)`
        value = ExprCompiler(scope).compile(nodes[0])
        if (
            value.type == "dynamic"
            and isinstance(value.sql, S.Lit)
            and isinstance(value.sql.value, str)
        ):
            parsed = json.loads(value.sql.value)
            if isinstance(parsed, list):
                return [checked_percent(nodes[0], v) for v in parsed]
    points: list[Any] = []
    for node in nodes:
        try:
            points.append(checked_percent(node, _const(node)))
            continue
        except CompileError as exc:
            if exc.code == "InvalidArgument":
                raise
        value = ExprCompiler(scope).compile(node)
        if reads_columns(value.sql):
            raise unsupported(node, "percentiles need constant percentages")
        points.append(value)
    return points


def _const(node: K.Expr, lets: dict[str, Any] | None = None) -> Any:
    if isinstance(node, K.Literal):
        return node.value
    if isinstance(node, K.Unary) and isinstance(node.operand, K.Literal):
        return -node.operand.value
    if isinstance(node, K.NameRef) and lets is not None and isinstance(lets.get(node.name), Typed):
        # A constant bound to a name (a function parameter, a let): its literal inside casts.
        sql: S.Expr = lets[node.name].sql
        while isinstance(sql, S.Cast | S.Template) and not isinstance(sql, S.Lit):
            inner = [sql.operand] if isinstance(sql, S.Cast) else list(sql.args)
            if len(inner) != 1:
                break
            sql = inner[0]
        if isinstance(sql, S.Lit) and isinstance(sql.value, int | float):
            return sql.value
    raise unsupported(node, "expected a constant")
