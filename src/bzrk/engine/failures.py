"""How a failure while planning or running a query becomes the user's located ``Error`` event.

One place for every surface: a KQL error keeps its code and location, a construct without a
translation is ``Unsupported``, an engine failure is told in our words (``errors.told``), and
anything else is an ``InternalError`` naming the run id, never Python's or ClickHouse's text.
"""

from __future__ import annotations

from typing import Any

from bzrk.engine.compile.errors import CompileError
from bzrk.engine.errors import EngineError, told
from bzrk.engine.events import Error, Location


def source_location(text: str, span: Any) -> Location | None:
    if span is None:
        return None
    from bzrk.kql.diagnostics import SourceText

    loc = SourceText(text).location(span)
    return Location(
        loc.start_byte, loc.end_byte, loc.start_line, loc.start_column, loc.end_line, loc.end_column
    )


def error_event(text: str, exc: BaseException, run_id: str = "") -> Error:
    """The located ``Error`` event for a failure while planning or running ``text``.

    What reaches the user is a code and a sentence of ours: ClickHouse's text (which names the
    generated SQL and settings) and Python's exception text are for the log, where the caller
    writes them with the run id.
    """
    from bzrk.kql.diagnostics import KqlError

    if isinstance(exc, KqlError):
        location = exc.location
        if location is None and exc.span is not None:
            return Error(
                code=exc.code,
                title=exc.title,
                message=exc.message,
                location=source_location(text, exc.span),
            )
        loc = (
            None
            if location is None
            else Location(
                location.start_byte,
                location.end_byte,
                location.start_line,
                location.start_column,
                location.end_line,
                location.end_column,
            )
        )
        return Error(code=exc.code, title=exc.title, message=exc.message, location=loc)
    if isinstance(exc, CompileError):
        return Error(
            code=exc.code,
            title="Unsupported",
            message=exc.message,
            location=source_location(text, exc.span),
        )
    if isinstance(exc, EngineError):
        said = told(exc, run_id)
        return Error(code=said.code, title=said.title, message=said.message)
    reference = f" (run id {run_id})" if run_id else ""
    return Error(
        code="InternalError",
        title="Internal error",
        message=f"the query failed on an internal error{reference}",
    )
