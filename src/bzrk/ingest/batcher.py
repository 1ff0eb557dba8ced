"""Per-table insert batching with durable acknowledgement (group commit).

chDB ignores ``async_insert``, so bzrk batches itself: every request's rows join the pending
batch of their table, and the request waits until the INSERT holding them has returned (the
part is fsync'd). A batch is written when it reaches ``max_rows`` or ``max_wait_s`` after its
first row arrived, or, once it is ``min_wait_s`` old, as soon as no request is on its way to it
(``expecting()``: read, being decoded). Clients that wait for their acknowledgement (every OTLP
exporter) send nothing more until the batch is written, so waiting longer adds only latency.
Up to two INSERTs per table run at once while the next batch fills.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable, Sized
from dataclasses import dataclass
from typing import Any

# A piece is what one request submits: rows of one table (a list of rows, an Arrow table).
WriteFn = Callable[[str, Any], int]
CombineFn = Callable[[list[Any]], Any]
# Whether more rows are on their way (requests admitted, not yet in a batch).
ExpectingFn = Callable[[], bool]


def concat_lists(pieces: list[Any]) -> list[Any]:
    return pieces[0] if len(pieces) == 1 else list(itertools.chain.from_iterable(pieces))


@dataclass(frozen=True, slots=True)
class Batching:
    """Batch limits; both finite (the settings table documents the defaults)."""

    max_rows: int = 50_000
    max_wait_s: float = 0.2
    # A batch is never written younger than this unless full, so a lone client's small
    # requests do not each become a part.
    min_wait_s: float = 0.05


class TableBatcher:
    """Collects rows for one ClickHouse table and writes them in batches."""

    CONCURRENT_INSERTS = 2

    def __init__(
        self,
        qualified_table: str,
        write: WriteFn,
        batching: Batching,
        combine: CombineFn = concat_lists,
        expecting: ExpectingFn = lambda: True,
    ) -> None:
        self.qualified_table = qualified_table
        self._write = write
        self._combine = combine
        self._expecting = expecting
        self._batching = batching
        # One piece and one waiter per submit; ``_rows`` counts the pieces' rows.
        self._pieces: list[Sized] = []
        self._waiters: list[asyncio.Future[None]] = []
        self._rows = 0
        self._first_at: float | None = None
        self._arrived = asyncio.Event()
        self._closed = False
        self._slots = asyncio.Semaphore(self.CONCURRENT_INSERTS)
        self._task = asyncio.create_task(self._run(), name=f"batcher {qualified_table}")

    @property
    def pending_rows(self) -> int:
        return self._rows

    async def submit(self, rows: Sized) -> None:
        """Return once ``rows`` are durably written; raise what the write raised otherwise."""
        await asyncio.shield(self.add(rows))

    def add(self, rows: Sized) -> asyncio.Future[None]:
        """Put ``rows`` in the pending batch; the future settles once they are durably written
        (or with what the write raised)."""
        if self._closed:
            raise RuntimeError("batcher is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        if not self._pieces:
            self._first_at = loop.time()
        self._pieces.append(rows)
        self._waiters.append(future)
        self._rows += len(rows)
        self._arrived.set()
        return future

    def wake(self) -> None:
        """Look again whether the pending batch should be written (``expecting()`` changed)."""
        self._arrived.set()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        writing: set[asyncio.Task[None]] = set()
        while True:
            if not self._pieces:
                if self._closed:
                    break
                self._arrived.clear()
                await self._arrived.wait()
                continue
            assert self._first_at is not None
            deadline = self._first_at + self._batching.max_wait_s
            early = self._first_at + self._batching.min_wait_s
            while self._rows < self._batching.max_rows and not self._closed:
                now = loop.time()
                remaining = deadline - now
                if remaining <= 0:
                    break
                if not self._expecting():
                    if now >= early:
                        break
                    remaining = early - now
                self._arrived.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._arrived.wait(), remaining)
            # Two inserts may overlap: one waits on fsync while the next one parses.
            await self._slots.acquire()
            pieces, waiters = self._pieces, self._waiters
            self._pieces, self._waiters, self._rows, self._first_at = [], [], 0, None
            task = asyncio.create_task(self._flush(pieces, waiters))
            writing.add(task)
            task.add_done_callback(writing.discard)
        if writing:
            await asyncio.gather(*writing)

    def _write_combined(self, pieces: list[Any]) -> int:
        return self._write(self.qualified_table, self._combine(pieces))

    async def _flush(self, pieces: list[Any], waiters: list[asyncio.Future[None]]) -> None:
        try:
            try:
                await asyncio.to_thread(self._write_combined, pieces)
            except Exception as exc:
                if len(waiters) == 1:
                    _settle(waiters[0], exc)
                    return
                # One request's bad rows must not fail the others that shared the batch:
                # write each request's rows on its own.
                for future, piece in zip(waiters, pieces, strict=True):
                    try:
                        await asyncio.to_thread(self._write, self.qualified_table, piece)
                    except Exception as own:
                        _settle(future, own)
                    else:
                        _settle(future, None)
                return
            for future in waiters:
                _settle(future, None)
        finally:
            self._slots.release()

    async def close(self) -> None:
        """Write what is pending, then stop."""
        self._closed = True
        self._arrived.set()
        await self._task


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
