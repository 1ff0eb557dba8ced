"""Schema rules of the tabular operators: one `_bind_<operator>` per syntax class.

Each takes the binder, the operator and its input schema (None for a source operator such as
`print`) and returns the output schema, recording expression types on the way.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from bzrk.kql import syntax as s
from bzrk.kql.binder.core import Binder, Ctx
from bzrk.kql.binder.naming import expression_name, unique_name
from bzrk.kql.binder.projection import bind_aggregates, bind_items
from bzrk.kql.binder.typing_rules import arithmetic_type, compatible, widest
from bzrk.kql.catalog import EXTRA_PLUGINS, PLUGINS
from bzrk.kql.diagnostics import (
    duplicate_column,
    invalid_argument,
    invalid_parameter,
    join_key_types,
    operator_not_defined,
    type_mismatch,
    unknown_name,
    unknown_plugin,
    unknown_visualization,
    wrong_data_count,
)
from bzrk.kql.facts import RENDER_CHARTS
from bzrk.kql.symbols import (
    BOOL,
    DATETIME,
    DYNAMIC,
    EMPTY_SCHEMA,
    INT,
    LONG,
    NUMERIC_TYPES,
    REAL,
    STRING,
    TIMESPAN,
    UNKNOWN,
    Column,
    ColumnSymbol,
    TableSchema,
    VariableSymbol,
)

Handler = Callable[[Binder, s.QueryOperator, TableSchema], TableSchema]


def bind_operator(b: Binder, op: s.QueryOperator, input: TableSchema | None) -> TableSchema:
    handler = _HANDLERS.get(type(op))
    if handler is None:
        return TableSchema((), opaque=True)
    return handler(b, op, input if input is not None else EMPTY_SCHEMA)


def _where(b: Binder, op: s.Where, input: TableSchema) -> TableSchema:
    t = b.scalar(op.predicate, Ctx(row=input))
    if t not in (BOOL, DYNAMIC, UNKNOWN):
        raise type_mismatch("The where predicate", "bool", t).at(op.predicate.span)
    return input


def _integer(b: Binder, expr: s.Expr, ctx: Ctx, what: str) -> None:
    """Bind a row count or limit: Kusto takes an int or long there (KS134), not `1.5` or `'5'`."""
    t = b.scalar(expr, ctx)
    if t not in (INT, LONG, UNKNOWN):
        raise type_mismatch(what, "an integer", t, "KS134").at(expr.span)


_SUMMABLE = frozenset({*NUMERIC_TYPES, TIMESPAN, DATETIME, UNKNOWN})


def _take(b: Binder, op: s.Take | s.Tail | s.Sample, input: TableSchema) -> TableSchema:
    _integer(b, op.count, Ctx(row=input), "The row count")
    return input


def _sort(b: Binder, op: s.Sort, input: TableSchema) -> TableSchema:
    for key in op.keys:
        b.scalar(key.expr, Ctx(row=input))
    return input


def _top(b: Binder, op: s.Top, input: TableSchema) -> TableSchema:
    _integer(b, op.count, Ctx(), "The row count of top")
    b.scalar(op.key.expr, Ctx(row=input))
    if isinstance(op.key.expr, s.Binary) and op.key.expr.op == "similarto":
        # Berserk semantic search: `top N by body similarto "text"` adds the similarity score
        return _merge_extend(input, [Column("_score", REAL)])
    return input


def _project(b: Binder, op: s.Project, input: TableSchema) -> TableSchema:
    cols = bind_items(b, op.items, input, mode="project")
    return TableSchema(tuple(cols))


def _extend(b: Binder, op: s.Extend, input: TableSchema) -> TableSchema:
    new_cols = bind_items(b, op.items, input, mode="extend")
    return _merge_extend(input, new_cols)


def _merge_extend(input: TableSchema, new_cols: list[Column]) -> TableSchema:
    cols = list(input.columns)
    index = {c.name: i for i, c in enumerate(cols)}
    for c in new_cols:
        if c.name in index:
            cols[index[c.name]] = c
        else:
            index[c.name] = len(cols)
            cols.append(c)
    return TableSchema(tuple(cols), input.raw, input.opaque)


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(p) for p in pattern.split("*")) + "$")


def _match(
    pattern: str, input: TableSchema, b: Binder, op: s.Node, strict: bool = True
) -> list[Column]:
    if "*" in pattern:
        rx = _glob(pattern)
        return [c for c in input.columns if rx.match(c.name)]
    col = input.find(pattern)
    if col is None:
        if input.opaque or not strict:
            return []
        raise unknown_name(pattern).at(op.span)
    return [col]


def _project_away(b: Binder, op: s.ProjectAway, input: TableSchema) -> TableSchema:
    drop: set[str] = set()
    for p in op.patterns:
        drop.update(c.name for c in _match(p, input, b, op))
    return TableSchema(
        tuple(c for c in input.columns if c.name not in drop), input.raw, input.opaque
    )


def _project_keep(b: Binder, op: s.ProjectKeep, input: TableSchema) -> TableSchema:
    keep: set[str] = set()
    for p in op.patterns:
        keep.update(c.name for c in _match(p, input, b, op))
    return TableSchema(tuple(c for c in input.columns if c.name in keep), input.raw, input.opaque)


def _project_rename(b: Binder, op: s.ProjectRename, input: TableSchema) -> TableSchema:
    cols = list(input.columns)
    renamed = {old for _, old in op.renames}
    for new, old in op.renames:
        if new != old and new not in renamed and input.find(new) is not None:
            raise duplicate_column(new).at(op.span)  # `project-rename v = t` keeping v: KS171
        for i, c in enumerate(cols):
            if c.name == old:
                cols[i] = Column(new, c.type)
                break
        else:
            if not input.opaque:
                raise unknown_name(old).at(op.span)
    return TableSchema(tuple(cols), input.raw, input.opaque)


def _project_reorder(b: Binder, op: s.ProjectReorder, input: TableSchema) -> TableSchema:
    first: list[Column] = []
    seen: set[str] = set()
    for pattern, direction in op.patterns:
        matched = [c for c in _match(pattern, input, b, op) if c.name not in seen]
        if direction.endswith("asc"):
            matched.sort(key=lambda c: c.name)
        elif direction.endswith("desc"):
            matched.sort(key=lambda c: c.name, reverse=True)
        for c in matched:
            seen.add(c.name)
            first.append(c)
    rest = [c for c in input.columns if c.name not in seen]
    return TableSchema(tuple(first + rest), input.raw, input.opaque)


def _check_choice(params: tuple[s.OperatorParam, ...], name: str, *allowed: str) -> str:
    """The value of the operator parameter ``name`` (the first of ``allowed`` when absent),
    one of ``allowed`` (`union kind=foo`, `hint.strategy=foo`: Kusto's KS005)."""
    value = _param(params, name, allowed[0])
    if value not in allowed:
        span = next(p.span for p in params if p.name == name)
        raise invalid_parameter(name, value, ", ".join(allowed)).at(span)
    return value


def _summarize(b: Binder, op: s.Summarize, input: TableSchema) -> TableSchema:
    _check_choice(op.params, "hint.strategy", "shuffle")
    for p in op.params:
        # `hint.strategy=shuffle`, `hint.budget=max`: a bare name is the value itself
        if not isinstance(p.value, s.NameRef):
            b.bind(p.value, Ctx())
    by_cols = bind_items(b, op.by, input, mode="by")
    agg_cols = bind_aggregates(b, op.aggregates, input, taken={c.name for c in by_cols})
    return TableSchema(tuple(by_cols + agg_cols))


def _count(b: Binder, op: s.Count, input: TableSchema) -> TableSchema:
    return TableSchema((Column(op.name or "Count", LONG),))


def _distinct(b: Binder, op: s.Distinct, input: TableSchema) -> TableSchema:
    if len(op.items) == 1 and isinstance(op.items[0], s.Star):
        return TableSchema(input.columns, False, input.opaque)
    items = tuple(s.NamedExpr(e.span, (), e) for e in op.items)
    seen: set[str] = set()
    for e in op.items:  # `distinct x, x`: Kusto's KS171
        if isinstance(e, s.NameRef):
            if e.name in seen:
                raise duplicate_column(e.name).at(e.span)
            seen.add(e.name)
    cols = bind_items(b, items, input, mode="by")
    for item in items:  # the engine looks names up by the distinct expression itself
        b.bound.names[item.expr] = b.bound.names.pop(item)
    return TableSchema(tuple(cols))


def _join_keys(
    b: Binder, on: tuple[s.Expr, ...], left: TableSchema, right: TableSchema
) -> list[str]:
    same: list[str] = []
    ctx = Ctx(row=left, left=left, right=right)
    for e in on:
        if isinstance(e, s.NameRef):
            for side in (left, right):
                if side.find(e.name) is None and not (side.opaque or side.raw):
                    raise unknown_name(e.name).at(e.span)
            lcol, rcol = left.find(e.name), right.find(e.name)
            if lcol is not None and rcol is not None and not _same_key_type(lcol.type, rcol.type):
                raise join_key_types(e.name, lcol.type, rcol.type).at(e.span)
            col = lcol or rcol
            b.bound.symbols[e] = ColumnSymbol(e.name, col.type if col else UNKNOWN)
            b.bound.types[e] = col.type if col else UNKNOWN
            same.append(e.name)
        elif isinstance(e, s.Binary) and e.op == "==":
            # `$left.a == $right.b`: a key pair, worded as one (KS242), not as an operator
            lt, rt = b.scalar(e.left, ctx), b.scalar(e.right, ctx)
            if not _same_key_type(lt, rt):
                name = s.dotted_name(e.left) or "key"
                raise join_key_types(name, lt, rt, "KS242").at(e.span)
            b.bound.types[e] = BOOL
        else:
            b.scalar(e, ctx)
    return same


def _same_key_type(left: str, right: str) -> bool:
    """Join keys match when their types are one (Kusto's KS227/KS242); an int and a long are one
    integer here, and a dynamic or unknown key goes with any."""
    if left == right or {left, right} & {DYNAMIC, UNKNOWN}:
        return True
    return {left, right} <= {INT, LONG}


def _param(op_params: tuple[s.OperatorParam, ...], name: str, default: str) -> str:
    for p in op_params:
        if p.name == name:
            v = p.value
            if isinstance(v, s.NameRef):
                return v.name.lower()
            if isinstance(v, s.Literal):
                return str(v.value).lower()
    return default


def _join(b: Binder, op: s.Join, input: TableSchema) -> TableSchema:
    _check_choice(op.params, "hint.strategy", "auto", "broadcast", "centralized", "shuffle")
    right = b.tabular(op.right, Ctx())
    keys = _join_keys(b, op.on, input, right)
    kind = _param(op.params, "kind", "innerunique")
    if kind in ("leftsemi", "leftanti", "anti", "leftantisemi"):
        return input
    if kind in ("rightsemi", "rightanti", "rightantisemi"):
        return right
    cols = list(input.columns)
    taken = {c.name for c in cols}
    for c in right.columns:
        name = unique_name(c.name, taken)
        taken.add(name)
        cols.append(Column(name, c.type))
    del keys
    return TableSchema(tuple(cols), False, input.opaque or right.opaque)


def _lookup(b: Binder, op: s.Lookup, input: TableSchema) -> TableSchema:
    _check_choice(op.params, "kind", "leftouter", "inner")
    right = b.tabular(op.right, Ctx())
    keys = set(_join_keys(b, op.on, input, right))
    for e in op.on:
        if isinstance(e, s.Binary) and isinstance(e.right, s.Member):
            keys.add(e.right.name)
    cols = list(input.columns)
    taken = {c.name for c in cols}
    for c in right.columns:
        if c.name in keys:
            continue
        name = unique_name(c.name, taken)
        taken.add(name)
        cols.append(Column(name, c.type))
    return TableSchema(tuple(cols), input.raw, input.opaque or right.opaque)


def _union_schemas(schemas: list[TableSchema], kind: str) -> list[Column]:
    if kind == "inner":
        common = [c for c in schemas[0].columns if all(sc.find(c.name) for sc in schemas[1:])]
        return common
    order: list[str] = []
    types: dict[str, list[str]] = {}
    for sc in schemas:
        for c in sc.columns:
            if c.name not in types:
                order.append(c.name)
                types[c.name] = []
            if c.type not in types[c.name]:
                types[c.name].append(c.type)
    # A name whose type differs between inputs becomes one column per type (x_long, x_int);
    # a name that is a real column of one type wins over such a split name, which moves on
    # (x_long1), as the real engine answers (A/union-operator-06).
    reserved = {name for name, ts in types.items() if len(ts) == 1}
    taken: set[str] = set()
    unique: list[Column] = []
    for name in order:
        ts = types[name]
        for t in ts:
            split = len(ts) > 1
            n = unique_name(f"{name}_{t}", taken | reserved) if split else unique_name(name, taken)
            taken.add(n)
            unique.append(Column(n, t))
    return unique


def _input_schemas(b: Binder, tables: tuple[s.Expr, ...], fuzzy: bool) -> list[TableSchema]:
    """The schemas of `union`/`find` inputs; a wildcard name (`E*`) stands for every table of
    the database and every table or view of the query whose name matches."""
    schemas: list[TableSchema] = []
    for t in tables:
        if isinstance(t, s.NameRef) and "*" in t.name:
            rx = _glob(t.name)
            for db in b.globals.databases:
                for tab in db.tables:
                    if rx.match(tab.name):
                        schemas.append(tab.schema)
            # let-bound tables and views of the query match the wildcard too
            for name in b.local_names():
                if rx.match(name):
                    local = b.bind(dataclasses.replace(t, name=name), Ctx())
                    if isinstance(local, TableSchema):
                        schemas.append(local)
            continue
        try:
            schemas.append(b.tabular(t, Ctx()))
        except Exception:
            if not fuzzy:
                raise
    return schemas


def _union(b: Binder, op: s.Union, input: TableSchema | None) -> TableSchema:
    schemas: list[TableSchema] = []
    if b.bound.inputs.get(op) is not EMPTY_SCHEMA and input is not None:
        schemas.append(input)
    fuzzy = _param(op.params, "isfuzzy", "false") == "true"
    schemas.extend(_input_schemas(b, op.tables, fuzzy))
    if not schemas:
        return EMPTY_SCHEMA
    kind = _check_choice(op.params, "kind", "outer", "inner")
    cols = _union_schemas(schemas, kind)
    source = _param(op.params, "withsource", "")
    for p in op.params:
        if p.name == "withsource" and isinstance(p.value, s.NameRef):
            source = p.value.name
    if source:
        cols.insert(0, Column(source, STRING))
    return TableSchema(tuple(cols), all(sc.raw for sc in schemas), any(sc.opaque for sc in schemas))


def _mv_expand_cols(b: Binder, op: s.MvExpand | s.MvApply, input: TableSchema) -> TableSchema:
    for name in ("bagexpansion", "kind"):
        _check_choice(op.params, name, "bag", "array")
    cols = list(input.columns)
    index = {c.name: i for i, c in enumerate(cols)}
    for item in op.items:
        ne = item.item
        t = b.scalar(ne.expr, Ctx(row=input))
        if t not in (DYNAMIC, UNKNOWN):  # `mv-expand n` over a long: Kusto's KS141
            raise type_mismatch("The expanded expression", DYNAMIC, t, "KS141").at(ne.expr.span)
        name = ne.names[0] if ne.names else (expression_name(ne.expr) or "Column1")
        b.bound.names[ne] = (name,)
        col = Column(name, item.to_type or DYNAMIC)
        if name in index:
            cols[index[name]] = col
        else:
            index[name] = len(cols)
            cols.append(col)
    if op.limit is not None:
        _integer(b, op.limit, Ctx(), "The limit of mv-expand")
    for p in op.params:
        if p.name == "with_itemindex" and isinstance(p.value, s.NameRef):
            cols.append(Column(p.value.name, LONG))
    return TableSchema(tuple(cols), input.raw, input.opaque)


def _mv_expand(b: Binder, op: s.MvExpand, input: TableSchema) -> TableSchema:
    return _mv_expand_cols(b, op, input)


def _mv_apply(b: Binder, op: s.MvApply, input: TableSchema) -> TableSchema:
    # the subquery runs over each row's expanded sub-table; its output columns are appended to
    # the original row (replacing same-named ones), the expanded items themselves are not kept
    expanded = _mv_expand_cols(b, op, input)
    sub = b.tabular(op.subquery, Ctx(row=expanded))
    items = {b.bound.names[i.item][0] for i in op.items}
    kept = TableSchema(
        tuple(c for c in input.columns if c.name not in items), input.raw, input.opaque
    )
    return _merge_extend(kept, list(sub.columns))


def _check_series_axis(op: s.MakeSeries, types: dict[int, str]) -> None:
    """The `from`/`to` bounds are of the axis' kind and the step its interval: a datetime axis
    takes datetime bounds and a timespan step, a number axis numbers, a timespan axis
    timespan bounds and a timespan or a number of ticks as its step (Kusto.Language's KS141
    and KS178; a real step on an integer axis is left to the engine, which runs it)."""
    axis = types[id(op.on)]
    if axis in (DATETIME, TIMESPAN):
        bounds: frozenset[str] | set[str] = {axis}
        interval: frozenset[str] | set[str] = (
            {TIMESPAN} if axis == DATETIME else {TIMESPAN, *NUMERIC_TYPES}
        )
    elif axis in NUMERIC_TYPES:
        bounds = interval = NUMERIC_TYPES
    else:
        return  # a dynamic or unknown axis is the engine's to judge
    judged = [(e, bounds, "KS141") for e in (op.start, op.end)] + [(op.step, interval, "KS178")]
    for node, allowed, code in judged:
        t = types.get(id(node), UNKNOWN) if node is not None else UNKNOWN
        if node is not None and t not in (*allowed, DYNAMIC, UNKNOWN):
            what = "The step" if node is op.step else "A bound"
            expected = " or ".join(sorted(allowed)) if len(allowed) < 3 else "a number"
            raise type_mismatch(f"{what} of a {axis} axis", expected, t, code).at(node.span)


def _parse(b: Binder, op: s.Parse, input: TableSchema) -> TableSchema:
    b.scalar(op.source, Ctx(row=input))
    new = [Column(p.column.name, p.column.type) for p in op.parts if p.column is not None]
    return _merge_extend(input, new)


def _parse_kv(b: Binder, op: s.ParseKv, input: TableSchema) -> TableSchema:
    b.scalar(op.source, Ctx(row=input))
    return _merge_extend(input, [Column(c.name, c.type) for c in op.columns])


def _make_series(b: Binder, op: s.MakeSeries, input: TableSchema) -> TableSchema:
    ctx = Ctx(row=input)
    types: dict[int, str] = {}
    for e in (op.on, op.start, op.end, op.step):
        if e is not None:
            types[id(e)] = b.scalar(e, ctx if e is op.on else Ctx(row=input))
    _check_series_axis(op, types)
    for d in op.defaults:
        if d is not None:
            b.scalar(d, Ctx())
    by_cols = bind_items(b, op.by, input, mode="by")
    agg_cols = bind_aggregates(b, op.aggregates, input, taken={c.name for c in by_cols})
    # the axis takes a suffix after the keys and series (`by bin(t, 1h)` on t: t, …, t1)
    taken = {c.name for c in by_cols} | {c.name for c in agg_cols}
    axis = unique_name(expression_name(op.on) or "Column1", taken)
    return TableSchema(
        tuple(by_cols + [Column(c.name, DYNAMIC) for c in agg_cols] + [Column(axis, DYNAMIC)])
    )


RENDER_CHART_NAMES = frozenset(c.lower() for c in RENDER_CHARTS)
# Render properties that name columns of the input (Kusto.Language resolves them: KS142).
_RENDER_COLUMN_PROPERTIES = frozenset({"xcolumn", "ycolumns", "series", "anomalycolumns"})


def _render(b: Binder, op: s.Render, input: TableSchema) -> TableSchema:
    if op.chart.lower() not in RENDER_CHART_NAMES:  # `render foo`: Kusto's KS005
        raise unknown_visualization(op.chart).at(op.span)
    if input.opaque or input.raw:
        return input
    for prop in op.properties:
        if prop.name.lower() not in _RENDER_COLUMN_PROPERTIES:
            continue
        names = prop.value.items if isinstance(prop.value, s.ListExpr) else (prop.value,)
        for name in names:
            if isinstance(name, s.NameRef) and input.find(name.name) is None:
                raise unknown_name(name.name).at(name.span)
    return input


def _as(b: Binder, op: s.As, input: TableSchema) -> TableSchema:
    b.declare(op.name, VariableSymbol(op.name, None, input, None, "let"))
    return input


def _serialize(b: Binder, op: s.Serialize, input: TableSchema) -> TableSchema:
    new_cols = bind_items(b, op.items, input, mode="extend")
    return _merge_extend(input, new_cols)


def _getschema(b: Binder, op: s.GetSchema, input: TableSchema) -> TableSchema:
    return TableSchema(
        (
            Column("ColumnName", STRING),
            Column("ColumnOrdinal", INT),
            Column("DataType", STRING),
            Column("ColumnType", STRING),
        )
    )


def _evaluate(b: Binder, op: s.Evaluate, input: TableSchema) -> TableSchema:
    from bzrk.kql.binder.plugins import bind_plugin

    plugin = PLUGINS.get(op.plugin.name) or EXTRA_PLUGINS.get(op.plugin.name)
    if plugin is None:
        raise unknown_plugin(op.plugin.name).at(op.plugin.span)
    return bind_plugin(b, op, plugin, input)


def _sample_distinct(b: Binder, op: s.SampleDistinct, input: TableSchema) -> TableSchema:
    _integer(b, op.count, Ctx(), "The row count of sample-distinct")
    t = b.scalar(op.of, Ctx(row=input))
    return TableSchema((Column(expression_name(op.of) or "Column1", t),))


def _search(b: Binder, op: s.Search, input: TableSchema) -> TableSchema:
    if b.bound.inputs.get(op) is EMPTY_SCHEMA:
        schemas = _input_schemas(b, op.tables, False) or [
            t.schema for db in b.globals.databases for t in db.tables
        ] + _views_in_scope(b)
        merged = _union_schemas(schemas, "outer") if schemas else []
        row = TableSchema(tuple(merged), True, any(sc.opaque for sc in schemas))
        b.scalar(op.predicate, Ctx(row=row, search=True))
        return TableSchema((Column("$table", STRING), *merged), row.raw, row.opaque)
    b.scalar(op.predicate, Ctx(row=input, search=True))
    return input


def _views_in_scope(b: Binder) -> list[TableSchema]:
    from bzrk.kql.symbols import UserFunctionSymbol

    out = []
    for scope in b.scopes:
        for sym in scope.values():
            if (
                isinstance(sym, UserFunctionSymbol)
                and sym.declaration.is_view
                and not sym.declaration.params
            ):
                v = b.invoke_user(sym, (), sym.declaration, Ctx(), None)
                if isinstance(v, TableSchema):
                    out.append(v)
    return out


def _find(b: Binder, op: s.Find, input: TableSchema) -> TableSchema:
    """ADX's output schema: the source column, the kept columns (`project-smart`: those the
    predicate names and those every table with a predicate column has; `project`: the listed
    ones) and `pack_` for the rest (engine/compile/operators/find.py runs it)."""
    schemas = _input_schemas(b, op.tables, False) or [
        t.schema for db in b.globals.databases for t in db.tables
    ] + _views_in_scope(b)
    if not schemas:
        return TableSchema((Column("source_", STRING),), opaque=True)
    merged = _union_schemas(schemas, "outer")
    # a name of several types is one column per type (x_long, x_string): not modelled here
    opaque = any(sc.opaque for sc in schemas) or len(merged) != len(
        {c.name for sc in schemas for c in sc.columns}
    )
    raw = any(sc.raw for sc in schemas)
    b.scalar(op.predicate, Ctx(row=TableSchema(tuple(merged), raw, opaque)))
    source = next((p.value.name for p in op.params if isinstance(p.value, s.NameRef)), "source_")

    def visible(sc: TableSchema) -> list[Column]:
        return [c for c in sc.columns if not c.name.startswith(("$", "__"))]

    columns = {c.name: c for c in merged}
    named = {n.name for n in op.predicate.walk() if isinstance(n, s.NameRef)} & set(columns)
    kept = [sc for sc in schemas if not named or any(sc.find(n) for n in named)]
    pack = False
    if op.project is None:
        common = set.intersection(*({c.name for c in visible(sc)} for sc in kept or schemas))
        chosen = [c for c in merged if c.name in named or c.name in common]
        pack = any(c.name not in named | common for sc in kept for c in visible(sc))
    else:
        chosen = []
        for item in op.project:
            if isinstance(item, s.Call) and item.name == "pack_all":
                pack = True
            elif isinstance(item, s.NameRef):
                chosen.append(columns.get(item.name) or Column(item.name, UNKNOWN))
            elif (
                isinstance(item, s.Binary)
                and isinstance(item.left, s.NameRef)
                and isinstance(item.right, s.NameRef)
            ):
                chosen.append(Column(item.left.name, item.right.name))
    pack_column = [Column("pack_", DYNAMIC)] if pack else []
    return TableSchema((Column(source, STRING), *chosen, *pack_column), opaque=opaque)


def _invoke(b: Binder, op: s.Invoke, input: TableSchema) -> TableSchema:
    from bzrk.kql.symbols import UserFunctionSymbol

    sym = b.lookup_local(op.call.name)
    if not isinstance(sym, UserFunctionSymbol):
        raise unknown_name(op.call.name).at(op.call.span)
    b.bound.symbols[op.call] = sym
    result = b.invoke_user(sym, op.call.args, op.call, Ctx(), input)
    return result if isinstance(result, TableSchema) else TableSchema((), opaque=True)


def _facet(b: Binder, op: s.Facet, input: TableSchema) -> TableSchema:
    # the first of its tables: the `with` query's, else the first column's values and counts
    for name in op.columns:
        if input.find(name) is None and not input.opaque:
            raise unknown_name(name).at(op.span)
    if op.subquery is not None:
        return b.tabular(op.subquery, Ctx(row=input))
    first = op.columns[0] if op.columns else ""
    col = input.find(first)
    return TableSchema(
        (Column(first, col.type if col else UNKNOWN), Column(f"count_{first}", LONG))
    )


def _fork(b: Binder, op: s.Fork, input: TableSchema) -> TableSchema:
    schemas = [b.tabular(br, Ctx(row=input)) for br in op.branches]
    return schemas[0] if schemas else input


def _partition(b: Binder, op: s.Partition, input: TableSchema) -> TableSchema:
    key = b.scalar(op.by, Ctx(row=input))
    if isinstance(op.subquery, s.Pipeline) and isinstance(op.subquery.source, s.Star):
        return b.tabular(op.subquery, Ctx(row=input))
    # `{ query }` form: the key column's name stands for the partition (a one-column table,
    # read with toscalar(key)); the query does not see the input rows directly
    b.scopes.append({})
    try:
        if isinstance(op.by, s.NameRef):
            key_schema = TableSchema((Column(op.by.name, key),))
            b.declare(op.by.name, VariableSymbol(op.by.name, None, key_schema, None, "parameter"))
        if isinstance(op.subquery, s.Lambda):
            return _bind_block(b, op.subquery, input)
        return b.tabular(op.subquery, Ctx())
    finally:
        b.scopes.pop()


def _bind_block(b: Binder, block: s.Lambda, input: TableSchema) -> TableSchema:
    result = None
    for stmt in block.body:
        r = b.bind_statement(stmt, top=False)
        if r is not None:
            result = r
    return result if isinstance(result, TableSchema) else TableSchema((), opaque=True)


def _scan(b: Binder, op: s.Scan, input: TableSchema) -> TableSchema:
    declared = [Column(p.name, p.type) for p in op.declares]
    row = _merge_extend(input, declared)
    b.scopes.append({})
    try:
        for step in op.steps:
            b.declare(step.name, VariableSymbol(step.name, None, row, None, "let"))
        for step in op.steps:
            b.scalar(step.condition, Ctx(row=row))
            for a in step.assignments:
                b.scalar(a.expr, Ctx(row=row))
    finally:
        b.scopes.pop()
    cols = list(row.columns)
    for p in op.params:
        if p.name == "with_match_id" and isinstance(p.value, s.NameRef):
            cols.append(Column(p.value.name, LONG))
    return TableSchema(tuple(cols), input.raw, input.opaque)


def _reduce(b: Binder, op: s.Reduce, input: TableSchema) -> TableSchema:
    t = b.scalar(op.by, Ctx(row=input))
    if t not in (STRING, DYNAMIC, UNKNOWN):  # `reduce by n` over a long: Kusto's KS141
        raise type_mismatch("The expression of reduce", STRING, t, "KS141").at(op.by.span)
    return TableSchema(
        (Column("Pattern", STRING), Column("Count", LONG), Column("Representative", STRING))
    )


def _top_nested(b: Binder, op: s.TopNested, input: TableSchema) -> TableSchema:
    cols: list[Column] = []
    taken: set[str] = set()
    for level in op.levels:
        if level.count is not None:
            b.scalar(level.count, Ctx())
        t = b.scalar(level.of.expr, Ctx(row=input))
        name = (
            level.of.names[0] if level.of.names else (expression_name(level.of.expr) or "Column1")
        )
        cols.append(Column(name, t))
        taken.add(name)
        agg = bind_aggregates(b, (level.by,), input, taken=taken)
        if agg and not level.by.names:  # `by sum(x)` is named for its level: aggregated_State
            agg = [Column(f"aggregated_{name}", agg[0].type), *agg[1:]]
        cols.extend(agg)
        taken.update(c.name for c in agg)
    return TableSchema(tuple(cols))


def _top_hitters(b: Binder, op: s.TopHitters, input: TableSchema) -> TableSchema:
    b.scalar(op.count, Ctx())
    t = b.scalar(op.of, Ctx(row=input))
    name = expression_name(op.of) or "Column1"
    cols = [Column(name, t)]
    if op.by is not None:
        bt = b.scalar(op.by, Ctx(row=input))
        if bt not in NUMERIC_TYPES and bt != UNKNOWN:
            raise type_mismatch("The top-hitters sum", "a number", bt).at(op.by.span)
        cols.append(Column(f"approximate_sum_{expression_name(op.by) or ''}", bt))
    else:
        cols.append(Column(f"approximate_count_{name}", LONG))
    return TableSchema(tuple(cols))


def _print(b: Binder, op: s.Print, input: TableSchema) -> TableSchema:
    return TableSchema(tuple(bind_items(b, op.items, EMPTY_SCHEMA, mode="print")))


def _range(b: Binder, op: s.Range, input: TableSchema) -> TableSchema:
    t = b.scalar(op.start, Ctx())
    end = b.scalar(op.end, Ctx())
    step = b.scalar(op.step, Ctx())
    for expr, typ, what in ((op.start, t, "from"), (op.end, end, "to"), (op.step, step, "step")):
        if typ not in _SUMMABLE:
            raise type_mismatch(
                f"The {what} value of range", "a number, timespan or datetime", typ, "KS138"
            ).at(expr.span)
    if isinstance(op.step, s.Literal) and op.step.value == 0:  # `step 0`: Kusto's KS140
        raise invalid_argument("The step of range must not be 0.", "KS140").at(op.step.span)
    # `from 1h to 2h step 1`: a step that cannot be added to the bounds (Kusto checks it only
    # when both bounds have one type: `from datetime(…) to 10 step 1` runs)
    if t == end and arithmetic_type("+", t, step) is None:
        raise operator_not_defined("+", t, step).at(op.step.span)
    if t in (INT, LONG, REAL, "decimal"):
        t = widest([t, *(x for x in (end, step) if x in (INT, LONG, REAL, "decimal"))])
    return TableSchema((Column(op.name, t),))


def _datatable(b: Binder, op: s.DataTable, input: TableSchema) -> TableSchema:
    names: set[str] = set()
    for c in op.columns:
        if c.name in names:
            raise duplicate_column(c.name).at(c.span)
        names.add(c.name)
    for i, v in enumerate(op.values):
        value = b.scalar(v, Ctx())
        if op.columns:
            # a value of the column's type (a number for a number, anything for a dynamic):
            # `datatable(a:int)["x"]` is an error in Kusto, not a row that fails when it runs
            column = op.columns[i % len(op.columns)]
            if not compatible(column.type, value):
                raise type_mismatch(f"A value of column '{column.name}'", column.type, value).at(
                    v.span
                )
    if op.columns and len(op.values) % len(op.columns):
        raise wrong_data_count(len(op.columns), len(op.values)).at(op.span)
    return TableSchema(tuple(Column(c.name, c.type) for c in op.columns))


def _externaldata(b: Binder, op: s.ExternalData, input: TableSchema) -> TableSchema:
    return TableSchema(tuple(Column(c.name, c.type) for c in op.columns))


def _consume(b: Binder, op: s.Consume, input: TableSchema) -> TableSchema:
    return EMPTY_SCHEMA


def _project_by_names(b: Binder, op: s.ProjectByNames, input: TableSchema) -> TableSchema:
    patterns: list[str] = []
    for item in op.items:
        value = b.bind(item, Ctx(row=TableSchema((), opaque=True)))
        patterns.extend(_names_in(b, item, value))
    cols: list[Column] = []
    seen: set[str] = set()
    for pattern in patterns:
        for c in _match(pattern, input, b, op, strict=False):
            if c.name not in seen:
                seen.add(c.name)
                cols.append(c)
    return TableSchema(tuple(cols), False, input.opaque)


def _names_in(b: Binder, expr: s.Expr, value: object) -> list[str]:
    """Column names/patterns an argument of project-by-names denotes, when known statically."""
    if isinstance(expr, s.Literal):
        if isinstance(expr.value, str):
            return [expr.value]
        if isinstance(expr.value, list):
            return [v for v in expr.value if isinstance(v, str)]
    if isinstance(expr, s.Call) and expr.name == "column_names_of" and expr.args:
        schema = b.bound.schemas.get(expr.args[0])
        return schema.names if schema is not None else []
    if isinstance(expr, s.NameRef):
        sym = b.bound.symbols.get(expr)
        if isinstance(sym, VariableSymbol) and isinstance(sym.value, s.Literal):
            return _names_in(b, sym.value, None)
    return []


def _generic(b: Binder, op: s.GenericOperator, input: TableSchema) -> TableSchema:
    return TableSchema((), opaque=True)


_HANDLERS: dict[type, Callable[..., TableSchema]] = {
    s.Where: _where,
    s.Project: _project,
    s.Extend: _extend,
    s.ProjectAway: _project_away,
    s.ProjectKeep: _project_keep,
    s.ProjectRename: _project_rename,
    s.ProjectReorder: _project_reorder,
    s.Summarize: _summarize,
    s.Count: _count,
    s.Take: _take,
    s.Tail: _take,
    s.Sample: _take,
    s.Top: _top,
    s.TopNested: _top_nested,
    s.TopHitters: _top_hitters,
    s.Sort: _sort,
    s.Distinct: _distinct,
    s.Join: _join,
    s.Lookup: _lookup,
    s.Union: _union,
    s.MvExpand: _mv_expand,
    s.MvApply: _mv_apply,
    s.Parse: _parse,
    s.ParseKv: _parse_kv,
    s.MakeSeries: _make_series,
    s.Render: _render,
    s.As: _as,
    s.Serialize: _serialize,
    s.GetSchema: _getschema,
    s.Evaluate: _evaluate,
    s.SampleDistinct: _sample_distinct,
    s.Search: _search,
    s.Find: _find,
    s.Invoke: _invoke,
    s.Consume: _consume,
    s.Facet: _facet,
    s.Fork: _fork,
    s.Partition: _partition,
    s.Scan: _scan,
    s.Reduce: _reduce,
    s.Print: _print,
    s.Range: _range,
    s.DataTable: _datatable,
    s.ExternalData: _externaldata,
    s.GenericOperator: _generic,
    s.ProjectByNames: _project_by_names,
}

# Berserk's operators and the graph operators live in their own modules (they import the
# helpers above, hence the registration at the bottom).
from bzrk.kql.binder import berserk as _berserk  # noqa: E402
from bzrk.kql.binder import graph as _graph  # noqa: E402

_HANDLERS.update(_berserk.HANDLERS)
_HANDLERS.update(_graph.HANDLERS)
