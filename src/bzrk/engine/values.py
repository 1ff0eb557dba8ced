"""Arrow results → the Python values of :mod:`bzrk.engine.events`, column by column.

The KQL type of each column (from the compiler's result schema) decides the conversion, not
the Arrow type: ClickHouse returns bools as ``UInt8``, dynamic values as JSON text (or
``extension<arrow.json>`` for ``JSON`` columns), datetimes as ``timestamp[ns]`` and guids as
``extension<arrow.uuid>``.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Sequence
from decimal import Context, Decimal
from typing import Any

import pyarrow as pa

from bzrk.engine.events import NANOS_PER_TICK, Column

Converter = Callable[[Any], Any]


def _to_bool(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, str):
        return v.lower() == "true"
    return bool(v)


def _to_int(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return None
        return int(v)
    if isinstance(v, Decimal):
        return int(v)
    return int(v)


def _to_real(v: Any) -> Any:
    if v is None:
        return None
    return float(v)


_WIDE = Context(prec=100)


def _to_decimal(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, Decimal):
        # Strip the fixed scale ClickHouse gives (1.5000000000 → 1.5), in a context wide
        # enough for all of its digits (the default 28 rounds 29-digit decimals).
        return Decimal(format(v.normalize(_WIDE), "f"))
    return Decimal(str(v))


def _to_string(v: Any) -> Any:
    # NULL only for an absent stored field (issue 20): KQL's own strings are never null.
    if v is None:
        return None
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    return str(v)


def _to_guid(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, bytes) and len(v) == 16:
        return str(uuid.UUID(bytes=v))
    text = str(v)
    return text.lower() if text else None


def _to_dynamic(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, bytes):
        v = v.decode("utf-8", errors="replace")
    if isinstance(v, str):
        if v == "":
            return None
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


_CONVERTERS: dict[str, Converter] = {
    "bool": _to_bool,
    "int": _to_int,
    "long": _to_int,
    "real": _to_real,
    "decimal": _to_decimal,
    "string": _to_string,
    "timespan": _to_int,
    "guid": _to_guid,
    "dynamic": _to_dynamic,
}


def _timestamp_ticks(array: pa.Array) -> list[Any]:
    unit = array.type.unit
    per_unit = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[unit]
    ints = array.cast(pa.int64()).to_pylist()
    out: list[Any] = []
    for value in ints:
        if value is None:
            out.append(None)
        else:
            nanos = value * per_unit
            out.append(nanos // NANOS_PER_TICK)
    return out


def _storage(array: pa.Array) -> pa.Array:
    if isinstance(array.type, pa.ExtensionType):
        return array.storage
    return array


def column_values(array: pa.Array | pa.ChunkedArray, kql_type: str) -> list[Any]:
    """Convert one Arrow column to the event values of ``kql_type``.

    >>> column_values(pa.array([1, 0, None], pa.uint8()), "bool")
    [True, False, None]
    """
    if isinstance(array, pa.ChunkedArray):
        out: list[Any] = []
        for chunk in array.chunks:
            out.extend(column_values(chunk, kql_type))
        return out
    if kql_type == "datetime":
        if pa.types.is_timestamp(array.type):
            return _timestamp_ticks(array)
        if pa.types.is_date(array.type):
            return _timestamp_ticks(array.cast(pa.timestamp("s")))
        return [_to_int(v) for v in array.to_pylist()]
    if kql_type == "guid" and isinstance(array.type, pa.ExtensionType):
        return [None if b is None else str(uuid.UUID(bytes=b)) for b in _storage(array).to_pylist()]
    convert = _CONVERTERS[kql_type]
    storage = _storage(array)
    try:
        values = storage.to_pylist()
    except UnicodeDecodeError:
        # ClickHouse strings are bytes; text that is not UTF-8 is shown with replacement marks.
        values = storage.cast(pa.binary()).to_pylist()
    return [convert(v) for v in values]


def table_rows(table: pa.Table | pa.RecordBatch, columns: Sequence[Column]) -> list[list[Any]]:
    """Convert an Arrow table or batch to rows, typed by ``columns`` (same order as the table)."""
    converted = [column_values(table.column(i), column.type) for i, column in enumerate(columns)]
    return [list(row) for row in zip(*converted, strict=True)] if converted else []
