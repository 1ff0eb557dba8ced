"""Engine tests over data sent through the real OTLP/HTTP receiver: post protobuf messages, then
read a query's final rows from the query service."""

from __future__ import annotations

import time
from typing import Any

from google.protobuf.message import Message
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from bzrk.engine.events import Error, RowBatch
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService
from bzrk.testing import client

S = 10**9
# Half an hour before the test module was imported, on the minute: inside final_rows' window.
BASE = (time.time_ns() // (60 * S) - 30) * 60 * S


def text(value: str) -> AnyValue:
    """An OTLP string value."""
    return AnyValue(string_value=value)


async def post_otlp(ingest_app: Any, token: str, *messages: tuple[str, Message]) -> None:
    """POST each ``(path, message)`` (``/v1/traces``, ``/v1/logs``, ``/v1/metrics``) as protobuf."""
    async with client(ingest_app) as http:
        for path, message in messages:
            response = await http.post(
                path,
                content=message.SerializeToString(),
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/x-protobuf",
                },
            )
            assert response.status_code == 200, response.content


async def final_rows(service: QueryService, query: str, since: str = "2h ago") -> list[list[Any]]:
    """The rows of a non-progressive run of ``query`` over the default database (no error)."""
    request = QueryRequest(database="default", query=query, since=since, progressive=False)
    events = [event async for event in service.execute(request)]
    errors = [e for e in events if isinstance(e, Error)]
    assert not errors, errors[0]
    return [row for e in events if isinstance(e, RowBatch) for row in e.rows]
