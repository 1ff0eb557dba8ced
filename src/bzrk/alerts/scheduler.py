"""The scheduler: one leader evaluates due alerts, runs due workflows and drains the outbox.

Every query-service process (``bzrk dev``, ``bzrk serve query``) and every ``bzrk serve
scheduler`` is a candidate; the one holding the lease row ``alerts`` in the metadata store is
the leader. It renews the lease every tick; a leader that stops cleanly releases it, one that
dies loses it when it expires (``alerts_lease_s``) and another candidate takes over.

Nothing the leader knows lives only in memory: each alert's next due time is claimed with a
conditional update before its evaluation runs, its state and the notifications it causes are
written in one transaction, and deliveries are retried from the outbox. A restart (or a new
leader) therefore resumes where the last one stopped: a firing alert stays firing and is not
announced again; a notification queued but not yet delivered is delivered once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from typing import Any

from bzrk.alerts.service import AlertService

log = logging.getLogger("bzrk.alerts.scheduler")

LEASE = "alerts"


class Scheduler:
    def __init__(
        self,
        service: AlertService,
        *,
        tick_s: float = 0.5,
        lease_s: float = 15.0,
        max_concurrent: int = 2,
    ) -> None:
        self.service = service
        self.store = service.store
        self.tick_s = tick_s
        self.lease_s = lease_s
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._slots = asyncio.Semaphore(max_concurrent)
        self.max_concurrent = max_concurrent
        self._work: set[asyncio.Task[Any]] = set()
        self._busy: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self.leader = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="alerts-scheduler")

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop taking work, let running evaluations and sends finish (bounded), release the lease."""
        self._stopping.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, grace_s)
        if self._work:
            _, pending = await asyncio.wait(self._work, timeout=grace_s)
            for task in pending:
                task.cancel()
        if self.leader:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.store.release_lease, LEASE, self.holder)
            self.leader = False

    async def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.tick()
            except Exception:  # a store hiccup must not end the scheduler
                log.warning("scheduler tick failed", exc_info=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.tick_s)

    async def tick(self) -> None:
        now = time.time()
        was = self.leader
        self.leader = await asyncio.to_thread(
            self.store.acquire_lease, LEASE, self.holder, self.lease_s, now
        )
        if self.leader != was:
            log.info(
                "alert scheduler %s",
                "is the leader" if self.leader else "lost the lead",
                extra={"holder": self.holder},
            )
        if not self.leader:
            return
        free = self.max_concurrent - len(self._busy)
        if free > 0:
            for row in await asyncio.to_thread(self.store.claim_due_alerts, now, free):
                if row["id"] not in self._busy:  # still evaluating the last period: skip one
                    self._spawn(row["id"], self.service.evaluate(row))
            for row in await asyncio.to_thread(self.store.claim_due_workflows, now, 1):
                self._spawn(
                    row["id"], self.service.run_workflow(None, row["id"], trigger="schedule")
                )
        if "outbox" not in self._busy:
            self._spawn("outbox", self.service.dispatcher.drain())

    def _spawn(self, key: str, work: Any) -> None:
        self._busy.add(key)

        async def run() -> None:
            try:
                async with self._slots if key != "outbox" else contextlib.nullcontext():
                    await work
            except Exception:
                log.warning("scheduled work %s failed", key, exc_info=True)
            finally:
                self._busy.discard(key)

        task = asyncio.create_task(run(), name=f"alerts-{key}")
        self._work.add(task)
        task.add_done_callback(self._work.discard)


async def start(ctx: Any) -> Scheduler:
    """Start a scheduler candidate for ``ctx`` (the composition calls this)."""
    from bzrk.alerts.service import shared

    settings = ctx.settings
    scheduler = Scheduler(
        shared(ctx),
        tick_s=settings.alerts_tick_ms / 1000,
        lease_s=settings.alerts_lease_s,
        max_concurrent=settings.alerts_max_concurrent,
    )
    scheduler.start()
    return scheduler
