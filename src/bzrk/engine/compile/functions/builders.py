"""The vocabulary function-table entries are written in, and the argument helpers they share.

:func:`fn` makes an entry from a SQL template, a result type and per-argument conversions
(``s`` string, ``r`` real, ``l`` long, ``i`` int, ``j`` JSON, ``.`` as is; the last code repeats
for variadic functions). Each family module keeps its own table and files entries in it with
``reg = registrar(TABLE)``, ``reg("name other_name", builder)``; ``functions/table.py`` merges
the families into ``FUNCTIONS``. :func:`unify` and :func:`type_arg` are the argument helpers
builders share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.typed import (
    NUMERIC_RANK,
    T,
    Typed,
    cast_to,
    to_json,
    to_string,
    typed_null,
    widest,
)
from bzrk.engine.types import normalize_kql_type
from bzrk.kql import syntax as K
from bzrk.kql.binder import scalar_result_type

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler

Builder = Callable[["ExprCompiler", list[Typed], "K.Call"], Typed]

TICKS_PER_DAY = 864_000_000_000


def _convert(value: Typed, code: str) -> Typed:
    if code == "s":
        return Typed(to_string(value), "string")
    if code == "r":
        return cast_to(value, "real")
    if code == "l":
        return cast_to(value, "long")
    if code == "i":
        return cast_to(value, "int")
    if code == "j":
        return Typed(to_json(value), "dynamic")
    return value


def fn(
    template: str, result: str | Callable[[list[Typed]], str] | None = None, conv: str = ""
) -> Builder:
    """An entry from a SQL template. Without ``result`` the call's type is the catalogue's, by
    the binder's rule for it (:func:`catalogue_type`): an entry states only its SQL, and states a
    type only where the real engine answers another than Kusto.Language declares."""

    def build(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
        converted = [
            _convert(a, conv[min(i, len(conv) - 1)] if conv else ".") for i, a in enumerate(args)
        ]
        if result is None:
            rtype = catalogue_type(node, args)
        else:
            rtype = result(args) if callable(result) else result
        return Typed(T(template, *(a.sql for a in converted)), rtype)

    return build


def catalogue_type(node: K.Call, args: list[Typed]) -> str:
    """The type of ``node`` by the catalogue (``kql/catalog/builtins.json``) and the binder's
    rule for a call: one source of truth for what a built-in returns."""
    rtype = scalar_result_type(node.name, [a.type for a in args])
    if rtype is None:
        raise unsupported(node, f"{node.name}() on these argument types has no catalogued type")
    return rtype


def registrar(table: dict[str, Builder]) -> Callable[[str, Builder], None]:
    """``reg(names, builder)`` filing ``builder`` in ``table`` under each space-separated name."""

    def reg(names: str, builder: Builder) -> None:
        for name in names.split():
            table[name] = builder

    return reg


def same(i: int = 0) -> Callable[[list[Typed]], str]:
    return lambda args: args[i].type


def wide(args: list[Typed]) -> str:
    return widest(*(a.type for a in args))


def type_arg(node: K.Expr) -> str:
    if isinstance(node, K.TypeOf):
        return normalize_kql_type(node.type)
    if isinstance(node, K.Literal) and isinstance(node.value, str):
        return normalize_kql_type(node.value)
    raise unsupported(node, "expected typeof(...)")


def unify(values: list[Typed]) -> list[Typed]:
    types = [v.type for v in values]
    non_null = [v for v in values if not _is_null_literal(v)]
    if not non_null:
        return values
    target = non_null[0].type
    if all(t in NUMERIC_RANK for t in (v.type for v in non_null)):
        target = widest(*(v.type for v in non_null))
    elif any(v.type != target for v in non_null):
        if "dynamic" in types:
            target = "dynamic"
        elif "string" in types:
            target = "string"
    out = []
    for v in values:
        if _is_null_literal(v):
            out.append(typed_null(target))
        else:
            out.append(cast_to(v, target))
    return out


def _is_null_literal(value: Typed) -> bool:
    return (
        isinstance(value.sql, S.Cast)
        and isinstance(value.sql.operand, S.Lit)
        and value.sql.operand.value is None
    )
