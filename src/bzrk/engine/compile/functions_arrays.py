"""Array functions whose result spreads over several columns (``array_sort_asc(a, b)``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine.compile.typed import T, Typed

if TYPE_CHECKING:
    from collections.abc import Callable

    from bzrk.engine.compile.expressions import ExprCompiler
    from bzrk.kql import syntax as K

SORTS = {"array_sort_asc": False, "array_sort_desc": True}


def sorted_array_columns(
    compiler: ExprCompiler, expr: K.Call, name_of: Callable[[K.Expr], str | None]
) -> list[tuple[str, Typed]] | None:
    """Several arrays sorted together: one ``<argument>_sorted`` column per array, as Kusto names
    them. One array (plus the optional nulls-last flag) stays a single value."""
    args = [compiler.compile(a) for a in expr.args]
    arrays = args[:-1] if args and args[-1].type == "bool" else args
    if len(arrays) < 2:
        return None
    together = compiler.array_sort(args, descending=SORTS[expr.name])
    out = []
    for i, node in enumerate(expr.args[: len(arrays)]):
        name = f"{name_of(node) or f'array{i + 1}'}_sorted"
        out.append(
            (
                name,
                Typed(
                    T("nullIf(JSONExtractRaw({0}, toInt64(" + str(i + 1) + ")), '')", together.sql),
                    "dynamic",
                ),
            )
        )
    return out
