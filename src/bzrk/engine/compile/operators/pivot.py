"""The `pivot` plugin: each distinct value of one column becomes a column of aggregates.

`T | evaluate pivot(P [, agg(x)] [, c1, c2, …])` is, as the ADX reference defines it,
`summarize v1 = aggif(x, tostring(P) == "v1"), v2 = … by c1, c2, …` over the distinct values
v1, v2, … of `P` (a discovery query finds them, or the `: (c:type, …)` output schema lists them).
The aggregate is `count()` by default; the group columns are the ones named, else every column
but `P` and those the aggregate reads. A value with no rows in a group is 0 for `count`, `sum`
and `dcount` (the reference's examples), the aggregate's answer over no rows otherwise. An
empty (or null) value's column is `Column1`; one named like a group column gets a suffix.

Not as in ADX: the value columns are ordered by value (ADX orders them as it meets them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.operators.summarize import op_summarize
from bzrk.engine.compile.typed import Typed, cast_to
from bzrk.engine.types import normalize_kql_type
from bzrk.kql import syntax as K
from bzrk.kql.binder.naming import unique_name

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation

# The aggregates the reference lists, with the conditional form each pivot column uses.
_CONDITIONAL = {
    "count": "countif",
    "sum": "sumif",
    "dcount": "dcountif",
    "avg": "avgif",
    "min": "minif",
    "max": "maxif",
    "take_any": "take_anyif",
    "stdev": "stdevif",
    "variance": "varianceif",
    "make_list": "make_list_if",
    "make_set": "make_set_if",
    "make_bag": "make_bag_if",
}
# At most this many distinct values become columns.
MAX_PIVOT_COLUMNS = 1000


def pivot(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    args = op.plugin.args
    names = dict(relation.columns)
    if not args or not isinstance(args[0], K.NameRef) or args[0].name not in names:
        raise unsupported(op.plugin, "pivot needs a column of its input", code="UnknownName")
    column = args[0]
    rest = list(args[1:])
    first = rest.pop(0) if rest and isinstance(rest[0], K.Call) else None
    aggregate = first if isinstance(first, K.Call) else K.Call(op.plugin.span, "count", ())
    conditional = _CONDITIONAL.get(aggregate.name.lower())
    if conditional is None:
        raise unsupported(
            aggregate,
            f"pivot aggregates with one of {', '.join(f'{n}()' for n in _CONDITIONAL)}",
            code="InvalidArgument",
        )
    named: list[str] = []
    for extra in rest:
        if not isinstance(extra, K.NameRef) or extra.name not in names:
            raise unsupported(extra, "pivot groups by columns of its input", code="UnknownName")
        named.append(extra.name)
    read = {n.name for a in aggregate.args for n in a.walk() if isinstance(n, K.NameRef)}
    group = named or [
        n for n, _ in relation.visible_columns() if n != column.name and n not in read
    ]
    values = _values(ctx, op, relation, column, set(group))
    span = op.plugin.span
    key = K.Call(span, "tostring", (column,))
    items = []
    taken = set(group)
    for text in values:
        cond = K.Binary(span, "==", key, K.Literal(span, "string", text, repr(text)))
        call_args = (aggregate.args[0], cond, *aggregate.args[1:]) if aggregate.args else (cond,)
        # an empty or null value names no column: it is `Column1` (Kusto's unnamed column)
        name = unique_name(text or "Column1", taken)
        taken.add(name)
        items.append(K.NamedExpr(span, (name,), K.Call(span, conditional, call_args)))
    by = tuple(K.NamedExpr(span, (n,), K.NameRef(span, n)) for n in group)
    summary = op_summarize(ctx, K.Summarize(op.span, (), tuple(items), by), relation)
    declared = {c.name: normalize_kql_type(c.type) for c in op.schema}
    columns: list[tuple[S.Expr, str]] = []
    out: list[tuple[str, str]] = []
    for name, kql_type in summary.columns:
        value = Typed(S.Col(name), kql_type)
        if name in declared and declared[name] != kql_type:
            value = cast_to(value, declared[name])  # the type the output schema gives it
        columns.append((value.sql, name))
        out.append((name, value.type))
    return ctx.select(summary, columns, out)


def _values(
    ctx: CompileContext, op: K.Evaluate, relation: Relation, column: K.NameRef, group: set[str]
) -> list[str]:
    """The pivot column's distinct values as text: from the output schema when the query
    gives one (its columns that are not group columns), else from a discovery query."""
    if op.schema:
        return [c.name for c in op.schema if c.name != "*" and c.name not in group]
    if ctx.probe is None:
        raise unsupported(op, "pivot needs a discovery query, which is not available here")
    key = ctx.expr(relation, K.Call(column.span, "tostring", (column,)))
    discovery = S.Select(
        columns=[(key.sql, "k")],
        from_=relation.source(),
        distinct=True,
        limit=S.Lit(MAX_PIVOT_COLUMNS + 1),
    )
    values = sorted({"" if row["k"] is None else str(row["k"]) for row in ctx.discover(discovery)})
    if len(values) > MAX_PIVOT_COLUMNS:
        raise unsupported(
            column,
            f"pivot makes at most {MAX_PIVOT_COLUMNS} columns; '{column.name}' has more values",
            code="InvalidArgument",
        )
    return values
