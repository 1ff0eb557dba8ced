"""Admission: at most N queries execute at once; a bounded number wait; the rest are refused.

chDB runs concurrent queries round-robin on the same cores, so heavy queries slow each other
down together; a small execution limit plus a bounded wait queue keeps latency predictable and
memory bounded. The time a query waited is reported as ``queue_wait_nanos``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class QueueFull(Exception):
    """The admission queue is full; the caller should retry later (gRPC RESOURCE_EXHAUSTED, HTTP 429)."""

    code = "QueueFull"


class Admission:
    def __init__(self, max_running: int, max_waiting: int) -> None:
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self._slots = asyncio.Semaphore(max_running)
        self._max_waiting = max_waiting
        self._waiting = 0
        self._running = 0
        self.max_running = max_running

    @property
    def waiting(self) -> int:
        return self._waiting

    @property
    def running(self) -> int:
        return self._running

    @asynccontextmanager
    async def admit(self) -> AsyncIterator[int]:
        """Hold one execution slot; yields how long the caller waited, in nanoseconds."""
        started = time.monotonic_ns()
        if self._slots.locked():
            if self._waiting >= self._max_waiting:
                raise QueueFull(
                    f"the query queue is full ({self.max_running} running, {self._waiting} waiting); retry later"
                )
            self._waiting += 1
            try:
                await self._slots.acquire()
            finally:
                self._waiting -= 1
        else:
            await self._slots.acquire()
        self._running += 1
        try:
            yield time.monotonic_ns() - started
        finally:
            self._running -= 1
            self._slots.release()
