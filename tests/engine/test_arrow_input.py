"""The ClickHouse server backend inserts Arrow data through ``input()`` with the structure of
``arrow_input.input_structure``, so text reaches a JSON column by the SELECT's cast, under the
INSERT's settings. Without a server here, the same ``INSERT … SELECT`` is run by chDB over the
same Arrow stream read with ``file()`` (the table function ``input()`` stands in for), into a
real bzrk table, for logs, spans and metric points as the OTLP mapping writes them: it stores
exactly what the embedded backend's own insert stores, and a date-like string stays a string.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from bzrk.engine.backends.arrow_input import input_structure
from bzrk.engine.sql import quote_identifier, quote_string
from bzrk.ingest import otlp
from bzrk.storage.schema import INSERT_SETTINGS, TableLayout, render_create_table
from bzrk.storage.writer import concat_for_insert, stored_shape
from tests.engine.otlp import BASE, logs_request

S = 10**9


def _records() -> pa.Table:
    date = {"day": AnyValue(string_value="2024-01-01"), "n": AnyValue(int_value=3)}
    logs = otlp.map_logs(logs_request(0, [date, {}], {"service.name": "svc"})).tables
    traces = ExportTraceServiceRequest()
    span = (
        traces.resource_spans.add()
        .scope_spans.add()
        .spans.add(
            trace_id=bytes(range(16)),
            span_id=bytes(range(8)),
            name="GET /",
            start_time_unix_nano=BASE,
            end_time_unix_nano=BASE + S,
        )
    )
    span.events.add(time_unix_nano=BASE, name="retry").attributes.append(
        KeyValue(key="at", value=AnyValue(string_value="2024-01-01 10:00:00"))
    )
    metrics = ExportMetricsServiceRequest()
    metric = metrics.resource_metrics.add().scope_metrics.add().metrics.add(name="latency")
    point = metric.histogram.data_points.add(
        time_unix_nano=BASE, count=3, sum=1.5, bucket_counts=[1, 2], explicit_bounds=[1.0]
    )
    point.attributes.append(KeyValue(key="route", value=AnyValue(string_value="/")))
    tables = [
        *logs.values(),
        *(table for _, table in otlp.map_traces(traces).batches()),
        *(table for _, table in otlp.map_metrics(metrics).batches()),
    ]
    return stored_shape(concat_for_insert(tables))


def test_input_structure_inserts_what_the_embedded_backend_does(  # type: ignore[no-untyped-def]
    chdb_backend, ch_database: str, tmp_path: Path
) -> None:
    data = _records()
    for name in ("embedded", "by_input"):
        chdb_backend.execute(render_create_table(f"`{ch_database}`.`{name}`", TableLayout()))
    chdb_backend.insert_arrow(f"`{ch_database}`.`embedded`", data, settings=INSERT_SETTINGS)

    stream = tmp_path / "batch.arrows"
    with pa.OSFile(str(stream), "wb") as sink, pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write_table(data)
    columns = ", ".join(quote_identifier(c) for c in data.column_names)
    settings = ", ".join(f"{k} = {v}" for k, v in INSERT_SETTINGS.items())
    chdb_backend.execute(
        f"INSERT INTO `{ch_database}`.`by_input` ({columns}) SELECT {columns} FROM file("
        f"{quote_string(str(stream))}, 'ArrowStream', {quote_string(input_structure(data.schema))})"
        f" SETTINGS {settings}"
    )

    def rows(table: str) -> list[dict]:
        return chdb_backend.query_arrow(
            f"SELECT formatRow('JSONEachRow', *) AS r, dynamicType(attributes.day) AS day,"
            f" toTypeName(events) AS ev FROM `{ch_database}`.`{table}` ORDER BY r"
        ).to_pylist()

    embedded = rows("embedded")
    assert embedded == rows("by_input")
    assert len(embedded) == data.num_rows == 4
    assert {r["day"] for r in embedded} == {"String", "None"}
    assert all('"2024-01-01 10:00:00"' in r["r"] for r in embedded if '"retry"' in r["r"])
