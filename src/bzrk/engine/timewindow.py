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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bzrk.engine import sql as S
from bzrk.engine.events import TICKS_PER_SECOND
from bzrk.kql import syntax as K

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


def scan_filter(window: Window, ingest: Window) -> S.Expr | None:
    """The predicate bounding one table read, as SQL nodes (None: every row).

    >>> S.render_expr(scan_filter(Window(1, None), Window()))
    '(`timestamp` >= fromUnixTimestamp64Nano(toInt64(100)))'
    """
    parts: list[S.Expr] = []
    for column, bounds in (("timestamp", window), ("ingest_time", ingest)):
        if bounds.start is not None:
            parts.append(S.BinOp(">=", S.Col(column), _instant_sql(bounds.start)))
        if bounds.end is not None:
            parts.append(S.BinOp("<", S.Col(column), _instant_sql(bounds.end)))
    return functools.reduce(lambda a, b: S.BinOp("AND", a, b), parts) if parts else None


def _instant_sql(ticks: int) -> S.Expr:
    """The DateTime64(9) of ``ticks`` (100 ns since the epoch)."""
    return S.Func("fromUnixTimestamp64Nano", [S.Func("toInt64", [S.Lit(int(ticks) * 100)])])


def progressive_windows(window: Window, progressive: bool) -> list[Window]:
    if not progressive or not window.bounded or window.empty:
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


def whole_window_seconds(runs: list[tuple[float, float]]) -> float | None:
    """The projected time of the whole window's run, from the last two completed windows'
    ``(coverage, seconds)``: a fixed cost plus a cost per share of the window, fitted through
    them (None with fewer than two). A run's time grows with the rows it reads; where the
    newest slices hold no more data than the smaller one, the fit sees no growth and projects
    that slice's time.

    >>> round(whole_window_seconds([(1 / 512, 0.011), (1 / 64, 0.013)]), 3)
    0.157
    """
    if len(runs) < 2:
        return None
    (c1, t1), (c2, t2) = runs[-2], runs[-1]
    if c2 <= c1:
        return None
    per_share = max(0.0, (t2 - t1) / (c2 - c1))
    return t2 + per_share * (1.0 - c2)


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


# --- in-query bounds --------------------------------------------------------------------------
#
# `where timestamp > ago(1d)` bounds a query as `since="1d ago"` does. When the request names no
# window, such a bound defines the window the progressive runs slice (ADX clients send the
# bound in the query, never as a request property); when it does, the two intersect. The bound
# is read only where applying it to the scan changes nothing: a single statement reading one
# table, from the `where`s that directly follow the table, with no sub-query anywhere.


@dataclass(frozen=True, slots=True)
class Instant:
    """A constant time of the query text: ``ticks`` since the epoch, or after "now" if relative."""

    ticks: int
    relative: bool = False

    def resolve(self, now: int) -> int:
        return now + self.ticks if self.relative else self.ticks


@dataclass(frozen=True, slots=True)
class QueryBounds:
    """The event-time bounds a query's own filters put on its only table read."""

    start: Instant | None = None  # inclusive
    end: Instant | None = None  # exclusive

    def window(self, now: int) -> Window:
        return Window(
            self.start.resolve(now) if self.start else None,
            self.end.resolve(now) if self.end else None,
        )


_TIME_COLUMN = "timestamp"
_LOWER = {">": 1, ">=": 0}  # op -> ticks added to reach an inclusive start
_UPPER = {"<": 0, "<=": 1}  # op -> ticks added to reach an exclusive end
_MIRRORED = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
# Calls that read data other than the pipeline's input.
_DATA_CALLS = frozenset(
    {"table", "database", "cluster", "toscalar", "materialize", "external_table"}
)


def _instant(expr: K.Expr) -> Instant | None:
    """A time constant: ``ago(span)``, ``now([span])``, a datetime literal, ± a span literal."""
    if isinstance(expr, K.Paren):
        return _instant(expr.expr)
    if isinstance(expr, K.Literal):
        return (
            Instant(expr.value) if expr.type == "datetime" and isinstance(expr.value, int) else None
        )
    if isinstance(expr, K.Call) and expr.target is None:
        spans = [a.value for a in expr.args if isinstance(a, K.Literal) and a.type == "timespan"]
        if len(spans) != len(expr.args) or not all(isinstance(v, int) for v in spans):
            return None
        if expr.name == "ago" and len(spans) == 1:
            return Instant(-spans[0], relative=True)
        if expr.name == "now" and len(spans) <= 1:
            return Instant(spans[0] if spans else 0, relative=True)
        return None
    if isinstance(expr, K.Binary) and expr.op in ("+", "-"):
        base = _instant(expr.left)
        span = expr.right
        if base is None or not (
            isinstance(span, K.Literal) and span.type == "timespan" and isinstance(span.value, int)
        ):
            return None
        return Instant(base.ticks + (span.value if expr.op == "+" else -span.value), base.relative)
    return None


def _is_time_column(expr: K.Expr) -> bool:
    return isinstance(expr, K.NameRef) and expr.name == _TIME_COLUMN


def _conjuncts(predicate: K.Expr) -> list[K.Expr]:
    if isinstance(predicate, K.Paren):
        return _conjuncts(predicate.expr)
    if isinstance(predicate, K.Binary) and predicate.op == "and":
        return _conjuncts(predicate.left) + _conjuncts(predicate.right)
    return [predicate]


def _shift(instant: Instant, ticks: int) -> Instant:
    return Instant(instant.ticks + ticks, instant.relative)


def _term_bounds(term: K.Expr) -> tuple[Instant | None, Instant | None]:
    """(inclusive start, exclusive end) one comparison puts on ``timestamp``."""
    if isinstance(term, K.Between) and not term.negated and _is_time_column(term.value):
        low, high = _instant(term.low), _instant(term.high)
        return low, _shift(high, 1) if high is not None else None  # `between` includes both
    if not isinstance(term, K.Binary) or term.op not in _MIRRORED:
        return None, None
    op, other = term.op, term.right
    if _is_time_column(term.right) and not _is_time_column(term.left):
        op, other = _MIRRORED[term.op], term.left
    elif not _is_time_column(term.left):
        return None, None
    instant = _instant(other)
    if instant is None:
        return None, None
    if op in _LOWER:
        return _shift(instant, _LOWER[op]), None
    return None, _shift(instant, _UPPER[op])


def _tighter(
    a: Instant | None, b: Instant | None, pick: Callable[[int, int], int]
) -> Instant | None:
    """The tighter of two bounds (``pick`` is max for starts, min for ends); of a relative and
    an absolute one, the first (the other still filters the rows)."""
    if a is None:
        return b
    if b is None or a.relative != b.relative:
        return a
    return a if pick(a.ticks, b.ticks) == a.ticks else b


def _reads_other_data(node: K.Node) -> bool:
    return any(
        isinstance(child, K.Pipeline | K.Join | K.Lookup | K.Union | K.Invoke)
        or (isinstance(child, K.Call) and child.name in _DATA_CALLS)
        for child in node.walk()
    )


def query_bounds(query: K.Query) -> QueryBounds | None:
    """The time bounds a query's leading filters put on its one table read, if that is its shape.

    >>> from bzrk.kql.parser import parse
    >>> bounds = query_bounds(parse("T | where timestamp > ago(1h) and x == 1 | count"))
    >>> bounds.window(now=36_000_000_000) == Window(1, None)
    True
    """
    statements = [s for s in query.statements if not isinstance(s, K.SetOption)]
    if len(statements) != 1 or not isinstance(statements[0], K.ExprStatement):
        return None
    pipeline = statements[0].expr
    if not isinstance(pipeline, K.Pipeline) or not isinstance(pipeline.source, K.NameRef):
        return None
    start: Instant | None = None
    end: Instant | None = None
    leading = True
    for operator in pipeline.operators:
        if _reads_other_data(operator):
            return None
        leading = leading and isinstance(operator, K.Where)
        if not leading:
            continue
        for term in _conjuncts(operator.predicate):  # type: ignore[attr-defined]
            low, high = _term_bounds(term)
            start = _tighter(start, low, max)
            end = _tighter(end, high, min)
    if start is None and end is None:
        return None
    return QueryBounds(start, end)
