"""Literal text → value conversions (datetime, timespan, numbers) in the engine's Python forms.

datetime → int ticks (100 ns) since the Unix epoch; timespan → int ticks. Errors are KqlErrors
without a span; the parser places them.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime
from email.utils import parsedate_tz

from bzrk.kql.diagnostics import bad_literal
from bzrk.kql.facts import TIMESPAN_UNITS

_ISO = re.compile(
    r"\s*(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?"
    r"(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,7})\d*)?)?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2}|[ ]?(?:UTC|GMT))?\s*$",
    re.IGNORECASE,
)
_TS_CLOCK = re.compile(
    r"\s*(-)?(?:(\d+)\.)?(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,7})\d*)?)?\s*$"
)
_TS_UNIT = re.compile(r"\s*(-)?(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
_MAX_TICKS = 3_155_378_975_999_999_999  # 9999-12-31T23:59:59.9999999 from 0001-01-01
_EPOCH_TICKS = 621_355_968_000_000_000  # 1970-01-01 from 0001-01-01


def _days_from_civil(y: int, m: int, d: int) -> int:
    # Howard Hinnant's algorithm: proleptic Gregorian day number relative to 1970-01-01.
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def datetime_ticks(
    y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, frac: int = 0
) -> int:
    """Ticks since the Unix epoch for a UTC calendar time (validated)."""
    if not (1 <= y <= 9999 and 1 <= mo <= 12 and 1 <= d <= calendar.monthrange(y, mo)[1]):
        raise ValueError("date out of range")
    if not (0 <= h < 24 and 0 <= mi < 60 and 0 <= s < 60):
        raise ValueError("time out of range")
    days = _days_from_civil(y, mo, d)
    return ((days * 86400 + h * 3600 + mi * 60 + s) * 10_000_000) + frac


def parse_datetime(text: str) -> int | None:
    """`2018-07-01`, `2015-12-31 23:59:59.9`, ISO 8601 with `Z`/offset, RFC 822, RFC 850;
    `null` → None."""
    t = text.strip()
    if t.lower() == "null":
        return None
    m = _ISO.match(t) or _ISO.match(re.sub(r"\s*-\s*", "-", t))
    try:
        if not m and re.fullmatch(r"\d{4}(\s*,\s*\d+(\.\d+)?){1,6}", t):
            nums = [float(x) for x in t.split(",")]
            secs = nums[5] if len(nums) > 5 else 0.0
            ints = [int(x) for x in nums[:5]] + [0] * (5 - len(nums[:5]))
            return datetime_ticks(
                ints[0],
                ints[1] or 1,
                ints[2] or 1,
                ints[3],
                ints[4],
                int(secs),
                round((secs % 1) * 1e7),
            )
        clock = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", t)
        if clock:  # a bare time of day is on the current UTC day, as in Kusto
            today = datetime.now(UTC).date()
            hms = int(clock[1]), int(clock[2]), int(clock[3] or 0)
            return datetime_ticks(today.year, today.month, today.day, *hms)
        us = re.fullmatch(
            r"(\d{1,2})[-/](\d{1,2})[-/](\d{4})(?:\s+(\d{1,2}):(\d{2})(?::(\d{2}))?)?", t
        )
        if us:
            mo, d, y, h, mi, sec = us.groups()
            if int(mo) > 12:
                mo, d = d, mo
            return datetime_ticks(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(sec or 0))
        if m:
            y, mo, d, h, mi, s, fr, tz = m.groups()
            frac = int((fr or "").ljust(7, "0")) if fr else 0
            ticks = datetime_ticks(
                int(y), int(mo or 1), int(d or 1), int(h or 0), int(mi or 0), int(s or 0), frac
            )
            if tz and tz[0] in "+-":
                sign = 1 if tz[0] == "+" else -1
                digits = tz[1:].replace(":", "")
                ticks -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60) * 10_000_000
            return ticks
        # RFC 850 ("Saturday, 08-Nov-14 15:05:02 GMT", "08-Nov-14 15:05") as RFC 822
        parts = parsedate_tz(re.sub(r"\b(\d{1,2})-([A-Za-z]{3})-(\d{2,4})\b", r"\1 \2 \3", t))
        if parts:
            y, mo, d, h, mi, s = parts[:6]
            ticks = datetime_ticks(y, mo, d, h, mi, s)
            return ticks - (parts[9] or 0) * 10_000_000
    except ValueError:
        pass
    raise bad_literal(text, "datetime")


def parse_timespan(text: str) -> int | None:
    """`1d`, `1.5h`, `00:01:00`, `1.02:03:04.5`, `2` (days); `null` → None."""
    t = text.strip()
    if t.lower() == "null":
        return None
    m = _TS_CLOCK.match(t)
    if m:
        neg, days, h, mi, s, fr = m.groups()
        ticks = ((int(days or 0) * 24 + int(h)) * 3600 + int(mi) * 60 + int(s or 0)) * 10_000_000
        ticks += int((fr or "0").ljust(7, "0")) if fr else 0
        return -ticks if neg else ticks
    m = _TS_UNIT.match(t)
    if m:
        neg, num, unit = m.groups()
        per = TIMESPAN_UNITS.get(unit.lower() if unit else "d")
        if per is not None:
            if len(num) > 30:
                raise bad_literal(text[:40], "timespan")
            ticks = round(float(num) * per) if "." in num else int(num) * per
            if abs(ticks) > _MAX_TICKS:
                raise bad_literal(text, "timespan")
            return -ticks if neg else ticks
    raise bad_literal(text, "timespan")


def parse_guid(text: str) -> str | None:
    t = text.strip()
    if t.lower() == "null":
        return None
    if re.fullmatch(
        r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}", t
    ):
        h = t.replace("-", "").lower()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    raise bad_literal(text, "guid")


def parse_int(text: str) -> int | float:
    if len(text) > 40:  # far beyond int64; also avoids Python's int-from-str digit limit
        if text[:2] in ("0x", "0X"):
            raise bad_literal(text[:40], "long")
        return float(text)
    value = int(text, 16) if text[:2] in ("0x", "0X") else int(text)
    if value > 2**63 - 1:
        return float(value)  # Kusto reads out-of-range integer literals as real
    return value


def typed_literal(raw: str) -> tuple[str, int | str | None]:
    """Split a TYPED token (`datetime(2020-01-01)`) into its KQL type and value."""
    head, _, rest = raw.partition("(")
    inner = rest[:-1]
    kind = head.strip().lower()
    if kind in ("datetime", "date"):
        return "datetime", parse_datetime(inner)
    if kind in ("timespan", "time"):
        return "timespan", parse_timespan(inner)
    return "guid", parse_guid(inner)
