"""Berserk's ``annotate``: declare the types of dynamic values, for the operators after it.

``T | annotate path:type, …`` where ``path`` is a column or a dotted path into one
(``log``, ``attributes.http.status``) and ``type`` a scalar type (``string``, ``int``,
``long``, ``real``, ``bool``, ``datetime``, ``timespan``, ``guid``, ``decimal``), an array type
(``[string]``) or an object type (``{warrior:string, voyages:int}``).

* A whole column with a scalar type becomes a column of that type: its dynamic value converted
  as ``toreal``/``tolong``/… convert (a value of another kind reads as null). A name that is no
  column is the record's field (``$raw``), added as a column — ``annotate response_time:real |
  summarize avg(response_time)`` — as the binder's schema has it.
* A path, or the fields of an object type, are kept on the relation (:mod:`..annotated`):
  later member access on the path reads it as the type (``log.voyages + 1`` is a ``long``),
  through ``project``/``extend``/``where``/``sort``/… that pass the column on; the column itself
  stays ``dynamic``. An array element (``cargo.items[0]``) stays ``dynamic``.
* A column that already has a type (not ``dynamic``) may be annotated with that type (a no-op;
  ``int`` and ``long`` are interchangeable); any other type, or a path into it, is refused with
  ``TypeMismatch``: the stored column is what it is, and bzrk does not convert it silently.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile import annotated
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.typed import Typed, from_dynamic
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext

_INTEGERS = frozenset({"int", "long"})


def op_annotate(ctx: CompileContext, op: K.Annotate, relation: Relation) -> Relation:
    types = dict(relation.columns)
    declared = dict(relation.annotations)
    values: dict[str, Typed] = {}  # columns the operator (re)defines
    for item in op.items:
        path = annotated.path_of(item.path)
        if path is None:
            raise unsupported(item.path, "annotate takes a column or a dotted path (log.level)",
                              code="InvalidArgument")  # fmt: skip
        root = path[0]
        current = values[root].type if root in values else types.get(root)
        if current is not None and current != "dynamic":
            _check_typed(item, root, current, len(path) > 1)
            continue
        # A new annotation of a path replaces the old ones at and below it.
        declared = {p: t for p, t in declared.items() if p[: len(path)] != path}
        if len(path) == 1 and (current is None or annotated.is_scalar(item.type)):
            value = values.get(root) or ctx.expr(relation, item.path)  # UnknownName if none
            if annotated.is_scalar(item.type):
                value = from_dynamic(value.sql, item.type)
                declared = {p: t for p, t in declared.items() if p[0] != root}
            values[root] = value
            if annotated.is_scalar(item.type):
                continue
        elif len(path) > 1 and current is None:
            ctx.expr(relation, K.NameRef(item.path.span, root))  # the root must resolve
        declared.update(annotated.flatten(path, item.type))
    if not values:
        return dataclasses.replace(relation, annotations=declared)
    names = [n for n, _ in relation.columns]
    names += [n for n in values if n not in types]
    columns: list[tuple[S.Expr, str]] = [
        (values[n].sql if n in values else relation.column(n), n) for n in names
    ]
    out = [(n, values[n].type if n in values else types[n]) for n in names]
    result = ctx.select(relation, columns, out)
    result.annotations = declared
    return result


def _check_typed(item: K.AnnotateItem, root: str, current: str, is_path: bool) -> None:
    """A typed column may only be annotated with its own type."""
    if is_path:
        raise unsupported(item, f"annotate: '{root}' is a {current} column, not dynamic; "
                          "only dynamic values have paths to annotate", code="TypeMismatch")  # fmt: skip
    same = item.type == current or {item.type, current} <= _INTEGERS
    if not same:
        raise unsupported(item, f"annotate: '{root}' is a {current} column; annotate declares "
                          f"types of dynamic values and cannot make it {item.type} "
                          f"(convert it with an extend instead)", code="TypeMismatch")  # fmt: skip


__all__ = ["op_annotate"]
