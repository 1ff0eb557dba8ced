"""ClickHouse's own OpenTelemetry schema, as the upstream exporter creates it, for the benchmark.

The OpenTelemetry Collector's ClickHouse exporter (``exporter/clickhouseexporter``, also what
ClickStack uses) writes logs to ``otel_logs``, spans to ``otel_traces`` (with
``otel_traces_trace_id_ts`` and its view for lookups by trace id) and sum metrics to
``otel_metrics_sum``: attributes as ``Map(LowCardinality(String), String)``, the service as a
``LowCardinality(String)`` column leading the sorting key, a ``tokenbf_v1`` index on the body
and bloom filters on ids and attribute keys/values. The DDL below is the exporter's default
(its 2025 ``sqltemplates``), without TTL; the benchmark loads the same rows as bzrk's table
into it, from the Parquet copy the dataset builder writes, and times hand-written SQL on it in
the same process and store as bzrk's own.

Values: an attribute value is stored as the exporter does, as text (strings as they are,
numbers and booleans as their JSON spelling); ``Duration`` is nanoseconds (bzrk: 100 ns ticks).
"""

from __future__ import annotations

DATABASE = "otel"

_MAP = "Map(LowCardinality(String), String) CODEC(ZSTD(1))"


def _attr_indexes(*maps: tuple[str, str]) -> str:
    """The exporter's bloom filters on every attribute map's keys and values."""
    return ",\n  ".join(
        f"INDEX idx_{prefix + '_' if prefix else ''}attr_{part} map{kind}({column}) "
        "TYPE bloom_filter(0.01) GRANULARITY 1"
        for prefix, column in maps
        for part, kind in (("key", "Keys"), ("value", "Values"))
    )


LOGS = f"""CREATE TABLE IF NOT EXISTS {DATABASE}.otel_logs (
  Timestamp DateTime64(9) CODEC(Delta(8), ZSTD(1)),
  TimestampTime DateTime DEFAULT toDateTime(Timestamp),
  TraceId String CODEC(ZSTD(1)),
  SpanId String CODEC(ZSTD(1)),
  TraceFlags UInt8,
  SeverityText LowCardinality(String) CODEC(ZSTD(1)),
  SeverityNumber UInt8,
  ServiceName LowCardinality(String) CODEC(ZSTD(1)),
  Body String CODEC(ZSTD(1)),
  ResourceSchemaUrl LowCardinality(String) CODEC(ZSTD(1)),
  ResourceAttributes {_MAP},
  ScopeSchemaUrl LowCardinality(String) CODEC(ZSTD(1)),
  ScopeName String CODEC(ZSTD(1)),
  ScopeVersion LowCardinality(String) CODEC(ZSTD(1)),
  ScopeAttributes {_MAP},
  LogAttributes {_MAP},
  EventName String CODEC(ZSTD(1)),
  INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
  {_attr_indexes(("res", "ResourceAttributes"), ("scope", "ScopeAttributes"), ("log", "LogAttributes"))},
  INDEX idx_body Body TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 8
) ENGINE = MergeTree
PARTITION BY toDate(TimestampTime)
PRIMARY KEY (ServiceName, TimestampTime)
ORDER BY (ServiceName, TimestampTime, Timestamp)
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1"""

TRACES = f"""CREATE TABLE IF NOT EXISTS {DATABASE}.otel_traces (
  Timestamp DateTime64(9) CODEC(Delta(8), ZSTD(1)),
  TraceId String CODEC(ZSTD(1)),
  SpanId String CODEC(ZSTD(1)),
  ParentSpanId String CODEC(ZSTD(1)),
  TraceState String CODEC(ZSTD(1)),
  SpanName LowCardinality(String) CODEC(ZSTD(1)),
  SpanKind LowCardinality(String) CODEC(ZSTD(1)),
  ServiceName LowCardinality(String) CODEC(ZSTD(1)),
  ResourceAttributes {_MAP},
  ScopeName String CODEC(ZSTD(1)),
  ScopeVersion String CODEC(ZSTD(1)),
  SpanAttributes {_MAP},
  Duration UInt64 CODEC(ZSTD(1)),
  StatusCode LowCardinality(String) CODEC(ZSTD(1)),
  StatusMessage String CODEC(ZSTD(1)),
  INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
  {_attr_indexes(("res", "ResourceAttributes"), ("span", "SpanAttributes"))},
  INDEX idx_duration Duration TYPE minmax GRANULARITY 1
) ENGINE = MergeTree
PARTITION BY toDate(Timestamp)
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp))
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1"""

TRACE_ID_TS = f"""CREATE TABLE IF NOT EXISTS {DATABASE}.otel_traces_trace_id_ts (
  TraceId String CODEC(ZSTD(1)),
  Start DateTime CODEC(Delta, ZSTD(1)),
  End DateTime CODEC(Delta, ZSTD(1)),
  INDEX idx_trace_id TraceId TYPE bloom_filter(0.01) GRANULARITY 1
) ENGINE = MergeTree
PARTITION BY toDate(Start)
ORDER BY (TraceId, Start)
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1"""

TRACE_ID_TS_MV = f"""CREATE MATERIALIZED VIEW IF NOT EXISTS {DATABASE}.otel_traces_trace_id_ts_mv
TO {DATABASE}.otel_traces_trace_id_ts AS
SELECT TraceId, min(Timestamp) AS Start, max(Timestamp) AS End
FROM {DATABASE}.otel_traces WHERE TraceId != '' GROUP BY TraceId"""

METRICS_SUM = f"""CREATE TABLE IF NOT EXISTS {DATABASE}.otel_metrics_sum (
  ResourceAttributes {_MAP},
  ResourceSchemaUrl String CODEC(ZSTD(1)),
  ScopeName String CODEC(ZSTD(1)),
  ScopeVersion String CODEC(ZSTD(1)),
  ScopeAttributes {_MAP},
  ScopeDroppedAttrCount UInt32 CODEC(ZSTD(1)),
  ScopeSchemaUrl String CODEC(ZSTD(1)),
  ServiceName LowCardinality(String) CODEC(ZSTD(1)),
  MetricName String CODEC(ZSTD(1)),
  MetricDescription String CODEC(ZSTD(1)),
  MetricUnit String CODEC(ZSTD(1)),
  Attributes {_MAP},
  StartTimeUnix DateTime64(9) CODEC(Delta, ZSTD(1)),
  TimeUnix DateTime64(9) CODEC(Delta, ZSTD(1)),
  Value Float64 CODEC(ZSTD(1)),
  Flags UInt32 CODEC(ZSTD(1)),
  AggregationTemporality Int32 CODEC(ZSTD(1)),
  IsMonotonic Boolean CODEC(Delta, ZSTD(1)),
  {_attr_indexes(("res", "ResourceAttributes"), ("", "Attributes"))}
) ENGINE = MergeTree
PARTITION BY toDate(TimeUnix)
ORDER BY (ServiceName, MetricName, Attributes, toUnixTimestamp64Nano(TimeUnix))
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1"""

DDL = (
    f"CREATE DATABASE IF NOT EXISTS {DATABASE}",
    LOGS,
    TRACES,
    TRACE_ID_TS,
    TRACE_ID_TS_MV,
    METRICS_SUM,
)


def _map(column: str) -> str:
    """A flat JSON object's text (as the Parquet copy holds the bags) as the exporter's Map."""
    return (
        "CAST(arrayMap(kv -> (kv.1, if(startsWith(kv.2, '\"'), JSONExtractString(kv.2), kv.2)), "
        f"JSONExtractKeysAndValuesRaw(ifNull({column}, '{{}}'))), "
        "'Map(LowCardinality(String), String)')"
    )


def load(parquet: str) -> tuple[str, ...]:
    """INSERTs that fill the three tables from the dataset's Parquet copy (``parquet``: a path)."""
    source = f"file('{parquet}', Parquet)"
    ns = "fromUnixTimestamp64Nano(toUnixTimestamp64Nano(timestamp), 'UTC')"
    logs = (
        f"INSERT INTO {DATABASE}.otel_logs (Timestamp, TraceId, SpanId, TraceFlags, SeverityText, "
        "SeverityNumber, ServiceName, Body, ResourceAttributes, ScopeName, ScopeVersion, "
        f"ScopeAttributes, LogAttributes) SELECT {ns}, ifNull(trace_id, ''), ifNull(span_id, ''), "
        "toUInt8(ifNull(flags, 0) % 256), ifNull(severity_text, ''), ifNull(severity_number, 0), "
        "ifNull(service_name, ''), ifNull(body, ''), "
        f"{_map('resource')}, ifNull(scope_name, ''), ifNull(scope_version, ''), "
        f"{_map('scope')}, {_map('attributes')} FROM {source} "
        "WHERE span_name IS NULL AND metric_name IS NULL"
    )
    traces = (
        f"INSERT INTO {DATABASE}.otel_traces (Timestamp, TraceId, SpanId, ParentSpanId, "
        "TraceState, SpanName, SpanKind, ServiceName, ResourceAttributes, ScopeName, "
        "ScopeVersion, SpanAttributes, Duration, StatusCode, StatusMessage) SELECT "
        # The exporter's Timestamp is the span's start; bzrk's `timestamp` is its end.
        "fromUnixTimestamp64Nano(toUnixTimestamp64Nano(ifNull(start_time, timestamp)), 'UTC'), "
        "ifNull(trace_id, ''), ifNull(span_id, ''), ifNull(parent_span_id, ''), '', "
        "ifNull(span_name, ''), ifNull(span_kind, ''), ifNull(service_name, ''), "
        f"{_map('resource')}, ifNull(scope_name, ''), ifNull(scope_version, ''), "
        f"{_map('attributes')}, toUInt64(ifNull(duration, 0) * 100), ifNull(status_code, ''), "
        f"ifNull(status_message, '') FROM {source} WHERE span_name IS NOT NULL"
    )
    metrics = (
        f"INSERT INTO {DATABASE}.otel_metrics_sum (ResourceAttributes, ScopeName, ScopeVersion, "
        "ScopeAttributes, ServiceName, MetricName, MetricUnit, Attributes, StartTimeUnix, "
        "TimeUnix, Value, AggregationTemporality, IsMonotonic) SELECT "
        f"{_map('resource')}, ifNull(scope_name, ''), ifNull(scope_version, ''), "
        f"{_map('scope')}, ifNull(service_name, ''), metric_name, ifNull(metric_unit, ''), "
        f"{_map('attributes')}, "
        "fromUnixTimestamp64Nano(toUnixTimestamp64Nano(ifNull(start_time, timestamp)), 'UTC'), "
        f"{ns}, ifNull(value, 0), "
        "if(aggregation_temporality = 'CUMULATIVE', 2, 1), ifNull(is_monotonic, false) "
        f"FROM {source} WHERE metric_type = 'sum'"
    )
    return (logs, traces, metrics)


def optimize() -> tuple[str, ...]:
    """What bzrk's table gets too before the suite: every partition merged to one part."""
    return tuple(
        f"OPTIMIZE TABLE {DATABASE}.{table} FINAL"
        for table in ("otel_logs", "otel_traces", "otel_traces_trace_id_ts", "otel_metrics_sum")
    )
