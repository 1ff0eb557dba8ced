"""A small, crafted OTLP dataset whose every answer is known, sent through bzrk's real ingest path.

Logs, spans (events, links, a root, nested children, an error, logs correlated to spans) and
metrics (gauge, cumulative monotonic sum with a reset, delta sum, explicit histograms in both
temporalities, an exponential histogram, a summary) are built as OpenTelemetry protobuf messages
with fixed ids and timestamps and POSTed to OTLP/HTTP; one more trace goes through the
OpenTelemetry SDK's gRPC span exporter. Some records lack fields (a log without a body, spans
without a parent), one attribute key holds a number on one record and a string on another, and
resource attribute ``bzrk.table`` routes one service's records to a second table.

Every time is an offset from ``t0``, the start of an hour a few hours ago, so that bins are exact.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2 as mt
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1 import trace_pb2 as tr

S = 1_000_000_000
MIN = 60 * S
ROUTED_TABLE = "ka_routed"

TRACE_A = "0af7651916cd43dd8448eb211c80319c"
TRACE_B = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT_A, CALL_A, PAY_A, RENDER_A = (
    "b7ad6b7169203331",
    "00f067aa0ba902b7",
    "53995c3f42cd8ad8",
    "e2a9c9d4f1b06a51",
)
ROOT_B = "7a085853722dc6d2"
SDK_SERVICE = "ka-sdk"

CUMULATIVE = mt.AGGREGATION_TEMPORALITY_CUMULATIVE
DELTA = mt.AGGREGATION_TEMPORALITY_DELTA


def kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def resource(service: str, **extra: Any) -> Resource:
    return Resource(attributes=[kv("service.name", service), *(kv(k, v) for k, v in extra.items())])


@dataclass(frozen=True)
class Dataset:
    t0: int  # ns, the start of an hour

    def at(self, seconds: float) -> int:
        return self.t0 + int(seconds * S)

    # -- logs ------------------------------------------------------------------------------

    def logs(self) -> ExportLogsServiceRequest:
        req = ExportLogsServiceRequest()
        rl = req.resource_logs.add(resource=resource("ka-logs", **{"host.name": "ka-host"}))
        sl = rl.scope_logs.add(scope=InstrumentationScope(name="ka.logger", version="1.0"))

        def log(
            sec: float, sev: int, text: str, body: str | None, attrs: dict[str, Any], **ids: str
        ) -> None:
            rec = sl.log_records.add(
                time_unix_nano=self.at(sec),
                observed_time_unix_nano=self.at(sec) + 1_000_000,
                severity_number=sev,  # type: ignore[arg-type]
                severity_text=text,
                attributes=[kv(k, v) for k, v in attrs.items()],
            )
            if body is not None:
                rec.body.string_value = body
            if "trace" in ids:
                rec.trace_id = bytes.fromhex(ids["trace"])
                rec.span_id = bytes.fromhex(ids["span"])
                rec.flags = 1

        log(60, 17, "ERROR", "user login failed for id=42", {"code": 500, "user": "alice"},
            trace=TRACE_A, span=ROOT_A)  # fmt: skip
        log(120, 9, "INFO", "GET /api/items 200 12ms", {"code": "500", "http.method": "GET"})
        log(180, 9, "INFO", "rewrite_journal_sweeper started", {})
        log(240, 9, "INFO", "Found rewrite journals", {})
        log(300, 5, "DEBUG", "journal-sweeper done", {})
        log(360, 9, "INFO", None, {"event.name": "heartbeat", "code": 200})
        log(420, 13, "WARN", "Connection timeout after 30000 ms to 10.0.0.5", {"level": "INFO"})
        log(480, 17, "ERROR", "Deadlock detected in txn 7f3a", {"ratio": 2.5, "two": 2.0},
            trace=TRACE_B, span=ROOT_B)  # fmt: skip
        log(490, 17, "ERROR", "payment declined: card expired", {"code": 402},
            trace=TRACE_A, span=PAY_A)  # fmt: skip
        routed = req.resource_logs.add(resource=resource("routed", **{"bzrk.table": ROUTED_TABLE}))
        rs = routed.scope_logs.add(scope=InstrumentationScope(name="ka.routed"))
        for i in range(3):
            r = rs.log_records.add(
                time_unix_nano=self.at(600 + i), severity_number=9, severity_text="INFO"
            )
            r.body.string_value = f"routed record {i}"
        return req

    # -- traces ----------------------------------------------------------------------------

    def traces(self) -> ExportTraceServiceRequest:
        req = ExportTraceServiceRequest()

        def spans(service: str) -> Any:
            rs = req.resource_spans.add(resource=resource(service))
            return rs.scope_spans.add(scope=InstrumentationScope(name="ka.tracer", version="1.0"))

        def span(scope: Any, trace: str, sid: str, parent: str | None, name: str, kind: int,
                 start: float, end: float, **attrs: Any) -> Any:  # fmt: skip
            sp = scope.spans.add(
                trace_id=bytes.fromhex(trace), span_id=bytes.fromhex(sid), name=name, kind=kind,  # type: ignore[arg-type]
                start_time_unix_nano=self.at(start), end_time_unix_nano=self.at(end),
                attributes=[kv(k, v) for k, v in attrs.items()],
            )  # fmt: skip
            if parent:
                sp.parent_span_id = bytes.fromhex(parent)
            return sp

        front = spans("ka-frontend")
        span(front, TRACE_A, ROOT_A, None, "GET /checkout", tr.Span.SPAN_KIND_SERVER, 59.9, 62.0,
             **{"http.response.status_code": 502})  # fmt: skip
        span(front, TRACE_A, CALL_A, ROOT_A, "call payment", tr.Span.SPAN_KIND_CLIENT, 60.0, 61.5)
        span(front, TRACE_A, RENDER_A, ROOT_A, "render", tr.Span.SPAN_KIND_INTERNAL, 61.5, 61.9)
        pay = spans("ka-payment")
        failed = span(pay, TRACE_A, PAY_A, CALL_A, "POST /pay", tr.Span.SPAN_KIND_SERVER, 60.1, 61.4,
                      **{"http.response.status_code": 500})  # fmt: skip
        failed.status.code = tr.Status.STATUS_CODE_ERROR
        failed.status.message = "card expired"
        failed.events.add(
            time_unix_nano=self.at(61.0), name="exception",
            attributes=[kv("exception.type", "CardExpired"), kv("exception.message", "card expired")],
        )  # fmt: skip
        failed.links.add(trace_id=bytes.fromhex(TRACE_B), span_id=bytes.fromhex(ROOT_B))
        cron = spans("ka-cron")
        span(cron, TRACE_B, ROOT_B, None, "cron tick", tr.Span.SPAN_KIND_INTERNAL, 479.0, 481.0)
        return req

    # -- metrics ---------------------------------------------------------------------------

    def metrics(self) -> ExportMetricsServiceRequest:
        req = ExportMetricsServiceRequest()
        rm = req.resource_metrics.add(
            resource=resource("ka-metrics", **{"k8s.pod.name": "ka-pod-1"})
        )
        sm = rm.scope_metrics.add(scope=InstrumentationScope(name="ka.meter", version="1.0"))

        gauge = sm.metrics.add(name="ka.temperature", unit="Cel").gauge
        for sec, v in ((0, 10.0), (60, 20.0), (120, 15.0), (180, 25.0)):
            gauge.data_points.add(time_unix_nano=self.at(sec), as_double=v)

        # Cumulative monotonic counter with a reset at 150 s (the process restarted).
        counter = sm.metrics.add(name="ka.requests", unit="{request}").sum
        counter.aggregation_temporality = CUMULATIVE
        counter.is_monotonic = True
        for sec, v, start in ((60, 60, 0), (120, 180, 0), (180, 30, 150), (240, 90, 150)):
            counter.data_points.add(
                start_time_unix_nano=self.at(start), time_unix_nano=self.at(sec), as_int=v,
                attributes=[kv("route", "/a")],
            )  # fmt: skip
        for sec, v in ((60, 10), (120, 20), (180, 30), (240, 40)):
            counter.data_points.add(
                start_time_unix_nano=self.at(0), time_unix_nano=self.at(sec), as_int=v,
                attributes=[kv("route", "/b")],
            )  # fmt: skip

        delta = sm.metrics.add(name="ka.bytes", unit="By").sum
        delta.aggregation_temporality = DELTA
        delta.is_monotonic = True
        for sec, v in ((60, 10.0), (120, 20.0), (180, 30.0), (240, 40.0)):
            delta.data_points.add(
                start_time_unix_nano=self.at(sec - 60), time_unix_nano=self.at(sec), as_double=v
            )

        # Two delta points that merge into the vendor's otel_histogram_merge example.
        hist = sm.metrics.add(name="ka.latency", unit="ms").histogram
        hist.aggregation_temporality = DELTA
        for sec, counts, total, lo, hi in (
            (60, [5, 14, 30, 20, 11], 7000.0, 1.2, 700.0),
            (120, [6, 20, 28, 27, 14], 10000.0, 3.0, 980.0),
        ):
            hist.data_points.add(
                start_time_unix_nano=self.at(sec - 60), time_unix_nano=self.at(sec),
                count=sum(counts), sum=total, bucket_counts=counts,
                explicit_bounds=[10.0, 50.0, 100.0, 200.0], min=lo, max=hi,
            )  # fmt: skip

        cum = sm.metrics.add(name="ka.latency.cumulative", unit="ms").histogram
        cum.aggregation_temporality = CUMULATIVE
        for sec, counts, total in ((60, [1, 1, 0, 0, 0], 40.0), (120, [3, 2, 1, 0, 0], 160.0)):
            cum.data_points.add(
                start_time_unix_nano=self.at(0), time_unix_nano=self.at(sec), count=sum(counts),
                sum=total, bucket_counts=counts, explicit_bounds=[10.0, 50.0, 100.0, 200.0],
            )  # fmt: skip

        exp = sm.metrics.add(name="ka.exp", unit="s").exponential_histogram
        exp.aggregation_temporality = DELTA
        exp.data_points.add(
            start_time_unix_nano=self.at(0), time_unix_nano=self.at(60), count=4, sum=12.0,
            scale=0, zero_count=0,
            positive=mt.ExponentialHistogramDataPoint.Buckets(offset=0, bucket_counts=[1, 2, 1]),
        )  # fmt: skip

        summary = sm.metrics.add(name="ka.summary", unit="s").summary
        summary.data_points.add(
            start_time_unix_nano=self.at(0), time_unix_nano=self.at(60), count=100, sum=14.0,
            quantile_values=[
                mt.SummaryDataPoint.ValueAtQuantile(quantile=0.5, value=0.12),
                mt.SummaryDataPoint.ValueAtQuantile(quantile=0.99, value=0.61),
            ],
        )  # fmt: skip
        return req


def send(otlp_http: str, token: str, dataset: Dataset) -> None:
    """POST the three requests as OTLP/HTTP protobuf; every one must be acknowledged."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-protobuf"}
    for path, message in (
        ("/v1/logs", dataset.logs()),
        ("/v1/traces", dataset.traces()),
        ("/v1/metrics", dataset.metrics()),
    ):
        response = httpx.post(
            otlp_http + path, content=message.SerializeToString(), headers=headers, timeout=30
        )
        assert response.status_code == 200, f"{path}: {response.status_code} {response.text[:300]}"


def send_sdk_trace(otlp_grpc: str, token: str, dataset: Dataset) -> None:
    """One root span with a child through the OpenTelemetry SDK's OTLP/gRPC exporter."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource as SdkResource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    exporter = OTLPSpanExporter(
        endpoint=otlp_grpc.removeprefix("http://"), insecure=True,
        headers=(("authorization", f"Bearer {token}"),),
    )  # fmt: skip
    provider = TracerProvider(resource=SdkResource.create({"service.name": SDK_SERVICE}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("ka.sdk")
    root = tracer.start_span("sdk root", start_time=dataset.at(700))
    ctx = trace.set_span_in_context(root)
    child = tracer.start_span("sdk child", context=ctx, start_time=dataset.at(700.5))
    child.end(end_time=dataset.at(701))
    root.end(end_time=dataset.at(702))
    provider.shutdown()


def hour_start(hours_ago: int = 3) -> int:
    now = time.time_ns()
    return now - now % (3600 * S) - hours_ago * 3600 * S
