"""The comparator rules of ``kql-conformance/README.md``: expected ADX v2 values vs engine values.

Expected cells come in the ADX v2 JSON encoding (ISO datetimes, ``[d.]hh:mm:ss`` timespans,
``"NaN"`` tokens); engine cells are the event values of :mod:`bzrk.engine.events` (ticks for
datetime and timespan). Both sides are normalised per column type before comparing.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from bzrk.engine.events import TICKS_PER_SECOND

_TYPE_SPELLINGS = {
    "int64": "long",
    "int32": "int",
    "double": "real",
    "float": "real",
    "boolean": "bool",
    "sbyte": "bool",
    "object": "dynamic",
    "system.int64": "long",
    "system.int32": "int",
    "system.double": "real",
    "system.string": "string",
    "system.datetime": "datetime",
    "system.timespan": "timespan",
    "system.boolean": "bool",
    "system.object": "dynamic",
    "system.guid": "guid",
    "system.sbyte": "bool",
    "system.data.sqltypes.sqldecimal": "decimal",
    "date": "datetime",
    "time": "timespan",
    "uniqueid": "guid",
}

_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_DATETIME_RE = re.compile(
    r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?\s*$"
)
_TIMESPAN_RE = re.compile(r"^\s*(-)?(?:(\d+)\.)?(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?\s*$")


def normalize_type(name: str) -> str:
    key = name.strip().lower()
    return _TYPE_SPELLINGS.get(key, key)


def datetime_ticks(text: str) -> int | None:
    """Ticks since the Unix epoch of an ISO datetime (100 ns resolution kept)."""
    m = _DATETIME_RE.match(text)
    if not m:
        return None
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    hour = int(m.group(4) or 0)
    minute = int(m.group(5) or 0)
    second = int(m.group(6) or 0)
    frac = (m.group(7) or "")[:7].ljust(7, "0")
    days = dt.date(year, month, day).toordinal() - _EPOCH_ORDINAL
    ticks = ((days * 86400 + hour * 3600 + minute * 60 + second) * TICKS_PER_SECOND) + int(frac)
    zone = m.group(8)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = int(digits[:2]) * 3600 + int(digits[2:4]) * 60
        ticks -= sign * offset * TICKS_PER_SECOND
    return ticks


def timespan_ticks(text: str) -> int | None:
    m = _TIMESPAN_RE.match(text)
    if not m:
        return None
    days = int(m.group(2) or 0)
    hours, minutes = int(m.group(3)), int(m.group(4))
    seconds = int(m.group(5) or 0)
    frac = (m.group(6) or "")[:7].ljust(7, "0")
    ticks = ((days * 86400 + hours * 3600 + minutes * 60 + seconds) * TICKS_PER_SECOND) + int(frac)
    return -ticks if m.group(1) else ticks


def _number(value: Any) -> Any:
    if isinstance(value, str):
        token = value.strip()
        if token in ("NaN", "nan"):
            return math.nan
        if token in ("Infinity", "+Infinity", "inf"):
            return math.inf
        if token in ("-Infinity", "-inf"):
            return -math.inf
        try:
            return int(token)
        except ValueError:
            try:
                return float(token)
            except ValueError:
                return value
    return value


def normalize_expected(value: Any, kql_type: str) -> Any:
    """An expected ADX v2 cell → the engine's value form for ``kql_type``."""
    if value is None:
        return "" if kql_type == "string" else None
    if kql_type == "datetime":
        return datetime_ticks(value) if isinstance(value, str) else value
    if kql_type == "timespan":
        if isinstance(value, str):
            ticks = timespan_ticks(value)
            return ticks if ticks is not None else value
        return value
    if kql_type in ("int", "long", "real"):
        return _number(value)
    if kql_type == "decimal":
        try:
            return Decimal(str(value))
        except InvalidOperation:
            return value
    if kql_type == "bool":
        if isinstance(value, str):
            return value.lower() == "true"
        return bool(value) if isinstance(value, int) else value
    if kql_type == "guid":
        return str(value).lower()
    return value


@dataclass(frozen=True, slots=True)
class Tolerance:
    rel: float = 1e-6
    abs: float = 1e-9
    unordered_arrays: bool = False
    docs: bool = False  # whitespace-collapse strings, half-unit numbers


APPROXIMATE = Tolerance(rel=0.05, abs=1.0)


def _numbers_equal(a: Any, b: Any, tol: Tolerance) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, int) and isinstance(b, int) and tol.rel <= 1e-6:
        return a == b
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a == b or abs(a - b) <= Decimal(str(tol.abs)) + abs(b) * Decimal(str(tol.rel))
    try:
        fa, fb = float(a), float(b)
    except (TypeError, ValueError):
        return False
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) and math.isnan(fb)
    if math.isinf(fa) or math.isinf(fb):
        return fa == fb
    return abs(fa - fb) <= max(tol.abs, tol.rel * max(abs(fa), abs(fb)))


def _docs_number_equal(text: str, value: Any) -> bool:
    # Docs tables print rounded numbers: accept half a unit in the last printed place.
    try:
        printed = Decimal(text.strip())
        actual = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return False
    exponent = printed.as_tuple().exponent
    if not isinstance(exponent, int):
        return False
    return abs(printed - actual) <= Decimal(5).scaleb(exponent - 1)


def _json_of(text: Any) -> Any:
    if isinstance(text, str) and text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            return None
    return None


def dynamic_equal(a: Any, b: Any, tol: Tolerance) -> bool:
    """Structural JSON equality: key order ignored, numbers with tolerance."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(dynamic_equal(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        if tol.unordered_arrays:
            remaining = list(b)
            for item in a:
                for i, candidate in enumerate(remaining):
                    if dynamic_equal(item, candidate, tol):
                        del remaining[i]
                        break
                else:
                    return False
            return True
        return all(dynamic_equal(x, y, tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return _numbers_equal(a, b, tol)
    if isinstance(a, str) and isinstance(b, str) and tol.docs:
        return " ".join(a.split()) == " ".join(b.split())
    return bool(a == b)


def cell_equal(expected: Any, actual: Any, kql_type: str, tol: Tolerance) -> bool:
    """Compare one normalised expected cell with one engine cell of ``kql_type``."""
    if kql_type == "string":
        e = "" if expected is None else expected
        a = "" if actual is None else actual
        if not isinstance(e, str):
            e = json.dumps(e) if isinstance(e, dict | list) else str(e)
        if e == a:
            return True
        je, ja = _json_of(e), _json_of(a)
        if je is not None and ja is not None:
            return dynamic_equal(je, ja, tol)
        if tol.docs:
            if " ".join(e.split()) == " ".join(str(a).split()):
                return True
            return _docs_number_equal(e, a) if e and a else False
        return False
    if expected is None or actual is None:
        return expected is None and actual is None
    if kql_type in ("int", "long", "real", "decimal"):
        if tol.docs and isinstance(expected, int | float) and not isinstance(expected, bool):
            return _numbers_equal(expected, actual, tol) or _docs_number_equal(
                str(expected), actual
            )
        return _numbers_equal(expected, actual, tol)
    if kql_type == "dynamic":
        return dynamic_equal(expected, actual, tol)
    if kql_type in ("datetime", "timespan") and tol.rel > 1e-6:
        return _numbers_equal(expected, actual, Tolerance())
    return bool(expected == actual)


def rows_equal(
    expected: Sequence[Sequence[Any]],
    actual: Sequence[Sequence[Any]],
    types: Sequence[str],
    tol: Tolerance,
) -> bool:
    return all(
        cell_equal(e, a, t, tol)
        for row_e, row_a in zip(expected, actual, strict=True)
        for e, a, t in zip(row_e, row_a, types, strict=True)
    )


def _row_equal(e: Sequence[Any], a: Sequence[Any], types: Sequence[str], tol: Tolerance) -> bool:
    return all(cell_equal(x, y, t, tol) for x, y, t in zip(e, a, types, strict=True))


def multiset_equal(
    expected: Sequence[Sequence[Any]],
    actual: Sequence[Sequence[Any]],
    types: Sequence[str],
    tol: Tolerance,
) -> int | None:
    """None when the rows are equal as multisets, else the index of an unmatched expected row."""
    remaining = list(actual)
    for index, row in enumerate(expected):
        for i, candidate in enumerate(remaining):
            if _row_equal(row, candidate, types, tol):
                del remaining[i]
                break
        else:
            return index
    return None


def ordered_equal(
    expected: Sequence[Sequence[Any]],
    actual: Sequence[Sequence[Any]],
    types: Sequence[str],
    tol: Tolerance,
    tie_columns: Sequence[int] | None,
) -> int | None:
    """None when equal in order (rows tying on ``tie_columns`` may swap), else a bad row index."""
    if tie_columns is None:
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            if not _row_equal(e, a, types, tol):
                return index
        return None
    # Compare block by block of rows that tie on the sort keys.
    index = 0
    while index < len(expected):
        end = index + 1
        while end < len(expected) and all(
            cell_equal(expected[index][c], expected[end][c], types[c], tol) for c in tie_columns
        ):
            end += 1
        bad = multiset_equal(expected[index:end], actual[index:end], types, tol)
        if bad is not None:
            return index + bad
        index = end
    return None
