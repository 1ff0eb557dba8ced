"""A run's record in the run store, written beside the query as its events go out.

The start is written in the background rather than before the query: a write to the store is
a hop to a worker thread, which a 7 ms query would otherwise wait for. The finish waits for the
start, and the stored result is built from the final snapshot only then.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any, Protocol

from bzrk.engine.events import Done, Error, Event, Progress
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


class RunLog:
    """The record of one run: :meth:`see` each event, then :meth:`finish` once."""

    def __init__(self, runs: RunRecorder, run_id: str, request: QueryRequest) -> None:
        self.runs = runs
        self.run_id = run_id
        self.status = "error"  # until a Done says otherwise
        self._progress: dict[str, Any] | None = None
        self._result: dict[str, Any] | None = None
        self._error: dict[str, Any] | None = None
        self._started = asyncio.ensure_future(self._start(request))

    def see(self, event: Any) -> bool:
        """Note what the record keeps of ``event``; False for internal events not sent on."""
        if isinstance(event, Done):
            self.status = event.status
        elif isinstance(event, Error):
            self.status = "error"
            self._error = {"code": event.code, "message": event.message}
        elif isinstance(event, Progress):
            self._progress = progress_dict(event)
        elif isinstance(event, FinalResult):
            self._result = event.payload()
            return False
        return True

    async def finish(self) -> None:
        await self._started
        await asyncio.to_thread(
            self.runs.finish,
            self.run_id,
            status=self.status,
            progress=self._progress,
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
