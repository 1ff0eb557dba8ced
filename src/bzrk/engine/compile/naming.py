"""How the compiler names output columns: from the expression (`a.b` → `a_b`), made unique."""

from __future__ import annotations

import itertools

from bzrk.kql import syntax as K


def expr_name(node: K.Expr) -> str | None:
    if isinstance(node, K.NamedArg):  # `arg_min(t, service = …)`: named in the call
        return node.name
    if isinstance(node, K.NameRef):
        return node.name
    if isinstance(node, K.Member):
        inner = expr_name(node.target)
        return f"{inner}_{node.name}" if inner else None
    if isinstance(node, K.Index):
        inner = expr_name(node.target)
        if inner and isinstance(node.index, K.Literal) and isinstance(node.index.value, str):
            return f"{inner}_{node.index.value}"
        return None
    if isinstance(node, K.Paren):
        return expr_name(node.expr)
    return None


def unique_name(name: str, used: set[str]) -> str:
    if name not in used:
        return name
    for i in itertools.count(1):
        candidate = f"{name}{i}"
        if candidate not in used:
            return candidate
    raise AssertionError
