"""The audit log of security events, kept in the metadata store (``audit_events``).

Events: ``sign_in`` (ok, or refused with ``wrong_password`` / ``rate_limited``), ``sign_out``,
``token_minted`` and ``token_revoked`` (service-principal, ingest, CLI and OAuth tokens),
``grant_added`` / ``grant_removed`` / ``role_changed``, ``consent`` (an OAuth client allowed
or denied), and ``request_refused`` with its reason (``invalid_token``, ``wrong_surface``,
``AccessDenied:<reason>``, ``rate_limited``, ``not_admin``, …). Secrets are never recorded: a
token is named by its display prefix only.

Recording never blocks or fails a request: :meth:`AuditLog.record` puts the event in a bounded
in-memory queue and one writer thread inserts batches. When the queue is full (a flood of
refused requests), further events are counted and the count is written as one
``events_dropped`` event once there is room. The table keeps the newest ``max_events`` rows.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from bzrk.auth.internal import Principal
from bzrk.auth.timestamps import aware
from bzrk.meta import schema
from bzrk.meta.store import MetaStore, utcnow

log = logging.getLogger("bzrk.audit")

OK, REFUSED = "ok", "refused"
EVENTS = (
    "sign_in",
    "sign_out",
    "token_minted",
    "token_revoked",
    "grant_added",
    "grant_removed",
    "role_changed",
    "consent",
    "request_refused",
    "events_dropped",
)
_PRUNE_EVERY = 1000
_LIMITS = {
    "reason": 64,
    "actor": 64,
    "actor_name": 256,
    "target": 512,
    "surface": 32,
    "address": 64,
}


@dataclass(frozen=True, slots=True)
class Event:
    event: str
    outcome: str = OK
    reason: str = ""
    actor: str = ""  # principal key
    actor_name: str = ""
    target: str = ""
    surface: str = ""
    address: str = ""
    details: dict[str, Any] | None = None
    at: datetime = field(default_factory=utcnow)

    def row(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "at": self.at,
            "event": self.event,
            "outcome": self.outcome,
            "details": self.details,
        }
        for name, limit in _LIMITS.items():
            values[name] = str(getattr(self, name) or "")[:limit]
        return values


class AuditLog:
    """Queues events and writes them from one thread; safe to call from any thread or loop."""

    def __init__(self, meta: MetaStore, *, max_events: int = 100_000, max_queued: int = 10_000):
        self.meta = meta
        self.max_events = max_events
        self._queue: deque[Event] = deque()
        self._max_queued = max_queued
        self._dropped = 0
        self._inflight = 0
        self._since_prune = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def record(
        self,
        event: str,
        *,
        outcome: str = OK,
        reason: str = "",
        actor: Principal | None = None,
        actor_key: str = "",
        actor_name: str = "",
        target: str = "",
        surface: str = "",
        address: str = "",
        details: dict[str, Any] | None = None,
    ) -> None:
        """Queue one event (never blocks, never raises)."""
        if event not in EVENTS:
            raise ValueError(f"unknown audit event {event!r}")
        item = Event(
            event,
            outcome,
            reason,
            actor.key if actor is not None else actor_key,
            actor.name if actor is not None else actor_name,
            target,
            surface,
            address,
            details,
        )
        with self._cond:
            if self._closed:
                return
            if len(self._queue) >= self._max_queued:
                self._dropped += 1
                return
            self._queue.append(item)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="bzrk-audit", daemon=True)
                self._thread.start()
            self._cond.notify()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Hold the writer while the block runs: events queue up (bounded, then counted)."""
        with self._cond:
            yield

    def flush(self, timeout_s: float = 10.0) -> None:
        """Wait until every queued event is written (blocking: use a thread from async code)."""
        with self._cond:
            self._cond.wait_for(lambda: not self._queue and not self._inflight, timeout_s)

    def close(self) -> None:
        self.flush()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._closed)
                if self._closed and not self._queue:
                    return
                batch = list(self._queue)
                self._queue.clear()
                if self._dropped:
                    batch.append(
                        Event(
                            "events_dropped",
                            REFUSED,
                            "queue_full",
                            details={"count": self._dropped},
                        )
                    )
                    self._dropped = 0
                self._inflight = len(batch)
            try:
                self._write(batch)
            except Exception:  # the audit log must never take a request down with it
                log.warning("could not write %d audit events", len(batch), exc_info=True)
            with self._cond:
                self._inflight = 0
                self._cond.notify_all()

    def _write(self, batch: list[Event]) -> None:
        table = schema.audit_events
        with self.meta.begin() as conn:
            conn.execute(sa.insert(table), [event.row() for event in batch])
            self._since_prune += len(batch)
            if self._since_prune >= _PRUNE_EVERY:
                self._since_prune = 0
                newest = conn.execute(sa.select(sa.func.max(table.c.id))).scalar() or 0
                conn.execute(sa.delete(table).where(table.c.id <= newest - self.max_events))


def shared(components: dict[str, Any], meta: MetaStore) -> AuditLog:
    """The process's audit log (one per metadata store, kept in the service components)."""
    found = components.get("audit")
    if not isinstance(found, AuditLog) or found.meta is not meta:
        found = AuditLog(meta)
        components["audit"] = found
    return found


def list_events(
    meta: MetaStore,
    *,
    limit: int = 100,
    before: int | None = None,
    event: str | None = None,
    actor: str | None = None,
    outcome: str | None = None,
) -> list[dict[str, Any]]:
    """The newest events first (``before``: an event id, for the next page)."""
    t = schema.audit_events
    query = sa.select(t).order_by(t.c.id.desc()).limit(max(1, min(limit, 1000)))
    if before is not None:
        query = query.where(t.c.id < before)
    if event:
        query = query.where(t.c.event == event)
    if actor:
        query = query.where(t.c.actor == actor)
    if outcome:
        query = query.where(t.c.outcome == outcome)
    with meta.engine.connect() as conn:
        rows = conn.execute(query).mappings().all()
    return [
        {**{k: v for k, v in row.items() if k != "at"}, "at": aware(row["at"]).isoformat()}
        for row in rows
    ]
