"""Admin commands through the gateway's admin API (``/api/v1/admin``): databases, tables,
ingest tokens and service accounts (service principals) with their tokens."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import typer

from bzrk.cli.errors import CliError, UsageError
from bzrk.cli.gateway import Gateway
from bzrk.cli.profiles import DatabaseOpt, EndpointOpt, ProfileOpt, TokenOpt, options, resolve

ADMIN = "/api/v1/admin"

database_app = typer.Typer(help="Databases.", no_args_is_help=True)
table_app = typer.Typer(help="Tables of a database.", no_args_is_help=True)
sharding_app = typer.Typer(
    help="A table's shard fields (field=weight): how its rows are grouped into chunks.",
    no_args_is_help=True,
)
table_app.add_typer(sharding_app, name="sharding")
ingest_token_app = typer.Typer(help="Ingest tokens (for OTLP/Loki senders).", no_args_is_help=True)
service_account_app = typer.Typer(
    help="Service accounts (service principals).", no_args_is_help=True
)
sa_token_app = typer.Typer(help="Service account tokens.", no_args_is_help=True)
service_account_app.add_typer(sa_token_app, name="token")


def _gateway(
    ctx: typer.Context,
    profile: str | None,
    endpoint: str | None,
    token: str | None,
    database: str | None = None,
) -> tuple[Gateway, str]:
    connection = resolve(
        options(ctx, profile=profile, endpoint=endpoint, token=token, database=database)
    )
    return Gateway(connection), connection.database


def _seg(value: str) -> str:
    return quote(value, safe="")


# --- databases --------------------------------------------------------------------------------


@database_app.command("list")
def database_list(
    ctx: typer.Context,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """List databases."""
    gateway, database = _gateway(ctx, profile, endpoint, token)
    with gateway:
        try:
            body = gateway.call("GET", f"{ADMIN}/databases")
        except CliError as exc:
            if "HTTP 404" not in exc.message:
                raise
            # Gateways that do not forward /databases yet: the names from `.show databases`.
            answer = gateway.call(
                "POST", "/v1/rest/mgmt", {"db": database, "csl": ".show databases"}
            )
            rows = answer["Tables"][0]["Rows"]
            body = {"databases": [{"name": row[0], "id": None} for row in rows]}
    typer.echo("Databases:")
    for db in body.get("databases", []):
        typer.echo(f"  {db['name']} (ID: {db['id']})" if db.get("id") else f"  {db['name']}")


# --- tables -----------------------------------------------------------------------------------


@table_app.command("list")
def table_list(
    ctx: typer.Context,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    database: DatabaseOpt = None,
    token: TokenOpt = None,
) -> None:
    """List the tables of the database."""
    gateway, db = _gateway(ctx, profile, endpoint, token, database)
    with gateway:
        body = gateway.call("GET", f"{ADMIN}/tables?database={_seg(db)}")
    typer.echo("Tables:")
    for table in body.get("tables", []):
        typer.echo(f"  {table['name']} (ID: {table['id']})")


@table_app.command("create")
def table_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Table name.")],
    if_not_exists: Annotated[
        bool, typer.Option("--if-not-exists", help="Succeed when the table already exists.")
    ] = False,
    retention_days: Annotated[
        int | None, typer.Option("--retention-days", help="Drop data older than this.", min=1)
    ] = None,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    database: DatabaseOpt = None,
    token: TokenOpt = None,
) -> None:
    """Create a table in the database."""
    gateway, db = _gateway(ctx, profile, endpoint, token, database)
    body: dict[str, Any] = {"name": name, "database": db}
    if retention_days is not None:
        body["retention_days"] = retention_days
    with gateway:
        try:
            created = gateway.call("POST", f"{ADMIN}/tables", body)
        except CliError as exc:
            if not (if_not_exists and "HTTP 409" in exc.message):
                raise
            existing = gateway.call("GET", f"{ADMIN}/tables?database={_seg(db)}")
            found = [t for t in existing.get("tables", []) if t["name"] == name]
            if not found:
                raise
            typer.echo(f"Table already exists: {name}\n  ID: {found[0]['id']}")
            return
    typer.echo(f"Created table: {created['name']}\n  ID: {created['id']}")


# --- table sharding ---------------------------------------------------------------------------


def parse_shard_fields(text: str) -> dict[str, int]:
    """``"resource.service.name=10 trace_id=2"`` → ``{field: weight}`` (whitespace-separated).

    >>> parse_shard_fields("metric_name=10  trace_id=2")
    {'metric_name': 10, 'trace_id': 2}
    """
    fields: dict[str, int] = {}
    for pair in text.split():
        name, sep, weight = pair.partition("=")
        if not sep or not name or not weight.isdigit() or int(weight) <= 0:
            raise UsageError(
                f"shard field {pair!r}: expected field=weight with a positive integer weight, "
                'e.g. "resource.service.name=10 trace_id=2"'
            )
        if name in fields:
            raise UsageError(f"shard field {name!r} is given twice")
        fields[name] = int(weight)
    if not fields:
        raise UsageError('no shard fields: pass "field=weight …" (`sharding clear` removes them)')
    return fields


def _shard_text(fields: dict[str, int]) -> str:
    return " ".join(f"{name}={weight}" for name, weight in fields.items())


def _table_entry(gateway: Gateway, database: str, name: str) -> dict[str, Any]:
    tables = gateway.call("GET", f"{ADMIN}/tables?database={_seg(database)}").get("tables", [])
    for table in tables:
        if table.get("name") == name:
            return dict(table)
    raise CliError(f"table '{name}' not found in database '{database}'")


def _set_shard_fields(
    ctx: typer.Context,
    table: str,
    fields: dict[str, int],
    profile: str | None,
    endpoint: str | None,
    database: str | None,
    token: str | None,
) -> dict[str, int]:
    gateway, db = _gateway(ctx, profile, endpoint, token, database)
    with gateway:
        # An admin API that does not report shard fields would not apply them either (and an
        # older PATCH reads a missing retention as "none"): ask first, change nothing then.
        if not isinstance(_table_entry(gateway, db, table).get("shard_fields"), dict):
            raise CliError(_NO_SHARDING)
        updated = gateway.call(
            "PATCH", f"{ADMIN}/tables/{_seg(db)}/{_seg(table)}", {"shard_fields": fields}
        )
    stored = updated.get("shard_fields") if isinstance(updated, dict) else None
    if not isinstance(stored, dict):
        raise CliError(_NO_SHARDING)
    return {str(k): int(v) for k, v in stored.items()}


_NO_SHARDING = (
    "this gateway's admin API does not manage shard fields yet (no shard_fields on its tables)"
)


@sharding_app.command("set")
def sharding_set(
    ctx: typer.Context,
    table: Annotated[str, typer.Argument(help="Table name.")],
    fields: Annotated[
        str, typer.Argument(help='Shard fields, "field=weight field=weight" (replaces them all).')
    ],
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    database: DatabaseOpt = None,
    token: TokenOpt = None,
) -> None:
    """Replace a table's shard fields; they shape the data written from now on."""
    stored = _set_shard_fields(
        ctx, table, parse_shard_fields(fields), profile, endpoint, database, token
    )
    typer.echo(f"Shard fields of {table}: {_shard_text(stored)}")
    typer.echo("They apply to data written from now on; stored data keeps its layout.")


@sharding_app.command("list")
def sharding_list(
    ctx: typer.Context,
    table: Annotated[str, typer.Argument(help="Table name.")],
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    database: DatabaseOpt = None,
    token: TokenOpt = None,
) -> None:
    """List a table's shard fields and their weights."""
    gateway, db = _gateway(ctx, profile, endpoint, token, database)
    with gateway:
        entry = _table_entry(gateway, db, table)
    fields = entry.get("shard_fields")
    if not isinstance(fields, dict):
        raise CliError(_NO_SHARDING)
    typer.echo(f"Shard fields of {table}:")
    if not fields:
        typer.echo("  (none)")
    for name, weight in fields.items():
        typer.echo(f"  {name}={weight}")


@sharding_app.command("clear")
def sharding_clear(
    ctx: typer.Context,
    table: Annotated[str, typer.Argument(help="Table name.")],
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    database: DatabaseOpt = None,
    token: TokenOpt = None,
) -> None:
    """Remove a table's shard fields (new data is then grouped by time only)."""
    _set_shard_fields(ctx, table, {}, profile, endpoint, database, token)
    typer.echo(f"Shard fields of {table} cleared; this applies to data written from now on.")


# --- ingest tokens ----------------------------------------------------------------------------


@ingest_token_app.command("create")
def ingest_token_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Token name.")],
    table: Annotated[str, typer.Option("--table", help="Table the token writes to.")] = "default",
    simple: Annotated[
        bool, typer.Option("--simple", help="Print only the token value (for scripts).")
    ] = False,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    database: DatabaseOpt = None,
    token: TokenOpt = None,
) -> None:
    """Create an ingest token; its value is shown this once."""
    gateway, db = _gateway(ctx, profile, endpoint, token, database)
    with gateway:
        created = gateway.call(
            "POST", f"{ADMIN}/ingest-tokens", {"name": name, "database": db, "table": table}
        )
    if simple:
        typer.echo(created["token"])
        return
    typer.echo(f"Created ingest token: {created['name']}")
    typer.echo(f"  ID: {created['id']}")
    typer.echo(f"  Table: {created.get('database', db)}.{created.get('table', table)}")
    typer.echo(f"  Token: {created['token']}")
    typer.echo("Store it now: it is not shown again.")


@ingest_token_app.command("list")
def ingest_token_list(
    ctx: typer.Context,
    show_revoked: Annotated[bool, typer.Option("--all", help="Include revoked tokens.")] = False,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """List ingest tokens (never their values)."""
    gateway, _ = _gateway(ctx, profile, endpoint, token)
    with gateway:
        body = gateway.call("GET", f"{ADMIN}/ingest-tokens")
    typer.echo("Ingest tokens:")
    for item in body.get("ingest_tokens", []):
        if item.get("revoked_at") and not show_revoked:
            continue
        revoked = f" revoked {item['revoked_at']}" if item.get("revoked_at") else ""
        typer.echo(
            f"  {item['name']} (ID: {item['id']}) {item['database']}.{item['table']} "
            f"{item['prefix']}… created {item['created_at']}{revoked}"
        )


@ingest_token_app.command("revoke")
def ingest_token_revoke(
    ctx: typer.Context,
    token_id: Annotated[str, typer.Argument(help="Token ID (see `ingest-token list`).")],
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """Revoke an ingest token."""
    gateway, _ = _gateway(ctx, profile, endpoint, token)
    with gateway:
        gateway.call("DELETE", f"{ADMIN}/ingest-tokens/{_seg(token_id)}")
    typer.echo(f"Revoked ingest token {token_id}")


@ingest_token_app.command("delete")
def ingest_token_delete(
    ctx: typer.Context,
    token_id: Annotated[str, typer.Argument(help="Token ID (revoke it first).")],
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """Delete a revoked ingest token's record (a live token must be revoked first)."""
    gateway, _ = _gateway(ctx, profile, endpoint, token)
    with gateway:
        found = _ingest_token(gateway, token_id)
        # Checked here too: an admin API without deletion would read the DELETE as a revoke.
        if found is None:
            raise CliError(f"ingest token '{token_id}' not found")
        if not found.get("revoked_at"):
            raise CliError(_LIVE_TOKEN.format(token_id))
        try:
            gateway.call("DELETE", f"{ADMIN}/ingest-tokens/{_seg(token_id)}?purge=true")
        except CliError as exc:
            if "HTTP 409" in exc.message:
                raise CliError(_LIVE_TOKEN.format(token_id)) from None
            if "HTTP 404" not in exc.message:  # an older API: "no live token" (it is revoked)
                raise
        if _ingest_token(gateway, token_id) is not None:
            raise CliError("this gateway's admin API cannot delete ingest tokens yet")
    typer.echo(f"Deleted ingest token {token_id}")


_LIVE_TOKEN = "ingest token {0} is live: revoke it first (bzrk ingest-token revoke {0})"


def _ingest_token(gateway: Gateway, token_id: str) -> dict[str, Any] | None:
    listed = gateway.call("GET", f"{ADMIN}/ingest-tokens").get("ingest_tokens", [])
    return next((dict(t) for t in listed if t.get("id") == token_id), None)


# --- service accounts -------------------------------------------------------------------------


@service_account_app.command("create")
def service_account_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Account name.")],
    display_name: Annotated[
        str | None, typer.Option("--display-name", help="Human-readable name.")
    ] = None,
    role: Annotated[str, typer.Option("--role", help="member or admin.")] = "member",
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """Create a service account."""
    gateway, _ = _gateway(ctx, profile, endpoint, token)
    body: dict[str, Any] = {"name": name, "role": role}
    if display_name:
        body["display_name"] = display_name
    with gateway:
        created = gateway.call("POST", f"{ADMIN}/service-principals", body)["service_principal"]
    typer.echo(f"Created service account: {created['name']}\n  ID: {created['id']}")


@service_account_app.command("list")
def service_account_list(
    ctx: typer.Context,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """List service accounts."""
    gateway, _ = _gateway(ctx, profile, endpoint, token)
    with gateway:
        body = gateway.call("GET", f"{ADMIN}/service-principals")
    typer.echo("Service accounts:")
    for sp in body.get("service_principals", []):
        shown = f' "{sp["display_name"]}"' if sp.get("display_name") else ""
        typer.echo(f"  {sp['name']} (ID: {sp['id']}) {sp['role']}{shown}")


@sa_token_app.command("create")
def sa_token_create(
    ctx: typer.Context,
    account: Annotated[str, typer.Argument(help="Service account name or ID.")],
    token_name: Annotated[str, typer.Argument(help="Token name.")],
    expires_in_days: Annotated[
        int | None, typer.Option("--expires-in-days", help="Expire after this many days.", min=1)
    ] = None,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """Create a token for a service account; its value (bzrk_sp_…) is shown this once."""
    gateway, _ = _gateway(ctx, profile, endpoint, token)
    body: dict[str, Any] = {"name": token_name}
    if expires_in_days is not None:
        body["expires_in_days"] = expires_in_days
    with gateway:
        created = gateway.call("POST", f"{ADMIN}/service-principals/{_seg(account)}/tokens", body)
    typer.echo(f"Created token: {token_name}")
    typer.echo(f"  ID: {created['id']}")
    typer.echo(f"  Expires: {created.get('expires_at') or 'never'}")
    typer.echo(f"  Token: {created['token']}")
    typer.echo("Store it now: it is not shown again.")


@sa_token_app.command("list")
def sa_token_list(
    ctx: typer.Context,
    account: Annotated[str, typer.Argument(help="Service account name or ID.")],
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """List a service account's tokens (never their values)."""
    gateway, _ = _gateway(ctx, profile, endpoint, token)
    with gateway:
        body = gateway.call("GET", f"{ADMIN}/service-principals/{_seg(account)}/tokens")
    typer.echo("Tokens:")
    for item in body.get("tokens", []):
        revoked = f" revoked {item['revoked_at']}" if item.get("revoked_at") else ""
        typer.echo(f"  {item['name']} (ID: {item['id']}) {item['prefix']}…{revoked}")


@sa_token_app.command("revoke")
def sa_token_revoke(
    ctx: typer.Context,
    token_id: Annotated[str, typer.Argument(help="Token ID.")],
    account: Annotated[
        str | None,
        typer.Option("--service-account", help="Its service account (found when omitted)."),
    ] = None,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    token: TokenOpt = None,
) -> None:
    """Revoke a service account token."""
    gateway, _ = _gateway(ctx, profile, endpoint, token)
    with gateway:
        owner = account or _owner_of(gateway, token_id)
        gateway.call("DELETE", f"{ADMIN}/service-principals/{_seg(owner)}/tokens/{_seg(token_id)}")
    typer.echo(f"Revoked token {token_id}")


def _owner_of(gateway: Gateway, token_id: str) -> str:
    accounts = gateway.call("GET", f"{ADMIN}/service-principals").get("service_principals", [])
    for sp in accounts:
        tokens = gateway.call("GET", f"{ADMIN}/service-principals/{_seg(sp['id'])}/tokens")
        if any(item["id"] == token_id for item in tokens.get("tokens", [])):
            return str(sp["id"])
    raise CliError(f"token '{token_id}' not found")
