"""Test doubles for the ADX surface: a scripted executor and an in-memory schema provider.

They stand in for the engine and storage only to test the encoders; the end-to-end tests run
the real ones.
"""

from __future__ import annotations

import functools
import socket
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from bzrk.api.adx.app import PRINCIPAL_KEY, create_app
from bzrk.auth import permissions
from bzrk.auth.internal import Principal
from bzrk.engine.events import (
    Column,
    Done,
    Error,
    Event,
    Metadata,
    Progress,
    QueryWarning,
    RowBatch,
    TableSchema,
    Visualization,
)
from bzrk.engine.request import DatabaseInfo, FieldInfo, QueryRequest, TableInfo
from bzrk.meta.store import MetaStore
from bzrk.server.context import AppContext
from bzrk.server.settings import Settings
from bzrk.types import ASGIApp, Receive, Scope, Send

Script = Iterable[Event] | Callable[[QueryRequest], Iterable[Event] | AsyncIterator[Event]]

ADMIN = Principal("service_principal", "sp-admin", "sp-admin", ("admin",))
# A member with viewer on "default" only (see member_store): "other-db" is not theirs.
MEMBER = Principal("user", "alice", "alice", ("member",))

# One row holding every KQL type, with its expected wire and SDK forms in the tests.
ALL_TYPES_COLUMNS = (
    Column("b", "bool"),
    Column("i", "int"),
    Column("l", "long"),
    Column("r", "real"),
    Column("d", "decimal"),
    Column("s", "string"),
    Column("t", "datetime"),
    Column("ts", "timespan"),
    Column("g", "guid"),
    Column("dyn", "dynamic"),
)
T_2024 = 17_041_646_451_234_567  # 2024-01-02T03:04:05.1234567Z in ticks since the epoch
ALL_TYPES_ROWS = [
    [
        True,
        2_147_483_647,
        9_223_372_036_854_775_807,
        1.5,
        Decimal("2.00000000000001"),
        'héllo "q"',
        T_2024,
        900_015_000_000,  # 1.01:00:01.5000000
        "123e27de-1e4e-49d9-b579-fe0b331d3642",
        {"a": [1, 2, {"b": None}], "s": "x"},
    ],
    [False, -1, -5, float("nan"), Decimal("-0.5"), "", 0, -20_020_000_000, None, [1, "two"]],
    [None, None, None, float("inf"), None, None, None, 0, None, None],
    [None, 0, 0, float("-inf"), Decimal("0"), None, 10_000_000, 1, None, 3],
]


def simple_result(
    columns: tuple[Column, ...],
    rows: list[list[Any]],
    *,
    table: str = "PrimaryResult",
    visualization: Visualization | None = None,
    warnings: tuple[QueryWarning, ...] = (),
    batch_size: int = 2,
) -> list[Event]:
    events: list[Event] = [TableSchema(table, columns), Progress(rows_processed=len(rows))]
    batches = [rows[i : i + batch_size] for i in range(0, len(rows), batch_size)] or [[]]
    for n, batch in enumerate(batches):
        events.append(RowBatch(table, "it-1", batch, n == len(batches) - 1))
    events += [
        Metadata("it-1", warnings=warnings, visualization=visualization),
        Progress(rows_processed=len(rows), coverage=1.0),
        Done(),
    ]
    return events


@dataclass
class ScriptedExecutor:
    """Answers each query text with its scripted events; records every request it got."""

    scripts: dict[str, Script] = field(default_factory=dict)
    requests: list[QueryRequest] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)

    async def execute(self, request: QueryRequest) -> AsyncIterator[Event]:
        self.requests.append(request)
        script = self.scripts.get(request.query.strip())
        if script is None:
            yield Error(
                code="SemanticError",
                message=f"Semantic error: unknown table in {request.query.strip()!r}",
            )
            return
        events = script(request) if callable(script) else script
        try:
            if hasattr(events, "__aiter__"):
                async for event in events:
                    yield event
            else:
                for event in events:
                    yield event
        finally:
            self.closed.append(request.query.strip())


@dataclass
class MemorySchema:
    """A SchemaProvider over fixed data."""

    databases: dict[str, list[TableInfo]]

    def list_databases(self) -> list[DatabaseInfo]:
        return [
            DatabaseInfo(id=f"db-{name}", name=name, tables=tuple(t.name for t in tables))
            for name, tables in self.databases.items()
        ]

    def list_tables(self, database: str) -> list[TableInfo]:
        return list(self.databases[database])

    def discover_fields(self, database: str, table: str, **_: Any) -> list[FieldInfo]:
        return []


DEMO_SCHEMA = MemorySchema(
    {
        "default": [
            TableInfo(
                "t1",
                "default",
                "default",
                (("timestamp", "datetime"), ("body", "string"), ("attributes", "dynamic")),
            ),
            TableInfo("t2", "default", "metrics", (("timestamp", "datetime"), ("value", "real"))),
        ],
        "other-db": [],
    }
)


class WithPrincipal:
    """Puts a principal in the scope, as the query service does after its token check."""

    def __init__(self, app: ASGIApp, principal: Principal | None) -> None:
        self.app = app
        self.principal = principal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.principal is not None:
            scope[PRINCIPAL_KEY] = self.principal
        await self.app(scope, receive, send)


@functools.cache
def member_store() -> MetaStore:
    """A metadata store holding the demo databases, where MEMBER is viewer of "default"."""
    meta = MetaStore.for_data_dir(Path(tempfile.mkdtemp(prefix="bzrk-adx-test-")))
    meta.migrate()
    meta.ensure_database("other-db")
    permissions.add_grant(meta, MEMBER.key, permissions.VIEWER, "default", by="test")
    return meta


def make_app(
    executor: ScriptedExecutor,
    *,
    schema: Any = DEMO_SCHEMA,
    principal: Principal | None = ADMIN,
    data_dir: Path | None = None,
) -> ASGIApp:
    settings = Settings(data_dir=data_dir or Path("/nonexistent-bzrk-test"))
    # Admins are decided without the store; members by their grants in member_store().
    meta = member_store() if principal is not None and not principal.is_admin else None
    ctx = AppContext(settings=settings, meta=meta, keys=None, executor=executor)  # type: ignore[arg-type]
    if schema is not None:
        ctx.components["schema"] = schema
    return WithPrincipal(create_app(ctx), principal)


class LoopbackServer:
    """Serves an ASGI app on a free 127.0.0.1 port in a background thread.

    ``kind`` is ``"uvicorn"`` or ``"hypercorn"`` (what ``bzrk dev`` runs).
    """

    def __init__(self, app: ASGIApp, kind: str = "uvicorn") -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        self.app = app
        self.kind = kind
        self._started = threading.Event()
        self._stop: Any = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        if self.kind == "uvicorn":
            import uvicorn

            config = uvicorn.Config(
                self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
            )
            server = uvicorn.Server(config)
            self._stop = lambda: setattr(server, "should_exit", True)
            original = server.startup

            async def startup(sockets: Any = None) -> None:
                await original(sockets)
                self._started.set()

            server.startup = startup  # type: ignore[method-assign]
            server.run()
            return
        import asyncio

        from hypercorn.asyncio import serve
        from hypercorn.config import Config

        config = Config()
        config.bind = [f"127.0.0.1:{self.port}"]
        config.accesslog = None
        config.loglevel = "WARNING"

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            self._stop = lambda: loop.call_soon_threadsafe(stop.set)
            loop.call_later(0.3, self._started.set)  # serve() binds right away
            await serve(self.app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

        asyncio.run(main())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        if not self._started.wait(10):
            raise RuntimeError("loopback server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._stop()
        self.thread.join(10)
