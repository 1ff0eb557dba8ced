"""Time as auth compares it: stored timestamps come back naive from SQLite, so read them as UTC."""

from __future__ import annotations

from datetime import UTC, datetime


def aware(value: datetime) -> datetime:
    """``value`` with UTC attached when the store dropped the zone."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def is_past(value: datetime | None, now: datetime) -> bool:
    """True when ``value`` is set and not after ``now``."""
    return value is not None and aware(value) <= now
