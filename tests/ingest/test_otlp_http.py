"""OTLP/HTTP receiver in-process: every mapped field of logs, spans and metric points reads back."""

from __future__ import annotations

import gzip
import json
import time

import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

from bzrk.storage.schema import COMPUTED
from bzrk.testing import client
from tests.ingest.conftest import query

# The ids as queries read them (stored as bytes, storage/schema.py HEX_IDS).
IDS = f"{COMPUTED['trace_id']} AS trace_id, {COMPUTED['span_id']} AS span_id"
PARENT_ID = f"{COMPUTED['parent_span_id']} AS parent_span_id"

pytestmark = pytest.mark.anyio
NOW = time.time_ns() // 1000 * 1000
TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
SPAN = bytes.fromhex("b7ad6b7169203331")
PARENT = bytes.fromhex("00f067aa0ba902b7")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _kv(key: str, value: object) -> KeyValue:
    kv = KeyValue(key=key)
    if isinstance(value, bool):
        kv.value.bool_value = value
    elif isinstance(value, int):
        kv.value.int_value = value
    elif isinstance(value, float):
        kv.value.double_value = value
    else:
        kv.value.string_value = str(value)
    return kv


def _headers(token: str, content_type: str = "application/x-protobuf") -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": content_type}


def logs_request() -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    rl.resource.attributes.extend([_kv("service.name", "checkout"), _kv("host.name", "h1")])
    rl.resource.dropped_attributes_count = 2
    sl = rl.scope_logs.add()
    sl.scope.name, sl.scope.version = "my.lib", "1.2.3"
    sl.scope.attributes.append(_kv("scope.attr", "s"))
    sl.scope.dropped_attributes_count = 1
    rec = sl.log_records.add()
    rec.time_unix_nano = NOW
    rec.observed_time_unix_nano = NOW + 500
    rec.severity_text, rec.severity_number = "ERROR", 17
    rec.body.string_value = "Deadlock detected in payment"
    rec.trace_id, rec.span_id, rec.flags = TRACE, SPAN, 1
    rec.attributes.extend([_kv("http.route", "/pay"), _kv("retries", 3), _kv("ok", False)])
    rec.dropped_attributes_count = 4
    nested = rec.attributes.add(key="nested")
    nested.value.kvlist_value.values.append(_kv("a", 1.5))
    return req


async def test_logs_protobuf_every_field(catalog, ingest_app, ingest_token) -> None:
    async with client(ingest_app) as http:
        response = await http.post(
            "/v1/logs", content=logs_request().SerializeToString(), headers=_headers(ingest_token)
        )
    assert response.status_code == 200, response.content
    assert not ExportLogsServiceResponse.FromString(response.content).HasField("partial_success")
    [row] = query(
        catalog,
        "SELECT toUnixTimestamp64Nano(timestamp) AS ts, toUnixTimestamp64Nano(observed_time) AS obs,"
        f" body, severity_text, severity_number, {IDS}, flags, sampled,"
        " scope_name, scope_version, toJSONString(scope) AS scope, toJSONString(resource) AS res,"
        " attributes.http.route.:String AS route, attributes.retries.:Int64 AS retries, attributes.nested.a.:Float64 AS na,"
        " dropped_attributes_count, dropped_resource_attributes_count,"
        " dropped_scope_attributes_count, ingest_time > timestamp - INTERVAL 1 MINUTE AS fresh,"
        # The whole record as queries read it (storage/schema.py COMPUTED: not a stored column).
        f" JSONExtractString(toJSONString({COMPUTED['$raw']}), 'body') AS raw_body,"
        " span_name, metric_name FROM {t}",
    )
    assert row["ts"] == NOW and row["obs"] == NOW + 500
    assert row["body"] == "Deadlock detected in payment"
    assert (row["severity_text"], row["severity_number"]) == ("ERROR", 17)
    assert row["trace_id"] == TRACE.hex() and row["span_id"] == SPAN.hex()
    assert row["flags"] == 1 and row["sampled"] is True
    assert (row["scope_name"], row["scope_version"]) == ("my.lib", "1.2.3")
    assert json.loads(row["scope"]) == {"scope": {"attr": "s"}}
    assert json.loads(row["res"])["service"]["name"] == "checkout"
    assert json.loads(row["res"])["host"]["name"] == "h1"
    assert row["route"] == "/pay" and row["retries"] == 3 and row["na"] == 1.5
    assert row["dropped_attributes_count"] == 4
    assert row["dropped_resource_attributes_count"] == 2
    assert row["dropped_scope_attributes_count"] == 1
    assert row["fresh"] and row["raw_body"] == "Deadlock detected in payment"
    assert row["span_name"] is None and row["metric_name"] is None


async def test_logs_json_and_gzip(catalog, ingest_app, ingest_token) -> None:
    body = {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "web"}}]
                },
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "timeUnixNano": str(NOW),
                                "body": {"stringValue": "hello json"},
                                "traceId": TRACE.hex(),
                                "spanId": SPAN.hex(),
                                "severityNumber": 9,
                            }
                        ]
                    }
                ],
            }
        ]
    }
    headers = {**_headers(ingest_token, "application/json"), "Content-Encoding": "gzip"}
    async with client(ingest_app) as http:
        response = await http.post(
            "/v1/logs", content=gzip.compress(json.dumps(body).encode()), headers=headers
        )
    assert response.status_code == 200, response.content
    assert response.headers["content-type"].startswith("application/json")
    [row] = query(catalog, f"SELECT body, {IDS}, severity_number FROM {{t}}")
    assert row == {
        "body": "hello json",
        "trace_id": TRACE.hex(),
        "span_id": SPAN.hex(),
        "severity_number": 9,
    }


async def test_traces_every_field(catalog, ingest_app, ingest_token) -> None:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.append(_kv("service.name", "cart"))
    ss = rs.scope_spans.add()
    ss.scope.name = "tracer"
    span = ss.spans.add()
    span.trace_id, span.span_id, span.parent_span_id = TRACE, SPAN, PARENT
    span.name, span.kind = "GET /cart", 2
    span.start_time_unix_nano, span.end_time_unix_nano = NOW - 1_500_000, NOW
    span.trace_state, span.flags = "k=v", 0x101
    span.status.code, span.status.message = 2, "boom"
    span.attributes.append(_kv("http.status_code", 500))
    ev = span.events.add(name="exception", time_unix_nano=NOW - 1000)
    ev.attributes.append(_kv("exception.type", "ValueError"))
    link = span.links.add(trace_id=TRACE, span_id=PARENT)
    link.attributes.append(_kv("l", "x"))
    span.dropped_attributes_count, span.dropped_events_count, span.dropped_links_count = 1, 2, 3
    async with client(ingest_app) as http:
        response = await http.post(
            "/v1/traces", content=req.SerializeToString(), headers=_headers(ingest_token)
        )
    assert response.status_code == 200, response.content
    [row] = query(
        catalog,
        "SELECT toUnixTimestamp64Nano(timestamp) AS ts, toUnixTimestamp64Nano(start_time) AS st,"
        f" toUnixTimestamp64Nano(end_time) AS et, duration, {IDS}, {PARENT_ID},"
        " span_name, span_kind, trace_state, flags, sampled, status_code, status_message,"
        " toString(events[1].name) AS ev_name, toString(events[1].attributes.exception.type) AS ev_type,"
        " toString(links[1].span_id) AS link_span, attributes.http.status_code.:Int64 AS code,"
        " dropped_attributes_count AS da, dropped_events_count AS de, dropped_links_count AS dl,"
        " scope_name, observed_time FROM {t}",
    )
    assert row["ts"] == NOW and row["et"] == NOW and row["st"] == NOW - 1_500_000
    assert row["duration"] == 15_000  # 1.5 ms in 100 ns ticks
    assert (row["trace_id"], row["span_id"], row["parent_span_id"]) == (
        TRACE.hex(),
        SPAN.hex(),
        PARENT.hex(),
    )
    assert (row["span_name"], row["span_kind"]) == ("GET /cart", "SERVER")
    assert (row["trace_state"], row["flags"], row["sampled"]) == ("k=v", 0x101, True)
    assert (row["status_code"], row["status_message"]) == ("ERROR", "boom")
    assert (row["ev_name"], row["ev_type"]) == ("exception", "ValueError")
    assert row["link_span"] == PARENT.hex() and row["code"] == 500
    assert (row["da"], row["de"], row["dl"]) == (1, 2, 3)
    assert row["scope_name"] == "tracer" and row["observed_time"] is None


async def test_all_metric_kinds(catalog, ingest_app, ingest_token) -> None:
    req = ExportMetricsServiceRequest()
    rm = req.resource_metrics.add()
    rm.resource.attributes.append(_kv("service.name", "api"))
    sm = rm.scope_metrics.add()
    gauge = sm.metrics.add(name="cpu", unit="1", description="cpu use")
    gauge.gauge.data_points.add(time_unix_nano=NOW, as_double=0.5).attributes.append(_kv("core", 0))
    total = sm.metrics.add(name="requests", unit="{request}")
    total.sum.aggregation_temporality, total.sum.is_monotonic = 2, True
    total.sum.data_points.add(time_unix_nano=NOW, start_time_unix_nano=NOW - 10**9, as_int=42)
    hist = sm.metrics.add(name="latency", unit="ms")
    hist.histogram.aggregation_temporality = 1
    hist.histogram.data_points.add(
        time_unix_nano=NOW,
        count=6,
        sum=30.0,
        min=1.0,
        max=12.0,
        bucket_counts=[1, 2, 3],
        explicit_bounds=[5.0, 10.0],
    )
    exp = sm.metrics.add(name="size")
    exp.exponential_histogram.aggregation_temporality = 2
    point = exp.exponential_histogram.data_points.add(
        time_unix_nano=NOW, count=5, sum=9.0, scale=2, zero_count=1
    )
    point.positive.offset, point.negative.offset = 3, -1
    point.positive.bucket_counts.extend([1, 2])
    point.negative.bucket_counts.extend([1])
    summary = sm.metrics.add(name="gc")
    sp = summary.summary.data_points.add(time_unix_nano=NOW, count=10, sum=100.0)
    sp.quantile_values.add(quantile=0.5, value=8.0)
    sp.quantile_values.add(quantile=0.99, value=20.0)
    async with client(ingest_app) as http:
        response = await http.post(
            "/v1/metrics", content=req.SerializeToString(), headers=_headers(ingest_token)
        )
    assert response.status_code == 200, response.content
    rows = {
        r["metric_name"]: r
        for r in query(
            catalog,
            "SELECT metric_name, metric_type, metric_unit, metric_description, metric_hash, value,"
            " sum, count, min, max, bucket_counts, explicit_bounds, aggregation_temporality,"
            " is_monotonic, scale, zero_count, positive_offset, positive_bucket_counts,"
            " negative_offset, negative_bucket_counts, quantiles, quantile_values,"
            " toUnixTimestamp64Nano(start_time) AS st, attributes.core.:Int64 AS core FROM {t}",
        )
    }
    assert set(rows) == {"cpu", "requests", "latency", "size", "gc"}
    cpu = rows["cpu"]
    assert (cpu["metric_type"], cpu["metric_unit"], cpu["value"], cpu["core"]) == (
        "gauge",
        "1",
        0.5,
        0,
    )
    assert cpu["metric_description"] == "cpu use" and cpu["metric_hash"]
    req_row = rows["requests"]
    assert (req_row["value"], req_row["aggregation_temporality"], req_row["is_monotonic"]) == (
        42.0,
        "CUMULATIVE",
        True,
    )
    assert req_row["st"] == NOW - 10**9
    lat = rows["latency"]
    assert lat["value"] is None and lat["metric_type"] == "histogram"
    assert (lat["count"], lat["sum"], lat["min"], lat["max"]) == (6, 30.0, 1.0, 12.0)
    assert lat["bucket_counts"] == [1, 2, 3] and lat["explicit_bounds"] == [5.0, 10.0]
    assert lat["aggregation_temporality"] == "DELTA"
    size = rows["size"]
    assert size["metric_type"] == "exp_histogram"
    assert (size["scale"], size["zero_count"], size["positive_offset"]) == (2, 1, 3)
    assert size["positive_bucket_counts"] == [1, 2] and size["negative_bucket_counts"] == [1]
    assert size["negative_offset"] == -1
    gc = rows["gc"]
    assert gc["quantiles"] == [0.5, 0.99] and gc["quantile_values"] == [8.0, 20.0]
    assert (gc["count"], gc["sum"]) == (10, 100.0)
    assert len({r["metric_hash"] for r in rows.values()}) == 5


async def test_a_series_keeps_its_metric_hash_across_pods_and_nodes(
    catalog, ingest_app, ingest_token
) -> None:
    """metric_hash leaves out what names one pod and where it runs (a restarted pod, on
    another node, continues its series) and keeps what tells series apart (the version)."""
    req = ExportMetricsServiceRequest()
    senders = [
        ("checkout-7d9f-abcde", "node-a", "1.4.0"),
        ("checkout-7d9f-fghij", "node-b", "1.4.0"),  # restarted, on another node
        ("checkout-8e1a-klmno", "node-a", "1.5.0"),  # a new version: another series
    ]
    for i, (pod, node, version) in enumerate(senders):
        rm = req.resource_metrics.add()
        rm.resource.attributes.extend(
            [
                _kv("service.name", "checkout"),
                _kv("service.version", version),
                _kv("k8s.pod.name", pod),
                _kv("k8s.node.name", node),
                _kv("host.name", node),
                _kv("service.instance.id", f"instance-{i}"),
            ]
        )
        metric = rm.scope_metrics.add().metrics.add(name="shop.orders")
        point = metric.sum.data_points.add(time_unix_nano=NOW + i, as_int=i + 1)
        point.attributes.append(_kv("order.outcome", "placed"))
        metric.sum.aggregation_temporality = 2
        metric.sum.is_monotonic = True
    async with client(ingest_app) as http:
        response = await http.post(
            "/v1/metrics", content=req.SerializeToString(), headers=_headers(ingest_token)
        )
    assert response.status_code == 200, response.content
    rows = query(catalog, "SELECT value, metric_hash FROM {t} ORDER BY value")
    hashes = [r["metric_hash"] for r in rows]
    assert [r["value"] for r in rows] == [1.0, 2.0, 3.0]
    assert hashes[0] == hashes[1] != hashes[2]
    # A KQL long: every hash is in the signed 64-bit range (ADX would show it wrapped).
    assert all(0 <= h < 2**63 for h in hashes)


async def test_partial_success_and_routing(catalog, ingest_app, ingest_token) -> None:
    catalog.create_table("default", "audit")
    req = logs_request()
    other = req.resource_logs.add()
    other.resource.attributes.append(_kv("bzrk.table", "audit"))
    other.scope_logs.add().log_records.add(time_unix_nano=NOW).body.string_value = "routed"
    missing = req.resource_logs.add()
    missing.resource.attributes.append(_kv("bzrk.table", "nope"))
    missing.scope_logs.add().log_records.add(time_unix_nano=NOW).body.string_value = "lost"
    bad_time = req.resource_logs[0].scope_logs[0].log_records.add(time_unix_nano=1_700_000_000)
    bad_time.body.string_value = "seconds, not nanoseconds"
    async with client(ingest_app) as http:
        response = await http.post(
            "/v1/logs", content=req.SerializeToString(), headers=_headers(ingest_token)
        )
    assert response.status_code == 200, response.content
    partial = ExportLogsServiceResponse.FromString(response.content).partial_success
    assert partial.rejected_log_records == 2
    assert "out of range" in partial.error_message and "'nope'" in partial.error_message
    audit = catalog.qualified_name("default", "audit")
    assert catalog.backend.query_arrow(f"SELECT body FROM {audit}").to_pylist() == [
        {"body": "routed"}
    ]
    assert [r["body"] for r in query(catalog, "SELECT body FROM {t}")] == [
        "Deadlock detected in payment"
    ]


async def test_unknown_and_revoked_tokens_get_401(
    catalog, pipeline, ingest_app, ingest_token
) -> None:
    from bzrk.ingest.admin import list_ingest_tokens, revoke_ingest_token

    body = logs_request().SerializeToString()
    async with client(ingest_app) as http:
        for headers in ({}, _headers("ing_" + "x" * 42), _headers("bzrk_sp_nope")):
            headers = {**headers, "Content-Type": "application/x-protobuf"}
            response = await http.post("/v1/logs", content=body, headers=headers)
            assert response.status_code == 401
            assert "token" in status_pb2.Status.FromString(response.content).message
        response = await http.post("/v1/logs", content=body, headers=_headers(ingest_token))
        assert response.status_code == 200
        [info] = list_ingest_tokens(catalog)
        revoke_ingest_token(catalog, info["id"])
        pipeline.tokens.invalidate()  # what the admin API does after a revocation
        response = await http.post("/v1/logs", content=body, headers=_headers(ingest_token))
        assert response.status_code == 401
    assert query(catalog, "SELECT count() AS n FROM {t}") == [{"n": 1}]


async def test_loki_labels_route_and_metadata(catalog, ingest_app, ingest_token) -> None:
    catalog.create_table("default", "edge")
    body = {
        "streams": [
            {
                "stream": {"job": "nginx", "level": "error", "bzrk_table": "edge"},
                "values": [[str(NOW), "upstream timed out", {"trace_id": "t1"}]],
            },
            {"stream": {"job": "app"}, "values": [[str(NOW + 1), "plain"]]},
        ]
    }
    headers = {"Authorization": f"Bearer {ingest_token}"}
    async with client(ingest_app) as http:
        response = await http.post("/loki/api/v1/push", json=body, headers=headers)
    assert response.status_code == 204, response.text
    edge = catalog.qualified_name("default", "edge")
    [row] = catalog.backend.query_arrow(
        f"SELECT body, severity_text, severity_number, resource.`service.name` AS svc,"
        f" toJSONString(attributes) AS attrs, toUnixTimestamp64Nano(timestamp) AS ts FROM {edge}"
    ).to_pylist()
    assert (row["body"], row["severity_text"], row["severity_number"], row["svc"], row["ts"]) == (
        "upstream timed out",
        "ERROR",
        17,
        "nginx",
        NOW,
    )
    assert json.loads(row["attrs"]) == {
        "job": "nginx",
        "level": "error",
        "bzrk_table": "edge",
        "trace_id": "t1",
    }
    assert query(catalog, "SELECT body FROM {t}") == [{"body": "plain"}]


async def test_prometheus_counters(catalog, ingest_app, ingest_token) -> None:
    from prometheus_client import REGISTRY

    def sample(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    written = sample("bzrk_ingest_records_total", signal="logs", outcome="written")
    invalid = sample("bzrk_ingest_invalid_requests_total", signal="logs")
    async with client(ingest_app) as http:
        ok = await http.post(
            "/v1/logs", content=logs_request().SerializeToString(), headers=_headers(ingest_token)
        )
        bad = await http.post("/v1/logs", content=b"\xff\xff", headers=_headers(ingest_token))
    assert (ok.status_code, bad.status_code) == (200, 400)
    assert sample("bzrk_ingest_records_total", signal="logs", outcome="written") == written + 1
    assert sample("bzrk_ingest_invalid_requests_total", signal="logs") == invalid + 1
    assert sample("bzrk_ingest_batch_inputs_count") >= 1


async def test_decoding_and_mapping_run_off_the_event_loop(
    catalog, pipeline, ingest_token, monkeypatch
) -> None:
    """A large request's decode and mapping (~15 µs a record) must not stall the event loop."""
    import dataclasses
    import threading

    from starlette.applications import Starlette

    from bzrk.ingest import http as receiver

    threads: list[threading.Thread] = []
    signal = receiver.SIGNALS["logs"]

    def mapper(message):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread())
        return signal.mapper(message)

    monkeypatch.setitem(receiver.SIGNALS, "logs", dataclasses.replace(signal, mapper=mapper))
    app = Starlette(routes=receiver.otlp_routes(pipeline))
    async with client(app) as http:
        response = await http.post(
            "/v1/logs", content=logs_request().SerializeToString(), headers=_headers(ingest_token)
        )
    assert response.status_code == 200, response.content
    assert threads and threads[0] is not threading.main_thread()
    [row] = query(catalog, "SELECT body FROM {t}")
    assert row["body"] == "Deadlock detected in payment"
