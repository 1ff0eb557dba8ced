"""Discovery queries on the users' path: ``bag_unpack`` without a schema and ``partition by k
{ query }`` run through the query service over logs sent through the real OTLP/HTTP receiver.

The compiler asks the data while planning (which keys, which partition values). The service
runs that query over the request's time window, within the planning deadline, and does not keep
a plan that depends on what it read. Before, only the one-shot path had a probe: both
constructs passed the conformance corpora and were refused to users.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from bzrk.engine.events import Error, RowBatch, TableSchema
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService
from bzrk.storage.catalog import StorageCatalog
from tests.engine.otlp import post_otlp
from tests.ingest.conftest import ingest_app, ingest_token, pipeline  # noqa: F401

S = 10**9
NOW = time.time_ns() // S * S
RECENT = NOW - 600 * S  # ten minutes ago: inside "1h ago"
OLD = NOW - 3 * 3600 * S  # three hours ago: outside it


def _logs(*records: tuple[int, str, dict[str, Any]]) -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    scope = req.resource_logs.add().scope_logs.add()
    for at, severity, attributes in records:
        record = scope.log_records.add(time_unix_nano=at, severity_text=severity)
        record.body.string_value = f"{severity} at {at}"
        for key, value in attributes.items():
            any_value = (
                AnyValue(int_value=value)
                if isinstance(value, int)
                else AnyValue(string_value=value)
            )
            record.attributes.append(KeyValue(key=key, value=any_value))
    return req


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def service(catalog: StorageCatalog, ingest_app, ingest_token) -> QueryService:  # type: ignore[no-untyped-def]  # noqa: F811
    logs = _logs(
        (RECENT, "ERROR", {"route": "/pay", "retries": 2}),
        (RECENT + S, "INFO", {"route": "/home"}),
        (OLD, "WARN", {"legacy_key": "x"}),
    )
    await post_otlp(ingest_app, ingest_token, ("/v1/logs", logs))
    return QueryService(catalog.backend, catalog=catalog)


async def answer(service: QueryService, query: str) -> tuple[list[str], list[list[Any]]]:
    request = QueryRequest(database="default", query=query, since="1h ago", progressive=False)
    events = [event async for event in service.execute(request)]
    errors = [e for e in events if isinstance(e, Error)]
    assert not errors, errors[0]
    schema = next(e for e in events if isinstance(e, TableSchema))
    rows = [row for e in events if isinstance(e, RowBatch) for row in e.rows]
    return [c.name for c in schema.columns], rows


UNPACK = (
    "default | where isnotempty(severity_text) | project severity_text, attributes"
    " | evaluate bag_unpack(attributes) | sort by severity_text asc"
)


@pytest.mark.anyio
async def test_bag_unpack_without_a_schema_unpacks_the_keys_of_the_window(
    service: QueryService,
) -> None:
    columns, rows = await answer(service, UNPACK)
    # The three-hour-old record's key lies outside the window: the discovery did not see it.
    assert sorted(columns) == ["retries", "route", "severity_text"]
    by_name = [dict(zip(columns, row, strict=True)) for row in rows]
    assert by_name == [
        {"severity_text": "ERROR", "route": "/pay", "retries": 2},
        {"severity_text": "INFO", "route": "/home", "retries": None},
    ]


@pytest.mark.anyio
async def test_a_plan_shaped_by_a_discovery_is_not_reused_for_new_data(
    service: QueryService,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> None:  # type: ignore[no-untyped-def]
    first, _ = await answer(service, UNPACK)
    await post_otlp(
        ingest_app, ingest_token, ("/v1/logs", _logs((RECENT + 2 * S, "DEBUG", {"user": "ann"})))
    )
    again, rows = await answer(service, UNPACK)
    assert "user" not in first and "user" in again
    assert len(rows) == 3


@pytest.mark.anyio
async def test_partition_with_a_query_per_key_runs_for_users(service: QueryService) -> None:
    columns, rows = await answer(
        service,
        "default | where isnotempty(severity_text) | project severity_text"
        " | partition hint.strategy=native by severity_text"
        " { range x from 1 to 1 step 1 | extend key = toscalar(severity_text) }"
        " | project key | sort by key asc",
    )
    assert columns == ["key"]
    # One query per key inside the window: WARN was three hours ago.
    assert rows == [["ERROR"], ["INFO"]]


@pytest.mark.anyio
async def test_partition_over_progressive_windows_where_a_key_has_no_rows(
    service: QueryService,
) -> None:
    # The keys come from the whole window; the newest slices hold no ERROR or INFO row, so
    # toscalar() over such a partition reads no rows (ClickHouse's code 125 for a stored
    # LowCardinality string before).
    request = QueryRequest(
        database="default",
        since="1h ago",
        query="default | where isnotempty(severity_text) | project severity_text"
        " | partition hint.strategy=native by severity_text"
        " { range x from 1 to 1 step 1 | extend key = toscalar(severity_text) }"
        " | project key | sort by key asc",
    )
    events = [event async for event in service.execute(request)]
    assert not [e for e in events if isinstance(e, Error)]
    batches = [e for e in events if isinstance(e, RowBatch)]
    last = batches[-1].iteration_id
    final = [row for b in batches if b.iteration_id == last for row in b.rows]
    assert sorted(row[0] for row in final) == ["ERROR", "INFO"]
