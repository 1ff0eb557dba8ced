"""Process composition: open the stores, start every listener, report readiness, shut down cleanly.

``bzrk dev`` runs all services in this one process (chDB allows one store per process, so the
process that owns the store serves both ingest and query). ``bzrk serve <service>`` runs one.
Everything opens and closes inside one ``AsyncExitStack``; SIGTERM/SIGINT stop it within the
10 s contract.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import grpc
from hypercorn.asyncio import serve as hypercorn_serve
from hypercorn.config import Config as HypercornConfig

from bzrk.auth.internal import InternalKeys
from bzrk.meta.store import MetaStore
from bzrk.server import bootstrap, selftelemetry
from bzrk.server.context import AppContext
from bzrk.server.health import HealthEndpoints
from bzrk.server.settings import ConfigError, Settings
from bzrk.types import ASGIApp

log = logging.getLogger("bzrk.server")

ALL_SERVICES = ("gateway", "query", "ingest", "ui")
# `bzrk serve` also runs the alert scheduler alone (bzrk dev runs it inside the query service).
SERVE_SERVICES = (*ALL_SERVICES, "scheduler")


@dataclass(frozen=True, slots=True)
class Listener:
    key: str  # address key in dev-credentials.json
    service: str
    port_setting: str
    scheme: str = "http"


LISTENERS = (
    Listener("gateway", "gateway", "gateway_port"),
    Listener("query", "query", "query_port"),
    Listener("otlp_grpc", "ingest", "otlp_grpc_port"),
    Listener("otlp_http", "ingest", "otlp_http_port"),
    Listener("loki", "ingest", "loki_port"),
    Listener("ui", "ui", "ui_port"),
)


def _bind(host: str, port: int, what: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} for {what} is already in use on {host}") from exc
        raise ConfigError(f"cannot bind {what} to {host}:{port}: {exc.strerror}") from exc
    sock.listen(512)
    sock.set_inheritable(True)
    return sock


def _prepare_data_dir(data_dir: Path) -> None:
    """Make the data dir exist, writable and private (0700; files made from now on 0600).

    It holds token and password hashes, CSRF secrets and the signing key. The process umask
    becomes 077, so files ClickHouse and SQLite create inside are private as well.
    """
    os.umask(0o077)
    try:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        data_dir.chmod(0o700)
        probe = data_dir / ".write-probe"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"data dir {data_dir} is not writable: {exc.strerror}") from exc


def _open_backend(settings: Settings):  # type: ignore[no-untyped-def]
    if settings.clickhouse_url:
        from bzrk.engine.backends.clickhouse_backend import ClickHouseBackend

        return ClickHouseBackend(settings.clickhouse_url)
    from bzrk.engine.backends.chdb_backend import ChdbBackend

    return ChdbBackend(settings.data_dir / "clickhouse")


def _http_app(ctx: AppContext, listener: Listener) -> ASGIApp:
    if listener.key == "gateway":
        from bzrk.gateway.app import create_app
        from bzrk.gateway.metrics import GatewayMetrics, route_of
        from bzrk.server.selftelemetry import RequestSpans

        app = RequestSpans(GatewayMetrics(create_app(ctx)), route_of)
        return HealthEndpoints(app, "gateway", ctx.all_ready)
    if listener.key == "query":
        from bzrk.api.query_service import create_app as create_query_app

        return HealthEndpoints(
            create_query_app(ctx), "query", lambda: ctx.ready.get("query", False)
        )
    if listener.key == "otlp_http":
        from bzrk.ingest.service import create_otlp_http_app

        return HealthEndpoints(
            create_otlp_http_app(ctx), "ingest", lambda: ctx.ready.get("ingest", False)
        )
    if listener.key == "loki":
        from bzrk.ingest.service import create_loki_app

        return HealthEndpoints(
            create_loki_app(ctx), "ingest", lambda: ctx.ready.get("ingest", False)
        )
    if listener.key == "ui":
        from bzrk.ui.app import create_app as create_ui_app

        return HealthEndpoints(create_ui_app(ctx), "ui", lambda: ctx.ready.get("ui", False))
    raise AssertionError(listener.key)


def hypercorn_config(sock: socket.socket, graceful_timeout_s: float) -> HypercornConfig:
    """How every bzrk listener serves HTTP (the tests' servers too).

    Idle connections stay open 75 s, longer than clients and proxies keep theirs (Hypercorn's
    default of 5 s races a client reusing the connection: its request meets a closed socket).
    """
    config = HypercornConfig()
    # Hypercorn wraps the descriptor in a socket it closes when it stops, and the caller
    # closes ``sock``: each closes its own copy, never a number reused in between (chDB's
    # wakeup pipe, once; tests/server/test_listener_sockets.py).
    config.bind = [f"fd://{os.dup(sock.fileno())}"]
    config.graceful_timeout = graceful_timeout_s
    config.keep_alive_timeout = 75
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.h2_max_inbound_frame_size = 2**20
    return config


async def _wait_live(url: str, timeout_s: float = 15.0) -> None:
    import httpx

    deadline = asyncio.get_running_loop().time() + timeout_s
    async with httpx.AsyncClient(timeout=2.0) as client:
        while True:
            try:
                if (await client.get(url + "/health/live")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(f"{url} did not come up within {timeout_s} s")
            await asyncio.sleep(0.05)


async def run(
    settings: Settings,
    services: tuple[str, ...] = ALL_SERVICES,
    *,
    on_ready: Callable[[AppContext, dict[str, str]], Awaitable[None] | None] | None = None,
    stop_event: asyncio.Event | None = None,
) -> None:
    """Run ``services`` until SIGTERM/SIGINT (or ``stop_event``)."""
    _prepare_data_dir(settings.data_dir)
    wanted = [listener for listener in LISTENERS if listener.service in services]
    # Bind every port before doing anything slow: a port in use fails fast, as a ConfigError.
    sockets = {
        listener.key: _bind(settings.host, getattr(settings, listener.port_setting), listener.key)
        for listener in wanted
        if listener.key != "otlp_grpc"
    }
    grpc_probe = None
    if any(listener.key == "otlp_grpc" for listener in wanted):
        grpc_probe = _bind(settings.host, settings.otlp_grpc_port, "otlp_grpc")

    stop = stop_event or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)

    async with AsyncExitStack() as stack:
        meta = MetaStore(settings.resolved_meta_url)
        stack.callback(meta.close)
        await asyncio.to_thread(meta.migrate)
        keys = InternalKeys.load_or_create(settings.data_dir)
        ctx = AppContext(settings=settings, meta=meta, keys=keys)
        host = settings.host if ":" not in settings.host else f"[{settings.host}]"
        for key, sock in sockets.items():
            ctx.addresses[key] = f"http://{host}:{sock.getsockname()[1]}"
        if settings.query_url and "query" not in services:
            ctx.addresses["query"] = settings.query_url.rstrip("/")

        if {"query", "ingest", "scheduler"} & set(services):
            backend = await asyncio.to_thread(_open_backend, settings)
            ctx.backend = backend
            stack.callback(backend.close)
        if {"query", "scheduler"} & set(services):
            from bzrk.server.executor import create_executor

            ctx.executor = create_executor(ctx)
        for service in services:
            ctx.ready[service] = False

        servers: list[asyncio.Task[None]] = []
        shutdown = asyncio.Event()
        for listener in wanted:
            if listener.key == "otlp_grpc":
                continue
            app = _http_app(ctx, listener)
            config = hypercorn_config(sockets[listener.key], settings.shutdown_grace_s)
            servers.append(
                asyncio.create_task(
                    hypercorn_serve(app, config, shutdown_trigger=shutdown.wait),  # type: ignore[arg-type]
                    name=f"http-{listener.key}",
                )
            )

        grpc_server: grpc.aio.Server | None = None
        if "ingest" in services:
            from bzrk.ingest import service as ingest_service

            await ingest_service.start(ctx)
            grpc_server = ingest_service.create_otlp_grpc_server(ctx)
            assert grpc_probe is not None
            port = grpc_probe.getsockname()[1]
            grpc_probe.close()
            bound = grpc_server.add_insecure_port(f"{host}:{port}")
            if bound == 0:
                raise ConfigError(f"port {port} for otlp_grpc is already in use on {settings.host}")
            ctx.addresses["otlp_grpc"] = f"http://{host}:{bound}"
            await grpc_server.start()

        for key, address in ctx.addresses.items():
            if key in sockets:
                await _wait_live(address)
        scheduler = None
        if "scheduler" in services or ("query" in services and settings.alerts_scheduler):
            from bzrk.alerts import scheduler as alert_scheduler

            scheduler = await alert_scheduler.start(ctx)
        if on_ready is not None:
            # The whole system is ready once on_ready is done (bzrk dev: the credentials file
            # written, the demo data loaded); each service's own /health/ready says it serves.
            ctx.ready["bootstrap"] = False
        for service in services:
            ctx.ready[service] = True

        if settings.self_telemetry and settings.self_telemetry_token:
            start_self_telemetry(ctx, settings.self_telemetry_token)
        if on_ready is not None:
            result = on_ready(ctx, dict(ctx.addresses))
            if asyncio.iscoroutine(result):
                # on_ready may be slow (the demo load): a SIGTERM meanwhile must still stop us.
                ready_task = asyncio.ensure_future(result)
                stop_wait = asyncio.ensure_future(stop.wait())
                await asyncio.wait([ready_task, stop_wait], return_when=asyncio.FIRST_COMPLETED)
                stop_wait.cancel()
                if not ready_task.done():
                    ready_task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await ready_task
                else:
                    ready_task.result()
            if not stop.is_set():
                ctx.ready["bootstrap"] = True
        log.info(
            "bzrk ready",
            extra={"addresses": ",".join(f"{k}={v}" for k, v in ctx.addresses.items())},
        )

        stopper = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait([stopper, *servers], return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is not stopper and task.exception() is not None:
                log.error("listener %s failed: %s", task.get_name(), task.exception())
        log.info("bzrk shutting down")
        # Flushed while the ingest listener still serves (the export goes there), off the loop.
        await asyncio.to_thread(selftelemetry.shutdown)
        for service in services:
            ctx.ready[service] = False
        shutdown.set()
        if scheduler is not None:
            await scheduler.stop(grace_s=min(settings.shutdown_grace_s, 4.0))
            await scheduler.service.aclose()
        if grpc_server is not None:
            await grpc_server.stop(grace=min(settings.shutdown_grace_s, 3.0))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*servers, return_exceptions=True), settings.shutdown_grace_s + 1
            )
        stopper.cancel()
        if "ingest" in services:
            from bzrk.ingest import service as ingest_service

            await ingest_service.stop(ctx)
        executor_close = getattr(ctx.executor, "aclose", None)
        if executor_close is not None:
            await executor_close()
        for sock in sockets.values():
            with contextlib.suppress(OSError):
                sock.close()
    log.info("bzrk stopped")


def start_self_telemetry(ctx: AppContext, token: str) -> None:
    """Export bzrk's own traces and logs (``self_telemetry``) to its endpoint with ``token``."""
    settings = ctx.settings
    endpoint = settings.self_telemetry_endpoint or ctx.addresses.get("otlp_http")
    if not endpoint:
        log.warning("self_telemetry is on but there is no OTLP/HTTP endpoint to send to")
        return
    selftelemetry.enable(endpoint, token)


async def run_dev(settings: Settings, *, print_summary: Callable[[str], None] = print) -> None:
    """``bzrk dev``: every service, bootstrap credentials, optional demo data."""

    async def ready(ctx: AppContext, addresses: dict[str, str]) -> None:
        creds = await asyncio.to_thread(bootstrap.ensure_credentials, ctx.meta, settings.data_dir)
        if settings.self_telemetry:  # into the default table, with the bootstrap ingest token
            start_self_telemetry(ctx, settings.self_telemetry_token or creds.ingest_token)
        if settings.demo:
            from bzrk.demo.loader import load_demo_once

            await load_demo_once(ctx, creds, addresses)
        path = bootstrap.write_credentials_file(settings.data_dir, creds, addresses)
        print_summary(_summary(addresses, creds, path))

    await run(settings, ALL_SERVICES, on_ready=ready)


def _summary(addresses: dict[str, str], creds: bootstrap.Credentials, path: Path) -> str:
    lines = [
        "bzrk is ready.",
        f"  gateway     {addresses['gateway']}   (REST, /api/grpc, /mcp, OAuth, UI)",
        f"  web UI      {addresses['gateway']}/  (also {addresses['ui']})",
        f"  MCP         {addresses['gateway']}/mcp",
        f"  query       {addresses['query']}   (internal: gateway-signed tokens only)",
        f"  OTLP gRPC   {addresses['otlp_grpc']}",
        f"  OTLP HTTP   {addresses['otlp_http']}",
        f"  Loki push   {addresses['loki']}/loki/api/v1/push",
        f"  admin login {creds.admin_user} / {creds.admin_password}",
        f"  API token   {creds.token}",
        f"  ingest tok  {creds.ingest_token}",
        f"  credentials {path} (mode 0600)",
    ]
    return "\n".join(lines)


def pid_file_hint() -> str:
    return str(os.getpid())
