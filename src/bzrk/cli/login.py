"""``bzrk login`` (OAuth device flow), ``bzrk logout`` and ``bzrk status``."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import webbrowser
from typing import Annotated, Any

import typer

from bzrk.cli.credentials import TokenStore
from bzrk.cli.errors import EXIT_ERROR, AuthError, CliError
from bzrk.cli.gateway import CLIENT_ID, Gateway, error_message, stored_login
from bzrk.cli.profiles import DatabaseOpt, EndpointOpt, ProfileOpt, TokenOpt, options, resolve

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
SLOW_DOWN_STEP_S = 5.0


def browser_available() -> bool:
    if os.environ.get("BROWSER"):
        return True
    if sys.platform == "darwin" or sys.platform.startswith("win"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def poll_device_token(gateway: Gateway, started: dict[str, Any]) -> dict[str, Any]:
    """Poll the token endpoint as RFC 8628 says until approved, denied or expired."""
    interval = float(started.get("interval") or 5)
    deadline = time.monotonic() + float(started.get("expires_in") or 600)
    form = {
        "grant_type": DEVICE_GRANT,
        "device_code": str(started["device_code"]),
        "client_id": CLIENT_ID,
    }
    while time.monotonic() < deadline:
        time.sleep(interval)
        response = gateway.post_form("/oauth/token", form)
        if response.status_code == 200:
            return dict(response.json())
        try:
            code = response.json().get("error", "")
        except ValueError:
            code = ""
        if code == "authorization_pending":
            continue
        if code == "slow_down":
            interval += SLOW_DOWN_STEP_S
            continue
        if code == "access_denied":
            raise AuthError("login denied in the browser")
        if code == "expired_token":
            break
        raise AuthError(f"login failed: {error_message(response)}")
    raise AuthError("the login code expired before it was approved: run `bzrk login` again")


def login(
    ctx: typer.Context,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Only print the URL; never open a browser.")
    ] = False,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
) -> None:
    """Log in with the device flow: approve the printed code in a browser signed in to bzrk."""
    connection = resolve(options(ctx, profile=profile, endpoint=endpoint))
    with Gateway(connection) as gateway:
        response = gateway.post_form("/oauth/device/code", {"client_id": CLIENT_ID})
        if response.status_code != 200:
            raise CliError(f"device login refused: {error_message(response)}")
        started = response.json()
        url = started.get("verification_uri_complete") or started["verification_uri"]
        say(f"To log in, open {started['verification_uri']} and enter the code:")
        say(f"    {started['user_code']}")
        say(f"(or open {url})")
        if not no_browser and browser_available():
            with contextlib.suppress(webbrowser.Error):
                webbrowser.open(url)
        say("Waiting for approval…")
        body = poll_device_token(gateway, started)
        saved = stored_login(connection.endpoint, body)
        TokenStore(connection.credential_key).save(saved)
        gateway._login = saved
        who = whoami(gateway)
    typer.echo(f"Logged in to {connection.endpoint} as {who}")


def whoami(gateway: Gateway) -> str:
    me = gateway.call("GET", "/api/v1/me")
    user = me.get("user") if isinstance(me, dict) else None
    if isinstance(user, dict) and user.get("username"):
        return f"{user['username']} ({', '.join(me.get('roles') or []) or 'no roles'})"
    return f"{me.get('subject')} ({me.get('kind')})"


def logout(ctx: typer.Context, profile: ProfileOpt = None, endpoint: EndpointOpt = None) -> None:
    """Revoke the stored login at the gateway and forget it."""
    connection = resolve(options(ctx, profile=profile, endpoint=endpoint))
    store = TokenStore(connection.credential_key)
    stored = store.load()
    if stored is None:
        typer.echo("Not logged in.")
        return
    if stored.refresh_token:
        with Gateway(connection) as gateway:
            try:
                gateway.post_form(
                    "/oauth/revoke", {"token": stored.refresh_token, "client_id": CLIENT_ID}
                )
            except CliError as exc:
                say(f"bzrk: could not revoke at the gateway ({exc.message}); forgetting it locally")
    store.clear()
    typer.echo(f"Logged out of {connection.endpoint}")


def status(
    ctx: typer.Context,
    profile: ProfileOpt = None,
    endpoint: EndpointOpt = None,
    database: DatabaseOpt = None,
    token: TokenOpt = None,
) -> None:
    """Show the endpoint, who you are, and whether the query service answers (and its version).

    Each check is printed once, with why it failed; the exit code is 1 when any failed.
    """
    connection = resolve(
        options(ctx, profile=profile, endpoint=endpoint, database=database, token=token)
    )
    typer.echo(f"Profile:  {connection.profile or '(none)'}")
    typer.echo(f"Endpoint: {connection.endpoint}")
    typer.echo(f"Database: {connection.database}")
    failed = False
    with Gateway(connection) as gateway:
        try:
            ready = gateway.get_anonymous("/health/ready").status_code == 200
        except CliError as exc:
            typer.echo(f"Gateway:  unreachable ({exc.message})")
            raise typer.Exit(EXIT_ERROR) from None
        typer.echo(f"Gateway:  {'ready' if ready else 'not ready'}")
        failed = not ready
        try:
            typer.echo(f"Identity: {whoami(gateway)}")
        except CliError as exc:
            typer.echo(f"Identity: {exc.message}")
            # Without an accepted credential the query check would only say the same again.
            typer.echo("Query:    not checked (no accepted credential)")
            raise typer.Exit(EXIT_ERROR) from None
        try:
            answer = gateway.call(
                "POST", "/v1/rest/mgmt", {"db": connection.database, "csl": ".show version"}
            )
            row = answer["Tables"][0]["Rows"][0]
            typer.echo(f"Query:    reachable, version {row[0]} ({row[3]})")
        except (CliError, KeyError, IndexError, TypeError) as exc:
            message = exc.message if isinstance(exc, CliError) else "unexpected answer"
            typer.echo(f"Query:    unreachable ({message})")
            failed = True
    if failed:
        raise typer.Exit(EXIT_ERROR)
