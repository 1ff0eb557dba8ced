"""kusto-loco's text assertions: render rows the way .NET prints them, then apply the checks."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Sequence
from typing import Any

from bzrk.engine.events import TICKS_PER_SECOND

_EPOCH = dt.datetime(1970, 1, 1)


def _double(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        return f"{mantissa.upper()}E{sign}{exponent.lstrip('+-').rjust(2, '0')}"
    return text


def _datetime(ticks: int) -> str:
    moment = _EPOCH + dt.timedelta(microseconds=ticks // 10)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + "Z"


def _timespan(ticks: int) -> str:
    sign = "-" if ticks < 0 else ""
    ticks = abs(ticks)
    seconds, frac = divmod(ticks, TICKS_PER_SECOND)
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    text = f"{sign}{f'{days}.' if days else ''}{hours:02d}:{minutes:02d}:{seconds:02d}"
    if frac:
        text += f".{frac:07d}"
    return text


def render_cell(value: Any, kql_type: str) -> str:
    if value is None:
        return "<null>"
    if kql_type == "bool":
        return "True" if value else "False"
    if kql_type == "real":
        return _double(float(value))
    if kql_type == "datetime":
        return _datetime(int(value))
    if kql_type == "timespan":
        return _timespan(int(value))
    if kql_type == "dynamic":
        if isinstance(value, str):
            return value  # a JSON string value prints as its text in .NET
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def render_row(row: Sequence[Any], types: Sequence[str]) -> str:
    return ",".join(render_cell(v, t) for v, t in zip(row, types, strict=True))


def _same_json(text: str, needle: str) -> bool:
    """A JSON array or object printed with .NET's indentation equals the compact text."""
    if not needle.lstrip().startswith(("[", "{")):
        return False
    try:
        return bool(json.loads(text) == json.loads(needle))
    except ValueError:
        return False


def _check(text: str, kind: str, needle: str) -> bool:
    if kind == "be":
        return text == needle or _same_json(text, needle)
    if kind == "contain":
        return needle in text
    if kind == "startwith":
        return text.startswith(needle)
    if kind == "notcontain":
        return needle not in text
    return False


def check_text(
    spec: dict[str, Any], rows: Sequence[Sequence[Any]], types: Sequence[str], ordered: bool
) -> str | None:
    """None when the assertions hold, else why not."""
    mode = spec.get("render", "last_row")
    squash = mode == "last_row_squashed" or bool(spec.get("squash"))
    checks = spec.get("checks", [])

    def finish(text: str) -> str:
        return "".join(text.split()) if squash else text

    def holds(text: str) -> bool:
        return all(
            _check(text, kind, finish(needle) if squash else needle) for kind, needle in checks
        )

    if mode == "all_rows":
        sep = spec.get("sep", "\n")
        lines = [render_row(r, types) for r in rows]
        text = finish(sep.join(lines))
        if holds(text):
            return None
        if not ordered and sep and all(kind == "be" for kind, _ in checks):
            # Rows of an unordered query may come in any order (as in the table comparison).
            want = [sorted(needle.split(sep)) for _, needle in checks]
            if all(sorted(finish(line) for line in lines) == w for w in want):
                return None
        return f"rendered {text[:200]!r}"
    if not rows:
        return "no rows to render"
    candidates = [rows[-1]] if ordered else list(rows)
    for row in candidates:
        if holds(finish(render_row(row, types))):
            return None
    return f"last row rendered {finish(render_row(rows[-1], types))[:200]!r}"
