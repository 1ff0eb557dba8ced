"""Durations as alerts write them: ``500ms``, ``5s``, ``1m``, ``2h``, ``1d`` (or a number of seconds).

>>> parse_duration("5s"), parse_duration("1.5m"), parse_duration(10)
(5.0, 90.0, 10.0)
>>> duration_text(90.0), duration_text(5.0), duration_text(0.5)
('90s', '5s', '500ms')
"""

from __future__ import annotations

import re
from typing import Any

from bzrk.alerts.errors import bad

_UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|sec|min|s|m|h|d)\s*$", re.IGNORECASE)


def parse_duration(value: Any, field: str = "duration") -> float:
    """Seconds of ``value``; an ``InvalidDuration`` error naming ``field`` otherwise."""
    if isinstance(value, bool):
        raise bad(f"'{field}' must be a duration such as 5s, 1m or 2h", "InvalidDuration")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (match := _PATTERN.match(value)):
        seconds = float(match.group(1)) * _UNITS[match.group(2).lower()]
    else:
        raise bad(
            f"'{field}' must be a duration such as 5s, 1m or 2h, not {value!r}", "InvalidDuration"
        )
    if seconds < 0 or seconds != seconds:
        raise bad(f"'{field}' must not be negative", "InvalidDuration")
    return seconds


def duration_text(seconds: float) -> str:
    """The shortest exact spelling of ``seconds`` (what the API answers with)."""
    if seconds < 1 and seconds > 0:
        return f"{round(seconds * 1000)}ms"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds:g}s"
