"""The engine interface: run ClickHouse SQL and get Arrow back, with limits and cancellation.

Two backends implement it: :mod:`bzrk.engine.backends.chdb_backend` (embedded, in-process;
one data path per process) and :mod:`bzrk.engine.backends.clickhouse_backend` (a ClickHouse
server or cluster through clickhouse-connect). Everything above this module is the same code.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa


@dataclass(frozen=True, slots=True)
class ScanStats:
    """What ClickHouse read for one query: honest figures from the engine, zero when unknown."""

    rows_read: int = 0
    bytes_read: int = 0
    elapsed_ns: int = 0


@dataclass(frozen=True, slots=True)
class QuerySettings:
    """Per-query limits passed to ClickHouse; finite by default."""

    max_execution_time_s: float = 60.0
    max_memory_usage: int = 4 * 1024**3
    max_result_rows: int | None = None
    extra: dict[str, str | int | float] = field(default_factory=dict)

    def as_clickhouse(self) -> dict[str, str | int | float]:
        settings: dict[str, str | int | float] = {
            "max_execution_time": self.max_execution_time_s,
            "max_memory_usage": self.max_memory_usage,
        }
        if self.max_result_rows is not None:
            settings["max_result_rows"] = self.max_result_rows
            settings["result_overflow_mode"] = "throw"
        settings.update(self.extra)
        return settings


class Backend(Protocol):
    """A ClickHouse engine. Methods are blocking; callers run them in a worker thread."""

    name: str

    def execute(self, sql: str, *, settings: QuerySettings | None = None) -> None:
        """Run a statement that returns nothing (DDL, INSERT ... SELECT)."""
        ...

    def query_arrow(
        self, sql: str, *, settings: QuerySettings | None = None, query_id: str | None = None
    ) -> pa.Table:
        """Run a SELECT and return its whole result as an Arrow table."""
        ...

    def stream_arrow(
        self, sql: str, *, settings: QuerySettings | None = None, query_id: str | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Run a SELECT and yield its result batch by batch."""
        ...

    def insert_arrow(
        self, table: str, data: pa.Table, *, settings: Mapping[str, int] | None = None
    ) -> None:
        """Append ``data`` to ``table`` (qualified ``db.table``); returns once it is written.

        ``settings`` are the INSERT's input-format settings (``storage.schema.INSERT_SETTINGS``).
        """
        ...

    def kill(self, query_id: str) -> None:
        """Cancel a running query; the backend stays healthy."""
        ...

    def close(self) -> None: ...
