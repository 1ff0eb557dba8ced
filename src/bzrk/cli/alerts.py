"""``bzrk alert list|create|show|mute|unmute|test|history|delete`` and ``bzrk workflow list|run``.

Each command is one call to the gateway's alerting API (``/api/v1/alerts``, ``/api/v1/workflows``;
docs/alerts.md) with the profile's credentials. ``--json`` prints the API's object as is, for
scripts and agents; otherwise a short text rendering.
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import quote

import typer

from bzrk.cli.errors import UsageError
from bzrk.cli.gateway import Gateway
from bzrk.cli.profiles import DatabaseOpt, EndpointOpt, ProfileOpt, TokenOpt, options, resolve

ALERTS = "/api/v1/alerts"
WORKFLOWS = "/api/v1/workflows"

alert_app = typer.Typer(help="Alerts: saved queries that watch and notify.", no_args_is_help=True)
workflow_app = typer.Typer(
    help="Workflows: query steps gated by 'Continue when'.", no_args_is_help=True
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the API's JSON answer.")]


def register(app: typer.Typer) -> None:
    """Add ``alert`` and ``workflow`` to the ``bzrk`` command."""
    app.add_typer(alert_app, name="alert")
    app.add_typer(workflow_app, name="workflow")


def _call(
    ctx: typer.Context,
    method: str,
    path: str,
    body: Any = None,
    *,
    profile: str | None,
    endpoint: str | None,
    token: str | None,
    database: str | None = None,
) -> tuple[Any, str]:
    connection = resolve(
        options(ctx, profile=profile, endpoint=endpoint, token=token, database=database)
    )
    with Gateway(connection) as gateway:
        return gateway.call(method, path, body), connection.database


def _seg(value: str) -> str:
    return quote(value, safe="")


def _dump(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, sort_keys=True, default=str))


def _state(alert: dict[str, Any]) -> str:
    return (
        alert["state"]
        + (" (muted)" if alert.get("muted") else "")
        + ("" if alert["enabled"] else " (paused)")
    )


@alert_app.command("list")
def alert_list(
    ctx: typer.Context,
    as_json: JsonOpt = False,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """List the alerts you can see, with their state."""
    body, _ = _call(ctx, "GET", ALERTS, profile=profile, endpoint=endpoint, token=token)
    if as_json:
        _dump(body)
        return
    alerts = body.get("alerts", [])
    if not alerts:
        typer.echo("No alerts.")
        return
    width = max(len(a["name"]) for a in alerts)
    for alert in alerts:
        typer.echo(
            f"{alert['name']:<{width}}  {_state(alert):<18} {alert['condition']:<16} "
            f"every {alert['every']:<5} {alert['database']}  {alert['id']}"
        )


def _labels(values: list[str]) -> dict[str, str]:
    labels = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--label takes KEY=VALUE, not {item!r}")
        labels[key] = value
    return labels


@alert_app.command("create")
def alert_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The alert's name (unique).")],
    query: Annotated[str, typer.Option("--query", "-q", help="KQL evaluated every period.")],
    condition: Annotated[
        str,
        typer.Option(
            "--condition", "-c", help="Stop-language predicate, e.g. 'n >= 50' or 'rows >= 1'."
        ),
    ],
    every: Annotated[str, typer.Option("--every", help="Schedule, e.g. 30s, 5m.")] = "1m",
    since: Annotated[str, typer.Option("--since", help="Window start, e.g. '10m ago'.")] = "5m ago",
    for_: Annotated[str, typer.Option("--for", help="Hold this long before firing.")] = "0s",
    repeat: Annotated[
        str | None, typer.Option("--repeat", help="Re-notify this often while firing.")
    ] = None,
    connection: Annotated[
        list[str] | None, typer.Option("--connection", help="Connection id or name (repeatable).")
    ] = None,
    severity: Annotated[
        str, typer.Option("--severity", help="info, warning or critical.")
    ] = "warning",
    label: Annotated[
        list[str] | None, typer.Option("--label", help="KEY=VALUE (repeatable).")
    ] = None,
    as_json: JsonOpt = False,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    database: DatabaseOpt = None,
    token: TokenOpt = None,
) -> None:
    """Create an alert on the database (it runs as you, with your access)."""
    connection_info = resolve(
        options(ctx, profile=profile, endpoint=endpoint, token=token, database=database)
    )
    request = {
        "name": name,
        "query": query,
        "database": connection_info.database,
        "since": since,
        "every": every,
        "condition": condition,
        "for": for_,
        "repeat": repeat,
        "connections": connection or [],
        "severity": severity,
        "labels": _labels(label or []),
    }
    with Gateway(connection_info) as gateway:
        alert = gateway.call("POST", ALERTS, request)["alert"]
    if as_json:
        _dump(alert)
        return
    typer.echo(
        f"Created alert {alert['name']} ({alert['id']}): {alert['condition']} every {alert['every']}"
    )


@alert_app.command("show")
def alert_show(
    ctx: typer.Context,
    alert: Annotated[str, typer.Argument(help="Alert id or name.")],
    as_json: JsonOpt = False,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """One alert: definition, state, last evaluation."""
    body, _ = _call(
        ctx, "GET", f"{ALERTS}/{_seg(alert)}", profile=profile, endpoint=endpoint, token=token
    )
    found = body["alert"]
    if as_json:
        _dump(found)
        return
    last = found.get("last_evaluation") or {}
    for key, value in (
        ("name", found["name"]),
        ("id", found["id"]),
        ("state", f"{_state(found)} since {found['state_since']}"),
        ("query", found["query"]),
        ("database", found["database"]),
        ("window", f"since {found['since']}"),
        (
            "schedule",
            f"every {found['every']}, for {found['for']}"
            + (f", repeat {found['repeat']}" if found["repeat"] else ""),
        ),
        ("condition", found["condition"]),
        ("severity", found["severity"]),
        ("connections", ", ".join(found["connections"]) or "none"),
        ("muted until", found["muted_until"] or "-"),
        (
            "last value",
            f"{last.get('value')} at {last.get('time')} (run {last.get('run_id')})"
            if last
            else "-",
        ),
        ("last error", json.dumps(last["error"]) if last.get("error") else "-"),
        ("owner", found["owner_name"] or found["owner"]),
    ):
        typer.echo(f"{key:<12} {value}")


@alert_app.command("mute")
def alert_mute(
    ctx: typer.Context,
    alert: Annotated[str, typer.Argument(help="Alert id or name.")],
    for_: Annotated[str | None, typer.Option("--for", help="Mute for this long, e.g. 1h.")] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Mute until this time (RFC 3339).")
    ] = None,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """Hold back the alert's firing notifications for a while (evaluations go on)."""
    if (for_ is None) == (until is None):
        raise UsageError("give one of --for DURATION or --until TIME")
    body = {"for": for_} if for_ is not None else {"until": until}
    found, _ = _call(
        ctx,
        "POST",
        f"{ALERTS}/{_seg(alert)}/mute",
        body,
        profile=profile,
        endpoint=endpoint,
        token=token,
    )
    typer.echo(f"Muted {found['alert']['name']} until {found['alert']['muted_until']}")


@alert_app.command("unmute")
def alert_unmute(
    ctx: typer.Context,
    alert: Annotated[str, typer.Argument(help="Alert id or name.")],
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """End a mute now."""
    found, _ = _call(
        ctx,
        "DELETE",
        f"{ALERTS}/{_seg(alert)}/mute",
        profile=profile,
        endpoint=endpoint,
        token=token,
    )
    typer.echo(f"Unmuted {found['alert']['name']}")


@alert_app.command("history")
def alert_history(
    ctx: typer.Context,
    alert: Annotated[str, typer.Argument(help="Alert id or name.")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=1000)] = 20,
    as_json: JsonOpt = False,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """The alert's evaluations, newest first: time, status, value, run id, notification."""
    body, _ = _call(
        ctx,
        "GET",
        f"{ALERTS}/{_seg(alert)}/history?limit={limit}",
        profile=profile,
        endpoint=endpoint,
        token=token,
    )
    if as_json:
        _dump(body)
        return
    for item in body.get("evaluations", []):
        error = (
            f"  {item['error']['code']}: {item['error']['message']}" if item.get("error") else ""
        )
        typer.echo(
            f"{item['time']}  {item['status']:<12} value={item['value']!s:<8} "
            f"run={item['run_id'] or '-'}  notified={item['notification']}{error}"
        )


@alert_app.command("test")
def alert_test(
    ctx: typer.Context,
    alert: Annotated[str, typer.Argument(help="Alert id or name.")],
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """Evaluate now and send a test notification to the alert's connections (state unchanged)."""
    body, _ = _call(
        ctx, "POST", f"{ALERTS}/{_seg(alert)}/test", profile=profile, endpoint=endpoint, token=token
    )
    item = body["evaluation"]
    typer.echo(
        f"{item['status']} value={item['value']} run={item['run_id']} notification={item['notification']}"
    )


@alert_app.command("delete")
def alert_delete(
    ctx: typer.Context,
    alert: Annotated[str, typer.Argument(help="Alert id or name.")],
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """Delete an alert and its history."""
    _call(ctx, "DELETE", f"{ALERTS}/{_seg(alert)}", profile=profile, endpoint=endpoint, token=token)
    typer.echo(f"Deleted alert {alert}")


@workflow_app.command("list")
def workflow_list(
    ctx: typer.Context,
    as_json: JsonOpt = False,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """List workflows."""
    body, _ = _call(ctx, "GET", WORKFLOWS, profile=profile, endpoint=endpoint, token=token)
    if as_json:
        _dump(body)
        return
    for item in body.get("workflows", []):
        schedule = f"every {item['every']}" if item["every"] else "on demand"
        steps = " → ".join(s["name"] for s in item["steps"])
        typer.echo(f"{item['name']}  ({steps})  {schedule}  {item['id']}")


@workflow_app.command("run")
def workflow_run(
    ctx: typer.Context,
    workflow: Annotated[str, typer.Argument(help="Workflow id or name.")],
    as_json: JsonOpt = False,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """Run a workflow now, as you; prints each step's outcome. Exit 3 when it stopped or failed."""
    body, _ = _call(
        ctx,
        "POST",
        f"{WORKFLOWS}/{_seg(workflow)}/run",
        profile=profile,
        endpoint=endpoint,
        token=token,
    )
    run = body["run"]
    if as_json:
        _dump(run)
    else:
        typer.echo(f"workflow run {run['id']}: {run['status']}")
        for step in run["steps"]:
            detail = ""
            if step.get("run_id"):
                detail = f"  run={step['run_id']} rows={step.get('row_count')} first={json.dumps(step.get('first_row'), default=str)}"
            if step.get("error"):
                detail += f"  {step['error']['code']}: {step['error']['message']}"
            typer.echo(f"  {step['name']:<16} {step['status']:<8}{detail}")
    if run["status"] != "completed":
        raise typer.Exit(3)
