"""Column-wise log mapping: the same rows, field for field, as the reference row-wise mapping.

The reference below is the per-record mapping bzrk used before logs were mapped straight into
Arrow; the end-to-end tests read fields back through SQL and KQL, this compares every column of
the insert over generated records (all field kinds, several resources, scopes and routes).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from bzrk.ingest import otlp
from bzrk.storage.writer import concat_for_insert, rows_to_arrow

NOW = 1_750_000_000 * 10**9


def _reference(request: ExportLogsServiceRequest, now_ns: int) -> dict[str | None, list[dict]]:
    out: dict[str | None, list[dict]] = {}
    for resource_logs in request.resource_logs:
        res = otlp._resource(resource_logs.resource)
        for scope_logs in resource_logs.scope_logs:
            scope = scope_logs.scope
            shared: dict[str, Any] = {
                "ingest_time": now_ns,
                "resource": res.json,
                "scope": otlp.to_json(otlp.attributes_dict(scope.attributes)),
            }
            if res.dropped:
                shared["dropped_resource_attributes_count"] = res.dropped
            if scope.name:
                shared["scope_name"] = scope.name
            if scope.version:
                shared["scope_version"] = scope.version
            if scope.dropped_attributes_count:
                shared["dropped_scope_attributes_count"] = scope.dropped_attributes_count
            for record in scope_logs.log_records:
                try:
                    row = _reference_row(record, now_ns)
                except otlp.RecordError:
                    continue
                row.update(shared)
                out.setdefault(res.table, []).append(row)
    return out


def _reference_row(record: Any, now_ns: int) -> dict:
    event_time = otlp.check_time(record.time_unix_nano, "log time_unix_nano", now_ns)
    observed = otlp.check_time(record.observed_time_unix_nano, "observed", now_ns)
    row: dict[str, Any] = {
        "timestamp": event_time or observed or now_ns,
        "observed_time": observed or event_time or now_ns,
    }
    if record.HasField("body"):
        body = otlp.any_value(record.body)
        if body is not None:
            row["body"] = body if isinstance(body, str) else otlp.to_json(body)
    if record.severity_text:
        row["severity_text"] = record.severity_text
    if record.severity_number:
        row["severity_number"] = record.severity_number
    if record.trace_id:
        row["trace_id"] = record.trace_id.hex()
    if record.span_id:
        row["span_id"] = record.span_id.hex()
    if record.flags:
        row["flags"] = record.flags
        if record.flags & 0xFF:
            row["sampled"] = bool(record.flags & 1)
    attrs = otlp.attributes_dict(record.attributes)
    if record.event_name:
        attrs.setdefault("event.name", record.event_name)
    row["attributes"] = otlp.to_json(attrs)
    if record.dropped_attributes_count:
        row["dropped_attributes_count"] = record.dropped_attributes_count
    return row


_text = st.text(max_size=6)
_scalars = st.one_of(
    st.builds(lambda v: AnyValue(string_value=v), _text),
    st.builds(lambda v: AnyValue(int_value=v), st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda v: AnyValue(bool_value=v), st.booleans()),
    st.builds(lambda v: AnyValue(double_value=v), st.floats(allow_nan=True, width=64)),
    st.builds(lambda v: AnyValue(bytes_value=v), st.binary(max_size=4)),
    st.just(AnyValue()),
)


def _array(values: list[AnyValue]) -> AnyValue:
    value = AnyValue()
    value.array_value.values.extend(values)
    return value


def _kvlist(pairs: list[tuple[str, AnyValue]]) -> AnyValue:
    value = AnyValue()
    value.kvlist_value.values.extend(KeyValue(key=k, value=v) for k, v in pairs)
    return value


_values = st.one_of(
    _scalars,
    st.builds(_array, st.lists(_scalars, max_size=3)),
    st.builds(_kvlist, st.lists(st.tuples(_text, _scalars), max_size=3)),
)
_attributes = st.lists(
    st.builds(lambda k, v: KeyValue(key=k, value=v), st.sampled_from("abc") | _text, _values),
    max_size=4,
)
_times = st.sampled_from([0, NOW - 5, NOW, 5, NOW + 400 * 86_400 * 10**9])


@st.composite
def _requests(draw: st.DrawFn) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    for _ in range(draw(st.integers(1, 3))):
        rl = request.resource_logs.add()
        rl.resource.attributes.extend(draw(_attributes))
        route = draw(st.sampled_from([None, "other", ""]))
        if route is not None:
            rl.resource.attributes.add(key="bzrk.table").value.string_value = route
        rl.resource.dropped_attributes_count = draw(st.sampled_from([0, 2]))
        for _ in range(draw(st.integers(0, 2))):
            sl = rl.scope_logs.add()
            sl.scope.name = draw(_text)
            sl.scope.version = draw(_text)
            sl.scope.attributes.extend(draw(_attributes))
            sl.scope.dropped_attributes_count = draw(st.sampled_from([0, 1]))
            for _ in range(draw(st.integers(0, 4))):
                rec = sl.log_records.add()
                rec.time_unix_nano = draw(_times)
                rec.observed_time_unix_nano = draw(_times)
                body = draw(st.none() | _values)
                if body is not None:
                    rec.body.CopyFrom(body)
                rec.severity_text = draw(_text)
                rec.severity_number = draw(st.sampled_from([0, 9, 24]))
                rec.trace_id = draw(st.sampled_from([b"", bytes(range(16))]))
                rec.span_id = draw(st.sampled_from([b"", bytes(range(8))]))
                rec.flags = draw(st.sampled_from([0, 1, 0x100, 0x101, 2]))
                rec.attributes.extend(draw(_attributes))
                rec.event_name = draw(st.sampled_from(["", "login", "a"]))
                rec.dropped_attributes_count = draw(st.sampled_from([0, 3]))
    return request


@settings(max_examples=150, deadline=None)
@given(_requests())
def test_column_wise_logs_equal_the_row_wise_mapping(request: ExportLogsServiceRequest) -> None:
    mapped = otlp.map_logs(request, NOW)
    expected = {route: rows_to_arrow(rows) for route, rows in _reference(request, NOW).items()}
    got = dict(mapped.batches())
    assert got.keys() == expected.keys()
    for route, table in expected.items():
        assert got[route].equals(table), (route, got[route].to_pylist(), table.to_pylist())
    assert mapped.accepted == sum(t.num_rows for t in expected.values())


def test_severity_number_past_uint8_is_rejected_not_a_failed_insert() -> None:
    request = ExportLogsServiceRequest()
    records = request.resource_logs.add().scope_logs.add().log_records
    records.add(time_unix_nano=NOW, severity_number=9)
    records.add(time_unix_nano=NOW, severity_number=300)
    mapped = otlp.map_logs(request, NOW)
    assert mapped.accepted == 1 and mapped.rejected == 1
    assert "severity_number 300" in mapped.error_message()


@given(st.dictionaries(st.text(), st.one_of(st.text(), st.integers(-(2**63), 2**63 - 1))))
def test_orjson_writes_string_and_int_bags_byte_for_byte_as_json(bag: dict) -> None:
    assert otlp.bag_json(bag, True) == json.dumps(bag, ensure_ascii=False, separators=(",", ":"))
    assert orjson.loads(otlp.bag_json(bag, True)) == bag


def test_concat_fills_missing_columns_as_a_missing_field_is() -> None:
    first = rows_to_arrow([{"timestamp": NOW, "body": "a", "attributes": "{}"}])
    second = rows_to_arrow([{"timestamp": NOW, "events": ['{"n":1}'], "flags": 1}])
    combined = concat_for_insert([first, second])
    assert combined.equals(
        rows_to_arrow(
            [
                {"timestamp": NOW, "body": "a", "attributes": "{}"},
                {"timestamp": NOW, "events": ['{"n":1}'], "flags": 1},
            ]
        )
    )
    assert combined.column("events").to_pylist() == [[], ['{"n":1}']]
    assert combined.column("attributes").to_pylist() == ["{}", "{}"]
    assert isinstance(combined, pa.Table)
