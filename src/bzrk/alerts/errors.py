"""The alerting package's one exception, coded like every bzrk error.

``AlertError(status, code, message)``: ``status`` is the HTTP status a REST route answers with,
``code`` the stable code every surface shows (``BadRequest``, ``NotFound``, ``Conflict``,
``Forbidden``, ``AccessDenied``, ``InvalidCondition``, ``InvalidDuration``, ``InvalidTimeRange``,
``InvalidTemplate``, ``ConnectionFailed``), ``message`` a sentence naming the field at fault.
"""

from __future__ import annotations


class AlertError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def bad(message: str, code: str = "BadRequest") -> AlertError:
    return AlertError(400, code, message)


def not_found(what: str, ident: str) -> AlertError:
    return AlertError(404, "NotFound", f"{what} '{ident}' not found")


def forbidden(message: str) -> AlertError:
    return AlertError(403, "Forbidden", message)
