"""Rows → Arrow for inserts: the columns hold exactly the values given, nulls included."""

from __future__ import annotations

import time

import pyarrow as pa

from bzrk.storage.writer import ROW_FIELDS, column_array, rows_to_arrow


def test_timestamps_from_int_nanoseconds_keep_every_nanosecond_and_null() -> None:
    dtype = dict(ROW_FIELDS)["timestamp"]
    now = time.time_ns()
    values = [now, now - 1, None, 946_684_800_000_000_001]
    array = column_array(values, dtype)
    assert array.type == dtype
    assert array.cast(pa.int64()).to_pylist() == values
    assert array.equals(pa.array(values, type=dtype))  # what the slow path makes


def test_rows_to_arrow_types_every_present_field() -> None:
    now = time.time_ns()
    table = rows_to_arrow(
        [{"timestamp": now, "body": "a", "attributes": "{}"}, {"timestamp": now + 5, "body": None}]
    )
    assert table.column_names == ["timestamp", "body", "attributes"]
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [now, now + 5]
    assert table.column("attributes").to_pylist() == ["{}", "{}"]  # a missing bag is empty
    assert table.schema.field("timestamp").type == dict(ROW_FIELDS)["timestamp"]
