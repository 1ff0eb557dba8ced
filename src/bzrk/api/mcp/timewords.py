"""Berserk time words ("1h ago", "today", RFC 3339, ...) as 100 ns ticks, for discovery windows.

Queries hand their window strings to the engine unchanged; only ``discover_fields`` needs
them as ticks, because the schema provider takes ticks.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from bzrk.engine.events import TICKS_PER_SECOND

_UNITS = {
    "ms": 0.001,
    "s": 1,
    "sec": 1,
    "m": 60,
    "min": 60,
    "h": 3600,
    "hr": 3600,
    "d": 86_400,
    "day": 86_400,
    "days": 86_400,
    "w": 604_800,
}
_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*(ago)?\s*$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class TimeWordError(ValueError):
    pass


def to_ticks(text: str, now: datetime | None = None) -> int:
    """Parse one time word relative to ``now`` (UTC); raise :class:`TimeWordError` if unknown."""
    now = now or datetime.now(UTC)
    word = text.strip().lower()
    if word == "now":
        moment = now
    elif word == "today":
        moment = now.replace(hour=0, minute=0, second=0, microsecond=0)
    elif word == "yesterday":
        moment = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
    elif match := _AGO.match(word):
        unit = _UNITS.get(match.group(2))
        if unit is None:
            raise TimeWordError(f"unknown time unit in {text!r}")
        moment = now - timedelta(seconds=float(match.group(1)) * unit)
    else:
        try:
            moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise TimeWordError(
                f"cannot read time {text!r}: use '1h ago', '2d ago', 'now', 'today', "
                "'yesterday', a date or RFC 3339"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * TICKS_PER_SECOND + delta.microseconds * 10
