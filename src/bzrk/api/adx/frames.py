"""What the v1 and v2 encoders share: table order, the run summary, and the side tables.

Kusto writes each result table whole (``Rows`` inside one frame), while the engine may
interleave batches of several tables; :class:`SequentialTables` turns the stream into
"open table i / rows / close table i" steps, streaming the table being written and holding
only rows of tables not yet reached. The last table stays open until the run ends, so a
failure always has a table to report into (an in-band ``OneApiErrors`` row).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bzrk.engine.events import (
    Done,
    Error,
    Metadata,
    Progress,
    RowBatch,
    TableSchema,
    Visualization,
)


class StreamContractError(Exception):
    """The engine's stream broke the event contract in a way this encoder cannot express."""


@dataclass(frozen=True, slots=True)
class Open:
    index: int


@dataclass(frozen=True, slots=True)
class Rows:
    rows: Sequence[Sequence[Any]]


@dataclass(frozen=True, slots=True)
class Close:
    index: int


Step = Open | Rows | Close


class SequentialTables:
    """Orders one snapshot's batches into whole tables (non-progressive results)."""

    def __init__(self) -> None:
        self.schemas: list[TableSchema] = []
        self._index: dict[str, int] = {}
        self.current = -1  # the open table, -1 before the first
        self._pending: dict[int, list[Sequence[Sequence[Any]]]] = {}
        self._complete: set[int] = set()
        self._iteration: str | None = None
        self.row_counts: list[int] = []

    def add_schema(self, schema: TableSchema) -> None:
        if schema.table not in self._index:
            self._index[schema.table] = len(self.schemas)
            self.schemas.append(schema)
            self.row_counts.append(0)

    def batch(self, batch: RowBatch) -> list[Step]:
        if batch.iteration_id != self._iteration:
            if self._iteration is not None and self.current >= 0:
                raise StreamContractError(
                    "the engine sent a second snapshot to a non-progressive request"
                )
            self._iteration = batch.iteration_id
            self._pending.clear()
            self._complete.clear()
        index = self._index.get(batch.table)
        if index is None:
            raise StreamContractError(f"rows for table {batch.table!r} arrived before its schema")
        if index < self.current:
            raise StreamContractError(f"rows for table {batch.table!r} arrived after it closed")
        steps: list[Step] = []
        if self.current < 0:
            steps.append(Open(0))
            self.current = 0
            steps += self._flush(0)
        if index == self.current:
            if batch.rows:
                steps.append(Rows(batch.rows))
                self.row_counts[index] += len(batch.rows)
        elif batch.rows:
            self._pending.setdefault(index, []).append(batch.rows)
        if batch.iteration_complete:
            self._complete.add(index)
        while self.current in self._complete and self.current + 1 < len(self.schemas):
            steps += self._advance()
        return steps

    def drain(self) -> list[Step]:
        """Open every remaining table and write what it holds; the last one stays open."""
        steps: list[Step] = []
        if self.current < 0 and self.schemas:
            steps.append(Open(0))
            self.current = 0
            steps += self._flush(0)
        while 0 <= self.current < len(self.schemas) - 1:
            steps += self._advance()
        return steps

    def close(self) -> list[Step]:
        steps = self.drain()
        if self.current >= 0:
            steps.append(Close(self.current))
            self.current = len(self.schemas)
        return steps

    def _advance(self) -> list[Step]:
        closed = self.current
        self.current += 1
        return [Close(closed), Open(self.current), *self._flush(self.current)]

    def _flush(self, index: int) -> list[Step]:
        chunks = self._pending.pop(index, [])
        for rows in chunks:
            self.row_counts[index] += len(rows)
        return [Rows(rows) for rows in chunks]


@dataclass
class RunSummary:
    """What the side tables report: the last snapshot's metadata, progress and the outcome."""

    started: float = field(default_factory=time.monotonic)
    metadata: Metadata | None = None
    progress: Progress | None = None
    done: Done | None = None
    error: Error | None = None

    def visualization(self) -> Visualization | None:
        return self.metadata.visualization if self.metadata else None

    def warnings(self) -> list[tuple[str, str]]:
        """(kind, text) of each warning, partial failure and early stop."""
        out: list[tuple[str, str]] = []
        if self.metadata:
            out += [(w.kind, w.message) for w in self.metadata.warnings]
            for failure in self.metadata.partial_failures:
                out.append(
                    (
                        "PartialFailure",
                        f"{failure.message} ({failure.segment_count} segments not read)"
                        if failure.segment_count
                        else failure.message,
                    )
                )
        if self.done and self.done.status != "complete":
            reason = self.done.stop_reason or self.done.status
            out.append(("StoppedEarly", f"query stopped early: {reason}"))
        return out


# The @ExtendedProperties "Visualization" object, keys in Kusto's order (adx.md §4).
_VISUALIZATION_KEYS = (
    "Visualization",
    "Title",
    "XColumn",
    "Series",
    "YColumns",
    "AnomalyColumns",
    "XTitle",
    "YTitle",
    "XAxis",
    "YAxis",
    "Legend",
    "YSplit",
    "Accumulate",
    "IsQuerySorted",
    "Kind",
    "Ymin",
    "Ymax",
    "Xmin",
    "Xmax",
)
_BOOLEAN_KEYS = {"Accumulate", "IsQuerySorted"}
_NUMBER_KEYS = {"Ymin", "Ymax"}


def visualization_json(viz: Visualization | None) -> str:
    """The JSON text Kusto puts in ``@ExtendedProperties`` for a ``render`` (or its absence)."""
    value: dict[str, Any] = dict.fromkeys(_VISUALIZATION_KEYS)
    value.update(Accumulate=False, IsQuerySorted=False, Ymin="NaN", Ymax="NaN")
    if viz is not None:
        value["Visualization"] = viz.type
        by_lower = {k.lower(): k for k in _VISUALIZATION_KEYS}
        for name, text in viz.properties.items():
            key = by_lower.get(name.lower())
            if key is None or key == "Visualization":
                continue
            if key in _BOOLEAN_KEYS:
                value[key] = str(text).lower() == "true"
            elif key in _NUMBER_KEYS:
                try:
                    value[key] = float(text)
                except ValueError:
                    value[key] = "NaN"
            else:
                value[key] = text
    return json.dumps(value, separators=(",", ":"))


def stats_payload(summary: RunSummary) -> dict[str, Any]:
    progress = summary.progress or Progress()
    return {
        "ExecutionTime": round(time.monotonic() - summary.started, 6),
        "resource_usage": {
            "cpu": {"total cpu": "00:00:00"},
            "network": {"cross_cluster_total_bytes": 0, "inter_cluster_total_bytes": 0},
        },
        "input_dataset_statistics": {
            "extents": {
                "total": progress.chunks_total,
                "scanned": progress.chunks_scanned,
                "scanned_min_datetime": None,
                "scanned_max_datetime": None,
            },
            "rows": {"total": progress.rows_processed, "scanned": progress.rows_processed},
        },
        "bzrk": {
            "rows_processed": progress.rows_processed,
            "chunks_skipped_range": progress.chunks_skipped_range,
            "chunks_skipped_bloom": progress.chunks_skipped_bloom,
            "coverage": progress.coverage,
            "query_time_nanos": progress.query_time_nanos,
        },
    }
