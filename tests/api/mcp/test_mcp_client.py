"""The official Python ``mcp`` client (2.3, mode 2026-07-28) against the app over real HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.api.mcp.harness import (
    LoopbackServer,
    ScriptedExecutor,
    count_script,
    error_script,
    make_context,
    mcp_app,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def connect(url: str, mode: str = "2026-07-28", **options: Any) -> Client:
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=60))
    return Client(streamable_http_client(url, http_client=http), mode=mode, cache=None, **options)


async def test_auto_mode_discovers_and_stays_modern(tmp_path: Path) -> None:
    ctx = make_context(tmp_path, ScriptedExecutor())
    with LoopbackServer(mcp_app(ctx)) as server:
        async with connect(server.url, mode="auto") as mcp:
            assert mcp.protocol_version == "2026-07-28"
            assert mcp.server_info is not None and mcp.server_info.name == "bzrk"
            assert mcp.server_info.version
            assert mcp.server_capabilities.tools is not None
            assert "discover_fields" in (mcp.instructions or "")
    ctx.meta.close()


async def test_discover_list_and_call_every_tool(tmp_path: Path) -> None:
    executor = ScriptedExecutor(count_script([2, 4]))
    ctx = make_context(tmp_path, executor)
    with LoopbackServer(mcp_app(ctx)) as server:
        async with connect(server.url) as mcp:
            assert mcp.protocol_version == "2026-07-28"
            tools = await mcp.list_tools()
            assert [t.name for t in tools.tools] == [
                "list_databases",
                "list_tables",
                "discover_fields",
                "query",
                "get_run",
                "get_docs",
                "list_alerts",
                "get_alert",
                "create_alert",
                "update_alert",
                "delete_alert",
                "list_workflows",
                "run_workflow",
                "list_connections",
                "list_dashboards",
                "get_dashboard",
            ]
            dbs = await mcp.call_tool("list_databases", {})
            assert not dbs.is_error
            assert dbs.structured_content["databases"][0]["name"] == "default"
            tables = await mcp.call_tool("list_tables", {"database": "default"})
            assert tables.structured_content["tables"][0]["name"] == "default"
            fields = await mcp.call_tool(
                "discover_fields", {"database": "default", "table": "default"}
            )
            assert fields.is_error  # no storage catalogue in this context: a clear tool error
            assert "not available" in fields.content[0].text
            result = await mcp.call_tool(
                "query",
                {"query": "default | summarize n=count() by service", "database": "default"},
            )
            assert not result.is_error
            assert result.structured_content["rows"] == [["checkout", 4], ["cart", 2]]
            assert result.structured_content["status"] == "complete"
            run = await mcp.call_tool("get_run", {"run_id": "run-1"})
            assert run.is_error  # the scripted executor saves no runs
            docs = await mcp.call_tool("get_docs", {"topic": "kql"})
            assert "time-bounded" in docs.content[0].text
    ctx.meta.close()


async def test_progress_and_logs_reach_the_client_only_when_asked(tmp_path: Path) -> None:
    executor = ScriptedExecutor(count_script([1, 2, 3, 4], pause=0.3, status="soft_budget"))
    ctx = make_context(tmp_path, executor)
    progress: list[float] = []
    logs: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def on_log(params: Any) -> None:
        logs.append(params)

    args = {"query": "default | summarize n=count() by service", "database": "default"}
    with LoopbackServer(mcp_app(ctx)) as server:
        async with connect(server.url, logging_callback=on_log) as mcp:
            plain = await mcp.call_tool("query", args)
            assert plain.structured_content["status"] == "soft_budget"
            assert plain.structured_content["partial"] is True
        assert progress == [] and logs == []
        async with connect(server.url, logging_callback=on_log, log_level="info") as mcp:
            result = await mcp.call_tool("query", args, progress_callback=on_progress)
            assert result.structured_content["rows"] == [["checkout", 4], ["cart", 2]]
    assert len(progress) >= 2 and progress == sorted(set(progress))
    assert 1 <= len(logs) <= 6
    assert logs[0].data["event"] == "snapshot"
    assert logs[-1].data["event"] == "stop"
    ctx.meta.close()


async def test_engine_error_arrives_as_a_tool_error(tmp_path: Path) -> None:
    ctx = make_context(tmp_path, ScriptedExecutor(error_script()))
    with LoopbackServer(mcp_app(ctx)) as server:
        async with connect(server.url) as mcp:
            result = await mcp.call_tool(
                "query", {"query": "default | cnt()", "database": "default"}
            )
            assert result.is_error
            assert "UnknownFunction" in result.content[0].text
    ctx.meta.close()
