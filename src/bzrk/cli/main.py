"""The ``bzrk`` command: the client commands and the server commands ``dev`` and ``serve``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from bzrk import __version__
from bzrk.cli import access, admin, alerts, login, profiles, search
from bzrk.cli.errors import EXIT_ERROR, CliError
from bzrk.cli.profiles import DatabaseOpt, EndpointOpt, GlobalOptions, ProfileOpt, TokenOpt
from bzrk.server.settings import SETTINGS, ConfigError, load_settings

app = typer.Typer(
    name="bzrk",
    help="bzrk: OTel ingest, ClickHouse storage and KQL over gRPC, ADX REST, MCP and a web UI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bzrk {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    database: DatabaseOpt = None,
    token: TokenOpt = None,
) -> None:
    """bzrk command-line interface."""
    ctx.obj = GlobalOptions(profile, endpoint, database, token)


app.add_typer(profiles.profile_app, name="profile")
app.command("login")(login.login)
app.command("logout")(login.logout)
app.command("status")(login.status)
app.command("search")(search.search)
app.add_typer(admin.database_app, name="database")
app.add_typer(admin.table_app, name="table")
app.add_typer(admin.ingest_token_app, name="ingest-token")
app.add_typer(admin.service_account_app, name="service-account")
app.command("grant")(access.grant)
app.command("revoke")(access.revoke)
app.add_typer(access.access_app, name="access")
alerts.register(app)


def _fail_config(exc: ConfigError) -> None:
    typer.echo(f"bzrk: {exc}", err=True)
    raise typer.Exit(2)


def _help_settings(value: bool) -> None:
    if value:
        for setting in SETTINGS:
            typer.echo(f"{setting.name:28} BZRK_{setting.name.upper():28} {setting.help}")
        raise typer.Exit()


ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="TOML config file (keys as in --help-settings).", dir_okay=False),
]
DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Data directory (store, metadata, dev-credentials.json). [default: ~/.local/share/bzrk]",
    ),
]
HostOpt = Annotated[
    str | None, typer.Option("--host", help="Address every listener binds to. [default: 127.0.0.1]")
]


def _port(name: str, default: int, what: str):  # type: ignore[no-untyped-def]
    return typer.Option(
        f"--{name}", help=f"{what} [default: {default}; 0 = pick a free port]", min=0, max=65535
    )


@app.command()
def dev(
    data_dir: DataDirOpt = None,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="Load demo OTel logs, traces and metrics (last 24 h) through the real ingest path.",
        ),
    ] = False,
    host: HostOpt = None,
    gateway_port: Annotated[
        int | None, _port("gateway-port", 9500, "Gateway: REST, /api/grpc, /mcp, OAuth, UI.")
    ] = None,
    query_port: Annotated[
        int | None,
        _port("query-port", 9510, "Query service: gRPC + HTTP, gateway-signed tokens only."),
    ] = None,
    otlp_grpc_port: Annotated[
        int | None, _port("otlp-grpc-port", 4317, "OTLP/gRPC receiver.")
    ] = None,
    otlp_http_port: Annotated[
        int | None, _port("otlp-http-port", 4318, "OTLP/HTTP receiver.")
    ] = None,
    loki_port: Annotated[int | None, _port("loki-port", 3100, "Loki push receiver.")] = None,
    ui_port: Annotated[int | None, _port("ui-port", 9570, "Web UI.")] = None,
    config: ConfigOpt = None,
    help_settings: Annotated[
        bool,
        typer.Option(
            "--help-settings",
            callback=_help_settings,
            is_eager=True,
            help="List every setting and its env variable.",
        ),
    ] = False,
) -> None:
    """Run the whole system on one machine: gateway, query, ingest and UI over embedded ClickHouse.

    The query service also runs the alert scheduler (alerts, workflows, notifications).

    On first start in an empty data dir it creates an admin user, a service principal token and
    a default ingest token, and writes them with the bound addresses to
    DATA_DIR/dev-credentials.json (mode 0600). GET {gateway}/health/ready answers 200 once every
    service is ready, that file is written and (--demo) the demo data is loaded; each service's
    own /health/ready answers for that service alone. SIGTERM/SIGINT shut down cleanly within 10 s. Every flag also reads from
    the environment as BZRK_<NAME> (e.g. BZRK_GATEWAY_PORT) and from --config.
    """
    from bzrk.server.logging import configure_logging
    from bzrk.server.run import run_dev

    overrides = {
        "data_dir": data_dir,
        "demo": demo or None,
        "host": host,
        "gateway_port": gateway_port,
        "query_port": query_port,
        "otlp_grpc_port": otlp_grpc_port,
        "otlp_http_port": otlp_http_port,
        "loki_port": loki_port,
        "ui_port": ui_port,
    }
    try:
        settings = load_settings(config_file=config, overrides=overrides)
        configure_logging(settings.log_level, settings.log_format)
        asyncio.run(run_dev(settings, print_summary=lambda text: print(text, flush=True)))
    except ConfigError as exc:
        _fail_config(exc)
    except KeyboardInterrupt:
        pass
    _exit_after_server()


@app.command()
def serve(
    service: Annotated[str, typer.Argument(help="One of: gateway, query, ingest, ui, scheduler.")],
    data_dir: DataDirOpt = None,
    host: HostOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Run one service alone (scale-out: point query/ingest at a ClickHouse server with BZRK_CLICKHOUSE_URL).

    `scheduler` evaluates alerts and workflows and sends their notifications, with no
    listener of its own; every query service is also a scheduler candidate unless
    BZRK_ALERTS_SCHEDULER=false, and one leader (a lease in the metadata store) does the work.
    """
    from bzrk.server.logging import configure_logging
    from bzrk.server.run import SERVE_SERVICES, run

    if service not in SERVE_SERVICES:
        typer.echo(
            f"bzrk: unknown service '{service}' (expected one of {', '.join(SERVE_SERVICES)})",
            err=True,
        )
        raise typer.Exit(2)
    try:
        settings = load_settings(config_file=config, overrides={"data_dir": data_dir, "host": host})
        configure_logging(settings.log_level, settings.log_format)
        asyncio.run(run(settings, (service,)))
    except ConfigError as exc:
        _fail_config(exc)
    except KeyboardInterrupt:
        pass
    _exit_after_server()


def _exit_after_server() -> None:
    """Leave without running C++ static destructors once a server has stopped cleanly.

    ``run`` has already closed every listener and the store, so all data is on disk. chDB's
    own destructors, run by a normal interpreter exit, can throw ("Cannot close file") and
    abort, and ClickHouse's crash handler then hangs the exit: a SIGTERM that stopped the
    server would end in a timeout or a core instead of exit 0.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def main() -> None:
    try:
        app()
    except ConfigError as exc:
        print(f"bzrk: {exc}", file=sys.stderr)
        sys.exit(2)
    except CliError as exc:
        print(f"bzrk: {exc.message}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("bzrk: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # never a traceback: a located message and exit 1
        print(f"bzrk: unexpected error: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(EXIT_ERROR)
