"""Failures on the ADX surface: the one code → HTTP status table and the error bodies.

Before the body starts, a failure is an HTTP 4xx/5xx whose body carries both the Berserk
problem fields (``type``, ``message``, ``code``, ``error_details``, the seed's query-error
envelope) and the Kusto ``error`` object the SDKs read (Python raises a raw ``KeyError``
without it); an unknown database is the seed's ``DatabaseNotFound`` envelope with
``"status": 404``. After frames went out, the same ``error`` object travels in-band as a
``OneApiErrors`` row (see :mod:`bzrk.api.adx.v2`).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response

from bzrk.api.adx.values import dumps
from bzrk.engine.events import Error, Location

PROBLEM_TYPE = "https://api.bzrk.dev/problems/query-error"
BZRK_ERROR_TYPE = "BzrkClient/v1"
JSON_MEDIA_TYPE = "application/json; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Disposition:
    """How one error code is told to Kusto clients."""

    status: int
    kusto_code: str  # ``error.code``: the Kusto error family clients switch on
    summary: str  # ``error.message``: the short, fixed sentence; ``@message`` has the detail
    permanent: bool = True


_BAD_REQUEST = Disposition(400, "General_BadRequest", "Request is invalid and cannot be executed.")

# The one table: Error.code (engine, KQL front end, or this surface) → HTTP status and Kusto code.
# Codes not listed are query-level failures: 400, as the seed says for parse, bind and
# execution errors.
DISPOSITIONS: dict[str, Disposition] = {
    "BadRequest": _BAD_REQUEST,
    "ParseError": _BAD_REQUEST,
    "SyntaxError": _BAD_REQUEST,
    "SemanticError": _BAD_REQUEST,
    "BindError": _BAD_REQUEST,
    "TypeError": _BAD_REQUEST,
    "UnknownTable": _BAD_REQUEST,
    "UnknownColumn": _BAD_REQUEST,
    "UnknownName": _BAD_REQUEST,
    "UnknownFunction": _BAD_REQUEST,
    "WrongArgumentCount": _BAD_REQUEST,
    "DuplicateName": _BAD_REQUEST,
    "TypeMismatch": _BAD_REQUEST,
    "InvalidArgument": _BAD_REQUEST,
    "Unsupported": _BAD_REQUEST,
    "UnsupportedConstruct": _BAD_REQUEST,
    "UnsupportedOperator": _BAD_REQUEST,
    "QueryTooComplex": _BAD_REQUEST,
    "InvalidParameter": _BAD_REQUEST,
    "InvalidTimeRange": _BAD_REQUEST,
    "ExecutionError": _BAD_REQUEST,
    "UnknownCommand": _BAD_REQUEST,
    "ResultTooLarge": _BAD_REQUEST,
    "MemoryLimitExceeded": Disposition(
        400, "LimitsExceeded", "Query execution has exceeded the allowed limits."
    ),
    "BudgetExceeded": Disposition(
        400, "LimitsExceeded", "Query execution has exceeded the allowed limits."
    ),
    "Unauthenticated": Disposition(401, "Unauthorized", "Authentication is required."),
    "Forbidden": Disposition(403, "Forbidden", "Principal is not authorized for this operation."),
    "AccessDenied": Disposition(
        403, "Forbidden", "Principal is not authorized for this operation."
    ),
    "DatabaseNotFound": Disposition(404, "DatabaseNotFound", "Database was not found."),
    "UnknownDatabase": Disposition(404, "DatabaseNotFound", "Database was not found."),
    "NotFound": Disposition(404, "NotFound", "The requested endpoint does not exist."),
    "MethodNotAllowed": Disposition(405, "MethodNotAllowed", "Method is not allowed."),
    "TableNotFound": Disposition(400, "BadRequest_EntityNotFound", "Entity was not found."),
    "QueryTimeout": Disposition(408, "RequestTimeout", "Request timed out.", permanent=False),
    "QueryCancelled": Disposition(
        409, "RequestCancelled", "Request was cancelled.", permanent=False
    ),
    "PayloadTooLarge": Disposition(413, "PayloadTooLarge", "Request body is too large."),
    "Throttled": Disposition(429, "TooManyRequests", "Request was throttled.", permanent=False),
    "QueueFull": Disposition(429, "TooManyRequests", "Request was throttled.", permanent=False),
    "Internal": Disposition(500, "InternalServiceError", "Internal error.", permanent=False),
    "InternalError": Disposition(500, "InternalServiceError", "Internal error.", permanent=False),
    "EngineError": Disposition(500, "InternalServiceError", "Internal error.", permanent=False),
    "NotImplemented": Disposition(501, "NotImplemented", "Not implemented.", permanent=False),
    "BackendUnavailable": Disposition(
        503, "ServiceUnavailable", "Service is unavailable.", permanent=False
    ),
    "SchemaUnavailable": Disposition(
        503, "ServiceUnavailable", "Service is unavailable.", permanent=False
    ),
}


def disposition(code: str) -> Disposition:
    return DISPOSITIONS.get(code, _BAD_REQUEST)


class AdxError(Exception):
    """A failure this surface detects itself (bad request body, unknown command, access)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.error = Error(code=code, message=message)


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What every error body names: who asked and under which ids."""

    client_request_id: str
    activity_id: str

    @classmethod
    def new(cls, client_request_id: str) -> RequestContext:
        return cls(client_request_id, str(uuid.uuid4()))


def _timestamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z"


def _location(location: Location | None) -> dict[str, int] | None:
    if location is None:
        return None
    return {
        "start_byte": location.start_byte,
        "end_byte": location.end_byte,
        "start_line": location.start_line,
        "start_column": location.start_column,
        "end_line": location.end_line,
        "end_column": location.end_column,
    }


def kusto_error(error: Error, request: RequestContext) -> dict[str, Any]:
    """The Kusto ``error`` object (``OneApiError``): ``@message`` is what SDK users see."""
    how = disposition(error.code)
    body: dict[str, Any] = {
        "code": how.kusto_code,
        "message": how.summary,
        "@type": BZRK_ERROR_TYPE,
        "@message": error.message,
        "@context": {
            "timestamp": _timestamp(),
            "clientRequestId": request.client_request_id,
            "activityId": request.activity_id,
        },
        "@permanent": how.permanent,
        "@errorCode": error.code,
    }
    if error.location is not None:
        body["@location"] = _location(error.location)
    return body


def error_body(error: Error, request: RequestContext) -> dict[str, Any]:
    """The body of a failure answered before any frame: problem JSON plus the Kusto object."""
    how = disposition(error.code)
    kusto = kusto_error(error, request)
    if how.kusto_code == "DatabaseNotFound":
        # The seed's distinct envelope: the Kusto object with the status repeated.
        kusto["message"] = error.message
        kusto["code"] = "DatabaseNotFound"
        return {"error": kusto, "status": how.status}
    details: dict[str, Any] = {"message": error.message}
    if error.title:
        details["title"] = error.title
    if error.location is not None:
        details["location"] = _location(error.location)
    if error.details:
        details["details"] = error.details
    if error.run_id:
        details["run_id"] = error.run_id
    return {
        "type": PROBLEM_TYPE,
        "message": error.message,
        "code": error.code,
        "error_details": details,
        "error": kusto,
    }


def error_response(error: Error, request: RequestContext) -> Response:
    how = disposition(error.code)
    headers = {
        "x-ms-client-request-id": request.client_request_id,
        "x-ms-activity-id": request.activity_id,
    }
    if how.status == 401:
        headers["www-authenticate"] = "Bearer"
    return Response(
        dumps(error_body(error, request)),
        status_code=how.status,
        media_type=JSON_MEDIA_TYPE,
        headers=headers,
    )
