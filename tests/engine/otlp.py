"""Engine tests over data sent through the real OTLP/HTTP receiver: post protobuf messages, then
read a query's final rows from the query service."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from bzrk.engine.events import Error, RowBatch
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService
from bzrk.testing import client
from tests.engine.recording import Recording

S = 10**9
# Half an hour before the test module was imported, on the minute: inside final_rows' window.
BASE = (time.time_ns() // (60 * S) - 30) * 60 * S


def text(value: str) -> AnyValue:
    """An OTLP string value."""
    return AnyValue(string_value=value)


def logs_request(
    first: int, records: Sequence[Mapping[str, AnyValue]], resource: Mapping[str, str]
) -> ExportLogsServiceRequest:
    """Log records ``r<first>``, ``r<first + 1>``, … one second apart from :data:`BASE`, each
    with its attributes, under one resource with these string attributes."""
    request = ExportLogsServiceRequest()
    resource_logs = request.resource_logs.add()
    resource_logs.resource.attributes.extend(
        KeyValue(key=k, value=text(v)) for k, v in resource.items()
    )
    scope = resource_logs.scope_logs.add()
    for offset, attributes in enumerate(records):
        n = first + offset
        record = scope.log_records.add(time_unix_nano=BASE + n * S, body=text(f"r{n}"))
        record.attributes.extend(KeyValue(key=k, value=v) for k, v in attributes.items())
    return request


async def recorded_service(
    catalog: Any, ingest_app: Any, token: str, *logs: Message
) -> tuple[QueryService, Recording]:
    """POST ``logs`` to ``/v1/logs``; a query service over ``catalog`` whose SQL is recorded."""
    await post_otlp(ingest_app, token, *(("/v1/logs", message) for message in logs))
    recording = Recording(catalog.backend)
    return QueryService(recording, catalog=catalog), recording  # type: ignore[arg-type]


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
