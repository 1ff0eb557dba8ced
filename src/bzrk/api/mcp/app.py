"""The MCP endpoint (``POST /mcp``, protocol 2026-07-28 only) as an ASGI app.

Mounted by the query service behind the gateway, which authenticates the caller and puts the
:class:`~bzrk.auth.internal.Principal` in ``scope["bzrk.principal"]``. This app owns the rest
of ``spec/mcp.md`` §0: method and Origin checks, the validation ladder, ``server/discover``,
``tools/list``, ``tools/call`` (JSON or request-scoped SSE), and the minimal
``subscriptions/listen`` acknowledgment. There is no session and no GET stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable
from typing import Any
from urllib.parse import urlsplit

from bzrk import __version__
from bzrk.api.mcp import protocol as p
from bzrk.api.mcp.alert_tools import ALERT_TOOLS
from bzrk.api.mcp.catalog_tools import (
    DISCOVER_FIELDS,
    GET_DOCS,
    GET_RUN,
    LIST_DATABASES,
    LIST_TABLES,
)
from bzrk.api.mcp.query_tool import QUERY_TOOL
from bzrk.api.mcp.tooling import Tool, ToolCall, ToolError, error_payload, result_payload
from bzrk.server.context import AppContext
from bzrk.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

SERVER_NAME = "bzrk"
PRINCIPAL_KEY = "bzrk.principal"
MAX_BODY_BYTES = 1024 * 1024
KEEPALIVE_S = 15.0
DISCOVER_TTL_MS = 3_600_000
TOOLS_TTL_MS = 300_000
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
LOOPBACK_ORIGIN_HOSTS = ("127.0.0.1", "localhost", "[::1]")

# Discovery first, then the query tool: the order is fixed so tools/list is deterministic.
TOOLS: tuple[Tool, ...] = (
    LIST_DATABASES,
    LIST_TABLES,
    DISCOVER_FIELDS,
    QUERY_TOOL,
    GET_RUN,
    GET_DOCS,
    *ALERT_TOOLS,
)

INSTRUCTIONS = (
    "bzrk answers KQL over OpenTelemetry logs, traces and metrics. Field names are not "
    "guessable: call list_databases, list_tables and discover_fields before query, and "
    "get_docs for the dialect. Every query covers a time window (default the last hour) and "
    "waits at most timeout_ms (default 10 s); a partial answer says so in status and coverage."
)


class _Headers:
    """Request headers by lower-case name, values trimmed; remembers duplicated names."""

    def __init__(self, scope: Scope) -> None:
        self.values: dict[str, str] = {}
        self.duplicated: set[str] = set()
        for raw_name, raw_value in scope.get("headers", ()):
            name = raw_name.decode("latin-1").lower()
            if name in self.values:
                self.duplicated.add(name)
            self.values[name] = raw_value.decode("latin-1").strip()

    def get(self, name: str) -> str | None:
        return self.values.get(name)


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class McpApp:
    def __init__(self, ctx: AppContext, tools: tuple[Tool, ...] = TOOLS) -> None:
        self.ctx = ctx
        self.tool_order = tools
        self.tools = {tool.name: tool for tool in tools}
        self.server_info = {"name": SERVER_NAME, "version": __version__}

    # ---- HTTP layer ----------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"].rstrip("/") != "/mcp":
            await self._plain(send, 404, {"error": "not found"})
            return
        headers = _Headers(scope)
        if not self._origin_allowed(headers):
            await self._plain(send, 403, {"error": "origin not allowed"})
            return
        if scope["method"] != "POST":
            await self._plain(send, 405, {"error": "method not allowed"}, [(b"allow", b"POST")])
            return
        content_type = (headers.get("content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            await self._rpc_error(
                send,
                None,
                p.RpcError(p.INVALID_REQUEST, "Content-Type must be application/json"),
                status=415,
            )
            return
        accept = (headers.get("accept") or "").lower()
        if accept and not any(
            t in accept for t in ("application/json", "text/event-stream", "*/*")
        ):
            await self._rpc_error(
                send,
                None,
                p.RpcError(
                    p.INVALID_REQUEST, "Accept must allow application/json or text/event-stream"
                ),
                status=406,
            )
            return
        raw = await self._read_body(receive)
        if raw is None:
            await self._rpc_error(
                send, None, p.RpcError(p.INVALID_REQUEST, "request body too large"), status=413
            )
            return
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            await self._rpc_error(
                send, None, p.RpcError(p.PARSE_ERROR, "Parse error: invalid JSON")
            )
            return
        rid = p.request_id(body)
        try:
            if isinstance(body, list):
                raise p.RpcError(p.INVALID_REQUEST, "JSON-RPC batches are not supported")
            legacy = p.legacy_initialize_error(body) if isinstance(body, dict) else None
            if legacy is not None:
                raise legacy
            p.check_shape(body)
            if p.is_notification(body):
                await self._empty(send, 202)
                return
            dup = headers.duplicated & {p.HEADER_PROTOCOL_VERSION, p.HEADER_METHOD, p.HEADER_NAME}
            if dup:
                raise p.RpcError(
                    p.HEADER_MISMATCH, f"header {sorted(dup)[0]} is sent more than once"
                )
            envelope = p.classify(body, headers.values)
        except p.RpcError as exc:
            await self._rpc_error(send, rid, exc)
            return
        wants_sse = "text/event-stream" in accept
        await self._dispatch(scope, receive, send, envelope, wants_sse)

    def _origin_allowed(self, headers: _Headers) -> bool:
        """Browser requests (with ``Origin``) only from the gateway's own origins — its public
        URL and its bound address (on loopback, any loopback spelling of that port) — or from
        ``mcp_allowed_origins``. Another port on loopback is another site (DNS rebinding,
        a local dev server): refused.
        """
        origin = headers.get("origin")
        if origin is None:
            return True
        origin = origin.lower().rstrip("/")
        if origin == "null":
            return False
        allowed = {
            o.strip().rstrip("/").lower()
            for o in self.ctx.settings.mcp_allowed_origins.split(",")
            if o.strip()
        }
        return "*" in allowed or origin in allowed or origin in self._own_origins()

    def _own_origins(self) -> set[str]:
        # Never "whatever the Host header says": a DNS-rebinding page has matching Host and Origin.
        own = {_origin_of(u) for u in (self.ctx.public_url, self.ctx.addresses.get("gateway")) if u}
        bound = urlsplit(self.ctx.addresses.get("gateway", ""))
        if bound.hostname in LOOPBACK_HOSTS and bound.port:
            own |= {f"{bound.scheme}://{host}:{bound.port}" for host in LOOPBACK_ORIGIN_HOSTS}
        return own

    async def _read_body(self, receive: Receive) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b""
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    # ---- JSON-RPC layer ------------------------------------------------------------------

    def _result(self, result: dict[str, Any]) -> dict[str, Any]:
        result.setdefault("resultType", "complete")
        meta = result.setdefault("_meta", {})
        meta[p.META_SERVER_INFO] = self.server_info
        return result

    async def _dispatch(
        self, scope: Scope, receive: Receive, send: Send, env: p.Envelope, wants_sse: bool
    ) -> None:
        try:
            if env.method == "server/discover":
                await self._json(send, 200, p.response(env.id, self._discover()))
            elif env.method == "tools/list":
                if env.params.get("cursor") is not None:
                    raise p.RpcError(p.INVALID_PARAMS, "invalid cursor: the tool list has one page")
                await self._json(send, 200, p.response(env.id, self._tools_list()))
            elif env.method == "tools/call":
                await self._tools_call(scope, receive, send, env, wants_sse)
            elif env.method == "subscriptions/listen":
                await self._listen(receive, send, env)
            else:
                raise p.RpcError(p.METHOD_NOT_FOUND, f"Method not found: {env.method}")
        except p.RpcError as exc:
            await self._rpc_error(send, env.id, exc)

    def _discover(self) -> dict[str, Any]:
        return self._result(
            {
                "supportedVersions": list(p.SUPPORTED_VERSIONS),
                "capabilities": {"tools": {}, "logging": {}},
                "instructions": INSTRUCTIONS,
                "ttlMs": DISCOVER_TTL_MS,
                "cacheScope": "public",
            }
        )

    def _tools_list(self) -> dict[str, Any]:
        return self._result(
            {
                "tools": [tool.listing() for tool in self.tool_order],
                "ttlMs": TOOLS_TTL_MS,
                "cacheScope": "public",
            }
        )

    async def _tools_call(
        self, scope: Scope, receive: Receive, send: Send, env: p.Envelope, wants_sse: bool
    ) -> None:
        name = env.params.get("name")
        if not isinstance(name, str):
            raise p.RpcError(p.INVALID_PARAMS, "tools/call needs params.name")
        tool = self.tools.get(name)
        if tool is None:
            raise p.RpcError(p.INVALID_PARAMS, f"Unknown tool: {name}", {"name": name})
        missing = _missing_capabilities(tool.required_capabilities, env.client_capabilities)
        if missing:
            raise p.RpcError(
                p.MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"tool {name} needs client capabilities: {', '.join(missing)}",
                {"requiredCapabilities": missing},
            )
        arguments = env.params.get("arguments")
        stream = _SseStream(send) if (wants_sse and tool.streams) else None
        notify = stream.notify if stream is not None else _no_channel

        async def work() -> dict[str, Any]:
            try:
                args = tool.check_arguments({} if arguments is None else arguments)
                call = ToolCall(self.ctx, scope.get(PRINCIPAL_KEY), env, args, notify)
                return result_payload(await tool.handler(call))
            except ToolError as exc:
                return error_payload(exc)

        if stream is not None:
            await stream.start()
        outcome = await _until_disconnect(receive, work())
        if outcome is _DISCONNECTED:
            if stream is not None:
                await stream.abort()
            return
        if isinstance(outcome, BaseException):
            log.error("tool %s failed", name, exc_info=outcome)
            message: dict[str, Any] = p.error_response(
                env.id, p.RpcError(p.INTERNAL_ERROR, f"internal error in tool {name}")
            )
        else:
            message = p.response(env.id, self._result(outcome))
        if stream is not None:
            await stream.finish(message)
        else:
            status = 200 if "result" in message else 500
            await self._json(send, status, message)

    async def _listen(self, receive: Receive, send: Send, env: p.Envelope) -> None:
        """The minimal listen: acknowledge an empty agreed filter, keep alive, end on close."""
        stream = _SseStream(send)
        await stream.start()
        await stream.event(
            p.notification(
                "notifications/subscriptions/acknowledged",
                {"_meta": {p.META_SUBSCRIPTION_ID: env.id}, "notifications": {}},
            )
        )
        await _until_disconnect(receive, asyncio.Event().wait())
        await stream.abort()

    # ---- writers -------------------------------------------------------------------------

    async def _rpc_error(
        self, send: Send, rid: str | int | None, error: p.RpcError, status: int | None = None
    ) -> None:
        await self._json(send, status or error.http_status, p.error_response(rid, error))

    @staticmethod
    async def _json(
        send: Send, status: int, payload: Any, extra: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        body = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            *(extra or []),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    _plain = _json

    @staticmethod
    async def _empty(send: Send, status: int) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-length", b"0")],
            }
        )
        await send({"type": "http.response.body", "body": b""})


class _SseStream:
    """One request-scoped SSE response: notifications, keepalive comments, the final message."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.lock = asyncio.Lock()
        self.keepalive: asyncio.Task[None] | None = None
        self.closed = False

    async def start(self) -> None:
        await self.send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache, no-transform"),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )
        self.keepalive = asyncio.create_task(self._keepalive())

    async def _write(self, chunk: bytes) -> None:
        async with self.lock:
            if not self.closed:
                await self.send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def _keepalive(self) -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_S)
            await self._write(b":\r\n\r\n")

    async def event(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":"), allow_nan=False)
        await self._write(f"event: message\ndata: {data}\n\n".encode())

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.event(p.notification(method, params))

    async def finish(self, message: dict[str, Any]) -> None:
        await self.event(message)
        await self._close()

    async def abort(self) -> None:
        await self._close()

    async def _close(self) -> None:
        if self.keepalive is not None:
            self.keepalive.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.keepalive
        async with self.lock:
            if not self.closed:
                self.closed = True
                with contextlib.suppress(Exception):
                    await self.send({"type": "http.response.body", "body": b"", "more_body": False})


def _missing_capabilities(required: dict[str, Any] | None, declared: Any) -> dict[str, Any]:
    declared = declared if isinstance(declared, dict) else {}
    return {key: value for key, value in (required or {}).items() if key not in declared}


async def _no_channel(method: str, params: dict[str, Any]) -> None:
    """JSON responses have no mid-flight channel: notifications are dropped."""


_DISCONNECTED = object()


async def _until_disconnect(receive: Receive, work: Awaitable[Any]) -> Any:
    """Run ``work`` until it ends or the client goes away (then cancel it: that is the cancel).

    Returns the work's result, the exception it raised, or :data:`_DISCONNECTED`.
    """

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        watcher.cancel()
        raise
    if not task.done():
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        return _DISCONNECTED
    watcher.cancel()
    with contextlib.suppress(BaseException):
        await watcher
    if task.cancelled():
        return _DISCONNECTED
    error = task.exception()
    return error if error is not None else task.result()


def create_app(ctx: AppContext) -> ASGIApp:
    return McpApp(ctx)
