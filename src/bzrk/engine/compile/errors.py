"""Located compile errors: a construct bzrk cannot translate, with the KQL span it came from."""

from __future__ import annotations

from typing import Any

from bzrk.engine.errors import EngineError


class CompileError(EngineError):
    """The query is valid KQL (or nearly) but the compiler cannot translate part of it."""

    code = "UnsupportedConstruct"

    def __init__(self, message: str, *, span: Any = None, code: str | None = None) -> None:
        super().__init__(message)
        self.span = span
        if code:
            self.code = code


def unsupported(node: Any, message: str, *, code: str | None = None) -> CompileError:
    """Build the error for ``node`` (raise it): its span travels back to the user."""
    return CompileError(message, span=getattr(node, "span", None), code=code)
