"""Test helpers: a scripted executor, Hypercorn serving an ASGI app on loopback, gRPC clients.

The scripted executor stands in for the engine only in tests of the gRPC layer itself (the
encoder, the ASGI server, the forwarder); end-to-end tests use a real ``bzrk dev``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import shutil
import socket
import subprocess
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
from hypercorn.asyncio import serve as hypercorn_serve

from bzrk.api.grpc._pb import common_api_pb2, query_pb2, query_pb2_grpc
from bzrk.auth.internal import Principal
from bzrk.engine import events as ev
from bzrk.engine.request import QueryRequest
from bzrk.server.run import hypercorn_config
from bzrk.types import ASGIApp, Receive, Scope, Send

Script = Callable[[QueryRequest], AsyncIterator[ev.Event] | Iterable[ev.Event]]


class ScriptedExecutor:
    """Yields a scripted event sequence; records requests and whether the stream was closed."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[QueryRequest] = []
        self.closed = threading.Event()
        self.yielded = 0

    async def execute(self, request: QueryRequest) -> AsyncIterator[ev.Event]:
        self.requests.append(request)
        try:
            produced = self.script(request)
            if isinstance(produced, AsyncIterator):
                async for event in produced:
                    self.yielded += 1
                    yield event
            else:
                for event in produced:
                    self.yielded += 1
                    yield event
        finally:
            self.closed.set()


class WithPrincipal:
    """Stands in for the query service's token check: puts a Principal in the scope.

    The test header ``x-test-principal-kind`` picks the principal's kind; ``x-test-anonymous``
    leaves it out.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers", ()))
            kind = headers.get(b"x-test-principal-kind", b"service_principal").decode()
            scope["bzrk.principal"] = Principal(kind, "tester", "tester", ("admin",))
        await self.app(scope, receive, send)


@contextmanager
def serve(app: ASGIApp) -> Iterator[str]:
    """Serve ``app`` with Hypercorn (HTTP/1.1 + h2c) on 127.0.0.1 in a thread; yield host:port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = hypercorn_config(sock, graceful_timeout_s=1.0)
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    started = threading.Event()

    async def main() -> None:
        started.set()
        await hypercorn_serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    started.wait(5)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        if not thread.is_alive():
            loop.close()
        with contextlib.suppress(OSError):  # Hypercorn closes the listening fd itself
            sock.close()


def request(
    query: str, database: str | None = "default", **fields: Any
) -> query_pb2.ExecuteQueryRequest:
    message = query_pb2.ExecuteQueryRequest(query=query, **fields)
    if database is not None:
        message.database.CopyFrom(common_api_pb2.DatabaseRef(name=database))
    return message


def stub(target: str, prefix: str = "") -> tuple[grpc.Channel, Callable[..., Any]]:
    """A channel and an ``ExecuteQuery`` callable (optionally under a path prefix)."""
    channel = grpc.insecure_channel(target)
    if not prefix:
        return channel, query_pb2_grpc.QueryServiceStub(channel).ExecuteQuery
    call = channel.unary_stream(
        f"{prefix}/query.QueryService/ExecuteQuery",
        request_serializer=query_pb2.ExecuteQueryRequest.SerializeToString,
        response_deserializer=query_pb2.ExecuteQueryResultFrame.FromString,
    )
    return channel, call


def gateway_call(creds: dict[str, Any], query: str, *, timeout: float = 300, **kwargs: Any) -> Any:
    """(channel, call): ``ExecuteQuery`` through a dev server's gateway with its SP token.

    ``kwargs`` are request fields (``since=…``), or ``compression`` for the call.
    """
    compression = kwargs.pop("compression", None)
    channel, execute = stub(creds["gateway"].removeprefix("http://"), "/api/grpc")
    call = execute(
        request(query, **kwargs),
        metadata=[("authorization", f"Bearer {creds['token']}")],
        timeout=timeout,
        compression=compression,
    )
    return channel, call


def gateway_frames(creds: dict[str, Any], query: str, **kwargs: Any) -> list[Any]:
    """Every frame of one ``ExecuteQuery`` through the gateway (see :func:`gateway_call`)."""
    channel, call = gateway_call(creds, query, **kwargs)
    with channel:
        return list(call)


def collect(frames: Iterable[query_pb2.ExecuteQueryResultFrame]) -> list[Any]:
    return list(frames)


def payloads(frames: list[query_pb2.ExecuteQueryResultFrame]) -> list[str]:
    return [frame.WhichOneof("payload") or "" for frame in frames]


def decode_value(cell: Any) -> Any:
    """A BqlValue as a Python value (None for null) plus nothing else: for assertions."""
    kind = cell.WhichOneof("value")
    if kind is None or kind == "null_value":
        return None
    if kind == "array_value":
        return [decode_value(item) for item in cell.array_value.values]
    if kind == "bag_value":
        return {key: decode_value(item) for key, item in cell.bag_value.properties.items()}
    return getattr(cell, kind)


def table_rows(
    frames: list[query_pb2.ExecuteQueryResultFrame], table: str = "PrimaryResult"
) -> list[list[Any]]:
    """Rows of ``table`` in the last snapshot, concatenated as the protocol says."""
    iteration = None
    rows: list[list[Any]] = []
    for frame in frames:
        if frame.WhichOneof("payload") != "batch":
            continue
        batch = frame.batch
        if batch.result_iteration_id != iteration:
            iteration, rows = batch.result_iteration_id, []
        if batch.table_name == table:
            rows.extend([decode_value(v) for v in row.values] for row in batch.rows)
    return rows


# The value-type table at the end of query-proto.md: name → (KQL type, event value,
# expected wire column type, expected oneof arm, expected decoded value).
GUID = "74be27de-1e4e-49d9-b579-fe0b331d3642"
DT_TICKS = 1705314600 * ev.TICKS_PER_SECOND  # 2024-01-15T10:30:00Z
VALUE_QUERY = (
    "print b = true, f = false, i = toint(42), l = tolong(1234567890123), z = tolong(0), "
    f'r = 3.14, s = "hello", es = "", dt = todatetime("2024-01-15T10:30:00Z"), ts = 1h, '
    f'g = toguid("{GUID}"), arr = dynamic([1, "two", true]), '
    'bag = dynamic({"a": 1, "nested": {"c": false}}), n = toint("x")'
)
VALUE_TABLE: dict[str, tuple[str, Any, int, str, Any]] = {
    "b": ("bool", True, query_pb2.COLUMN_TYPE_BOOL, "bool_value", True),
    "f": ("bool", False, query_pb2.COLUMN_TYPE_BOOL, "bool_value", False),
    "i": ("int", 42, query_pb2.COLUMN_TYPE_INT, "int_value", 42),
    "l": ("long", 1234567890123, query_pb2.COLUMN_TYPE_LONG, "long_value", 1234567890123),
    "z": ("long", 0, query_pb2.COLUMN_TYPE_LONG, "long_value", 0),
    "r": ("real", 3.14, query_pb2.COLUMN_TYPE_REAL, "real_value", 3.14),
    "s": ("string", "hello", query_pb2.COLUMN_TYPE_STRING, "string_value", "hello"),
    "es": ("string", "", query_pb2.COLUMN_TYPE_STRING, "string_value", ""),
    "dt": (
        "datetime",
        DT_TICKS,
        query_pb2.COLUMN_TYPE_DATETIME,
        "datetime_value",
        1705314600 * 10**9,
    ),
    "ts": (
        "timespan",
        3600 * 10**7,
        query_pb2.COLUMN_TYPE_TIMESPAN,
        "timespan_value",
        3600 * 10**7,
    ),
    "g": ("guid", GUID, query_pb2.COLUMN_TYPE_STRING, "string_value", GUID),
    "arr": (
        "dynamic",
        [1, "two", True],
        query_pb2.COLUMN_TYPE_DYNAMIC,
        "array_value",
        [1, "two", True],
    ),
    "bag": (
        "dynamic",
        {"a": 1, "nested": {"c": False}},
        query_pb2.COLUMN_TYPE_DYNAMIC,
        "bag_value",
        {"a": 1, "nested": {"c": False}},
    ),
    "n": ("int", None, query_pb2.COLUMN_TYPE_INT, "null_value", None),
}


def value_table_events() -> list[ev.Event]:
    """What the engine yields for VALUE_QUERY (one snapshot)."""
    columns = tuple(ev.Column(name, spec[0]) for name, spec in VALUE_TABLE.items())  # type: ignore[arg-type]
    row = [spec[1] for spec in VALUE_TABLE.values()]
    return [
        ev.TableSchema(ev.PRIMARY_RESULT, columns),
        ev.RowBatch(ev.PRIMARY_RESULT, "it-1", [row], True),
        ev.Metadata("it-1"),
        ev.Done(),
    ]


def check_value_table(frames: list[query_pb2.ExecuteQueryResultFrame]) -> None:
    """Assert every cell of the value-type table: column type, oneof arm and value."""
    schema = next(f.schema for f in frames if f.WhichOneof("payload") == "schema")
    columns = {c.name: (i, c.type) for i, c in enumerate(schema.columns)}
    assert schema.name == "PrimaryResult"
    batches = [f.batch for f in frames if f.WhichOneof("payload") == "batch"]
    rows = [row for b in batches if b.table_name == "PrimaryResult" for row in b.rows]
    assert len(rows) == 1, rows
    cells = rows[0].values
    for name, (_, _, wire_type, arm, value) in VALUE_TABLE.items():
        index, column_type = columns[name]
        assert column_type == wire_type, (name, column_type)
        cell = cells[index]
        assert cell.WhichOneof("value") == arm, (name, cell)
        if arm == "null_value":
            assert cell.null_value is True
        else:
            assert decode_value(cell) == value, (name, decode_value(cell))


# --- the Node client (@grpc/grpc-js + @grpc/proto-loader) -----------------------------------

NODE_DIR = Path(__file__).resolve().parent / "node"
PROTO_DIR = Path(__file__).resolve().parents[3] / "proto"


def node_ready() -> str | None:
    """None when the Node client can run, else the reason to skip."""
    if shutil.which("node") is None:
        return "node is not installed"
    installed = NODE_DIR / "node_modules" / "@grpc" / "grpc-js"
    if installed.is_dir():
        return None
    if shutil.which("npm") is None:
        return "npm is not installed (needed for `npm ci` in tests/api/grpc/node)"
    # pytest-xdist workers collect at the same time: one `npm ci` at a time.
    with (NODE_DIR / ".npm-ci.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed.is_dir():
            return None
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=300,
        )
    if done.returncode != 0:
        return f"npm ci failed: {done.stderr[-500:]}"
    return None


def node_call(target: str, query: str, **options: Any) -> dict[str, Any]:
    """Run ExecuteQuery through the Node client; return {"frames": [...], "status": {...}}."""
    args = {"target": target, "protoDir": str(PROTO_DIR), "query": query, **options}
    args.setdefault("database", "default")
    done = subprocess.run(
        ["node", str(NODE_DIR / "client.mjs"), json.dumps(args)],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def node_rows(frames: list[dict[str, Any]], table: str = "PrimaryResult") -> list[Any]:
    """The raw rows of ``table`` in the last snapshot, from proto-loader frames."""
    iteration, rows = None, []
    for frame in frames:
        if frame["payload"] != "batch":
            continue
        batch = frame["batch"]
        if batch["result_iteration_id"] != iteration:
            iteration, rows = batch["result_iteration_id"], []
        if batch["table_name"] == table:
            rows.extend(batch["rows"])
    return rows


def node_value(cell: dict[str, Any]) -> Any:
    """A proto-loader BqlValue as a value; longs stay strings (``longs: String``)."""
    arm = cell.get("value")
    if arm is None or arm == "null_value":
        return None
    if arm == "array_value":
        return [node_value(item) for item in cell["array_value"]["values"]]
    if arm == "bag_value":
        return {k: node_value(v) for k, v in cell["bag_value"]["properties"].items()}
    return cell[arm]


# How the Node client sees the value table: 64-bit integers arrive as decimal strings.
NODE_VALUES: dict[str, Any] = {
    "b": True,
    "f": False,
    "i": 42,
    "l": "1234567890123",
    "z": "0",
    "r": 3.14,
    "s": "hello",
    "es": "",
    "dt": str(1705314600 * 10**9),
    "ts": str(3600 * 10**7),
    "g": GUID,
    "arr": ["1", "two", True],
    "bag": {"a": "1", "nested": {"c": False}},
    "n": None,
}


def check_node_value_table(result: dict[str, Any]) -> None:
    assert result["status"]["code"] == 0, result["status"]
    frames = result["frames"]
    schema = next(f["schema"] for f in frames if f["payload"] == "schema")
    assert schema["name"] == "PrimaryResult"
    columns = {c["name"]: (i, c["type"]) for i, c in enumerate(schema["columns"])}
    rows = node_rows(frames)
    assert len(rows) == 1, rows
    cells = rows[0]["values"]
    for name, (_, _, wire_type, arm, _) in VALUE_TABLE.items():
        index, column_type = columns[name]
        assert column_type == wire_type, (name, column_type)
        assert cells[index]["value"] == arm, (name, cells[index])
        assert node_value(cells[index]) == NODE_VALUES[name], (name, cells[index])
