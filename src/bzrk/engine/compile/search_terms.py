"""A `search` predicate as KQL string operators over named columns.

`"term"` is a term any searched column has (`term*`, `*term`, `*term*` ask for a prefix, a
suffix or a substring), `Col:"term"` a term of that column, `* has "x"` the explicit form;
`and`, `or` and `not` combine them and comparisons keep their literals. One expansion serves
the operator (``operators/search.py``, over a relation's string and dynamic columns) and the
planner's look ahead at the terms a stored bag is searched for (``bag_search.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.rewrite import rewrite
from bzrk.kql import syntax as K


def term(span: K.Span, column: K.Expr, text: str, case_sensitive: bool) -> K.Expr:
    """``column`` has the search term ``text`` (``*`` at either end: prefix, suffix, substring)."""
    suffix = "_cs" if case_sensitive else ""
    if len(text) > 1 and text.startswith("*") and text.endswith("*"):
        op, text = "contains", text[1:-1]
    elif text.endswith("*"):
        op, text = "hasprefix", text[:-1]
    elif text.startswith("*"):
        op, text = "hassuffix", text[1:]
    else:
        op = "has"
    return K.Binary(span, op + suffix, column, K.Literal(span, "string", text, repr(text)))


def any_column(span: K.Span, columns: Sequence[str], text: str, case_sensitive: bool) -> K.Expr:
    """Some column of ``columns`` has the term (false for none)."""
    terms = [term(span, K.NameRef(span, name), text, case_sensitive) for name in columns]
    if not terms:
        return K.Literal(span, "bool", False, "false")
    result = terms[0]
    for other in terms[1:]:
        result = K.Binary(span, "or", result, other)
    return K.Paren(span, result)


def expand(node: K.Expr, columns: Sequence[str], case_sensitive: bool) -> K.Expr:
    """``node``, a search predicate, as a `where` predicate over ``columns`` (searched ones)."""

    def visit(n: K.Node) -> K.Node | None:
        if isinstance(n, K.Literal) and n.type == "string":
            return any_column(n.span, columns, str(n.value), case_sensitive)
        if isinstance(n, K.Binary):
            if n.op == ":" and isinstance(n.right, K.Literal) and isinstance(n.right.value, str):
                return term(n.span, n.left, n.right.value, case_sensitive)
            if isinstance(n.left, K.Star) and isinstance(n.right, K.Literal):
                text = str(n.right.value)
                if n.op in ("has", "has_cs"):
                    return any_column(n.span, columns, text, n.op == "has_cs" or case_sensitive)
                raise unsupported(n, f"search: '* {n.op}' is not supported")
            if n.op in ("and", "or"):
                return K.Binary(
                    n.span,
                    n.op,
                    expand(n.left, columns, case_sensitive),
                    expand(n.right, columns, case_sensitive),
                )
            return n  # comparisons keep their string literals
        if isinstance(n, K.Call) and n.name == "not" and n.args:
            return K.Call(n.span, "not", (expand(n.args[0], columns, case_sensitive),))
        return None

    return rewrite(node, visit)  # type: ignore[no-any-return]


def case_sensitive(op: K.Search) -> bool:
    """Whether ``op`` says ``kind=case_sensitive``."""
    for param in op.params:
        if param.name.lower() == "kind":
            value = param.value
            return isinstance(value, K.NameRef) and value.name.lower() == "case_sensitive"
    return False
