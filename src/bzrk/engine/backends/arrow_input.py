"""The ClickHouse structure an Arrow table is read with by ``input()`` (or ``file()``).

An INSERT into a table with ``JSON`` columns from Arrow data must not let the Arrow reader turn
text into JSON: ClickHouse's Arrow input casts text to a JSON column with the default input
settings whatever the INSERT sets, so a string attribute "2024-01-01" would be stored as a
``Date`` (storage/schema.py INSERT_SETTINGS). Read as this structure instead, every text stays
``String``, and the ``INSERT … SELECT`` casts it to the column's type under the INSERT's
settings.

>>> input_structure(pa.schema([("body", pa.string()), ("tags", pa.list_(pa.string()))]))
'`body` Nullable(String), `tags` Array(String)'
"""

from __future__ import annotations

import pyarrow as pa

from bzrk.engine.sql import quote_identifier, quote_string

_SCALARS: dict[pa.DataType, str] = {
    pa.string(): "String",
    pa.large_string(): "String",
    pa.bool_(): "Bool",
    pa.uint8(): "UInt8",
    pa.uint16(): "UInt16",
    pa.uint32(): "UInt32",
    pa.uint64(): "UInt64",
    pa.int8(): "Int8",
    pa.int16(): "Int16",
    pa.int32(): "Int32",
    pa.int64(): "Int64",
    pa.float32(): "Float32",
    pa.float64(): "Float64",
}


def clickhouse_type(dtype: pa.DataType) -> str:
    """The ClickHouse type an Arrow value is read as (not nullable: see :func:`input_structure`)."""
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return f"Array({clickhouse_type(dtype.value_type)})"
    if pa.types.is_timestamp(dtype):
        return f"DateTime64(9, {quote_string(dtype.tz or 'UTC')})"
    if pa.types.is_fixed_size_binary(dtype):
        return f"FixedString({dtype.byte_width})"
    try:
        return _SCALARS[dtype]
    except KeyError:
        raise ValueError(f"no ClickHouse input type for Arrow type {dtype}") from None


def input_structure(schema: pa.Schema) -> str:
    """``input()``'s structure argument for ``schema``: scalars nullable, arrays not (ClickHouse
    has no nullable array; bzrk's writer gives an absent array as ``[]``)."""
    columns = []
    for field in schema:
        ch_type = clickhouse_type(field.type)
        if not ch_type.startswith("Array("):
            ch_type = f"Nullable({ch_type})"
        columns.append(f"{quote_identifier(field.name)} {ch_type}")
    return ", ".join(columns)
