"""A run's record in the run store, written beside the query as its events go out, and the
summary a run observer (the query metrics) gets when it ends.

The start is written in the background rather than before the query: a write to the store is
a hop to a worker thread, which a 7 ms query would otherwise wait for. The finish waits for the
start, and the stored result is built from the final snapshot only then.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace
from typing import Any, Protocol

from bzrk.engine.events import PRIMARY_RESULT, Done, Error, Event, Metadata, Progress, RowBatch
from bzrk.engine.progress import progress_dict
from bzrk.engine.request import QueryRequest
from bzrk.engine.snapshots import FinalResult

log = logging.getLogger(__name__)


class RunRecorder(Protocol):
    """Where runs are saved (``bzrk.meta.runs.RunStore`` in a server)."""

    def start(
        self,
        run_id: str,
        *,
        query: str,
        database: str,
        parameters: dict[str, Any],
        principal: str,
        surface: str,
    ) -> None: ...

    def finish(
        self,
        run_id: str,
        *,
        status: str,
        progress: dict[str, Any] | None = None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class RunSummary:
    """How one run went, for observers (``bzrk.engine.metrics``)."""

    surface: str
    status: str  # complete | stopped_early | soft_budget | error | cancelled
    error_code: str | None
    duration_s: float
    queue_wait_s: float | None  # None: the run never reached admission
    rows_scanned: int
    bytes_scanned: int
    snapshots: int
    short_circuit: bool
    result_rows: int  # rows of the primary result's last snapshot


class RunObserver(Protocol):
    """Told about every finished run (from the event loop; must not block)."""

    def run_finished(self, summary: RunSummary) -> None: ...


class RunObservers:
    """Several observers as one (metrics, self-telemetry spans); one failing spares the rest."""

    def __init__(self, *observers: RunObserver) -> None:
        self.observers = list(observers)

    def run_finished(self, summary: RunSummary) -> None:
        for observer in self.observers:
            try:
                observer.run_finished(summary)
            except Exception:  # an observer must not fail the query, nor the other observers
                log.warning("run observer %r failed", observer, exc_info=True)


class RunLog:
    """The record of one run: :meth:`see` each event, then :meth:`finish` once."""

    def __init__(
        self,
        runs: RunRecorder | None,
        run_id: str,
        request: QueryRequest,
        observer: RunObserver | None = None,
    ) -> None:
        self.runs = runs
        self.observer = observer
        self.run_id = run_id
        self.surface = request.surface
        self.status = "error"  # until a Done says otherwise
        self.ended = False  # a Done or Error went out: the run's status is final
        self._begun = time.monotonic()
        self._progress: Progress | None = None
        self._result: dict[str, Any] | None = None
        self._error: dict[str, Any] | None = None
        self._snapshots = 0
        self._iteration: str | None = None
        self._rows = 0
        self._started = asyncio.ensure_future(self._start(request)) if runs is not None else None

    def see(self, event: Any) -> bool:
        """Note what the record keeps of ``event``; False for internal events not sent on."""
        if isinstance(event, RowBatch):
            if event.table == PRIMARY_RESULT:
                if event.iteration_id != self._iteration:
                    self._iteration, self._rows = event.iteration_id, 0
                self._rows += len(event.rows)
        elif isinstance(event, Metadata):
            self._snapshots += 1
        elif isinstance(event, Progress):
            self._progress = event
        elif isinstance(event, Done):
            self.status = event.status
            self.ended = True
        elif isinstance(event, Error):
            self.status = "error"
            self.ended = True
            self._error = {"code": event.code, "message": event.message}
        elif isinstance(event, FinalResult):
            if self.runs is not None:
                self._result = event.payload()
            return False
        return True

    def cancelled(self) -> None:
        """The consumer closed the stream; a cancel unless the run had already ended."""
        if not self.ended:
            self.status = "cancelled"

    def summary(self) -> RunSummary:
        progress = self._progress
        waited = progress.queue_wait_nanos if progress is not None else None
        return RunSummary(
            surface=self.surface,
            status=self.status,
            error_code=self._error["code"] if self._error else None,
            duration_s=time.monotonic() - self._begun,
            queue_wait_s=waited / 1e9 if waited is not None else None,
            rows_scanned=progress.rows_processed if progress else 0,
            bytes_scanned=progress.chunk_scanned_raw_body_size if progress else 0,
            snapshots=self._snapshots,
            short_circuit=bool(progress and progress.short_circuit),
            result_rows=self._rows,
        )

    async def finish(self) -> None:
        if self.observer is not None:
            try:
                self.observer.run_finished(self.summary())
            except Exception:  # metrics must not fail the query
                log.warning("run observer failed for run %s", self.run_id, exc_info=True)
        if self.runs is None or self._started is None:
            return
        await self._started
        await asyncio.to_thread(
            self.runs.finish,
            self.run_id,
            status=self.status,
            progress=progress_dict(self._progress) if self._progress is not None else None,
            result=self._result,
            error=self._error,
        )

    async def _start(self, request: QueryRequest) -> None:
        parameters = {
            "since": request.since,
            "until": request.until,
            "timezone": request.timezone,
            "ingest_since": request.ingest_since,
            "ingest_until": request.ingest_until,
            "timeout_ms": request.timeout_ms,
            "stop_when": request.stop_when,
        }
        assert self.runs is not None
        try:
            await asyncio.to_thread(
                self.runs.start,
                self.run_id,
                query=request.query,
                database=request.database,
                parameters=parameters,
                principal=request.principal,
                surface=request.surface,
            )
        except Exception:  # a run log failure must not fail the query
            log.warning("could not record the start of run %s", self.run_id, exc_info=True)


def with_run_id(event: Event, run_id: str) -> Event:
    """``event`` carrying the run's id when it is one that names it (Done, Error)."""
    if isinstance(event, Done | Error):
        return replace(event, run_id=run_id)
    return event
