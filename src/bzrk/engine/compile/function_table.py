"""The scalar function table and the small vocabulary its entries are written in.

:func:`fn` makes an entry from a SQL template, a result type and per-argument conversions
(``s`` string, ``r`` real, ``l`` long, ``i`` int, ``j`` JSON, ``.`` as is; the last code repeats
for variadic functions); :func:`reg` files it under one or more KQL names. The modules
``functions*.py`` fill the table by family.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bzrk.engine.compile.typed import (
    T,
    Typed,
    cast_to,
    to_json,
    to_string,
    widest,
)

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions import ExprCompiler
    from bzrk.kql import syntax as K

Builder = Callable[["ExprCompiler", list[Typed], "K.Call"], Typed]
FUNCTIONS: dict[str, Builder] = {}

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


def fn(template: str, result: str | Callable[[list[Typed]], str], conv: str = "") -> Builder:
    def build(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
        converted = [
            _convert(a, conv[min(i, len(conv) - 1)] if conv else ".") for i, a in enumerate(args)
        ]
        rtype = result(args) if callable(result) else result
        return Typed(T(template, *(a.sql for a in converted)), rtype)

    return build


def reg(names: str, builder: Builder) -> None:
    for name in names.split():
        FUNCTIONS[name] = builder


def same(i: int = 0) -> Callable[[list[Typed]], str]:
    return lambda args: args[i].type


def wide(args: list[Typed]) -> str:
    return widest(*(a.type for a in args))
