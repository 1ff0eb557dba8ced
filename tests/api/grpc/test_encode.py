"""The frame encoder: value encodings, frame kinds and order, ~4 MiB packing, dropped rows."""

from __future__ import annotations

import math
from decimal import Decimal

from bzrk.api.grpc._pb import query_pb2
from bzrk.api.grpc.encode import MAX_DYNAMIC_DEPTH, MAX_FRAME_BYTES, FrameEncoder
from bzrk.engine import events as ev

from .helpers import check_value_table, decode_value, payloads, value_table_events

Frame = query_pb2.ExecuteQueryResultFrame


def encode_all(events: list[ev.Event], **kwargs: int) -> list[Frame]:
    encoder = FrameEncoder("req-1", **kwargs)
    return [Frame.FromString(data) for event in events for data in encoder.encode(event)]


def test_value_table_every_cell() -> None:
    frames = encode_all(value_table_events())
    assert payloads(frames) == ["schema", "batch", "metadata", "done"]
    assert all(frame.request_id == "req-1" for frame in frames)
    check_value_table(frames)
    cells = frames[1].batch.rows[0].values
    arr = cells[11].array_value.values
    assert [c.WhichOneof("value") for c in arr] == ["long_value", "string_value", "bool_value"]
    nested = cells[12].bag_value.properties["nested"].bag_value.properties["c"]
    assert nested.WhichOneof("value") == "bool_value" and nested.bool_value is False
    assert cells[12].bag_value.properties["a"].WhichOneof("value") == "long_value"


def test_nulls_edge_values_and_schema_flags() -> None:
    columns = (
        ev.Column("s", "string"),
        ev.Column("dt", "datetime"),
        ev.Column("old", "datetime"),
        ev.Column("d", "dynamic"),
        ev.Column("e", "dynamic"),
        ev.Column("x", "real"),
        ev.Column("dec", "decimal"),
        ev.Column("big", "int"),
        ev.Column("g", "guid"),
        ev.Column("tsn", "timespan"),
    )
    row = [None, None, -10, {}, [], math.nan, Decimal("1.5"), 2**40, None, -5]
    frames = encode_all(
        [ev.TableSchema("T", columns), ev.RowBatch("T", "i", [row], True), ev.Done()]
    )
    schema = frames[0].schema
    assert [c.type for c in schema.columns] == [
        query_pb2.COLUMN_TYPE_STRING,
        query_pb2.COLUMN_TYPE_DATETIME,
        query_pb2.COLUMN_TYPE_DATETIME,
        query_pb2.COLUMN_TYPE_DYNAMIC,
        query_pb2.COLUMN_TYPE_DYNAMIC,
        query_pb2.COLUMN_TYPE_REAL,
        query_pb2.COLUMN_TYPE_REAL,
        query_pb2.COLUMN_TYPE_INT,
        query_pb2.COLUMN_TYPE_STRING,
        query_pb2.COLUMN_TYPE_TIMESPAN,
    ]
    # Every column may hold null: a string too, when it is an absent stored field (issue 20).
    assert [c.nullable for c in schema.columns][:2] == [True, True]
    cells = frames[1].batch.rows[0].values
    arms = [c.WhichOneof("value") for c in cells]
    # A null string is null (only an absent stored field is one); an instant before 1970 has
    # no uint64 Unix-nanosecond form and becomes null; empty bags/arrays stay bags/arrays.
    assert arms == [
        "null_value",
        "null_value",
        "null_value",
        "bag_value",
        "array_value",
        "real_value",
        "real_value",
        "long_value",
        "null_value",
        "timespan_value",
    ]
    assert math.isnan(cells[5].real_value)
    assert cells[6].real_value == 1.5
    assert cells[7].long_value == 2**40  # past int32: kept through the dynamic encoding
    assert cells[9].timespan_value == -5


def test_progress_metadata_and_error_frames() -> None:
    progress = ev.Progress(
        rows_processed=10,
        chunks_total=4,
        chunks_scanned=3,
        chunks_skipped_range=1,
        query_time_nanos=5000,
        queue_wait_nanos=0,
        planning_segments_done=1,
        planning_segments_total=2,
        slices_done=2,
        slices_total=8,
        coverage=0.3125,
        short_circuit=True,
        bin_progress=ev.BinProgress(100, 10, bytes([100, 50]), 1, 2),
    )
    metadata = ev.Metadata(
        "it",
        warnings=(
            ev.QueryWarning(
                "SummarizeMemoryLimit", "too many groups", 3, 1, ev.Location(1, 5, 1, 2, 1, 6)
            ),
        ),
        visualization=ev.Visualization("timechart", {"title": "t"}),
        partial_failures=(ev.PartialFailure("disk error", segment_count=3),),
    )
    error = ev.Error(
        "ParseError",
        "expected a pipe",
        title="Syntax error",
        location=ev.Location(0, 4, 1, 1, 1, 5),
    )
    frames = encode_all([progress, metadata, error])
    p = frames[0].progress
    assert (p.rows_processed, p.chunks_total, p.chunks_scanned, p.chunks_skipped_range) == (
        10,
        4,
        3,
        1,
    )
    assert p.HasField("queue_wait_nanos") and p.queue_wait_nanos == 0
    assert p.planning_progress.segments_total == 2
    assert p.bin_progress.completion_percentages == bytes([100, 50])
    assert dict(p.custom_stats) == {"slices_done": 2, "slices_total": 8, "coverage_ppm": 312_500}
    assert p.short_circuit_completion
    assert not p.HasField("quality")  # nothing measured: nothing invented
    m = frames[1].metadata
    assert m.visualization.visualization_type == "timechart"
    assert dict(m.visualization.properties) == {"title": "t"}
    assert m.partial_failures[0].segment_ids == []
    assert m.partial_failures[0].message.startswith("3 segments")
    w = m.warnings[0]
    assert (w.kind, w.operator_id, w.branch_index, w.location.end_column) == (
        "SummarizeMemoryLimit",
        3,
        1,
        6,
    )
    e = frames[2].error
    assert (e.code, e.title, e.message) == ("ParseError", "Syntax error", "expected a pipe")
    assert (e.location.start_byte, e.location.end_byte, e.location.start_line) == (0, 4, 1)


def test_empty_metadata_frame_is_sent_and_has_no_visualization() -> None:
    frames = encode_all([ev.Metadata("x")])
    assert payloads(frames) == ["metadata"]
    assert not frames[0].metadata.HasField("visualization")


def test_packing_respects_the_frame_limit_and_keeps_every_row() -> None:
    limit = 64 * 1024
    columns = (ev.Column("n", "long"), ev.Column("s", "string"))
    rows = [[i, "x" * (i % 700)] for i in range(2000)]
    events = [
        ev.TableSchema(ev.PRIMARY_RESULT, columns),
        ev.RowBatch(ev.PRIMARY_RESULT, "a", rows, True),
        ev.Metadata("a"),
        ev.Done(),
    ]
    encoder = FrameEncoder("r", max_frame_bytes=limit)
    raw = [data for event in events for data in encoder.encode(event)]
    assert max(len(data) for data in raw) <= limit
    frames = [Frame.FromString(data) for data in raw]
    batches = [f.batch for f in frames if f.WhichOneof("payload") == "batch"]
    assert len(batches) > 10
    # Packed up to the limit: every batch but the last is more than nearly full.
    assert all(len(data) > limit - 800 for data in raw[1 : len(batches)])
    assert [b.is_iteration_complete for b in batches] == [False] * (len(batches) - 1) + [True]
    got = [decode_value(row.values[0]) for b in batches for row in b.rows]
    assert got == list(range(2000))
    assert not frames[-2].metadata.warnings


def test_default_limit_is_under_four_mebibytes() -> None:
    assert MAX_FRAME_BYTES <= 4 * 1024 * 1024
    columns = (ev.Column("s", "string"),)
    rows = [["y" * 100_000] for _ in range(100)]  # ~10 MB in one event
    encoder = FrameEncoder("r")
    list(encoder.encode(ev.TableSchema("T", columns)))
    raw = list(encoder.encode(ev.RowBatch("T", "i", rows, False)))
    assert len(raw) == 3
    assert all(len(data) <= MAX_FRAME_BYTES for data in raw)
    assert sum(len(Frame.FromString(d).batch.rows) for d in raw) == 100
    assert not any(Frame.FromString(d).batch.is_iteration_complete for d in raw)


def test_a_row_too_large_for_any_frame_is_dropped_with_a_warning() -> None:
    limit = 10_000
    columns = (ev.Column("s", "string"),)
    rows = [["small"], ["z" * 20_000], ["tail"]]
    frames = encode_all(
        [
            ev.TableSchema("T", columns),
            ev.RowBatch("T", "i1", rows, True),
            ev.Metadata("i1"),
            ev.RowBatch("T", "i2", [["again"]], True),
            ev.Metadata("i2"),
        ],
        max_frame_bytes=limit,
    )
    assert payloads(frames) == ["schema", "batch", "metadata", "batch", "metadata"]
    assert [decode_value(r.values[0]) for r in frames[1].batch.rows] == ["small", "tail"]
    warnings = frames[2].metadata.warnings
    assert [w.kind for w in warnings] == ["ResultTruncated"]
    assert "1 row(s) of table T" in warnings[0].message
    # The next snapshot's metadata replaces the previous one whole: no stale warning.
    assert not frames[4].metadata.warnings


def test_multi_table_and_iterations_keep_their_names() -> None:
    cols = (ev.Column("c", "long"),)
    events: list[ev.Event] = [
        ev.TableSchema(ev.PRIMARY_RESULT, cols),
        ev.TableSchema("Totals", cols),
        ev.RowBatch(ev.PRIMARY_RESULT, "s1", [[1]], True),
        ev.RowBatch("Totals", "s1", [[10]], True),
        ev.Metadata("s1"),
        ev.RowBatch(ev.PRIMARY_RESULT, "s2", [[2]], True),
        ev.RowBatch("Totals", "s2", [], True),
        ev.Metadata("s2"),
        ev.Done(),
    ]
    frames = encode_all(events)
    assert [f.schema.name for f in frames[:2]] == ["PrimaryResult", "Totals"]
    batches = [
        (f.batch.table_name, f.batch.result_iteration_id, len(f.batch.rows))
        for f in frames
        if f.WhichOneof("payload") == "batch"
    ]
    assert batches == [
        ("PrimaryResult", "s1", 1),
        ("Totals", "s1", 1),
        ("PrimaryResult", "s2", 1),
        ("Totals", "s2", 0),
    ]


def test_a_deeply_nested_dynamic_value_decodes_with_its_deep_part_as_json_text() -> None:
    # 500 levels of bags failed every client's protobuf decoding (depth limit 100).
    value: object = 1
    for _ in range(500):
        value = {"a": value}
    columns = (ev.Column("d", "dynamic"),)
    frames = encode_all(
        [ev.TableSchema("T", columns), ev.RowBatch("T", "i", [[value]], True), ev.Done()]
    )
    cell = frames[1].batch.rows[0].values[0]
    depth = 0
    while cell.WhichOneof("value") == "bag_value":
        cell, depth = cell.bag_value.properties["a"], depth + 1
    assert depth == MAX_DYNAMIC_DEPTH
    assert cell.string_value == '{"a":' * (500 - depth) + "1" + "}" * (500 - depth)
