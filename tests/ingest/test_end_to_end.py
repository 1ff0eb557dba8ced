"""A real ``bzrk dev``: OpenTelemetry SDK exporters (gRPC and HTTP) and a Loki push, read back from disk."""

from __future__ import annotations

import json
import logging
import time

import httpx
import snappy
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
    OTLPMetricExporter as GrpcMetrics,
)
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetrics,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans
from opentelemetry.metrics import Observation
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

from bzrk.ingest.loki import PushRequest
from bzrk.storage.schema import COMPUTED
from bzrk.testing import DevServer
from tests.ingest.conftest import read_store

# The ids as queries read them (stored as bytes, storage/schema.py HEX_IDS).
IDS = f"{COMPUTED['trace_id']} AS trace_id, {COMPUTED['span_id']} AS span_id"


def _send_with_sdk(creds: dict, transport: str) -> None:
    token = creds["ingest_token"]
    resource = Resource.create(
        {"service.name": f"svc-{transport}", "deployment.environment": "test"}
    )
    if transport == "grpc":
        endpoint = creds["otlp_grpc"].removeprefix("http://")
        headers = (("authorization", f"Bearer {token}"),)
        logs = GrpcLogs(endpoint=endpoint, insecure=True, headers=headers)
        spans = GrpcSpans(endpoint=endpoint, insecure=True, headers=headers)
        metrics = GrpcMetrics(endpoint=endpoint, insecure=True, headers=headers)
    else:
        base, headers_http = creds["otlp_http"], {"Authorization": f"Bearer {token}"}
        logs = HttpLogs(endpoint=f"{base}/v1/logs", headers=headers_http)
        spans = HttpSpans(endpoint=f"{base}/v1/traces", headers=headers_http)
        metrics = HttpMetrics(endpoint=f"{base}/v1/metrics", headers=headers_http)

    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    tracer = tracer_provider.get_tracer("e2e.tracer", "0.1")
    with tracer.start_as_current_span("parent", kind=SpanKind.SERVER) as parent:
        parent.set_attribute("http.route", "/checkout")
        with tracer.start_as_current_span("child", kind=SpanKind.CLIENT) as child:
            child.add_event("cache.miss", {"key": "k1"})
            child.set_status(Status(StatusCode.ERROR, "upstream failed"))
            logger_provider = LoggerProvider(resource=resource)
            logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
            logger = logging.getLogger(f"e2e.{transport}")
            logger.propagate = False
            logger.addHandler(LoggingHandler(logger_provider=logger_provider))
            logger.setLevel(logging.INFO)
            logger.error("payment %s failed", "p-1", extra={"order.id": 7})
            logger_provider.shutdown()
    tracer_provider.shutdown()

    reader = PeriodicExportingMetricReader(metrics, export_interval_millis=3_600_000)
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    meter = meter_provider.get_meter("e2e.meter")
    meter.create_counter("orders", unit="{order}").add(3, {"region": "eu"})
    meter.create_histogram("latency", unit="ms").record(12.5, {"region": "eu"})
    meter.create_observable_gauge(
        "temperature", callbacks=[lambda _options: [Observation(21.5, {"room": "a"})]]
    )
    meter.create_up_down_counter("queue").add(-2)
    meter_provider.shutdown()


def _loki_push(creds: dict) -> None:
    now = time.time_ns()
    request = PushRequest()
    stream = request.streams.add()
    stream.labels = '{service_name="promtail-app", level="warn", env="prod"}'
    entry = stream.entries.add()
    entry.timestamp.FromNanoseconds(now)
    entry.line = "disk almost full"
    entry.structuredMetadata.add(name="trace_id", value="abc")
    headers = {
        "Authorization": f"Bearer {creds['ingest_token']}",
        "Content-Type": "application/x-protobuf",
        "Content-Encoding": "snappy",
    }
    response = httpx.post(
        f"{creds['loki']}/loki/api/v1/push",
        content=snappy.compress(request.SerializeToString()),
        headers=headers,
    )
    assert response.status_code == 204, response.text
    json_body = {"streams": [{"stream": {"job": "json-job"}, "values": [[str(now), "json line"]]}]}
    response = httpx.post(
        f"{creds['loki']}/loki/api/v1/push",
        json=json_body,
        headers={"Authorization": f"Bearer {creds['ingest_token']}"},
    )
    assert response.status_code == 204, response.text


def _kql(creds: dict, query: str) -> list[dict]:
    """Rows of ``query`` through the gateway and the real engine (Berserk JSON /query)."""
    response = httpx.post(
        creds["gateway"] + "/query",
        json={"query": query, "database": "default", "since": "1h ago"},
        headers={"Authorization": f"Bearer {creds['token']}"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    table = response.json()["Tables"][0]
    names = [c["column_name"] for c in table["columns"]]
    return [dict(zip(names, row, strict=True)) for row in table["rows"]]


def _read_back_through_the_engine(creds: dict) -> None:
    for transport in ("grpc", "http"):
        svc = f"svc-{transport}"
        spans = _kql(
            creds,
            f'default | where tostring(resource["service.name"]) == "{svc}" and isnotempty(span_name) '
            "| project span_name, span_kind, status_code, status_message, trace_id, span_id, parent_span_id, "
            'duration, scope_name, event = tostring(events[0].name), route = tostring(attributes["http.route"]), '
            "env = tostring(resource.deployment.environment) | order by span_name asc",
        )
        assert [s["span_name"] for s in spans] == ["child", "parent"], spans
        child, parent = spans
        assert (child["span_kind"], parent["span_kind"]) == ("CLIENT", "SERVER")
        assert (child["status_code"], child["status_message"]) == ("ERROR", "upstream failed")
        assert (
            child["parent_span_id"] == parent["span_id"] and child["trace_id"] == parent["trace_id"]
        )
        assert (
            child["event"] == "cache.miss"
            and parent["route"] == "/checkout"
            and child["env"] == "test"
        )
        assert parent["duration"] not in (None, "00:00:00") and child["scope_name"] == "e2e.tracer"
        [log] = _kql(
            creds,
            f'default | where tostring(resource["service.name"]) == "{svc}" and isnotempty(body) '
            '| project body, severity_text, severity_number, trace_id, span_id, order_id = tolong(attributes["order.id"])',
        )
        assert (log["body"], log["severity_text"], log["severity_number"]) == (
            "payment p-1 failed",
            "ERROR",
            17,
        )
        assert (
            log["trace_id"] == child["trace_id"]
            and log["span_id"] == child["span_id"]
            and log["order_id"] == 7
        )
        points = {
            p["metric_name"]: p
            for p in _kql(
                creds,
                f'default | where tostring(resource["service.name"]) == "{svc}" and isnotempty(metric_name) '
                "| project metric_name, metric_type, metric_unit, value, count, sum, aggregation_temporality",
            )
        }
        assert set(points) == {"orders", "latency", "temperature", "queue"}
        assert (points["orders"]["metric_type"], points["orders"]["value"]) == ("sum", 3)
        assert points["orders"]["aggregation_temporality"] == "CUMULATIVE"
        assert points["temperature"]["value"] == 21.5 and points["queue"]["value"] == -2
        assert (
            points["latency"]["metric_type"],
            points["latency"]["count"],
            points["latency"]["sum"],
        ) == (
            "histogram",
            1,
            12.5,
        )
    loki = _kql(
        creds,
        'default | where body in ("disk almost full", "json line") '
        "| project body, svc = tostring(resource.service.name), env = tostring(attributes.env) | order by body asc",
    )
    assert [(r["body"], r["svc"]) for r in loki] == [
        ("disk almost full", "promtail-app"),
        ("json line", "json-job"),
    ]
    assert loki[0]["env"] == "prod"


def test_sdk_exporters_and_loki_reach_disk(tmp_path) -> None:
    server = DevServer(tmp_path / "dev")
    creds = server.start()
    try:
        for transport in ("grpc", "http"):
            _send_with_sdk(creds, transport)
        _loki_push(creds)
        _read_back_through_the_engine(creds)
    finally:
        assert server.stop() == 0, server.log_tail()

    table = "`bzrk_default`.`default`"
    for transport in ("grpc", "http"):
        svc = f"svc-{transport}"
        where = f"resource.`service.name` = '{svc}'"
        spans = read_store(
            tmp_path / "dev",
            f"SELECT span_name, span_kind, status_code, status_message, {IDS},"
            f" {COMPUTED['parent_span_id']} AS parent_span_id, duration, sampled, scope_name,"
            f" scope_version,"
            f" toString(events[1].name) AS event, attributes.http.route.:String AS route,"
            f" resource.deployment.environment.:String AS env"
            f" FROM {table} WHERE {where} AND span_name != '' ORDER BY span_name",
        )
        assert [s["span_name"] for s in spans] == ["child", "parent"], spans
        child, parent = spans
        assert (child["span_kind"], parent["span_kind"]) == ("CLIENT", "SERVER")
        assert (child["status_code"], child["status_message"]) == ("ERROR", "upstream failed")
        assert child["parent_span_id"] == parent["span_id"] and parent["parent_span_id"] is None
        assert child["trace_id"] == parent["trace_id"] and len(child["trace_id"]) == 32
        assert child["event"] == "cache.miss" and parent["route"] == "/checkout"
        # The Python SDK sends only the is-remote flag bits, so sampling stays unknown.
        assert int(parent["duration"]) > 0 and parent["sampled"] is None
        assert (child["scope_name"], child["scope_version"]) == ("e2e.tracer", "0.1")
        assert child["env"] == "test"

        [log] = read_store(
            tmp_path / "dev",
            f"SELECT body, severity_text, severity_number, {IDS},"
            f" attributes.order.id.:Int64 AS order_id, observed_time IS NOT NULL AS observed"
            f" FROM {table} WHERE {where} AND body IS NOT NULL",
        )
        assert log["body"] == "payment p-1 failed"
        assert (log["severity_text"], log["severity_number"]) == ("ERROR", 17)
        assert log["trace_id"] == child["trace_id"] and log["span_id"] == child["span_id"]
        assert int(log["order_id"]) == 7 and log["observed"]

        points = {
            p["metric_name"]: p
            for p in read_store(
                tmp_path / "dev",
                f"SELECT metric_name, metric_type, metric_unit, value, count, sum,"
                f" bucket_counts, explicit_bounds, aggregation_temporality, is_monotonic,"
                f" metric_hash FROM {table} WHERE {where} AND metric_name IS NOT NULL",
            )
        }
        assert set(points) == {"orders", "latency", "temperature", "queue"}
        assert points["orders"]["value"] == 3 and points["orders"]["is_monotonic"] is True
        assert (
            points["orders"]["metric_type"] == "sum"
            and points["orders"]["metric_unit"] == "{order}"
        )
        assert points["orders"]["aggregation_temporality"] == "CUMULATIVE"
        assert points["queue"]["value"] == -2 and points["queue"]["is_monotonic"] is False
        assert points["temperature"]["metric_type"] == "gauge"
        assert points["temperature"]["value"] == 21.5
        latency = points["latency"]
        assert latency["metric_type"] == "histogram" and latency["value"] is None
        assert int(latency["count"]) == 1 and latency["sum"] == 12.5
        assert sum(int(c) for c in latency["bucket_counts"]) == 1
        assert len(latency["explicit_bounds"]) == len(latency["bucket_counts"]) - 1

    loki = read_store(
        tmp_path / "dev",
        f"SELECT body, severity_text, resource.`service.name` AS svc,"
        f" toJSONString(attributes) AS attrs FROM {table}"
        f" WHERE body IN ('disk almost full', 'json line') ORDER BY body",
    )
    assert [r["body"] for r in loki] == ["disk almost full", "json line"]
    # OTel's name for the level label, so `severity_text == "WARN"` finds Loki warnings too.
    assert loki[0]["severity_text"] == "WARN" and loki[0]["svc"] == "promtail-app"
    assert json.loads(loki[0]["attrs"]) == {
        "env": "prod",
        "level": "warn",
        "service_name": "promtail-app",
        "trace_id": "abc",
    }
    assert loki[1]["svc"] == "json-job"
