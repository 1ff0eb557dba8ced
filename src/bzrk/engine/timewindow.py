"""Berserk time expressions and query windows: ``"1h ago"``, ``now``, ``today``, dates, RFC 3339.

Every table scan is time-bounded. The request window (``since`` inclusive, ``until``
exclusive, default now) is resolved here to 100 ns ticks since the Unix epoch; in-query
bounds intersect with it (a wider KQL bound never widens a narrower request window).

>>> now = parse_instant("2024-01-15T10:30:00Z", now_ticks=0)
>>> parse_instant("1h ago", now_ticks=now) == now - 3600 * 10_000_000
True
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bzrk.engine.events import TICKS_PER_SECOND

_UNIT_SECONDS = {
    "ms": 0.001, "msec": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)(?:\s+ago)?\s*$", re.IGNORECASE)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class TimeExpressionError(ValueError):
    """A time expression could not be understood; the message quotes it."""


def _to_ticks(moment: datetime) -> int:
    delta = moment - _EPOCH
    return (delta.days * 86400 + delta.seconds) * TICKS_PER_SECOND + delta.microseconds * 10


def ticks_to_datetime(ticks: int) -> datetime:
    return _EPOCH + timedelta(microseconds=ticks // 10)


def now_ticks() -> int:
    return _to_ticks(datetime.now(UTC))


def zone(name: str | None) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise TimeExpressionError(f"unknown time zone '{name}'") from exc


def parse_instant(text: str, *, now_ticks: int, timezone: str | None = "UTC") -> int:
    """Resolve a Berserk time expression to ticks since the Unix epoch.

    Accepts ``now``, ``today``, ``yesterday`` (midnight in ``timezone``), relative forms
    (``"1h ago"``, ``"30m ago"``, ``"2d"`` — bare durations count back from now, as the HTTP
    API allows), dates (``"2024-01-01"``), local date-times (``"2024-01-01T10:30:00"``, read in
    ``timezone``) and RFC 3339 with an offset or ``Z``.
    """
    value = text.strip()
    if not value:
        raise TimeExpressionError("empty time expression")
    lowered = value.lower()
    tz = zone(timezone)
    if lowered == "now":
        return now_ticks
    if lowered in ("today", "yesterday"):
        local_now = ticks_to_datetime(now_ticks).astimezone(tz)
        day = local_now.date() - timedelta(days=1 if lowered == "yesterday" else 0)
        return _to_ticks(datetime.combine(day, time(), tzinfo=tz).astimezone(UTC))
    match = _RELATIVE.match(value)
    if match:
        amount, unit = float(match.group(1)), match.group(2).lower()
        if unit not in _UNIT_SECONDS:
            raise TimeExpressionError(f"unknown time unit '{unit}' in '{text}'")
        return now_ticks - round(amount * _UNIT_SECONDS[unit] * TICKS_PER_SECOND)
    return _parse_absolute(value, tz, text)


_FRACTION = re.compile(r"(\.\d+)")


def _parse_absolute(value: str, tz: ZoneInfo, original: str) -> int:
    try:
        return _absolute_ticks(value, tz)
    except ValueError as exc:
        raise TimeExpressionError(
            f"cannot read time '{original}': use e.g. '1h ago', 'now', 'today', '2024-01-01' or RFC 3339"
        ) from exc


# Clients repeat the same absolute bounds (a dashboard's refreshes, a paging UI), and reading
# one costs a few regular expressions and a datetime parse.
@functools.lru_cache(maxsize=1024)
def _absolute_ticks(value: str, tz: ZoneInfo) -> int:
    candidate = value.replace(" ", "T", 1) if re.match(r"^\d{4}-\d{2}-\d{2} \d", value) else value
    if candidate.endswith(("Z", "z")):
        candidate = candidate[:-1] + "+00:00"
    # Python's parser takes at most 6 fractional digits; keep the 7th (100 ns) separately.
    extra_ticks = 0
    fraction = _FRACTION.search(candidate)
    if fraction:
        digits = fraction.group(1)[1:]
        extra_ticks = int((digits + "0000000")[:7]) % 10
        candidate = candidate.replace(fraction.group(1), "." + (digits + "000000")[:6], 1)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", candidate):
        parsed = datetime.combine(date.fromisoformat(candidate), time(), tzinfo=tz)
    else:
        parsed = datetime.fromisoformat(candidate)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=tz)
    return _to_ticks(parsed.astimezone(UTC)) + extra_ticks


@dataclass(frozen=True, slots=True)
class Window:
    """A half-open interval ``[start, end)`` of ticks; either side may be open (None)."""

    start: int | None = None
    end: int | None = None

    @property
    def bounded(self) -> bool:
        return self.start is not None and self.end is not None

    @property
    def empty(self) -> bool:
        return self.start is not None and self.end is not None and self.start >= self.end

    def intersect(self, other: Window) -> Window:
        starts = [s for s in (self.start, other.start) if s is not None]
        ends = [e for e in (self.end, other.end) if e is not None]
        return Window(max(starts) if starts else None, min(ends) if ends else None)


def request_window(
    since: str | None,
    until: str | None,
    *,
    now_ticks: int,
    timezone: str | None = "UTC",
    default_since: str | None = None,
) -> Window:
    """The event-time window of a request: ``since`` inclusive, ``until`` exclusive (default now)."""
    since = since or default_since
    start = parse_instant(since, now_ticks=now_ticks, timezone=timezone) if since else None
    end = parse_instant(until, now_ticks=now_ticks, timezone=timezone) if until else now_ticks
    if start is not None and start >= end:
        raise TimeExpressionError(f"since ('{since}') is not before until ('{until or 'now'}')")
    return Window(start, end)


# Progressive runs cover growing windows that share the request's end: these fractions of it,
# newest first; the last is the whole window.
PROGRESSIVE_FRACTIONS = (1 / 512, 1 / 64, 1 / 8, 1.0)
# Slices narrower than this are not worth a run of their own.
MIN_SLICE_TICKS = 60 * 10_000_000


def scan_filter(window: Window, ingest: Window) -> str:
    """The predicate bounding one table read; numbers only, generated here."""
    parts = []
    for column, bounds in (("timestamp", window), ("ingest_time", ingest)):
        if bounds.start is not None:
            parts.append(f"`{column}` >= fromUnixTimestamp64Nano(toInt64({bounds.start * 100}))")
        if bounds.end is not None:
            parts.append(f"`{column}` < fromUnixTimestamp64Nano(toInt64({bounds.end * 100}))")
    return " AND ".join(parts) or "1"


def progressive_windows(window: Window, progressive: bool) -> list[Window]:
    if not progressive or not window.bounded:
        return [window]
    assert window.start is not None and window.end is not None
    total = window.end - window.start
    windows: list[Window] = []
    for fraction in PROGRESSIVE_FRACTIONS:
        span = total if fraction >= 1.0 else int(total * fraction)
        if fraction < 1.0 and span < MIN_SLICE_TICKS:
            continue
        windows.append(Window(window.end - span, window.end))
    return windows


def window_coverage(window: Window, full: Window) -> float:
    if not window.bounded or not full.bounded:
        return 1.0
    assert (
        window.start is not None
        and window.end is not None
        and full.start is not None
        and full.end is not None
    )
    total = full.end - full.start
    return 1.0 if total <= 0 else min(1.0, (window.end - window.start) / total)
