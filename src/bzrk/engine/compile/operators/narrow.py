"""The `narrow` plugin: a wide table as one row per cell.

`T | evaluate narrow()` gives `Row:long, Column:string, Value:string` (Kusto.Language's schema):
the input row's number from 0, in the input's order, the column's name, and its value as
`tostring` spells it (a null is the empty string). Cells come row by row, each row's in the
input's column order. A dynamic value is its JSON text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.typed import T, Typed, to_string
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation

OUTPUT = [("Row", "long"), ("Column", "string"), ("Value", "string")]


def narrow(ctx: CompileContext, op: K.Evaluate, relation: Relation) -> Relation:
    if op.plugin.args:
        raise unsupported(
            op.plugin.args[0], "narrow() takes no arguments", code="WrongArgumentCount"
        )
    visible = relation.visible_columns()
    numbered = ctx.select(
        relation,
        [(relation.column(n), n) for n, _ in visible] + [(T("rowNumberInAllBlocks()"), "__row")],
        [*visible, ("__row", "long")],
    )
    cells = [
        T(
            "tuple({0}, {1}, {2})",
            S.Lit(i),
            S.Lit(name),
            to_string(Typed(numbered.column(name), kql_type)),
        )
        for i, (name, kql_type) in enumerate(visible)
    ]
    array = T("[" + ", ".join(f"{{{i}}}" for i in range(len(cells))) + "]", *cells)
    exploded = S.Select(
        columns=[
            (T("toInt64(__row)"), "Row"),
            (T("__cell.2"), "Column"),
            (T("__cell.3"), "Value"),
        ],
        from_=numbered.source(),
        array_join=[(array, "__cell")],
        order_by=[(S.Col("__row"), False, False), (T("__cell.1"), False, False)],
    )
    return ctx.new_cte(exploded, OUTPUT, ordered=True)
