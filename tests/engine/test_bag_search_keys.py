"""Bag searches over attribute keys that are awkward as ClickHouse paths (empty segments,
spaces, backticks), sent through the real OTLP/HTTP receiver."""

from __future__ import annotations

import time

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from bzrk.engine.service import QueryService
from bzrk.storage.catalog import StorageCatalog
from tests.engine.otlp import final_rows, post_otlp
from tests.ingest.conftest import ingest_app, ingest_token, pipeline  # noqa: F401

S = 10**9
BASE = (time.time_ns() // (60 * S) - 30) * 60 * S

KEYS = ["a..b", "x.", ".y", "sp ace", "back`tick", "quo'te", "uni.cöde"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_awkward_keys_are_searched_like_the_text(  # type: ignore[no-untyped-def]
    catalog: StorageCatalog,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> None:
    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    for n, key in enumerate(KEYS):
        record = scope.log_records.add(
            time_unix_nano=BASE + n * S, body=AnyValue(string_value=f"r{n}")
        )
        record.attributes.append(KeyValue(key=key, value=AnyValue(string_value=f"needle{n} v")))
    await post_otlp(ingest_app, ingest_token, ("/v1/logs", request))
    svc = QueryService(catalog.backend, catalog=catalog)
    for n in range(len(KEYS)):
        rows = await final_rows(svc, f'default | where attributes has "needle{n}" | project body')
        text = await final_rows(
            svc, f'default | where tostring(attributes) has "needle{n}" | project body'
        )
        assert rows == text == [[f"r{n}"]], KEYS[n]
    rows = await final_rows(svc, 'search "needle3" | project body')
    assert rows == [["r3"]]


@pytest.mark.anyio
async def test_a_bag_of_very_many_paths_is_searched_as_its_text(  # type: ignore[no-untyped-def]
    catalog: StorageCatalog,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> None:
    from bzrk.engine.compile.registry_facts import MAX_SEARCHED_PATHS
    from tests.engine.recording import Recording

    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    record = scope.log_records.add(time_unix_nano=BASE, body=AnyValue(string_value="wide"))
    record.attributes.extend(
        KeyValue(key=f"k{i}", value=AnyValue(string_value=f"v{i}"))
        for i in range(MAX_SEARCHED_PATHS + 1)
    )
    await post_otlp(ingest_app, ingest_token, ("/v1/logs", request))
    recording = Recording(catalog.backend)
    svc = QueryService(recording, catalog=catalog)  # type: ignore[arg-type]
    assert await final_rows(svc, 'default | where attributes has "v7" | project body') == [["wide"]]
    sql = [s for s in recording.sent if not s.startswith("EXPLAIN")][-1]
    assert "toJSONString(`attributes`)" in sql  # one test per path would be 257 of them
    assert "`attributes`.`k7`" not in sql
