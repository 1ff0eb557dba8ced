"""KQL values and type names as the Kusto wire formats spell them (adx.md §7-§8).

One table, ``TYPES``, names each KQL type three ways (the Kusto ``ColumnType``, the v1 .NET
``DataType`` and the schema JSON's ``System.*`` name) and holds the cell encoder; rows are
turned into JSON text by :class:`RowEncoder`, built once per table.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

from bzrk.engine.events import TICKS_PER_SECOND, Column

_EPOCH = datetime(1970, 1, 1)  # naive UTC: isoformat() then has no offset
_TICKS_PER_MINUTE = 60 * TICKS_PER_SECOND
_TICKS_PER_HOUR = 60 * _TICKS_PER_MINUTE
_TICKS_PER_DAY = 24 * _TICKS_PER_HOUR
_INF = math.inf


def encode_datetime(ticks: int | None) -> str | None:
    """Ticks since the Unix epoch → ``2024-01-02T03:04:05.1234567Z`` (trailing zeros trimmed).

    >>> encode_datetime(17_040_672_451_234_560)
    '2024-01-01T00:00:45.123456Z'
    """
    if ticks is None:
        return None
    seconds, fraction = divmod(int(ticks), TICKS_PER_SECOND)
    text = _second_text(seconds)
    if text is None:
        return None  # outside 0001-9999: no ISO form exists, so it reads as missing
    if fraction:
        return f"{text}.{fraction:07d}".rstrip("0") + "Z"
    return text + "Z"


@lru_cache(maxsize=8192)
def _second_text(seconds: int) -> str | None:
    # Result rows cluster in time: the same second recurs, so its text is cached.
    try:
        return (_EPOCH + timedelta(seconds=seconds)).isoformat()
    except OverflowError:
        return None


def encode_timespan(ticks: int | None) -> str | None:
    """Ticks → ``[-][d.]hh:mm:ss[.fffffff]`` (the .NET "c" form the SDKs' regexes read).

    >>> encode_timespan(36_000_000_001), encode_timespan(-1)
    ('01:00:00.0000001', '-00:00:00.0000001')
    """
    if ticks is None:
        return None
    ticks = int(ticks)
    sign = "-" if ticks < 0 else ""
    days, rest = divmod(abs(ticks), _TICKS_PER_DAY)
    hours, rest = divmod(rest, _TICKS_PER_HOUR)
    minutes, rest = divmod(rest, _TICKS_PER_MINUTE)
    seconds, fraction = divmod(rest, TICKS_PER_SECOND)
    text = f"{sign}{days}." if days else sign
    text += f"{hours:02d}:{minutes:02d}:{seconds:02d}"
    return f"{text}.{fraction:07d}" if fraction else text


def encode_real(value: float | None) -> float | str | None:
    if value is None:
        return None
    value = float(value)
    if value != value:
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    return value


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _wrap(value: int, bits: int) -> int:
    """Two's-complement reinterpretation: a UInt64 hash keeps its identity as a long."""
    half = 1 << (bits - 1)
    return ((value + half) % (1 << bits)) - half


def encode_long(value: Any) -> int | None:
    # Grafana parses long strictly (3.0 fails) and the Python SDK's streaming parser stops at
    # integers outside int64, so values are integral and in range.
    if value is None:
        return None
    if type(value) is not int:
        value = int(value)
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    return _wrap(value, 64)


def encode_int(value: Any) -> int | None:
    if value is None:
        return None
    if type(value) is not int:
        value = int(value)
    if _INT32_MIN <= value <= _INT32_MAX:
        return value
    return _wrap(value, 32)


def _int64_safe(value: Any) -> Any:
    """A dynamic value whose integers fit int64 (larger ones become reals, as in Kusto)."""
    if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX:
        return float(value)
    if isinstance(value, dict):
        return {k: _int64_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_int64_safe(v) for v in value]
    return value


# 19+ digits may be an integer beyond int64; only then is the chunk walked (rare, cheap test).
_LONG_DIGITS = re.compile(r"\d{19}")


def encode_bool(value: Any) -> bool | None:
    if value is None or type(value) is bool:
        return value
    return bool(value)


def encode_decimal(value: Any) -> str | None:
    if value is None:
        return None
    number = value if isinstance(value, Decimal) else Decimal(str(value))
    return format(number, "f") if number.is_finite() else str(number)


def encode_string(value: Any) -> str | None:
    # None only for an absent stored field (issue 20); KQL's own strings are never null.
    return None if value is None else str(value)


def encode_guid(value: Any) -> str | None:
    return None if value is None else str(value)


def encode_dynamic(value: Any) -> Any:
    return value


@dataclass(frozen=True, slots=True)
class KustoType:
    column_type: str  # Kusto name, v1/v2 ``ColumnType``
    data_type: str  # v1 ``DataType`` (.NET short name) in query results
    clr_type: str  # ``Type`` in schema JSON
    encode: Callable[[Any], Any] | None  # None: the Python value is already the JSON value


# Change together with bzrk.engine.events.KQL_TYPE_NAMES.
TYPES: dict[str, KustoType] = {
    "bool": KustoType("bool", "SByte", "System.SByte", encode_bool),
    "int": KustoType("int", "Int32", "System.Int32", encode_int),
    "long": KustoType("long", "Int64", "System.Int64", encode_long),
    "real": KustoType("real", "Double", "System.Double", encode_real),
    "decimal": KustoType("decimal", "Decimal", "System.Data.SqlTypes.SqlDecimal", encode_decimal),
    "string": KustoType("string", "String", "System.String", encode_string),
    "datetime": KustoType("datetime", "DateTime", "System.DateTime", encode_datetime),
    "timespan": KustoType("timespan", "TimeSpan", "System.TimeSpan", encode_timespan),
    "guid": KustoType("guid", "Guid", "System.Guid", encode_guid),
    "dynamic": KustoType("dynamic", "Object", "System.Object", None),
}


def kusto_type(kql_type: str) -> KustoType:
    return TYPES.get(kql_type, TYPES["dynamic"])


def v2_columns(columns: Sequence[Column]) -> list[dict[str, str]]:
    return [{"ColumnName": c.name, "ColumnType": kusto_type(c.type).column_type} for c in columns]


def v1_columns(columns: Sequence[Column], *, bool_data_type: str = "SByte") -> list[dict[str, str]]:
    """v1 columns carry both names: JS reads ``ColumnType``, older readers ``DataType``."""
    out = []
    for c in columns:
        kind = kusto_type(c.type)
        data_type = bool_data_type if kind.column_type == "bool" else kind.data_type
        out.append({"ColumnName": c.name, "DataType": data_type, "ColumnType": kind.column_type})
    return out


def _finite(value: Any) -> Any:
    """A dynamic value with non-finite floats spelled as strings (JSON has no NaN)."""
    if isinstance(value, float):
        return encode_real(value)
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, Decimal):
        return encode_decimal(value)
    return value


def _json_default(value: Any) -> Any:
    """Objects outside the event contract still get a faithful text form, never a crash."""
    if isinstance(value, Decimal):
        return encode_decimal(value)
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.isoformat() + "Z"
    if isinstance(value, timedelta):
        return encode_timespan(
            (value.days * 86_400 + value.seconds) * TICKS_PER_SECOND + value.microseconds * 10
        )
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


_dumps = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_json_default
).encode


def dumps(value: Any) -> str:
    """Compact JSON text; non-finite floats anywhere become ``"NaN"``/``"Infinity"`` strings."""
    try:
        return _dumps(value)
    except (ValueError, TypeError):
        return _dumps(_finite(value))


def _lenient(encoder: Callable[[Any], Any], value: Any) -> Any:
    try:
        return encoder(value)
    except (TypeError, ValueError, ArithmeticError):
        return value  # serialized by _json_default


class RowEncoder:
    """Turns rows of one table into JSON array text, one encoder per column."""

    def __init__(self, columns: Sequence[Column]) -> None:
        self._encoders = [kusto_type(c.type).encode for c in columns]
        self._dynamic = any(kusto_type(c.type).column_type == "dynamic" for c in columns)
        self._plain = all(e is None for e in self._encoders)

    def cells(self, row: Sequence[Any]) -> list[Any]:
        if self._plain:
            return list(row)
        return [
            v if e is None else _lenient(e, v) for e, v in zip(self._encoders, row, strict=False)
        ]

    def encode(self, row: Sequence[Any]) -> str:
        cells = self.cells(row)
        return dumps(_int64_safe(cells) if self._dynamic else cells)

    def encode_many(self, rows: Iterable[Sequence[Any]]) -> str:
        """Rows joined by commas (no brackets), so callers can stream a ``Rows`` array."""
        rows = list(rows)
        if not rows:
            return ""
        if self._plain:
            cells: list[Any] = rows
        else:
            # Column-wise: one C-level map per column beats a Python call per cell and branch.
            columns: list[Any] = list(zip(*rows, strict=False))
            try:
                for i, encoder in enumerate(self._encoders):
                    if encoder is not None and i < len(columns):
                        columns[i] = list(map(encoder, columns[i]))
            except (TypeError, ValueError, ArithmeticError):
                # A value off the event contract (say a datetime object): the slow, lenient path.
                return ",".join(self.encode(row) for row in rows)
            cells = list(zip(*columns, strict=False))
        try:
            text = _dumps(cells)[1:-1]  # one C-encoder pass for the whole chunk
        except (ValueError, TypeError):
            text = ",".join(dumps(row) for row in cells)
        if self._dynamic and _LONG_DIGITS.search(text):
            return ",".join(dumps(_int64_safe(row)) for row in cells)
        return text
