"""The KQL binder: a parsed `Query` plus a `GlobalState` → a `BoundQuery` (types, symbols,
calls, schemas). See `core.py` for expressions and `operators.py` for tabular operators."""

from __future__ import annotations

from bzrk.kql import syntax
from bzrk.kql.binder.bound import BoundQuery, CallInfo
from bzrk.kql.binder.core import Binder
from bzrk.kql.diagnostics import KqlError, SourceText, too_deep
from bzrk.kql.symbols import GlobalState


def bind(query: syntax.Query, globals: GlobalState, text: str = "") -> BoundQuery:
    """Bind a parsed query against `globals`.

    Raises:
        KqlError: the first semantic error (unknown name/function, wrong argument count, ...).
    """
    bound = BoundQuery(query, globals)
    binder = Binder(globals, bound)
    binder.text = text
    try:
        binder.bind_query(query)
    except KqlError as err:
        raise err.locate(SourceText(text)) from None
    except RecursionError:
        raise too_deep().at(query.span).locate(SourceText(text)) from None
    return bound


__all__ = ["BoundQuery", "CallInfo", "bind"]
