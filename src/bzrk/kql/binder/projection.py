"""Projection lists: binding `NamedExpr` items and naming their columns by KQL's rules
(`project`/`extend` → `Column1`, `print` → `print_0`, summarize aggregates incl. the
multi-column ones: `arg_max`, `arg_min`, `take_any`, `percentiles`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.kql import syntax as s
from bzrk.kql.binder.naming import expression_name, unique_name
from bzrk.kql.symbols import DYNAMIC, LONG, UNKNOWN, Column, TableSchema

if TYPE_CHECKING:
    from bzrk.kql.binder.core import Binder


def _next_column(taken: set[str], counter: list[int], prefix: str = "Column") -> str:
    while True:
        counter[0] += 1
        name = f"{prefix}{counter[0]}"
        if name not in taken:
            return name


def bind_items(
    b: Binder, items: tuple[s.NamedExpr, ...], input: TableSchema, mode: str
) -> list[Column]:
    """Bind projection-like items; mode is "project", "extend", "by" or "print"."""
    from bzrk.kql.binder.core import Ctx

    ctx = Ctx(row=input)
    cols: list[Column] = []
    taken: set[str] = set(input.names) if mode == "extend" else set()
    produced: set[str] = set()
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
        if item.names:
            names = item.names
            types = [t] + [DYNAMIC] * (len(names) - 1) if len(names) > 1 else [t]
        else:
            name = expression_name(item.expr)
            if name is None:
                name = f"print_{i}" if mode == "print" else _next_column(taken | produced, counter)
            elif mode != "extend" or name in produced:
                name = unique_name(name, produced)
            names, types = (name,), [t]
        b.bound.names[item] = tuple(names)
        for n, ty in zip(names, types, strict=False):
            if n in produced and mode != "extend":
                n = unique_name(n, produced)
            produced.add(n)
            cols.append(Column(n, ty))
    return cols


_MULTI = frozenset(
    {"arg_max", "arg_min", "take_any", "any", "percentiles", "percentilesw", "take_anyif", "anyif"}
)


def _percent_suffix(expr: s.Expr) -> str:
    if isinstance(expr, s.Literal):
        text = expr.text.lstrip("+")
        return text.replace(".", "_").replace("-", "_")
    return ""


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
            name = expression_name(expr, aggregate=True) or _next_column(produced, counter)
            generated = [Column(name, t)]
        if item.names:
            renamed = [
                Column(n, generated[i].type if i < len(generated) else UNKNOWN)
                for i, n in enumerate(item.names)
            ]
            generated = renamed + generated[len(item.names) :]
        final: list[Column] = []
        for c in generated:
            name = c.name if item.names and c.name in item.names else unique_name(c.name, produced)
            produced.add(name)
            final.append(Column(name, c.type))
        b.bound.names[item] = tuple(c.name for c in final)
        cols.extend(final)
    return cols


def _multi_columns(b: Binder, call: s.Call, input: TableSchema, taken: set[str]) -> list[Column]:
    args = call.args
    name = call.name

    def arg_type(a: s.Expr) -> str:
        return b.bound.types.get(a, UNKNOWN)

    if name in ("percentiles", "percentilesw"):
        base = expression_name(args[0]) or ""
        first = 2 if name == "percentilesw" else 1
        t = arg_type(args[0])
        return [Column(f"percentile_{base}_{_percent_suffix(a)}", t) for a in args[first:]]
    if name in ("arg_max", "arg_min"):
        first_name = expression_name(args[0]) or ("max_" if name == "arg_max" else "min_")
        cols = [Column(first_name, arg_type(args[0]))]
        seen = set(taken) | {first_name}
        for a in args[1:]:
            if isinstance(a, s.Star):
                for c in input.columns:
                    if c.name not in seen:
                        cols.append(c)
                        seen.add(c.name)
            else:
                n = expression_name(a) or "Column1"
                cols.append(Column(n, arg_type(a)))
                seen.add(n)
        return cols
    # take_any / any (optionally *if): one column per argument, `*` → all input columns
    cols = []
    use = args[:-1] if name.endswith("if") else args
    seen = set(taken)
    for a in use:
        if isinstance(a, s.Star):
            for c in input.columns:
                if c.name not in seen:
                    cols.append(c)
                    seen.add(c.name)
        else:
            n = expression_name(a) or ("any_" if name.startswith("any") else "Column1")
            cols.append(Column(n, arg_type(a)))
    return cols or [Column(f"{name}_", LONG)]
