"""``fieldstats``' sample spans the whole input, over several signals sent through real OTLP.

The table's sorting key is (service, metric_name, timestamp), so the first rows in storage order
are one service's points. A bare ``LIMIT`` sampled only those: ``fieldstats with depth=1`` then
listed no ``body``, and the vendor's schema-overview step (body → logs, metric_name → metrics)
found no logs (CI on 3 Dec failed on this for ``field="*status*"``).
"""

from __future__ import annotations

import time

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from bzrk.engine.service import QueryService
from bzrk.storage.catalog import StorageCatalog
from tests.engine.otlp import final_rows, post_otlp
from tests.ingest.conftest import ingest_app, ingest_token, pipeline  # noqa: F401

S = 10**9
NOW = time.time_ns() // S * S
POINTS = 3_000  # more than the default sample of 2,000, all sorted before the logs
LOGS = 60


def _service(name: str) -> KeyValue:
    return KeyValue(key="service.name", value=AnyValue(string_value=name))


def _metrics() -> ExportMetricsServiceRequest:
    req = ExportMetricsServiceRequest()
    resource = req.resource_metrics.add()
    resource.resource.attributes.append(_service("a-metrics"))
    metric = resource.scope_metrics.add().metrics.add(name="queue.depth")
    for i in range(POINTS):
        metric.gauge.data_points.add(time_unix_nano=NOW - (i + 1) * S // 10, as_int=i)
    return req


def _logs() -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    resource = req.resource_logs.add()
    resource.resource.attributes.append(_service("z-logs"))
    scope = resource.scope_logs.add()
    for i in range(LOGS):
        record = scope.log_records.add(time_unix_nano=NOW - i * S, severity_text="WARN")
        record.body.string_value = f"slow request {i}"
        record.attributes.append(KeyValue(key="http.status", value=AnyValue(int_value=503)))
    return req


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def service(catalog: StorageCatalog, ingest_app, ingest_token) -> QueryService:  # type: ignore[no-untyped-def]  # noqa: F811
    await post_otlp(ingest_app, ingest_token, ("/v1/logs", _logs()), ("/v1/metrics", _metrics()))
    # One part, in sorting-key order: the 3,000 points of service a-metrics come first.
    catalog.backend.execute(f"OPTIMIZE TABLE {catalog.qualified_name('default', 'default')} FINAL")
    return QueryService(catalog.backend, catalog=catalog)


@pytest.mark.anyio
async def test_the_sample_holds_every_signal_of_the_table(service) -> None:  # type: ignore[no-untyped-def]
    rows = await final_rows(service, "default | fieldstats with depth=1")
    paths = {row[0]: row for row in rows}
    assert {"body", "metric_name", "severity_text"} <= set(paths)
    # About LOGS / (POINTS + LOGS) of the 2,000 sampled rows are logs: neither none nor all.
    assert 0 < paths["body"][3] < 0.2
    assert paths["metric_name"][3] > 0.8


@pytest.mark.anyio
async def test_a_field_glob_finds_a_field_only_the_later_rows_have(service) -> None:  # type: ignore[no-untyped-def]
    rows = await final_rows(service, 'default | fieldstats with field="*status*"')
    assert [row[:2] for row in rows] == [["attributes.http.status", "long"]]


@pytest.mark.anyio
async def test_the_sample_is_the_same_rows_each_run(service) -> None:  # type: ignore[no-untyped-def]
    query = "default | fieldstats attributes, body with limit=500"
    first = await final_rows(service, query)
    assert first == await final_rows(service, query)
    # otel-log-stats reads its sample twice (schema, then top values): the same rows both
    # times, so the share of rows with a severity is the share of the one severity, WARN.
    rows = await final_rows(service, "default | otel-log-stats with limit=500")
    schema = next(r for r in rows if r[0] == "severity_text")
    top = next(r for r in rows if r[:2] == ["severity", "WARN"])
    assert 0 < top[3] == schema[3] < 1
