"""The alerting service every surface calls: definitions, authorization, evaluations, runs.

REST routes, MCP tools and the scheduler share one :class:`AlertService` per process
(:func:`shared`). Who may do what, through the one authorization function
(:func:`bzrk.auth.permissions.authorize`):

* an alert or workflow is visible to whoever may query its database (cluster admins: all);
  creating one, or moving it to another database, needs query access to that database;
* changing, muting, testing or deleting one is for its owner or a cluster admin;
* connections are shared: any signed-in principal lists them (never their secrets) and
  notifies them; changing or deleting one is for its owner or a cluster admin;
* an alert **runs as its owner**, with the owner's grants checked before every evaluation: a
  revoked grant (or a disabled or deleted owner) stops the alert from seeing the database, and
  its evaluations record a coded error (``AccessDenied``) until access returns.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from bzrk.alerts import views
from bzrk.alerts.durations import parse_duration
from bzrk.alerts.errors import AlertError, bad, forbidden, not_found
from bzrk.alerts.evaluate import Outcome, failure, run_condition
from bzrk.alerts.model import (
    Limits,
    alert_values,
    connection_values,
    workflow_values,
)
from bzrk.alerts.notify import DeliveryError, Dispatcher
from bzrk.alerts.secrets import SecretBox
from bzrk.alerts.states import Stored, step
from bzrk.alerts.store import AlertStore
from bzrk.alerts.workflows import run_steps
from bzrk.auth import accounts, audit, permissions
from bzrk.auth.internal import Principal, parse_key
from bzrk.engine.request import QueryRequest
from bzrk.engine.stop import parse_stop_when
from bzrk.meta import schema
from bzrk.meta.store import NotFound
from bzrk.server.context import AppContext

log = logging.getLogger("bzrk.alerts")

HISTORY_KEEP = 1000
COMPONENT = "alerts"

Row = dict[str, Any]


def shared(ctx: AppContext) -> AlertService:
    """The process's alert service (made on first use, kept in ``ctx.components``)."""
    found = ctx.components.get(COMPONENT)
    if not isinstance(found, AlertService):
        found = AlertService(ctx)
        ctx.components[COMPONENT] = found
    return found


class AlertService:
    def __init__(self, ctx: AppContext) -> None:
        settings = ctx.settings
        self.ctx = ctx
        self.store = AlertStore(ctx.meta, SecretBox.for_data_dir(settings.data_dir))
        self.limits = Limits(
            min_every_s=settings.alerts_min_every_s,
            default_timeout_ms=settings.query_default_timeout_ms,
            max_timeout_ms=settings.query_max_timeout_ms,
        )
        self.dispatcher = Dispatcher(
            self.store,
            timeout_s=settings.alerts_webhook_timeout_s,
            max_attempts=settings.alerts_delivery_max_attempts,
        )

    async def aclose(self) -> None:
        await self.dispatcher.aclose()

    # -- authorization -----------------------------------------------------------------------
    def _may_query(self, principal: Principal, database: str) -> str | None:
        decision = permissions.authorize(
            self.ctx.meta, principal, permissions.Action.QUERY, database
        )
        return None if decision.allowed else decision.message

    def _require_query(self, principal: Principal, database: str) -> None:
        denied = self._may_query(principal, database)
        if denied is not None:
            raise AlertError(403, permissions.ACCESS_DENIED, denied)

    def _visible(self, principal: Principal, row: Row, what: str) -> Row:
        if not principal.is_admin and self._may_query(principal, row["database"]) is not None:
            raise not_found(what, row["id"])
        return row

    def _readable(self, principal: Principal, rows: list[Row]) -> list[Row]:
        """The alerts or workflows of ``rows`` on databases ``principal`` may query."""
        if principal.is_admin:
            return rows
        databases = self.ctx.meta.list_databases()
        allowed = {db.name for db in permissions.visible(self.ctx.meta, principal, databases)}
        return [r for r in rows if r["database"] in allowed]

    @staticmethod
    def _require_owner(principal: Principal, row: Row, what: str) -> None:
        if row["owner"] != principal.key and not principal.is_admin:
            raise forbidden(f"only the owner or an admin may change this {what}")

    def owner_principal(self, key: str) -> Principal:
        """The principal an alert runs as, with its current role; AlertError when it cannot."""
        try:
            kind, ident = parse_key(key)
            info = accounts.resolve_principal(self.ctx.meta, key)
        except (ValueError, NotFound):
            raise AlertError(
                403, permissions.ACCESS_DENIED, f"the owner {key} no longer exists"
            ) from None
        if kind == "user":
            with self.ctx.meta.engine.connect() as conn:
                disabled = conn.execute(
                    schema.users.select()
                    .with_only_columns(schema.users.c.disabled)
                    .where(schema.users.c.id == ident)
                ).scalar()
            if disabled:
                raise AlertError(
                    403, permissions.ACCESS_DENIED, f"the owner {info.name} is disabled"
                )
        return Principal(kind, info.id, info.name, (info.role,))

    def _names(self) -> dict[str, str]:
        return accounts.principal_names(self.ctx.meta)

    # -- connections -------------------------------------------------------------------------
    def list_connections(self, principal: Principal) -> list[Row]:
        names = self._names()
        return [views.connection(r, names) for r in self.store.list_connections()]

    def get_connection(self, principal: Principal, ident: str) -> Row:
        return views.connection(self.store.get_connection(ident), self._names())

    def create_connection(self, principal: Principal, body: Row) -> Row:
        values, secret, _ = connection_values(body, creating=True)
        return views.connection(
            self.store.create_connection(values, secret, principal.key), self._names()
        )

    def update_connection(self, principal: Principal, ident: str, body: Row) -> Row:
        current = self.store.get_connection(ident)
        self._require_owner(principal, current, "connection")
        values, secret, given = connection_values(
            body, creating=False, current_type=current["type"]
        )
        return views.connection(
            self.store.update_connection(ident, values, secret, given), self._names()
        )

    def delete_connection(self, principal: Principal, ident: str) -> None:
        self._require_owner(principal, self.store.get_connection(ident), "connection")
        self.store.delete_connection(ident)

    async def test_connection(self, principal: Principal, ident: str) -> Row:
        """Send one test message to a connection now; ``{"delivered", "error"}``."""
        row = await asyncio.to_thread(self.store.get_connection, ident)
        secret = await asyncio.to_thread(self.store.connection_secret, row)
        payload = {
            "alert": f"test of connection {row['name']}",
            "state": "test",
            "test": True,
            "value": None,
            "run_id": None,
            "notification_id": f"test-{int(time.time() * 1000)}",
            "sent_by": principal.key,
        }
        try:
            await self.dispatcher.send(row, secret, "test", payload)
        except DeliveryError as exc:
            return {"delivered": False, "error": exc.message}
        return {"delivered": True, "error": None}

    # -- alerts ------------------------------------------------------------------------------
    def list_alerts(self, principal: Principal) -> list[Row]:
        names, now = self._names(), time.time()
        rows = self._readable(principal, self.store.list_alerts())
        return [views.alert(r, names, now) for r in rows]

    def _alert_row(self, principal: Principal, ident: str) -> Row:
        return self._visible(principal, self.store.get_alert(ident), "alert")

    def get_alert(self, principal: Principal, ident: str) -> Row:
        return views.alert(self._alert_row(principal, ident), self._names(), time.time())

    def create_alert(self, principal: Principal, body: Row) -> Row:
        values = alert_values(body, self.limits, creating=True)
        self._require_query(principal, values["database"])
        values["connections"] = self.store.check_connections(values["connections"])
        row = self.store.create_alert(values, principal.key)
        return views.alert(row, self._names(), time.time())

    def update_alert(self, principal: Principal, ident: str, body: Row) -> Row:
        current = self._alert_row(principal, ident)
        self._require_owner(principal, current, "alert")
        values = alert_values(body, self.limits, creating=False)
        if "database" in values:
            self._require_query(principal, values["database"])
        if "connections" in values:
            values["connections"] = self.store.check_connections(values["connections"])
        return views.alert(
            self.store.update_alert(current["id"], values), self._names(), time.time()
        )

    def delete_alert(self, principal: Principal, ident: str) -> None:
        current = self._alert_row(principal, ident)
        self._require_owner(principal, current, "alert")
        self.store.delete_alert(current["id"])

    def mute_alert(self, principal: Principal, ident: str, body: Row) -> Row:
        """Mute for ``{"for": "1h"}`` or ``{"until": <RFC 3339>}``; ``{"for": null}`` unmutes."""
        current = self._alert_row(principal, ident)
        self._require_owner(principal, current, "alert")
        until: float | None
        if "until" in body and body["until"] is not None:
            from bzrk.engine.timewindow import TimeExpressionError, now_ticks, parse_instant

            try:
                ticks = parse_instant(str(body["until"]), now_ticks=now_ticks())
            except TimeExpressionError as exc:
                raise bad(f"'until': {exc}", "InvalidTimeRange") from None
            until = ticks / 10_000_000
        elif body.get("for") is not None:
            until = time.time() + parse_duration(body["for"], "for")
        elif "for" in body or "until" in body:
            until = None
        else:
            raise bad("send {'for': '1h'} or {'until': <time>} ({'for': null} unmutes)")
        return views.alert(self.store.set_muted(current["id"], until), self._names(), time.time())

    def history(self, principal: Principal, ident: str, limit: int) -> list[Row]:
        current = self._alert_row(principal, ident)
        return [
            views.evaluation(row, notes)
            for row, notes in self.store.list_evaluations(current["id"], limit)
        ]

    async def test_alert(self, principal: Principal, ident: str) -> Row:
        """Evaluate now and send a ``test`` notification whatever the verdict; no state change."""
        current = await asyncio.to_thread(self._alert_row, principal, ident)
        self._require_owner(principal, current, "alert")
        return await self.evaluate(current, test=True)

    # -- evaluation --------------------------------------------------------------------------
    async def _outcome(self, row: Row, owner: Principal | None, refusal: str | None) -> Outcome:
        if owner is None or refusal is not None:
            return failure(permissions.ACCESS_DENIED, refusal or "the owner cannot be resolved")
        executor = self.ctx.executor
        if executor is None:
            return failure("Unavailable", "this process has no query service")
        request = QueryRequest(
            query=row["query"],
            database=row["database"],
            since=row["since"],
            timeout_ms=row["timeout_ms"],
            stop_when=row["condition"],
            principal=owner.key,
            surface="alert",
        )
        return await run_condition(executor, request, parse_stop_when(row["condition"]))

    def _authorize_owner(self, row: Row) -> tuple[Principal | None, str | None]:
        try:
            owner = self.owner_principal(row["owner"])
        except AlertError as exc:
            return None, exc.message
        return owner, self._may_query(owner, row["database"])

    async def evaluate(self, row: Row, *, test: bool = False) -> Row:
        """One evaluation of the alert ``row``: run, decide, record, queue notifications."""
        now = time.time()
        owner, refusal = await asyncio.to_thread(self._authorize_owner, row)
        if (
            refusal is not None
            and (row.get("last_error") or {}).get("code") != permissions.ACCESS_DENIED
        ):
            audit.shared(self.ctx.components, self.ctx.meta).record(
                "request_refused",
                outcome=audit.REFUSED,
                reason=f"{permissions.ACCESS_DENIED}:alert_owner",
                actor=owner,
                target=f"database:{row['database']}",
                surface="alert",
                details={"alert": row["id"]},
            )
        outcome = await self._outcome(row, owner, refusal)
        muted = row["muted_until"] is not None and row["muted_until"] > now
        stored = Stored(
            row["state"],
            row["state_since"],
            row["pending_since"],
            row["notified_state"],
            row["last_notified_at"],
        )
        moved = step(
            stored, outcome.holds, now, for_s=row["for_s"], repeat_s=row["repeat_s"], muted=muted
        )
        evaluation = {
            "at": now,
            "status": _status(outcome, moved.state, test),
            "value": outcome.value,
            "run_id": outcome.run_id,
            "run_status": outcome.run_status,
            "error": outcome.error,
            "duration_ms": round(outcome.duration_ms, 3),
            "test": test,
            "muted": moved.held_back and not test,
        }
        deliveries: list[tuple[str, str, dict[str, Any]]] = []
        if test:
            kind = "test"
            payload = self._payload(
                row, "firing" if outcome.holds else "ok", outcome, now, test=True
            )
            deliveries = [(cid, kind, payload) for cid in row["connections"]]
            state: Row | None = None
        else:
            if moved.notify is not None:
                payload = self._payload(row, moved.notify, outcome, now)
                deliveries = [(cid, moved.notify, payload) for cid in row["connections"]]
            state = {
                **moved.columns(),
                "last_evaluated_at": now,
                "last_value": outcome.value,
                "last_run_id": outcome.run_id,
                "last_error": outcome.error,
            }
        evaluation_id = await asyncio.to_thread(
            self.store.record_evaluation, row["id"], evaluation, state, deliveries
        )
        if evaluation_id % 100 == 0:
            await asyncio.to_thread(self.store.prune_evaluations, row["id"], HISTORY_KEEP)
        notes = [{"id": "", "connection_id": c, "kind": k, "status": "pending", "attempts": 0,
                  "last_error": None, "delivered_at": None} for c, k, _ in deliveries]  # fmt: skip
        return views.evaluation({**evaluation, "id": evaluation_id}, notes)

    def _payload(
        self, row: Row, state: str, outcome: Outcome, now: float, *, test: bool = False
    ) -> Row:
        url = self.ctx.public_url
        return {
            "alert": row["name"],
            "alert_id": row["id"],
            "state": state,
            "value": outcome.value,
            "run_id": outcome.run_id,
            "condition": row["condition"],
            "query": row["query"],
            "database": row["database"],
            "since": row["since"],
            "severity": row["severity"],
            "labels": row["labels"],
            "first_row": outcome.first_row_json(),
            "evaluated_at": views.when(now),
            "test": test,
            "url": f"{url}/alerts/{row['id']}" if url else None,
        }

    # -- workflows ---------------------------------------------------------------------------
    def list_workflows(self, principal: Principal) -> list[Row]:
        names = self._names()
        rows = self._readable(principal, self.store.list_workflows())
        return [views.workflow(r, names) for r in rows]

    def _workflow_row(self, principal: Principal, ident: str) -> Row:
        return self._visible(principal, self.store.get_workflow(ident), "workflow")

    def get_workflow(self, principal: Principal, ident: str) -> Row:
        return views.workflow(self._workflow_row(principal, ident), self._names())

    def create_workflow(self, principal: Principal, body: Row) -> Row:
        values = workflow_values(body, self.limits, creating=True)
        for database in {values["database"], *(s.get("database") for s in values["steps"])} - {
            None
        }:
            self._require_query(principal, database)
        values["connections"] = self.store.check_connections(values["connections"])
        return views.workflow(self.store.create_workflow(values, principal.key), self._names())

    def update_workflow(self, principal: Principal, ident: str, body: Row) -> Row:
        current = self._workflow_row(principal, ident)
        self._require_owner(principal, current, "workflow")
        values = workflow_values(body, self.limits, creating=False)
        databases = {values.get("database"), *(s.get("database") for s in values.get("steps", []))}
        for database in databases - {None}:
            self._require_query(principal, database)
        if "connections" in values:
            values["connections"] = self.store.check_connections(values["connections"])
        return views.workflow(self.store.update_workflow(current["id"], values), self._names())

    def delete_workflow(self, principal: Principal, ident: str) -> None:
        current = self._workflow_row(principal, ident)
        self._require_owner(principal, current, "workflow")
        self.store.delete_workflow(current["id"])

    def workflow_runs(self, principal: Principal, ident: str, limit: int) -> list[Row]:
        current = self._workflow_row(principal, ident)
        return [
            views.workflow_run(r, self.store.get_workflow_run(r["id"])[1])
            for r in self.store.list_workflow_runs(current["id"], limit)
        ]

    async def run_workflow(
        self, principal: Principal | None, ident: str, *, trigger: str = "manual"
    ) -> Row:
        """Run a workflow now: as ``principal`` (on demand) or as its owner (``None``: the schedule)."""
        row = await asyncio.to_thread(self.store.get_workflow, ident)
        if principal is not None:
            await asyncio.to_thread(self._visible, principal, row, "workflow")
            runner: Principal | None = principal
            refusal = None
        else:
            try:
                runner = await asyncio.to_thread(self.owner_principal, row["owner"])
                refusal = None
            except AlertError as exc:
                runner, refusal = None, exc.message

        async def gate(database: str) -> str | None:
            if runner is None:
                return refusal
            return await asyncio.to_thread(self._may_query, runner, database)

        run_id = await asyncio.to_thread(
            self.store.start_workflow_run,
            row["id"],
            trigger,
            runner.key if runner else row["owner"],
        )
        executor = self.ctx.executor
        if executor is None:
            raise AlertError(503, "Unavailable", "this process has no query service")
        try:
            status, steps = await run_steps(
                executor,
                row,
                runner.key if runner else row["owner"],
                gate,
                self.limits.default_timeout_ms,
            )
        except BaseException:
            await asyncio.to_thread(self.store.finish_workflow_run, run_id, "error", [], [])
            raise
        deliveries = []
        if status == "completed":
            payload = {
                "workflow": row["name"],
                "workflow_id": row["id"],
                "state": "completed",
                "run_id": run_id,
                "steps": steps,
                "trigger": trigger,
                "finished_at": views.when(time.time()),
            }
            deliveries = [(cid, payload) for cid in row["connections"]]
        await asyncio.to_thread(self.store.finish_workflow_run, run_id, status, steps, deliveries)
        run, notes = await asyncio.to_thread(self.store.get_workflow_run, run_id)
        return views.workflow_run(run, notes)


def _status(outcome: Outcome, state: str, test: bool) -> str:
    """What an evaluation's history entry says: the state it led to (a test: its verdict),
    ``inconclusive`` for a partial answer that decides nothing, ``error`` for a failure."""
    if outcome.holds is None:
        return "inconclusive" if (outcome.error or {}).get("code") == "SoftBudget" else "error"
    if test:
        return "firing" if outcome.holds else "ok"
    return state
