"""Reading a Kusto REST request body: ``db``, ``csl`` and the client request properties.

The clients disagree (adx.md §2): Python sends ``properties`` as a JSON *string*, JS and
Grafana as an object; Grafana spells ``options`` in lower case; option values arrive as
strings, numbers or booleans; ``servertimeout`` comes as ``"0:01:00"`` (Python's
``str(timedelta)``), ``"1 day, 0:00:00"``, ``"00:01:00.000"`` (JS) or ``"1.00:00:00"`` (.NET).
Unknown keys and options are ignored, as Kusto does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bzrk.api.adx.errors import AdxError
from bzrk.engine.events import TICKS_PER_SECOND

MAX_BODY_BYTES = 4 * 1024 * 1024

_TIMESPAN_CLOCK = re.compile(
    r"""^\s*(?P<sign>-)?
    (?:(?P<days>\d+)(?:\s+days?,\s*|\.))?      # "1 day, " (Python) or "1." (.NET)
    (?P<h>\d{1,2}):(?P<m>\d{1,2})(?::(?P<s>\d{1,2})(?:\.(?P<frac>\d{1,7}))?)?\s*$""",
    re.VERBOSE,
)
_TIMESPAN_KQL = re.compile(
    r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>d|h|m|s|ms|microsecond|tick)\s*$", re.IGNORECASE
)
_UNIT_TICKS = {
    "d": 86_400 * TICKS_PER_SECOND,
    "h": 3_600 * TICKS_PER_SECOND,
    "m": 60 * TICKS_PER_SECOND,
    "s": TICKS_PER_SECOND,
    "ms": TICKS_PER_SECOND // 1000,
    "microsecond": 10,
    "tick": 1,
}


def parse_timespan(text: str) -> int:
    """A timespan in any form the Kusto clients send → 100 ns ticks.

    >>> [parse_timespan(t) // 10_000_000 for t in ("0:01:00", "1 day, 0:00:00", "00:01:00.000", "30s")]
    [60, 86400, 60, 30]
    """
    match = _TIMESPAN_CLOCK.match(text)
    if match:
        seconds = (
            int(match["days"] or 0) * 86_400
            + int(match["h"]) * 3_600
            + int(match["m"]) * 60
            + int(match["s"] or 0)
        )
        ticks = seconds * TICKS_PER_SECOND + int((match["frac"] or "").ljust(7, "0"))
        return -ticks if match["sign"] else ticks
    match = _TIMESPAN_KQL.match(text)
    if match:
        return int(float(match["n"]) * _UNIT_TICKS[match["unit"].lower()])
    raise ValueError(f"not a timespan: {text!r}")


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, int):
        return value != 0
    raise AdxError("InvalidParameter", f"option {name!r} must be true or false, got {value!r}")


def _as_count(name: str, value: Any) -> int:
    try:
        number = int(value) if not isinstance(value, bool) else -1
    except (TypeError, ValueError):
        number = -1
    if number < 0:
        raise AdxError("InvalidParameter", f"option {name!r} must be a non-negative integer")
    return number


@dataclass(frozen=True, slots=True)
class AdxOptions:
    """The client request properties bzrk honours; every other option is accepted and ignored."""

    timeout_ms: int | None = None
    max_rows: int | None = None
    max_bytes: int | None = None
    no_truncation: bool = False
    progressive: bool = False
    fragment_primary_tables: bool = False
    since: str | None = None  # query_datetimescope_from
    until: str | None = None  # query_datetimescope_to


@dataclass(frozen=True, slots=True)
class AdxRequest:
    db: str
    csl: str
    options: AdxOptions = field(default_factory=AdxOptions)
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_command(self) -> bool:
        return strip_comments(self.csl).startswith(".")


def strip_comments(csl: str) -> str:
    """The text without ``//`` comment lines and surrounding blanks."""
    lines = [line for line in csl.splitlines() if not line.lstrip().startswith("//")]
    return "\n".join(lines).strip()


def _options(raw: Mapping[str, Any]) -> AdxOptions:
    lowered = {str(k).lower(): v for k, v in raw.items()}
    timeout_ms = None
    if lowered.get("servertimeout") not in (None, ""):
        value = lowered["servertimeout"]
        try:
            ticks = (
                parse_timespan(value)
                if isinstance(value, str)
                # A bare number: milliseconds, as the Go and JS clients' numeric forms mean.
                else int(value) * 10_000
            )
        except (TypeError, ValueError) as exc:
            raise AdxError(
                "InvalidParameter", f"option 'servertimeout' is not a timespan: {value!r}"
            ) from exc
        if ticks <= 0:
            raise AdxError("InvalidParameter", "option 'servertimeout' must be positive")
        timeout_ms = max(1, ticks // 10_000)
    return AdxOptions(
        timeout_ms=timeout_ms,
        max_rows=_as_count("truncationmaxrecords", lowered["truncationmaxrecords"])
        if lowered.get("truncationmaxrecords") is not None
        else None,
        max_bytes=_as_count("truncationmaxsize", lowered["truncationmaxsize"])
        if lowered.get("truncationmaxsize") is not None
        else None,
        no_truncation=_as_bool("notruncation", lowered.get("notruncation", False)),
        progressive=_as_bool(
            "results_progressive_enabled", lowered.get("results_progressive_enabled", False)
        ),
        fragment_primary_tables=_as_bool(
            "results_v2_fragment_primary_tables",
            lowered.get("results_v2_fragment_primary_tables", False),
        ),
        since=_as_text(lowered.get("query_datetimescope_from")),
        until=_as_text(lowered.get("query_datetimescope_to")),
    )


def _as_text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _object(name: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise AdxError(
                "BadRequest", f"{name!r} is neither a JSON object nor JSON text of one: {exc}"
            ) from exc
    if not isinstance(value, dict):
        raise AdxError("BadRequest", f"{name!r} must be a JSON object")
    return value


def parse_request(body: bytes, *, require_db: bool = False) -> AdxRequest:
    """Validate a request body; raises :class:`AdxError` naming what is wrong."""
    if len(body) > MAX_BODY_BYTES:
        raise AdxError("PayloadTooLarge", f"request body exceeds {MAX_BODY_BYTES} bytes")
    try:
        payload = json.loads(body or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AdxError("BadRequest", f"request body is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise AdxError("BadRequest", 'request body must be a JSON object {"db", "csl"}')
    csl = payload.get("csl")
    if not isinstance(csl, str) or not csl.strip():
        raise AdxError("BadRequest", "'csl' (the query or command text) is required")
    db = payload.get("db")
    if db is None:
        db = ""
    if not isinstance(db, str):
        raise AdxError("BadRequest", "'db' must be a string")
    if require_db and not db.strip():
        raise AdxError("BadRequest", "'db' (the database to query) is required and non-empty")
    properties = _object("properties", payload.get("properties"))
    options = _object("Options", properties.get("Options", properties.get("options")))
    parameters = _object("Parameters", properties.get("Parameters", properties.get("parameters")))
    return AdxRequest(db=db.strip(), csl=csl, options=_options(options), parameters=parameters)
