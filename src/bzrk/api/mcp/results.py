"""Folding a query's event stream into the MCP ``query`` result: the last complete snapshot.

Snapshots replace each other (a new ``iteration_id`` discards every table's rows); the
``Metadata`` event that closes a snapshot makes it the answer so far. Cell values become JSON
(datetimes as ISO 8601 text, timespans as ``[d.]hh:mm:ss.fffffff``), and rows are capped so
one answer cannot flood a model's context.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from bzrk.engine.events import (
    TICKS_PER_SECOND,
    Column,
    Done,
    Metadata,
    Progress,
    RowBatch,
    TableSchema,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Serialized rows beyond this size are cut even under the row cap (about 50k tokens).
MAX_ROWS_BYTES = 200_000


def datetime_text(ticks: int) -> str:
    seconds, rest = divmod(ticks, TICKS_PER_SECOND)
    try:
        moment = _EPOCH + timedelta(seconds=seconds)
    except OverflowError:
        return str(ticks)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{rest:07d}Z"


def timespan_text(ticks: int) -> str:
    sign = "-" if ticks < 0 else ""
    seconds, rest = divmod(abs(ticks), TICKS_PER_SECOND)
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3_600)
    minutes, seconds = divmod(seconds, 60)
    head = f"{days}." if days else ""
    tail = f".{rest:07d}" if rest else ""
    return f"{sign}{head}{hours:02d}:{minutes:02d}:{seconds:02d}{tail}"


def cell_json(value: Any, kql_type: str) -> Any:
    """One cell as a JSON value, typed by its column's KQL type."""
    if value is None:
        return None
    if kql_type == "datetime" and isinstance(value, int):
        return datetime_text(value)
    if kql_type == "timespan" and isinstance(value, int):
        return timespan_text(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


@dataclass
class TableResult:
    name: str
    columns: tuple[Column, ...]
    rows: list[list[Any]] = field(default_factory=list)


@dataclass
class Snapshot:
    iteration_id: str
    tables: dict[str, TableResult]
    metadata: Metadata | None = None
    number: int = 0

    def row_count(self, table: str | None = None) -> int:
        if table is not None:
            return len(self.tables[table].rows) if table in self.tables else 0
        return sum(len(t.rows) for t in self.tables.values())

    def primary(self) -> TableResult | None:
        return next(iter(self.tables.values()), None)


class SnapshotFolder:
    """Consumes events one by one and keeps the last complete snapshot and progress."""

    def __init__(self) -> None:
        self.schemas: dict[str, tuple[Column, ...]] = {}
        self.current: Snapshot | None = None
        self.complete: Snapshot | None = None
        self.progress: Progress | None = None
        self.done: Done | None = None
        self.snapshots_seen = 0

    def feed(self, event: Any) -> Snapshot | None:
        """Fold ``event`` in; return the snapshot it just completed, if any."""
        if isinstance(event, TableSchema):
            self.schemas[event.table] = event.columns
        elif isinstance(event, RowBatch):
            if self.current is None or self.current.iteration_id != event.iteration_id:
                self.current = Snapshot(event.iteration_id, self._empty_tables())
            table = self.current.tables.get(event.table)
            if table is None:
                table = TableResult(event.table, self.schemas.get(event.table, ()))
                self.current.tables[event.table] = table
            table.rows.extend(list(r) for r in event.rows)
        elif isinstance(event, Metadata):
            if self.current is None or self.current.iteration_id != event.iteration_id:
                # A snapshot without rows (an empty answer) still completes.
                self.current = Snapshot(event.iteration_id, self._empty_tables())
            self.current.metadata = event
            self.snapshots_seen += 1
            self.current.number = self.snapshots_seen
            self.complete, self.current = self.current, None
            return self.complete
        elif isinstance(event, Progress):
            self.progress = event
        elif isinstance(event, Done):
            self.done = event
        return None

    def _empty_tables(self) -> dict[str, TableResult]:
        return {name: TableResult(name, cols) for name, cols in self.schemas.items()}

    def answer(self) -> Snapshot:
        """The snapshot to return: the last complete one, else an empty one over known schemas."""
        if self.complete is not None:
            return self.complete
        return Snapshot("", self._empty_tables())


def table_json(table: TableResult, max_rows: int) -> dict[str, Any]:
    """Columns and JSON rows of one table, cut at ``max_rows`` rows and at :data:`MAX_ROWS_BYTES`."""
    types = [c.type for c in table.columns]
    rows: list[list[Any]] = []
    size = 0
    for row in table.rows[:max_rows]:
        encoded = [
            cell_json(v, types[i] if i < len(types) else "dynamic") for i, v in enumerate(row)
        ]
        size += len(json.dumps(encoded, default=str))
        if size > MAX_ROWS_BYTES and rows:
            break
        rows.append(encoded)
    return {
        "name": table.name,
        "columns": [{"name": c.name, "type": c.type} for c in table.columns],
        "rows": rows,
        "row_count": len(table.rows),
        "truncated": len(rows) < len(table.rows),
    }


def _text_cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = text.replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= 200 else text[:199] + "…"


def table_text(table: dict[str, Any], max_rows: int = 50) -> str:
    """A Markdown table of the first ``max_rows`` rows (the structured content has the rest).

    Columns that are empty in every shown row are left out of the text and named below it,
    so a wide OTel row stays readable.
    """
    names = [c["name"] for c in table["columns"]]
    if not names:
        return "(no columns)"
    rows = table["rows"][:max_rows]
    keep = [
        i
        for i in range(len(names))
        if not rows
        or any(_text_cell(row[i] if i < len(row) else None) not in ("", "[]", "{}") for row in rows)
    ]
    lines = ["| " + " | ".join(names[i] for i in keep) + " |", "|" + "---|" * len(keep)]
    for row in rows:
        lines.append(
            "| " + " | ".join(_text_cell(row[i] if i < len(row) else None) for i in keep) + " |"
        )
    dropped = [names[i] for i in range(len(names)) if i not in keep]
    if dropped:
        lines.append(f"(empty in every row shown, left out here: {', '.join(dropped)})")
    return "\n".join(lines)


def percent(fraction: float) -> str:
    """``0.002`` -> ``0.2%``, ``0.5`` -> ``50%``: small coverages keep a significant digit."""
    value = max(0.0, min(1.0, fraction)) * 100
    if value == 0 or value >= 10:
        return f"{value:.0f}%"
    return f"{value:.2g}%"
