"""OTLP logs, traces and metrics → bzrk rows, per the Berserk OTel mapping (one record = one row).

Each ``map_*`` function takes a decoded ``Export*ServiceRequest`` and returns a
:class:`Mapped`: rows grouped by the table they go to (``None`` = the token's table, else the
``bzrk.table`` resource attribute) and the records rejected, with reasons. Row shape is
:mod:`bzrk.storage.writer`'s: datetimes as int nanoseconds, bags as JSON text.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from bzrk.storage.writer import ROW_FIELDS, column_array, rows_to_arrow

Row = dict[str, Any]
ROUTE_ATTRIBUTE = "bzrk.table"

# Timestamps outside this window are rejected: earlier ones are almost always seconds or
# milliseconds sent as nanoseconds, later ones clock or unit errors.
MIN_TIME_NS = 946_684_800 * 10**9  # 2000-01-01
MAX_FUTURE_NS = 366 * 86_400 * 10**9

# Resource attributes that name one pod, process or its placement, and so change when a pod
# restarts or moves: a time series' identity (metric_hash) leaves them out, as Berserk's does
# ("resource attributes minus pod-specific ones"). The node (``k8s.node.*``, and ``host.*``,
# which names the node under Kubernetes) is where a pod was placed: a restarted pod keeps its
# series wherever it runs.
_VOLATILE_RESOURCE_PREFIXES = (
    "k8s.pod.",
    "k8s.node.",
    "host.",
    "container.",
    "service.instance.id",
    "process.pid",
)

SPAN_KINDS = {k: v.removeprefix("SPAN_KIND_") for v, k in trace_pb2.Span.SpanKind.items()}
STATUS_CODES = {k: v.removeprefix("STATUS_CODE_") for v, k in trace_pb2.Status.StatusCode.items()}
TEMPORALITIES = {
    k: v.removeprefix("AGGREGATION_TEMPORALITY_")
    for v, k in metrics_pb2.AggregationTemporality.items()
}


@dataclass
class Mapped:
    """Records by destination table (as rows or, mapped column-wise, as Arrow), and rejects."""

    rows: dict[str | None, list[Row]] = field(default_factory=dict)
    tables: dict[str | None, pa.Table] = field(default_factory=dict)
    rejected: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, table: str | None, row: Row) -> None:
        self.rows.setdefault(table, []).append(row)

    def batches(self) -> list[tuple[str | None, pa.Table]]:
        """Every destination with its records as one Arrow table shaped for the insert."""
        out = [(route, rows_to_arrow(rows)) for route, rows in self.rows.items() if rows]
        out.extend((route, table) for route, table in self.tables.items() if table.num_rows)
        return out

    def reject(self, count: int, reason: str) -> None:
        self.rejected += count
        if reason not in self.errors and len(self.errors) < 5:
            self.errors.append(reason)

    @property
    def accepted(self) -> int:
        return sum(len(rows) for rows in self.rows.values()) + sum(
            table.num_rows for table in self.tables.values()
        )

    def error_message(self) -> str:
        return "; ".join(self.errors)


class RecordError(ValueError):
    """One record cannot be stored; the rest of the request can."""


# -- values ----------------------------------------------------------------------------------
def any_value(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as a JSON value (bytes as base64, non-finite floats as text)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        number = value.double_value
        return number if math.isfinite(number) else str(number)
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes_dict(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


def attributes_dict(attributes: Iterable[KeyValue]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        # Strings and ints are nearly all attributes; skip the general path for them.
        if kind == "string_value":
            out[kv.key] = value.string_value
        elif kind == "int_value":
            out[kv.key] = value.int_value
        else:
            out[kv.key] = any_value(value)
    return out


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def to_json(value: Any) -> str:
    return _ENCODER.encode(value)


def bag(attributes: Iterable[KeyValue]) -> tuple[dict[str, Any], bool]:
    """:func:`attributes_dict`, and whether every value is a string, int or bool."""
    out: dict[str, Any] = {}
    simple = True
    for kv in attributes:
        value = kv.value
        # Most values are non-empty strings: one read answers, without asking the oneof.
        text = value.string_value
        if text:
            out[kv.key] = text
            continue
        kind = value.WhichOneof("value")
        if kind == "string_value":
            out[kv.key] = text
        elif kind == "int_value":
            out[kv.key] = value.int_value
        elif kind == "bool_value":
            out[kv.key] = value.bool_value
        else:
            out[kv.key] = any_value(value)
            simple = False
    return out, simple


def bag_json(attributes: dict[str, Any], simple: bool) -> str:
    """``to_json(attributes)``, byte for byte, faster for bags of strings, ints and bools.

    orjson writes those exactly as :data:`_ENCODER` does (compact, non-ASCII verbatim, the
    same escapes); floats' exponents it spells differently ("1e-7" for "1e-07"), so a bag
    holding anything else goes through :func:`to_json`.
    """
    return orjson.dumps(attributes).decode() if simple else _ENCODER.encode(attributes)


def _hex(raw: bytes) -> str | None:
    return raw.hex() if raw else None


def format_time(ns: int) -> str:
    """RFC 3339 with 100 ns precision, for timestamps inside JSON values (span events)."""
    seconds, rest = divmod(ns, 10**9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 100:07d}Z"


def check_time(ns: int, what: str, now_ns: int) -> int | None:
    """``ns`` if set and plausible, ``None`` if unset (0); :class:`RecordError` otherwise."""
    if ns == 0:
        return None
    if ns < MIN_TIME_NS or ns > now_ns + MAX_FUTURE_NS:
        raise RecordError(
            f"{what} {ns} ns is out of range (2000-01-01 to one year from now; "
            "are these seconds or milliseconds?)"
        )
    return ns


@dataclass(frozen=True, slots=True)
class _Resource:
    """What every record under one ResourceX shares, serialized once."""

    table: str | None
    json: str
    attributes: dict[str, Any]
    dropped: int | None


def _resource(resource: Any) -> _Resource:
    attrs = attributes_dict(resource.attributes)
    route = attrs.get(ROUTE_ATTRIBUTE)
    return _Resource(
        route if isinstance(route, str) and route else None,
        to_json(attrs),
        attrs,
        resource.dropped_attributes_count or None,
    )


def _shared(res: _Resource, scope: Any, now_ns: int) -> Row:
    """The fields every record under one resource and scope has, built once for all of them."""
    shared: Row = {
        "ingest_time": now_ns,
        "resource": res.json,
        "scope": to_json(attributes_dict(scope.attributes)),
    }
    if res.dropped:
        shared["dropped_resource_attributes_count"] = res.dropped
    if scope.name:
        shared["scope_name"] = scope.name
    if scope.version:
        shared["scope_version"] = scope.version
    if scope.dropped_attributes_count:
        shared["dropped_scope_attributes_count"] = scope.dropped_attributes_count
    return shared


# -- logs ------------------------------------------------------------------------------------
# Logs are mapped column-wise straight into Arrow: no dict per record, one array per column.
_LOG_COLUMNS = (
    "timestamp",
    "ingest_time",
    "observed_time",
    "body",
    "severity_text",
    "severity_number",
    "trace_id",
    "span_id",
    "flags",
    "sampled",
    "scope_name",
    "scope_version",
    "dropped_attributes_count",
    "dropped_resource_attributes_count",
    "dropped_scope_attributes_count",
    "resource",
    "scope",
    "attributes",
)
_LOG_FIELDS = tuple((name, dtype) for name, dtype in ROW_FIELDS if name in _LOG_COLUMNS)
# Columns every log row has; the others are left out of the insert when no row has them.
_LOG_ALWAYS = frozenset({"timestamp", "ingest_time", "observed_time", "resource", "scope"})


def map_logs(request: ExportLogsServiceRequest, now_ns: int | None = None) -> Mapped:
    now_ns = now_ns or time.time_ns()
    out = Mapped()
    columns_by_route: dict[str | None, dict[str, list[Any]]] = {}
    for resource_logs in request.resource_logs:
        res = _resource(resource_logs.resource)
        columns = columns_by_route.get(res.table)
        if columns is None:
            columns = columns_by_route[res.table] = {name: [] for name in _LOG_COLUMNS}
        for scope_logs in resource_logs.scope_logs:
            accepted = _log_records(scope_logs.log_records, columns, now_ns, out)
            if not accepted:
                continue
            scope = scope_logs.scope
            columns["ingest_time"] += [now_ns] * accepted
            columns["resource"] += [res.json] * accepted
            columns["scope"] += [to_json(attributes_dict(scope.attributes))] * accepted
            columns["scope_name"] += [scope.name or None] * accepted
            columns["scope_version"] += [scope.version or None] * accepted
            columns["dropped_resource_attributes_count"] += [res.dropped] * accepted
            columns["dropped_scope_attributes_count"] += [
                scope.dropped_attributes_count or None
            ] * accepted
    for route, columns in columns_by_route.items():
        if columns["timestamp"]:
            out.tables[route] = _log_table(columns)
    return out


def _log_records(
    records: Iterable[Any], columns: dict[str, list[Any]], now_ns: int, out: Mapped
) -> int:
    """Append the columns of ``records`` that are not shared by their scope; count accepted."""
    timestamp = columns["timestamp"].append
    observed_time = columns["observed_time"].append
    body = columns["body"].append
    severity_text = columns["severity_text"].append
    severity_number = columns["severity_number"].append
    trace_id = columns["trace_id"].append
    span_id = columns["span_id"].append
    flags = columns["flags"].append
    sampled = columns["sampled"].append
    attributes = columns["attributes"].append
    dropped = columns["dropped_attributes_count"].append
    latest_ns = now_ns + MAX_FUTURE_NS
    accepted = 0
    for record in records:
        event_ns = record.time_unix_nano
        observed_ns = record.observed_time_unix_nano
        number = record.severity_number
        if (
            (event_ns and not MIN_TIME_NS <= event_ns <= latest_ns)
            or (observed_ns and not MIN_TIME_NS <= observed_ns <= latest_ns)
            or not 0 <= number <= 255
        ):
            try:
                check_time(event_ns, "log time_unix_nano", now_ns)
                check_time(observed_ns, "log observed_time_unix_nano", now_ns)
                raise RecordError(f"log severity_number {number} is out of range (0 to 255)")
            except RecordError as exc:
                out.reject(1, str(exc))
                continue
        timestamp(event_ns or observed_ns or now_ns)
        observed_time(observed_ns or event_ns or now_ns)
        value = record.body
        text = value.string_value
        if text:
            body(text)
        elif not record.HasField("body"):
            body(None)
        else:
            text = any_value(value)
            body(text if text is None or isinstance(text, str) else to_json(text))
        severity_text(record.severity_text or None)
        severity_number(number or None)
        trace_id(record.trace_id.hex() or None)
        span_id(record.span_id.hex() or None)
        record_flags = record.flags
        flags(record_flags or None)
        sampled(bool(record_flags & 1) if record_flags & 0xFF else None)
        attrs, simple = bag(record.attributes)
        if record.event_name:
            attrs.setdefault("event.name", record.event_name)
        attributes(bag_json(attrs, simple))
        dropped(record.dropped_attributes_count or None)
        accepted += 1
    return accepted


def _log_table(columns: dict[str, list[Any]]) -> pa.Table:
    arrays: list[pa.Array] = []
    names: list[str] = []
    for name, dtype in _LOG_FIELDS:
        array = column_array(columns[name], dtype)
        if name in _LOG_ALWAYS or array.null_count < len(array):
            arrays.append(array)
            names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


# -- traces ----------------------------------------------------------------------------------
def map_traces(request: ExportTraceServiceRequest, now_ns: int | None = None) -> Mapped:
    now_ns = now_ns or time.time_ns()
    out = Mapped()
    for resource_spans in request.resource_spans:
        res = _resource(resource_spans.resource)
        for scope_spans in resource_spans.scope_spans:
            shared = _shared(res, scope_spans.scope, now_ns)
            for span in scope_spans.spans:
                try:
                    row = _span_row(span, now_ns)
                except RecordError as exc:
                    out.reject(1, str(exc))
                    continue
                row.update(shared)
                out.add(res.table, row)
    return out


def _span_row(span: Any, now_ns: int) -> Row:
    if len(span.trace_id) != 16 or len(span.span_id) != 8:
        raise RecordError("span trace_id must be 16 bytes and span_id 8 bytes")
    start = check_time(span.start_time_unix_nano, "span start_time_unix_nano", now_ns)
    end = check_time(span.end_time_unix_nano, "span end_time_unix_nano", now_ns)
    row: Row = {
        "timestamp": end or start or now_ns,
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "span_name": span.name,
    }
    if start is not None:
        row["start_time"] = start
    if end is not None:
        row["end_time"] = end
    if start is not None and end is not None:
        row["duration"] = (end - start) // 100
    if span.parent_span_id:
        row["parent_span_id"] = span.parent_span_id.hex()
    if span.kind:
        row["span_kind"] = SPAN_KINDS.get(span.kind, str(span.kind))
    if span.trace_state:
        row["trace_state"] = span.trace_state
    if span.flags:
        row["flags"] = span.flags
        # Bits 0-7 are the W3C trace flags; SDKs that send only the is-remote bits (8, 9)
        # leave sampling unknown.
        if span.flags & 0xFF:
            row["sampled"] = bool(span.flags & 1)
    # UNSET is OTLP's default (0): like every empty or default field it is omitted, so it
    # reads as null (the vendor's mapping: "empty/default fields omitted").
    if span.status.code:
        row["status_code"] = STATUS_CODES.get(span.status.code, str(span.status.code))
    if span.status.message:
        row["status_message"] = span.status.message
    if span.events:
        row["events"] = [
            to_json(
                {
                    "name": event.name,
                    "timestamp": format_time(event.time_unix_nano),
                    "attributes": attributes_dict(event.attributes),
                    **(
                        {"dropped_attributes_count": event.dropped_attributes_count}
                        if event.dropped_attributes_count
                        else {}
                    ),
                }
            )
            for event in span.events
        ]
    if span.links:
        row["links"] = [
            to_json(
                {
                    "trace_id": link.trace_id.hex(),
                    "span_id": link.span_id.hex(),
                    **({"trace_state": link.trace_state} if link.trace_state else {}),
                    **({"flags": link.flags} if link.flags else {}),
                    "attributes": attributes_dict(link.attributes),
                }
            )
            for link in span.links
        ]
    row["attributes"] = to_json(attributes_dict(span.attributes))
    for name in ("attributes", "events", "links"):
        dropped = getattr(span, f"dropped_{name}_count")
        if dropped:
            row[f"dropped_{name}_count"] = dropped
    return row


# -- metrics ---------------------------------------------------------------------------------
def map_metrics(request: ExportMetricsServiceRequest, now_ns: int | None = None) -> Mapped:
    now_ns = now_ns or time.time_ns()
    out = Mapped()
    for resource_metrics in request.resource_metrics:
        res = _resource(resource_metrics.resource)
        series_resource = to_json(
            sorted(
                (k, v)
                for k, v in res.attributes.items()
                if not k.startswith(_VOLATILE_RESOURCE_PREFIXES)
            )
        )
        for scope_metrics in resource_metrics.scope_metrics:
            scope = scope_metrics.scope
            shared = _shared(res, scope, now_ns)
            identity = f"{series_resource}|{scope.name}|{scope.version}"
            for metric in scope_metrics.metrics:
                _metric_rows(metric, identity, res, shared, now_ns, out)
    return out


_METRIC_TYPES = {
    "gauge": "gauge",
    "sum": "sum",
    "histogram": "histogram",
    "exponential_histogram": "exp_histogram",
    "summary": "summary",
}


def _metric_rows(
    metric: Any,
    identity: str,
    res: _Resource,
    shared: Row,
    now_ns: int,
    out: Mapped,
) -> None:
    kind = metric.WhichOneof("data")
    if kind is None:
        out.reject(1, f"metric '{metric.name}' has no data")
        return
    data = getattr(metric, kind)
    metric_type = _METRIC_TYPES[kind]
    for point in data.data_points:
        try:
            row = _point_row(point, kind, data, now_ns)
        except RecordError as exc:
            out.reject(1, f"metric '{metric.name}': {exc}")
            continue
        attrs = row["attributes_dict"]
        del row["attributes_dict"]
        row["metric_name"] = metric.name
        row["metric_type"] = metric_type
        if metric.unit:
            row["metric_unit"] = metric.unit
        if metric.description:
            row["metric_description"] = metric.description
        series = (
            f"{identity}|{metric.name}|{metric_type}|{metric.unit}|{to_json(sorted(attrs.items()))}"
        )
        # 63 bits: a KQL long is signed, and a hash past 2^63 would reach the ADX surface
        # wrapped negative, so filtering by the value a result showed found nothing.
        row["metric_hash"] = (
            int.from_bytes(hashlib.blake2b(series.encode(), digest_size=8).digest(), "big") >> 1
        )
        row.update(shared)
        out.add(res.table, row)


def _point_row(point: Any, kind: str, data: Any, now_ns: int) -> Row:
    point_time = check_time(point.time_unix_nano, "data point time_unix_nano", now_ns)
    start = check_time(point.start_time_unix_nano, "data point start_time_unix_nano", now_ns)
    attrs = attributes_dict(point.attributes)
    row: Row = {"timestamp": point_time or now_ns, "attributes": to_json(attrs)}
    row["attributes_dict"] = attrs
    if start is not None:
        row["start_time"] = start
    if point.flags:
        row["flags"] = point.flags
    if kind in ("gauge", "sum"):
        which = point.WhichOneof("value")
        if which == "as_double":
            row["value"] = point.as_double
        elif which == "as_int":
            row["value"] = float(point.as_int)
    if kind == "sum":
        row["is_monotonic"] = data.is_monotonic
    if kind != "gauge" and kind != "summary":
        row["aggregation_temporality"] = TEMPORALITIES.get(
            data.aggregation_temporality, str(data.aggregation_temporality)
        )
    if kind in ("histogram", "exponential_histogram", "summary"):
        row["count"] = point.count
        if kind == "summary" or point.HasField("sum"):
            row["sum"] = point.sum
    if kind in ("histogram", "exponential_histogram"):
        if point.HasField("min"):
            row["min"] = point.min
        if point.HasField("max"):
            row["max"] = point.max
    if kind == "histogram":
        row["bucket_counts"] = list(point.bucket_counts)
        row["explicit_bounds"] = list(point.explicit_bounds)
    elif kind == "exponential_histogram":
        row["scale"] = point.scale
        row["zero_count"] = point.zero_count
        row["positive_offset"] = point.positive.offset
        row["positive_bucket_counts"] = list(point.positive.bucket_counts)
        row["negative_offset"] = point.negative.offset
        row["negative_bucket_counts"] = list(point.negative.bucket_counts)
    elif kind == "summary":
        row["quantiles"] = [q.quantile for q in point.quantile_values]
        row["quantile_values"] = [q.value for q in point.quantile_values]
    return row
