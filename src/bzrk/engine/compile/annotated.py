"""Type annotations of dynamic paths (Berserk's ``annotate``), as the compiler carries them.

``T | annotate log:{warrior:string, voyages:int}`` declares the types of values inside a
dynamic column. A relation keeps them as ``path -> type text`` (``("log", "warrior") ->
"string"``); the expression compiler reads a member path with a scalar annotation as that type
(:func:`typed_member`), so ``log.voyages + 1`` is a ``long`` and ``log.warrior`` a ``string``.
Array and object annotations are kept for their scalar leaves only: an element of an annotated
array (``cargo.items[0]``) stays ``dynamic``, as the vendor's example shows.

Annotations ride along through a select that passes their root column on as itself (under
any name: ``project-rename`` moves them), and a column bound to an annotated object path
(``project y = x.nested``) inherits the annotations under it; a column bound to anything else
loses them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import Typed, from_dynamic
from bzrk.kql import syntax as K

Path = tuple[str, ...]
Annotations = Mapping[Path, str]

SCALAR_TYPES = frozenset(
    {"string", "int", "long", "real", "decimal", "bool", "datetime", "timespan", "guid"}
)


def is_scalar(type_text: str) -> bool:
    return type_text in SCALAR_TYPES


def flatten(path: Path, type_text: str) -> dict[Path, str]:
    """Every path an annotation types: the path itself, and each field of an object type."""
    out = {path: type_text}
    if type_text.startswith("{") and type_text.endswith("}"):
        for field in split_fields(type_text[1:-1]):
            name, _, inner = field.partition(":")
            out.update(flatten((*path, name.strip()), inner.strip()))
    return out


def split_fields(text: str) -> list[str]:
    """``a:long,b:{c:string,d:[int]}`` split at its top-level commas."""
    fields: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            fields.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        fields.append(text[start:])
    return fields


def path_of(node: K.Expr) -> Path | None:
    """``a.b["c.d"]`` as ``("a", "b", "c", "d")``; None for anything but a constant member chain."""
    if isinstance(node, K.NameRef):
        return (node.name,)
    if isinstance(node, K.Member):
        head = path_of(node.target)
        return None if head is None else (*head, node.name)
    if (
        isinstance(node, K.Index)
        and isinstance(node.index, K.Literal)
        and isinstance(node.index.value, str)
    ):
        head = path_of(node.target)
        # Bags keep OTel's dotted keys as nested paths: a["b.c"] is a.b.c.
        keys = tuple(k for k in node.index.value.split(".") if k)
        return None if head is None or not keys else (*head, *keys)
    return None


@dataclass(frozen=True, slots=True)
class AnnotatedValue(S.Template):
    """The value of an annotated object or array path: its annotations go where it goes.

    ``project y = x.nested`` makes ``y`` inherit what ``x.nested`` and the paths under it were
    annotated with (:func:`carry`). The SQL is the value's own.
    """

    path: Path = ()


def typed_member(annotations: Annotations, node: K.Expr, value: Typed) -> Typed:
    """``value`` (the dynamic value of member path ``node``) read as its annotated type."""
    if not annotations or value.type != "dynamic":
        return value
    path = path_of(node)
    type_text = annotations.get(path) if path is not None else None
    if path is None or type_text is None:
        return value
    if not is_scalar(type_text):
        return Typed(AnnotatedValue("{0}", [value.sql], path), "dynamic")
    return from_dynamic(value.sql, type_text)


def carry(
    annotations: Annotations,
    columns: Sequence[tuple[S.Expr, str]],
    input_columns: Sequence[tuple[str, str]],
) -> dict[Path, str]:
    """The annotations of a select's output: those whose root column it passes on as itself.

    A root that is no column of the input (a record field read through ``$raw``) keeps its
    annotations unless the select binds that name.
    """
    if not annotations:
        return {}
    input_names = {n for n, _ in input_columns}
    renamed: dict[str, list[str]] = {}
    bound: set[str] = set()
    out: dict[Path, str] = {}
    for expr, name in columns:
        bound.add(name)
        if isinstance(expr, S.Col) and expr.table is None:
            renamed.setdefault(expr.name, []).append(name)
        elif isinstance(expr, AnnotatedValue):
            # A column bound to an annotated path: the annotations under that path, re-rooted.
            n = len(expr.path)
            for path, type_text in annotations.items():
                if path[:n] == expr.path and len(path) > n:
                    out[(name, *path[n:])] = type_text
    for path, type_text in annotations.items():
        root, rest = path[0], path[1:]
        if root not in input_names:
            if root not in bound:
                out[path] = type_text
            continue
        for name in renamed.get(root, ()):
            out[(name, *rest)] = type_text
    return out


__all__ = [
    "SCALAR_TYPES",
    "AnnotatedValue",
    "Annotations",
    "Path",
    "carry",
    "flatten",
    "is_scalar",
    "path_of",
    "split_fields",
    "typed_member",
]
