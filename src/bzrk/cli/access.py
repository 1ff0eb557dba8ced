"""``bzrk grant``, ``bzrk revoke`` and ``bzrk access list``: who may see which database.

Permissions are tuples *(principal, relation, object)* (docs/auth.md): a principal is
``user:<name or id>`` or ``sp:<name or id>`` (the kind is required — a user and a service
principal may share a name), a relation is ``viewer``, ``editor`` or ``admin``, and the object
a database, or ``cluster`` for the cluster admin role. Everything goes through the gateway's
admin API (``/api/v1/admin/grants``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from bzrk.cli.gateway import Gateway
from bzrk.cli.profiles import EndpointOpt, ProfileOpt, TokenOpt, options, resolve

GRANTS = "/api/v1/admin/grants"

access_app = typer.Typer(
    help="Who may see which database (permission tuples).", no_args_is_help=True
)

PrincipalArg = Annotated[
    str, typer.Argument(help="user:<name or id> or sp:<name or id> (service principal).")
]
RelationArg = Annotated[str, typer.Argument(help="viewer, editor or admin.")]
DatabaseArg = Annotated[str, typer.Argument(help="A database name, or 'cluster' (admin only).")]


def _gateway(
    ctx: typer.Context, profile: str | None, endpoint: str | None, token: str | None
) -> Gateway:
    return Gateway(resolve(options(ctx, profile=profile, endpoint=endpoint, token=token)))


def _object(database: str) -> str:
    return "cluster" if database in ("cluster", "*") else f"database {database}"


def grant(
    ctx: typer.Context,
    principal: PrincipalArg,
    relation: RelationArg,
    database: DatabaseArg,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """Give a principal a relation on a database (it applies to its next request)."""
    body = {"principal": principal, "relation": relation, "database": database}
    with _gateway(ctx, profile, endpoint, token) as gateway:
        answer = gateway.call("POST", GRANTS, body)
    found = answer.get("grant") or answer.get("principal") or {}
    key = found.get("principal") if "grant" in answer else found.get("key")
    verb = "Granted" if answer.get("created") else "Already granted:"
    typer.echo(f"{verb} {relation} on {_object(database)} to {principal} ({key})")


def revoke(
    ctx: typer.Context,
    principal: PrincipalArg,
    relation: RelationArg,
    database: DatabaseArg,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """Take a relation away (the principal's next request is refused)."""
    params = f"?principal={_q(principal)}&relation={_q(relation)}&database={_q(database)}"
    with _gateway(ctx, profile, endpoint, token) as gateway:
        gateway.call("DELETE", GRANTS + params)
    typer.echo(f"Revoked {relation} on {_object(database)} from {principal}")


def _q(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


@access_app.command("list")
def access_list(
    ctx: typer.Context,
    principal: Annotated[
        str | None, typer.Option("--principal", help="Only this user:… or sp:….")
    ] = None,
    database: Annotated[str | None, typer.Option("--database", help="Only this database.")] = None,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """List permission tuples: yours, those of databases you administer (all, for admins)."""
    query = "&".join(
        f"{name}={_q(value)}"
        for name, value in (("principal", principal), ("database", database))
        if value
    )
    with _gateway(ctx, profile, endpoint, token) as gateway:
        body = gateway.call("GET", GRANTS + (f"?{query}" if query else ""))
    rows: list[dict[str, Any]] = body.get("grants", [])
    if not rows:
        typer.echo("No grants.")
        return
    headers = ("PRINCIPAL", "NAME", "RELATION", "OBJECT")
    lines = [
        (g["principal"], g.get("principal_name") or "", g["relation"], g["object"]) for g in rows
    ]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]
    for line in (headers, *lines):
        typer.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )
