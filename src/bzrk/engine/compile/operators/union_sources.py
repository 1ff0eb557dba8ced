"""The inputs of `union`: wildcard names (`View*`) and `isfuzzy=true` (unknown inputs skipped)."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

from bzrk.engine.compile.errors import CompileError, unsupported
from bzrk.engine.compile.relation import Relation, UserFunction
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation


def _fuzzy(op: K.Union) -> bool:
    for param in op.params:
        if param.name.lower() == "isfuzzy":
            value = param.value
            if isinstance(value, K.Literal):
                return value.value is True
            return isinstance(value, K.NameRef) and value.name.lower() == "true"
    return False


def union_inputs(ctx: CompileContext, op: K.Union) -> list[tuple[Relation, K.Expr]]:
    """Each input relation with the expression that names it (wildcards expanded)."""

    fuzzy = _fuzzy(op)
    inputs: list[tuple[Relation, K.Expr]] = []
    for table in op.tables:
        if isinstance(table, K.NameRef) and "*" in table.name:
            names = [
                name
                for name, value in ctx.lets.items()
                if not name.startswith("$")
                and fnmatch.fnmatchcase(name, table.name)
                and (
                    isinstance(value, Relation)
                    or (isinstance(value, UserFunction) and not value.params)
                )
            ]
            for name in sorted(names):
                ref = K.NameRef(table.span, name)
                inputs.append((ctx.tabular(ref), ref))
            continue
        try:
            inputs.append((ctx.tabular(table), table))
        except CompileError as error:
            if fuzzy and error.code in ("UnknownTable", "UnknownName"):
                continue
            raise
    if not inputs:
        raise unsupported(op, "union has no inputs", code="UnknownTable")
    return inputs


def src_external_data(ctx: CompileContext, op: K.ExternalData) -> Relation:
    """`externaldata` / `inline_external_table` read blobs or URLs: bzrk reads only its tables."""
    raise unsupported(
        op,
        "externaldata and inline_external_table read external storage, which bzrk does not "
        "access; ingest the data into a table or use datatable",
    )
