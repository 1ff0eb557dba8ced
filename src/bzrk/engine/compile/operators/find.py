"""The `find` operator: the rows of several tables that match a predicate, as ADX documents it.

`find [withsource=Name] [in (T1, T2, …)] where Predicate [project-smart | project c1, c2, …
[, pack_all()]]`, and `find Predicate …` without `in`:

* Without `in (…)`, find looks in every table of the database and every table or view the
  query defines (as a leading `search` does); a wildcard in `in (E*)` matches those names. The predicate may use `search`'s free-text forms
  (`"term"`, `* has "term"`, `Col:"term"`).
* A table that has none of the columns the predicate names is left out. In a table that has
  some of them, the others are null (so `Version == "v1" or EventName == "e1"` filters each
  table by the column it has, as the ADX page says).
* `source_` (or the `withsource=` name) holds the table's name: `default` for bzrk's stored
  OTel table.
* `project-smart` (the default) keeps the columns the predicate names and the columns every
  kept table has; the row's other columns go to a `pack_` bag (a stored OTel table's only
  when they have a value: its null is an absent field). `project c1, c2`
  keeps those columns (null where a table lacks one); `pack_all()` in the list adds `pack_`
  with the row's other columns, as above. `c:type` casts the column to the type.
* A column whose type differs between tables becomes one column per type (`x_long`,
  `x_string`), as in `union`.
"""

from __future__ import annotations

import fnmatch
import json
from typing import TYPE_CHECKING

from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.operators.combine import op_union
from bzrk.engine.compile.operators.extend import op_project
from bzrk.engine.compile.operators.search import every_table, search_condition
from bzrk.engine.compile.operators.union_sources import union_inputs
from bzrk.engine.compile.operators.where import op_where
from bzrk.engine.compile.relation import Relation
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext

PACK = "pack_"
SOURCE = "source_"
_TYPES = ("string", "int", "long", "real", "decimal", "bool", "datetime", "timespan", "guid")


def predicate_names(node: K.Node) -> list[str]:
    """The plain names the predicate reads, in order (columns and lets alike)."""
    return list(dict.fromkeys(n.name for n in node.walk() if isinstance(n, K.NameRef)))


def _source_name(op: K.Find) -> str:
    for param in op.params:
        if param.name.lower() == "withsource":
            if isinstance(param.value, K.NameRef):
                return param.value.name
            raise unsupported(param, "find: withsource= takes a column name")
        raise unsupported(param, f"find: unknown parameter '{param.name}'", code="InvalidArgument")
    return SOURCE


def _inputs(ctx: CompileContext, op: K.Find) -> list[tuple[str, Relation]]:
    if op.tables:
        every = [n.name for n in every_table(ctx, op.span) if isinstance(n, K.NameRef)]
        tables: list[K.Expr] = []
        for node in op.tables:
            if isinstance(node, K.NameRef) and "*" in node.name:
                # a wildcard names tables of the database too (union's covers the query's)
                names = [n for n in every if fnmatch.fnmatchcase(n, node.name)]
                tables += [K.NameRef(node.span, n) for n in names]
            else:
                tables.append(node)
        if not tables:
            raise unsupported(op, "find: no table matches", code="UnknownTable")
        found = union_inputs(ctx, K.Union(op.span, (), tuple(tables)))
        return [
            (node.name if isinstance(node, K.NameRef) else f"union_arg{i}", relation)
            for i, (relation, node) in enumerate(found)
        ]
    return [
        (node.name, ctx.tabular(node))
        for node in every_table(ctx, op.span)
        if isinstance(node, K.NameRef)
    ]


def _project_items(op: K.Find) -> tuple[list[tuple[K.Expr, str, str | None]], bool]:
    """`project` items as (node, column, cast type) and whether `pack_all()` is among them."""
    items: list[tuple[K.Expr, str, str | None]] = []
    pack = False
    for item in op.project or ():
        if isinstance(item, K.Call) and item.name == "pack_all" and not item.args:
            pack = True
        elif isinstance(item, K.NameRef):
            items.append((item, item.name, None))
        elif (
            isinstance(item, K.Binary)
            and item.op == ":"
            and isinstance(item.left, K.NameRef)
            and isinstance(item.right, K.NameRef)
            and item.right.name in _TYPES
        ):
            items.append((item, item.left.name, item.right.name))
        else:
            raise unsupported(item, "find: project takes column names, c:type and pack_all()")
    return items, pack


def src_find(ctx: CompileContext, op: K.Find) -> Relation:
    source = _source_name(op)
    projected, pack_all = _project_items(op)
    with ctx.bound({}):
        inputs = _inputs(ctx, op)
        if not inputs:
            raise unsupported(op, "find has no tables to look in", code="UnknownTable")
        types: dict[str, str] = {}
        for _, relation in inputs:
            for name, kql_type in relation.visible_columns():
                types.setdefault(name, kql_type)
        named = [n for n in predicate_names(op.predicate) if n in types and n not in ctx.lets]
        kept: list[tuple[str, Relation]] = []
        # A stored OTel table's null is an absent field (docs/kql.md), left out of `pack_` as
        # Berserk's records leave it out; another table's null or empty value is packed, as
        # the reference's ConferenceSessions example shows ("participants":"", "starttime":null).
        stored = {table for table, relation in inputs if relation.stored is not None}
        for table, relation in inputs:
            have = {n for n, _ in relation.columns}
            if named and not any(n in have for n in named):
                continue  # ADX: a table with none of the predicate's columns is left out
            filtered = _filtered(ctx, op, relation, named, types)
            if filtered is not None:
                kept.append((table, filtered))
        if not kept:
            raise unsupported(
                op.predicate, "find: no table has the columns it names", code="UnknownName"
            )
        columns: list[tuple[K.Expr, str, str | None]]
        if op.project is None:
            common = set.intersection(*({n for n, _ in r.visible_columns()} for _, r in kept))
            order = [n for n in types if n in named or n in common]
            columns = [(K.NameRef(op.span, n), n, None) for n in order]
            pack = any(n not in order for _, r in kept for n, _ in r.visible_columns())
        else:
            for node, name, _ in projected:
                if name not in types:
                    raise unsupported(
                        node, f"find: no table has a column '{name}'", code="UnknownName"
                    )
            columns, pack = projected, pack_all
        refs: list[K.Expr] = []
        for table, relation in kept:
            shaped = _shape(ctx, op, relation, columns, types, pack, skip_empty=table in stored)
            ctx.lets[table] = shaped
            refs.append(K.NameRef(op.span, table))
        withsource = K.OperatorParam(op.span, "withsource", K.NameRef(op.span, source))
        return op_union(ctx, K.Union(op.span, (withsource,), tuple(refs)), None)


def _null(span: K.Span, kql_type: str) -> K.Expr:
    return K.Literal(span, kql_type, None, f"{kql_type}(null)")


def _filtered(
    ctx: CompileContext, op: K.Find, relation: Relation, named: list[str], types: dict[str, str]
) -> Relation | None:
    """``relation``'s matching rows; the predicate's columns it lacks read as nulls."""
    have = {n for n, _ in relation.columns}
    missing = [n for n in named if n not in have]
    if missing:
        items = tuple(K.NamedExpr(op.span, (n,), _null(op.span, types[n])) for n in missing)
        relation = ctx.operator(K.Extend(op.span, items), relation)
    search = K.Search(op.span, (), (), op.predicate)
    try:
        result = op_where(ctx, K.Where(op.span, search_condition(search, relation)), relation)
    except CompileError as error:
        if error.code == "UnknownName":
            return None
        raise
    if missing:
        result = ctx.operator(K.ProjectAway(op.span, tuple(missing)), result)
    return result


def _shape(
    ctx: CompileContext,
    op: K.Find,
    relation: Relation,
    columns: list[tuple[K.Expr, str, str | None]],
    types: dict[str, str],
    pack: bool,
    *,
    skip_empty: bool,
) -> Relation:
    """One table's rows as the output has them: ``columns`` (nulls where it lacks one) and
    ``pack_``, its other columns (``skip_empty``: only those with a value)."""
    span = op.span
    have = dict(relation.columns)
    visible = relation.visible_columns()
    items: list[K.NamedExpr] = [K.NamedExpr(span, (n,), K.NameRef(span, n)) for n, _ in visible]
    relation = op_project(ctx, K.Project(span, tuple(items)), relation)
    out: list[K.NamedExpr] = []
    for _, name, cast in columns:
        if name in have:
            value: K.Expr = K.NameRef(span, name)
            if cast is not None:
                value = K.Call(span, "to" + cast, (value,))
        else:
            value = _null(span, cast or types[name])
        out.append(K.NamedExpr(span, (name,), value))
    if pack:
        shown = [name for _, name, _ in columns if name in have]
        skip = K.Literal(span, "bool", skip_empty, "true" if skip_empty else "false")
        bag: K.Expr = K.Call(span, "pack_all", (skip,))
        if shown:
            keys = K.Literal(span, "dynamic", shown, json.dumps(shown))
            bag = K.Call(span, "bag_remove_keys", (bag, keys))
        out.append(K.NamedExpr(span, (PACK,), bag))
    return op_project(ctx, K.Project(span, tuple(out)), relation)
