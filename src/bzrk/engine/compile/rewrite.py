"""Rewrites of KQL expression trees before compilation (state and graph-variable references)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

from bzrk.kql import syntax as K


def rewrite(node: Any, fn: Callable[[K.Node], K.Node | None]) -> Any:
    """A copy of `node` where every subtree `fn` maps to a node is replaced (top-down)."""
    if isinstance(node, tuple):
        return tuple(rewrite(item, fn) for item in node)
    if not isinstance(node, K.Node):
        return node
    replaced = fn(node)
    if replaced is not None:
        return replaced
    changes: dict[str, Any] = {}
    for f in fields(node):
        if f.name == "span":
            continue
        value = getattr(node, f.name)
        new = rewrite(value, fn)
        if new is not value:
            changes[f.name] = new
    return replace(node, **changes) if changes else node


def qualified_refs(node: K.Expr, prefixes: set[str]) -> K.Expr:
    """`p.col` (p in `prefixes`) becomes the single name `p.col`, so that a scope can bind it."""

    def visit(n: K.Node) -> K.Node | None:
        if (
            isinstance(n, K.Member)
            and isinstance(n.target, K.NameRef)
            and n.target.name in prefixes
        ):
            return K.NameRef(n.span, f"{n.target.name}.{n.name}")
        return None

    return rewrite(node, visit)  # type: ignore[no-any-return]
