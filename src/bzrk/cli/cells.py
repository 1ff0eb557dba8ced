"""The text of one result value: datetimes, timespans, reals, dynamic values as JSON or trees.

Every output format (table, TSV, CSV, JSON, the history files) formats values here, once.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from bzrk.cli.stream import DateTime, TimeSpan


def datetime_text(nanos: int) -> str:
    seconds, rest = divmod(nanos, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{rest // 100:07d}Z"


def timespan_text(ticks: int) -> str:
    sign = "-" if ticks < 0 else ""
    ticks = abs(ticks)
    seconds, fraction = divmod(ticks, 10_000_000)
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    text = f"{sign}{f'{days}.' if days else ''}{hours:02d}:{minutes:02d}:{seconds:02d}"
    return f"{text}.{fraction:07d}" if fraction else text


def real_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def plain(value: Any) -> Any:
    """A JSON-ready value: datetimes and timespans as text, non-finite reals as text."""
    if isinstance(value, DateTime):
        return datetime_text(value.nanos)
    if isinstance(value, TimeSpan):
        return timespan_text(value.ticks)
    if isinstance(value, float) and not math.isfinite(value):
        return real_text(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return real_text(value)
    if isinstance(value, dict | list):
        return json.dumps(plain(value), separators=(",", ":"), ensure_ascii=False)
    if isinstance(value, DateTime | TimeSpan):
        return str(plain(value))
    return str(value)


def tree_lines(value: Any) -> list[str]:
    """A dynamic value as tree lines (``├─``, ``└─``); scalars are one line."""
    if isinstance(value, dict) and value:
        items: list[tuple[str, Any]] = [(f"{key}", item) for key, item in value.items()]
    elif isinstance(value, list) and value:
        items = [(f"[{index}]", item) for index, item in enumerate(value)]
    else:
        return [cell_text(value) if value not in ({}, []) else json.dumps(value)]
    lines: list[str] = []
    for position, (label, item) in enumerate(items):
        last = position == len(items) - 1
        branch, indent = ("└─ ", "   ") if last else ("├─ ", "│  ")
        if isinstance(item, dict | list) and item:
            lines.append(branch + label)
            lines += [indent + line for line in tree_lines(item)]
        else:
            lines.append(f"{branch}{label}: {tree_lines(item)[0]}")
    return lines
