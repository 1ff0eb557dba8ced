"""The query service: turns a QueryRequest into the result stream (filled in by the execution work)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from bzrk.engine.events import Error, Event
from bzrk.engine.request import QueryExecutor, QueryRequest


class _NotYetExecutor:
    async def execute(self, request: QueryRequest) -> AsyncIterator[Event]:
        yield Error(code="NotImplemented", message="query execution is not available yet")


def create_executor(ctx: Any) -> QueryExecutor:
    """Build the executor from the process context (settings, backend, metadata store)."""
    return _NotYetExecutor()
