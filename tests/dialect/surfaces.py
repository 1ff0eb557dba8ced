"""Run one query as a user would, on each surface of a real ``bzrk dev`` (through its gateway).

``http``: ``POST /query`` (Berserk JSON); ``adx``: the Kusto SDK (azure-kusto-data) against
``/v2/rest/query``; ``grpc``: grpcio under ``/api/grpc``; ``mcp``: the ``mcp`` client's ``query``
tool; ``cli``: ``bzrk search --json`` in a subprocess with a profile for the gateway. Every runner
returns a :class:`~tests.dialect.results.Result`; failures are results with an error code, never
exceptions, so the checks decide.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bzrk.testing import SRC_DIR

from .results import Result, Table, normalise

TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class Window:
    since: str | None
    until: str | None


@dataclass
class Server:
    creds: dict[str, Any]
    home: Path  # the CLI user's home (profile, history)

    @property
    def gateway(self) -> str:
        return str(self.creds["gateway"])

    @property
    def token(self) -> str:
        return str(self.creds["token"])


def arguments(query: str, window: Window, timeout_ms: int) -> dict[str, Any]:
    """The request fields ``POST /query`` and the MCP ``query`` tool share."""
    args: dict[str, Any] = {"query": query, "database": "default", "timeout_ms": timeout_ms}
    if window.since:
        args["since"] = window.since
    if window.until:
        args["until"] = window.until
    return args


def run_http(server: Server, query: str, window: Window, timeout_ms: int = TIMEOUT_MS) -> Result:
    body = arguments(query, window, timeout_ms)
    try:
        response = httpx.post(
            server.gateway + "/query",
            json=body,
            headers={"Authorization": f"Bearer {server.token}"},
            timeout=timeout_ms / 1000 + 10,
        )
    except httpx.HTTPError as exc:
        return Result(error_code="Transport", error_message=str(exc))
    try:
        payload = response.json()
    except ValueError:
        return Result(error_code=f"HTTP{response.status_code}", error_message=response.text[:500])
    if response.status_code != 200:
        error = payload.get("error") if isinstance(payload.get("error"), dict) else payload
        return Result(
            error_code=str(error.get("code", f"HTTP{response.status_code}")),
            error_message=str(error.get("message", ""))[:500],
        )
    tables, visualization = [], None
    for t in payload["Tables"]:
        if t["name"] == "@ExtendedProperties" and t["rows"]:
            visualization = t["rows"][0][0].get("Visualization")
        if t["name"].startswith("@"):
            continue
        columns = [c["column_name"] for c in t["columns"]]
        types = [c["column_type"] for c in t["columns"]]
        tables.append(Table.typed(t["name"], columns, types, t["rows"]))
    return Result(tables, visualization=visualization, status=payload.get("status", "complete"))


def run_adx(server: Server, query: str, window: Window, timeout_ms: int = TIMEOUT_MS) -> Result:
    from azure.kusto.data import ClientRequestProperties, KustoClient, KustoConnectionStringBuilder
    from azure.kusto.data.exceptions import KustoServiceError

    client = KustoClient(
        KustoConnectionStringBuilder.with_aad_application_token_authentication(
            server.gateway, server.token
        )
    )
    props = ClientRequestProperties()
    if window.since:
        props.set_option("query_datetimescope_from", window.since)
    if window.until:
        props.set_option("query_datetimescope_to", window.until)
    try:
        response = client.execute("default", query, props)
    except KustoServiceError as exc:
        text = str(exc)
        code = "ParseError" if "Syntax" in text or "ParseError" in text else "KustoServiceError"
        return Result(error_code=code, error_message=text[:500])
    finally:
        client.close()
    tables = []
    for t in response.primary_results:
        columns = [c.column_name for c in t.columns]
        types = [c.column_type for c in t.columns]
        tables.append(Table.typed(t.table_name, columns, types, [list(r) for r in t.raw_rows]))
    return Result(tables)


def run_grpc(server: Server, query: str, window: Window, timeout_ms: int = TIMEOUT_MS) -> Result:
    import grpc

    from bzrk.api.grpc._pb import common_api_pb2, query_pb2
    from tests.api.grpc.helpers import decode_value

    target = server.gateway.removeprefix("http://")
    message = query_pb2.ExecuteQueryRequest(
        query=query, since=window.since or "", until=window.until or "", timezone="UTC"
    )
    message.database.CopyFrom(common_api_pb2.DatabaseRef(name="default"))
    with grpc.insecure_channel(target) as channel:
        call = channel.unary_stream(
            "/api/grpc/query.QueryService/ExecuteQuery",
            request_serializer=query_pb2.ExecuteQueryRequest.SerializeToString,
            response_deserializer=query_pb2.ExecuteQueryResultFrame.FromString,
        )
        try:
            frames = list(
                call(
                    message,
                    metadata=[("authorization", f"Bearer {server.token}")],
                    timeout=timeout_ms / 1000 + 10,
                )
            )
        except grpc.RpcError as exc:
            return Result(error_code=str(exc.code().name), error_message=str(exc.details()))
    names = {v: k.removeprefix("COLUMN_TYPE_").lower() for k, v in query_pb2.ColumnType.items()}
    schemas: dict[str, tuple[list[str], list[str | None]]] = {}
    rows: dict[str, list[list[Any]]] = {}
    iteration, visualization = None, None
    for frame in frames:
        kind = frame.WhichOneof("payload")
        if kind == "schema":
            schemas[frame.schema.name] = (
                [c.name for c in frame.schema.columns],
                [names.get(c.type) for c in frame.schema.columns],
            )
        elif kind == "batch":
            if frame.batch.result_iteration_id != iteration:
                iteration, rows = frame.batch.result_iteration_id, {}
            rows.setdefault(frame.batch.table_name, []).extend(
                [decode_value(v) for v in r.values] for r in frame.batch.rows
            )
        elif kind == "metadata" and frame.metadata.HasField("visualization"):
            visualization = frame.metadata.visualization.visualization_type or None
        elif kind == "error":
            return Result(error_code=frame.error.code, error_message=frame.error.message)
    tables = []
    for name, (columns, types) in schemas.items():
        # gRPC datetimes are Unix nanoseconds on the wire (the vendor's clients read them so).
        grid = [
            [
                v // 100 if t == "datetime" and isinstance(v, int) else v
                for v, t in zip(r, types, strict=False)
            ]
            for r in rows.get(name, [])
        ]
        tables.append(Table(name, columns, types, grid))
    return Result(tables, visualization=visualization)


def run_mcp(server: Server, query: str, window: Window, timeout_ms: int = TIMEOUT_MS) -> Result:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    args = arguments(query, window, timeout_ms)

    async def call() -> Any:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {server.token}"},
            timeout=httpx2.Timeout(30, read=timeout_ms / 1000 + 10),
        )
        async with Client(
            streamable_http_client(server.gateway + "/mcp", http_client=http),
            mode="2026-07-28",
            cache=None,
        ) as mcp:
            return await mcp.call_tool("query", args)

    result = anyio.run(call)
    if result.is_error:
        text = result.content[0].text if result.content else ""
        structured = result.structured_content or {}
        code = structured.get("code") or (text.split(":", 1)[0] if ":" in text else "ToolError")
        return Result(error_code=str(code), error_message=text[:500])
    s = result.structured_content
    tables = [_mcp_table(s.get("table", "PrimaryResult"), s["columns"], s["rows"])]
    tables += [_mcp_table(t["name"], t["columns"], t["rows"]) for t in s.get("other_tables", [])]
    vis = s.get("visualization")
    return Result(
        tables,
        visualization=vis.get("type") if isinstance(vis, dict) else vis,
        status=s.get("status", "complete"),
    )


def _mcp_table(name: str, columns: list[dict[str, str]], rows: list[list[Any]]) -> Table:
    return Table.typed(name, [c["name"] for c in columns], [c["type"] for c in columns], rows)


def cli_env(server: Server) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BZRK_")}
    for var in ("CLAUDECODE", "CODEX_SANDBOX", "AIDER_MODEL", "OPENCODE", "GEMINI_CLI"):
        env.pop(var, None)
    home = server.home
    env.update(
        PYTHONPATH=str(SRC_DIR),
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CACHE_HOME=str(home / "cache"),
        NO_COLOR="1",
        BZRK_TOKEN=server.token,
    )
    return env


def cli_profile(server: Server) -> None:
    """``bzrk profile add`` once per home (a real user's first step)."""
    if (server.home / ".profile-added").exists():
        return
    server.home.mkdir(parents=True, exist_ok=True)
    added = subprocess.run(
        [sys.executable, "-m", "bzrk", "profile", "add", "dev", "--endpoint", server.gateway],
        env=cli_env(server),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert added.returncode == 0, added.stderr
    (server.home / ".profile-added").touch()


def run_cli(
    server: Server,
    query: str,
    window: Window,
    timeout_ms: int = TIMEOUT_MS,
    extra: tuple[str, ...] = (),
) -> Result:
    cli_profile(server)
    args = [sys.executable, "-m", "bzrk", "search", query, "--json"]
    args += ["--timeout", str(max(1, timeout_ms // 1000))]
    if window.since:
        args += ["--since", window.since]
    if window.until:
        args += ["--until", window.until]
    streaming = any(a.startswith("--stop") for a in extra)
    if not streaming:
        args.append("--no-stream")
    args += list(extra)
    done = subprocess.run(
        args, env=cli_env(server), capture_output=True, text=True, timeout=timeout_ms / 1000 + 60
    )
    if done.returncode not in (0, 3) or not done.stdout.strip():
        if done.returncode == 0 and not done.stdout.strip():
            return Result([Table("PrimaryResult", [], [], [])])
        return Result(error_code=f"exit{done.returncode}", error_message=done.stderr[-500:])
    documents = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    objects = documents[-1] if streaming else documents[0]
    columns = list(objects[0]) if objects else []
    rows = [[_cli_cell(o.get(c)) for c in columns] for o in objects]
    return Result([Table("PrimaryResult", columns, [None] * len(columns), rows)])


def _cli_cell(value: Any) -> Any:
    """The CLI's JSON carries no types: read datetime and timespan text by its shape."""
    if isinstance(value, str):
        for kql_type in ("datetime", "timespan"):
            ticks = normalise(value, kql_type)
            if isinstance(ticks, int):
                return ticks
    return value


RUNNERS: dict[str, Callable[..., Result]] = {
    "http": run_http,
    "adx": run_adx,
    "grpc": run_grpc,
    "mcp": run_mcp,
    "cli": run_cli,
}
