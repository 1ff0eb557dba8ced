"""Datetime and timespan functions: parts, arithmetic by unit, start/end of periods, construction,
Unix times, `format_datetime` / `format_timespan`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.builders import (
    Builder,
    fn,
    registrar,
)
from bzrk.engine.compile.typed import (
    T,
    Typed,
    cast_to,
    from_ticks,
    lit,
    ticks,
)

if TYPE_CHECKING:
    pass

DATE_FUNCTIONS: dict[str, Builder] = {}
# What a refused part name is told (Kusto's part names; case does not matter).
PART_NAMES = (
    "a part is one of year, quarter, month, week, day, hour, minute, second, millisecond, "
    "microsecond, nanosecond (a constant string)"
)
reg = registrar(DATE_FUNCTIONS)


def datetime_add(part: Typed, amount: Typed, dt: Typed) -> Typed:
    unit = _const_string(part)
    n = cast_to(amount, "long").sql
    if unit in _UNIT_TICKS:
        step = _UNIT_TICKS[unit]
        delta = T("intDiv({0}, 100)", n) if step == 0 else T("{0} * " + str(step), n)
        return Typed(from_ticks(S.BinOp("+", ticks(dt.sql), delta)), "datetime")
    fname = {"year": "addYears", "quarter": "addQuarters", "month": "addMonths"}.get(unit or "")
    if fname is None:
        raise ValueError(f"unknown part {unit!r}; {PART_NAMES}")
    return Typed(T(fname + "({0}, {1})", dt.sql, n), "datetime")


def datetime_diff(part: Typed, a: Typed, b: Typed) -> Typed:
    unit = _const_string(part)
    if unit in _UNIT_TICKS and unit != "week":
        step = _UNIT_TICKS[unit]
        # KQL counts boundaries crossed: floor each side to the unit, then subtract.
        if step == 0:
            return Typed(T("(({0}) - ({1})) * 100", ticks(a.sql), ticks(b.sql)), "long")
        return Typed(
            T(
                "(intDiv({0} - positiveModulo({0}, "
                + str(step)
                + "), "
                + str(step)
                + ") - intDiv({1} - positiveModulo({1}, "
                + str(step)
                + "), "
                + str(step)
                + "))",
                ticks(a.sql),
                ticks(b.sql),
            ),
            "long",
        )
    if unit == "week":
        # Week boundaries crossed, weeks starting on Sunday; Kusto returns it as real.
        return Typed(
            T(
                "toFloat64(intDiv(reinterpretAsInt64(toDateTime64(toStartOfWeek({0}, 0), 7, 'UTC')) - "
                "reinterpretAsInt64(toDateTime64(toStartOfWeek({1}, 0), 7, 'UTC')), 6048000000000))",
                a.sql,
                b.sql,
            ),
            "real",
        )
    name = {"year": "year", "quarter": "quarter", "month": "month"}.get(unit or "")
    if name is None:
        raise ValueError(f"unknown part {unit!r}; {PART_NAMES}")
    return Typed(
        T("toInt64(dateDiff(" + S.literal_sql(name) + ", {1}, {0}))", a.sql, b.sql), "long"
    )


def datetime_part(part: Typed, dt: Typed) -> Typed:
    unit = _const_string(part) or ""
    if unit in _DATE_PARTS:
        fname, _ = _DATE_PARTS[unit]
        return Typed(T("toInt64(" + fname + "({0}))", dt.sql), "long")
    if unit == "millisecond":
        return Typed(
            T("toInt64(intDiv(positiveModulo({0}, 10000000), 10000))", ticks(dt.sql)), "long"
        )
    if unit == "microsecond":
        return Typed(T("toInt64(intDiv(positiveModulo({0}, 10000000), 10))", ticks(dt.sql)), "long")
    if unit == "nanosecond":
        return Typed(T("toInt64(positiveModulo({0}, 10000000) * 100)", ticks(dt.sql)), "long")
    raise ValueError(f"unknown part {unit!r}; {PART_NAMES}")


def start_of(unit: str, args: list[Typed]) -> Typed:
    dt = args[0].sql
    offset = cast_to(args[1], "long").sql if len(args) > 1 else None
    # On Date32 (1900-2299, bzrk's datetime range): ClickHouse's toStartOf* answer in Date or
    # DateTime, which hold 1970-2106/2149 only (startofday(datetime(1950-06-11)) was 1970).
    day = "toDate32({0})"
    base = {
        "day": day,
        "week": f"subtractDays({day}, toDayOfWeek({day}) % 7)",
        "month": f"subtractDays({day}, toDayOfMonth({day}) - 1)",
        "year": f"subtractDays({day}, toDayOfYear({day}) - 1)",
    }[unit]
    if offset is not None:
        add = {"day": "addDays", "week": "addWeeks", "month": "addMonths", "year": "addYears"}[unit]
        base = f"{add}({base}, {{1}})"
    return Typed(
        T(
            "toDateTime64(" + base + ", 7, 'UTC')",
            dt,
            *([offset] if offset is not None else []),
        ),
        "datetime",
    )


def end_of(unit: str, args: list[Typed]) -> Typed:
    start = start_of(unit, args)
    add = {"day": "addDays", "week": "addWeeks", "month": "addMonths", "year": "addYears"}[unit]
    return Typed(
        from_ticks(T("reinterpretAsInt64(" + add + "({0}, 1)) - 1", start.sql)), "datetime"
    )


def make_timespan(args: list[Typed]) -> Typed:
    if not 2 <= len(args) <= 4:
        raise ValueError("takes (hours, minutes[, seconds]) or (days, hours, minutes, seconds)")
    nums = [cast_to(a, "real").sql for a in args]
    if len(args) == 2:
        return Typed(T("toInt64(({0} * 3600 + {1} * 60) * 10000000)", *nums), "timespan")
    if len(args) == 3:
        return Typed(
            T("toInt64(round(({0} * 3600 + {1} * 60 + {2}) * 10000000))", *nums), "timespan"
        )
    return Typed(
        T("toInt64(round(({0} * 86400 + {1} * 3600 + {2} * 60 + {3}) * 10000000))", *nums[:4]),
        "timespan",
    )


def make_datetime(args: list[Typed]) -> Typed:
    parts = [cast_to(a, "real").sql for a in args] + [lit(0)] * (7 - len(args))
    return Typed(
        T(
            # a part out of its range (30 February, hour 24, minute 60) is null, not carried over
            "if({1} BETWEEN 1 AND 12 AND {2} >= 1 AND {2} <= toDayOfMonth(toLastDayOfMonth(makeDate("
            "toInt32({0}), toInt32(greatest(1, least(12, {1}))), 1))) AND {3} BETWEEN 0 AND 23 "
            "AND {4} BETWEEN 0 AND 59 AND {5} >= 0 AND {5} < 60, reinterpret(toInt64("
            "reinterpretAsInt64(toDateTime64(makeDateTime(toInt32({0}), toInt32({1}), toInt32({2}), toInt32({3}), toInt32({4}), 0, 'UTC'), 7, 'UTC')) "
            "+ toInt64(round({5} * 10000000))), 'DateTime64(7, \\'UTC\\')'), NULL)",
            *parts[:6],
        ),
        "datetime",
    )


def format_datetime(dt: Typed, fmt: Typed) -> Typed:
    pattern = _const_string(fmt, lower=False)
    if pattern is None:
        raise ValueError("the format must be a constant string")
    return Typed(_format_datetime_sql(dt.sql, pattern), "string")


def format_timespan(ts: Typed, fmt: Typed) -> Typed:
    pattern = _const_string(fmt, lower=False)
    if pattern is None:
        raise ValueError("the format must be a constant string")
    return Typed(_format_timespan_sql(ts.sql, pattern), "string")


_DATE_PARTS = {
    "year": ("toYear", 0),
    "quarter": ("toQuarter", 0),
    "month": ("toMonth", 0),
    "week_of_year": ("toISOWeek", 0),
    "week": ("toISOWeek", 0),
    "day": ("toDayOfMonth", 0),
    "dayofyear": ("toDayOfYear", 0),
    "hour": ("toHour", 0),
    "minute": ("toMinute", 0),
    "second": ("toSecond", 0),
}


_UNIT_TICKS = {
    "nanosecond": 0,
    "microsecond": 10,
    "millisecond": 10_000,
    "second": 10_000_000,
    "minute": 600_000_000,
    "hour": 36_000_000_000,
    "day": 864_000_000_000,
    "week": 6_048_000_000_000,
}


def _const_string(value: Typed, *, lower: bool = True) -> str | None:
    if isinstance(value.sql, S.Lit) and isinstance(value.sql.value, str):
        return value.sql.value.lower() if lower else value.sql.value
    return None


_FORMAT_TOKENS = [
    ("yyyy", "%Y"),
    ("yyy", "%Y"),
    ("yy", "%y"),
    ("y", "y"),
    ("MM", "%m"),
    ("M", "%c"),
    ("dd", "%d"),
    ("d", "%e"),
    ("HH", "%H"),
    ("H", "%k"),
    ("hh", "%I"),
    ("h", "%l"),
    ("mm", "%i"),
    ("m", "%i"),
    ("ss", "%S"),
    ("s", "%S"),
    ("tt", "%p"),
]


def _format_datetime_sql(dt: S.Expr, pattern: str) -> S.Expr:
    parts: list[S.Expr] = []
    i = 0
    text = ""
    while i < len(pattern):
        if pattern[i] == "f" or pattern[i] == "F":
            j = i
            while j < len(pattern) and pattern[j] == pattern[i]:
                j += 1
            n = j - i
            if text:
                parts.append(lit(text))
                text = ""
            frac = T(
                "leftPad(toString(positiveModulo(reinterpretAsInt64({0}), 10000000)), 7, '0')", dt
            )
            piece = T("substring({0}, 1, " + str(n) + ")", frac)
            if pattern[i] == "F":
                piece = (
                    T("trimRight(BOTH '0' FROM {0})", piece)
                    if False
                    else T("replaceRegexpOne({0}, '0+$', '')", piece)
                )
            parts.append(piece)
            i = j
            continue
        for token, spec in _FORMAT_TOKENS:
            if pattern.startswith(token, i):
                if text:
                    parts.append(lit(text))
                    text = ""
                if spec in ("%c", "%e", "%k", "%l"):
                    fname = {"%c": "toMonth", "%e": "toDayOfMonth", "%k": "toHour", "%l": "toHour"}[
                        spec
                    ]
                    if spec == "%l":
                        parts.append(
                            T("toString(if(toHour({0}) % 12 = 0, 12, toHour({0}) % 12))", dt)
                        )
                    else:
                        parts.append(T("toString(" + fname + "({0}))", dt))
                elif token == "y":  # the year of the century, not padded (.NET's "y")
                    parts.append(T("toString(toYear({0}) % 100)", dt))
                elif token == "m":
                    parts.append(T("toString(toMinute({0}))", dt))
                elif token == "s":
                    parts.append(T("toString(toSecond({0}))", dt))
                else:
                    parts.append(T("formatDateTime({0}, " + S.literal_sql(spec) + ")", dt))
                i += len(token)
                break
        else:
            text += pattern[i]
            i += 1
    if text:
        parts.append(lit(text))
    return T("if(isNull({0}), '', {1})", dt, S.Func("concat", [*parts, lit("")]))


def _format_timespan_sql(ts: S.Expr, pattern: str) -> S.Expr:
    parts: list[S.Expr] = []
    i = 0
    text = ""
    units = {
        "d": "intDiv(abs({0}), 864000000000)",
        "h": "intDiv(abs({0}), 36000000000) % 24",
        "H": "intDiv(abs({0}), 36000000000) % 24",
        "m": "intDiv(abs({0}), 600000000) % 60",
        "s": "intDiv(abs({0}), 10000000) % 60",
    }
    while i < len(pattern):
        ch = pattern[i]
        j = i
        while j < len(pattern) and pattern[j] == ch:
            j += 1
        n = j - i
        if ch in units:
            if text:
                parts.append(lit(text))
                text = ""
            # at least n digits: `d` of 15 days is 15 and `dd` of 123 days 123 (leftPad cuts)
            digits = "toString(" + units[ch] + ")"
            parts.append(T(f"leftPad({digits}, greatest({n}, length({digits})), '0')", ts))
        elif ch in "fF":
            if text:
                parts.append(lit(text))
                text = ""
            piece = T(
                "substring(leftPad(toString(abs({0}) % 10000000), 7, '0'), 1, " + str(n) + ")", ts
            )
            if ch == "F":
                piece = T("replaceRegexpOne({0}, '0+$', '')", piece)
            parts.append(piece)
        else:
            text += pattern[i:j]
        i = j
    if text:
        parts.append(lit(text))
    return T("if(isNull({0}), '', {1})", ts, S.Func("concat", [*parts, lit("")]))


# --- datetime --------------------------------------------------------------------------------
reg(
    "now",
    lambda c, a, n: Typed(
        T("now64(7, 'UTC')")
        if not a
        else from_ticks(T("reinterpretAsInt64(now64(7, 'UTC')) + {0}", a[0].sql)),
        "datetime",
    ),
)
reg(
    "ago",
    lambda c, a, n: Typed(
        from_ticks(T("reinterpretAsInt64(now64(7, 'UTC')) - {0}", a[0].sql)), "datetime"
    ),
)
reg("datetime_add", lambda c, a, n: datetime_add(a[0], a[1], a[2]))
reg("datetime_diff", lambda c, a, n: datetime_diff(a[0], a[1], a[2]))
reg("datetime_part datepart", lambda c, a, n: datetime_part(a[0], a[1]))


def _dt_fn(template: str, result: str = "long") -> Builder:
    return fn(template, result)


reg("getyear", _dt_fn("toInt64(toYear({0}))"))
reg("getmonth monthofyear", _dt_fn("toInt64(toMonth({0}))"))
reg("dayofmonth", _dt_fn("toInt32(toDayOfMonth({0}))", "int"))
reg("dayofyear", _dt_fn("toInt32(toDayOfYear({0}))", "int"))
reg("hourofday", _dt_fn("toInt64(toHour({0}))"))
reg("week_of_year weekofyear", _dt_fn("toInt64(toISOWeek({0}))"))
reg("dayofweek", fn("toInt64((toDayOfWeek({0}) % 7) * 864000000000)"))
reg("startofday", lambda c, a, n: start_of("day", a))
reg("startofweek", lambda c, a, n: start_of("week", a))
reg("startofmonth", lambda c, a, n: start_of("month", a))
reg("startofyear", lambda c, a, n: start_of("year", a))
reg("endofday", lambda c, a, n: end_of("day", a))
reg("endofweek", lambda c, a, n: end_of("week", a))
reg("endofmonth", lambda c, a, n: end_of("month", a))
reg("endofyear", lambda c, a, n: end_of("year", a))
# Unix times: null for what is no time (NaN, infinity, past the ticks' range), as the reference
# says; accurateCastOrNull gives null where toInt64 failed the whole query.
_UNIX_TIME = (
    "if(isNull(accurateCastOrNull(round(toFloat64({0}) * {1}), 'Int64')), NULL, reinterpret("
    "assumeNotNull(accurateCastOrNull(round(toFloat64({0}) * {1}), 'Int64')), 'DateTime64(7, \\'UTC\\')'))"
)
for _name, _ticks in (("seconds", 10_000_000), ("milliseconds", 10_000), ("microseconds", 10)):
    reg(f"unixtime_{_name}_todatetime", fn(_UNIX_TIME.replace("{1}", str(_ticks))))
reg(
    "unixtime_nanoseconds_todatetime",
    fn("reinterpret(toInt64(intDiv(toInt64({0}), 100)), 'DateTime64(7, \\'UTC\\')')"),
)
reg("make_timespan", lambda c, a, n: make_timespan(a))
reg("make_datetime", lambda c, a, n: make_datetime(a))
reg("format_datetime", lambda c, a, n: format_datetime(a[0], a[1]))
reg("format_timespan", lambda c, a, n: format_timespan(a[0], a[1]))
