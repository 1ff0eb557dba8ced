"""Star expressions: `* has "x"` (any column) and `events[*].name` (every element of an array).

`* op "x"` with a string operator holds when some string or dynamic column of the row
satisfies `op` (ADX's `where * has "x"`); a negated operator (`* !has "x"`) when none does.
`$raw` is the whole record again (computed from the other columns), so it is not read twice.

`a[*]` is every element of the array `a`, and the path after it (`a[*].name`, `a[*].b[*].c`)
is read from each element. As a value it is the array of those values; in a comparison, a
string operator or `in (...)`, the condition holds when some element's value satisfies it
(the vendor: "filters array elements without mv-expand").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile import bag_paths, bag_search
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.typed import T, Typed, json_or_null_literal, lit
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler

# The lambda parameter holding one array element (JSON text) and the name it has in KQL.
_ELEMENT = "__star_e"
# Comparisons, which `*` (a set of columns of different types) cannot take part in.
_COMPARISONS = frozenset({"==", "!=", "<>", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"})


def searchable(columns: Iterable[tuple[str, str]]) -> list[str]:
    """The columns `*` and a search term look in: string and dynamic ones, but not `$raw`."""
    return [
        name
        for name, kql_type in columns
        if kql_type in ("string", "dynamic") and not name.startswith("__") and name != bag_paths.RAW
    ]


def any_column(c: ExprCompiler, node: K.Binary) -> Typed:
    """`* op right`: some searchable column satisfies `op` (none does, for a negated op)."""
    op = node.op
    if op in _COMPARISONS or op in ("and", "or"):
        raise unsupported(node, f"'* {op}' is not supported: '*' takes a string operator")
    negated = op.startswith("!")
    positive = ("=~" if op == "!~" else op[1:]) if negated else op
    right = c.compile(node.right)
    columns = c.scope.input_columns if c.scope.input_columns is not None else c.scope.columns
    names = searchable((name, typed.type) for name, typed in columns.items())
    parts = [bag_search.string_test(positive, columns[name], right, node).sql for name in names]
    if not parts:
        return Typed(lit(negated), "bool")
    expr = parts[0]
    for part in parts[1:]:
        expr = S.BinOp("OR", expr, part)
    return Typed(S.Not(expr) if negated else expr, "bool")


def has_wildcard(node: K.Expr) -> bool:
    """Whether ``node`` is a path with a `[*]` step (`events[*].name`)."""
    while isinstance(node, K.Member | K.Index):
        if isinstance(node, K.Index) and isinstance(node.index, K.Star):
            return True
        node = node.target
    return False


def _split(node: K.Expr) -> tuple[K.Expr, K.Expr]:
    """The array under the path's first `[*]`, and the rest of the path over one element."""
    if (
        isinstance(node, K.Index)
        and isinstance(node.index, K.Star)
        and not has_wildcard(node.target)
    ):
        return node.target, K.NameRef(node.span, _ELEMENT)
    assert isinstance(node, K.Member | K.Index)
    array, rest = _split(node.target)
    return array, dataclasses.replace(node, target=rest)


def _element_compiler(c: ExprCompiler) -> ExprCompiler:
    """A compiler of ``c``'s scope where the placeholder name is one element (JSON text)."""
    element = Typed(S.Col(_ELEMENT), "dynamic")
    scope = dataclasses.replace(c.scope, columns={**c.scope.columns, _ELEMENT: element})
    return type(c)(scope, aggregates=c.aggregates)


def _array(c: ExprCompiler, array: K.Expr) -> S.Expr:
    value = c.compile(array)
    if value.type != "dynamic":
        raise unsupported(array, "'[*]' takes an array (a dynamic value)", code="InvalidArgument")
    return value.sql


def values(c: ExprCompiler, node: K.Expr) -> Typed:
    """`a[*].path` as a value: the array of each element's value (null when `a` is)."""
    array, rest = _split(node)
    if isinstance(rest, K.NameRef) and rest.name == _ELEMENT:
        return c.compile(array)
    each = S.Lambda([_ELEMENT], json_or_null_literal(_element_compiler(c).compile(rest)))
    text = (
        "if(isNull({0}), NULL,"
        " concat('[', arrayStringConcat(arrayMap({1}, JSONExtractArrayRaw({0})), ','), ']'))"
    )
    return Typed(T(text, _array(c, array), each), "dynamic")


def any_element(c: ExprCompiler, node: K.Binary | K.InList) -> Typed:
    """A condition over a `[*]` path: some element's value satisfies it."""
    condition: K.Expr
    if has_wildcard(node.left):
        array, rest = _split(node.left)
        condition = dataclasses.replace(node, left=rest)
    else:
        assert isinstance(node, K.Binary)
        array, rest = _split(node.right)
        condition = dataclasses.replace(node, right=rest)
    inner = _element_compiler(c)
    body = inner.as_bool(inner.compile(condition))
    each = S.Lambda([_ELEMENT], body)
    return Typed(T("arrayExists({0}, JSONExtractArrayRaw({1}))", each, _array(c, array)), "bool")
