"""Encodes the engine's result stream (:mod:`bzrk.engine.events`) as ``ExecuteQueryResultFrame`` bytes.

One :class:`FrameEncoder` per call turns each event into zero or more serialized frames:

* ``TableSchema`` → a ``schema`` frame (guid columns are reported as STRING, as the official
  clients expect; decimal as REAL).
* ``RowBatch`` → ``batch`` frames packed up to :data:`MAX_FRAME_BYTES` each; only the last frame
  of an event carries ``is_iteration_complete``. A row that cannot fit in a frame on its own is
  dropped and reported as a ``ResultTruncated`` warning in that snapshot's ``metadata`` frame.
* ``Progress`` → ``progress``; ``Metadata`` → ``metadata``; ``Done`` → ``done``;
  ``Error`` → ``error``.

Batch frames are assembled from individually serialized rows (protobuf's own encoding of each
``ValueRow``) so their exact size is known before a row is added.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from bzrk.api.grpc._pb import dynamic_value_pb2 as dv
from bzrk.api.grpc._pb import query_pb2 as pb
from bzrk.engine import events as ev

# grpcio and grpc-js refuse received messages over 4 MiB by default; stay a little under.
MAX_FRAME_BYTES = 4 * 1024 * 1024 - 4096

COLUMN_TYPES: dict[str, pb.ColumnType] = {
    "bool": pb.COLUMN_TYPE_BOOL,
    "int": pb.COLUMN_TYPE_INT,
    "long": pb.COLUMN_TYPE_LONG,
    "real": pb.COLUMN_TYPE_REAL,
    "decimal": pb.COLUMN_TYPE_REAL,
    "string": pb.COLUMN_TYPE_STRING,
    "datetime": pb.COLUMN_TYPE_DATETIME,
    "timespan": pb.COLUMN_TYPE_TIMESPAN,
    "guid": pb.COLUMN_TYPE_STRING,
    "dynamic": pb.COLUMN_TYPE_DYNAMIC,
}

_UINT64_LIMIT = 1 << 64
_INT64_MIN, _INT64_LIMIT = -(1 << 63), 1 << 63

CellSetter = Callable[[dv.BqlValue, Any], None]


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length_delimited(field_number: int, payload: bytes) -> bytes:
    return _varint(field_number << 3 | 2) + _varint(len(payload)) + payload


# --- cell values ----------------------------------------------------------------------------


# Nesting of arrays and bags encoded as such: each level is about three protobuf messages, and
# protobuf decoders stop at 100 (a 500-deep parse_json result failed every client's decoding).
# A value nested deeper is sent as its JSON text.
MAX_DYNAMIC_DEPTH = 24


def set_dynamic(cell: dv.BqlValue, value: Any, depth: int = 0) -> None:
    """Encode a JSON value (``dynamic``) into ``cell``, recursively for arrays and bags."""
    if depth >= MAX_DYNAMIC_DEPTH and isinstance(value, Mapping | list | tuple):
        cell.string_value = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    elif value is None:
        cell.null_value = True
    elif isinstance(value, bool):
        cell.bool_value = value
    elif isinstance(value, int):
        if _INT64_MIN <= value < _INT64_LIMIT:
            cell.long_value = value
        else:
            cell.real_value = float(value)
    elif isinstance(value, float | Decimal):
        cell.real_value = float(value)
    elif isinstance(value, str):
        cell.string_value = value
    elif isinstance(value, Mapping):
        bag = cell.bag_value
        bag.SetInParent()  # an empty bag is still a bag, not an unset cell
        for key, item in value.items():
            set_dynamic(bag.properties[str(key)], item, depth + 1)
    elif isinstance(value, list | tuple):
        array = cell.array_value
        array.SetInParent()
        for item in value:
            set_dynamic(array.values.add(), item, depth + 1)
    else:
        cell.string_value = str(value)


def _set_bool(cell: dv.BqlValue, value: Any) -> None:
    cell.bool_value = bool(value)


def _set_int(cell: dv.BqlValue, value: Any) -> None:
    cell.int_value = value


def _set_long(cell: dv.BqlValue, value: Any) -> None:
    cell.long_value = value


def _set_real(cell: dv.BqlValue, value: Any) -> None:
    cell.real_value = float(value)


def _set_string(cell: dv.BqlValue, value: Any) -> None:
    cell.string_value = value


def _set_datetime(cell: dv.BqlValue, value: Any) -> None:
    # Events carry 100 ns ticks since the Unix epoch; the wire wants Unix nanoseconds in a
    # uint64, which cannot hold instants before 1970 or after 2554: those become null.
    nanos = value * ev.NANOS_PER_TICK
    if 0 <= nanos < _UINT64_LIMIT:
        cell.datetime_value = nanos
    else:
        cell.null_value = True


def _set_timespan(cell: dv.BqlValue, value: Any) -> None:
    cell.timespan_value = value


def _set_guid(cell: dv.BqlValue, value: Any) -> None:
    cell.string_value = str(value)


_SETTERS: dict[str, CellSetter] = {
    "bool": _set_bool,
    "int": _set_int,
    "long": _set_long,
    "real": _set_real,
    "decimal": _set_real,
    "string": _set_string,
    "datetime": _set_datetime,
    "timespan": _set_timespan,
    "guid": _set_guid,
    "dynamic": set_dynamic,
}


class RowEncoder:
    """Serializes rows of one table as ``ValueRow`` messages, column encoders chosen once."""

    def __init__(self, columns: Sequence[ev.Column]) -> None:
        self.width = len(columns)
        self._setters = [_SETTERS.get(column.type, set_dynamic) for column in columns]

    def encode(self, row: Sequence[Any]) -> bytes:
        message = pb.ValueRow()
        cells = message.values
        for setter, value in zip(self._setters, row, strict=False):
            cell = cells.add()
            if value is None:
                # An absent stored field, a string too (issue 20: absent reads as null).
                cell.null_value = True
                continue
            try:
                setter(cell, value)
            except (TypeError, ValueError, OverflowError):
                # A value outside its column type's range (e.g. an int past int32) keeps its
                # value through the dynamic encoding instead of failing the whole result.
                cell.Clear()
                set_dynamic(cell, value)
        for _ in range(self.width - len(row)):
            cells.add(null_value=True)
        return message.SerializeToString()


# --- frames ---------------------------------------------------------------------------------


def _location(location: ev.Location, into: pb.Location) -> None:
    into.start_byte = max(0, location.start_byte)
    into.end_byte = max(0, location.end_byte)
    into.start_line = max(0, location.start_line)
    into.start_column = max(0, location.start_column)
    into.end_line = max(0, location.end_line)
    into.end_column = max(0, location.end_column)


def _u64(value: int | float) -> int:
    return min(max(0, int(value)), _UINT64_LIMIT - 1)


def encode_progress(progress: ev.Progress, into: pb.Progress) -> None:
    """Fill ``into`` with what the engine measured; unknown figures stay zero/unset."""
    into.rows_processed = _u64(progress.rows_processed)
    into.chunks_total = _u64(progress.chunks_total)
    into.chunks_scanned = _u64(progress.chunks_scanned)
    into.chunks_skipped_range = _u64(progress.chunks_skipped_range)
    into.chunks_skipped_bloom = _u64(progress.chunks_skipped_bloom)
    into.chunks_skipped_shard = _u64(progress.chunks_skipped_shard)
    into.chunk_scanned_raw_body_size = _u64(progress.chunk_scanned_raw_body_size)
    into.chunk_scanned_compressed_size = _u64(progress.chunk_scanned_compressed_size)
    into.chunk_skipped_compressed_size = _u64(progress.chunk_skipped_compressed_size)
    into.query_time_nanos = _u64(progress.query_time_nanos)
    if progress.queue_wait_nanos is not None:
        into.queue_wait_nanos = _u64(progress.queue_wait_nanos)
    into.merge_time_nanos = _u64(progress.merge_time_nanos)
    into.merge_count = _u64(progress.merge_count)
    into.snapshot_build_time_nanos = _u64(progress.snapshot_build_time_nanos)
    into.snapshot_build_count = _u64(progress.snapshot_build_count)
    if progress.planning_segments_total:
        into.planning_progress.segments_done = _u64(progress.planning_segments_done)
        into.planning_progress.segments_total = _u64(progress.planning_segments_total)
    if progress.bin_progress is not None:
        bins = progress.bin_progress
        into.bin_progress.first_bin_start = bins.first_bin_start
        into.bin_progress.bin_span = _u64(bins.bin_span)
        into.bin_progress.completion_percentages = bytes(bins.completion_percentages)
        into.bin_progress.overall_done = _u64(bins.overall_done)
        into.bin_progress.overall_total = _u64(bins.overall_total)
    for key, value in progress.custom_stats.items():
        into.custom_stats[key] = _u64(value)
    into.short_circuit_completion = progress.short_circuit
    # Slices are bzrk's unit of progressive work, and coverage (the share of the window
    # scanned, moving while a slice runs) has no field either: real figures in custom_stats.
    if progress.slices_total:
        into.custom_stats["slices_done"] = _u64(progress.slices_done)
        into.custom_stats["slices_total"] = _u64(progress.slices_total)
        into.custom_stats["coverage_ppm"] = _u64(round(progress.coverage * 1_000_000))


def _warning(warning: ev.QueryWarning, into: pb.QueryWarning) -> None:
    into.operator_id = max(0, warning.operator_id)
    if warning.branch_index is not None:
        into.branch_index = max(0, warning.branch_index)
    into.kind = warning.kind
    if warning.location is not None:
        _location(warning.location, into.location)
    into.message = warning.message
    into.details = warning.details


def _partial_failure_message(failure: ev.PartialFailure) -> str:
    if failure.segment_count:
        noun = "segment" if failure.segment_count == 1 else "segments"
        return f"{failure.segment_count} {noun} could not be read: {failure.message}"
    return failure.message


class FrameEncoder:
    """Turns one call's events into serialized frames (see the module docstring)."""

    def __init__(self, request_id: str, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self.request_id = request_id
        self.max_frame_bytes = max_frame_bytes
        self._prefix = _length_delimited(1, request_id.encode()) if request_id else b""
        self._tables: dict[str, RowEncoder] = {}
        # (table, iteration) -> rows dropped because one row alone was over the frame limit.
        self._dropped: dict[tuple[str, str], int] = {}

    def _frame(self, **payload: Any) -> bytes:
        return pb.ExecuteQueryResultFrame(request_id=self.request_id, **payload).SerializeToString()

    def encode(self, event: ev.Event) -> Iterator[bytes]:
        if isinstance(event, ev.RowBatch):
            yield from self._batches(event)
        elif isinstance(event, ev.Progress):
            frame = pb.ExecuteQueryResultFrame(request_id=self.request_id)
            encode_progress(event, frame.progress)
            yield frame.SerializeToString()
        elif isinstance(event, ev.TableSchema):
            self._tables[event.table] = RowEncoder(event.columns)
            yield self._frame(schema=self.schema_message(event))
        elif isinstance(event, ev.Metadata):
            yield self._frame(metadata=self._metadata(event))
        elif isinstance(event, ev.Done):
            yield self._frame(done=pb.Completion())
        elif isinstance(event, ev.Error):
            yield self._frame(error=self.error_message(event))
        else:
            raise TypeError(f"not a result-stream event: {type(event).__name__}")

    @staticmethod
    def schema_message(schema: ev.TableSchema) -> pb.TableSchema:
        return pb.TableSchema(
            name=schema.table,
            columns=[
                pb.Column(
                    name=column.name,
                    type=COLUMN_TYPES.get(column.type, pb.COLUMN_TYPE_DYNAMIC),
                    nullable=True,
                )
                for column in schema.columns
            ],
        )

    @staticmethod
    def error_message(error: ev.Error) -> pb.Error:
        message = pb.Error(
            code=error.code,
            title=error.title or error.code,
            message=error.message,
            details=error.details,
        )
        if error.location is not None:
            _location(error.location, message.location)
        return message

    def _metadata(self, metadata: ev.Metadata) -> pb.ResultMetadata:
        message = pb.ResultMetadata()
        for failure in metadata.partial_failures:
            message.partial_failures.add(message=_partial_failure_message(failure))
        if metadata.visualization is not None:
            message.visualization.visualization_type = metadata.visualization.type
            message.visualization.properties.update(metadata.visualization.properties)
        for warning in metadata.warnings:
            _warning(warning, message.warnings.add())
        for (table, iteration), count in sorted(self._dropped.items()):
            if iteration != metadata.iteration_id:
                continue
            message.warnings.add(
                kind="ResultTruncated",
                message=(
                    f"{count} row(s) of table {table} were dropped: each alone is larger than "
                    f"the {self.max_frame_bytes} byte frame limit"
                ),
                details=f'{{"table": "{table}", "dropped_rows": {count}}}',
            )
        self._dropped = {
            key: n for key, n in self._dropped.items() if key[1] != metadata.iteration_id
        }
        return message

    def _batches(self, batch: ev.RowBatch) -> Iterator[bytes]:
        encoder = self._tables.get(batch.table)
        if encoder is None:
            raise ValueError(f"row batch for table {batch.table!r} before its schema")
        head = _length_delimited(1, batch.table.encode()) + _length_delimited(
            2, batch.iteration_id.encode()
        )
        # Fixed cost of a batch frame: request id, batch tag + length (<= 5 bytes), table and
        # iteration fields, and the 2-byte is_iteration_complete flag.
        fixed = len(self._prefix) + 1 + 5 + len(head) + 2
        budget = self.max_frame_bytes - fixed
        parts: list[bytes] = []
        used = 0
        for row in batch.rows:
            data = encoder.encode(row)
            field = b"\x1a" + _varint(len(data)) + data
            if len(field) > budget:
                key = (batch.table, batch.iteration_id)
                self._dropped[key] = self._dropped.get(key, 0) + 1
                continue
            if used + len(field) > budget:
                yield self._batch_frame(head, parts, complete=False)
                parts, used = [], 0
            parts.append(field)
            used += len(field)
        if parts or batch.iteration_complete:
            yield self._batch_frame(head, parts, complete=batch.iteration_complete)

    def _batch_frame(self, head: bytes, parts: list[bytes], *, complete: bool) -> bytes:
        body = b"".join([head, *parts, b"\x20\x01" if complete else b""])
        return b"".join([self._prefix, b"\x1a", _varint(len(body)), body])
