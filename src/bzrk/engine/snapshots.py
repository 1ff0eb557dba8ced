"""Snapshots of a run: the rows one result iteration holds, its events, and what a run keeps.

A snapshot's rows stay in Arrow and become event values a batch at a time, so a large result
is held once in its columnar form; a streamed snapshot keeps only each table's head (for stop
conditions and the run record).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bzrk.engine.backends.base import ScanStats
from bzrk.engine.compile.query import CompiledQuery
from bzrk.engine.events import PRIMARY_RESULT, Event, Metadata, QueryWarning, RowBatch
from bzrk.engine.scanplan import GranuleStats
from bzrk.engine.values import table_rows

# Rows per RowBatch event: encoders pack frames, this only bounds one event's size.
ROWS_PER_BATCH = 5_000
# Rows of the primary result a run record keeps.
STORED_RESULT_ROWS = 1_000


class ArrowRows(Sequence[list[Any]]):
    """A result's rows, converted to event values only when read (a slice at a time).

    Holding the Arrow table and converting per batch keeps a large result in memory once, in
    its columnar form, instead of once as Arrow and again as Python rows.
    """

    def __init__(self, arrow: Any, columns: Sequence[Any]) -> None:
        self.arrow = arrow
        self.columns = columns

    def __len__(self) -> int:
        return int(self.arrow.num_rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("row slices have step 1")
            return table_rows(self.arrow.slice(start, max(stop - start, 0)), self.columns)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return table_rows(self.arrow.slice(index, 1), self.columns)[0]


@dataclass
class Snapshot:
    tables: Sequence[tuple[str, list[str], Sequence[list[Any]]]]
    warnings: list[QueryWarning]
    coverage: float


class Streamed:
    """What a streamed snapshot leaves behind: counts, warnings, scan figures, the head of each table."""

    def __init__(self, coverage: float) -> None:
        self.coverage = coverage
        self.stats = ScanStats()
        self.granules = GranuleStats()
        self.warnings: list[QueryWarning] = []
        self.counts: dict[str, int] = {}
        self.heads: dict[str, tuple[list[str], list[list[Any]]]] = {}
        self.tables: list[tuple[str, list[str]]] = []

    def add(self, blocks: list[ScanStats]) -> None:
        for block in blocks:
            self.stats = ScanStats(
                self.stats.rows_read + block.rows_read, self.stats.bytes_read + block.bytes_read
            )

    def keep(self, table: str, columns: list[str], rows: list[list[Any]]) -> None:
        _, head = self.heads.setdefault(table, (columns, []))
        if len(head) < STORED_RESULT_ROWS:
            head.extend(rows[: STORED_RESULT_ROWS - len(head)])

    def snapshot(self) -> Snapshot:
        """The snapshot as far as stop conditions need it (the head of each table)."""
        tables = [(name, cols, self.heads.get(name, (cols, []))[1]) for name, cols in self.tables]
        return Snapshot(tables, self.warnings, self.coverage)

    def payload(self) -> dict[str, Any]:
        name, columns, rows = (
            primary_table(self.snapshot()) if self.tables else (PRIMARY_RESULT, [], [])
        )
        total = self.counts.get(name, len(rows))
        return {
            "table": name,
            "columns": columns,
            "rows": json_safe(rows),
            "row_count": total,
            "truncated": total > len(rows),
            "coverage": self.coverage,
            "warnings": [w.message for w in self.warnings],
        }


@dataclass(frozen=True, slots=True)
class FinalResult:
    """Internal marker carrying what the run record keeps; never leaves the service.

    The payload is built only when a run recorder asks for it: it converts up to
    ``STORED_RESULT_ROWS`` rows a second time.
    """

    payload: Callable[[], dict[str, Any]]


def primary_table(snapshot: Snapshot) -> tuple[str, list[str], Sequence[list[Any]]]:
    for entry in snapshot.tables:
        if entry[0] == PRIMARY_RESULT:
            return entry
    return snapshot.tables[-1]


def truncation_warning(table: str, cap: int, kind: str) -> QueryWarning:
    if kind == "take":
        message = f"the result has no limit: showing the first {cap} rows (add take, summarize or a filter)"
    elif kind == "tail":
        message = f"a bare table shows its newest {cap} rows (add where/summarize/take for more)"
    else:
        message = f"the result was cut at {cap} rows"
    return QueryWarning(
        kind="ResultTruncated", message=message, details=json.dumps({"table": table, "rows": cap})
    )


async def snapshot_events(
    snapshot: Snapshot, iteration: str, compiled: CompiledQuery
) -> AsyncIterator[Event]:
    """One snapshot's batches and its closing metadata, converting rows batch by batch.

    Converting Arrow to event values is CPU work proportional to the data (one row of
    ``make_list($raw)`` over a day took 31 s): each batch is converted in a worker thread.
    """
    for name, _columns, rows in snapshot.tables:
        total = len(rows)
        if not total:
            yield RowBatch(name, iteration, [], True)
            continue
        for start in range(0, total, ROWS_PER_BATCH):
            chunk = await asyncio.to_thread(_rows, rows, start, start + ROWS_PER_BATCH)
            yield RowBatch(name, iteration, chunk, start + ROWS_PER_BATCH >= total)
    yield Metadata(iteration, tuple(snapshot.warnings), compiled.visualization)


def _rows(rows: Sequence[list[Any]], start: int, stop: int) -> list[list[Any]]:
    return list(rows[start:stop])


def json_safe(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    return str(value)


def result_payload(snapshot: Snapshot) -> dict[str, Any]:
    name, columns, rows = primary_table(snapshot) if snapshot.tables else (PRIMARY_RESULT, [], [])
    kept = list(rows[:STORED_RESULT_ROWS])
    return {
        "table": name,
        "columns": columns,
        "rows": json_safe(kept),
        "row_count": len(rows),
        "truncated": len(rows) > len(kept),
        "coverage": snapshot.coverage,
        "warnings": [w.message for w in snapshot.warnings],
    }
