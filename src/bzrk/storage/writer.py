"""Durable writes of mapped rows into a bzrk table: rows → one Arrow table → one INSERT.

A row is a ``dict`` keyed by column name holding only the fields it has: datetimes as int
nanoseconds since the Unix epoch, bags (``resource``, ``attributes``, ``scope``) as JSON text,
``events``/``links`` as lists of JSON text. The INSERT returns after ClickHouse has written and
fsync'd the part (the table's ``fsync_after_insert``), which is what an acknowledgement waits for.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bzrk.engine.backends.base import Backend
from bzrk.engine.errors import EngineError
from bzrk.storage.schema import (
    FIELDS,
    HEX_IDS,
    INSERT_SETTINGS,
    id_bytes_column,
    id_text_column,
)

Row = dict[str, object]


class WriteError(Exception):
    """Rows could not be written; nothing of the batch should be acknowledged."""


_SCALARS: dict[str, pa.DataType] = {
    "String": pa.string(),
    "JSON": pa.string(),
    "UInt8": pa.uint8(),
    "UInt32": pa.uint32(),
    "UInt64": pa.uint64(),
    "Int32": pa.int32(),
    "Int64": pa.int64(),
    "Float64": pa.float64(),
    "Bool": pa.bool_(),
}
_WRAPPER = re.compile(r"^(?:Nullable|LowCardinality)\((.*)\)$")


def arrow_type(ch_type: str) -> pa.DataType:
    """The Arrow type that inserts into ClickHouse type ``ch_type``."""
    while match := _WRAPPER.match(ch_type):
        ch_type = match.group(1)
    if ch_type.startswith("DateTime64"):
        return pa.timestamp("ns", tz="UTC")
    if ch_type.startswith("Array("):
        return pa.list_(arrow_type(ch_type[6:-1]))
    if ch_type.startswith("JSON"):
        return pa.string()
    return _SCALARS[ch_type]


# Defaults for non-nullable columns when a row lacks the field.
_DEFAULTS: dict[str, object] = {}
for _column in FIELDS:
    if _column.ch_type.startswith("Array("):
        _DEFAULTS[_column.name] = []
    elif _column.ch_type.startswith("JSON"):
        _DEFAULTS[_column.name] = "{}"


def column_array(values: list[object], dtype: pa.DataType) -> pa.Array:
    """``values`` (Python scalars, None for null) as an Arrow array of ``dtype``.

    Timestamps are given as int nanoseconds: they are built as int64 and viewed as the
    timestamp type (the same bits). pyarrow converts distinct Python ints into a time-zoned
    timestamp type ~100× slower (2.2 µs a value against 0.02: a third of the log mapping's
    time at ingest).
    """
    if pa.types.is_timestamp(dtype):
        return pa.array(values, type=pa.int64()).view(dtype)
    return pa.array(values, type=dtype)


ROW_FIELDS: tuple[tuple[str, pa.DataType], ...] = tuple(
    (c.name, arrow_type(c.ch_type)) for c in FIELDS
)


def rows_to_arrow(rows: list[Row]) -> pa.Table:
    """Columns of ``rows`` as one Arrow table; columns no row has are left out of the insert."""
    present = set().union(*rows)
    arrays: list[pa.Array] = []
    names: list[str] = []
    for name, dtype in ROW_FIELDS:
        if name not in present:
            continue
        default = _DEFAULTS.get(name)
        arrays.append(column_array([row.get(name, default) for row in rows], dtype))
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def concat_for_insert(tables: list[pa.Table]) -> pa.Table:
    """Tables shaped like :func:`rows_to_arrow`'s as one, as if their rows had been one list.

    A column only some tables have is filled in the others as a missing field is: null, or
    the column's default (``[]`` for arrays, ``{}`` for bags).
    """
    if len(tables) == 1:
        return tables[0]
    present = set().union(*(t.column_names for t in tables))
    fields = [(name, dtype) for name, dtype in ROW_FIELDS if name in present]
    shaped: list[pa.Table] = []
    for table in tables:
        arrays: list[pa.Array | pa.ChunkedArray] = []
        for name, dtype in fields:
            if name in table.column_names:
                arrays.append(table.column(name))
            elif (default := _DEFAULTS.get(name)) is None:
                arrays.append(pa.nulls(table.num_rows, dtype))
            else:
                arrays.append(pa.array([default] * table.num_rows, type=dtype))
        shaped.append(pa.Table.from_arrays(arrays, names=[name for name, _ in fields]))
    return pa.concat_tables(shaped)


def write_rows(backend: Backend, qualified_table: str, rows: list[Row]) -> int:
    """Insert ``rows`` into ``qualified_table`` and return how many were written."""
    if not rows:
        return 0
    return write_arrow(backend, qualified_table, rows_to_arrow(rows))


def write_arrow(backend: Backend, qualified_table: str, table: pa.Table) -> int:
    """Insert an Arrow table shaped like :func:`rows_to_arrow`'s and return how many rows it had.

    For writers that build columns directly (the benchmark's dataset builder); ``write_rows``
    is this after its row → column step.
    """
    if table.num_rows == 0:
        return 0
    try:
        backend.insert_arrow(qualified_table, stored_shape(table), settings=INSERT_SETTINGS)
    except EngineError as exc:
        raise WriteError(f"insert into {qualified_table} failed: {exc.message}") from exc
    return table.num_rows


# Hex digit value of each byte (16: not a lowercase hex digit).
_NIBBLE = np.full(256, 16, dtype=np.uint8)
_NIBBLE[np.frombuffer(b"0123456789abcdef", dtype=np.uint8)] = np.arange(16, dtype=np.uint8)


def split_hex_id(values: pa.Array | pa.ChunkedArray, width: int) -> tuple[pa.Array, pa.Array]:
    """Ids as hex text → (their bytes, ``fixed_size_binary(width)``; their text, ``string``).

    A value of exactly ``2 * width`` lowercase hex digits goes to the bytes (its text is null);
    any other value (free-text ingest writes anything) stays text, its bytes null, so reading
    ``schema.hex_id_expression`` gives back every value as written.
    """
    text = pc.cast(values, pa.string())
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    n = len(text)
    canonical = np.zeros(n, dtype=bool)
    sized = pc.fill_null(pc.equal(pc.binary_length(text), 2 * width), False).to_numpy(
        zero_copy_only=False
    )
    candidates = pc.filter(text, pa.array(sized))
    digits = np.empty((0, 2 * width), dtype=np.uint8)
    if len(candidates):
        offsets = np.frombuffer(candidates.buffers()[1], dtype=np.int32)[candidates.offset :]
        data = np.frombuffer(candidates.buffers()[2], dtype=np.uint8)
        digits = _NIBBLE[data[offsets[0] : offsets[len(candidates)]]].reshape(-1, 2 * width)
        hexadecimal = (digits < 16).all(axis=1)
        canonical[np.flatnonzero(sized)[hexadecimal]] = True
        digits = digits[hexadecimal]
    packed = (digits[:, 0::2] << 4) | digits[:, 1::2]
    positions = np.cumsum(canonical) - 1
    ids = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), len(packed), [None, pa.py_buffer(packed.tobytes())]
    )
    as_bytes = ids.take(pa.array(positions, mask=~canonical))
    as_text = pc.if_else(pa.array(canonical), pa.scalar(None, pa.string()), text)
    return as_bytes, as_text


def stored_shape(table: pa.Table) -> pa.Table:
    """A table of record fields (``ROW_FIELDS``) as the ClickHouse table stores them: each id
    of ``schema.HEX_IDS`` as its bytes and text columns (:func:`split_hex_id`)."""
    for name, width in HEX_IDS.items():
        if name not in table.column_names:
            continue
        position = table.column_names.index(name)
        as_bytes, as_text = split_hex_id(table.column(name), width)
        table = table.remove_column(position)
        table = table.add_column(position, id_text_column(name), as_text)
        table = table.add_column(position, id_bytes_column(name), as_bytes)
    return table
