"""Test helpers for the MCP surface: a scripted executor, a context, headers, a loopback server.

The scripted executor stands in for the engine (whose real executor lands separately): it
yields realistic event sequences so these tests exercise the MCP encoder, not the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bzrk.api.mcp.app import PRINCIPAL_KEY, create_app
from bzrk.auth import permissions
from bzrk.auth.internal import InternalKeys, Principal
from bzrk.engine.events import (
    Column,
    Done,
    Error,
    Event,
    Location,
    Metadata,
    Progress,
    QueryWarning,
    RowBatch,
    TableSchema,
    Visualization,
)
from bzrk.engine.request import QueryRequest
from bzrk.meta.store import MetaStore
from bzrk.server.context import AppContext
from bzrk.server.settings import Settings
from bzrk.types import ASGIApp, Receive, Scope, Send

VERSION = "2026-07-28"
# A member service principal (key sp:tester) with viewer on "default" (see make_context).
PRINCIPAL = Principal("service_principal", "tester", "tester", ("member",))


class Pause:
    """A scripted step: wait this long before the next event."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class ScriptedExecutor:
    """Yields a fixed script of events; records requests and whether the stream was closed early."""

    def __init__(self, script: Sequence[Event | Pause] = ()) -> None:
        self.script = list(script)
        self.requests: list[QueryRequest] = []
        self.closed_early = asyncio.Event()
        self.closed_early_flag = False
        self.finished = False

    async def execute(self, request: QueryRequest) -> AsyncIterator[Event]:
        self.requests.append(request)
        try:
            for step in self.script:
                if isinstance(step, Pause):
                    await asyncio.sleep(step.seconds)
                else:
                    yield step
            self.finished = True
        except (GeneratorExit, asyncio.CancelledError):
            self.closed_early_flag = True
            raise


def count_script(
    counts: Sequence[int], *, status: str = "complete", pause: float = 0.0, run_id: str = "run-1"
) -> list[Event | Pause]:
    """A summarize-count run: one snapshot per slice with growing counts, then Done."""
    schema = TableSchema("PrimaryResult", (Column("service", "string"), Column("n", "long")))
    events: list[Event | Pause] = [schema]
    total = len(counts)
    for i, n in enumerate(counts, start=1):
        # The engine's order: the snapshot, then the progress that reached it.
        events.append(
            RowBatch("PrimaryResult", f"it{i}", [("checkout", n), ("cart", n // 2)], True)
        )
        events.append(Metadata(f"it{i}"))
        events.append(Progress(rows_processed=i * 1000, coverage=i / total))
        if pause:
            events.append(Pause(pause))
    coverage = 1.0 if status == "complete" else (len(counts) / (len(counts) + 2))
    events.append(Done(status=status, coverage=coverage, run_id=run_id))  # type: ignore[arg-type]
    return events


def typed_script() -> list[Event | Pause]:
    """One snapshot holding every awkward KQL type, a warning, a chart and a second table."""
    cols = (
        Column("timestamp", "datetime"),
        Column("duration", "timespan"),
        Column("ratio", "real"),
        Column("attrs", "dynamic"),
        Column("id", "guid"),
    )
    return [
        TableSchema("PrimaryResult", cols),
        TableSchema("Stats", (Column("k", "string"),)),
        RowBatch(
            "PrimaryResult",
            "a",
            [
                (
                    1_767_225_600_000_000_0 + 1234567,
                    90_061_000_000_1,
                    float("nan"),
                    {"http.route": "/x"},
                    "0b3c2d34-0000-4000-8000-000000000001",
                ),
                (None, -15_000_000, 1.5, [1, 2], None),
            ],
            True,
        ),
        RowBatch("Stats", "a", [("v",)], True),
        Metadata(
            "a",
            warnings=(QueryWarning("ResultTruncated", "implicit take 2000"),),
            visualization=Visualization("timechart", {"title": "t"}),
        ),
        Done(status="complete", coverage=1.0, run_id="run-typed"),
    ]


def error_script() -> list[Event | Pause]:
    return [
        Progress(coverage=0.1),
        Error(
            code="UnknownFunction",
            message="unknown function 'cnt'",
            title="Unknown function",
            location=Location(18, 21, 1, 19, 1, 22),
            run_id="run-err",
        ),
    ]


def make_context(
    tmp_path: Path,
    executor: Any = None,
    *,
    components: dict[str, Any] | None = None,
    **settings: Any,
) -> AppContext:
    tmp_path.mkdir(parents=True, exist_ok=True)
    meta = MetaStore(f"sqlite:///{tmp_path / 'meta.sqlite3'}")
    meta.migrate()
    permissions.add_grant(meta, PRINCIPAL.key, permissions.VIEWER, "default", by="test")
    key = Ed25519PrivateKey.generate()
    ctx = AppContext(
        settings=Settings(data_dir=tmp_path, **settings),
        meta=meta,
        keys=InternalKeys(key, key.public_key()),
        executor=executor,
    )
    ctx.components.update(components or {})
    return ctx


def with_principal(app: ASGIApp, principal: Principal = PRINCIPAL) -> ASGIApp:
    """What the query service does after verifying the gateway's token."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        scope[PRINCIPAL_KEY] = principal
        await app(scope, receive, send)

    return wrapped


def mcp_app(ctx: AppContext, principal: Principal = PRINCIPAL) -> ASGIApp:
    return with_principal(create_app(ctx), principal)


def envelope_meta(**extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "pytest", "version": "1"},
        **extra,
    }


def rpc_body(method: str, params: dict[str, Any] | None = None, rid: Any = 1, **meta: Any):
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": method,
        "params": {**(params or {}), "_meta": envelope_meta(**meta)},
    }


def rpc_headers(method: str, name: str | None = None, *, sse: bool = False) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream" if sse else "application/json",
        "mcp-protocol-version": VERSION,
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    return headers


def parse_sse(text: str) -> list[dict[str, Any]]:
    import json

    events = []
    for block in text.split("\n\n"):
        data = [line[5:].strip() for line in block.splitlines() if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


class LoopbackServer:
    """The app under Hypercorn on 127.0.0.1 in a background thread (for real HTTP clients)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self.stop_event: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/mcp"
        self.ready = threading.Event()

    def _run(self) -> None:
        from hypercorn.asyncio import serve

        from bzrk.server.run import hypercorn_config

        asyncio.set_event_loop(self.loop)
        config = hypercorn_config(self.sock, graceful_timeout_s=1.0)
        config.errorlog = None
        self.stop_event = asyncio.Event()
        self.loop.call_soon(self.ready.set)
        self.loop.run_until_complete(
            serve(self.app, config, shutdown_trigger=self.stop_event.wait)  # type: ignore[arg-type]
        )

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.stop_event is not None
        self.loop.call_soon_threadsafe(self.stop_event.set)
        self.thread.join(10)
        with contextlib.suppress(OSError):
            self.sock.close()
