"""KQL's result-column naming rules for unnamed expressions (Kusto `GetExpressionResultName`).

`x` → `x`; `a.b.c` → `a_b_c`; `a["k"]` → `a_k`; `sum(x)` → `sum_x`; `count()` → `count_`;
`bin(timestamp, 1h)` → `timestamp`; otherwise no name (the operator then makes `Column1`,
`print_0`, ...). Duplicates get a numeric suffix (`x1`, `x2`).
"""

from __future__ import annotations

from bzrk.kql import syntax as s
from bzrk.kql.catalog import AGGREGATES, FUNCTIONS, FunctionSymbol


def expression_name(expr: s.Expr, aggregate: bool = False) -> str | None:
    """The column name KQL derives for an unnamed expression, or None."""
    if isinstance(expr, s.NameRef):
        return expr.name
    if isinstance(expr, s.Paren):
        return expression_name(expr.expr, aggregate)
    if isinstance(expr, s.Member):
        if isinstance(expr.target, s.NameRef) and expr.target.name in ("$left", "$right"):
            return expr.name
        base = expression_name(expr.target)
        return f"{base}_{expr.name}" if base else None
    if isinstance(expr, s.Index):
        base = expression_name(expr.target)
        idx = expr.index
        if (
            base
            and isinstance(idx, s.Literal)
            and isinstance(idx.value, str | int)
            and not isinstance(idx.value, bool)
        ):
            return f"{base}_{idx.value}"
        return None
    if (
        isinstance(expr, s.Call)
        and expr.target is None
        and expr.name in _ARRAY_PREFIX
        and aggregate
    ):
        base = _arg_name(expr.args[0]) if expr.args else None
        return f"{_ARRAY_PREFIX[expr.name]}_{base or ''}"
    if isinstance(expr, s.Call) and expr.target is None:
        fn: FunctionSymbol | None = None
        if aggregate:
            fn = AGGREGATES.get(expr.name) or FUNCTIONS.get(expr.name)
        else:
            fn = FUNCTIONS.get(expr.name) or AGGREGATES.get(expr.name)
        if fn is None:
            return None
        return call_name(fn, expr.args)
    return None


_ARRAY_PREFIX = {"percentiles_array": "percentiles", "percentilesw_array": "percentiles"}


def _arg_name(arg: s.Expr) -> str | None:
    if isinstance(arg, s.NamedArg):
        arg = arg.value
    return expression_name(arg)


def call_name(fn: FunctionSymbol, args: tuple[s.Expr, ...]) -> str | None:
    kind = fn.result_name_kind
    first = _arg_name(args[0]) if args else None
    if kind == "FirstArgument":
        return first
    if kind == "OnlyArgument":
        return first if len(args) == 1 else None
    if kind == "FirstArgumentValueIfColumn":
        return first
    if kind == "NameAndFirstArgument":
        return f"{fn.name}_{first or ''}"
    if kind == "NameAndOnlyArgument":
        return f"{fn.name}_{first or ''}" if len(args) <= 1 else f"{fn.name}_"
    if kind == "PrefixAndFirstArgument":
        return f"{fn.result_prefix}_{first or ''}"
    if kind == "PrefixAndOnlyArgument":
        return f"{fn.result_prefix}_{first or ''}" if len(args) <= 1 else f"{fn.result_prefix}_"
    if kind == "PrefixOnly":
        return fn.result_prefix
    return None


def unique_name(name: str, taken: set[str]) -> str:
    """`name`, or `name1`, `name2`... the first not in `taken`."""
    if name not in taken:
        return name
    i = 1
    while f"{name}{i}" in taken:
        i += 1
    return f"{name}{i}"
