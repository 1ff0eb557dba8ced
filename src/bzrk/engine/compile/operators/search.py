"""The `search` operator: a predicate (with free-text terms) over one or several tables.

`"term"` matches rows where any string column has the term (`term*`, `*term`, `*term*` ask
for a prefix, suffix or substring), `Col:"term"` where that column has it, `* has "x"` is the
explicit form. Without `in (...)` and without input, search covers the tables (and views)
the query defines and every table of the database (ADX); tables that lack a column the
predicate names contribute no rows. `$raw` (the whole record again) is not searched. Each
row carries the name of its table in `$table`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.expressions.star import searchable
from bzrk.engine.compile.operators.combine import op_union
from bzrk.engine.compile.operators.where import op_where
from bzrk.engine.compile.relation import Relation, UserFunction
from bzrk.engine.compile.search_terms import case_sensitive, expand
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation


def _predicate(node: K.Expr, relation: Relation, sensitive: bool) -> K.Expr:
    return expand(node, searchable(relation.columns), sensitive)


def _filtered(ctx: CompileContext, op: K.Search, relation: Relation) -> Relation | None:
    predicate = _predicate(op.predicate, relation, case_sensitive(op))
    try:
        return op_where(ctx, K.Where(op.span, predicate), relation)
    except CompileError as error:
        if error.code == "UnknownName":
            return None
        raise


def op_search(ctx: CompileContext, op: K.Search, relation: Relation) -> Relation:
    """`T | search predicate`: the rows of T that match."""
    if op.tables:
        raise unsupported(op, "a piped search takes no 'in' tables")
    result = _filtered(ctx, op, relation)
    if result is None:
        raise unsupported(
            op.predicate, "search: the predicate names an unknown column", code="UnknownName"
        )
    return result


def every_table(ctx: CompileContext, span: K.Span) -> list[K.Expr]:
    """What `search` without `in (...)` looks in (ADX): the tables and views the query defines,
    then the database's tables they do not shadow."""
    defined = [
        name
        for name, value in ctx.lets.items()
        if not name.startswith("$")
        and (isinstance(value, Relation) or (isinstance(value, UserFunction) and not value.params))
    ]
    stored = [name for name in ctx.resolver.table_names() if name not in ctx.lets]
    return [K.NameRef(span, name) for name in [*defined, *stored]]


def src_search(ctx: CompileContext, op: K.Search) -> Relation:
    """`search predicate` starting a query: the matching rows of every table, with `$table`."""
    names = list(op.tables) if op.tables else every_table(ctx, op.span)
    if not names:
        raise unsupported(op, "search has no tables to look in", code="UnknownTable")
    with ctx.bound({}):
        refs: list[K.Expr] = []
        for node in names:
            filtered = _filtered(ctx, op, ctx.tabular(node))
            if filtered is None:
                continue
            name = node.name if isinstance(node, K.NameRef) else f"table_{len(refs)}"
            ctx.lets[name] = filtered
            refs.append(K.NameRef(node.span, name))
        if not refs:
            raise unsupported(
                op.predicate, "search: no table has the columns it names", code="UnknownName"
            )
        source = K.OperatorParam(op.span, "withsource", K.NameRef(op.span, "$table"))
        return op_union(ctx, K.Union(op.span, (source,), tuple(refs)), None)


def search_condition(op: K.Search, relation: Relation) -> K.Expr:
    """``op``'s predicate as a `where` predicate over ``relation``'s string and dynamic columns
    (a `{ search "x" }` block of trace-find reads it)."""
    return _predicate(op.predicate, relation, case_sensitive(op))
