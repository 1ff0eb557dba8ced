"""The KQL binder: a parsed `Query` plus a `GlobalState` → a `BoundQuery` (types, symbols,
calls, schemas). See `core.py` for expressions and `operators.py` for tabular operators."""

from __future__ import annotations

from bzrk.kql import syntax
from bzrk.kql.binder.bound import BoundQuery, CallInfo
from bzrk.kql.binder.core import Binder, scalar_result_type
from bzrk.kql.diagnostics import KqlError, SourceText, too_deep
from bzrk.kql.symbols import GlobalState


def bind(
    query: syntax.Query, globals: GlobalState, text: str = "", deadline: float | None = None
) -> BoundQuery:
    """Bind a parsed query against `globals`.

    Args:
        query: the parsed query.
        globals: the tables and options it binds against.
        text: the query text (for snippets in messages and locations).
        deadline: a `time.monotonic()` instant; binding past it stops with `QueryTooComplex`.

    Raises:
        KqlError: the first semantic error (unknown name/function, wrong argument count, ...).
    """
    bound = BoundQuery(query, globals)
    binder = Binder(globals, bound)
    binder.text = text
    binder.deadline = deadline
    try:
        binder.bind_query(query)
    except KqlError as err:
        raise err.locate(SourceText(text)) from None
    except RecursionError:
        raise too_deep().at(query.span).locate(SourceText(text)) from None
    return bound


__all__ = ["BoundQuery", "CallInfo", "bind", "scalar_result_type"]
