"""The engine's exception tree, and the translation of backend errors into it.

EngineError
├── BackendError            ClickHouse said no (carries the ClickHouse error code)
│   ├── QueryTimeout        max_execution_time passed
│   ├── QueryCancelled      KILL QUERY or a client that went away
│   └── MemoryLimit         max_memory_usage passed
└── BackendUnavailable      the engine could not be reached or opened
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager


class EngineError(Exception):
    code = "EngineError"

    def __init__(self, message: str, *, query_id: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.query_id = query_id


class BackendError(EngineError):
    code = "ExecutionError"

    def __init__(
        self, message: str, *, clickhouse_code: int | None = None, query_id: str | None = None
    ) -> None:
        super().__init__(message, query_id=query_id)
        self.clickhouse_code = clickhouse_code


class QueryTimeout(BackendError):
    code = "QueryTimeout"


class QueryCancelled(BackendError):
    code = "QueryCancelled"


class MemoryLimit(BackendError):
    code = "MemoryLimitExceeded"


class BackendUnavailable(EngineError):
    code = "BackendUnavailable"


_CODE_RE = re.compile(r"Code:\s*(\d+)")
_BY_CLICKHOUSE_CODE: dict[int, type[BackendError]] = {
    159: QueryTimeout,  # TIMEOUT_EXCEEDED
    394: QueryCancelled,  # QUERY_WAS_CANCELLED
    241: MemoryLimit,  # MEMORY_LIMIT_EXCEEDED
}


def _clean(message: str) -> str:
    # ClickHouse appends a stack trace and version tag; users need the first sentence only.
    message = message.split("Stack trace", 1)[0]
    message = re.sub(r"\s*\(version [^)]*\)\s*$", "", message.strip())
    return message.strip()


@contextmanager
def map_backend_errors(query_id: str | None) -> Iterator[None]:
    """Re-raise chDB / clickhouse-connect failures as :class:`BackendError` subclasses."""
    try:
        yield
    except EngineError:
        raise
    except Exception as exc:  # the backends raise RuntimeError / DatabaseError subclasses
        text = str(exc)
        match = _CODE_RE.search(text)
        code = int(match.group(1)) if match else None
        cls = _BY_CLICKHOUSE_CODE.get(code, BackendError) if code is not None else BackendError
        raise cls(_clean(text), clickhouse_code=code, query_id=query_id) from exc
