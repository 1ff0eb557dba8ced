"""A record without attributes has no `attributes` field (Berserk's OTel mapping omits empty
bags), over logs sent through the real OTLP/HTTP receiver: every test of the bag agrees that it
is null, as `gettype` already said. Before, `isnull(attributes)` was false and
`isnotnull(attributes)` true for such a record. `$raw` leaves the absent fields out too (it
carried a log's empty `events` and histogram arrays)."""

from __future__ import annotations

import json
import re

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from bzrk.engine.service import QueryService
from bzrk.storage.catalog import StorageCatalog
from tests.engine.otlp import BASE, final_rows, logs_request, post_otlp, recorded_service
from tests.engine.otlp import text as _s
from tests.ingest.conftest import ingest_app, ingest_token, pipeline  # noqa: F401


@pytest.fixture
async def service(catalog: StorageCatalog, ingest_app, ingest_token):  # type: ignore[no-untyped-def]  # noqa: F811
    records = [{"code": AnyValue(int_value=7), "user": _s("u1")}, {}]
    request = logs_request(0, records, {"service.name": "svc"})
    return await recorded_service(catalog, ingest_app, ingest_token, request)


@pytest.mark.anyio
async def test_every_test_of_an_absent_bag_says_null(service) -> None:  # type: ignore[no-untyped-def]
    svc, _ = service
    rows = await final_rows(
        svc,
        "default | project body, n = isnull(attributes), nn = isnotnull(attributes),"
        " e = isempty(attributes), ne = isnotempty(attributes), t = gettype(attributes),"
        " s = tostring(attributes), sn = isnull(tostring(attributes)),"
        " k = array_length(bag_keys(attributes)), sc = isnull(scope) | order by body asc",
    )
    assert rows == [
        ["r0", False, True, False, True, "dictionary", '{"code":7,"user":"u1"}', False, 2, True],
        ["r1", True, False, True, False, "null", "", False, None, True],
    ]


@pytest.mark.anyio
async def test_a_filter_and_a_count_find_the_record_without_attributes(service) -> None:  # type: ignore[no-untyped-def]
    svc, recording = service
    assert await final_rows(svc, "default | where isnull(attributes) | project body") == [["r1"]]
    # read from the bag's key list: no row's bag is serialized (the vendor MCP's discover step
    # filters on `isnotnull(resource)` over a whole day)
    assert "JSONAllPaths(`attributes`)" in recording.queries()[-1]
    assert "toJSONString(`attributes`)" not in recording.queries()[-1]
    assert await final_rows(
        svc,
        "default | summarize without = countif(isnull(attributes)),"
        " with = countif(isnotnull(attributes))",
    ) == [[1, 1]]


@pytest.mark.anyio
async def test_raw_is_the_record_without_its_absent_fields(service) -> None:  # type: ignore[no-untyped-def]
    # Berserk omits empty and default fields: a log record has no `events`, no histogram
    # buckets, no `attributes` when it has none. Its times read as KQL spells a datetime.
    svc, _ = service
    rows = await final_rows(
        svc,
        "default | project body, keys = bag_keys($raw), t = tostring($raw.timestamp),"
        " recent = $raw.timestamp > ago(1d), e = isnull($raw.events) | order by body asc",
    )
    assert [row[1] for row in rows] == [
        ["attributes", "body", "observed_time", "resource", "timestamp"],
        ["body", "observed_time", "resource", "timestamp"],
    ]
    for _, _, text, recent, no_events in rows:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z", text), text
        assert recent and no_events


@pytest.mark.anyio
async def test_a_spans_raw_spells_its_times_and_duration_as_kql_does(  # type: ignore[no-untyped-def]
    catalog: StorageCatalog,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> None:
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add()
    spans.spans.add(
        trace_id=bytes(range(16)),
        span_id=bytes(range(8)),
        name="GET /",
        start_time_unix_nano=BASE,
        end_time_unix_nano=BASE + 1_500_000_000,
    )
    await post_otlp(ingest_app, ingest_token, ("/v1/traces", request))
    svc = QueryService(catalog.backend, catalog=catalog)
    [[raw, slow]] = await final_rows(
        svc, "default | project r = tostring($raw), slow = $raw.duration > 1s"
    )
    record = json.loads(raw)
    assert record["duration"] == "00:00:01.5000000" and slow
    assert record["end_time"].endswith(".5000000Z") and "events" not in record
    assert "parent_span_id" not in record  # a root span


@pytest.mark.anyio
async def test_a_resource_without_attributes_is_absent_and_lists_no_unset_typed_key(  # type: ignore[no-untyped-def]
    catalog: StorageCatalog,
    ingest_app,  # noqa: F811
    ingest_token,  # noqa: F811
) -> None:
    # `service.name` is a declared typed path of `resource` (it leads the sorting key), so
    # ClickHouse lists it for every row; a record that lacks it has no such key.
    bare = logs_request(0, [{}], {})
    hosted = logs_request(1, [{}], {"host.name": "node-1"})
    svc, _ = await recorded_service(catalog, ingest_app, ingest_token, bare, hosted)
    rows = await final_rows(
        svc,
        "default | project body, n = isnull(resource), k = bag_keys(resource),"
        " r = bag_keys($raw), t = tostring(resource) | order by body asc",
    )
    assert rows == [
        ["r0", True, None, ["body", "observed_time", "timestamp"], ""],
        [
            "r1",
            False,
            ["host.name"],
            ["body", "observed_time", "resource", "timestamp"],
            '{"host":{"name":"node-1"}}',
        ],
    ]
