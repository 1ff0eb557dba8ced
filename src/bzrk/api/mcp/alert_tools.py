"""The alerting tools: alerts, workflows, connections and dashboards over MCP.

``list_alerts``, ``get_alert``, ``create_alert``, ``update_alert``, ``delete_alert``,
``list_workflows``, ``run_workflow``, ``list_connections``, ``list_dashboards`` and
``get_dashboard`` call the same :class:`~bzrk.alerts.service.AlertService` as REST, as the
calling principal, so a model sees and changes exactly what its token may; the structured
results are the REST objects (:mod:`bzrk.alerts.views`). Failures are tool errors carrying
the service's code (``InvalidCondition``, ``AccessDenied``, ``NotFound``, …).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from bzrk.alerts import dashboards
from bzrk.alerts.errors import AlertError
from bzrk.alerts.service import AlertService, shared
from bzrk.api.mcp.tooling import Tool, ToolCall, ToolError, ToolOutcome, obj
from bzrk.auth.internal import Principal

STOP_LANGUAGE = (
    "Conditions use the stop language of query's stop_when: '<rows|column> <op> <number>' with "
    "op one of >= <= > < == != (e.g. 'n >= 50' on a summarize n=count(), 'rows >= 1')."
)
ANY_OBJECT: dict[str, Any] = {"type": "object"}
ALERT_PROPS: dict[str, Any] = {
    "name": {"type": "string", "description": "Unique name."},
    "query": {"type": "string", "description": "KQL evaluated every period."},
    "database": {"type": "string"},
    "since": {"type": "string", "description": "Window start, relative: '5m ago' (default)."},
    "every": {"type": "string", "description": "Schedule: '5s', '1m' (default), '1h'."},
    "condition": {"type": "string", "description": STOP_LANGUAGE},
    "connections": {"type": "array", "items": {"type": "string"}, "description": "Connection ids or names (list_connections)."},
    "for": {"type": "string", "description": "Hysteresis: how long the condition must hold before firing (default 0s)."},
    "repeat": {"type": ["string", "null"], "description": "Re-notify every this long while firing (default never)."},
    "timeout_ms": {"type": "integer", "minimum": 1},
    "severity": {"type": "string", "enum": ["info", "warning", "critical"]},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "description": {"type": "string"},
    "enabled": {"type": "boolean"},
}  # fmt: skip
ALERT_OUT = obj({"alert": ANY_OBJECT}, ("alert",), closed=False)


def _principal(call: ToolCall) -> Principal:
    if call.principal is None:
        raise ToolError("no authenticated principal", code="Unauthenticated")
    return call.principal


async def _service(call: ToolCall, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(principal, *args)`` on the service, in a thread when it blocks; errors as tool errors."""
    principal = _principal(call)
    try:
        result = fn(principal, *args)
        if asyncio.iscoroutine(result):
            return await result
        return result
    except AlertError as exc:
        raise ToolError(exc.message, code=exc.code) from None


def _svc(call: ToolCall) -> AlertService:
    return shared(call.app)


def _blocking(method: str) -> Callable[..., Awaitable[Any]]:
    async def run(call: ToolCall, *args: Any) -> Any:
        svc = _svc(call)
        return await _service(
            call, lambda p, *a: asyncio.to_thread(getattr(svc, method), p, *a), *args
        )

    return run


def _line(alert: dict[str, Any]) -> str:
    muted = " (muted)" if alert.get("muted") else ""
    return f"- {alert['name']} [{alert['state']}{muted}] {alert['condition']} every {alert['every']} on {alert['database']} (id {alert['id']})"


async def list_alerts(call: ToolCall) -> ToolOutcome:
    found = await _blocking("list_alerts")(call)
    text = "\n".join([f"{len(found)} alert(s):", *map(_line, found)])
    return ToolOutcome({"alerts": found}, text)


async def get_alert(call: ToolCall) -> ToolOutcome:
    ident = call.arguments["alert"]
    alert = await _blocking("get_alert")(call, ident)
    history = await _blocking("history")(call, ident, call.arguments.get("history", 10))
    lines = [_line(alert), f"query: {alert['query']}", "recent evaluations:"]
    lines += [
        f"  {e['time']} {e['status']} value={e['value']} run={e['run_id']} notified={e['notification']}"
        for e in history
    ]
    return ToolOutcome({"alert": alert, "evaluations": history}, "\n".join(lines))


async def create_alert(call: ToolCall) -> ToolOutcome:
    alert = await _blocking("create_alert")(call, dict(call.arguments))
    return ToolOutcome({"alert": alert}, "created " + _line(alert)[2:])


async def update_alert(call: ToolCall) -> ToolOutcome:
    changes = {k: v for k, v in call.arguments.items() if k != "alert"}
    alert = await _blocking("update_alert")(call, call.arguments["alert"], changes)
    return ToolOutcome({"alert": alert}, "updated " + _line(alert)[2:])


async def delete_alert(call: ToolCall) -> ToolOutcome:
    await _blocking("delete_alert")(call, call.arguments["alert"])
    return ToolOutcome(
        {"deleted": call.arguments["alert"]}, f"deleted alert {call.arguments['alert']}"
    )


async def list_workflows(call: ToolCall) -> ToolOutcome:
    found = await _blocking("list_workflows")(call)
    lines = [f"{len(found)} workflow(s):"] + [
        f"- {w['name']}: {len(w['steps'])} step(s) ({', '.join(s['name'] for s in w['steps'])}), "
        f"{'every ' + w['every'] if w['every'] else 'on demand'} (id {w['id']})"
        for w in found
    ]
    return ToolOutcome({"workflows": found}, "\n".join(lines))


async def run_workflow(call: ToolCall) -> ToolOutcome:
    svc = _svc(call)
    run = await _service(call, svc.run_workflow, call.arguments["workflow"])
    lines = [f"workflow run {run['id']}: {run['status']}"] + [
        f"- {s['name']}: {s['status']}"
        + (
            f" (run {s['run_id']}, first row {json.dumps(s.get('first_row'), default=str)})"
            if s.get("run_id")
            else ""
        )
        for s in run["steps"]
    ]
    return ToolOutcome({"run": run}, "\n".join(lines))


async def list_connections(call: ToolCall) -> ToolOutcome:
    found = await _blocking("list_connections")(call)
    lines = [f"{len(found)} connection(s):"] + [
        f"- {c['name']} ({c['type']}, id {c['id']})" for c in found
    ]
    return ToolOutcome({"connections": found}, "\n".join(lines))


async def list_dashboards(call: ToolCall) -> ToolOutcome:
    _principal(call)
    found = await asyncio.to_thread(dashboards.list_dashboards, call.app.meta)
    lines = [f"{len(found)} dashboard(s):"] + [
        f"- {d['name']} ({d['panels']} panel(s), id {d['id']})" for d in found
    ]
    return ToolOutcome({"dashboards": found}, "\n".join(lines))


async def get_dashboard(call: ToolCall) -> ToolOutcome:
    principal = _principal(call)
    try:
        found = await asyncio.to_thread(
            dashboards.get_dashboard, call.app.meta, principal, call.arguments["dashboard"]
        )
    except AlertError as exc:
        raise ToolError(exc.message, code=exc.code) from None
    lines = [f"dashboard {found['name']} (since {found['since']}):"] + [
        f"- {p['title']}: {p['query'] if p['query'] is not None else '(not visible to you)'}"
        for p in found["panels"]
    ]
    return ToolOutcome({"dashboard": found}, "\n".join(lines))


def _ident(name: str, what: str) -> dict[str, Any]:
    return {name: {"type": "string", "description": f"The {what}'s id or name."}}


LIST_ALERTS = Tool(
    name="list_alerts",
    title="List alerts",
    description="List the alerts you can see (their databases are queryable by you), with state (ok, pending, firing, resolved), condition and schedule.",
    input_schema={"type": "object", "additionalProperties": False},
    output_schema=obj({"alerts": {"type": "array", "items": ANY_OBJECT}}, ("alerts",)),
    handler=list_alerts,
)
GET_ALERT = Tool(
    name="get_alert",
    title="Get an alert",
    description="One alert with its recent evaluations (time, status, value, run_id — open a run with get_run — and notification outcome).",
    input_schema=obj(
        {**_ident("alert", "alert"), "history": {"type": "integer", "minimum": 1, "maximum": 200}},
        ("alert",),
    ),
    output_schema=obj(
        {"alert": ANY_OBJECT, "evaluations": {"type": "array", "items": ANY_OBJECT}},
        ("alert", "evaluations"),
    ),
    handler=get_alert,
)
CREATE_ALERT = Tool(
    name="create_alert",
    title="Create an alert",
    description=(
        "Watch a KQL query: every period it runs over the window as a recorded run, and when the "
        "condition holds the alert fires and notifies its connections (once; resolved when it "
        "stops holding). It runs as you, with your access. " + STOP_LANGUAGE
    ),
    input_schema=obj(ALERT_PROPS, ("name", "query", "database", "condition")),
    output_schema=ALERT_OUT,
    handler=create_alert,
    read_only=False,
)
UPDATE_ALERT = Tool(
    name="update_alert",
    title="Update an alert",
    description="Change any fields of an alert you own (or any, as an admin); 'enabled': false pauses it.",
    input_schema=obj({**_ident("alert", "alert"), **ALERT_PROPS}, ("alert",)),
    output_schema=ALERT_OUT,
    handler=update_alert,
    read_only=False,
)
DELETE_ALERT = Tool(
    name="delete_alert",
    title="Delete an alert",
    description="Delete an alert you own (or any, as an admin) with its history.",
    input_schema=obj(_ident("alert", "alert"), ("alert",)),
    output_schema=obj({"deleted": {"type": "string"}}, ("deleted",)),
    handler=delete_alert,
    read_only=False,
    destructive=True,
)
LIST_WORKFLOWS = Tool(
    name="list_workflows",
    title="List workflows",
    description="List workflows: ordered query steps, each gated by a 'Continue when' predicate (the stop language), ending in a notification.",
    input_schema={"type": "object", "additionalProperties": False},
    output_schema=obj({"workflows": {"type": "array", "items": ANY_OBJECT}}, ("workflows",)),
    handler=list_workflows,
)
RUN_WORKFLOW = Tool(
    name="run_workflow",
    title="Run a workflow",
    description="Run a workflow now, as you: each step is a recorded run; a false 'Continue when' stops it and skips the rest. Returns every step's status, run_id and first row.",
    input_schema=obj(_ident("workflow", "workflow"), ("workflow",)),
    output_schema=obj({"run": ANY_OBJECT}, ("run",)),
    handler=run_workflow,
    read_only=False,
)
LIST_CONNECTIONS = Tool(
    name="list_connections",
    title="List connections",
    description="Where alerts and workflows can notify: webhooks, Slack incoming webhooks, e-mail. Secrets are never shown.",
    input_schema={"type": "object", "additionalProperties": False},
    output_schema=obj({"connections": {"type": "array", "items": ANY_OBJECT}}, ("connections",)),
    handler=list_connections,
)
LIST_DASHBOARDS = Tool(
    name="list_dashboards",
    title="List dashboards",
    description="The web UI's dashboards: named grids of saved library queries over one time range.",
    input_schema={"type": "object", "additionalProperties": False},
    output_schema=obj({"dashboards": {"type": "array", "items": ANY_OBJECT}}, ("dashboards",)),
    handler=list_dashboards,
)
GET_DASHBOARD = Tool(
    name="get_dashboard",
    title="Get a dashboard",
    description="One dashboard with each panel's query, database and window (run them with query).",
    input_schema=obj(_ident("dashboard", "dashboard"), ("dashboard",)),
    output_schema=obj({"dashboard": ANY_OBJECT}, ("dashboard",)),
    handler=get_dashboard,
)

ALERT_TOOLS: tuple[Tool, ...] = (
    LIST_ALERTS,
    GET_ALERT,
    CREATE_ALERT,
    UPDATE_ALERT,
    DELETE_ALERT,
    LIST_WORKFLOWS,
    RUN_WORKFLOW,
    LIST_CONNECTIONS,
    LIST_DASHBOARDS,
    GET_DASHBOARD,
)
