"""`make-series`: aggregates per bin of an axis, as one array per series.

The axis is a datetime (bins of a timespan ``step``) or a number (int, long, real, timespan).
Its range is ``from``/``to`` where the query gives them; ADX's alternate ``in range(start,
stop, step)`` bins with ``bin()`` (points at multiples of ``step``, from ``bin(start, step)``)
and includes ``stop``'s bin. Berserk
lets both go: on a datetime axis the range is then the request's time window, ``from`` rounded
down to a multiple of ``step`` so the points fall where ``bin(timestamp, step)`` puts them
(the vendor's canonical ``make-series … on timestamp step 1m by metric_hash``). Without a
window, and on a numeric axis, a missing bound is ADX's: the first (last) bin that holds data,
counted from zero. Each series has ``ceil((to - from) / step)`` points; a bin without rows takes
the aggregate's ``default`` (0 unless given).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.functions.aggregates import AggregateContext
from bzrk.engine.compile.naming import expr_name, unique_name
from bzrk.engine.compile.operators.summarize import by_name
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.row_order import strip_rn
from bzrk.engine.compile.typed import (
    BIN_ORIGIN_TICKS,
    T,
    Typed,
    bin_floor_ticks,
    cast_to,
    from_ticks,
    lit,
    ticks,
    to_json,
)
from bzrk.kql import syntax as K
from bzrk.kql.binder.naming import aggregate_name

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext

# More points than this in one series is refused (or, for a range read from the data, cut):
# the arrays of every series are built in memory.
MAX_POINTS = 1_048_576


@dataclass(frozen=True)
class _Axis:
    """The axis as numbers: datetimes and timespans as ticks (Int64)."""

    kind: str  # the KQL type of the axis values
    position: S.Expr  # the row's place on the axis
    step: S.Expr
    integral: bool  # Int64 arithmetic (else Float64)

    def value(self, number: S.Expr) -> Typed:
        """An axis value from its number (``from + i * step``)."""
        if self.kind == "datetime":
            return Typed(from_ticks(number), "datetime")
        return Typed(number, self.kind)


def op_make_series(ctx: CompileContext, op: K.MakeSeries, relation: Relation) -> Relation:
    relation = strip_rn(ctx, relation)
    scope = ctx.scope(relation)
    axis = _axis(ctx, op, ExprCompiler(scope).compile(op.on))
    start, end = _range(ctx, op, axis, relation)
    params = {p.name: p.value for p in op.params}
    kind_node = params.get("kind")
    nonempty = isinstance(kind_node, K.NameRef) and kind_node.name == "nonempty"
    used: set[str] = set()
    by_cols: list[tuple[S.Expr, str]] = []
    by_out: list[tuple[str, str]] = []
    for i, item in enumerate(op.by):
        value = ExprCompiler(scope).compile(item.expr)
        bound = ctx.bound_names(item)  # KQL's naming: `by tostring(a.b)` is a_b
        name = unique_name(bound[0] if bound else by_name(item.expr) or f"Column{i + 1}", used)
        used.add(name)
        by_cols.append((value.sql, name))
        by_out.append((name, value.type))
    agg_ctx = AggregateContext(lambda: ExprCompiler(scope))
    agg_cols: list[tuple[S.Expr, str]] = []
    agg_names: list[tuple[str, str]] = []
    for item in op.aggregates:
        value = ExprCompiler(scope, aggregates=agg_ctx).compile(item.expr)
        named = ctx.bound_names(item)
        if item.names:
            name = item.names[0]
        elif named is not None and len(named) == 1:
            name = named[0]  # the binder's name: one naming rule for schema and plan
        elif isinstance(item.expr, K.Call):
            name = aggregate_name(item.expr)
        else:
            name = "Column1"
        name = unique_name(name, used)
        used.add(name)
        agg_cols.append((value.sql, name))
        agg_names.append((name, value.type))
    on_name = unique_name(expr_name(op.on) or "Column1", used)
    if axis.integral:
        bin_expr = T("intDiv({0} - {1}, {2})", axis.position, start, axis.step)
        count = T("intDiv({1} - {0} + {2} - 1, {2})", start, end, axis.step)
    else:
        bin_expr = T("toInt64(floor(({0} - {1}) / {2}))", axis.position, start, axis.step)
        count = T("ceil(({1} - {0}) / {2})", start, end, axis.step)
    per_bin = ctx.select(
        relation,
        [*by_cols, (bin_expr, "__bin"), *agg_cols],
        [*by_out, ("__bin", "long"), *agg_names],
        where=T("ifNull({0} >= {1} AND {0} < {2}, false)", axis.position, start, end),
        group_by=[e for e, _ in by_cols] + [bin_expr],
    )
    nbins = T(f"toUInt64(least(greatest(0, ifNull({{0}}, 0)), {MAX_POINTS}))", count)
    series_cols: list[tuple[S.Expr, str]] = [(S.Col(n), n) for _, n in by_cols]
    for (name, kql_type), default in zip(agg_names, op.defaults, strict=True):
        default_value = ctx.expr(None, default) if default is not None else Typed(lit(0), "long")
        if kql_type == "real" and default_value.type in ("int", "long"):
            default_value = cast_to(default_value, "real")  # avg's 0 is 0.0, as in ADX
        default_json = T("ifNull({0}, 'null')", to_json(default_value))
        # Each bin's value, found by its bin number; the value is wrapped in a tuple so that a
        # null aggregate keeps its place (groupArray skips bare nulls).
        element = Typed(
            T(
                "arrayElement(groupArray(tuple({0})), indexOf(groupArray(`__bin`), __i)).1",
                S.Col(name),
            ),
            kql_type,
        )
        series_cols.append(
            (
                T(
                    "concat('[', arrayStringConcat(arrayMap(i -> if(indexOf(groupArray(`__bin`), i) > 0, "
                    "ifNull({0}, 'null'), {1}), range(0, {2})), ','), ']')",
                    to_json(element),
                    default_json,
                    nbins,
                ),
                name,
            )
        )
    point = axis.value(T("({0} + __i * {1})", start, axis.step))
    axis_json = T(
        "concat('[', arrayStringConcat(arrayMap(i -> ifNull({0}, 'null'), range(0, {1})), ','), ']')",
        to_json(point),
        nbins,
    )
    series_cols.append((axis_json, on_name))
    out = by_out + [(n, "dynamic") for n, _ in agg_names] + [(on_name, "dynamic")]
    query = S.Select(
        columns=series_cols, from_=per_bin.source(), group_by=[S.Col(n) for _, n in by_cols]
    )
    if not by_cols and not nonempty:
        query.having = T("count() > 0")
    return ctx.new_cte(query, out)


def _axis(ctx: CompileContext, op: K.MakeSeries, on: Typed) -> _Axis:
    step = ctx.expr(None, op.step)
    if on.type == "datetime":
        if step.type != "timespan":
            raise unsupported(op.step, "a datetime axis needs a timespan step", code="TypeMismatch")
        axis = _Axis("datetime", ticks(on.sql), step.sql, True)
    elif on.type == "timespan" and step.type == "timespan":
        axis = _Axis("timespan", on.sql, step.sql, True)
    elif on.type in ("int", "long") and step.type in ("int", "long"):
        axis = _Axis("long", cast_to(on, "long").sql, cast_to(step, "long").sql, True)
    elif on.type in ("int", "long", "real", "decimal") and step.type in (
        "int",
        "long",
        "real",
        "decimal",
    ):
        axis = _Axis("real", cast_to(on, "real").sql, cast_to(step, "real").sql, False)
    else:
        raise unsupported(
            op.on,
            f"make-series needs a datetime, timespan or numeric axis (this one is {on.type}) "
            "with a step of its kind",
            code="TypeMismatch",
        )
    fixed = constant_number(axis.step)
    if fixed is not None and fixed <= 0:
        raise unsupported(op.step, "make-series needs a positive step", code="InvalidArgument")
    return axis


def _bound(ctx: CompileContext, axis: _Axis, node: K.Expr) -> S.Expr:
    value = ctx.expr(None, node)
    if axis.kind == "datetime":
        if value.type != "datetime":
            raise unsupported(node, "a datetime axis needs datetime bounds", code="TypeMismatch")
        return ticks(value.sql)
    if axis.kind == "timespan":
        return value.sql
    return cast_to(value, "long" if axis.integral else "real").sql


def _range(
    ctx: CompileContext, op: K.MakeSeries, axis: _Axis, relation: Relation
) -> tuple[S.Expr, S.Expr]:
    """``from`` and ``to`` as axis numbers (the window or the data where the query has none)."""
    start = _bound(ctx, axis, op.start) if op.start is not None else None
    end = _bound(ctx, axis, op.end) if op.end is not None else None

    def floor(value: S.Expr) -> S.Expr:
        if axis.kind == "datetime":  # bins from 0001-01-01, as bin() counts them
            return bin_floor_ticks(value, axis.step)
        if axis.integral:
            return T("({0} - positiveModulo({0}, {1}))", value, axis.step)
        return T("(floor({0} / {1}) * {1})", value, axis.step)

    if op.in_range and start is not None and end is not None:
        # ADX's alternate syntax: bins are bin(), not bin_at(start), and `stop` is inclusive.
        return floor(start), T("({0} + {1})", floor(end), axis.step)
    if start is not None and end is not None:
        return start, end
    window = ctx.query_window() if axis.kind == "datetime" else None
    if window is not None:
        step = constant_number(axis.step)
        if start is None:
            start = (
                lit(window[0] - (window[0] - BIN_ORIGIN_TICKS) % int(step))
                if step is not None
                else bin_floor_ticks(lit(window[0]), axis.step)
            )
        if end is None:
            end = lit(window[1])
        first, last, fixed = constant_number(start), constant_number(end), step
        if first is not None and last is not None and fixed is not None:
            points = -(-(last - first) // int(fixed))
            if points > MAX_POINTS:
                raise unsupported(
                    op.step,
                    f"make-series would make {points:,} points per series over the query window "
                    f"(at most {MAX_POINTS:,}): use a larger step",
                    code="InvalidArgument",
                )
        return start, end
    # ADX: the first and the last bin holding data (bins counted from zero).
    bounds = ctx.select(
        relation,
        [(T("min({0})", axis.position), "__lo"), (T("max({0})", axis.position), "__hi")],
        [("__lo", axis.kind), ("__hi", axis.kind)],
    )

    def scalar(column: str) -> S.Expr:
        return S.ScalarSubquery(S.Select(columns=[(S.Col(column), None)], from_=bounds.source()))

    if start is None:
        start = floor(scalar("__lo"))
    if end is None:
        end = T("({0} + {1})", floor(scalar("__hi")), axis.step)
    return start, end


def constant_number(sql: S.Expr) -> int | float | None:
    """The value of a numeric literal (as literals compile: ``toInt64(…)``-wrapped), else None."""
    while (
        isinstance(sql, S.Template)
        and sql.text in ("toInt64({0})", "toFloat64({0})", "toInt32({0})")
        and len(sql.args) == 1
    ):
        sql = sql.args[0]
    if isinstance(sql, S.Lit) and type(sql.value) in (int, float):
        return sql.value  # type: ignore[no-any-return]
    return None
