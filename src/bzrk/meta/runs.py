"""Saved runs: every query execution with its parameters, identity, status, timings and result."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from bzrk.meta import schema
from bzrk.meta.store import MetaStore, NotFound, utcnow


@dataclass(frozen=True, slots=True)
class RunRecord:
    id: str
    query: str
    database: str
    parameters: dict[str, Any]
    principal: str
    surface: str
    status: str  # running | complete | stopped_early | soft_budget | error | cancelled
    started_at: datetime
    finished_at: datetime | None
    progress: dict[str, Any] | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None

    @property
    def duration_ms(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds() * 1000


class RunStore:
    """Writes and reads the ``runs`` table. Blocking; async callers use ``asyncio.to_thread``."""

    def __init__(self, meta: MetaStore) -> None:
        self.meta = meta

    def start(
        self,
        run_id: str,
        *,
        query: str,
        database: str,
        parameters: dict[str, Any],
        principal: str,
        surface: str,
    ) -> None:
        with self.meta.begin() as conn:
            conn.execute(
                sa.insert(schema.runs).values(
                    id=run_id,
                    query=query,
                    database=database,
                    parameters=parameters,
                    principal=principal,
                    surface=surface,
                    status="running",
                    started_at=utcnow(),
                )
            )

    def finish(
        self,
        run_id: str,
        *,
        status: str,
        progress: dict[str, Any] | None = None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> None:
        with self.meta.begin() as conn:
            conn.execute(
                sa.update(schema.runs)
                .where(schema.runs.c.id == run_id)
                .values(
                    status=status,
                    finished_at=utcnow(),
                    progress=progress,
                    result=result,
                    error=error,
                )
            )

    def get(self, run_id: str) -> RunRecord:
        with self.meta.engine.connect() as conn:
            row = conn.execute(sa.select(schema.runs).where(schema.runs.c.id == run_id)).first()
        if row is None:
            raise NotFound(f"run '{run_id}' not found")
        return _record(row)

    def list_recent(self, principal: str | None = None, limit: int = 50) -> list[RunRecord]:
        query = sa.select(schema.runs).order_by(schema.runs.c.started_at.desc()).limit(limit)
        if principal is not None:
            query = query.where(schema.runs.c.principal == principal)
        with self.meta.engine.connect() as conn:
            return [_record(row) for row in conn.execute(query)]


def _record(row: sa.Row) -> RunRecord:
    return RunRecord(
        row.id,
        row.query,
        row.database,
        row.parameters or {},
        row.principal,
        row.surface,
        row.status,
        row.started_at,
        row.finished_at,
        row.progress,
        row.result,
        row.error,
    )
