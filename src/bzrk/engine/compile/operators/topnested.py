"""The `top-nested` operator: a hierarchy of per-group top-N aggregations.

Level i groups the rows kept by the levels above it by their values and its own `of`
expression, aggregates, and keeps the best N groups within each parent group. Its output
holds, for every level, the `of` value and the aggregate, in level order.

`with others = V` adds, under each parent, one row for the values the level left out: `V` and
the level's aggregate over their rows (none when nothing was left out). Nothing is nested under
such a row: its deeper levels are null.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.operators.extend import op_extend
from bzrk.engine.compile.operators.summarize import op_summarize
from bzrk.engine.compile.row_order import strip_rn
from bzrk.engine.compile.typed import T, cast_to
from bzrk.kql import syntax as K
from bzrk.kql.binder.naming import expression_name

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation


def _tuple(names: list[str], alias: str | None = None) -> S.Expr:
    cols = [S.Col(n, alias) for n in names]
    return T("tuple(" + ", ".join("{" + str(i) + "}" for i in range(len(cols))) + ")", *cols)


def _keyed(
    ctx: CompileContext, rows: Relation, keys: list[str], among: Relation, negated: bool = False
) -> Relation:
    """The rows whose ``keys`` are (``negated``: are not) a row of ``among``."""
    return ctx.select(
        rows,
        [(S.Col(n), n) for n, _ in rows.columns],
        rows.columns,
        where=S.InList(
            _tuple(keys),
            S.Select(columns=[(_tuple(keys), None)], from_=among.source()),
            negated=negated,
        ),
    )


def op_top_nested(ctx: CompileContext, op: K.TopNested, relation: Relation) -> Relation:

    relation = strip_rn(ctx, relation)
    of_names: list[str] = []
    agg_names: list[str] = []
    used = set()
    for level in op.levels:
        # the binder's rule (`of tostring(a.b)` is a_b, another computed level Column1)
        name = level.of.names[0] if level.of.names else expression_name(level.of.expr)
        name = name or "Column1"
        agg = level.by.names[0] if level.by.names else f"aggregated_{name}"
        if name in used or agg in used:
            raise unsupported(
                level, "top-nested column names must be distinct", code="InvalidArgument"
            )
        used |= {name, agg}
        of_names.append(name)
        agg_names.append(agg)
    items = tuple(
        K.NamedExpr(level.of.span, (name,), level.of.expr)
        for level, name in zip(op.levels, of_names, strict=True)
    )
    base = op_extend(ctx, K.Extend(op.span, items), relation)
    prev: Relation | None = None
    for i, level in enumerate(op.levels):
        prefix = of_names[:i]
        source = base
        if prev is not None:
            source = _keyed(ctx, base, prefix, prev)
        keys = tuple(
            K.NamedExpr(level.span, (n,), K.NameRef(level.span, n)) for n in of_names[: i + 1]
        )
        aggregated = op_summarize(
            ctx,
            K.Summarize(
                level.span, (), (K.NamedExpr(level.by.span, (agg_names[i],), level.by.expr),), keys
            ),
            source,
        )
        order = "DESC" if level.descending else "ASC"
        partition = (
            ("PARTITION BY " + ", ".join(S.quote_identifier(n) for n in prefix) + " ")
            if prefix
            else ""
        )
        ranked = ctx.select(
            aggregated,
            [(S.Col(n), n) for n, _ in aggregated.columns]
            + [
                (
                    T(
                        f"row_number() OVER ({partition}ORDER BY {S.quote_identifier(agg_names[i])} {order})"
                    ),
                    "__rank",
                )
            ],
            [*aggregated.columns, ("__rank", "long")],
        )
        kept = ranked
        if level.count is not None:
            count = cast_to(ctx.expr(None, level.count), "long").sql
            kept = ctx.select(
                ranked,
                [(S.Col(n), n) for n, _ in aggregated.columns],
                aggregated.columns,
                where=T("`__rank` <= {0}", count),
            )
        if level.others is not None:
            kept = _with_others(ctx, level, source, kept, of_names[: i + 1], agg_names[i])
        types = dict(kept.columns)
        if prev is None:
            prev = ctx.select(
                kept,
                [(S.Col(of_names[0]), of_names[0]), (S.Col(agg_names[0]), agg_names[0])],
                [(of_names[0], types[of_names[0]]), (agg_names[0], types[agg_names[0]])],
            )
            continue
        prev_types = dict(prev.columns)
        columns: list[tuple[S.Expr, str]] = []
        out: list[tuple[str, str]] = []
        for n, _ in prev.columns:
            columns.append((S.Col(n, "P"), n))
            out.append((n, prev_types[n]))
        for n in (of_names[i], agg_names[i]):
            columns.append((S.Col(n, "K"), n))
            out.append((n, types[n]))
        # An `others` row of a level above has no rows under it: it stays, its deeper levels
        # null (a LEFT JOIN from the parents); otherwise every parent has children.
        outer = any(above.others is not None for above in op.levels[:i])
        prev = ctx.new_cte(
            S.Select(
                columns=columns,
                from_=prev.source("P"),
                joins=[
                    S.Join(
                        "LEFT" if outer else "INNER",
                        kept.source("K"),
                        on=T("{0} = {1}", _tuple(prefix, "K"), _tuple(prefix, "P")),
                    )
                ],
            ),
            out,
        )
    assert prev is not None
    return prev


def _with_others(
    ctx: CompileContext,
    level: K.TopNestedLevel,
    source: Relation,
    kept: Relation,
    keys: list[str],
    agg: str,
) -> Relation:
    """``kept`` and, under each parent, one row for the values it left out: the `with others`
    value, and the level's aggregate over their rows (no row where nothing was left out)."""
    assert level.others is not None
    of_type = dict(kept.columns)[keys[-1]]
    label = cast_to(ctx.expr(None, level.others), of_type).sql
    rest = _keyed(ctx, source, keys, kept, negated=True)
    span = level.span
    parents = tuple(K.NamedExpr(span, (n,), K.NameRef(span, n)) for n in keys[:-1])
    rows = "__others_rows"
    aggregated = op_summarize(
        ctx,
        K.Summarize(
            span,
            (),
            (
                K.NamedExpr(level.by.span, (agg,), level.by.expr),
                K.NamedExpr(span, (rows,), K.Call(span, "count", ())),
            ),
            parents,
        ),
        rest,
    )
    names = [n for n, _ in kept.columns]
    others = S.Select(
        columns=[(label if n == keys[-1] else S.Col(n), n) for n in names],
        from_=aggregated.source(),
        where=T("{0} > 0", S.Col(rows)),
    )
    top = S.Select(columns=[(S.Col(n), n) for n in names], from_=kept.source())
    return ctx.new_cte(S.UnionAll([top, others]), kept.columns)
