"""Operators about the results rather than the rows: `render`, `as`, `fork`, `serialize`,
`getschema`, `invoke`, `facet`, `preview`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.literals import literal
from bzrk.engine.compile.naming import expr_name
from bzrk.engine.compile.operators.extend import op_extend
from bzrk.engine.compile.operators.rows import op_count, op_take
from bzrk.engine.compile.operators.sources import values_relation
from bzrk.engine.compile.operators.summarize import op_summarize
from bzrk.engine.compile.relation import Relation, UserFunction
from bzrk.engine.events import Visualization
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext


def op_render(ctx: CompileContext, op: K.Render, relation: Relation) -> Relation:
    properties: dict[str, str] = {}
    for p in op.properties:
        value = p.value
        if isinstance(value, K.Literal):
            properties[p.name] = str(value.value)
        elif isinstance(value, K.NameRef):
            properties[p.name] = value.name
        elif isinstance(value, K.ListExpr | K.Paren):
            properties[p.name] = ",".join(
                expr_name(i) or ""
                for i in getattr(value, "items", [getattr(value, "expr", None)])
                if i is not None
            )
    ctx.visualization = Visualization(type=op.chart, properties=properties)
    return relation


def op_as(ctx: CompileContext, op: K.As, relation: Relation) -> Relation:
    ctx.lets[op.name] = relation
    ctx.result_names = {**ctx.result_names, relation.name: op.name}
    return relation


def op_serialize(ctx: CompileContext, op: K.Serialize, relation: Relation) -> Relation:
    relation.ordered = True
    if op.items:
        return op_extend(ctx, K.Extend(op.span, op.items), relation)
    return relation


def op_getschema(ctx: CompileContext, op: K.GetSchema, relation: Relation) -> Relation:
    dotnet = {
        "bool": "System.SByte",
        "int": "System.Int32",
        "long": "System.Int64",
        "real": "System.Double",
        "decimal": "System.Data.SqlTypes.SqlDecimal",
        "string": "System.String",
        "datetime": "System.DateTime",
        "timespan": "System.TimeSpan",
        "guid": "System.Guid",
        "dynamic": "System.Object",
    }
    rows = [
        (n, i, dotnet.get(t, "System.Object"), t)
        for i, (n, t) in enumerate(c for c in relation.columns if c[0] != "__rn")
    ]
    out = [
        ("ColumnName", "string"),
        ("ColumnOrdinal", "int"),
        ("DataType", "string"),
        ("ColumnType", "string"),
    ]
    return values_relation(
        ctx,
        out,
        [
            [
                literal("string", r[0]),
                literal("int", r[1]),
                literal("string", r[2]),
                literal("string", r[3]),
            ]
            for r in rows
        ],
    )


def op_fork(ctx: CompileContext, op: K.Fork, relation: Relation) -> Relation:
    first: Relation | None = None
    for i, (branch, name) in enumerate(zip(op.branches, op.names, strict=True)):
        result = ctx.tabular(branch, relation)
        # A branch is named by `name = (...)`, else by an `as` inside it, else GenericResult<i>.
        name = name or ctx.result_names.get(result.name)
        if first is None:
            first = result
            ctx.result_names = {**ctx.result_names, result.name: name or "GenericResult"}
        else:
            ctx.pending_results.append(ctx.result_table(result, name or f"GenericResult{i}"))
    assert first is not None
    return first


def op_facet(ctx: CompileContext, op: K.Facet, relation: Relation) -> Relation:
    """`facet by c1, c2 [with (…)]`: several tables, as the reference lists them: the `with`
    query's rows first (when given), then one table per column, its values and their counts
    (`c1`, `count_c1`), named as the column."""
    tables: list[tuple[Relation, str]] = []
    if op.subquery is not None:
        tables.append((ctx.tabular(op.subquery, relation), "PrimaryResult"))
    names = dict(relation.columns)
    for column in op.columns:
        if column not in names:
            raise unsupported(op, f"facet: the input has no column '{column}'", code="UnknownName")
        span = op.span
        counted = op_summarize(
            ctx,
            K.Summarize(
                span,
                (),
                (K.NamedExpr(span, (f"count_{column}",), K.Call(span, "count", ())),),
                (K.NamedExpr(span, (column,), K.NameRef(span, column)),),
            ),
            relation,
        )
        tables.append((counted, column))
    first, first_name = tables[0]
    ctx.result_names = {**ctx.result_names, first.name: first_name}
    for table, name in tables[1:]:
        ctx.pending_results.append(ctx.result_table(table, name))
    return first


def preview(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    """`evaluate preview(N)`: two tables, as the reference says: `take N` of the input, then
    one row holding the input's row count (`Count`)."""
    args = op.plugin.args
    if len(args) != 1:
        raise unsupported(op.plugin, "preview takes the number of rows", code="WrongArgumentCount")
    first = op_take(ctx, K.Take(op.span, args[0]), relation)
    counted = op_count(ctx, K.Count(op.span, None), relation)
    ctx.result_names = {**ctx.result_names, first.name: "PrimaryResult"}
    ctx.pending_results.append(ctx.result_table(counted, "Count"))
    return first


def op_invoke(ctx: CompileContext, op: K.Invoke, relation: Relation) -> Relation:
    fn = ctx.lets.get(op.call.name)
    if not isinstance(fn, UserFunction):
        raise unsupported(op, f"unknown function '{op.call.name}'", code="UnknownFunction")
    return ctx.call_user_tabular(op.call, fn, list(op.call.args), relation)
