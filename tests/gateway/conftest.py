"""Fixtures for gateway tests: a metadata store with bootstrap credentials, an echo upstream
that checks gateway-signed tokens and reports what reached it, and real loopback servers."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypercorn.asyncio import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from bzrk.auth.internal import InternalKeys, InvalidInternalToken, verify_internal_token
from bzrk.gateway.app import create_app
from bzrk.gateway.config import GatewayConfig, Limits
from bzrk.meta.store import MetaStore
from bzrk.server import bootstrap
from bzrk.server.context import AppContext
from bzrk.server.run import hypercorn_config
from bzrk.server.settings import Settings
from bzrk.types import ASGIApp


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def cheap_password_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process tests hash with argon2id at its cheapest (the parameters travel in each
    hash, so verification is cheap too); real servers under test keep the real cost."""
    from argon2 import PasswordHasher

    from bzrk.auth import passwords

    monkeypatch.setattr(
        passwords, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    )


class ServerThread:
    """An ASGI app served by Hypercorn on 127.0.0.1 in a thread of its own (own event loop)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def start(self, app: ASGIApp) -> ServerThread:
        ready = threading.Event()

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            config = hypercorn_config(self.sock, graceful_timeout_s=1)
            ready.set()
            await serve(app, config, shutdown_trigger=self._stop.wait)  # type: ignore[arg-type]

        self._thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)
        # Hypercorn served from (and closed) a duplicate of the descriptor (server/run.py
        # hypercorn_config): the listening socket itself is this object's to close.
        self.sock.close()


AUDIENCE_BY_PREFIX = (
    ("/admin/v1/", "ingest"),
    ("/v1/", "query"),
    ("/v2/", "query"),
    ("/mcp", "query"),
    ("/query", "query"),
)


@dataclass
class EchoUpstream:
    """Stands in for query, ingest-admin and UI: verifies the internal token, echoes the rest."""

    keys: InternalKeys
    release: threading.Event = field(default_factory=threading.Event)
    disconnected: threading.Event = field(default_factory=threading.Event)

    def audience(self, path: str) -> str:
        for prefix, audience in AUDIENCE_BY_PREFIX:
            if path.startswith(prefix):
                return audience
        return "ui"

    async def echo(self, request: Request) -> Response:
        auth = request.headers.get("authorization")
        principal: dict[str, Any] | None = None
        if auth is not None or self.audience(request.url.path) != "ui":
            try:
                p = verify_internal_token(self.keys, auth, self.audience(request.url.path))
            except InvalidInternalToken:
                return JSONResponse({"upstream": "refused"}, status_code=401)
            principal = {
                "subject": p.name,
                "key": p.key,
                "roles": list(p.roles),
                "kind": p.kind,
            }
        body = await request.body()
        if request.url.path == "/v2/rest/query" and body.startswith(b'{"stream"'):
            return StreamingResponse(
                self.stream(json.loads(body)["stream"]), media_type="text/event-stream"
            )
        return JSONResponse(
            {
                "path": request.url.path,
                "method": request.method,
                "query": request.url.query,
                "headers": {k: v for k, v in request.headers.items()},
                "principal": principal,
                "body_bytes": len(body),
            }
        )

    async def stream(self, mode: str):  # type: ignore[no-untyped-def]
        try:
            yield b"data: first\n\n"
            if mode == "gated":
                # The second event exists only after the client saw the first: no buffering.
                await asyncio.to_thread(self.release.wait, 10)
                yield b"data: second\n\n"
                return
            for i in range(600):
                await asyncio.sleep(0.05)
                yield f"data: tick {i}\n\n".encode()
        finally:
            self.disconnected.set()

    def app(self) -> ASGIApp:
        methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        return Starlette(routes=[Route("/{path:path}", self.echo, methods=methods)])


TEST_MAX_BODY = 256 * 1024


@dataclass
class Env:
    ctx: AppContext
    creds: bootstrap.Credentials
    upstream: EchoUpstream
    app: ASGIApp

    @property
    def base(self) -> str:
        return self.ctx.public_url

    @property
    def state(self) -> Any:
        """The gateway's shared state (clock, limiter), under any middleware around it."""
        app: Any = self.app
        while not hasattr(app, "state"):
            app = app.app
        return app.state


def make_ctx(data_dir: Path, gateway_url: str) -> AppContext:
    settings = Settings(data_dir=data_dir)
    meta = MetaStore.for_data_dir(data_dir)
    meta.migrate()
    ctx = AppContext(settings=settings, meta=meta, keys=InternalKeys.load_or_create(data_dir))
    ctx.addresses["gateway"] = gateway_url
    return ctx


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    """Gateway app in-process (base http://testserver), upstreams on a real loopback port."""
    ctx = make_ctx(tmp_path, "http://testserver")
    creds = bootstrap.ensure_credentials(ctx.meta, tmp_path)
    upstream = EchoUpstream(ctx.keys)
    server = ServerThread().start(upstream.app())
    for key in ("query", "otlp_http", "ui"):
        ctx.addresses[key] = server.url
    config = GatewayConfig(
        limits=Limits(max_body_bytes=TEST_MAX_BODY), allow_private_metadata_documents=True
    )
    yield Env(ctx, creds, upstream, create_app(ctx, config))
    upstream.release.set()
    server.stop()
    ctx.meta.close()


@pytest.fixture
def live_env(tmp_path: Path) -> Iterator[Env]:
    """The same, with the gateway itself on a real loopback port (streaming, MCP client)."""
    gateway = ServerThread()
    ctx = make_ctx(tmp_path, gateway.url)
    creds = bootstrap.ensure_credentials(ctx.meta, tmp_path)
    upstream = EchoUpstream(ctx.keys)
    server = ServerThread().start(upstream.app())
    for key in ("query", "otlp_http", "ui"):
        ctx.addresses[key] = server.url
    app = create_app(ctx, GatewayConfig(allow_private_metadata_documents=True))
    gateway.start(app)
    yield Env(ctx, creds, upstream, app)
    upstream.release.set()
    gateway.stop()
    server.stop()
    ctx.meta.close()


@pytest.fixture(scope="session")
def plain_dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real ``bzrk dev`` without demo data, for the auth-matrix tests that change its
    state (databases, grants, users): the shared demo server stays as other tests expect it."""
    from bzrk.testing import DevServer

    server = DevServer(tmp_path_factory.mktemp("plain-dev"))
    server.start()
    yield server
    server.stop()
