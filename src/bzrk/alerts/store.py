"""Reads and writes of the alerting tables. Blocking: async callers use ``asyncio.to_thread``.

State changes and the notifications they cause are written in one transaction
(:meth:`AlertStore.record_evaluation`), and every scheduled piece of work is claimed with a
conditional update (the due time moves forward only for the one claimer), so two schedulers,
or one restarted in the middle of a firing, neither lose nor repeat a notification.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from bzrk.alerts import tables as t
from bzrk.alerts.errors import AlertError, not_found
from bzrk.alerts.secrets import SecretBox
from bzrk.meta.store import MetaStore, new_id

Row = dict[str, Any]


def _row(row: sa.Row | None) -> Row | None:
    return None if row is None else dict(row._mapping)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One notification to one connection, as the outbox holds it."""

    id: str
    connection_id: str
    kind: str
    payload: dict[str, Any]
    attempts: int


class AlertStore:
    def __init__(self, meta: MetaStore, box: SecretBox) -> None:
        self.meta = meta
        self.box = box

    # -- shared ----------------------------------------------------------------------------
    def _named(self, table: sa.Table, kind: str, ident: str) -> Row:
        """The row of ``table`` whose id or name is ``ident`` (NotFound otherwise)."""
        c = table.c
        with self.meta.engine.connect() as conn:
            row = _row(
                conn.execute(sa.select(table).where(sa.or_(c.id == ident, c.name == ident))).first()
            )
        if row is None:
            raise not_found(kind, ident)
        return row

    def _write(self, kind: str, name: Any, statement: sa.Executable) -> None:
        """Run one insert or update; a clash on the unique name is a coded 409 Conflict."""
        try:
            with self.meta.begin() as conn:
                conn.execute(statement)
        except sa.exc.IntegrityError as exc:
            raise _conflict(kind, name) from exc

    # -- connections -----------------------------------------------------------------------
    def list_connections(self) -> list[Row]:
        with self.meta.engine.connect() as conn:
            rows = conn.execute(sa.select(t.connections).order_by(t.connections.c.name))
            return [dict(r._mapping) for r in rows]

    def get_connection(self, ident: str) -> Row:
        return self._named(t.connections, "connection", ident)

    def connection_secret(self, row: Row) -> str | None:
        return None if row.get("secret") is None else self.box.open(row["secret"])

    def create_connection(self, values: Row, secret: str | None, owner: str) -> Row:
        now, ident = time.time(), new_id()
        sealed = None if secret is None else self.box.seal(secret)
        self._write(
            "connection",
            values.get("name"),
            sa.insert(t.connections).values(
                id=ident,
                owner=owner,
                secret=sealed,
                created_at=now,
                updated_at=now,
                **values,
            ),
        )
        return self.get_connection(ident)

    def update_connection(
        self, ident: str, values: Row, secret: str | None, secret_given: bool
    ) -> Row:
        current = self.get_connection(ident)
        changes: Row = {"updated_at": time.time()}
        if "name" in values:
            changes["name"] = values["name"]
        changes["config"] = {**current["config"], **values.get("config", {})}
        if secret_given:
            changes["secret"] = None if secret is None else self.box.seal(secret)
        self._write(
            "connection",
            values.get("name"),
            sa.update(t.connections).where(t.connections.c.id == current["id"]).values(**changes),
        )
        return self.get_connection(current["id"])

    def delete_connection(self, ident: str) -> None:
        current = self.get_connection(ident)
        users = [
            row["name"]
            for row in [*self.list_alerts(), *self.list_workflows()]
            if current["id"] in row["connections"]
        ]
        if users:
            raise AlertError(
                409,
                "Conflict",
                f"connection '{current['name']}' is used by {', '.join(sorted(users))}: "
                "remove it there first",
            )
        with self.meta.begin() as conn:
            conn.execute(sa.delete(t.connections).where(t.connections.c.id == current["id"]))

    def check_connections(self, ids: Iterable[str]) -> list[str]:
        """The connection ids of ``ids`` (names accepted), or NotFound for the first unknown."""
        return [self.get_connection(ident)["id"] for ident in ids]

    # -- alerts ----------------------------------------------------------------------------
    def list_alerts(self) -> list[Row]:
        with self.meta.engine.connect() as conn:
            return [
                dict(r._mapping)
                for r in conn.execute(sa.select(t.alerts).order_by(t.alerts.c.name))
            ]

    def get_alert(self, ident: str) -> Row:
        return self._named(t.alerts, "alert", ident)

    def create_alert(self, values: Row, owner: str) -> Row:
        now, ident = time.time(), new_id()
        self._write(
            "alert",
            values.get("name"),
            sa.insert(t.alerts).values(
                id=ident,
                owner=owner,
                state="ok",
                state_since=now,
                next_due_at=now,
                created_at=now,
                updated_at=now,
                **values,
            ),
        )
        return self.get_alert(ident)

    def update_alert(self, ident: str, values: Row) -> Row:
        current = self.get_alert(ident)
        changes = {**values, "updated_at": time.time()}
        if {"query", "database", "since", "condition", "every_s", "enabled"} & set(values):
            changes["next_due_at"] = time.time()  # evaluate the new definition soon
        self._write(
            "alert",
            values.get("name"),
            sa.update(t.alerts).where(t.alerts.c.id == current["id"]).values(**changes),
        )
        return self.get_alert(current["id"])

    def delete_alert(self, ident: str) -> None:
        current = self.get_alert(ident)
        with self.meta.begin() as conn:
            conn.execute(
                sa.delete(t.notifications).where(t.notifications.c.alert_id == current["id"])
            )
            conn.execute(sa.delete(t.evaluations).where(t.evaluations.c.alert_id == current["id"]))
            conn.execute(sa.delete(t.alerts).where(t.alerts.c.id == current["id"]))

    def set_muted(self, ident: str, until: float | None) -> Row:
        current = self.get_alert(ident)
        with self.meta.begin() as conn:
            conn.execute(
                sa.update(t.alerts)
                .where(t.alerts.c.id == current["id"])
                .values(muted_until=until, updated_at=time.time())
            )
        return self.get_alert(current["id"])

    def claim_due_alerts(self, now: float, limit: int) -> list[Row]:
        """Due, enabled alerts, each claimed by moving its due time one period on."""
        return _claim_due(self.meta, t.alerts, now, limit)

    def record_evaluation(
        self,
        alert_id: str,
        evaluation: Row,
        state: Row | None,
        deliveries: list[tuple[str, str, dict[str, Any]]],
    ) -> int:
        """Insert an evaluation, apply the state it led to and queue its notifications, at once.

        Args:
            evaluation: the ``alert_evaluations`` columns (without ids).
            state: the ``alerts`` columns that change (None for a test evaluation).
            deliveries: ``(connection_id, kind, payload)`` to put in the outbox.
        """
        now = time.time()
        with self.meta.begin() as conn:
            result = conn.execute(sa.insert(t.evaluations).values(alert_id=alert_id, **evaluation))
            inserted = result.inserted_primary_key
            assert inserted is not None
            evaluation_id = int(inserted[0])
            if state is not None:
                conn.execute(sa.update(t.alerts).where(t.alerts.c.id == alert_id).values(**state))
            for connection_id, kind, payload in deliveries:
                payload = {**payload, "notification_id": new_id()}
                conn.execute(
                    sa.insert(t.notifications).values(
                        id=payload["notification_id"], connection_id=connection_id,
                        alert_id=alert_id, evaluation_id=evaluation_id, kind=kind,
                        payload=payload, status="pending", attempts=0, next_attempt_at=now,
                        created_at=now,
                    )
                )  # fmt: skip
        return evaluation_id

    def list_evaluations(self, alert_id: str, limit: int) -> list[tuple[Row, list[Row]]]:
        """The newest evaluations first, each with the notifications it queued."""
        e, n = t.evaluations, t.notifications
        with self.meta.engine.connect() as conn:
            rows = conn.execute(
                sa.select(e).where(e.c.alert_id == alert_id)
                .order_by(e.c.at.desc(), e.c.id.desc()).limit(limit)
            ).all()  # fmt: skip
            ids = [r.id for r in rows]
            sent: dict[int, list[Row]] = {}
            if ids:
                for note in conn.execute(sa.select(n).where(n.c.evaluation_id.in_(ids))):
                    sent.setdefault(note.evaluation_id, []).append(dict(note._mapping))
        return [(dict(r._mapping), sent.get(r.id, [])) for r in rows]

    def prune_evaluations(self, alert_id: str, keep: int) -> None:
        e = t.evaluations
        with self.meta.begin() as conn:
            cutoff = conn.execute(
                sa.select(e.c.id).where(e.c.alert_id == alert_id)
                .order_by(e.c.id.desc()).offset(keep).limit(1)
            ).scalar()  # fmt: skip
            if cutoff is not None:
                conn.execute(sa.delete(e).where(e.c.alert_id == alert_id, e.c.id <= cutoff))

    # -- the outbox ------------------------------------------------------------------------
    def queue(self, connection_id: str, kind: str, payload: dict[str, Any], **refs: Any) -> str:
        now, ident = time.time(), new_id()
        with self.meta.begin() as conn:
            conn.execute(
                sa.insert(t.notifications).values(
                    id=ident, connection_id=connection_id, kind=kind,
                    payload={**payload, "notification_id": ident}, status="pending", attempts=0,
                    next_attempt_at=now, created_at=now, **refs,
                )
            )  # fmt: skip
        return ident

    def claim_deliveries(self, now: float, limit: int, hold_s: float) -> list[Delivery]:
        """Pending notifications that are due, each held for ``hold_s`` by its claimer."""
        n = t.notifications
        with self.meta.engine.connect() as conn:
            due = conn.execute(
                sa.select(n).where(n.c.status == "pending", n.c.next_attempt_at <= now)
                .order_by(n.c.created_at).limit(limit)
            ).all()  # fmt: skip
        claimed = []
        for row in due:
            with self.meta.begin() as conn:
                won = conn.execute(
                    sa.update(n)
                    .where(n.c.id == row.id, n.c.status == "pending",
                           n.c.next_attempt_at == row.next_attempt_at)
                    .values(next_attempt_at=now + hold_s, attempts=row.attempts + 1)
                ).rowcount  # fmt: skip
            if won == 1:
                claimed.append(
                    Delivery(row.id, row.connection_id, row.kind, row.payload, row.attempts + 1)
                )
        return claimed

    def delivered(self, delivery_id: str) -> None:
        with self.meta.begin() as conn:
            conn.execute(
                sa.update(t.notifications)
                .where(t.notifications.c.id == delivery_id)
                .values(status="delivered", delivered_at=time.time(), last_error=None)
            )

    def delivery_failed(self, delivery_id: str, error: str, retry_at: float | None) -> None:
        values: Row = {"last_error": error[:500]}
        if retry_at is None:
            values["status"] = "failed"
        else:
            values["next_attempt_at"] = retry_at
        with self.meta.begin() as conn:
            conn.execute(
                sa.update(t.notifications)
                .where(t.notifications.c.id == delivery_id)
                .values(**values)
            )

    def get_notification(self, ident: str) -> Row:
        n = t.notifications
        with self.meta.engine.connect() as conn:
            row = _row(conn.execute(sa.select(n).where(n.c.id == ident)).first())
        if row is None:
            raise not_found("notification", ident)
        return row

    # -- workflows -------------------------------------------------------------------------
    def list_workflows(self) -> list[Row]:
        w = t.workflows
        with self.meta.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(sa.select(w).order_by(w.c.name))]

    def get_workflow(self, ident: str) -> Row:
        return self._named(t.workflows, "workflow", ident)

    def create_workflow(self, values: Row, owner: str) -> Row:
        now, ident = time.time(), new_id()
        due = now if values.get("every_s") else None
        self._write(
            "workflow",
            values.get("name"),
            sa.insert(t.workflows).values(
                id=ident,
                owner=owner,
                next_due_at=due,
                created_at=now,
                updated_at=now,
                **values,
            ),
        )
        return self.get_workflow(ident)

    def update_workflow(self, ident: str, values: Row) -> Row:
        current = self.get_workflow(ident)
        changes = {**values, "updated_at": time.time()}
        if "every_s" in values:
            changes["next_due_at"] = time.time() if values["every_s"] else None
        self._write(
            "workflow",
            values.get("name"),
            sa.update(t.workflows).where(t.workflows.c.id == current["id"]).values(**changes),
        )
        return self.get_workflow(current["id"])

    def delete_workflow(self, ident: str) -> None:
        current = self.get_workflow(ident)
        with self.meta.begin() as conn:
            conn.execute(
                sa.delete(t.workflow_runs).where(t.workflow_runs.c.workflow_id == current["id"])
            )
            conn.execute(sa.delete(t.workflows).where(t.workflows.c.id == current["id"]))

    def claim_due_workflows(self, now: float, limit: int) -> list[Row]:
        """Due, enabled, scheduled workflows, claimed as alerts are."""
        return _claim_due(self.meta, t.workflows, now, limit)

    def start_workflow_run(self, workflow_id: str, trigger: str, principal: str) -> str:
        ident = new_id()
        with self.meta.begin() as conn:
            conn.execute(
                sa.insert(t.workflow_runs).values(
                    id=ident, workflow_id=workflow_id, trigger=trigger, principal=principal,
                    status="running", steps=[], started_at=time.time(),
                )
            )  # fmt: skip
        return ident

    def finish_workflow_run(
        self,
        run_id: str,
        status: str,
        steps: list[Row],
        deliveries: list[tuple[str, dict[str, Any]]],
    ) -> None:
        now = time.time()
        with self.meta.begin() as conn:
            conn.execute(
                sa.update(t.workflow_runs)
                .where(t.workflow_runs.c.id == run_id)
                .values(status=status, steps=steps, finished_at=now)
            )
            for connection_id, payload in deliveries:
                ident = new_id()
                conn.execute(
                    sa.insert(t.notifications).values(
                        id=ident, connection_id=connection_id, workflow_run_id=run_id,
                        kind="workflow", payload={**payload, "notification_id": ident},
                        status="pending", attempts=0, next_attempt_at=now, created_at=now,
                    )
                )  # fmt: skip

    def get_workflow_run(self, run_id: str) -> tuple[Row, list[Row]]:
        r, n = t.workflow_runs, t.notifications
        with self.meta.engine.connect() as conn:
            row = _row(conn.execute(sa.select(r).where(r.c.id == run_id)).first())
            if row is None:
                raise not_found("workflow run", run_id)
            notes = [
                dict(x._mapping)
                for x in conn.execute(sa.select(n).where(n.c.workflow_run_id == run_id))
            ]
        return row, notes

    def list_workflow_runs(self, workflow_id: str, limit: int) -> list[Row]:
        r = t.workflow_runs
        with self.meta.engine.connect() as conn:
            rows = conn.execute(
                sa.select(r).where(r.c.workflow_id == workflow_id)
                .order_by(r.c.started_at.desc()).limit(limit)
            )  # fmt: skip
            return [dict(x._mapping) for x in rows]

    # -- the leader lease ------------------------------------------------------------------
    def acquire_lease(self, name: str, holder: str, ttl_s: float, now: float) -> bool:
        """Take or renew the lease ``name``; True when ``holder`` is the leader until now+ttl."""
        lease = t.leases
        with self.meta.begin() as conn:
            renewed = conn.execute(
                sa.update(lease)
                .where(lease.c.name == name,
                       sa.or_(lease.c.holder == holder, lease.c.expires_at <= now))
                .values(holder=holder, expires_at=now + ttl_s)
            ).rowcount  # fmt: skip
            if renewed == 1:
                return True
            exists = conn.execute(sa.select(lease.c.name).where(lease.c.name == name)).first()
        if exists is not None:
            return False
        try:
            with self.meta.begin() as conn:
                conn.execute(
                    sa.insert(lease).values(
                        name=name, holder=holder, expires_at=now + ttl_s, acquired_at=now
                    )
                )
        except sa.exc.IntegrityError:
            return False  # another candidate inserted it first
        return True

    def release_lease(self, name: str, holder: str) -> None:
        lease = t.leases
        with self.meta.begin() as conn:
            conn.execute(
                sa.update(lease)
                .where(lease.c.name == name, lease.c.holder == holder)
                .values(expires_at=0.0)
            )

    def lease_holder(self, name: str, now: float) -> str | None:
        lease = t.leases
        with self.meta.engine.connect() as conn:
            row = conn.execute(sa.select(lease).where(lease.c.name == name)).first()
        return row.holder if row is not None and row.expires_at > now else None


def _conflict(what: str, name: Any) -> AlertError:
    return AlertError(409, "Conflict", f"a {what} named '{name}' already exists")


def _claim_due(meta: MetaStore, table: sa.Table, now: float, limit: int) -> list[Row]:
    """Rows of ``table`` due by ``now``, each claimed by moving ``next_due_at`` one period
    (``every_s``) on with an update conditional on the due time read: one claimer wins."""
    c = table.c
    with meta.engine.connect() as conn:
        due = conn.execute(
            sa.select(table)
            .where(c.enabled.is_(True), c.every_s.is_not(None), c.next_due_at <= now)
            .order_by(c.next_due_at)
            .limit(limit)
        ).all()
    claimed = []
    for row in due:
        following = row.next_due_at + row.every_s
        if following <= now:  # behind (after downtime): one period from now, no catch-up burst
            following = now + row.every_s
        with meta.begin() as conn:
            won = conn.execute(
                sa.update(table)
                .where(c.id == row.id, c.next_due_at == row.next_due_at)
                .values(next_due_at=following)
            ).rowcount
        if won == 1:
            claimed.append({**row._mapping, "next_due_at": following})
    return claimed
