"""KQL's result-column naming rules for unnamed expressions (Kusto `GetExpressionResultName`).

`x` → `x`; `a.b.c` → `a_b_c`; `a["k"]` → `a_k`; `sum(x)` → `sum_x`; `count()` → `count_`;
`bin(timestamp, 1h)` → `timestamp`; an argument named in its call by that name (`sum(x = a)` →
`sum_x`, `arg_min(t, service = …)` → `service`); otherwise no name (the operator then makes `Column1`,
`print_0`, ...). Duplicates get a numeric suffix (`x1`, `x2`).
"""

from __future__ import annotations

from bzrk.kql import syntax as s
from bzrk.kql.catalog import AGGREGATES, FUNCTIONS, FunctionSymbol


def expression_name(expr: s.Expr, aggregate: bool = False) -> str | None:
    """The column name KQL derives for an unnamed expression, or None."""
    if isinstance(expr, s.NamedArg):  # an argument named in the call: `sum(x = a)` is sum_x
        return expr.name
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


# Aggregates the catalogue leaves unnamed, or names otherwise than the real engine does: the
# prefix of their column name (``make_list(x)`` → ``list_x``; ``take_any(x)`` keeps ``x``).
_AGGREGATE_PREFIX = {
    "make_list": "list",
    "make_list_if": "list",
    "make_list_with_nulls": "list",
    "make_set": "set",
    "make_set_if": "set",
    "make_bag": "bag",
    "make_bag_if": "bag",
    "take_any": "",
    "take_anyif": "anyif",
    "dcount_hll": "dcount_hll",
    "buildschema": "schema",
}
# Named by their prefix alone (Berserk's OTel metric aggregates: ``otel_rate``).
_PREFIX_ONLY = frozenset({"otel_rate", "otel_increase", "otel_delta"})
# Named after both their arguments (``covariance(x, y)`` → ``covariance_x_y``, as ADX answers;
# the catalogue says the first argument only).
_BOTH_ARGUMENTS = frozenset({"covariance", "covarianceif", "covariancep", "covariancepif"})


def aggregate_name(call: s.Call) -> str:
    """The column name of an unnamed aggregate call: the catalogue's rule where it has one and
    agrees with the real engine, else ``<prefix>_<first column>`` (``count_``, ``sum_x``,
    ``list_x``, ``percentile_x_50``)."""
    if call.name in _BOTH_ARGUMENTS and len(call.args) >= 2:
        return f"{call.name}_{_arg_name(call.args[0]) or ''}_{_arg_name(call.args[1]) or ''}"
    named = expression_name(call, aggregate=True)
    if named is not None:
        return named
    prefix = _AGGREGATE_PREFIX.get(call.name, call.name)
    if call.name in _PREFIX_ONLY:
        return prefix
    first = call.args[0] if call.args else None
    column = first.name if isinstance(first, s.NameRef) else ""
    if not prefix:  # take_any(x) keeps the column's own name
        return column or "any_"
    if call.name == "percentile" and len(call.args) >= 2:
        return f"{prefix}_{column}_{percent_label(call.args[1])}"
    return f"{prefix}_{column}"


def percent_label(expr: s.Expr) -> str:
    """A percentage's part of a column name: ``50`` → ``50``, ``99.9`` → ``99_9`` (``""`` when
    it is not a literal)."""
    if isinstance(expr, s.Literal):
        text = expr.text.lstrip("+")
        return text.replace(".", "_").replace("-", "_")
    return ""


def unique_name(name: str, taken: set[str]) -> str:
    """`name`, or `name1`, `name2`... the first not in `taken`."""
    if name not in taken:
        return name
    i = 1
    while f"{name}{i}" in taken:
        i += 1
    return f"{name}{i}"
