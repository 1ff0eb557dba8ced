"""Projection lists: binding `NamedExpr` items and naming their columns by KQL's rules
(`project`/`extend` → `Column1`, `print` → `print_0`, summarize aggregates incl. the
multi-column ones: `arg_max`, `arg_min`, `take_any`, `percentiles`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.kql import syntax as s
from bzrk.kql.binder.naming import aggregate_name, expression_name, percent_label, unique_name
from bzrk.kql.binder.typing_rules import promoted
from bzrk.kql.catalog import TUPLE_RESULTS
from bzrk.kql.diagnostics import column_outside_aggregate, duplicate_column
from bzrk.kql.symbols import (
    DYNAMIC,
    LONG,
    UNKNOWN,
    Column,
    ColumnSymbol,
    RawPathSymbol,
    TableSchema,
)

if TYPE_CHECKING:
    from bzrk.kql.binder.core import Binder, Ctx


def _next_column(taken: set[str], counter: list[int], prefix: str = "Column") -> str:
    while True:
        counter[0] += 1
        name = f"{prefix}{counter[0]}"
        if name not in taken:
            return name


# Where an item may name a column an earlier item of the same operator made.
_SEES_EARLIER = frozenset({"project", "extend", "print"})


def bind_items(
    b: Binder,
    items: tuple[s.NamedExpr, ...],
    input: TableSchema,
    mode: str,
    *,
    sees_earlier: bool = True,
) -> list[Column]:
    """Bind projection-like items; mode is "project", "extend", "by" or "print".

    ``sees_earlier=False``: a later item does not see an earlier one (graph-match's project,
    where ``employee = employee.name, age = employee.age`` reads the node variable twice).
    """
    from bzrk.kql.binder.core import Ctx

    ctx = Ctx(row=input)
    visible, inputs = list(input.columns), set(input.names)
    cols: list[Column] = []
    taken: set[str] = set(input.names) if mode == "extend" else set()
    produced: set[str] = set()
    spelled_names: set[str] = set()  # the produced names the query spelled
    counter = [0]
    for i, item in enumerate(items):
        if isinstance(item.expr, s.Star) and mode == "project":
            for c in input.columns:
                if c.name not in produced:
                    cols.append(c)
                    produced.add(c.name)
            continue
        value = b.bind(item.expr, ctx)
        t = value if isinstance(value, str) else DYNAMIC
        tuple_cols = _tuple_columns(b, item)
        if tuple_cols is not None:
            names, types = tuple(n for n, _ in tuple_cols), [ty for _, ty in tuple_cols]
        elif item.names:
            names = item.names
            types = [t] + [DYNAMIC] * (len(names) - 1) if len(names) > 1 else [t]
        else:
            # `print` never derives names from expressions: unnamed items are print_<index>
            dotted = s.dotted_name(item.expr)
            # the input column `a_b.c` keeps its name
            column = _input_column(item, ctx)
            derived = None if mode == "print" else expression_name(item.expr)
            name = dotted if column else derived
            if name is None:
                name = f"print_{i}" if mode == "print" else _next_column(taken | produced, counter)
            elif mode not in ("extend", "project") and not column:
                name = unique_name(name, produced)  # a repeated column is checked below
            names, types = (name,), [t]
        # a name the query spells (`project b = 1, b = 2`, `project a, a`) may not repeat (KS171);
        # one derived from an expression, a member path included, gets a suffix, and so does a
        # spelled name that only repeats a derived one (Kusto.Language:
        # `project tostring(a.n), a.n, a_n = 1` is a_n, a_n1, a_n2)
        spelled = bool(item.names) or isinstance(item.expr, s.NameRef) or _input_column(item, ctx)
        final: list[str] = []
        for n, ty in zip(names, types, strict=False):
            if n in produced and (
                (mode in ("project", "by") and spelled and n in spelled_names)
                or (item.names and mode in ("extend", "by"))
            ):
                raise duplicate_column(n).at(item.span)  # `extend v = 1, v = 2`: KS171
            if n in produced and mode != "extend":
                n = unique_name(n, produced)
            produced.add(n)
            final.append(n)
            if spelled:
                spelled_names.add(n)
            cols.append(Column(n, ty))
            if sees_earlier and mode in _SEES_EARLIER and n not in inputs:
                # A later item sees this one (`extend a = x, b = a + 1`), except where it
                # shadows an input column: there the input's column wins, as in the compiler
                # (`extend x = x + 1, y = x` reads the input's x).
                visible.append(Column(n, ty))
                ctx = Ctx(row=TableSchema(tuple(visible), input.raw, input.opaque))
        b.bound.names[item] = tuple(final)  # after the suffixes: the names the engine uses
    return cols


def _input_column(item: s.NamedExpr, ctx: Ctx) -> bool:
    """Whether the item is a dotted name of an input column (`project ['a.b']` spelled `a.b`)."""
    dotted = s.dotted_name(item.expr)
    return dotted is not None and ctx.row is not None and ctx.row.find(dotted) is not None


def _tuple_columns(b: Binder, item: s.NamedExpr) -> list[tuple[str, str]] | None:
    expr = item.expr
    if not isinstance(expr, s.Call) or expr.target is not None:
        return None
    if expr.name in ("array_sort_asc", "array_sort_desc") and b.bound.calls.get(expr) is not None:
        if item.names:
            return [(n, DYNAMIC) for n in item.names]
        arrays = [a for a in expr.args if b.bound.types.get(a) == DYNAMIC]
        if len(arrays) < 2:
            return None
        return [(f"{expression_name(a) or 'array'}_sorted", DYNAMIC) for a in arrays]
    if expr.name not in TUPLE_RESULTS:
        return None
    info = b.bound.calls.get(expr)
    if info is None or info.kind != "scalar":
        return None
    suffixes = TUPLE_RESULTS[expr.name]
    if expr.name in ("array_sort_asc", "array_sort_desc"):
        sorted_cols = [
            (f"{expression_name(a) or 'array'}_sorted", DYNAMIC)
            for a in expr.args
            if not isinstance(a, s.Literal)
        ]
        if item.names:
            return [(n, DYNAMIC) for n in item.names]
        return sorted_cols or None
    if len(item.names) > 1:
        cols = [
            (n, suffixes[i][1] if i < len(suffixes) else DYNAMIC) for i, n in enumerate(item.names)
        ]
        return cols
    if item.names:  # a single name renames the first column only
        arg = expression_name(expr.args[0]) if expr.args else None
        base = f"{expr.name}_{arg or ''}"  # series_stats__min for a literal, as Kusto names it
        return [(item.names[0], suffixes[0][1])] + [
            (f"{base}_{suffix}", t) for suffix, t in suffixes[1:]
        ]
    else:
        arg = expression_name(expr.args[0]) if expr.args else None
        base = f"{expr.name}_{arg or ''}"  # series_stats__min for a literal, as Kusto names it
    return [(f"{base}_{suffix}", t) for suffix, t in suffixes]


_MULTI = frozenset(
    {
        "arg_max",
        "arg_min",
        "take_any",
        "any",
        "percentiles",
        "percentilesw",
        "take_anyif",
        "anyif",
        "percentile",
        "percentilew",
    }
)


def bind_aggregates(
    b: Binder, items: tuple[s.NamedExpr, ...], input: TableSchema, taken: set[str]
) -> list[Column]:
    from bzrk.kql.binder.core import Ctx

    ctx = Ctx(row=input, aggregates=True)
    cols: list[Column] = []
    produced = set(taken)
    counter = [0]
    for item in items:
        expr = item.expr
        value = b.bind(expr, ctx)
        outside = _row_value_outside_aggregate(b, expr, input, taken)
        if outside is not None:
            raise column_outside_aggregate(outside.name).at(outside.span)
        t = value if isinstance(value, str) else DYNAMIC
        generated: list[Column]
        if (
            isinstance(expr, s.Call)
            and expr.name in _MULTI
            and expr.target is None
            and b.bound.calls.get(expr) is not None
            and b.bound.calls[expr].kind == "aggregate"
        ):
            generated = _multi_columns(b, expr, input, produced)
        else:
            name = (
                aggregate_name(expr)
                if isinstance(expr, s.Call)
                and expr.target is None
                and b.bound.calls.get(expr) is not None
                and b.bound.calls[expr].kind == "aggregate"
                else expression_name(expr, aggregate=True) or _next_column(produced, counter)
            )
            generated = [Column(name, t)]
        if item.names:
            renamed = [
                Column(n, generated[i].type if i < len(generated) else UNKNOWN)
                for i, n in enumerate(item.names)
            ]
            generated = renamed + generated[len(item.names) :]
        final: list[Column] = []
        for c in generated:
            if item.names and c.name in item.names and c.name in produced:
                # `summarize y = count(), y = sum(1)`, `summarize x = count() by x`: KS171
                raise duplicate_column(c.name).at(item.span)
            name = c.name if item.names and c.name in item.names else unique_name(c.name, produced)
            produced.add(name)
            final.append(Column(name, c.type))
        b.bound.names[item] = tuple(c.name for c in final)
        cols.extend(final)
    return cols


def _row_value_outside_aggregate(
    b: Binder, expr: s.Expr, input: TableSchema, keys: set[str]
) -> s.NameRef | None:
    """A name an aggregate item reads from the row outside every aggregate call
    (`summarize r = x + 1`: Kusto's KS236), other than a group key; None: none."""
    stack: list[s.Node] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, s.Call):
            info = b.bound.calls.get(node)
            if info is not None and info.kind == "aggregate":
                continue
        if isinstance(node, s.Pipeline | s.Lambda):  # toscalar(…) reads its own rows
            continue
        if isinstance(node, s.NameRef) and node.name not in keys:
            sym = b.bound.symbols.get(node)
            if isinstance(sym, RawPathSymbol) or (
                isinstance(sym, ColumnSymbol) and input.find(node.name) is not None
            ):
                return node
        stack.extend(node.children())
    return None


def _multi_columns(b: Binder, call: s.Call, input: TableSchema, taken: set[str]) -> list[Column]:
    args = call.args
    name = call.name

    def arg_type(a: s.Expr) -> str:
        return b.bound.types.get(a, UNKNOWN)

    if name in ("take_any", "any") and len(args) == 1 and not isinstance(args[0], s.Star):
        # a computed value: take_any's any_arg0 (any's any_), as Kusto.Language names it
        base = expression_name(args[0])
        n = (base if name == "take_any" else f"any_{base}") if base else None
        n = n or ("any_arg0" if name == "take_any" else "any_")
        return [Column(n, arg_type(args[0]))]
    if name in ("percentiles", "percentilesw", "percentile", "percentilew"):
        base = expression_name(args[0]) or ""
        first = 2 if name in ("percentilesw", "percentilew") else 1
        t = promoted(arg_type(args[0]))
        return [Column(f"percentile_{base}_{percent_label(a)}", t) for a in args[first:]]
    if name in ("arg_max", "arg_min"):
        first_name = expression_name(args[0]) or ("max_" if name == "arg_max" else "min_")
        cols = [Column(first_name, arg_type(args[0]))]
        seen = set(taken) | {first_name}
        computed = 0
        for a in args[1:]:
            if isinstance(a, s.Star):
                for c in input.columns:
                    if c.name not in seen:
                        cols.append(c)
                        seen.add(c.name)
                continue
            arg_name = expression_name(a)
            if arg_name in seen and any(isinstance(x, s.Star) for x in args[1:]):
                continue  # `arg_max(x, *, y)`: y is among the row's columns already
            if arg_name is None:  # a computed value: max_x_arg1, max_x_arg2, … (Kusto.Language)
                computed += 1
                arg_name = f"{name[4:]}_{first_name}_arg{computed}"
            cols.append(Column(arg_name, arg_type(a)))
            seen.add(arg_name)
        return cols
    # take_any / any (optionally *if): one column per argument, `*` → all input columns
    cols = []
    use = args[:-1] if name.endswith("if") else args
    seen = set(taken)
    prefix = "any_" if name == "any" else ""  # the deprecated any() prefixes its columns
    for position, a in enumerate(use):
        if isinstance(a, s.Star):
            for c in input.columns:
                if c.name not in seen:
                    cols.append(Column(prefix + c.name, c.type))
                    seen.add(c.name)
        else:
            base = expression_name(a)
            if base:
                n = prefix + base
            elif name.endswith("if"):
                n = "Column1"
            else:  # a computed value: any_arg<its position> (Kusto.Language)
                n = f"any_arg{position}"
            cols.append(Column(n, arg_type(a)))
    return cols or [Column(f"{name}_", LONG)]
