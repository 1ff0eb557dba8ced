"""The ingest package's exception tree and how each error maps to HTTP and gRPC.

IngestError
├── BadRequest            400 / INVALID_ARGUMENT   (undecodable body, bad JSON, no accepted record)
│   ├── UnsupportedMediaType  415 / INVALID_ARGUMENT
│   └── PayloadTooLarge       413 / RESOURCE_EXHAUSTED
├── Unauthenticated       401 / UNAUTHENTICATED   (missing, unknown or revoked ingest token)
├── Forbidden             403 / PERMISSION_DENIED (admin API without the admin role)
├── NotFoundError         404 / NOT_FOUND         (admin API: no such table or token)
├── ConflictError         409 / ALREADY_EXISTS
├── Overloaded            429 / RESOURCE_EXHAUSTED (in-flight budget spent; retry after)
└── Unavailable           503 / UNAVAILABLE       (storage write failed; retry after)
"""

from __future__ import annotations

import grpc


class IngestError(Exception):
    status = 500
    grpc_code = grpc.StatusCode.INTERNAL
    retry_after_s: int | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(IngestError):
    status = 400
    grpc_code = grpc.StatusCode.INVALID_ARGUMENT


class UnsupportedMediaType(BadRequest):
    status = 415


class PayloadTooLarge(BadRequest):
    status = 413
    grpc_code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unauthenticated(IngestError):
    status = 401
    grpc_code = grpc.StatusCode.UNAUTHENTICATED


class Forbidden(IngestError):
    status = 403
    grpc_code = grpc.StatusCode.PERMISSION_DENIED


class NotFoundError(IngestError):
    status = 404
    grpc_code = grpc.StatusCode.NOT_FOUND


class ConflictError(IngestError):
    status = 409
    grpc_code = grpc.StatusCode.ALREADY_EXISTS


class Overloaded(IngestError):
    status = 429
    grpc_code = grpc.StatusCode.RESOURCE_EXHAUSTED
    retry_after_s = 1


class Unavailable(IngestError):
    status = 503
    grpc_code = grpc.StatusCode.UNAVAILABLE
    retry_after_s = 2
