"""The KQL language: tokens, parser, syntax tree, binder, built-in catalogue, diagnostics.

Entry points: `parse(text)` → `syntax.Query`; `analyze(text, globals)` → `BoundQuery`.
Nothing here imports the rest of bzrk.

>>> g = GlobalState.from_tables({"logs": [("timestamp", "datetime"), ("body", "string")]})
>>> b = analyze("logs | summarize count() by bin(timestamp, 1h)", g)
>>> [(c.name, c.type) for c in b.result_schema.columns]
[('timestamp', 'datetime'), ('count_', 'long')]
"""

from __future__ import annotations

from bzrk.kql.binder import BoundQuery, CallInfo, bind
from bzrk.kql.diagnostics import KqlError, Location, SourceText, Span
from bzrk.kql.parser import parse
from bzrk.kql.symbols import Column, GlobalState, TableSchema


def analyze(
    text: str, globals: GlobalState | None = None, *, deadline: float | None = None
) -> BoundQuery:
    """Parse and bind `text`.

    Args:
        text: the KQL query (may hold several `;`-separated statements).
        globals: databases/tables and options; defaults to an empty permissive state.
        deadline: a `time.monotonic()` instant past which binding stops (`QueryTooComplex`).

    Returns:
        The bound query: syntax tree plus types, symbols, calls and schemas.

    Raises:
        KqlError: a located syntax or semantic error.
    """
    query = parse(text)
    return bind(query, globals or GlobalState(), text, deadline)


__all__ = [
    "BoundQuery",
    "CallInfo",
    "Column",
    "GlobalState",
    "KqlError",
    "Location",
    "SourceText",
    "Span",
    "TableSchema",
    "analyze",
    "parse",
]
