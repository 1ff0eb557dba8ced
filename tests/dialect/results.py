"""One shape for a query's answer on every surface, so that one set of checks reads them all.

Cells are normalised by column type: ``datetime`` and ``timespan`` become ``int`` ticks of 100 ns
(datetime from the Unix epoch), whatever the surface sent (ISO text over JSON, Unix nanoseconds
over gRPC, ``datetime``/``timedelta`` from the Kusto SDK); everything else stays JSON-native.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from typing import Any

TICKS_PER_SECOND = 10**7
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
DATETIME_TEXT = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?(Z|[+-]\d\d:?\d\d)?$"
)
TIMESPAN_TEXT = re.compile(r"^(-)?(?:(\d+)\.)?(\d\d):(\d\d):(\d\d)(?:\.(\d{1,7}))?$")


def datetime_ticks(text: str) -> int | None:
    m = DATETIME_TEXT.match(text)
    if not m:
        return None
    y, mo, d, h, mi = (int(m.group(i)) for i in range(1, 6))
    s = int(m.group(6) or 0)
    frac = (m.group(7) or "").ljust(7, "0")[:7]
    t = dt.datetime(y, mo, d, h, mi, s, tzinfo=dt.UTC)
    offset = m.group(8)
    if offset and offset != "Z":
        sign = 1 if offset[0] == "+" else -1
        digits = offset[1:].replace(":", "")
        t -= sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    whole = (t - EPOCH) // dt.timedelta(seconds=1)
    return whole * TICKS_PER_SECOND + int(frac)


def timespan_ticks(text: str) -> int | None:
    m = TIMESPAN_TEXT.match(text)
    if not m:
        return None
    days, h, mi, s = int(m.group(2) or 0), int(m.group(3)), int(m.group(4)), int(m.group(5))
    ticks = ((days * 24 + h) * 60 + mi) * 60 + s
    ticks = ticks * TICKS_PER_SECOND + int((m.group(6) or "").ljust(7, "0"))
    return -ticks if m.group(1) else ticks


def normalise(value: Any, kql_type: str | None) -> Any:
    """A cell as ticks when it is a datetime or timespan, else unchanged."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta = value - EPOCH
        return (delta.days * 86400 + delta.seconds) * TICKS_PER_SECOND + delta.microseconds * 10
    if isinstance(value, dt.timedelta):
        return (value.days * 86400 + value.seconds) * TICKS_PER_SECOND + value.microseconds * 10
    if kql_type == "datetime" and isinstance(value, str):
        ticks = datetime_ticks(value)
        return value if ticks is None else ticks
    if kql_type == "timespan" and isinstance(value, str):
        ticks = timespan_ticks(value)
        return value if ticks is None else ticks
    if kql_type == "real" and isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.lower().replace("infinity", "inf"))
    return value


@dataclass
class Table:
    name: str
    columns: list[str]
    types: list[str | None]
    rows: list[list[Any]]

    def col(self, name: str) -> list[Any]:
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    @classmethod
    def typed(
        cls, name: str, columns: list[str], types: list[str | None], rows: list[list[Any]]
    ) -> Table:
        return cls(
            name,
            columns,
            types,
            [
                [normalise(v, types[i] if i < len(types) else None) for i, v in enumerate(r)]
                for r in rows
            ],
        )


@dataclass
class Result:
    """Tables in result order (PrimaryResult first), or a coded error."""

    tables: list[Table] = field(default_factory=list)
    error_code: str | None = None
    error_message: str = ""
    visualization: str | None = None
    status: str = "complete"

    @property
    def primary(self) -> Table:
        if not self.tables:
            raise AssertionError("the result has no table")
        return self.tables[0]

    def table(self, name: str) -> Table | None:
        return next((t for t in self.tables if t.name == name), None)


def is_number(v: Any) -> bool:
    return (
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and not (isinstance(v, float) and math.isnan(v))
    )
